"""The experiment registry: a module and a TOML make an experiment, nothing else."""

from __future__ import annotations

import csv
import importlib
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from pcplab import (
    basis,
    data,
    engine,
    experiments,
    fidelity,
    fidelity_doc,
    folds,
    machines,
    reproduce,
)
from pcplab.cli import main

# An experiment as a newcomer would write it: one sim run per row of its
# reference CSV, its score beside the published one, fitted, with a section
# of docs/fidelity.md; text, tables and plots left to the defaults but text.
TINY_MODULE = '''
"""tiny: a test's experiment, one short page_fault1 run per reference row."""

from pcplab.experiments._common import (
    keep, load_experiment, mode_table, own_name, profile_for, reference_rows,
    run_specs, sim_spec, timing,
)
from pcplab.tolerance import Kind, add

NAME = own_name(__name__)
ORDER = 2020  # between the 2018 and the 2023 threads
FITTED = True
KINDS = {"tiny_score": Kind(True, 0.5, "tiny score")}


def run(quick, workers, *, scheduler=None, mode=None, only=None, constants=None):
    """Run one page_fault1 per reference row."""
    exp = load_experiment(NAME)
    rows = keep(reference_rows(exp["reference"]), only)
    table = timing(mode_table(exp, quick, mode))
    specs = [
        sim_spec(profile_for(exp, r["machine"]), constants, **exp["spec"], **table)
        for r in rows
    ]
    results = run_specs(NAME, specs, workers, scheduler)
    return [
        {
            "machine": r["machine"],
            "score": res["throughput"]["ops_per_s"],
            "score_published": float(r["score"]),
        }
        for r, res in zip(rows, results)
    ]


def residuals(rows):
    """The score's error in tolerances."""
    out = []
    for r in rows:
        add(out, KINDS, r["machine"], "tiny_score", 1, r["score"], r["score_published"])
    return out


def text(rows, spec):
    """One line per row: model/published."""
    return "".join(f"{r['machine']}: {r['score']:.0f}/{r['score_published']:.0f}\\n"
                   for r in rows)


def section(rows, cv):
    """A list of the machines."""
    return ["## tiny: the test's section", "", *(f"- {r['machine']}" for r in rows)]
'''

TINY_TOML = """
title = "a test's experiment"
reference = "tiny_scores"

[spec]
workload = "page_fault1"
tasks = 2
warmup_s = 0

[machines]
"Tiny Box" = "haswell-desktop"

[quick]
duration_s = 0.05

[full]
duration_s = 0.1
"""


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Add the tiny experiment: its module on the registry's path, TOML, CSV."""
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "tiny.py").write_text(TINY_MODULE)
    specs = tmp_path / "experiments"
    shutil.copytree(data.experiments_dir(), specs)
    (specs / "tiny.toml").write_text(TINY_TOML)
    reference = tmp_path / "reference"
    shutil.copytree(data.reference_dir(), reference)
    (reference / "tiny_scores.csv").write_text("machine,score\nTiny Box,1000000\n")
    monkeypatch.setenv("PCPLAB_EXPERIMENTS", str(specs))
    monkeypatch.setenv("PCPLAB_REFERENCE", str(reference))
    monkeypatch.setattr(experiments, "__path__", [*experiments.__path__, str(modules)])
    importlib.invalidate_caches()
    yield tmp_path
    sys.modules.pop("pcplab.experiments.tiny", None)


def test_the_registry_finds_the_shipped_experiments() -> None:
    """Every shipped experiment, in ORDER; the fitted and the published ones."""
    names = [
        "aaron2018",
        "aaron2018pf2",
        "aaron2018prefetch",
        "aaron2018rfc",
        "mel2022highorder",
        "lkp2023allocscale",
        "lkp2023autotune",
        "lkp2023cooperlake",
        "ying2023",
        "ying2023zones",
        "lkp2024releasepages",
        "yafang2024",
        "hahn2025",
        "lkp2025basefaults",
        "policies",
        "host",
        "hostmodel",
    ]
    assert experiments.names() == names
    assert experiments.fitted() == [
        "aaron2018",
        "lkp2023allocscale",
        "lkp2023autotune",
        "ying2023",
        "lkp2024releasepages",
        "yafang2024",
    ]
    assert experiments.published() == names[:14]
    assert {"score", "throughput", "avg", "ratio"} <= set(experiments.kinds())
    assert experiments.get("host").needs_root
    assert "extra_machines" in experiments.get("aaron2018").options


