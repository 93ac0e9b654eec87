"""The public record's experiments: each row scored by one or listed as not modelled."""

from __future__ import annotations

import csv
import re
import shutil

import pytest

from pcplab import basis, data, experiments, fidelity, folds, machines, recordlist
from pcplab.experiments import _common, lkp2025basefaults, mel2022highorder

LKP = (
    "lkp2023allocscale",
    "lkp2023autotune",
    "lkp2023cooperlake",
    "lkp2024releasepages",
)
MAIL = "mel2022highorder"
BASES = "lkp2025basefaults"


def test_every_record_row_is_modelled_or_listed():
    """The LKP experiments' rows and the unmodelled list add up to the record."""
    total = sum(
        len(data.record_rows(p.stem))
        for p in data.RECORD.glob("*.csv")
        if p.stem != "machines"
    )
    scored = 0
    for name in LKP:
        exp = experiments.load_experiment(name)
        rows = data.record_rows(exp["record"], exp["split"])
        scored += sum(r["test"] == exp["test"] for r in rows)
    # a mail's table: every row shown beside the model (the vanilla scored)
    scored += len(data.record_rows(experiments.load_experiment(MAIL)["record"]))
    # the base kernels: every row shown beside the model (its figures scored)
    scored += len(data.record_rows(experiments.load_experiment(BASES)["record"]))
    listed = sum(row[3] for row in recordlist.unmodelled())
    assert scored + listed == total


def test_each_experiment_reads_its_own_split_only():
    """An LKP experiment's TOML split is the split of every row it reads."""
    for name in LKP:
        exp = experiments.load_experiment(name)
        every = data.record_rows(exp["record"])
        mine = [r for r in every if r["test"] == exp["test"]]
        assert {r["split"] for r in mine} == {exp["split"]}, name


def test_lkp_metrics_map_to_the_lock_side_they_name():
    """A zone->lock call chain under free_pcppages_bulk is the free side's share."""
    chain = "perf-profile.calltrace.cycles-pp.native_queued_spin_lock_slowpath"
    irq = "._raw_spin_lock_irqsave."
    assert _common.lkp_figure(chain + irq + "free_pcppages_bulk.x") == "zone_free"
    assert _common.lkp_figure(chain + irq + "rmqueue_bulk.x") == "zone_alloc"
    assert _common.lkp_figure("perf-profile.calltrace.cycles-pp.rmqueue_bulk") is None
    assert _common.lkp_figure("will-it-scale.per_thread_ops") == "score"
    assert _common.lkp_figure("will-it-scale.104.threads") is None


def test_a_leaf_functions_self_and_children_shares_are_the_models_self_share():
    """copy_page's self and children rows both read the sim's self share."""
    res = {
        "throughput": {"ops_per_task_per_s": 1.0},
        "perf_profile": {"self": {"copy_page": 19.5}},
        "tasks": 1,
        "duration_s": 1.0,
        "locks": {"zone_lock": {"callers": []}, "lru_lock": {"callers": []}},
        "latency_ns": {
            f: {"count": 0, "avg": 0.0} for f in ("rmqueue_bulk", "free_pcppages_bulk")
        },
    }
    figures = _common.lkp_figures(res)
    for kind in ("self", "children"):
        figure = _common.lkp_figure(f"perf-profile.{kind}.cycles-pp.copy_page")
        assert figures[figure] == 19.5
    assert (
        figures[_common.lkp_figure("perf-profile.self.cycles-pp.__free_one_page")]
        == 0.0
    )
    # a function whose name or inlining changed since v6.7: no model figure
    assert _common.lkp_figure("perf-profile.self.cycles-pp.rmqueue_bulk") is None


def _mail_rows(model: dict[tuple[str, int], float]) -> list[dict]:
    """Return mel2022highorder's published rows with the model's figures MODEL."""
    rows = mel2022highorder.published(experiments.load_experiment(MAIL))
    for r in rows:
        r["published"] = r["vanilla"]
        r["model"] = model.get((r["machine"], r["nr_task"]))
    return rows


