"""`pcplab fit`: tolerances, the search space, the constants file, a real fit."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pcplab import (
    data,
    experiments,
    fidelity,
    fit,
    fit_search,
    machines,
    model_cli,
    tolerance,
)
from pcplab.errors import BadInput
from pcplab.experiments._common import profile_for


def _aaron_row(machine, batch, score, pub, change=0.0, change_pub=0.0):
    """Return a 2018 result row as the aaron2018 experiment does."""
    return {
        "machine": machine,
        "batch": batch,
        "score": score,
        "score_published": pub,
        "change_pct": change,
        "change_published": change_pub,
        "zone_contention": 10.0,
        "zone_published": 30.0,
        "lru_contention": 50.0,
        "lru_published": 50.0,
    }


def test_residuals_are_errors_in_tolerances():
    """10% over on score, 5 points on change, 20 points on zone: 1, 1, -2."""
    rows = [
        _aaron_row("M", 31, 110.0, 100.0),
        _aaron_row("M", 63, 100.0, 100.0, change=5.0, change_pub=0.0),
    ]
    res = {what: value for _, what, value in experiments.residuals({"aaron2018": rows})}
    assert res["score@31"] == pytest.approx(1.0)
    assert res["score@63"] == pytest.approx(0.0)
    assert res["change@63"] == pytest.approx(1.0)
    assert "change@31" not in res  # the base row's change is 0 by definition
    assert res["zone@31"] == pytest.approx(-2.0)
    assert res["lru@31"] == pytest.approx(0.0)


def test_a_ratio_miss_counts_the_same_above_and_below():
    """Twice and half the published figure are equally far from it."""
    kind = experiments.kinds()["ratio"]
    assert kind.residual(2.0, 1.0) == pytest.approx(1.0)
    assert kind.residual(0.5, 1.0) == pytest.approx(-1.0)
    assert kind.error(1.0) == "2.00x"
    assert experiments.kinds()["score"].error(1.0) == "+10.0%"


def test_worst_by_machine_keeps_the_largest_miss():
    """Per machine and kind, the row that misses its tolerance most."""
    res = [("M", "score@31", 0.5), ("M", "score@63", -1.5), ("N", "zone@31", 0.1)]
    worst = tolerance.worst_by_machine(res, experiments.kinds())
    assert worst["M"]["score"] == ("M", "score@63", -1.5)
    assert worst["N"]["zone"] == ("N", "zone@31", 0.1)


def test_a_percentage_tolerance_is_a_relative_error_either_way():
    """-25% is within 30% and +31% is not, though log(0.75) is the larger."""
    kinds = experiments.kinds()
    hold = kinds["free_avg"]
    low, high = hold.residual(75.0, 100.0), hold.residual(131.0, 100.0)
    assert abs(low) > abs(high) > 1  # the fit's log measure
    assert hold.within(low) and not hold.within(high)
    assert hold.within(hold.residual(130.0, 100.0))  # the edge is inside
    worst = tolerance.worst_by_machine(
        [("M", "free_avg@63", low), ("M", "free_avg@255", high)], kinds
    )
    assert worst["M"]["free_avg"] == ("M", "free_avg@255", high)
    ratio = kinds["ratio"]  # a factor: 0.5x and 2x are its edges
    assert ratio.within(ratio.residual(0.5, 1.0))
    assert not ratio.within(ratio.residual(0.45, 1.0))


def test_space_maps_constants_both_ways_within_bounds():
    """The search interval [1, 2] is the log of the [fit] bounds."""
    space = fit.Space.from_file(["zone_lock_lines", "smt_factor"])
    start = {"zone_lock_lines": 8.0, "smt_factor": 1.3}
    x = space.to_unit(start)
    assert all(1 <= v <= 2 for v in x)
    assert space.from_unit(x) == pytest.approx(start, rel=1e-3)
    lo = space.from_unit([1.0, 1.0])
    assert lo["zone_lock_lines"] == pytest.approx(space.lo[0])


def test_the_middle_start_is_the_geometric_middle_of_the_bounds():
    """No published figure sets the middle: it is the bounds' own mean."""
    space = fit.Space.from_file(["zone_lock_lines", "smt_factor"])
    middle = space.middle()
    for name, lo, hi in zip(space.names, space.lo, space.hi, strict=True):
        assert middle[name] == pytest.approx(math.sqrt(lo * hi), rel=1e-4)


