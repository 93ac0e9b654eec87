"""`pcplab fit --cross-validate`: folds by machine and thread, shared runs, Broyden."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pcplab import experiments, fidelity, fit, fit_search, folds, machines
from pcplab.errors import BadInput

AARON = ["Skylake-EX", "Broadwell-EP", "Haswell-Desktop", "Haswell-EP"]


def test_every_machine_and_every_thread_of_several_has_a_fold():
    """One fold per machine; one per thread, unless it is one machine's."""
    owner = fidelity.reference_machines()
    by_label = {f.label: f.left_out for f in folds.every_fold()}
    for machine in owner:
        assert by_label[machine] == (machine,)
    for thread in {t for mine in owner.values() for t in mine}:
        mine = tuple(m for m in owner if thread in owner[m])
        assert by_label.get(folds.THREAD + thread) == (mine if len(mine) > 1 else None)
    assert set(AARON) <= set(by_label[folds.THREAD + "aaron2018"])


def test_leave_out_names_a_machine_or_a_thread_and_refuses_others():
    """--leave-out takes a machine or a thread; anything else is one line."""
    picked = folds.every_fold(["aaron2018", "Haswell-EP"])
    assert [f.label for f in picked] == [folds.THREAD + "aaron2018", "Haswell-EP"]
    with pytest.raises(BadInput, match="--leave-out nosuch: no such fold"):
        folds.every_fold(["nosuch"])


def _fake(monkeypatch, targets, weight=None):
    """Make every machine's one residual WEIGHT * (smt_factor - its target).

    WEIGHT: 2 unless the dict says otherwise. Returns the list of machine
    lists each evaluation ran.
    """
    ran = []
    weight = weight or {}

    def evaluate(constants, only, workers):
        ran.append(list(only))
        return [
            (m, "score@31", weight.get(m, 2) * (constants["smt_factor"] - targets[m]))
            for m in only
        ]

    monkeypatch.setattr(fit_search, "evaluate", evaluate)
    monkeypatch.setattr(fit_search, "residuals", lambda rows: rows)
    return ran


def test_shared_runs_run_each_machine_once_per_point(monkeypatch):
    """A second fold at a point already run reads it: only new machines run."""
    ran = _fake(monkeypatch, dict.fromkeys(AARON, 1.2))
    runs = fit_search.SharedRuns(1)
    point = {"smt_factor": 1.1}
    first = runs.rows(point, AARON[:3])
    again = runs.rows(point, AARON[1:])
    assert ran == [AARON[:3], AARON[3:]]
    assert runs.ran == 4
    assert [r[0] for r in first] == AARON[:3] and [r[0] for r in again] == AARON[1:]
    assert first[1] == again[0]


def test_folds_after_a_fit_read_its_runs_at_the_full_fit(monkeypatch):
    """A fold that starts at the full fit reruns none of the fit's machines there."""
    ran = _fake(monkeypatch, dict.fromkeys(fidelity.reference_machines(), 1.2))
    space = fit.Space.from_file(["smt_factor"])
    everyone = list(fidelity.reference_machines())
    shared = fit_search.SharedRuns(1)
    full = {"full fit": {"smt_factor": 1.1}}
    fit_search.best_of(space, full, everyone, 1, 0, runs=shared)
    assert ran == [everyone]
    folds.cross_validate(space, full, 1, 0, leave_out=["Haswell-EP"], runs=shared)
    assert ran == [everyone]  # the fold's start was run by the fit already
    folds.cross_validate(space, full, 1, 0, leave_out=["Haswell-EP"])
    assert len(ran) == 2  # a store of its own runs it again


def test_a_machines_rows_are_the_same_alone_or_beside_others():
    """The cache keeps rows per machine: a row may not depend on who ran with it."""
    pair = ["Sandybridge-Desktop", "Coffee Lake Desktop"]
    together = experiments.residuals(fit.evaluate(None, pair, 2))
    alone = [r for m in pair for r in experiments.residuals(fit.evaluate(None, [m], 2))]
    assert sorted(together) == sorted(alone) and together


