"""The public record's experiments: each row scored by one or listed as not modelled."""

from __future__ import annotations

from pcplab import data, experiments
from pcplab.experiments import _common, recorded

LKP = ("lkp2023allocscale", "lkp2023autotune", "lkp2023cooperlake")


def test_every_record_row_is_modelled_or_listed():
    """The LKP experiments' rows and the `recorded` list add up to the record."""
    total = sum(
        len(_common.record_rows(p.stem))
        for p in data.RECORD.glob("*.csv")
        if p.stem != "machines"
    )
    scored = 0
    for name in LKP:
        exp = experiments.load_experiment(name)
        rows = _common.record_rows(exp["record"], exp["split"])
        scored += sum(r["test"] == exp["test"] for r in rows)
    listed = sum(r["rows"] for r in recorded.run(True, 1))
    assert scored + listed == total


def test_each_experiment_reads_its_own_split_only():
    """An LKP experiment's TOML split is the split of every row it reads."""
    for name in LKP:
        exp = experiments.load_experiment(name)
        every = _common.record_rows(exp["record"])
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