def test_each_start_choice_names_its_points():
    """--start: the given point under its label, the middle, both, or none."""
    space = fit.Space.from_file(["zone_lock_lines", "smt_factor"])
    given = {"zone_lock_lines": 3.0, "smt_factor": 1.1}
    points = {c: fit.start_points(space, c, "full fit", given) for c in fit.STARTS}
    assert points["fitted"] == {"full fit": given}
    assert points["middle"] == {"middle": space.middle()}
    assert list(points["both"]) == ["full fit", "middle"]
    assert points["sample"] == {}
    option = next(p for p in model_cli.fit_command.params if p.name == "start")
    assert list(option.type.choices) == list(fit.STARTS)


def _one_constant(monkeypatch, target):
    """Make every machine's one residual 2 * (smt_factor - TARGET); log searches."""
    searched = []

    def evaluate(constants, only, workers):
        return [(m, "score@31", 2 * (constants["smt_factor"] - target)) for m in only]

    def search(space, runs, only, start, max_nfev, log):
        searched.append(start["smt_factor"])
        return fit_search.FitResult(dict(start), 0.0, [], 1)

    monkeypatch.setattr(fit_search, "evaluate", evaluate)
    monkeypatch.setattr(fit_search, "residuals", lambda rows: rows)
    monkeypatch.setattr(fit_search, "search", search)
    return searched


def test_a_search_of_two_starts_starts_from_the_lower_cost(monkeypatch):
    """--start both: the start of lower cost on the fitted rows is searched."""
    space = fit.Space.from_file(["smt_factor"])
    starts = {"a": {"smt_factor": 1.2}, "b": {"smt_factor": 1.6}}
    searched = _one_constant(monkeypatch, 1.55)
    best = fit_search.best_of(space, starts, ["Haswell-EP"], 1, 3)
    assert (best.start, searched) == ("b", [pytest.approx(1.6, abs=1e-3)])
    searched = _one_constant(monkeypatch, 1.25)
    assert fit_search.best_of(space, starts, ["Haswell-EP"], 1, 3).start == "a"


def test_folds_written_by_a_fit_are_read_back(tmp_path):
    """`pcplab fidelity --folds` reads the crossval.toml `pcplab fit` writes."""
    result = fit.FitResult({"smt_factor": 1.25}, 0.0, [], 1, start="middle")
    path = tmp_path / "crossval.toml"
    fit.write_crossval(path, {"Haswell-EP": result}, "a test")
    assert fit.crossval_constants(path) == {"Haswell-EP": {"smt_factor": 1.25}}
    assert tomllib.loads(path.read_text())["start"] == {"Haswell-EP": "middle"}
    # a fold run alone adds to the file; without keep_others it replaces it
    other = fit.FitResult({"smt_factor": 1.5}, 2.0, [], 7, start="full fit")
    fit.write_crossval(path, {"Skylake-EX": other}, "day 2", keep_others=True)
    assert fit.crossval_constants(path) == {
        "Haswell-EP": {"smt_factor": 1.25},
        "Skylake-EX": {"smt_factor": 1.5},
    }
    doc = tomllib.loads(path.read_text())
    assert doc["start"] == {"Haswell-EP": "middle", "Skylake-EX": "full fit"}
    assert doc["fold"]["Skylake-EX"].endswith("7 points run (day 2)")
    fit.write_crossval(path, {"Skylake-EX": other}, "day 3")
    assert set(fit.crossval_constants(path)) == {"Skylake-EX"}
    path.write_text('[left_out.Haswell-EP]\nsmt_factor = "fast"\n')
    with pytest.raises(BadInput, match="positive constants"):
        fit.crossval_constants(path)
    path.write_text("[left_out.Nowhere]\nsmt_factor = 1.25\n")
    with pytest.raises(BadInput, match="Nowhere: not a reference machine") as bad:
        fit.crossval_constants(path)
    # each known name quoted, as one may hold commas
    assert "'AMD EPYC 7W83 64-Core, single NUMA node, KVM'" in str(bad.value)
    path.write_text("[left_out\n")
    with pytest.raises(BadInput, match="cannot read --folds .*crossval.toml"):
        fit.crossval_constants(path)


