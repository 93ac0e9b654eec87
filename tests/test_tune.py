"""`pcplab tune`: budgets, the search, and a recommendation that holds."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import needs
from pcplab import engine, machines
from pcplab.budgets import (
    HIST_SUB_BITS,
    UNITS,
    bucket_width,
    format_metric,
    parse_budget,
    resolved,
)
from pcplab.errors import BadInput
from pcplab.runs import materialize
from pcplab.stats import Sample, welch_p
from pcplab.tune import (
    KNOBS,
    Point,
    choose,
    effort,
    knobs_for,
    pareto_front,
    space,
)

MACHINE = "haswell-desktop"
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "text, path, ns",
    [
        ("rmqueue_bulk.p99=100us", "latency_ns.rmqueue_bulk.p99", 1e5),
        ("zone_lock_hold.max=1ms", "lock_hold_ns.zone_lock.max", 1e6),
        ("fault.avg=750ns", "latency_ns.fault.avg", 750),
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


def test_a_budget_without_a_unit_is_refused_naming_the_units():
    """100 is not silently 100 ns: the refusal names the units a time takes."""
    with pytest.raises(BadInput, match=r"has no unit; .* ns, us, ms or s"):
        parse_budget("rmqueue_bulk.p99=100")
    assert parse_budget("rmqueue_bulk.p99=100us").limit_ns == 1e5


def _bucket_mid(value: int) -> int:
    """Return the midpoint of the engines' histogram bucket holding VALUE."""
    msb = value.bit_length() - 1
    width = 1 << (msb - HIST_SUB_BITS) if value >= 1 << HIST_SUB_BITS else 1
    lo = value - value % width
    return lo + (width - 1) // 2


def test_percentiles_print_only_the_digits_their_bucket_resolves():
    """A p99 is a bucket's midpoint: printed to its bucket, not to five digits."""
    header = (ROOT / "src/include/pcplab/histogram.h").read_text()
    assert f"#define HIST_SUB_BITS {HIST_SUB_BITS}" in header
    assert format_metric("rmqueue_bulk.p99", 92159) == "92 us"
    assert format_metric("rmqueue_bulk.p99", 1212415) == "1.21 ms"
    assert format_metric("rmqueue_bulk.max", 1503078) == "1.503 ms"  # exact
    for value in (40, 999, 4097, 75775, 104447, 1540095, 93_000_000):
        mid = _bucket_mid(value)
        text = format_metric("fault.p99", mid)
        number, unit = text.split()
        printed = float(number) * UNITS[unit]
        assert abs(printed - mid) <= bucket_width(mid) / 2, text
        assert len(number.replace(".", "").strip("0")) <= 3, text


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
    from pcplab.tune import Evaluator

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
    pts = [
        Point({"a": 1}, first={"score": 1.0, "m": 10.0}),
        Point({"a": 2}, first={"score": 0.9, "m": 5.0}),
        Point({"a": 3}, first={"score": 0.8, "m": 7.0}),  # beaten by a=2
        Point({"a": 4}, first={"score": 1.1, "m": 20.0}),
    ]
    assert [p.keys["a"] for p in pareto_front(pts, "m")] == [2, 1, 4]


def _held(keys, scores):
    """Return a setting that held its budgets in every seed, with SCORES."""
    mean = sum(scores) / len(scores)
    return Point(keys, score=mean, seed_scores=list(scores), feasible=True)


