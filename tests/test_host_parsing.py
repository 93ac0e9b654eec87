"""The host front end offline: /proc parsing, the raw trace, bursts, journal."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from pcplab import procfs_zoneinfo
from pcplab.host import bursts, procfs, ringbuffer, trace
from pcplab.host.cli import compare_rows

DATA = Path(__file__).parent / "data" / "host"
TEXT_EVENT = re.compile(
    r"\[(?P<cpu>\d+)\]\s+\S+\s+(?P<sec>\d+)\.(?P<usec>\d{6}): (?P<name>mm_page_\w+): "
    r".*?pfn=0x(?P<pfn>[0-9a-f]+) order=(?P<order>\d+)"
)


def _formats() -> tuple[
    tuple[int, int, int], ringbuffer.EventFormat, ringbuffer.EventFormat
]:
    header = ringbuffer.parse_header_page((DATA / "header_page").read_text())
    refill = ringbuffer.parse_format(
        trace.REFILL_EVENT, (DATA / "mm_page_alloc_zone_locked.format").read_text()
    )
    drain = ringbuffer.parse_format(
        trace.DRAIN_EVENT, (DATA / "mm_page_pcpu_drain.format").read_text()
    )
    return header, refill, drain


def _raw_pages(cpu: int) -> list[bytes]:
    data = gzip.open(DATA / f"cpu{cpu}.raw.gz").read()
    return [data[i : i + 4096] for i in range(0, len(data), 4096)]


def _recorded_cpus() -> list[int]:
    return sorted(int(p.name[3:].split(".")[0]) for p in DATA.glob("cpu*.raw.gz"))


def _normal_pageset() -> dict:
    zones = procfs.pagesets_of(
        procfs_zoneinfo.parse_zoneinfo((DATA / "zoneinfo.txt").read_text())
    )
    normal = next(z for z in zones if z["zone"] == "Normal")
    return normal["cpus"][0]


def test_recorded_vmstat_deltas_show_the_run():
    """The recorded run faulted pages; each anonymous fault allocated one."""
    before = procfs.parse_vmstat((DATA / "vmstat-before.txt").read_text())
    after = procfs.parse_vmstat((DATA / "vmstat-after.txt").read_text())
    assert len(before) > 50 and set(before) == set(after)
    delta = procfs.vmstat_delta(before, after)
    assert all(v != 0 for v in delta.values())
    summary = procfs.vmstat_summary(delta)
    assert summary["pgfault"] > 100_000  # 2.5 s of page_fault1
    assert summary["pgalloc"] >= 0.9 * summary["pgfault"]
    assert summary["pgfree"] >= 0.9 * summary["pgfault"]
    assert summary["pgalloc"] == sum(
        after[k] - before[k] for k in after if k.startswith("pgalloc_")
    )


def test_vmstat_rejects_a_malformed_line():
    """A line that is not `name value` is named in the error."""
    with pytest.raises(ValueError, match="line 2"):
        procfs.parse_vmstat("pgfault 12\npgfree twelve\n")
    with pytest.raises(ValueError, match="line 1"):
        procfs.parse_vmstat("pgfault 1 2\n")


def test_recorded_zoneinfo_pagesets_per_cpu():
    """Every populated zone lists a pageset per CPU; the schema keeps the first."""
    text = (DATA / "zoneinfo.txt").read_text()
    per_cpu = procfs.pagesets_of(procfs_zoneinfo.parse_zoneinfo(text))
    cpus = len(_recorded_cpus())
    assert [z["zone"] for z in per_cpu] == ["DMA", "DMA32", "Normal"]
    for zone in per_cpu:
        assert [c["cpu"] for c in zone["cpus"]] == list(range(cpus))
    normal = _normal_pageset()
    # recorded at high fraction 1000: auto-tuning off, high_min == high_max
    assert normal["high_min"] == normal["high_max"] == normal["high"]
    rows = procfs.schema_pagesets(per_cpu)
    assert rows[-1] == {
        "node": 0,
        "zone": "Normal",
        "managed_pages": per_cpu[-1]["managed_pages"],
        **{k: normal[k] for k in ("batch", "high", "high_min", "high_max")},
    }


@pytest.mark.parametrize("cpu", _recorded_cpus())
def test_raw_ring_buffer_decodes_like_the_kernels_text(cpu):
    """Our trace_pipe_raw decoder yields the kernel's own rendering, event by event."""
    header, refill, drain = _formats()
    names = {refill.id: "mm_page_alloc_zone_locked", drain.id: "mm_page_pcpu_drain"}
    ours = []
    for page in _raw_pages(cpu):
        for ts, rec in ringbuffer.iter_page_records(page, header):
            kind = int.from_bytes(rec[0:2], "little")
            fmt = refill if kind == refill.id else drain
            ours.append(
                (ts, names[kind], fmt.value(rec, 0, "pfn"), fmt.value(rec, 0, "order"))
            )
    theirs = []
    for m in TEXT_EVENT.finditer(
        gzip.open(DATA / f"cpu{cpu}.trace.txt.gz", "rt").read()
    ):
        assert int(m["cpu"]) == cpu
        usec = int(m["sec"]) * 1_000_000 + int(m["usec"])
        theirs.append((usec, m["name"], int(m["pfn"], 16), int(m["order"])))
    assert len(ours) > 1000
    assert [o[1:] for o in ours] == [t[1:] for t in theirs]
    assert all(abs(o[0] / 1000 - t[0]) <= 1 for o, t in zip(ours, theirs, strict=True))
    assert [o[0] for o in ours] == sorted(o[0] for o in ours)