def test_an_unknown_constant_is_refused():
    """Only constants of the [fit] table can be fitted."""
    with pytest.raises(BadInput, match="cannot fit nosuch"):
        fit.Space.from_file(["nosuch"])


def test_write_constants_keeps_comments_and_the_fit_table(tmp_path):
    """Fitted values replace the old ones; comments and [fit] stay."""
    path = tmp_path / "constants.toml"
    shutil.copy(machines.CONSTANTS, path)
    fitted = {"smt_factor": 1.234, "zone_lock_lines": 9.5, "guest_miss_factor": 3.0}
    fit.write_constants(path, fitted, "test", ["aaron2018", "lkp2023autotune"])
    text = path.read_text()
    doc = tomllib.loads(text)
    assert doc["smt_factor"] == 1.234 and doc["zone_lock_lines"] == 9.5
    assert doc["guest_miss_factor"] == 3.0
    before = tomllib.loads(machines.CONSTANTS.read_text())
    assert doc["fit"] == before["fit"] and doc["unseen"] == before["unseen"]
    assert "# a task whose SMT sibling is busy" in text
    assert text.count("# Last fit: test") == 1
    # a note that ran on over several lines goes whole, not its first line
    path.write_text(text.replace("# Last fit: test", "# Last fit: a\n# b runs on"))
    fit.write_constants(path, fitted, "again", None)
    assert "# b runs on" not in path.read_text()
    assert "# Last fit: again\n\n" in path.read_text()
    # what the fit read is written; a run that searched nothing keeps it
    assert doc["last_fit"] == {"experiments": ["aaron2018", "lkp2023autotune"]}
    fit.write_constants(path, fitted, "kept", None)
    assert tomllib.loads(path.read_text())["last_fit"] == doc["last_fit"]


def test_reference_machines_have_profiles():
    """Every reference machine of every fitted experiment maps to a profile."""
    owner = fidelity.reference_machines()
    assert {"Haswell-EP", "Sandybridge-Desktop", "Cascade Lake Server"} <= set(owner)
    for machine, names in owner.items():
        for name in names:
            profile = profile_for(experiments.load_experiment(name), machine)
            machines.load_profile(profile)


def test_an_unmapped_reference_machine_is_one_line(tmp_path, monkeypatch):
    """A reference row whose machine has no profile: BadInput, not KeyError."""
    target = tmp_path / "experiments"
    shutil.copytree(data.experiments_dir(), target)
    path = target / "aaron2018.toml"
    path.write_text(path.read_text().replace('"Haswell-EP" = "haswell-ep"\n', ""))
    monkeypatch.setenv("PCPLAB_EXPERIMENTS", str(target))
    with pytest.raises(BadInput, match="'Haswell-EP' of aaron2018 has no machine"):
        experiments.get("aaron2018").run(True, 1)