def test_a_costlier_setting_needs_a_gain_beyond_the_seeds_spread():
    """A rebuild for +0.6% inside a 5% spread: keep the defaults (Welch)."""
    default = _held({}, [1.05, 0.95, 1.0])
    rebuild = _held({"scale_max": 1}, [1.056, 0.956, 1.006])
    chosen, turned_down, p = choose([default, rebuild], seeds=3)
    assert chosen is default and turned_down is rebuild
    base, new = Sample.of(default.seed_scores), Sample.of(rebuild.seed_scores)
    assert p == pytest.approx(welch_p(base, new)) and p > 0.05
    clear = _held({"scale_max": 1}, [1.20, 1.21, 1.19])
    assert choose([default, clear], seeds=3)[0] is clear
    # a patch must beat the rebuild, not the missed defaults, beyond the spread
    missed = Point({}, score=1.0, seed_scores=[1.0, 1.0, 1.0], feasible=False)
    patch = _held({"relinquish": "batched"}, [1.27, 1.17, 1.22])
    chosen, turned_down, _ = choose([missed, clear, patch], seeds=3)
    assert chosen is clear and turned_down is patch
    # nothing cheaper meets the budgets: the cheapest that does, slower or not
    slow = _held({"scale_max": 0}, [0.85, 0.86, 0.84])
    assert choose([missed, slow], seeds=3)[0] is slow
    # a setting that ran one seed only cannot be recommended
    once = Point({"scale_max": 2}, score=1.5, seed_scores=[1.5], feasible=True)
    assert choose([missed, once], seeds=3)[0] is None


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
    assert data["recommended"]["budgets_met"] and data["recommended"]["seeds"] == 3
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
    proc = pcplab(*args, "--duration", "0.2")
    assert "recommendation: " in proc.stdout and "how to apply it:" in proc.stdout
    assert "Pareto front (rmqueue_bulk.p99; seed 1" in proc.stdout
    # the command it prints to check the recommendation keeps the budget
    lines = proc.stdout.splitlines()
    check = lines[lines.index("check it (seed 1 of the 3 it held in):") + 1].split()
    assert check[:2] == ["pcplab", "run"] and "--duration" in check
    again = json.loads(pcplab(*check[1:], "--json").stdout)
    assert again["latency_ns"]["rmqueue_bulk"]["p99"] <= parse_budget(budget).limit_ns


