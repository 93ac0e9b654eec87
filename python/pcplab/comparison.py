"""Configurations side by side, in the layouts of LKP and of mmtests.

LKP's 0-day reports (`base ±%stddev %change new ±%stddev metric`, a
percent-valued metric's change in points) and mmtests' compare-kernels
(`Hmean metric value (  0.00%) value *  x.xx%*`: Hmean for rates, Amean
for times; positive is better; starred when Welch's t-test finds the
difference significant). The first column is the base of every change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pcplab import headers
from pcplab.results import flatten
from pcplab.stats import ALPHA, Sample, change_pct, significant, welch_p

RATE, TIME, PERCENT = "rate", "time", "percent"


@dataclass(frozen=True)
class Metric:
    """A headline figure of the result schema and how it is averaged."""

    path: str  # dotted path of the flat result (pcplab.api.Result.flat)
    kind: str  # RATE: higher is better, Hmean; TIME, PERCENT: lower, Amean


# The figures a comparison shows, in the order LKP puts them: the score,
# then contention, then latencies and hold times.
METRICS = (
    Metric("throughput.ops_per_s", RATE),
    Metric("throughput.pages_per_s", RATE),
    Metric("contention.zone_lock_pct", PERCENT),
    Metric("contention.lru_lock_pct", PERCENT),
    Metric("contention.total_pct", PERCENT),
    Metric("latency_ns.rmqueue_bulk.avg", TIME),
    Metric("latency_ns.rmqueue_bulk.p99", TIME),
    Metric("latency_ns.free_pcppages_bulk.avg", TIME),
    Metric("latency_ns.free_pcppages_bulk.p99", TIME),
    Metric("lock_hold_ns.zone_lock.avg", TIME),
    Metric("lock_hold_ns.zone_lock.max", TIME),
)
FORMATS = ("lkp", "mmtests")


def metric_values(flat: dict[str, Any]) -> dict[str, float | None]:
    """Return each METRIC of a flat result (pcplab.results.flatten)."""
    return {metric.path: flat.get(metric.path) for metric in METRICS}


# lkp-tests lib/compare.rb: ABS_WIDTH, REL_WIDTH, ERR_WIDTH, and the
# threshold below which a stddev is not printed (`if stddev > 2`).
ABS_WIDTH, REL_WIDTH, ERR_WIDTH, SHOWN_STDDEV_PCT = 10, 10, 6, 2.0
FIRST_WIDTH = ABS_WIDTH + ERR_WIDTH  # the base column


def _number(value: float) -> str:
    """Format a value as LKP does: 2 decimals below 1000, 4 digits above 1e8."""
    if math.isnan(value):
        return "n/a"
    if abs(value) > 1e8:
        return f"{value:.4g}"
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.2f}"


def _stddev(sample: Sample) -> str:
    """Return LKP's ` ±  x%` cell: blank for one run or a stddev of 2% or less."""
    if sample.n < 2 or math.isnan(sample.pct_std):
        return " " * ERR_WIDTH
    if sample.pct_std <= SHOWN_STDDEV_PCT:
        return " " * ERR_WIDTH
    return f" ±{sample.pct_std:{ERR_WIDTH - 3}.0f}%"


def _changed(metric: Metric, base: Sample, new: Sample) -> bool:
    """Whether NEW differs from BASE significantly and in the digits printed.

    Two means that print alike (0.00 and 0.00) are no change to star, however
    constant the seeds that gave them.
    """
    if _number(base.mean) == _number(new.mean):
        return False
    return significant(base, new)


def _digits(change: float) -> str:
    """Return LKP's precision of a change: 1 decimal, 2 digits from 100000."""
    return "1f" if abs(change) < 100_000 else "2g"


def _lkp_change(metric: Metric, base: Sample, new: Sample) -> str:
    """Return LKP's %change cell (points for a percent-valued metric), * if _changed."""
    mark = "*" if _changed(metric, base, new) else " "
    if metric.kind == PERCENT:
        delta = new.mean - base.mean
        text = "n/a" if math.isnan(delta) else f"{delta:+.{_digits(delta)}}"
        return f"{text:>{REL_WIDTH}}{mark} "
    change = change_pct(base.mean, new.mean)
    text = "n/a" if math.isnan(change) else f"{change:+.{_digits(change)}}"
    return f"{text:>{REL_WIDTH}}{'%' if text != 'n/a' else ' '}{mark}"