def test_broyden_meets_the_secant_of_every_step():
    """After a step the Jacobian maps it onto the change it saw (secant rule)."""
    a = np.array([[2.0, 1.0], [0.5, 3.0], [1.0, -1.0]])

    def fun(x):
        return a @ x + np.array([x[0] ** 2, 0.0, 0.0])

    x0 = np.array([1.0, 1.0])
    jac = fit_search.Broyden(np.eye(3, 2), x0, fun(x0), fun)
    assert np.array_equal(jac(x0), np.eye(3, 2))  # no step yet: the start's
    x1 = np.array([1.3, 0.8])
    j1 = jac(x1)
    assert np.allclose(j1 @ (x1 - x0), fun(x1) - fun(x0))
    x2 = np.array([1.1, 1.4])
    assert np.allclose(jac(x2) @ (x2 - x1), fun(x2) - fun(x1))


def test_a_step_short_of_its_prediction_measures_the_jacobian_again():
    """Broyden's secant is kept while steps pay what it predicted; else re-measured."""
    measured = []

    def fun(x):  # a cliff at x[0] < 4.7: the cost stops falling there
        return np.array([max(x[0], 4.7), x[1]])

    def measure(x, f):
        measured.append(x.copy())
        return np.eye(2) * 7

    x0 = np.array([10.0, 10.0])
    jac = fit_search.Broyden(np.eye(2), x0, fun(x0), fun, measure)
    jac(np.array([5.0, 5.0]))  # fell as much as predicted: a secant update
    assert measured == [] and jac.measured == 1
    assert np.allclose(jac.j @ np.array([-5.0, -5.0]), [-5.0, -5.0])
    jac(np.array([4.9, 4.9]))  # a small step, a small fall, as predicted
    assert measured == []
    j = jac(np.array([1.0, 4.8]))  # predicted to fall by 12.0, fell by 1.4
    assert [list(x) for x in measured] == [[1.0, 4.8]] and jac.measured == 2
    assert np.array_equal(j, np.eye(2) * 7)


def test_a_fold_starts_where_its_own_rows_cost_least(monkeypatch):
    """The left-out machine's rows never choose the fold's start."""
    space = fit.Space.from_file(["smt_factor"])
    lo, hi = space.lo[0], space.hi[0]
    targets = dict.fromkeys(fidelity.reference_machines(), lo)
    targets["Haswell-EP"] = hi  # only the left-out machine wants the top,
    _fake(monkeypatch, targets, {"Haswell-EP": 100})  # and outweighs the rest
    starts = {"low": {"smt_factor": lo}, "high": {"smt_factor": hi}}
    found = folds.cross_validate(space, starts, 1, 0, leave_out=["Haswell-EP"])
    assert found["Haswell-EP"].start == "low"
    assert "Haswell-EP" not in found["Haswell-EP"].machines
    targets.update(dict.fromkeys(targets, hi), **{"Haswell-EP": lo})
    found = folds.cross_validate(space, starts, 1, 0, leave_out=["Haswell-EP"])
    assert found["Haswell-EP"].start == "high"


def test_a_fold_search_finds_its_rows_optimum(monkeypatch):
    """From the middle, a few Broyden steps reach the fold's least squares."""
    space = fit.Space.from_file(["smt_factor"])
    everyone = list(fidelity.reference_machines())
    targets = {m: 1.05 + 0.01 * i for i, m in enumerate(everyone)}
    _fake(monkeypatch, targets)
    start = {"middle": space.middle()}
    found = folds.cross_validate(space, start, 1, 8, leave_out=["aaron2018"])
    fold = found[folds.THREAD + "aaron2018"]
    left = folds.every_fold(["aaron2018"])[0].left_out
    rest = [targets[m] for m in everyone if m not in left]
    assert set(fold.machines) == set(everyone) - set(left)
    assert fold.constants["smt_factor"] == pytest.approx(np.mean(rest), abs=2e-3)
    middle = 0.5 * sum((2 * (space.middle()["smt_factor"] - t)) ** 2 for t in rest)
    assert fold.cost < 0.01 * middle