def test_every_vanilla_hmean_row_is_read_once_with_its_series_beside_it():
    """38 task counts: the Cascade Lake's 16 and the Zen1's 22, each with both."""
    rows = _mail_rows({})
    assert len(rows) == 16 + 22
    csl = {r["nr_task"]: r for r in rows if r["machine"] == "mgorman-csl-80cpu"}
    assert csl[79]["vanilla"] == 25928742.64
    assert csl[79]["mm-highpcpopt-v2"] == 25934202.02
    zen1 = {r["nr_task"]: r for r in rows if r["machine"] == "mgorman-zen1-128cpu"}
    assert zen1[512]["vanilla_stddev"] == 201354.82
    assert zen1[512]["stddev_mode"] == "processes"  # as the mail prints it


def test_mail_scores_only_counts_the_model_ran_and_its_shape_from_them():
    """A count with no model figure gives no residual; the shape uses the ran ends."""
    model = {("mgorman-csl-80cpu", 2): 1.0e6, ("mgorman-csl-80cpu", 79): 9.0e6}
    model |= {("mgorman-zen1-128cpu", 2): 3.0e6, ("mgorman-zen1-128cpu", 8): 3.3e6}
    found = {r[1]: r for r in mel2022highorder.residuals(_mail_rows(model))}
    throughput = [k for k in found if k.startswith("mel2022_throughput@")]
    assert sorted(throughput) == sorted(
        f"mel2022_throughput@{mode}-{n}"
        for mode, n in (
            ("processes", 2),
            ("processes", 79),
            ("threads", 2),
            ("threads", 8),
        )
    )
    csl = found["mel2022_shape@79/2"]
    assert csl.model == 9.0 and csl.published == 25928742.64 / 2694662.26
    zen1 = found["mel2022_shape@8/2"]
    assert zen1.published == 3254335.58 / 2985366.46


def test_a_chain_a_commit_renamed_is_scored_on_the_side_that_ran_it():
    """99fbb6bfc16f moved lru_lock from release_pages to folios_put_refs.

    Both chains are the model's release_pages wait; each is scored only on
    the side where the kernel ran it (the TOML's not_scored, by metric).
    """
    exp = experiments.load_experiment("lkp2024releasepages")
    rows = []
    for r in data.record_rows(exp["record"], exp["split"]):
        figure = _common.lkp_figure(r["metric"])
        if figure != "lru_free":
            continue
        rows.append(
            {
                "machine": r["lkp_host"],
                "commit_new": r["commit_new"],
                "metric": r["metric"],
                "figure": figure,
                "base_model": 1.0,
                "new_model": 2.0,
                "base_published": float(r["base_value"]),
                "new_published": float(r["new_value"]),
            }
        )
    assert len(rows) == 4  # two chains, the report and the retest
    scored = _common.lkp_residuals("release", rows, exp["not_scored"])
    # the parent's figure once, each commit's under its own label: the fit
    # keys its rows by label, and a label twice would drop one from the cost
    assert sorted(name for _, name, _ in scored) == [
        "release_lru@lru_free.base",
        "release_lru@lru_free.new.900a4f6f4408",
        "release_lru@lru_free.new.99fbb6bfc16f",
    ]


def _record_machines() -> dict[str, dict[str, str]]:
    """Return record/machines.csv's rows by machine."""
    with open(data.RECORD / "machines.csv", newline="") as f:
        return {r["machine"]: r for r in csv.DictReader(f)}


def test_base_rows_cite_their_report_and_take_their_machines_split():
    """Each base row names a Message-ID, a base commit the TOML runs, a split.

    A machine's rows are all on the side record/machines.csv gives it, and
    its profile names the CPU model machines.csv quotes.
    """
    exp = experiments.load_experiment(BASES)
    rows = data.record_rows(exp["record"])
    assert len(rows) == 113
    known = _record_machines()
    for r in rows:
        assert re.fullmatch(r"\S+@\S+", r["source"]), r["source"]
        assert re.fullmatch(r"[0-9a-f]{12}", r["commit_base"]), r["commit_base"]
        assert exp["base"][r["commit_base"]]["kernel"] in ("6.6", "6.18")
        assert r["confidence"] == "quoted" and r["where"]
        float(r["value"])  # as printed, a number
        machine = known[r["lkp_host"]]
        assert r["split"] == machine["split"], r["lkp_host"]
        assert r["source"] in machine["citation"], r["lkp_host"]
        profile = machines.profile_paths()[exp["machines"][r["lkp_host"]]]
        cpu = machines.read_toml(profile)["cpu_model"]
        assert cpu == machine["cpu_model"], r["lkp_host"]
    # the split the README chose: new micro-architectures held out
    splits = {r["lkp_host"]: r["split"] for r in rows}
    assert splits == {
        "lkp-gnr-2sp3": "heldout",
        "igk-spr-2sp2": "fit",
        "lkp-icl-2sp7": "heldout",
        "lkp-csl-2sp7": "fit",
        "lkp-icl-2sp5": "heldout",
    }


