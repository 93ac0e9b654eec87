"""Instruments on the sim engine: each charged where the traced kernel pays it.

function_graph on F alone (set_ftrace_filter) and funclatency probe outside
what they time; function_graph-children (set_graph_function) traces the
calls under F, under zone->lock, and lengthens the hold; perf-profile
samples at its period. Without an instrument the result does not mention one.
"""

from __future__ import annotations

import json

import pytest

from pcplab import machines
from test_sim import raw_run

# Huang Ying's 2023 setup, small and short: pcp->high = 2 x batch.
SPEC = {
    "engine": "sim",
    "workload": "page_fault1",
    "kernel": "6.6",
    "tasks": 8,
    "batch": 63,
    "high": 126,
    "no_free_scaling": True,
    "duration_s": 0.1,
    "warmup_s": 0.05,
}


def run(instrument: str | None = None) -> dict:
    """Run SPEC on sapphire-rapids with INSTRUMENT; return the result."""
    spec = {**SPEC, "machine": machines.load_profile("sapphire-rapids")}
    if instrument is not None:
        spec["instrument"] = instrument
    return json.loads(raw_run(spec))


def test_no_instrument_leaves_no_trace_in_the_result():
    """The default run names no instrument, in the spec or the result."""
    result = run()
    assert "instrument" not in result
    assert "instrument" not in result["spec"]


def test_function_graph_children_lengthens_the_zone_lock_hold_it_times():
    """Nested calls are charged under zone->lock: the hold grows by their cost."""
    plain = run()
    traced = run("function_graph-children:rmqueue_bulk,free_pcppages_bulk")
    instr = traced["instrument"]
    assert traced["spec"]["instrument"] == instr["instrument"]
    assert instr["nested_calls"] > 0
    assert instr["charged_under_zone_lock_ns"] > 0
    holds = sum(
        traced["lock_hold_ns"][side]["count"]
        for side in ("rmqueue_bulk", "free_pcppages_bulk")
    )
    per_hold = instr["charged_under_zone_lock_ns"] / holds
    grown = (
        traced["lock_hold_ns"]["rmqueue_bulk"]["avg"]
        - plain["lock_hold_ns"]["rmqueue_bulk"]["avg"]
    )
    assert grown > per_hold / 2


@pytest.mark.parametrize(
    "instrument",
    [
        "funclatency:rmqueue_bulk",
        "function_graph:rmqueue_bulk",
        "function_graph:rmqueue_bulk,free_pcppages_bulk",
    ],
)
def test_traced_function_alone_is_charged_outside_the_interval(instrument):
    """Two hooks per traced call, nothing nested, the zone->lock hold untouched."""
    plain = run()
    traced = run(instrument)
    instr = traced["instrument"]
    calls = sum(traced["latency_ns"][f]["count"] for f in instr["functions"])
    assert instr["nested_calls"] == 0
    assert instr["charged_under_zone_lock_ns"] == 0
    assert abs(instr["probe_hits"] - 2 * calls) <= 2 * SPEC["tasks"]
    assert instr["charged_ns"] > 0
    for f in instr["functions"]:
        hold = traced["lock_hold_ns"][f]["avg"]
        assert abs(hold / plain["lock_hold_ns"][f]["avg"] - 1) < 0.1


def test_perf_profile_samples_every_cpu_at_its_period():
    """One sample per 1000003 cycles of every task's time, spun or not."""
    traced = run("perf-profile")
    instr = traced["instrument"]
    clock_ghz = traced["machine"]["topology"]["clock_ghz"]
    expected = SPEC["tasks"] * SPEC["duration_s"] * clock_ghz * 1e9 / 1000003
    taken = instr["samples"] + instr["samples_while_spinning"]
    assert abs(taken / expected - 1) < 0.05
    assert instr["charged_ns"] == instr["samples"] * instr["costs_ns"]["sample"]


def test_a_traced_run_is_deterministic():
    """Same spec, seed and instrument: the same result."""
    assert run("perf-profile") == run("perf-profile")