@pytest.mark.parametrize("status", [2, 3, 4])  # ftol, xtol, both
def test_a_stall_on_a_secant_measures_again_and_searches_on(monkeypatch, status):
    """A stall (ftol, xtol) ends a fold only after a step with a measured Jacobian.

    The stand-in for scipy steps and reports a stall (STATUS): its first
    call's last step was taken on a secant, so the search measures again
    and calls it once more; that call's step, taken with the measured
    Jacobian, ends the fold.
    """
    space = fit.Space.from_file(["smt_factor"])
    _fake(monkeypatch, dict.fromkeys(fidelity.reference_machines(), 1.2))
    calls = []

    def steps(fun, x, jac, max_nfev, **_):
        calls.append((x.copy(), jac.age, max_nfev))
        jac(x)
        # toward the rows' optimum (1.2): a full step, then a small one
        for dx in (-0.2, -0.01) if len(calls) == 1 else (-0.01,):
            x = x + dx
            jac(x)  # accepted: the secant moves (the residuals are linear)
        return SimpleNamespace(status=status, nfev=2)

    monkeypatch.setattr(fit_search, "least_squares", steps)
    runs = fit_search.SharedRuns(1)
    everyone = list(fidelity.reference_machines())
    log = []
    fit_search.search(space, runs, everyone, space.middle(), 10, log.append)
    assert len(calls) == 2, log
    assert calls[1][1] == 0  # the second search starts on a measured Jacobian
    assert calls[1][2] == 8  # and from what the first left of the budget
    assert any("measured again" in line for line in log)
    assert "a 0-step secant" in log[-1]  # the last step had a measured Jacobian


def test_a_constant_its_rows_do_not_move_takes_its_unseen_value(monkeypatch):
    """A fold whose rows ignore a constant keeps the [unseen] value, not its start."""
    space = fit.Space.from_file(["smt_factor", "guest_miss_factor"])
    _fake(monkeypatch, dict.fromkeys(fidelity.reference_machines(), 1.2))
    found = folds.cross_validate(
        space, {"middle": space.middle()}, 1, 2, leave_out=["Haswell-EP"]
    )
    unseen = space.unseen_values()["guest_miss_factor"]
    assert found["Haswell-EP"].constants["guest_miss_factor"] == unseen
    assert unseen != space.middle()["guest_miss_factor"]


def test_thread_folds_are_written_and_read_back(tmp_path):
    """[left_out_thread] holds a thread's fold; fidelity maps it onto its machines."""
    path = tmp_path / "crossval.toml"
    one = fit.FitResult({"smt_factor": 1.25}, 1.0, [], 3, start="middle")
    two = fit.FitResult({"smt_factor": 1.5}, 2.0, [], 4, start="sample 1 of 8")
    fit.write_crossval(path, {"Haswell-EP": one, folds.THREAD + "aaron2018": two}, "d")
    assert fit.crossval_constants(path) == {"Haswell-EP": {"smt_factor": 1.25}}
    # a file of one thread's fold alone has no machine folds, and says so
    alone = tmp_path / "thread.toml"
    fit.write_crossval(alone, {folds.THREAD + "aaron2018": two}, "d")
    assert fit.crossval_constants(alone) == {}
    assert fit.crossval_constants(alone, "left_out_thread") == {
        "aaron2018": {"smt_factor": 1.5}
    }
    threads = fit.crossval_constants(path, "left_out_thread")
    assert threads == {"aaron2018": {"smt_factor": 1.5}}
    doc = machines.read_toml(path)
    assert doc["start"][folds.THREAD + "aaron2018"] == "sample 1 of 8"
    owner = fidelity.reference_machines()
    epyc = next(m for m in owner if owner[m] == ["yafang2024"])
    ying = next(m for m in owner if owner[m] == ["ying2023"])
    # a machine fold of a thread of several is not that thread's fold
    mapped = fidelity.by_thread(
        {epyc: {"smt_factor": 1.1}, ying: {"smt_factor": 1.3}}, threads
    )
    assert {m for m in mapped if owner[m] == ["aaron2018"]} == {
        m for m in owner if owner[m] == ["aaron2018"]
    }
    assert mapped[epyc] == {"smt_factor": 1.1}  # its thread is that one machine
    assert not {m for m in mapped if owner[m] == "ying2023"}  # no fold on file
    # a fold rerun alone replaces its own table, keeps the others
    fit.write_crossval(path, {folds.THREAD + "aaron2018": one}, "e", keep_others=True)
    assert fit.crossval_constants(path, "left_out_thread") == {
        "aaron2018": {"smt_factor": 1.25}
    }
    assert fit.crossval_constants(path) == {"Haswell-EP": {"smt_factor": 1.25}}


