"""The model's lock waits per caller, printed as perf lock contention prints."""

from __future__ import annotations

import json

import pytest

from pcplab import engine, machines
from pcplab.locktable import format_rows, format_time, host_rows, model_rows

KERNEL_CALLERS = {
    "zone_lock": {
        "rmqueue_bulk",
        "rmqueue_buddy",
        "free_pcppages_bulk",
        "free_one_page",
    },
    "lru_lock": {"folio_batch_move_lru", "release_pages"},
}


@pytest.fixture(scope="module")
def contended() -> dict:
    """Run the sim with both zone->lock and lru_lock contended."""
    return engine.run(
        {
            "engine": "sim",
            "machine": machines.load_profile("skylake-ex"),
            "workload": "page_fault1",
            "batch": 511,
            "duration_s": 0.1,
            "warmup_s": 0.02,
        }
    )


def test_callers_add_up_to_the_lock(contended):
    """Every wait is charged to one kernel-named caller; the sums are the lock's."""
    for lock, names in KERNEL_CALLERS.items():
        section = contended["locks"][lock]
        callers = section["callers"]
        assert callers, lock
        assert {c["caller"] for c in callers} <= names
        assert sum(c["contended"] for c in callers) == section["contended"]
        assert sum(c["total_wait_ns"] for c in callers) == section["wait_ns"]
        for c in callers:
            assert c["max_wait_ns"] <= c["total_wait_ns"]
            assert c["avg_wait_ns"] == pytest.approx(
                c["total_wait_ns"] / c["contended"]
            )
        waits = [c["total_wait_ns"] for c in callers]
        assert waits == sorted(waits, reverse=True)


def test_the_table_reads_like_perf(contended):
    """Most wait first, perf's columns, times in the unit that keeps them short."""
    lines = format_rows(model_rows(contended))
    assert lines[0].split()[:8] == [
        "contended",
        "total",
        "wait",
        "max",
        "wait",
        "avg",
        "wait",
        "type",
    ]
    first = model_rows(contended)[0]
    assert lines[1].split()[-1] == first["caller"]
    assert format_time(first["total_wait_ns"]) in lines[1]


@pytest.mark.parametrize(
    "ns, text",
    [(999, "999.00 ns"), (1500, "1.50 us"), (2.5e6, "2.50 ms"), (3e9, "3.00 s")],
)
def test_time_units(ns, text):
    """Below a microsecond ns, then us, ms and s."""
    assert format_time(ns) == text


def test_host_rows_use_kernel_lock_names():
    """The host's perf lock records print with the same columns."""
    section = {
        "callers": [
            {
                "caller": "rmqueue_bulk",
                "lock": "zone_lock",
                "type": "spinlock",
                "contended": 4,
                "total_wait_ns": 4000.0,
                "max_wait_ns": 2000.0,
                "avg_wait_ns": 1000.0,
            }
        ]
    }
    lines = format_rows(host_rows({"lock_contention": section}))
    assert lines[1].split() == [
        "4",
        "4.00",
        "us",
        "2.00",
        "us",
        "1.00",
        "us",
        "spinlock",
        "zone->lock",
        "rmqueue_bulk",
    ]


def test_run_prints_the_table(pcplab, tmp_path):
    """`pcplab run --engine sim` text has the perf lock contention table."""
    out = tmp_path / "r.json"
    proc = pcplab(
        "run",
        "--engine",
        "sim",
        "--machine",
        "haswell-desktop",
        "--workload",
        "page_fault1",
        "--duration",
        "0.1",
        "--output",
        out,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "lock contention (as perf lock contention shows it" in text
    result = json.loads(out.read_text())
    for row in model_rows(result):
        assert row["caller"] in text
