"""Kernel state from /proc and /sys: vmstat deltas, pagesets, sysctls, release."""

from __future__ import annotations

import gzip
import os
import platform
from pathlib import Path
from typing import Any

from pcplab import procfs_zoneinfo

PROC_VMSTAT = Path("/proc/vmstat")
PROC_ZONEINFO = procfs_zoneinfo.PROC_ZONEINFO
PROC_MEMINFO = Path("/proc/meminfo")
THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")
PROC_CMDLINE = Path("/proc/cmdline")
PROC_CONFIG = Path("/proc/config.gz")
# vmstat counters summed into the result's short `vmstat` section.
VMSTAT_SUMMARY = ("pgalloc", "pgfree", "pgfault")


def parse_vmstat(text: str) -> dict[str, int]:
    """Parse the text of /proc/vmstat into {counter: value}."""
    values: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"vmstat line {number}: expected 'name value': {line!r}")
        try:
            values[parts[0]] = int(parts[1])
        except ValueError:
            raise ValueError(
                f"vmstat line {number}: {parts[1]!r} is no integer"
            ) from None
    return values


def read_vmstat(path: Path = PROC_VMSTAT) -> dict[str, int]:
    """Read and parse /proc/vmstat."""
    return parse_vmstat(path.read_text())


def vmstat_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Return after - before for every counter that changed, in file order."""
    return {
        k: v - before[k] for k, v in after.items() if k in before and v != before[k]
    }


def vmstat_summary(delta: dict[str, int]) -> dict[str, int]:
    """Sum the per-zone pgalloc_* deltas and keep pgfree and pgfault."""
    return {
        "pgalloc": sum(v for k, v in delta.items() if k.startswith("pgalloc_")),
        "pgfree": delta.get("pgfree", 0),
        "pgfault": delta.get("pgfault", 0),
    }


def pagesets_of(zones: list[procfs_zoneinfo.ZoneInfo]) -> list[dict[str, Any]]:
    """Return every populated zone with each CPU's pageset, as plain dicts."""
    return [
        {
            "node": z.node,
            "zone": z.zone,
            "managed_pages": z.managed,
            "low_wmark": z.low,
            "cpus": [
                {
                    "cpu": p.cpu,
                    "count": p.count,
                    "high": p.high,
                    "batch": p.batch,
                    "high_min": p.high_min,
                    "high_max": p.high_max,
                }
                for p in z.pagesets
            ],
        }
        for z in zones
        if z.managed > 0
    ]


def schema_pagesets(per_cpu: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Reduce per-CPU pagesets to the result schema's row per zone (first CPU)."""
    rows = []
    for zone in per_cpu:
        first = min(zone["cpus"], key=lambda c: c["cpu"]) if zone["cpus"] else {}
        rows.append(
            {
                "node": zone["node"],
                "zone": zone["zone"],
                "managed_pages": zone["managed_pages"],
                **{k: first.get(k) for k in ("batch", "high", "high_min", "high_max")},
            }
        )
    return rows


def read_pagesets(path: Path = PROC_ZONEINFO) -> list[dict[str, Any]]:
    """Read the per-CPU pagesets of every populated zone from /proc/zoneinfo."""
    return pagesets_of(procfs_zoneinfo.parse_zoneinfo(path.read_text()))


def read_meminfo(path: Path = PROC_MEMINFO) -> dict[str, int]:
    """Return /proc/meminfo as {key: bytes} (values given in kB are scaled)."""
    values = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            scale = 1024 if parts[1:] == ["kB"] else 1
            values[key] = int(parts[0]) * scale
    return values


def thp_setting(name: str = "enabled") -> str | None:
    """Return the selected transparent-hugepage mode ("madvise"), or None."""
    try:
        text = (THP_DIR / name).read_text()
    except OSError:
        return None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text.strip() or None


def _kstrtobool(word: str) -> bool | None:
    """Read WORD as kstrtobool does: 1/y/on true, 0/n/off false, else None."""
    lowered = word.lower()
    if lowered[:1] in ("1", "y") or lowered == "on":
        return True
    if lowered[:1] in ("0", "n") or lowered == "off":
        return False
    return None


def _config_text(boot_dir: Path) -> tuple[str, str] | None:
    """Return the running kernel's build config and where it was read, or None."""
    try:
        return gzip.decompress(PROC_CONFIG.read_bytes()).decode(), str(PROC_CONFIG)
    except (OSError, EOFError, gzip.BadGzipFile):
        pass
    path = boot_dir / f"config-{kernel_release()}"
    try:
        return path.read_text(), str(path)
    except OSError:
        return None


def build_option(name: str, boot_dir: Path = Path("/boot")) -> dict[str, Any]:
    """Whether the running kernel was built with option NAME=y, and how that is known.

    From /proc/config.gz, else /boot/config-<release>; None where neither
    can be read (a fact of the build, never guessed).
    """
    config = _config_text(boot_dir)
    if config is None:
        return {"enabled": None, "source": "no /proc/config.gz nor /boot/config-*"}
    text, where = config
    return {"enabled": f"{name}=y" in text.splitlines(), "source": f"{where} ({name})"}


def init_on_alloc(boot_dir: Path = Path("/boot")) -> dict[str, Any]:
    """Whether the page allocator zeroes pages it hands out, and how that is known.

    init_on_alloc=1 clears every page inside get_page_from_freelist (Debian
    builds with CONFIG_INIT_ON_ALLOC_DEFAULT_ON): the command line decides,
    else the build config's default; None where neither can be read.
    """
    try:
        words = PROC_CMDLINE.read_text().split(" -- ", 1)[0].split()
    except OSError:
        words = []
    given = [w.split("=", 1)[1] for w in words if w.startswith("init_on_alloc=")]
    if given and _kstrtobool(given[-1]) is not None:
        return {"enabled": _kstrtobool(given[-1]), "source": str(PROC_CMDLINE)}
    config = _config_text(boot_dir)
    if config is None:
        return {"enabled": None, "source": "no /proc/config.gz nor /boot/config-*"}
    text, where = config
    return {
        "enabled": "CONFIG_INIT_ON_ALLOC_DEFAULT_ON=y" in text.splitlines(),
        "source": f"{where} (CONFIG_INIT_ON_ALLOC_DEFAULT_ON)",
    }


def kernel_release() -> str:
    """Return the running kernel's release (uname -r)."""
    return platform.release()


def is_root() -> bool:
    """Tell whether this process runs as root."""
    return os.geteuid() == 0
