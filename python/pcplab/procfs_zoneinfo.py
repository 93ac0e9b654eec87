"""Parse /proc/zoneinfo into zones and their per-CPU pagesets."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

PROC_ZONEINFO = Path("/proc/zoneinfo")
HIGH_FRACTION_PATH = Path("/proc/sys/vm/percpu_pagelist_high_fraction")
SYS_NODE_DIR = Path("/sys/devices/system/node")

_ZONE_RE = re.compile(r"^Node\s+(\d+),\s*zone\s+(\S+)\s*$")
_CPU_RE = re.compile(r"^cpu:\s*(\d+)\s*$")
_KV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_ ]*?)\s*:?\s+(-?\d+)\s*$")
_ZONE_FIELDS = ("free", "min", "low", "high", "spanned", "present", "managed")
_PCP_FIELDS = ("count", "high", "batch")


@dataclass
class Pageset:
    """One CPU's pageset (struct per_cpu_pages) of a zone."""

    cpu: int
    count: int
    high: int
    batch: int
    high_min: int | None = None
    high_max: int | None = None


@dataclass
class ZoneInfo:
    """One zone of /proc/zoneinfo: page counts, watermarks and pagesets."""

    node: int
    zone: str
    free: int
    min: int
    low: int
    high: int
    spanned: int
    present: int
    managed: int
    pagesets: list[Pageset] = field(default_factory=list)


def _finish_pageset(vals: dict[str, int], where: str) -> Pageset:
    missing = [k for k in ("cpu", *_PCP_FIELDS) if k not in vals]
    if missing:
        raise ValueError(f"zoneinfo: {where}: pageset lacks {', '.join(missing)}")
    return Pageset(
        cpu=vals["cpu"],
        count=vals["count"],
        high=vals["high"],
        batch=vals["batch"],
        high_min=vals.get("high_min"),
        high_max=vals.get("high_max"),
    )


def _finish_zone(
    node: int, name: str, vals: dict[str, int], psets: list[Pageset]
) -> ZoneInfo:
    missing = [k for k in _ZONE_FIELDS if k not in vals]
    if missing:
        raise ValueError(
            f"zoneinfo: node {node} zone {name}: missing {', '.join(missing)}"
        )
    return ZoneInfo(
        node=node, zone=name, pagesets=psets, **{k: vals[k] for k in _ZONE_FIELDS}
    )


def parse_zoneinfo(text: str) -> list[ZoneInfo]:
    """Parse the text of /proc/zoneinfo into a list of ZoneInfo, in file order."""
    zones: list[ZoneInfo] = []
    node: int | None = None
    name = ""
    zvals: dict[str, int] = {}
    psets: list[Pageset] = []
    pvals: dict[str, int] | None = None
    # section: "zone" (watermarks, counters), "pernode" (node stats, ignored),
    # "pagesets" (cpu blocks), "tail" (node_unreclaimable, start_pfn, ...).
    section = "zone"

    def flush_pageset() -> None:
        nonlocal pvals
        if pvals is not None:
            psets.append(_finish_pageset(pvals, f"node {node} zone {name}"))
            pvals = None

    def flush_zone() -> None:
        if node is not None:
            flush_pageset()
            zones.append(_finish_zone(node, name, zvals, psets))

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _ZONE_RE.match(line)
        if m:
            flush_zone()
            node, name = int(m.group(1)), m.group(2)
            zvals, psets, pvals, section = {}, [], None, "zone"
            continue
        if node is None:
            continue  # anything before the first zone header
        indent = len(raw) - len(raw.lstrip())
        if line == "per-node stats":
            section = "pernode"
            continue
        if line == "pagesets":
            section = "pagesets"
            continue
        if line.startswith("pages free"):
            section = "zone"  # also ends the per-node stats block
            zvals["free"] = int(line.split()[-1])
            continue
        if line.startswith(("protection:", "vm stats threshold")):
            continue
        if section == "pernode":
            continue
        if section == "pagesets":
            m = _CPU_RE.match(line)
            if m:
                flush_pageset()
                pvals = {"cpu": int(m.group(1))}
                continue
            if indent <= 2:
                # a two-space line after the cpu blocks: node_unreclaimable etc.
                flush_pageset()
                section = "tail"
                continue
            m = _KV_RE.match(line)
            if m and pvals is not None:
                pvals[m.group(1).strip()] = int(m.group(2))
            continue
        if section == "zone":
            m = _KV_RE.match(line)
            if m:
                key = m.group(1).strip()
                if key in _ZONE_FIELDS and key not in zvals:
                    zvals[key] = int(m.group(2))
    flush_zone()
    return zones


def read_host_zoneinfo() -> list[ZoneInfo]:
    """Read and parse this host's /proc/zoneinfo."""
    return parse_zoneinfo(PROC_ZONEINFO.read_text())


def _count_cpulist(text: str) -> int:
    """Count the CPUs of a sysfs cpulist such as "0-3,8,10-11" ("" counts 0)."""
    n = 0
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        n += (int(hi) - int(lo) + 1) if hi else 1
    return n


def node_cpus(node: int) -> int:
    """Count the CPUs of NUMA node `node` (os.cpu_count() if sysfs lacks it)."""
    try:
        text = (SYS_NODE_DIR / f"node{node}" / "cpulist").read_text()
    except FileNotFoundError:
        return os.cpu_count() or 1
    return _count_cpulist(text)


def read_high_fraction() -> int:
    """Read vm.percpu_pagelist_high_fraction from /proc/sys/vm."""
    return int(HIGH_FRACTION_PATH.read_text().strip())