def test_a_new_module_and_toml_make_an_experiment(tiny: Path, capsys) -> None:
    """tiny.py and tiny.toml alone: reproduce, fidelity and the fit take it."""
    assert experiments.names()[:6] == [
        "aaron2018",
        "aaron2018pf2",
        "aaron2018prefetch",
        "aaron2018rfc",
        "tiny",
        "mel2022highorder",
    ]
    assert "tiny" in experiments.fitted() and "tiny" in experiments.published()
    out = tiny / "report"
    assert main(["reproduce", "tiny", "--quick", "--out", str(out), "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "== tiny: a test's experiment\n\nTiny Box: " in printed
    with open(out / "tiny.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["machine"] == "Tiny Box" and float(row["score"]) > 0
    assert row["score_published"] == "1000000.0"
    index = (out / "index.md").read_text()
    assert "## tiny\n" in index and "## tiny: the test's section" in index
    # the fit and `pcplab fidelity` see its reference machine and its figures
    assert fidelity.reference_machines()["Tiny Box"] == ["tiny"]
    results = fidelity.run_machines(["Tiny Box"], 1, quick=True)
    assert list(results) == ["tiny"]
    ((machine, what, _),) = experiments.residuals(results)
    assert (machine, what) == ("Tiny Box", "tiny_score@1")
    doc = fidelity_doc.render_document(results, None)
    assert "| Tiny Box | tiny score (50%) |" in doc
    assert "- Tiny Box" in doc


def test_fidelity_over_seeds_gives_means_and_each_worst_rows_range(
    tiny: Path, capsys
) -> None:
    """`pcplab fidelity --seeds N`: the mean of N seeds, and the error's range."""
    plain = fidelity.run_machines(["Tiny Box"], 1, quick=True)
    runs = {
        seed: fidelity.over_seeds(
            lambda: fidelity.run_machines(["Tiny Box"], 1, quick=True), seed
        )
        for seed in (1, 3)
    }
    (row1,), spread1 = runs[1][0]["tiny"], runs[1][1]
    assert spread1 == {} and "seeds" not in row1
    assert row1["score"] == plain["tiny"][0]["score"]  # seed 1 is the default
    (row3,), spread3 = runs[3][0]["tiny"], runs[3][1]
    assert row3["seeds"] == 3 and row3["score_std"] > 0
    lo, hi = spread3[("Tiny Box", "tiny_score@1")]
    ((_, _, mean),) = experiments.residuals(runs[3][0])
    assert lo < hi and lo <= mean <= hi
    # the summary gives the worst row's range; the head says what was run
    assert main(["fidelity", "tiny", "--quick", "--seeds", "3", "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "the mean of seeds 1..3 of the sim" in printed
    kind = experiments.kinds()["tiny_score"]
    assert f"(seeds {kind.error(lo)} to {kind.error(hi)})" in printed
    assert main(["fidelity", "tiny", "--quick", "--seeds", "0"]) == 2
    assert "--seeds" in capsys.readouterr().err


def test_a_module_without_the_contract_is_named(tmp_path, monkeypatch) -> None:
    """A module lacking a required name fails the registry, saying which."""
    (tmp_path / "broken.py").write_text('"""No ORDER, no run, no text."""\n')
    monkeypatch.setattr(experiments, "__path__", [*experiments.__path__, str(tmp_path)])
    importlib.invalidate_caches()
    try:
        with pytest.raises(TypeError, match="broken lacks ORDER, run, text"):
            experiments.names()
    finally:
        sys.modules.pop("pcplab.experiments.broken", None)


def test_an_experiment_that_needs_root_is_skipped_with_its_reason(monkeypatch):
    """Not root: the host experiment is not run; its module's reason is the note."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    results, notes = reproduce.run_experiments(["host"], quick=True, jobs=1)
    assert results == {}
    assert notes == {
        "host": "skipped: the host experiment sweeps "
        "vm.percpu_pagelist_high_fraction and needs root; run pcplab reproduce "
        "host as root"
    }


def test_the_host_rows_leave_a_function_never_called_without_an_average() -> None:
    """A run without a refill has no rmqueue_bulk average: n/a, said why, not 0 ns."""
    host = importlib.import_module("pcplab.experiments.host")
    none = {"count": 0, "total": 0, "avg": 0, "p50": 0, "p99": 0, "max": 0}
    some = {"count": 4, "total": 400, "avg": 100, "p50": 90, "p99": 180, "max": 200}
    results = [
        {"throughput": {"pages_per_s": 5.0}, "latency_ns": {"rmqueue_bulk": stats}}
        for stats in (none, some)
    ]
    rows = [host.row("page_fault1", 0, "native", r) for r in results]
    assert [r["rmqueue_bulk_avg_ns"] for r in rows] == [None, 100]
    assert [r["rmqueue_bulk_p99_ns"] for r in rows] == [None, 180]
    table = host.text(rows, {})
    assert "n/a" in table.splitlines()[1] and "n/a" not in table.splitlines()[2]
    assert table.endswith("rmqueue_bulk n/a: no refill in the measured window\n")
    assert "no refill" not in host.text(rows[1:], {})


def test_the_host_rows_name_what_the_host_engine_measured_with() -> None:
    """The kernel's rows declare its tracer and perf lock; the model's, none."""
    host = importlib.import_module("pcplab.experiments.host")
    kernel = {
        "throughput": {"pages_per_s": 5.0},
        "tracing": {"method": "tracefs-tracepoint"},
        "lock_contention": {"recorded_s": 1.0},
    }
    model = {"throughput": {"pages_per_s": 5.0}, "latency_ns": {}}
    rows = [
        host.row("page_fault1", 0, e, r)
        for e, r in (("host", kernel), ("native", model))
    ]
    assert [r["instrument"] for r in rows] == [
        "tracefs-tracepoint (traced phase), perf lock contention (measured phase)",
        "none",
    ]


# What each thread measured its figures with (docs/machines.md, Instruments).
THREAD_INSTRUMENTS = {
    "aaron2018": "perf-profile",
    "aaron2018pf2": "perf-profile",
    "aaron2018prefetch": "perf-profile",
    "aaron2018rfc": "perf-profile",
    "ying2023": "function_graph:rmqueue_bulk,free_pcppages_bulk",
    "ying2023zones": "perf-profile",
    "yafang2024": "funclatency:rmqueue_bulk",
    "hahn2025": "none",
}


@pytest.mark.parametrize("name", sorted(THREAD_INSTRUMENTS))
def test_each_thread_declares_the_instrument_it_measured_with(name: str) -> None:
    """Its sim spec names the thread's instrument; its text says so."""
    exp = experiments.get(name).spec()
    assert exp["spec"].get("instrument") == THREAD_INSTRUMENTS[name]
    from pcplab.experiments._common import instrument_line

    assert THREAD_INSTRUMENTS[name] in instrument_line(exp)


def test_the_2023_holds_split_into_a_part_per_call_and_a_part_per_page() -> None:
    """Holds split as call + page x batch, model beside kernel, in fidelity.md."""
    ying = importlib.import_module("pcplab.experiments.ying2023")
    assert ying.hold_split([63, 255], [1.0 + 0.02 * 63, 1.0 + 0.02 * 255]) == (
        pytest.approx(1.0),
        pytest.approx(20.0),
    )
    # a large batch 10% short moves the line by its relative error, not its us
    batches = [63, 127, 255, 511, 1023, 2047]
    holds = [1.0 + 0.02 * b for b in batches[:-1]] + [0.9 * (1.0 + 0.02 * 2047)]
    per_call, _ = ying.hold_split(batches, holds)
    unweighted = np.polyfit(batches, holds, 1)[1]
    assert abs(per_call - 1.0) < abs(unweighted - 1.0) / 4

    def row(batch: int) -> dict:
        """Return a 2023 row: model holds 0.5 us + 10 ns/page, the kernel's 2x."""
        r = {"machine": "M", "batch": batch}
        for key, _, stem in ying.FIGURES:
            r[key] = 0.5 + 0.01 * batch if key.endswith("_us") else 1.0
            r[f"{stem}_published"] = 2 * r[key]
        return r

    lines = ying.section([row(63), row(2047)], [])
    assert "| M | 0.50 / 1.00 | 10.0 / 20.0 | 0.50 / 1.00 | 10.0 / 20.0 |" in lines
    assert not any("per call" in x for x in ying.section([row(63)], []))


def test_fidelity_out_keeps_the_prose_above_the_summary() -> None:
    """--out FILE regenerates the summary and tables, not what was written above."""
    prose = "# Fidelity\n\nWhat was tried.\n\n"
    heading = fidelity_doc.SUMMARY_HEADING
    old = f"{prose}{heading}\n\nold table\n"
    new = f"{heading}\n\nnew table"
    assert fidelity_doc.splice(old, new) == prose + new
    assert fidelity_doc.splice("", new) == new
    assert fidelity_doc.splice("no summary here\n", new) == new


def test_the_summary_lists_held_out_machines_with_their_one_figure() -> None:
    """A held-out machine's figure is a prediction: 'not fitted', then its error."""
    rows = [
        {"machine": "Broadwell(2S)", "score": 1.0e7, "score_published": 1.0e7},
        {"machine": "Skylake(2S)", "score": 9.6e6, "score_published": 8.0e6},
    ]
    for r in rows:
        r["ratio"] = r["score"] / rows[0]["score"]
        r["ratio_published"] = r["score_published"] / rows[0]["score_published"]
    summary = fidelity_doc.render_summary({"aaron2018prefetch": rows}, None)
    assert (  # skylake-sp-2s: no fitted machine's profile
        "| Skylake(2S) | score (held out) (10%) | not fitted | +20.0% at 31 | "
        "none: held out | **no** |" in summary
    )
    assert (  # broadwell-ep: the 2018 thread's fitted Broadwell-EP
        "| Broadwell(2S) | score (held out) (10%) | not fitted | +0.0% at 31 | "
        "none: held out, on a fitted machine's profile | yes |" in summary
    )
    assert "Skylake(2S) | score over the anchor's (held out) (10%)" in summary
    assert "Broadwell(2S) | score over the anchor's" not in summary  # the anchor itself
    assert summary.endswith(
        "\nWithin tolerance: 0 of 0 reference rows in-sample; left out 0 of 0 "
        "(folds started nowhere: no fold on file); held out 1 of 3 figures, "
        "1 of 1 of them on a fitted machine's profile."
    )


def test_the_summary_names_each_left_out_figures_fold_start(monkeypatch) -> None:
    """A left-out figure names its fold's start; a full-fit start is no prediction."""
    rows = [{"machine": "Haswell-EP", "batch": 31, "score": 1.0e7}]
    rows[0].update(score_published=1.05e7, zone_contention=None, lru_contention=None)
    rows[0].update(zone_published=None, lru_published=None)
    summary = fidelity_doc.render_summary({"aaron2018": rows}, {"aaron2018": rows})
    start = basis.fold_starts()["Haswell-EP"]
    assert f"| -4.8% at 31 | {start} | yes |" in summary
    assert f"(folds started from {start}: 1 of 1)" in summary
    assert ("its figures are not predictions" in summary) == (start == "full fit")
    # a fold resumed from one that began at the full fit is no prediction either
    resumed = {"Haswell-EP": "full fit" + folds.RESUMED}
    for starts in ({"Haswell-EP": "middle"}, resumed):
        monkeypatch.setattr(basis, "fold_starts", lambda s=starts: s)
        summary = fidelity_doc.render_summary({"aaron2018": rows}, {"aaron2018": rows})
        caveat = "its figures are not predictions" in summary
        assert caveat == (starts is resumed), summary


def test_the_summary_gives_each_machine_its_threads_fold(monkeypatch) -> None:
    """Left out with its thread: the thread fold's figure, verdict and start."""
    monkeypatch.setattr(basis, "thread_fold_starts", lambda: {"aaron2018": "middle"})
    rows = [{"machine": "Haswell-EP", "batch": 31, "score": 1.0e7}]
    rows[0].update(score_published=1.05e7, zone_contention=None, lru_contention=None)
    rows[0].update(zone_published=None, lru_published=None)
    far = [{**rows[0], "score": 1.5e7}]
    summary = fidelity_doc.render_summary(
        {"aaron2018": rows}, {"aaron2018": rows}, thread=({"aaron2018": far}, {})
    )
    assert "| +42.9% at 31, within: **no** (from middle) |" in summary
    assert (
        "left out with their whole thread 0 of 1 (folds started from middle: 0 of 1)"
        in summary
    )
    without = fidelity_doc.render_summary({"aaron2018": rows}, {"aaron2018": rows})
    assert "whole thread" not in without


def test_ying2023zones_holds_the_model_to_the_mails_contention() -> None:
    """One run at v6.3's defaults; its zone->lock beside the held-out 13.01%."""
    from pcplab.experiments._common import heldout_rows

    (row,) = experiments.get("ying2023zones").run(True, 1)
    assert row["instrument"] == "perf-profile"  # the engine charged it
    published = heldout_rows("ying2023zones_zone_lock")
    one_zone = next(r for r in published if r["zone_instances"] == "1")
    assert row["zone_published"] == float(one_zone["zone_lock_cycles_pct"])
    # the mail's run: page_fault1, 16 processes, v6.3 (the 6.6 generation)
    # on its 2-socket Sapphire Rapids; the row holds that run's figures
    exp = experiments.load_experiment("ying2023zones")
    mail = {"workload": "page_fault1", "tasks": 16, "kernel": "6.6"}
    assert {k: exp["spec"][k] for k in mail} == mail
    profile = machines.load_profile("sapphire-rapids")
    quick = {"duration_s": exp["quick"]["duration_s"]}
    alone = engine.run({"engine": "sim", "machine": profile, **exp["spec"], **quick})
    assert row["zone_contention"] == alone["contention"]["zone_lock_pct"] > 0
    assert row["lru_contention"] == alone["contention"]["lru_lock_pct"]
    assert row["score"] == alone["throughput"]["ops_per_s"]
    ((machine, what, residual),) = experiments.get("ying2023zones").residuals([row])
    assert (machine, what) == ("Sapphire Rapids 2S", "heldout_zone@1")
    assert residual == pytest.approx((row["zone_contention"] - 13.01) / 10)
    assert "ying2023zones" not in experiments.fitted()


def test_aaron2018rfc_runs_each_policy_of_the_rfc_beside_its_figures() -> None:
    """The default and no-merge on the unseen Skylake(2S): unmerged frees are fast."""
    from pcplab.experiments._common import heldout_rows

    rfc = experiments.get("aaron2018rfc")
    rows = {r["policy"]: r for r in rfc.run(True, 2)}
    published = heldout_rows("aaron2018rfc_zone_lock")
    assert set(rows) == {r["policy"] for r in published} == {"default", "no-merge"}
    for r in published:
        field = {"all": "zone", "free": "zone_free"}[r["path"]]
        assert rows[r["policy"]][f"{field}_published"] == float(r["zone_lock_pct"])
    for r in rows.values():  # each path's wait is part of zone->lock's
        assert 0 < r["zone_free"] + r["zone_alloc"] <= r["zone"] + 1e-9
    # no buddy read under the lock: the free path's wait all but vanishes
    assert rows["no-merge"]["zone_free"] < rows["default"]["zone_free"] / 4
    got = {what: res for _, what, res in rfc.residuals(list(rows.values()))}
    assert set(got) == {
        "heldout_rfc_zone@default",
        "heldout_rfc_free@default",
        "heldout_rfc_free@no-merge",
    }
    assert got["heldout_rfc_free@no-merge"] == pytest.approx(
        (rows["no-merge"]["zone_free"] - 1.1) / 10
    )
    assert "Skylake(2S)" not in fidelity.reference_machines()


def test_aaron2018pf2_scores_a_change_by_its_distance_from_the_range() -> None:
    """Inside the published +10..+18% it is a hit; outside, points over 5."""
    pf2 = experiments.get("aaron2018pf2")
    published = {"batch_to": 63, "change_low": 10.0, "change_high": 18.0}
    rows = [
        {"machine": m, "change_63": c, **published}
        for m, c in (("A", 16.0), ("B", 20.0), ("C", 4.0))
    ]
    got = {m: r for m, _, r in pf2.residuals(rows)}
    assert got == pytest.approx({"A": 0.0, "B": 0.4, "C": -1.2})
    assert "aaron2018pf2" not in experiments.fitted()


def test_aaron2018pf2_runs_page_fault2_at_three_batches_on_both_servers() -> None:
    """Each change is over the same server's batch-31 score; 63 eases zone->lock."""
    from pcplab.experiments._common import heldout_rows

    rows = experiments.get("aaron2018pf2").run(True, 2)
    thread = heldout_rows("aaron2018pf2_change")
    assert [r["machine"] for r in rows] == [r["machine"] for r in thread]
    for r in rows:
        for b in (63, 127):
            assert r[f"change_{b}"] == pytest.approx(
                100 * (r[f"score_{b}"] / r["score_31"] - 1)
            )
        assert r["zone_31"] > r["zone_63"]  # the point of a larger batch
    fitted = {r["machine"]: r["fitted"] for r in rows}
    assert fitted == {"Skylake(4S)": True, "Broadwell(4S)": False}