def test_a_small_fit_does_not_get_worse(monkeypatch):
    """A fit of one constant on one machine returns the lowest point it tried."""
    space = fit.Space.from_file(["fault_cycles_4"])
    start = {**machines.constants(), "fault_cycles_4": 900.0}
    only = ["Haswell-Desktop"]
    before = experiments.residuals(fit.evaluate(start, only, 2))
    cost = 0.5 * sum(v * v for *_, v in before)
    tried = []  # (fault_cycles_4, cost) of every point the search evaluated

    def evaluate(constants, *args, **kwargs):
        rows = evaluate.original(constants, *args, **kwargs)
        res = experiments.residuals(rows)
        tried.append((constants["fault_cycles_4"], 0.5 * sum(v * v for *_, v in res)))
        return rows

    evaluate.original = fit.evaluate
    monkeypatch.setattr(fit_search, "evaluate", evaluate)
    result = fit_search.search(space, fit_search.SharedRuns(2), only, start, 3)
    # the start is one point tried: a search that moved keeps what it found
    # only where it costs less, and its cost is that of its constants
    assert tried[0] == (900.0, pytest.approx(cost))
    assert result.evaluations == len(tried) >= 2
    best = min(tried, key=lambda t: t[1])
    # (search() keys a point by its search coordinate to 6 places: ~1e-6 apart)
    assert result.constants["fault_cycles_4"] == pytest.approx(best[0], rel=1e-5)
    assert result.cost == pytest.approx(best[1])
    assert result.cost < cost
    # the desktop's score is too high with 900 cycles: the fit adds cycles
    assert result.constants["fault_cycles_4"] > 900.0


def test_a_constant_no_row_moves_takes_its_unseen_value():
    """Left out, the only VM cannot lend the fold its guest_miss_factor.

    No row of a desktop moves guest_miss_factor (a Jacobian column of
    zeros), so the fit returns the [unseen] value, not its start.
    """
    space = fit.Space.from_file(["fault_cycles_4", "guest_miss_factor"])
    start = {**machines.constants(), "guest_miss_factor": 2.5}
    unseen = space.unseen_values()["guest_miss_factor"]
    assert unseen != 2.5
    runs = fit_search.SharedRuns(2)
    result = fit_search.search(space, runs, ["Haswell-Desktop"], start, 1)
    assert result.constants["guest_miss_factor"] == unseen


def test_the_jacobian_moves_what_a_constant_moves():
    """A desktop's rows move with the 4.x fault cost and never with the guest's.

    The damped Gauss-Newton step keeps the unmoved constant, stays in the
    bounds, and its predicted cost is what its predicted residuals give.
    """
    from pcplab import jacobian

    space = fit.Space.from_file(["fault_cycles_4", "guest_miss_factor"])
    start = machines.constants()
    jac = jacobian.measure(space, start, ["Haswell-Desktop"], 2)
    assert {m for m, *_ in jac.rows} == {"Haswell-Desktop"}
    assert set(jac.d["guest_miss_factor"]) == {0.0}
    assert any(abs(v) > 0.1 for v in jac.d["fault_cycles_4"])
    stepped, predicted = jacobian.gauss_newton(jac, space)
    assert stepped["guest_miss_factor"] == start["guest_miss_factor"]
    assert 500 <= stepped["fault_cycles_4"] <= 8000
    assert stepped["fault_cycles_4"] != start["fault_cycles_4"]
    assert len(predicted) == len(jac.rows)
    shares = fit.cost_by_machine(jac.rows, jac.residuals())
    assert shares["Haswell-Desktop"] == pytest.approx(fit.cost(jac.residuals()))


def _desktop_reference(
    tmp_path: Path, machines: tuple[str, ...] = ("Haswell-Desktop",)
) -> Path:
    """Return a copy of the reference figures with MACHINES' rows only."""
    reference = tmp_path / "reference"
    shutil.copytree(data.REFERENCE, reference)
    for path in reference.glob("*.csv"):
        if path.name != "machines.csv":
            lines = path.read_text().splitlines()
            keep = [
                lines[0],
                *(
                    x
                    for x in lines[1:]
                    if x.startswith(tuple(f"{m}," for m in machines))
                ),
            ]
            path.write_text("\n".join(keep) + "\n")
    # the mined record's fit side is read too: none of its rows is MACHINES'
    (reference / "record").mkdir()
    for path in data.RECORD.glob("*.csv"):
        header = path.read_text().splitlines()[0]
        (reference / "record" / path.name).write_text(header + "\n")
    return reference


