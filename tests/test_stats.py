"""Repeats as statistics, and the LKP and mmtests layouts of a comparison."""

from __future__ import annotations

import math
import re

import pytest
from scipy import stats as scipy_stats

from pcplab.comparison import lkp, metric_values, mmtests
from pcplab.results import flatten
from pcplab.stats import Sample, change_pct, significant, welch_p

RATE = "throughput.ops_per_s"
PCT = "contention.zone_lock_pct"
TIME = "latency_ns.rmqueue_bulk.avg"


def test_a_sample_ignores_what_did_not_occur():
    """None is NaN: left out of n, the mean and the spread."""
    s = Sample.of([10.0, None, 14.0])
    assert s.n == 2
    assert s.mean == 12.0
    assert s.std == pytest.approx(math.sqrt(8))
    assert s.hmean == pytest.approx(2 / (1 / 10 + 1 / 14))
    assert math.isnan(Sample.of([None]).mean)


def test_welch_is_scipys_unequal_variance_test():
    """The p-value is Welch's (equal_var=False), not Student's."""
    a, b = [10.0, 11.0, 12.0], [12.0, 15.0, 18.0, 21.0]
    p = welch_p(Sample.of(a), Sample.of(b))
    assert p == pytest.approx(scipy_stats.ttest_ind(a, b, equal_var=False).pvalue)
    assert p != pytest.approx(scipy_stats.ttest_ind(a, b).pvalue)


def test_significance_needs_two_runs_and_a_difference():
    """One run a side cannot be tested; overlapping samples are not significant."""
    assert not significant(Sample.of([1.0]), Sample.of([5.0]))
    assert not significant(Sample.of([10, 12, 11]), Sample.of([11, 10, 12]))
    assert significant(Sample.of([10, 10.1, 9.9]), Sample.of([20, 20.2, 19.8]))


