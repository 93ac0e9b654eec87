"""`pcplab tune`: budgets, the search, and a recommendation that holds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import needs
from pcplab import engine, machines
from pcplab.budgets import parse_budget
from pcplab.errors import BadInput
from pcplab.tune import KNOBS, TIE, knobs_for, pareto_front, space

MACHINE = "haswell-desktop"


@pytest.mark.parametrize(
    "text, path, ns",
    [
        ("rmqueue_bulk.p99=100us", "latency_ns.rmqueue_bulk.p99", 1e5),
        ("zone_lock_hold.max=1ms", "lock_hold_ns.zone_lock.max", 1e6),
        ("fault.avg=750", "latency_ns.fault.avg", 750),
        (
            "free_pcppages_bulk_hold.p50=0.5s",
            "lock_hold_ns.free_pcppages_bulk.p50",
            5e8,
        ),
    ],
)
def test_budgets_name_result_paths_and_units(text, path, ns):
    """A budget is a result path and a limit in ns."""
    budget = parse_budget(text)
    assert (budget.path, budget.limit_ns) == (path, ns)


@pytest.mark.parametrize(
    "text",
    ["rmqueue_bulk.p98=1us", "zone_hold.max=1ms", "fault.p99=5h", "x", "a.p99=0"],
)
def test_bad_budgets_are_refused(text):
    """Unknown statistics, locks and units, and a zero limit, are bad input."""
    with pytest.raises(BadInput):
        parse_budget(text)


def test_each_kernel_has_its_own_knobs():
    """4.18 has no pcp_batch_scale_max; its space is batch only."""
    assert [k.key for k in knobs_for("4.18", None)] == ["batch"]
    assert {k.key for k in knobs_for("6.18", None)} == {
        k.key for k in KNOBS if not k.opt_in
    }
    with pytest.raises(BadInput, match="unknown knob scale_max for kernel 4.18"):
        knobs_for("4.18", ["scale_max"])
    with pytest.raises(BadInput, match="empty"):
        space([])


def test_the_policies_are_a_knob_only_when_named():
    """--knob policy searches the engines' policies; the default set leaves it out."""
    assert "policy" not in {k.key for k in knobs_for("6.18", None)}
    (policy,) = knobs_for("6.18", ["policy"])
    listed = {p["name"] for p in engine.list_policies()}
    assert policy.values[0] is None and set(policy.values[1:]) == listed - {"default"}
    assert policy.developer


def test_a_budget_the_setting_stops_calling_is_not_met():
    """No rmqueue_bulk call meets its budget only if the defaults made none either."""
    from pcplab.tune import Evaluator, Point

    budget = parse_budget("rmqueue_bulk.p99=100us")
    evaluator = Evaluator({}, {"mmap_fill": 1.0}, [budget], seeds=1, jobs=1)
    silent = Point(keys={"policy": "pcp-buddy"}, worst={budget.name: None})
    evaluator.default_worst = {budget.name: 4e5}
    assert not evaluator._holds(silent, budget)
    evaluator.default_worst = {budget.name: None}
    assert evaluator._holds(silent, budget)
    fast = Point(keys={"scale_max": 0}, worst={budget.name: 3e4})
    assert evaluator._holds(fast, budget)


def test_the_front_is_not_dominated():
    """No point of the front is beaten on both throughput and the metric."""
    from pcplab.tune import Point

    pts = [
        Point({"a": 1}, score=1.0, worst={"m": 10.0}),
        Point({"a": 2}, score=0.9, worst={"m": 5.0}),
        Point({"a": 3}, score=0.8, worst={"m": 7.0}),  # beaten by a=2
        Point({"a": 4}, score=1.1, worst={"m": 20.0}),
    ]
    assert [p.keys["a"] for p in pareto_front(pts, "m")] == [2, 1, 4]


