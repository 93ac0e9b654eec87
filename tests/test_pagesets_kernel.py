"""The engine's pageset formulas (batch, high_min, high_max) against a real kernel.

Fixtures: tests/data/zoneinfo/<release>/hf<F>.txt, /proc/zoneinfo recorded by
scripts/collect-zoneinfo with vm.percpu_pagelist_high_fraction = F, and the
node CPU counts in meta.json. For each zone with managed > 0 the engine's
`pagesets` request is built from that same snapshot and its reply must equal
what the kernel wrote into every CPU's pageset.

The low watermark is read from the same zoneinfo snapshot as the pagesets:
with F = 0 the kernel computes high_min from the zone's live low watermark
(low_wmark_pages(), boost included) at the time of the sysctl write, so a low
value from another moment could legitimately differ.

The kernel's own `high` field is not compared with [high_min, high_max]: on
6.7+ a sysctl write stores only batch/high_min/high_max; `pcp->high` keeps its
old value and is clamped lazily on the pageset's next alloc/free (and decays by
1/8 per vmstat tick towards high_min). A pageset never used since boot still
shows BOOT_PAGESET_HIGH = 0 (the DMA zone in the 6.18 fixtures), and an idle one
shows a stale value (DMA32 at F=8 keeps 7388 < high_min 48281; at F=64 it is
7388/6465 > high_max 6035). What is checked is the engine's fresh `high`: it
must be the value the kernel's first clamp gives a fresh (high = 0) pageset,
i.e. high_min, which lies in [high_min, high_max].

The engine binary is located here, independently of pcplab.engine:
$PCPLAB_NATIVE if set, else pcplab/_bin/pcplab-native, else build/pcplab-native
(or build/*/pcplab-native) at the repo root. A missing binary FAILS the tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import pcplab
from conftest import needs
from pcplab.procfs_zoneinfo import (
    ZoneInfo,
    node_cpus,
    parse_zoneinfo,
    read_host_zoneinfo,
)

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "zoneinfo"
FIXTURES = sorted(
    DATA.glob("*/hf*.txt"), key=lambda p: (p.parent.name, int(p.stem[2:]))
)
SYSCTL = Path("/proc/sys/vm/percpu_pagelist_high_fraction")
LIVE_FRACTIONS = (16, 1000, 0)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _release_tuple(release: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", release)
    assert m, f"cannot parse kernel release {release!r}"
    return int(m.group(1)), int(m.group(2))


def _generation(release: str) -> str:
    """Engine `kernel` generation for a release with high_min/high_max (6.7+)."""
    v = _release_tuple(release)
    assert v >= (6, 7), f"kernel {release} has no high_min/high_max to compare"
    return "6.19" if v >= (6, 19) else "6.18"


@pytest.fixture(scope="session")
def native() -> Path:
    """Path of the pcplab-native engine binary; fails if it is not built."""
    candidates = []
    if os.environ.get("PCPLAB_NATIVE"):
        candidates.append(Path(os.environ["PCPLAB_NATIVE"]))
    candidates.append(Path(pcplab.__file__).parent / "_bin" / "pcplab-native")
    candidates.append(REPO / "build" / "pcplab-native")
    candidates.extend(sorted((REPO / "build").glob("*/pcplab-native")))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    pytest.fail(
        "engine binary pcplab-native not found (looked at: "
        + ", ".join(str(c) for c in candidates)
        + "); build it: cmake -S . -B build && cmake --build build"
    )


def _run_pagesets(native: Path, request: dict) -> dict:
    proc = subprocess.run(
        [str(native), "pagesets"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, (
        f"pcplab-native pagesets exited {proc.returncode}: {proc.stderr.strip()}\n"
        f"request: {json.dumps(request)}"
    )
    return json.loads(proc.stdout)


def _request(kernel: str, fraction: int, zones: list[ZoneInfo], cpus: dict) -> dict:
    return {
        "kernel": kernel,
        "high_fraction": fraction,
        "zones": [
            {
                "node": z.node,
                "name": z.zone,
                "managed_pages": z.managed,
                # Same snapshot as the pagesets: see the module docstring.
                "low_wmark": z.low,
                "cpus": cpus[z.node],
            }
            for z in zones
        ],
    }


def _mismatches(fraction: int, zones: list[ZoneInfo], reply: dict) -> list[str]:
    """Differences between the engine's reply and the kernel's pagesets."""
    out = []
    got = {(r["node"], r["name"]): r for r in reply["zones"]}
    assert len(reply["zones"]) == len(zones), reply
    for z in zones:
        where = f"F={fraction} node {z.node} {z.zone}"
        r = got.get((z.node, z.zone))
        if r is None:
            out.append(f"{where}: missing from the engine reply")
            continue
        if r["managed_pages"] != z.managed or r["low_wmark"] != z.low:
            out.append(f"{where}: reply does not echo managed/low: {r}")
        for p in z.pagesets:
            for key in ("batch", "high_min", "high_max"):
                k = getattr(p, key)
                if r[key] != k:
                    out.append(
                        f"{where} cpu {p.cpu}: {key} kernel={k} engine={r[key]} "
                        f"(managed={z.managed} low={z.low})"
                    )
        kmin = z.pagesets[0].high_min
        kmax = z.pagesets[0].high_max
        # A fresh pageset (pcp->high = BOOT_PAGESET_HIGH = 0) is clamped to
        # high_min on first use: that is the engine's starting `high`.
        fresh = min(max(0, kmin), kmax)
        if not (kmin <= r["high"] <= kmax) or r["high"] != fresh:
            out.append(
                f"{where}: engine fresh high={r['high']} "
                f"kernel [high_min, high_max]=[{kmin}, {kmax}]"
            )
    return out


def _populated(zones: list[ZoneInfo]) -> list[ZoneInfo]:
    return [z for z in zones if z.managed > 0]


def _meta(path: Path) -> dict:
    return json.loads((path.parent / "meta.json").read_text())


# --- the recorded kernel against the reference formulas (no engine) ---------


def _ref_batch(managed: int, page_size: int) -> int:
    # zone_batchsize(), 6.6..6.18 form (spec 1a).
    b = min(managed >> 10, (1 << 20) // page_size) // 4
    b = max(b, 1)
    b = (1 << (b + b // 2).bit_length() - 1) - 1
    return max(1, b)


def _ref_high(fraction: int, managed: int, low: int, ncpu: int, batch: int):
    # zone_highsize() and zone_set_pageset_high_and_batch() (spec 1b, 1c).
    if fraction:
        h = max(managed // fraction // ncpu, 4 * batch)
        return h, h
    return max(low // ncpu, 4 * batch), max(managed // 8 // ncpu, 4 * batch)


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_recorded_kernel_matches_reference_formulas(path: Path):
    """The recorded pagesets follow zone_batchsize()/zone_highsize() exactly."""
    meta = _meta(path)
    fraction = int(path.stem[2:])
    _generation(meta["kernel_release"])
    bad = []
    for z in _populated(parse_zoneinfo(path.read_text())):
        ncpu = meta["node_cpus"][str(z.node)]
        batch = _ref_batch(z.managed, meta["page_size"])
        hmin, hmax = _ref_high(fraction, z.managed, z.low, ncpu, batch)
        for p in z.pagesets:
            if (p.batch, p.high_min, p.high_max) != (batch, hmin, hmax):
                bad.append(
                    f"F={fraction} {z.zone} cpu {p.cpu}: kernel "
                    f"({p.batch}, {p.high_min}, {p.high_max}) reference "
                    f"({batch}, {hmin}, {hmax})"
                )
    assert not bad, "\n".join(bad)


# --- the engine against the recorded kernel ----------------------------------


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_engine_pagesets_match_recorded_kernel(native: Path, path: Path):
    """Engine batch/high_min/high_max equal every CPU's recorded pageset."""
    meta = _meta(path)
    fraction = int(path.stem[2:])
    assert fraction in meta["fractions"]
    kernel = _generation(meta["kernel_release"])
    zones = _populated(parse_zoneinfo(path.read_text()))
    assert zones
    cpus = {int(n): c for n, c in meta["node_cpus"].items()}
    reply = _run_pagesets(native, _request(kernel, fraction, zones, cpus))
    bad = _mismatches(fraction, zones, reply)
    assert not bad, "\n".join(bad)