def _fake_result(tasks: int) -> dict:
    """Return a sim result whose figures the test can tell apart."""
    return {
        "engine": "sim",
        "spec": {"workload": "page_fault3", "tasks": tasks, "kernel": "6.6"},
        "throughput": {"ops_per_task_per_s": 1000.0},
        "perf_profile": {
            "self": {"user": 7.0, "native_queued_spin_lock_slowpath": 3.0},
            "children": {"handle_mm_fault": 60.0},
        },
        "tasks": tasks,
        "duration_s": 1.0,
        "locks": {"zone_lock": {"callers": []}, "lru_lock": {"callers": []}},
        "latency_ns": {
            f: {"count": 0, "avg": 0.0} for f in ("rmqueue_bulk", "free_pcppages_bulk")
        },
    }


def test_base_shares_are_scored_only_at_one_task_per_cpu():
    """LKP samples every CPU: a 16-task run's shares are shown, not scored.

    The per-task score is scored on every machine; a row the TOML maps to
    no model figure has none.
    """
    exp = experiments.load_experiment(BASES)
    rows = data.record_rows(exp["record"])
    out = {}
    for r in rows:
        res = _fake_result(int(r["tasks"]))
        out[(r["lkp_host"], r["metric"])] = lkp2025basefaults._row(exp, r, res)
    score = "will-it-scale.per_thread_ops"
    handle = "perf-profile.children.cycles-pp.handle_mm_fault"
    user = "perf-profile.self.cycles-pp.testcase"
    for host in ("lkp-csl-2sp7", "lkp-icl-2sp5"):  # 16 threads
        assert out[(host, score)]["scored"]
        assert out[(host, handle)]["model"] == 60.0
        assert not out[(host, handle)]["scored"]
    spr = "igk-spr-2sp2"  # 192 threads on 192 CPUs
    assert out[(spr, handle)]["scored"] and out[(spr, user)]["model"] == 7.0
    iret = out[(spr, "perf-profile.self.cycles-pp.native_irq_return_iret")]
    assert iret["model"] is None and not iret["scored"]
    found = lkp2025basefaults.residuals(list(out.values()))
    kinds = {(m, w.split("@")[0]) for m, w, _ in found}
    assert ("lkp-csl-2sp7", "basefaults_share") not in kinds
    assert ("lkp-csl-2sp7", "basefaults_score") in kinds
    assert (spr, "basefaults_share") in kinds


def test_a_leaf_children_share_is_its_self_share_and_chains_are_lock_waits():
    """children.F reads the children table, falling back to F's self share."""
    res = _fake_result(4)
    fig = lkp2025basefaults.model_figure
    assert fig(res, "children.handle_mm_fault") == 60.0
    assert fig(res, "children.native_queued_spin_lock_slowpath") == 3.0
    assert fig(res, "self.handle_mm_fault") == 0.0  # nothing charged there
    assert fig(res, "score") == 1000.0
    assert fig(res, "lru_fault") == 0.0  # no lru_lock wait in the result


def test_the_fit_reads_the_records_fit_side_and_never_its_held_out_rows():
    """The record's fit-side hosts are fit machines; held-out hosts never are."""
    owner = fidelity.reference_machines()
    assert owner["lkp-skl-fpga01"] == [
        "lkp2023allocscale",
        "lkp2023autotune",
        "lkp2024releasepages",
    ]
    held = {
        _common.record_machine(r)
        for p in data.RECORD.glob("*.csv")
        for r in data.record_rows(p.stem)
        if p.stem != "machines" and r["split"] == "heldout"
    }
    assert held and not held & set(owner)


