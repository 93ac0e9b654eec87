"""Tests of the /proc/zoneinfo parser on recorded fixtures and on the live host."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pcplab import procfs_zoneinfo
from pcplab.procfs_zoneinfo import Pageset, ZoneInfo, parse_zoneinfo

DATA = Path(__file__).parent / "data" / "zoneinfo"
FIXTURES = sorted(DATA.glob("*/hf*.txt"))


def _meta(path: Path) -> dict:
    return json.loads((path.parent / "meta.json").read_text())


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def test_fixtures_exist():
    """The recorded fixtures (scripts/collect-zoneinfo) are in the tree."""
    assert FIXTURES, f"no zoneinfo fixtures under {DATA}"
    for d in {p.parent for p in FIXTURES}:
        meta = json.loads((d / "meta.json").read_text())
        assert meta["files"] == [f"hf{f}.txt" for f in meta["fractions"]]
        for name in meta["files"]:
            assert (d / name).is_file()


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_fixture_parses(path: Path):
    """Each populated zone has one pageset per online CPU with sane fields."""
    meta = _meta(path)
    zones = parse_zoneinfo(path.read_text())
    assert zones
    names = [z.zone for z in zones]
    assert len(set(zip((z.node for z in zones), names, strict=True))) == len(zones)
    for z in zones:
        assert isinstance(z, ZoneInfo)
        assert z.node in {int(n) for n in meta["node_cpus"]}
        assert z.managed <= z.present <= z.spanned
        assert 0 <= z.free
        assert z.min <= z.low <= z.high
        if z.managed == 0:
            # Empty zones (Movable, Device here) print no pageset block.
            assert z.pagesets == []
            continue
        assert len(z.pagesets) == meta["online_cpus"]
        assert sorted(p.cpu for p in z.pagesets) == list(range(meta["online_cpus"]))
        for p in z.pagesets:
            assert isinstance(p, Pageset)
            assert p.batch >= 1
            assert p.count >= 0 and p.high >= 0
            # Recorded on 6.18: every pageset has high_min/high_max lines.
            assert p.high_min is not None and p.high_max is not None
            assert 0 < p.high_min <= p.high_max


def test_fixture_known_values():
    """Spot-check values of the 6.18 fixture at fraction 0 against the file."""
    path = DATA / "6.18.44-fc-v445" / "hf0.txt"  # shipped in tests/data
    zones = {z.zone: z for z in parse_zoneinfo(path.read_text())}
    assert list(zones) == ["DMA", "DMA32", "Normal", "Movable", "Device"]
    dma = zones["DMA"]
    assert (dma.node, dma.free, dma.min, dma.low, dma.high) == (0, 3840, 58, 72, 86)
    assert (dma.spanned, dma.present, dma.managed) == (4095, 3998, 3840)
    assert dma.pagesets == [
        Pageset(cpu=0, count=0, high=0, batch=1, high_min=36, high_max=240),
        Pageset(cpu=1, count=0, high=0, batch=1, high_min=36, high_max=240),
    ]
    normal = zones["Normal"]
    assert (normal.managed, normal.low) == (327680, 6267)
    assert {(p.batch, p.high_min, p.high_max) for p in normal.pagesets} == {
        (63, 3133, 20480)
    }
    assert zones["Movable"].pagesets == [] and zones["Device"].pagesets == []


# An old-kernel-style (<= 6.6) snippet: made by editing the recorded
# 6.18.44-fc-v445/hf0.txt -- the high_min/high_max lines were deleted, the
# per-node stats and zone counters shortened; everything else is as recorded.
OLD_KERNEL_SNIPPET = """\
Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 1031
      nr_active_anon 382
      nr_kernel_misc_reclaimable 0
  pages free     3840
        boost    0
        min      58
        low      72
        high     86
        promo    100
        spanned  4095
        present  3998
        managed  3840
        cma      0
        protection: (0, 3017, 4297, 4297, 4297)
      nr_free_pages 3840
      nr_free_pages_blocks 3584
      numa_other   0
  pagesets
    cpu: 0
              count:    0
              high:     0
              batch:    1
  vm stats threshold: 4
    cpu: 1
              count:    0
              high:     0
              batch:    1
  vm stats threshold: 4
  node_unreclaimable:  0
  start_pfn:           1