def _present(columns: Sequence[dict[str, Sample]]) -> list[Metric]:
    """Return the METRICS that some column measured."""
    return [m for m in METRICS if any(c[m.path].n for c in columns if m.path in c)]


def _runs_note(columns: Sequence[dict[str, Sample]]) -> str:
    """Say how many runs each column averages and what the star means."""
    ns = sorted({s.n for c in columns for s in c.values() if s.n})
    runs = "/".join(map(str, ns)) or "0"
    note = f"n = {runs} runs per column (metrics differ where a call never ran)"
    if len(columns) > 1:
        note += f"; * Welch's t-test against the first column, p < {ALPHA:g}"
    return note


def lkp(labels: Sequence[str], columns: Sequence[dict[str, Sample]]) -> str:
    """Return the LKP 0-day comparison of COLUMNS (the first is the base).

    lkp-tests' `lkp compare` layout: the base's mean and ±%stddev, then per
    column %change and the mean (a star after the change where Welch's test
    finds it), then the metric. ± shows a stddev above 2% of the mean only.
    """
    base = columns[0]
    width = FIRST_WIDTH + REL_WIDTH + 1
    lines = [
        f"{labels[0][:FIRST_WIDTH]:>{FIRST_WIDTH}} "
        + "".join(f"{label[:width]:>{width}} " for label in labels[1:]),
        "-" * FIRST_WIDTH + " " + "".join("-" * width + " " for _ in labels[1:]),
        "         %stddev" + "     %change         %stddev" * (len(labels) - 1),
        "             \\  " + "        |                \\  " * (len(labels) - 1),
    ]
    for metric in _present(columns):
        b = base[metric.path]
        row = f"{_number(b.mean):>{ABS_WIDTH}}{_stddev(b)}"
        for column in columns[1:]:
            new = column[metric.path]
            row += _lkp_change(metric, b, new)
            row += f"{_number(new.mean):>{ABS_WIDTH}}{_stddev(new)}"
        lines.append(f"{row}  {metric.path}")
    note = _runs_note(columns) + f"; ± a stddev above {SHOWN_STDDEV_PCT:g}% (LKP's)"
    return "\n".join(line.rstrip() for line in lines) + "\n\n" + note


def _gain(metric: Metric, base: float, new: float) -> float:
    """Return mmtests' %: positive when NEW is better (higher rate, less time)."""
    change = change_pct(base, new)
    return change if metric.kind == RATE else -change


def _spread_gain(base: float, new: float) -> float:
    """Return mmtests' pndiff of a spread: positive when NEW is smaller."""
    if base == new:
        return 0.0
    if math.isnan(base) or math.isnan(new):
        return math.nan
    if new == 0:
        return 100.0
    return -99.0 if base == 0 else 100.0 - new * 100.0 / base


def _average(metric: Metric, sample: Sample) -> float:
    """Return the Hmean of a rate, the Amean of anything else."""
    return sample.hmean if metric.kind == RATE else sample.mean


def _coeffvar(sample: Sample) -> float:
    """Return mmtests' CoeffVar: the stddev in % of the mean (0 without a spread)."""
    std = 0.0 if math.isnan(sample.std) else sample.std
    return 100.0 * std / sample.mean if sample.n and sample.mean else 0.0


# compare-kernels' rows after the means (bin/lib/MMTests/Stat.pm): the
# spread of each metric, compared by pndiff (less spread is better).
SPREADS: tuple[tuple[str, Callable[[Sample], float]], ...] = (
    ("Stddev", lambda s: s.std),
    ("CoeffVar", _coeffvar),
)
MM_FIELD, MM_COMPARE = 12, 7  # mmtests' _FieldLength and _CompareLength


def _mm_cell(value: float, gain: float, starred: bool) -> str:
    """Return one `value (  x.xx%)` cell, `value *  x.xx%*` when STARRED."""
    shown = "n/a" if math.isnan(value) else f"{value:.2f}"
    change = "n/a" if math.isnan(gain) else f"{gain:.2f}"
    left, right = ("*", "*") if starred else ("(", ")")
    return f"{shown:>{MM_FIELD}} {left}{change:>{MM_COMPARE}}%{right}"


def _mm_means(metric: Metric, columns: Sequence[dict[str, Sample]]) -> list[str]:
    """Return the Hmean/Amean cells of METRIC, starred where Welch's test finds it."""
    base = columns[0][metric.path]
    cells = []
    for i, column in enumerate(columns):
        sample = column[metric.path]
        value = _average(metric, sample)
        gain = 0.0 if i == 0 else _gain(metric, _average(metric, base), value)
        starred = i > 0 and _changed(metric, base, sample)
        cells.append(_mm_cell(value, gain, starred))
    return cells


