"""Lock contention from perf lock: the parser on recorded text, and a live run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import require
from pcplab.host import lockstat
from pcplab.host.cli import compare_rows

DATA = Path(__file__).parent / "data" / "host"


# Recorded on the development machine (Linux 6.18, perf 6.1, 2 vCPUs):
# page_fault1, 2 tasks, vm.percpu_pagelist_high_fraction = 1000, while
# `perf lock record -a -- sleep 2` ran; then
# `perf lock contention -i perf.data -k wait_total [-v]` (both print on stderr).
PLAIN = DATA / "perf-lock-contention.txt"
VERBOSE = DATA / "perf-lock-contention-v.txt"


def test_units():
    """The units perf prints: ns, us, ms, s; anything else is refused."""
    assert lockstat.parse_time_ns("46.48", "ms") == pytest.approx(46.48e6)
    assert lockstat.parse_time_ns("3.13", "us") == pytest.approx(3130)
    assert lockstat.parse_time_ns("12", "ns") == 12
    assert lockstat.parse_time_ns("1.50", "s") == pytest.approx(1.5e9)
    with pytest.raises(ValueError, match="unknown time unit"):
        lockstat.parse_time_ns("1", "min")


def test_function_name():
    """Offsets and compiler suffixes are dropped from a symbol."""
    assert lockstat.function_name("__page_cache_release.part.0+0x58") == (
        "__page_cache_release"
    )
    assert lockstat.function_name("get_page_from_freelist+0x2fe") == (
        "get_page_from_freelist"
    )


def test_plain_sample():
    """Every row of the table, its units, and the callers' locks by name."""
    rows, _ = lockstat.parse_contention(PLAIN.read_text())
    assert len(rows) == 24
    first = rows[0]
    assert (first.contended, first.lock_type) == (10349, "spinlock")
    assert first.caller == "__page_cache_release.part.0+0x58"
    assert first.wait_total_ns == pytest.approx(34.94e6)
    assert first.wait_max_ns == pytest.approx(44.01e3)
    assert not first.stack
    locks = {lockstat.function_name(r.caller): lockstat.lock_class(r)[0] for r in rows}
    assert locks["get_page_from_freelist"] == "zone_lock"  # rmqueue_bulk inlined
    assert locks["free_frozen_page_commit"] == "zone_lock"  # free_pcppages_bulk
    assert locks["folio_batch_move_lru"] == "lru_lock"
    assert locks["__page_cache_release"] == "lru_lock"
    assert locks["call_timer_fn"] is None


def test_verbose_sample_with_call_chains():
    """-v: the same rows, each with its call chain naming the lock's taker."""
    rows, debug = lockstat.parse_contention(VERBOSE.read_text())
    plain, _ = lockstat.parse_contention(PLAIN.read_text())
    assert [(r.contended, r.caller) for r in rows] == [
        (r.contended, r.caller) for r in plain
    ]
    assert debug == {"bad": 0, "total": 24}
    assert all(r.stack for r in rows)
    takers = {
        lockstat.function_name(r.caller): lockstat.lock_class(r) for r in rows[:4]
    }
    assert takers["get_page_from_freelist"] == ("zone_lock", "__rmqueue_pcplist")
    assert takers["free_frozen_page_commit"] == ("zone_lock", "free_pcppages_bulk")
    assert takers["folio_batch_move_lru"] == ("lru_lock", "folio_lruvec_lock_irqsave")


