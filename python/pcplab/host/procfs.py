"""Kernel state from /proc and /sys: vmstat deltas, pagesets, sysctls, release."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from pcplab import procfs_zoneinfo

PROC_VMSTAT = Path("/proc/vmstat")
PROC_ZONEINFO = procfs_zoneinfo.PROC_ZONEINFO
PROC_MEMINFO = Path("/proc/meminfo")
THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")
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


def kernel_release() -> str:
    """Return the running kernel's release (uname -r)."""
    return platform.release()


def is_root() -> bool:
    """Tell whether this process runs as root."""
    return os.geteuid() == 0