def test_fidelity_names_the_starts_of_the_folds_it_ran(tmp_path):
    """--folds FILE: each fold's start is FILE's, not the package's."""
    from pcplab import basis

    path = tmp_path / "crossval.toml"
    one = fit.FitResult({"smt_factor": 1.25}, 1.0, [], 3, start="sample 2 of 8")
    two = fit.FitResult({"smt_factor": 1.5}, 2.0, [], 4, start="middle")
    fit.write_crossval(path, {"Haswell-EP": one, folds.THREAD + "aaron2018": two}, "d")
    package = basis.fold_starts()
    with basis.folds_from(path):
        assert basis.fold_starts() == {"Haswell-EP": "sample 2 of 8"}
        assert basis.thread_fold_starts()["aaron2018"] == "middle"
        # the file rewritten inside the block is read again
        fit.write_crossval(path, {"Haswell-EP": two}, "e")
        assert basis.fold_starts() == {"Haswell-EP": "middle"}
    assert basis.fold_starts() == package  # the block's end restores them


def test_a_run_stopped_midway_keeps_the_folds_it_finished(monkeypatch, tmp_path):
    """Each fold is written as it ends: a stop in the second keeps the first."""
    space = fit.Space.from_file(["smt_factor"])
    _fake(monkeypatch, dict.fromkeys(fidelity.reference_machines(), 1.2))
    plain = fit_search.evaluate

    def stop_in_second_fold(constants, only, workers):
        if "Broadwell-EP" in only:  # the Haswell-EP fold, which runs second
            raise KeyboardInterrupt
        return plain(constants, only, workers)

    monkeypatch.setattr(fit_search, "evaluate", stop_in_second_fold)
    path = tmp_path / "crossval.toml"
    with pytest.raises(KeyboardInterrupt):
        folds.cross_validate(
            space,
            {"middle": space.middle()},
            1,
            2,
            leave_out=["Haswell-EP", "Broadwell-EP"],
            done=lambda found: fit.write_crossval(path, found, "d"),
        )
    assert list(fit.crossval_constants(path)) == ["Broadwell-EP"]


def test_a_thread_fold_starts_the_folds_of_its_own_machines_only(monkeypatch):
    """A thread's fold saw none of its machines' rows: a start for their folds.

    Every machine wants the same constant, so the thread's fold is the
    cheapest start for any fold; only its own machines may take it.
    """
    space = fit.Space.from_file(["smt_factor"])
    owner = fidelity.reference_machines()
    _fake(monkeypatch, dict.fromkeys(owner, 1.2))
    spr = next(m for m in owner if owner[m] == ["ying2023"])
    start = {"middle": space.middle()}
    found = folds.cross_validate(
        space, start, 1, 8, leave_out=["Haswell-EP", spr, "aaron2018"]
    )
    assert list(found)[0] == folds.THREAD + "aaron2018"  # threads run first
    assert found["Haswell-EP"].start == "thread aaron2018 fold"
    assert found[spr].start == "middle"
    # a thread's fold on file (an earlier run's crossval.toml) is offered too
    on_file = {
        folds.THREAD + "ying2023": fit.EarlierFold({"smt_factor": 1.2}, "middle", 9)
    }
    found = folds.cross_validate(space, start, 1, 0, leave_out=[spr], earlier=on_file)
    assert found[spr].start == "thread ying2023 fold"
    assert found[spr].constants["smt_factor"] == pytest.approx(1.2, abs=1e-3)