# --- the engine against the live kernel --------------------------------------


@needs(None if os.geteuid() == 0 else "writes vm sysctl: needs root")
@needs(None if SYSCTL.exists() else f"{SYSCTL} absent")
@needs(
    "this kernel predates high_min/high_max (6.7): nothing to compare"
    if _release_tuple(os.uname().release) < (6, 7)
    else None
)
def test_engine_pagesets_match_live_kernel(native: Path):
    """Set a few fractions on this host; the engine matches each; restore."""
    kernel = _generation(os.uname().release)
    original = SYSCTL.read_text().strip()
    bad = []
    try:
        for fraction in LIVE_FRACTIONS:
            SYSCTL.write_text(f"{fraction}\n")
            assert SYSCTL.read_text().strip() == str(fraction)
            # The sysctl handler rewrites batch/high_min/high_max of every
            # pageset before write() returns, so no wait is needed. low is read
            # from this same snapshot (see the module docstring).
            zones = _populated(read_host_zoneinfo())
            cpus = {z.node: node_cpus(z.node) for z in zones}
            reply = _run_pagesets(native, _request(kernel, fraction, zones, cpus))
            bad += _mismatches(fraction, zones, reply)
    finally:
        SYSCTL.write_text(f"{original}\n")
        assert SYSCTL.read_text().strip() == original
    assert not bad, "\n".join(bad)