def test_summary_and_contention_figures():
    """Rows grouped per caller and lock; % of tasks x seconds."""
    rows, _ = lockstat.parse_contention(VERBOSE.read_text())
    cpu_time_s = 2 * 2.0
    summary = lockstat.summarise(rows, cpu_time_s)
    callers = {(c["caller"], c["lock"]): c for c in summary["callers"]}
    zone = callers[("get_page_from_freelist", "zone_lock")]
    assert zone["contended"] == 240 + 1
    assert zone["total_wait_ns"] == pytest.approx(7.73e6 + 106.11e3)
    assert zone["max_wait_ns"] == pytest.approx(121.10e3)
    assert zone["avg_wait_ns"] == pytest.approx(zone["total_wait_ns"] / 241, abs=0.1)
    lru = callers[("__page_cache_release", "lru_lock")]
    assert lru["contended"] == 10349 + 1134 + 669 + 75 + 8
    waits = [c["total_wait_ns"] for c in summary["callers"]]
    assert waits == sorted(waits, reverse=True)
    totals = summary["totals"]
    zone_ns = sum(
        c["total_wait_ns"] for c in summary["callers"] if c["lock"] == "zone_lock"
    )
    assert totals["zone_lock"]["total_wait_ns"] == pytest.approx(zone_ns)
    assert totals["zone_lock"]["pct_of_cpu_time"] == pytest.approx(100 * zone_ns / 4e9)
    figures = lockstat.contention_figures(summary)
    assert figures["zone_lock_pct"] == totals["zone_lock"]["pct_of_cpu_time"]
    assert figures["lru_lock_pct"] == totals["lru_lock"]["pct_of_cpu_time"]
    assert 0 < figures["zone_lock_pct"] < figures["lru_lock_pct"] < 100
    assert "tasks x seconds" in figures["method"]


def test_header_missing_is_an_error():
    """Text without perf's table is an error, not zero contention."""
    with pytest.raises(ValueError, match="no table header"):
        lockstat.parse_contention("Error: no lock events\n")


def test_compare_rows_show_contention():
    """The compare table puts host and model contention side by side."""
    host = {"contention": {"zone_lock_pct": 0.5, "lru_lock_pct": 2.0}}
    model = {"contention": {"zone_lock_pct": 1.0, "lru_lock_pct": 4.0}}
    rows = {r[0]: r for r in compare_rows(host, model)}
    assert rows["zone->lock contention %"][1:] == [0.5, 1.0, "2.000"]
    assert rows["lru_lock contention %"][1:] == [2.0, 4.0, "2.000"]


def test_live_run_records_lock_contention(pcplab):
    """`pcplab run --engine host` as root: lock_contention rows and figures."""
    require(None if os.geteuid() == 0 else "perf lock record -a needs root")
    reason = lockstat.probe()
    require(None if reason is None else f"perf lock is not permitted here: {reason}")
    proc = pcplab(
        "run",
        "--engine",
        "host",
        "--workload",
        "page_fault1",
        "--tasks",
        "2",
        "--duration",
        "2",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    locks = result["lock_contention"]
    assert locks["method"] == lockstat.METHOD
    # perf records the measured phase only: its 2 s, not the warm-up before
    measured, warmup = result["duration_s"], result["spec"]["warmup_s"]
    assert 0.95 * measured < locks["recorded_s"] < measured + warmup
    assert locks["callers"], "page_fault1 on 2 CPUs contends the LRU lock"
    for row in locks["callers"]:
        assert row["contended"] > 0 and row["total_wait_ns"] > 0
        assert row["max_wait_ns"] <= row["total_wait_ns"]
    contention = result["contention"]
    assert contention["method"] == lockstat.CONTENTION_METHOD
    assert contention["zone_lock_pct"] is not None
    assert contention["lru_lock_pct"] > 0
    assert "contention" not in result["unavailable"]
    off = pcplab(
        "host",
        "run",
        "--workload",
        "page_fault1",
        "--tasks",
        "1",
        "--duration",
        "0.5",
        "--trace",
        "off",
        "--lock-stats",
        "off",
        "--json",
    )
    assert off.returncode == 0, off.stderr
    result = json.loads(off.stdout)
    assert result["lock_contention"] is None and result["contention"] is None
    assert "--lock-stats off" in result["unavailable"]["lock_contention"]


def test_lock_stats_refused_for_model_engines(pcplab):
    """--lock-stats with a model engine: one line, exit 2."""
    proc = pcplab(
        "run", "--engine", "native", "--workload", "page_fault1", "--lock-stats", "perf"
    )
    assert proc.returncode == 2
    assert "--lock-stats" in proc.stderr and len(proc.stderr.splitlines()) == 1