def test_a_fold_on_file_resumes_where_it_stopped(monkeypatch):
    """An earlier run's fold is a start for the same fold, under its first name.

    Haswell-EP's rows want 1.2; the fold on file stopped at 1.19, nearer
    than the middle, so the rerun resumes there and keeps that fold's start
    (a Sobol point) marked resumed; Broadwell-EP's fold on file is no
    start for Haswell-EP's.
    """
    space = fit.Space.from_file(["smt_factor"])
    _fake(monkeypatch, dict.fromkeys(fidelity.reference_machines(), 1.2))
    on_file = {
        "Haswell-EP": fit.EarlierFold({"smt_factor": 1.19}, "sample 3 of 8", 30),
        "Broadwell-EP": fit.EarlierFold({"smt_factor": 1.2}, "middle", 12),
    }
    start = {"middle": space.middle()}
    found = folds.cross_validate(
        space, start, 1, 0, leave_out=["Haswell-EP"], earlier=on_file
    )
    assert found["Haswell-EP"].constants["smt_factor"] == pytest.approx(1.19, 1e-3)
    assert found["Haswell-EP"].start == "sample 3 of 8" + folds.RESUMED
    # its points count the earlier search's: 30 there, 1 here (0 steps)
    assert found["Haswell-EP"].points_run() == "31 points run"
    # resumed again, it is named once; an earlier count not kept is not made up
    on_file["Haswell-EP"] = fit.EarlierFold(
        {"smt_factor": 1.19}, found["Haswell-EP"].start, None
    )
    again = folds.cross_validate(
        space, start, 1, 0, leave_out=["Haswell-EP"], earlier=on_file
    )
    assert again["Haswell-EP"].start == "sample 3 of 8" + folds.RESUMED
    assert again["Haswell-EP"].points_run() == "1 points run since it resumed"
    # without it, the middle
    found = folds.cross_validate(space, start, 1, 0, leave_out=["Haswell-EP"])
    assert found["Haswell-EP"].start == "middle"


def test_earlier_folds_reads_both_kinds_with_their_starts(tmp_path):
    """fit.earlier_folds: machine and thread folds of a crossval.toml, by label.

    With the points each fold's searches ran: a resumed fold's earlier
    ones added, none where the file before it did not keep them.
    """
    path = tmp_path / "crossval.toml"
    one = fit.FitResult({"smt_factor": 1.25}, 1.0, [], 3, start="middle")
    two = fit.FitResult(
        {"smt_factor": 1.5}, 2.0, [], 4, start="sample 1 (resumed)", earlier_points=20
    )
    lost = fit.FitResult({"smt_factor": 1.4}, 2.0, [], 5, earlier_points=None)
    written = {"Haswell-EP": one, folds.THREAD + "aaron2018": two, "Broadwell-EP": lost}
    fit.write_crossval(path, written, "d")
    assert fit.earlier_folds(path) == {
        "Haswell-EP": fit.EarlierFold({"smt_factor": 1.25}, "middle", 3),
        folds.THREAD + "aaron2018": fit.EarlierFold(
            {"smt_factor": 1.5}, "sample 1 (resumed)", 24
        ),
        "Broadwell-EP": fit.EarlierFold(
            {"smt_factor": 1.4}, "an unrecorded start", None
        ),
    }
    notes = machines.read_toml(path)["fold"]
    assert "24 points run (d)" in notes["thread aaron2018"]
    assert "5 points run since it resumed" in notes["Broadwell-EP"]