def test_recorded_bursts_follow_the_kernels_pcp_rules():
    """Drains free batch..high-batch pages; a refill never exceeds high."""
    header, refill, drain = _formats()
    pages = {cpu: _raw_pages(cpu) for cpu in _recorded_cpus()}
    refills, drains = ringbuffer.decode_raw(pages, header, refill, drain)
    pageset = _normal_pageset()
    high, batch = pageset["high"], pageset["batch"]
    drain_set = bursts.join_bursts(drains)
    refill_set = bursts.join_bursts(refills)
    assert len(drain_set.bursts) >= 5 and len(refill_set.bursts) >= 5
    # free_frozen_page_commit: to_free = clamp(free_count, batch, high - batch)
    assert all(batch <= b.pages <= high - batch for b in drain_set.bursts)
    assert max(b.pages for b in drain_set.bursts) == high - batch
    # nr_pcp_alloc never asks for more than high - count
    assert all(1 <= b.pages <= high for b in refill_set.bursts)
    # the threshold sits in the valley: few gaps near it, inside gaps far below
    for joined in (drain_set, refill_set):
        assert joined.near_threshold <= 0.01 * joined.events
        assert bursts.summarize(joined, bursts.DEFAULT_GAP_NS)["gap_inside_p99_ns"] < (
            bursts.DEFAULT_GAP_NS
        )
        for b in joined.bursts:
            assert b.span_ns >= 0 and b.events >= 1


def test_join_bursts_splits_on_gaps_and_drops_the_edges():
    """Bursts end at a gap >= the threshold; the first and last per CPU are dropped."""
    events = []
    starts = [0, 10_000, 20_000, 30_000]
    for start in starts:
        events += [(0, start + i * 100, 1) for i in range(5)]  # 5 pages, 400 ns
    events += [(1, 5_000, 2), (1, 5_050, 2)]  # CPU 1: one burst, dropped as edge
    events.sort(key=lambda e: e[1])
    joined = bursts.join_bursts(events, gap_ns=1000)
    assert [(b.cpu, b.start_ns, b.pages, b.span_ns) for b in joined.bursts] == [
        (0, 10_000, 5, 400),
        (0, 20_000, 5, 400),
    ]
    assert joined.dropped_edge == 3 and joined.events == len(events)
    assert joined.near_threshold == 0
    assert bursts.join_bursts([(0, 0, 1), (0, 700, 1)], gap_ns=1000).near_threshold == 1
    with pytest.raises(ValueError, match="time order"):
        bursts.join_bursts([(0, 10, 1), (0, 5, 1)])


def test_log2_hist_and_percentiles_follow_funclatency():
    """Slot 1 holds 0..1, slot i holds 2^(i-1)..2^i-1; percentiles are nearest-rank."""
    rows = bursts.log2_hist([0, 1, 2, 3, 4, 1023, 1024])
    assert rows[0] == [0, 1, 2] and rows[1] == [2, 3, 2] and rows[2] == [4, 7, 1]
    assert rows[9] == [512, 1023, 1] and rows[10] == [1024, 2047, 1]
    assert len(rows) == 11 and sum(r[2] for r in rows) == 7
    s = bursts.stats(list(range(1, 101)))
    assert (s["p50"], s["p99"], s["max"], s["avg"], s["count"]) == (
        50,
        99,
        100,
        50,
        100,
    )
    assert bursts.stats([]) is None


def test_bpftrace_burst_lines():
    """The first burst per CPU and kind is dropped; Lost lines are counted."""
    lines = [
        "Attaching 3 probes...",
        "ready",
        "R 0 100 900 63 63",
        "R 0 5000 5600 62 62",
        "D 1 100 300 31 31",
        "D 1 9000 9800 412 412",
        "R 1 50 80 2 2",
        "r 1234",
        "f 99",
        "Lost 17 events",
    ]
    refills, drains, calls, lost = trace.parse_bpftrace_bursts(lines)
    assert [(b.cpu, b.pages, b.span_ns) for b in refills] == [(0, 62, 600)]
    assert [(b.cpu, b.pages, b.span_ns) for b in drains] == [(1, 412, 800)]
    assert calls == {"rmqueue_bulk": [1234], "free_pcppages_bulk": [99]}
    assert lost == 17


def test_bpftrace_programs_name_the_probes():
    """Each bpftrace method attaches what it says, with the gap threshold inlined."""
    tp = trace.bpftrace_program("bpftrace-tracepoint", 1500)
    assert "tracepoint:kmem:mm_page_pcpu_drain" in tp and ">= 1500" in tp
    assert "kprobe" not in tp and "GAP" not in tp
    kp = trace.bpftrace_program("bpftrace-kprobe", 2000)
    assert "kretprobe:free_pcppages_bulk" in kp and "kprobe:rmqueue_bulk" in kp
    assert "kretfunc:rmqueue_bulk" in trace.bpftrace_program("bpftrace-fentry", 2000)


def test_compare_rows_give_the_ratio():
    """Rows carry host, model and model/host; missing figures give n/a."""
    host = {"throughput": {"ops_per_s": 500.0}, "pcp": None}
    model = {
        "throughput": {"ops_per_s": 750.0},
        "pcp": {"pages_refilled": 630, "refills": 10},
    }
    rows = {r[0]: r for r in compare_rows(host, model)}
    assert rows["ops/s"] == ["ops/s", 500.0, 750.0, "1.500"]
    assert rows["pages per refill"] == ["pages per refill", None, 63.0, "n/a"]