def test_a_recommendation_beats_the_defaults_that_met_the_budget(pcplab):
    """Where the defaults meet the budgets, a change needs Welch's p < 0.05.

    A lax budget that the defaults meet: whatever tune recommends is either
    the defaults, said in words, or faster beyond the seeds' spread.
    """
    args = ("tune", "--machine", MACHINE, "--workload", "page_fault1")
    args = (*args, "--budget", "rmqueue_bulk.p99=1s", "--knob", "scale_max")
    proc = pcplab(*args, "--duration", "0.1", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["default"]["budgets_met"]
    default = Sample.of(data["default"]["seed_throughput_ratios"])
    rec = data["recommended"]
    if rec["keys"]:
        p = welch_p(default, Sample.of(rec["seed_throughput_ratios"]))
        assert p < 0.05 and rec["throughput_ratio"] > 1.0
    text = pcplab(*args, "--duration", "0.1").stdout
    if not rec["keys"]:
        assert "recommendation: keep the kernel's defaults" in text
    down = data["turned_down"]
    if down is not None:  # faster, but inside the spread: said with its p
        assert down["welch_p"] >= 0.05
        assert f"p = {down['welch_p']:.2f}" in text and "not worth" in text


def test_a_budget_nothing_meets_exits_1_naming_the_closest(pcplab):
    """No setting meets 1 ns: exit 1, and one line says who came closest.

    Its miss is the printed p99's, rounded to what the histogram resolves,
    over the limit: not a bucket midpoint's digits.
    """
    args = ("tune", "--machine", MACHINE, "--workload", "page_fault1")
    args = (*args, "--budget", "rmqueue_bulk.p99=1ns", "--knob", "scale_max")
    args = (*args, "--duration", "0.1", "--seeds", "2")
    proc = pcplab(*args, "--json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["recommendation"] is None
    last = proc.stderr.splitlines()[-1]
    closest = min(data["points"], key=lambda p: p["worst"]["rmqueue_bulk.p99"])
    worst = closest["worst"]["rmqueue_bulk.p99"]
    over = 100 * (resolved("rmqueue_bulk.p99", worst) - 1)
    assert resolved("rmqueue_bulk.p99", worst) != worst  # a midpoint's digits
    label = " ".join(f"{k}={v}" for k, v in closest["keys"].items())
    assert last.startswith("pcplab: no setting meets the budgets; the closest, ")
    assert f"{label or '(kernel defaults)'}, misses rmqueue_bulk.p99 <= 1 ns" in last
    assert f"by {over:.0f}%" in last


def test_the_plot_says_what_ran(pcplab, tmp_path):
    """The front's title is headed by what the runs ran: machine, kernel, ..."""
    plot = tmp_path / "front.svg"
    args = ("tune", "--machine", MACHINE, "--kernel", "4.18", "--tasks", "2")
    args = (*args, "--workload", "page_fault1", "--knob", "batch", "--seeds", "1")
    proc = pcplab(
        *args, "--budget", "rmqueue_bulk.p99=1ms", "--duration", "0.05", "--plot", plot
    )
    assert proc.returncode == 0, proc.stderr
    svg = "{http://www.w3.org/2000/svg}"
    root = ET.parse(plot).getroot()
    (ran,) = [g for g in root.iter(f"{svg}g") if g.get("id") == "ran"]
    line = " ".join("".join(t.itertext()) for t in ran.iter(f"{svg}text"))
    assert line == (
        f"engine sim, machine {MACHINE}, kernel 4.18, workload page_fault1, "
        "tasks 2, instrument none"
    )


def test_the_first_line_says_what_ran_not_what_was_asked(pcplab):
    """Asked without --kernel or --tasks: the header names what the engine ran."""
    args = ("tune", "--machine", MACHINE, "--workload", "page_fault1")
    args = (*args, "--knob", "batch", "--seeds", "1", "--duration", "0.05")
    proc = pcplab(*args, "--budget", "rmqueue_bulk.p99=1ms")
    assert proc.returncode == 0, proc.stderr
    ran = engine.resolve(
        materialize({"engine": "sim", "machine": MACHINE, "workload": "page_fault1"})
    )
    assert proc.stdout.splitlines()[0].startswith(
        f"pcplab tune: engine sim, machine {MACHINE}, kernel {ran['kernel']}, "
        f"workload page_fault1, tasks {ran['tasks']}, instrument none; "
    ), proc.stdout


def test_tune_writes_no_plot_unless_asked(pcplab_command, tmp_path):
    """Without --plot, tune leaves the current directory as it found it."""
    args = ("tune", "--machine", MACHINE, "--workload", "page_fault1")
    args = (*args, "--budget", "rmqueue_bulk.p99=40us", "--knob", "scale_max")
    proc = subprocess.run(
        [*pcplab_command, *args, "--duration", "0.1", "--seeds", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []
    assert "plot:" not in proc.stdout


PROGRESS = re.compile(r"tune: \d+/\d+ runs, \d+ s(, ~\d+ s left)?")


def test_progress_and_an_eta_reach_a_pipe(pcplab_command):
    """Progress lines with an ETA reach stderr though it is a pipe, then a count."""
    args = ("tune", "--machine", MACHINE, "--workload", "page_fault1")
    args = (*args, "--budget", "rmqueue_bulk.p99=40us", "--knob", "scale_max")
    proc = subprocess.run(
        [*pcplab_command, *args, "--duration", "0.2", "--jobs", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PCPLAB_PROGRESS_EVERY": "0.2"},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    ticks = [line for line in lines if PROGRESS.fullmatch(line)]
    assert ticks, proc.stderr
    assert any("s left" in line for line in ticks)
    runs = json.loads(proc.stdout)["runs"]
    assert re.fullmatch(rf"tune: {runs} runs in \d+ s", lines[-1]), lines[-1]


def test_a_large_space_stops_early_and_runs_nothing_twice(pcplab):
    """Every knob of 6.18: seed 1 first, every seed only where it can count.

    A setting that missed in seed 1 is not run again; the recommendation
    ran every seed; no setting and seed ran twice (the runs add up); and
    far fewer settings ran than the space has.
    """
    args = ("tune", "--machine", MACHINE, "--workload", "page_fault1")
    args = (*args, "--budget", "rmqueue_bulk.p99=20us", "--duration", "0.1")
    proc = pcplab(*args, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    size = len(space(knobs_for("6.18", None)))
    assert data["settings_run"] < size / 5
    points = data["points"]
    assert all(p["seeds"] == 1 for p in points if not p["budgets_met"] and p["keys"])
    assert data["default"]["seeds"] == 3
    if data["recommended"] is not None:
        assert data["recommended"]["seeds"] == 3


def test_runs_are_reused_not_repeated(monkeypatch):
    """A setting's seed runs once: later passes add seeds, never rerun them."""
    from pcplab import tune

    ran = []

    def fake(specs, jobs=1, **_):
        ran.extend(specs)
        return [
            {"engine": "sim", "throughput": {"ops_per_s": 100.0 + s["seed"]}}
            for s in specs
        ]

    monkeypatch.setattr(tune, "run_specs", fake)
    base = {"engine": "sim", "machine": MACHINE, "kernel": "6.18"}
    evaluator = tune.Evaluator(base, {"page_fault1": 1.0}, [], seeds=3, jobs=1)
    (default,) = evaluator.evaluate([{}])
    assert len(ran) == 3 and default.seeds == 3
    evaluator.evaluate([{}, {"scale_max": 1}, {"scale_max": 5}], seeds=1)
    assert len(ran) == 4  # scale_max=5 is the default, resolved alike
    (point,) = evaluator.evaluate([{"scale_max": 1}])
    assert len(ran) == 6 and point.seeds == 3
    assert sorted(s["seed"] for s in ran if s.get("scale_max") == 1) == [1, 2, 3]


class _Seeds:
    """An evaluator whose settings run their other seeds at seed 1's score."""

    seeds = 3

    def __init__(self) -> None:
        self.asked: list[dict] = []

    def evaluate(self, settings):
        """Record SETTINGS; return each with every seed, as it held in seed 1."""
        self.asked += settings
        return [
            Point(
                k,
                score=SEED1[str(k)],
                seed_scores=[SEED1[str(k)]] * 3,
                first={"score": SEED1[str(k)]},
                feasible=True,
            )
            for k in settings
        ]


SEED1 = {"{}": 1.0, "{'scale_max': 0}": 0.91, "{'scale_max': 2, 'batch': 8}": 0.8}


@pytest.mark.parametrize("patch, runs_again", [(0.8, False), (0.95, True)])
def test_the_last_pass_gives_seeds_only_to_what_can_be_recommended(
    patch, runs_again, monkeypatch
):
    """A patch slower in seed 1 than a rebuild that held runs no other seed."""
    from pcplab.tune import finish

    monkeypatch.setitem(SEED1, "{'scale_max': 2, 'batch': 8}", patch)
    rebuild, fix = {"scale_max": 0}, {"scale_max": 2, "batch": 8}
    points = [
        Point({}, score=1.0, seed_scores=[1.0] * 3, first={"score": 1.0}),
        Point(rebuild, score=0.91, seed_scores=[0.91], first={"score": 0.91}),
        Point(fix, score=patch, seed_scores=[patch], first={"score": patch}),
    ]
    for p in points[1:]:
        p.feasible = True
    evaluator = _Seeds()
    done = {str(p.keys): p.seeds for p in finish(evaluator, points)}
    assert rebuild in evaluator.asked and done[str(rebuild)] == 3
    assert (fix in evaluator.asked) == runs_again
    assert done[str(fix)] == (3 if runs_again else 1)


def test_the_predictor_learns_that_two_knobs_do_not_add_up():
    """Two knobs that each halve a figure, together halve it once: learnt."""
    from pcplab.tune_search import Predictor

    default = Point({}, first={"score": 1.0, "m": 100.0})
    a = Point({"a": 1}, first={"score": 0.9, "m": 50.0})
    b = Point({"b": 1}, first={"score": 0.8, "m": 50.0})
    model = Predictor(default, [a, b])
    assert model.predict({"a": 1, "b": 1}) == pytest.approx({"score": 0.72, "m": 25})
    model.learn(Point({"a": 1, "b": 1}, first={"score": 0.72, "m": 50.0}))
    assert model.predict({"a": 1, "b": 1})["m"] == pytest.approx(50.0)


def test_killing_tune_stops_its_simulator_runs(pcplab_command):
    """SIGTERM mid-run: tune exits at once and no engine of its outlives it."""
    args = ("tune", "--machine", MACHINE, "--workload", "page_fault1")
    args = (*args, "--budget", "rmqueue_bulk.p99=40us", "--knob", "scale_max")
    proc = subprocess.Popen(
        [*pcplab_command, *args, "--duration", "60", "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    children: set[int] = set()
    deadline = time.monotonic() + 60
    while len(children) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        children |= _children(proc.pid, "pcplab-sim")
    assert children, "tune started no simulator"
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 10, "tune waited for its runs to end"
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted by SIGTERM" in err
    time.sleep(0.5)
    alive = [pid for pid in children if Path(f"/proc/{pid}").exists()]
    assert alive == [], f"simulators left running: {alive}"


def _children(pid: int, name: str) -> set[int]:
    """Return the pids of PID's children whose command is NAME (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, _, rest = text.partition("(")[2].rpartition(")")
        if int(rest.split()[1]) == pid and comm == name[:15]:
            found.add(int(stat.parent.name))
    return found


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
    if met:  # one seed: no spread to test, so the cheapest that held
        settable = data["settable"]
        assert "batch" not in settable["keys"] and settable["budgets_met"]
        cheapest = min(effort(p["keys"]) for p in met)
        assert effort(settable["keys"]) == cheapest
        assert settable["seed1"]["score"] == max(
            p["seed1"]["score"] for p in met if effort(p["keys"]) == cheapest
        )
    else:
        assert data["settable"] is None


def test_the_simplest_of_the_fastest_is_recommended():
    """Within half a percent, a kernel's own knob beats a developer override."""
    from pcplab.tune import recommend

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