def test_tune_recommends_a_setting_that_meets_the_budget(pcplab, tmp_path):
    """The recommendation, run again with pcplab run, keeps the budget."""
    plot = tmp_path / "front.png"
    budget = "rmqueue_bulk.p99=40us"
    args = ("tune", "--machine", MACHINE, "--workload", "page_fault1")
    args = (*args, "--budget", budget, "--knob", "scale_max", "--knob", "batch")
    proc = pcplab(*args, "--duration", "0.2", "--plot", plot, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert plot.stat().st_size > 0
    rec = data["recommendation"]
    assert rec is not None, data["front"]
    assert data["recommended"]["budgets_met"]
    feasible = [p for p in data["points"] if p["budgets_met"]]
    best = max(p["throughput_ratio"] for p in feasible)
    assert data["recommended"]["throughput_ratio"] >= best * (1 - TIE)
    for seed in (1, 2, 3):
        result = engine.run(
            {
                "engine": "sim",
                "machine": machines.load_profile(MACHINE),
                "workload": "page_fault1",
                "duration_s": 0.2,
                "seed": seed,
                **rec,
            }
        )
        p99 = result["latency_ns"]["rmqueue_bulk"]["p99"]
        assert p99 <= parse_budget(budget).limit_ns
    proc = pcplab(*args, "--duration", "0.2", "--plot", plot)
    assert "recommendation: " in proc.stdout and "how to apply it:" in proc.stdout
    assert "Pareto front (rmqueue_bulk.p99):" in proc.stdout
    # the command it prints to check the recommendation keeps the budget
    lines = proc.stdout.splitlines()
    check = lines[lines.index("check it (seed 1 of the 3 it held in):") + 1].split()
    assert check[:2] == ["pcplab", "run"] and "--duration" in check
    again = json.loads(pcplab(*check[1:], "--json").stdout)
    assert again["latency_ns"]["rmqueue_bulk"]["p99"] <= parse_budget(budget).limit_ns


def test_a_sampled_search_runs_what_a_kernel_takes_whole(pcplab, tmp_path):
    """A sampled search runs every setting a kernel takes, each once.

    Settings the engine resolves alike are run once, and 'without a patch'
    is the best of those that meet the budget.
    """
    proc = pcplab(
        "tune", "--machine", MACHINE, "--workload", "page_fault1",
        "--budget", "rmqueue_bulk.p99=40us", "--knob", "scale_max",
        "--knob", "batch", "--trials", "6", "--seeds", "1",
        "--duration", "0.1", "--plot", tmp_path / "f.png", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["settings_run"] == 1 + 6 + 6  # the default, 0..6 but 5, 6 sampled
    outcomes = [json.dumps([p["ops_per_s"], p["worst"]]) for p in data["points"]]
    assert len(set(outcomes)) == len(outcomes)  # alike runs are one point
    plain = [p for p in data["points"] if "batch" not in p["keys"]]
    resolved = [
        json.dumps(
            engine.resolve(
                {
                    "engine": "sim",
                    "machine": machines.load_profile(MACHINE),
                    "workload": "page_fault1",
                    **p["keys"],
                }
            ),
            sort_keys=True,
        )
        for p in data["points"]
    ]
    assert len(set(resolved)) == len(resolved)
    met = [p for p in plain if p["budgets_met"]]
    if met:
        best = max(p["throughput_ratio"] for p in met)
        assert data["settable"]["throughput_ratio"] >= best * (1 - TIE)
        assert "batch" not in data["settable"]["keys"]
    else:
        assert data["settable"] is None


def test_the_simplest_of_the_fastest_is_recommended():
    """Within half a percent, a kernel's own knob beats a developer override."""
    from pcplab.tune import Point, recommend

    patch = Point({"batch": 16, "scale_max": 0}, score=1.003, feasible=True)
    kconfig = Point({"scale_max": 0}, score=1.0, feasible=True)
    slow = Point({}, score=0.9, feasible=True)
    assert recommend([patch, kconfig, slow]) is kconfig
    faster = Point({"batch": 16}, score=1.2, feasible=True)
    assert recommend([patch, kconfig, faster]) is faster
    assert recommend([]) is None


@needs(None if os.geteuid() == 0 else "tuning this kernel sets its sysctls")
def test_tune_this_kernel_sets_and_restores_its_sysctl(pcplab, tmp_path):
    """--engine host: the sysctl knobs this kernel has, restored after."""
    before = Path("/proc/sys/vm/percpu_pagelist_high_fraction").read_text()
    args = ("tune", "--engine", "host", "--workload", "page_fault1", "--tasks", "1")
    args = (*args, "--duration", "0.2", "--seeds", "1", "--plot", tmp_path / "p.png")
    proc = pcplab(*args, "--budget", "fault.p99=1s", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["recommendation"] is not None
    assert set(data["recommendation"]) <= {"high_fraction"}
    assert Path("/proc/sys/vm/percpu_pagelist_high_fraction").read_text() == before
    refused = pcplab(*args, "--budget", "rmqueue_bulk.p99=1ms")
    assert refused.returncode == 2
    assert "cannot measure rmqueue_bulk.p99" in refused.stderr