def test_a_held_out_row_on_a_fit_side_host_is_never_fitted(tmp_path):
    """The split decides, row by row: a held-out row is not run by the fit."""
    reference = tmp_path / "reference"
    shutil.copytree(data.REFERENCE, reference)
    shutil.copytree(data.RECORD, reference / "record")
    exp = experiments.load_experiment("lkp2023autotune")
    path = reference / "record" / f"{exp['record']}.csv"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    fit_row = next(r for r in rows if r["test"] == exp["test"])
    held = {**fit_row, "split": "heldout", "metric": "held.out.on.a.fit.host"}
    moved = {**fit_row, "lkp_host": "lkp-held-out", "split": "heldout"}
    with open(path, "a", newline="") as f:
        csv.DictWriter(f, list(fit_row)).writerows([held, moved])
    with data.reference_from(reference):
        owner = fidelity.reference_machines()
        record = data.record_rows(exp["record"])
        only = ["lkp-held-out", "lkp-skl-fpga01"]
        kept = _common.fit_side(record, only)
    assert "lkp-held-out" not in owner and "lkp-skl-fpga01" in owner
    assert kept and all(r["lkp_host"] == "lkp-skl-fpga01" for r in kept)
    assert all(r["split"] == "fit" for r in kept)
    assert any(r["lkp_host"] == "lkp-held-out" for r in record)
    # a machine of several threads is one fold: leaving it out leaves all
    assert folds.every_fold(["lkp-skl-fpga01"])[0].left_out == ("lkp-skl-fpga01",)


class _Ran(Exception):
    """Raised by the fake run_specs once it has the specs of a fitted run."""


def test_a_fitted_record_experiment_runs_the_fits_point_on_its_fit_side(
    monkeypatch,
):
    """mode, only and constants reach every spec; another machine runs nothing."""
    specs: list[dict] = []

    def fake(name, given, workers, scheduler):
        specs.extend(given)
        if given:
            raise _Ran
        return []

    monkeypatch.setattr(_common, "run_specs", fake)
    exp = experiments.get("lkp2023autotune")
    with pytest.raises(_Ran):
        exp.run(
            True,
            1,
            mode="fit",
            only=["lkp-skl-fpga01"],
            constants={"smt_factor": 1.77},
        )
    assert len(specs) == 2  # the parent and the commit
    duration = exp.spec()["fit"]["duration_s"]
    for spec in specs:
        assert spec["machine"]["constants"]["smt_factor"] == 1.77
        assert spec["duration_s"] == duration
    specs.clear()
    assert exp.run(True, 1, mode="fit", only=["Haswell-EP"]) == []
    assert specs == []


def test_a_newly_fitted_experiment_is_held_out_until_a_fit_reads_it(
    monkeypatch, tmp_path
):
    """constants.toml's [last_fit] decides in-sample; FITTED alone does not."""
    figure = [("lkp-skl-fpga01", "score")]
    constants = tmp_path / "constants.toml"
    text = machines.CONSTANTS.read_text()

    def last_fit(names: list[str]) -> None:
        start = text.index("\n[last_fit]") + 1
        listed = ", ".join(f'"{n}"' for n in names)
        constants.write_text(f"{text[:start]}[last_fit]\nexperiments = [{listed}]\n")

    monkeypatch.setattr(machines, "CONSTANTS", constants)
    last_fit(["aaron2018", "yafang2024", "ying2023"])  # before the record
    assert "lkp2023autotune" not in experiments.read_by_fit()
    assert basis.of("lkp2023autotune", figure, False).kind == basis.HELD_OUT
    assert "lkp-skl-fpga01" not in fidelity.read_machines()
    last_fit(["aaron2018", "lkp2023autotune"])
    assert basis.of("lkp2023autotune", figure, False).kind == basis.IN_SAMPLE
    assert fidelity.read_machines()["lkp-skl-fpga01"] == ["lkp2023autotune"]