def _mm_spreads(
    metric: Metric, columns: Sequence[dict[str, Sample]], of: Callable[[Sample], float]
) -> list[str]:
    """Return the Stddev or CoeffVar cells (OF) of METRIC, compared by pndiff."""
    values = [of(column[metric.path]) for column in columns]
    return [
        _mm_cell(v, 0.0 if i == 0 else _spread_gain(values[0], v), False)
        for i, v in enumerate(values)
    ]


def mmtests(labels: Sequence[str], columns: Sequence[dict[str, Sample]]) -> str:
    """Return the mmtests compare-kernels table of COLUMNS (first is base).

    The means (Hmean of rates, Amean of times), then each metric's Stddev and
    CoeffVar rows, as compare-kernels groups its rows by statistic.
    """
    metrics = _present(columns)
    rows: list[tuple[str, str, list[str]]] = [
        ("Hmean" if m.kind == RATE else "Amean", m.path, _mm_means(m, columns))
        for m in metrics
    ]
    for stat, of in SPREADS:
        rows += [(stat, m.path, _mm_spreads(m, columns, of)) for m in metrics]
    stat_width = max(len(stat) for stat, _ in SPREADS)
    name = max((len(m.path) for m in metrics), default=6)
    widths = [len(c) for _, _, cells in rows for c in cells] + [len(x) for x in labels]
    cell = max(widths)
    lines = [" " * (stat_width + 1 + name) + "".join(f"{x:>{cell}}" for x in labels)]
    lines += [
        f"{stat:<{stat_width}} {path:<{name}}" + "".join(f"{c:>{cell}}" for c in cells)
        for stat, path, cells in rows
    ]
    note = _runs_note(columns) + "; + is better (Hmean of rates, Amean of times"
    note += "; Stddev and CoeffVar: + is less spread)"
    return "\n".join(lines) + "\n\n" + note


def columns_of(groups: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Sample]]:
    """Return a comparison column (a Sample per metric) per group of results."""
    paths = [m.path for m in METRICS]
    out = []
    for group in groups:
        values = [metric_values(flatten(r)) for r in group]
        out.append({path: Sample.of(v[path] for v in values) for path in paths})
    return out


def statistics(column: dict[str, Sample]) -> dict[str, dict[str, float | None]]:
    """Return mean, stddev and n of each metric, JSON-ready (NaN as null)."""

    def number(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        path: {"mean": number(s.mean), "stddev": number(s.std), "n": s.n}
        for path, s in column.items()
    }


def headline(labels: Sequence[str], columns: Sequence[dict[str, Sample]]) -> str:
    """Return the robot's first line: the score's change from base to new, or none."""
    path = METRICS[0].path
    base, new = columns[0][path], columns[-1][path]
    change = change_pct(base.mean, new.mean)
    if math.isnan(change):
        return f"pcplab: no {path} to compare ({labels[0]} -> {labels[-1]})"
    p = welch_p(base, new)
    test = "one run a side: no t-test" if math.isnan(p) else f"Welch's p = {p:.2g}"
    if not _changed(METRICS[0], base, new):
        return (
            f"pcplab noticed no significant change of {path} "
            f"({labels[0]} -> {labels[-1]}: {change:+.1f}%, {test})"
        )
    kind = "improvement" if change > 0 else "regression"
    return (
        f"pcplab noticed a {change:+.1f}% {kind} of {path} "
        f"({labels[0]} -> {labels[-1]}, {test})"
    )


def report(
    fmt: str, labels: Sequence[str], groups: Sequence[Sequence[dict[str, Any]]]
) -> str:
    """Return GROUPS of results compared in layout FMT, headed by what ran.

    lkp: the robot's headline (two columns) and LKP's testcase, machine,
    parameters and commits header; mmtests: one line of what ran.
    """
    columns = columns_of(groups)
    if fmt == "lkp":
        head = [headline(labels, columns), ""] if len(columns) == 2 else []
        head += headers.lkp_head(labels, groups)
        return "\n".join(head) + "\n" + lkp(labels, columns)
    ran = headers.line([r for group in groups for r in group])
    return f"pcplab: {ran}\n\n" + mmtests(labels, columns)