Node 0, zone  Movable
  pages free     0
        boost    0
        min      32
        low      32
        high     32
        promo    32
        spanned  0
        present  0
        managed  0
        cma      0
        protection: (0, 0, 0, 0, 0)
"""


def test_old_kernel_without_high_min_max():
    """Pagesets without high_min/high_max lines parse with those fields None."""
    zones = parse_zoneinfo(OLD_KERNEL_SNIPPET)
    assert [(z.node, z.zone) for z in zones] == [(0, "DMA"), (0, "Movable")]
    dma = zones[0]
    assert (dma.free, dma.min, dma.low, dma.high) == (3840, 58, 72, 86)
    assert (dma.spanned, dma.present, dma.managed) == (4095, 3998, 3840)
    assert dma.pagesets == [
        Pageset(cpu=0, count=0, high=0, batch=1, high_min=None, high_max=None),
        Pageset(cpu=1, count=0, high=0, batch=1, high_min=None, high_max=None),
    ]
    assert zones[1].managed == 0 and zones[1].pagesets == []


@pytest.mark.parametrize("path", FIXTURES[:1], ids=_id)
def test_fixture_with_high_min_max_lines_deleted(path: Path):
    """A whole recorded file minus its high_min/high_max lines keeps all else."""
    text = path.read_text()
    edited = "".join(
        line
        for line in text.splitlines(keepends=True)
        if not line.lstrip().startswith(("high_min:", "high_max:"))
    )
    assert edited != text
    full, old = parse_zoneinfo(text), parse_zoneinfo(edited)
    assert len(full) == len(old)
    for a, b in zip(full, old, strict=True):
        assert (a.node, a.zone, a.managed, a.low) == (b.node, b.zone, b.managed, b.low)
        assert [(p.cpu, p.count, p.high, p.batch) for p in a.pagesets] == [
            (p.cpu, p.count, p.high, p.batch) for p in b.pagesets
        ]
        assert all(p.high_min is None and p.high_max is None for p in b.pagesets)


def test_missing_zone_field_is_an_error():
    """A zone lacking a watermark line is reported, not silently zeroed."""
    text = OLD_KERNEL_SNIPPET.replace("        low      72\n", "")
    with pytest.raises(ValueError, match="DMA.*low"):
        parse_zoneinfo(text)


def test_empty_text():
    """No zone headers: no zones."""
    assert parse_zoneinfo("") == []


@pytest.mark.parametrize(
    ("cpulist", "n"),
    [("0-1\n", 2), ("0\n", 1), ("0-3,8,10-11\n", 7), ("\n", 0), ("", 0)],
)
def test_count_cpulist(cpulist: str, n: int):
    """Sysfs cpulist ranges are counted."""
    assert procfs_zoneinfo._count_cpulist(cpulist) == n


def test_live_host_zoneinfo():
    """This host's /proc/zoneinfo parses, with at least one populated zone."""
    zones = procfs_zoneinfo.read_host_zoneinfo()
    assert len(zones) > 0
    populated = [z for z in zones if z.managed > 0]
    assert populated
    ncpu = os.cpu_count()
    for z in populated:
        assert z.pagesets, f"node {z.node} zone {z.zone} has no pagesets"
        assert len(z.pagesets) <= (ncpu or len(z.pagesets))
        assert procfs_zoneinfo.node_cpus(z.node) >= 0


def test_live_host_sysctl_and_nodes():
    """The high fraction and node CPU counts read back sanely."""
    f = procfs_zoneinfo.read_high_fraction()
    assert f == 0 or f >= 8
    assert procfs_zoneinfo.node_cpus(0) >= 1
    # A node that does not exist falls back to os.cpu_count().
    assert procfs_zoneinfo.node_cpus(1 << 20) == os.cpu_count()