def test_runs_that_agree_to_the_last_digit_warn_nothing():
    """Near-identical runs (a maximum the seeds share) test without a warning."""
    import warnings

    a, b = [319487.0, 319487.0, 319487.00000000006], [140628.0, 150000.0, 130000.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert significant(Sample.of(a), Sample.of(b))


def _columns(base: dict, new: dict) -> list[dict[str, Sample]]:
    """Turn {metric: values} dicts into comparison columns."""
    return [{k: Sample.of(v) for k, v in c.items()} for c in (base, new)]


def test_lkp_layout_has_change_in_percent_and_in_points():
    """A rate changes in %, a percent-valued metric in points, as LKP prints."""
    columns = _columns(
        {RATE: [100.0, 102.0, 98.0], PCT: [40.0, 41.0, 39.0], TIME: [5.0, 5.0, 5.0]},
        {RATE: [150.0, 153.0, 147.0], PCT: [10.0, 11.0, 9.0], TIME: [5.0, 5.0, 5.0]},
    )
    text = lkp(["batch=31", "batch=63"], columns)
    lines = text.splitlines()
    assert lines[2].split() == ["%stddev", "%change", "%stddev"]
    rate = next(line for line in lines if line.endswith(RATE)).split()
    assert rate[:2] == ["100.00", "+50.0%*"]  # a 2% stddev: LKP prints none
    pct = next(line for line in lines if line.endswith(PCT)).split()
    assert pct[:4] == ["40.00", "±", "2%", "-30.0*"]
    time = next(line for line in lines if line.endswith(TIME)).split()
    assert time[1] == "+0.0%"  # no spread, no change: no star
    assert "n = 3 runs per column" in text


def test_mmtests_layout_counts_better_as_positive():
    """Hmean for rates, Amean for times; a shorter time is a gain, starred."""
    columns = _columns(
        {RATE: [100.0, 100.0], TIME: [10.0, 10.2]},
        {RATE: [110.0, 110.0], TIME: [5.0, 5.1]},
    )
    text = mmtests(["base", "new"], columns)
    rate = next(line for line in text.splitlines() if RATE in line)
    time = next(line for line in text.splitlines() if TIME in line)
    assert rate.startswith("Hmean") and time.startswith("Amean")
    assert re.search(r"100\.00 \(   0\.00%\)\s+110\.00 \*  10\.00%\*", rate)
    assert re.search(r"\*  50\.\d\d%\*", time)


def test_a_function_never_called_is_nan_not_zero():
    """Count 0: its avg is no figure (NaN), not 0 ns."""
    result = {
        "latency_ns": {
            "free_pcppages_bulk": {"count": 0, "avg": 0, "p99": 0},
            "rmqueue_bulk": {"count": 3, "avg": 7, "p99": 9},
        }
    }
    values = metric_values(flatten(result))
    assert values["latency_ns.free_pcppages_bulk.avg"] is None
    assert values["latency_ns.rmqueue_bulk.avg"] == 7


def test_change_of_nothing_is_nan():
    """A change against 0 or a missing base is not a number."""
    assert math.isnan(change_pct(0.0, 5.0))
    assert change_pct(4.0, 5.0) == 25.0


SWEEP = ("sweep", "--engine", "sim", "--machine", "haswell-desktop")
SWEEP = (*SWEEP, "--workload", "page_fault1", "--duration", "0.2", "--warmup", "0")


def test_sweep_with_seeds_prints_lkp_and_mmtests(pcplab, tmp_path):
    """--seeds 3: LKP's layout by default, mmtests' with --format mmtests."""
    grid = ("--param", "batch=31,511", "--seeds", "3", "--jobs", "2")
    out = tmp_path / "runs.json"
    proc = pcplab(*SWEEP, *grid, "--output", out)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    dashes = next(i for i, line in enumerate(lines) if line.startswith("-" * 16))
    assert lines[dashes - 1].split() == ["batch=31", "batch=511"]
    assert "\ttest: page_fault1" in lines and "\tkernel: 6.18" in lines
    hold = next(line for line in lines if line.endswith("lock_hold_ns.zone_lock.avg"))
    assert "%*" in hold  # 16x the batch: a longer hold, surely
    runs = __import__("json").loads(out.read_text())
    assert [(r["point"]["batch"], r["result"]["spec"]["seed"]) for r in runs] == [
        (b, s) for b in (31, 511) for s in (1, 2, 3)
    ]
    # LKP's ± shows a stddev above 2% of the mean, and only then
    holds = {
        b: [
            metric_values(flatten(r["result"]))["lock_hold_ns.zone_lock.avg"]
            for r in runs
            if r["point"]["batch"] == b
        ]
        for b in (31, 511)
    }
    spread = [Sample.of(v).pct_std > 2 for v in holds.values()]
    assert hold.count("±") == sum(spread)
    proc = pcplab(*SWEEP, *grid, "--format", "mmtests")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pcplab: engine sim, machine haswell-desktop")
    assert "\nHmean    throughput.ops_per_s" in proc.stdout
    assert "\nCoeffVar throughput.ops_per_s" in proc.stdout


def test_run_with_seeds_reports_mean_and_stddev(pcplab, tmp_path):
    """`run --seeds 3`: every run kept, and the statistics are theirs."""
    out = tmp_path / "runs.json"
    args = ("run", "--engine", "sim", "--machine", "haswell-desktop")
    args = (*args, "--workload", "page_fault1", "--duration", "0.1", "--seeds", "3")
    proc = pcplab(*args, "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert "3 runs (seeds 1..3): mean ±%stddev" in proc.stdout
    data = __import__("json").loads(out.read_text())
    scores = [r["throughput"]["ops_per_s"] for r in data["runs"]]
    assert [r["spec"]["seed"] for r in data["runs"]] == [1, 2, 3]
    stat = data["statistics"][RATE]
    assert stat["n"] == 3
    assert stat["mean"] == pytest.approx(sum(scores) / 3)
    assert stat["stddev"] == pytest.approx(Sample.of(scores).std)


def test_compare_two_model_configurations(pcplab, tmp_path):
    """`compare --base batch=31 --new batch=511 --seeds 3`: LKP's table, all runs."""
    out = tmp_path / "cmp.json"
    args = ("compare", "--workload", "page_fault1", "--machine", "haswell-desktop")
    args = (*args, "--duration", "0.1", "--base", "batch=31", "--new", "batch=511")
    proc = pcplab(*args, "--seeds", "3", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert "%change" in proc.stdout and "base batch=31, new batch=511" in proc.stdout
    data = __import__("json").loads(out.read_text())
    assert [r["spec"]["batch"] for r in data["new"]["runs"]] == [511] * 3
    assert [r["spec"]["seed"] for r in data["base"]["runs"]] == [1, 2, 3]
    hold = "lock_hold_ns.zone_lock.avg"
    assert (
        data["new"]["statistics"][hold]["mean"]
        > data["base"]["statistics"][hold]["mean"]
    )


def test_rows_of_several_seeds_merge_into_means_and_spreads():
    """Figures average, their spread is <field>_std, the rest is kept."""
    from pcplab.repeats import combine_rows

    runs = [
        [{"machine": "m", "batch": 31, "score": 10.0, "hist": [[0, 1, 2]]}],
        [{"machine": "m", "batch": 31, "score": 14.0, "hist": [[0, 1, 4]]}],
    ]
    (row,) = combine_rows(runs)
    assert row["batch"] == 31 and isinstance(row["batch"], int)
    assert row["score"] == 12.0
    assert row["score_std"] == pytest.approx(math.sqrt(8))
    assert row["hist"] == [[0, 1, 3.0]]
    assert row["seeds"] == 2 and row["machine"] == "m"
    with pytest.raises(
        ValueError, match=r"runs of yafang2024 gave different rows \(1, 0 rows\)"
    ):
        combine_rows([[{"a": 1}], []], "yafang2024")