def test_fit_jacobian_writes_the_step_it_measured(pcplab, tmp_path):
    """`pcplab fit --jacobian` on one machine's rows writes jacobian.json.

    With --max-nfev 0 the fit keeps constants.toml, whatever --start says.
    """
    reference = _desktop_reference(tmp_path)
    proc = pcplab(
        "fit", "--constants", "fault_cycles_4", "--max-nfev", "0", "--jacobian",
        "--start", "middle", "--out", tmp_path / "fit", "--reference", reference,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    kept = machines.read_toml(tmp_path / "fit" / "constants.toml")
    assert kept["fault_cycles_4"] == machines.constants()["fault_cycles_4"]
    doc = json.loads((tmp_path / "fit" / "jacobian.json").read_text())
    assert list(doc["d"]) == ["fault_cycles_4"] and doc["step"] == 0.1
    assert len(doc["d"]["fault_cycles_4"]) == len(doc["rows"]) > 0
    step = doc["gauss_newton"]
    assert set(step["by_machine_now"]) == {"Haswell-Desktop"}
    assert step["measured_cost"] >= 0 and step["predicted_cost"] >= 0
    assert "a damped Gauss-Newton step predicts" in proc.stdout


def test_fit_over_seeds_fits_the_mean_of_the_seeds(pcplab, tmp_path):
    """`pcplab fit --seeds N` reads every row as the mean of N seeds."""
    reference = _desktop_reference(tmp_path)
    docs = {}
    for seeds in ("1", "3"):
        out = tmp_path / f"fit{seeds}"
        proc = pcplab(
            "fit", "--constants", "fault_cycles_4", "--max-nfev", "0",
            "--seeds", seeds, "--out", out, "--reference", reference,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        docs[seeds] = json.loads((out / "fit.json").read_text())
        note = (out / "constants.toml").read_text()
        assert ("means of 3 seeds" in note) == (seeds == "3")
    assert (docs["1"]["seeds"], docs["3"]["seeds"]) == (1, 3)
    one = {(m, w): r for m, w, r in docs["1"]["fit"]["residuals"]}
    three = {(m, w): r for m, w, r in docs["3"]["fit"]["residuals"]}
    assert one.keys() == three.keys() and len(one) > 0
    assert one != three  # the desktop's rows move with the seed
    # the context --seeds enters ends with it: seed 1 alone again after
    with fit.mean_of_seeds(3):
        assert fit.seeds_per_evaluation() == 3
    assert fit.seeds_per_evaluation() == 1


def test_fit_on_a_dask_cluster_matches_local_jobs(pcplab, tmp_path):
    """`pcplab fit --scheduler`: its trials and folds on the cluster, same figures."""
    from dask import distributed  # a test dependency (pyproject [test])

    reference = _desktop_reference(tmp_path, ("Haswell-Desktop", "Sandybridge-Desktop"))
    args = (
        "fit",
        "--constants",
        "fault_cycles_4",
        "--max-nfev",
        "1",
        "--cross-validate",
        "1",
        "--leave-out",
        "Sandybridge-Desktop",
        "--reference",
        reference,
    )
    local = pcplab(*args, "--jobs", "2", "--out", tmp_path / "local")
    assert local.returncode == 0, local.stderr
    with distributed.LocalCluster(
        n_workers=2, processes=False, protocol="tcp", dashboard_address=None
    ) as cluster:
        remote = pcplab(
            *args, "--scheduler", cluster.scheduler_address, "--out", tmp_path / "dask"
        )
        assert remote.returncode == 0, remote.stderr
        ran = cluster.scheduler.task_prefixes.get("run_one")
        assert ran is not None and sum(ran.state_counts.values()) > 0
    docs = [
        json.loads((tmp_path / d / "fit.json").read_text()) for d in ("local", "dask")
    ]
    assert docs[0]["fit"] == docs[1]["fit"]
    assert docs[0]["folds"] == docs[1]["folds"]
    assert "Sandybridge-Desktop" in docs[0]["folds"]
    crossval = [
        (tmp_path / d / "crossval.toml").read_bytes() for d in ("local", "dask")
    ]
    assert crossval[0] == crossval[1]


def _constants_grid(*args: str) -> subprocess.CompletedProcess:
    """Run scripts/constants-grid with the installed pcplab."""
    script = Path(__file__).resolve().parent.parent / "scripts" / "constants-grid"
    return subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, check=False
    )


def test_constants_grid_applies_each_value():
    """Two values of a constant the desktop's rows move give two costs.

    The first value is constants.toml's own, so its cost is the one the
    fit's residuals give at the current constants.
    """
    now = machines.constants()["fault_cycles_4"]
    proc = _constants_grid(
        f"fault_cycles_4={now},{now * 2}", "--machine", "Sandybridge-Desktop",
        "--rows", "score@31",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    costs = [float(x.split("cost ")[1]) for x in lines if "cost" in x]
    rows = experiments.residuals(fit.evaluate(None, ["Sandybridge-Desktop"], 2))
    assert len(costs) == 2 and costs[1] > costs[0]
    assert costs[0] == pytest.approx(0.5 * sum(v * v for *_, v in rows), abs=0.01)
    assert "score@31" in proc.stdout


@pytest.mark.parametrize(
    "args",
    [["no_such_constant=1"], ["fault_cycles_4=x"], ["work_cv=2"],
     ["fault_cycles_4=1000", "--machine", "No Such Machine"]],
)  # fmt: skip
def test_constants_grid_refuses_bad_input_in_one_line(args):
    """An unknown constant or machine, a non-number, an out-of-range value: exit 2."""
    proc = _constants_grid(*args, "--machine", "Sandybridge-Desktop")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stdout == ""


def test_sampled_starts_are_spread_over_the_bounds_and_repeatable():
    """--samples: Sobol points inside the bounds, the same for every fold."""
    space = fit.Space.from_file()
    points = space.samples(8)
    assert points == space.samples(8) and len(points) == 8
    for name, lo, hi in zip(space.names, space.lo, space.hi, strict=True):
        values = [p[name] for p in points]
        assert all(lo * 0.9999 <= v <= hi * 1.0001 for v in values)
        assert len(set(values)) == 8  # every point differs in every constant


def test_the_best_sample_is_one_more_start(monkeypatch):
    """best_of(samples=N): the lowest-cost sample, judged on ONLY, is searched."""
    space = fit.Space.from_file(["smt_factor"])
    points = [p["smt_factor"] for p in space.samples(4)]
    judged = []
    searched = _one_constant(monkeypatch, points[2])
    plain = fit_search.evaluate

    def evaluate(constants, only, workers):
        judged.append(list(only))
        return plain(constants, only, workers)

    monkeypatch.setattr(fit_search, "evaluate", evaluate)
    best = fit_search.best_of(
        space, {"a": {"smt_factor": 1.3}}, ["Haswell-EP"], 1, 3, samples=4
    )
    assert judged == [["Haswell-EP"]] * 5  # the start and the four samples
    assert searched == [pytest.approx(points[2], abs=1e-3)]
    assert best.start == "sample 3 of 4"


def test_a_refused_start_writes_no_directory(pcplab, tmp_path):
    """--start sample without --samples is refused before --out is created."""
    out = tmp_path / "fit"
    proc = pcplab("fit", "--start", "sample", "--out", out)
    assert proc.returncode == 2 and "--samples N" in proc.stderr
    assert not out.exists()


def test_two_figures_under_one_label_are_refused_not_dropped():
    """The search keys rows by (machine, label): a label twice would lose one."""

    class Runs:
        def rows(self, constants, only):
            return [("m", "k@1", 1.0), ("m", "k@1", 2.0), ("m", "k@2", 0.5)]

    space = fit.Space.from_file(["smt_factor"])
    with pytest.raises(ValueError, match=r"share a label: m: k@1$"):
        fit_search.search(space, Runs(), ["m"], space.middle(), 3)
