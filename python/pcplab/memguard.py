"""The memory guard: no run may touch more than MemAvailable less a margin."""

from __future__ import annotations

from pathlib import Path

from pcplab.errors import BadInput, PcplabError

MIB = 1 << 20
GIB = 1 << 30
GUARD_MIN_MARGIN = 256 * MIB  # memory kept free beside a run, at least ...
GUARD_MARGIN_FRACTION = 0.05  # ... or this share of MemAvailable if larger
MEMINFO = Path("/proc/meminfo")


def mem_available_bytes() -> int:
    """Return MemAvailable of /proc/meminfo in bytes."""
    for line in MEMINFO.read_text().splitlines():
        key, _, value = line.partition(":")
        if key == "MemAvailable":
            return int(value.split()[0]) * 1024
    raise PcplabError(f"{MEMINFO} has no MemAvailable line")


def check_memory(needed: int, available: int) -> None:
    """Refuse a run that would touch more than MemAvailable less the margin."""
    margin = max(GUARD_MIN_MARGIN, int(available * GUARD_MARGIN_FRACTION))
    usable = available - margin
    if needed > usable:
        raise BadInput(
            f"the run would touch {needed / GIB:.2f} GiB but at most "
            f"{max(usable, 0) / GIB:.2f} GiB may be used (MemAvailable "
            f"{available / GIB:.2f} GiB less a margin of {margin / GIB:.2f} GiB); "
            "lower --tasks, --size-mib or --memory-mib"
        )
