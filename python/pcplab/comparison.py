"""Configurations side by side, in the layouts of LKP and of mmtests.

LKP's 0-day reports (`base ±%stddev %change new ±%stddev metric`, a
percent-valued metric's change in points) and mmtests' compare-kernels
(`Hmean metric value (  0.00%) value *  x.xx%*`: Hmean for rates, Amean
for times; positive is better; starred when Welch's t-test finds the
difference significant). The first column is the base of every change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pcplab.results import flatten
from pcplab.stats import ALPHA, Sample, change_pct, significant

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


def _number(value: float) -> str:
    """Format a value as LKP does: integers from 100, 4 digits from 1e8."""
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 1e8:
        return f"{value:.4g}"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.2f}"


def _stddev(sample: Sample) -> str:
    """Return LKP's ` ± x%` cell, blank for a single run."""
    if sample.n < 2 or math.isnan(sample.pct_std):
        return " " * 6
    return f" ±{sample.pct_std:3.0f}%"


def _lkp_change(metric: Metric, base: Sample, new: Sample) -> str:
    """Return %change, or the change in points of a percent-valued metric."""
    if metric.kind == PERCENT:
        delta = new.mean - base.mean
        return "n/a" if math.isnan(delta) else f"{delta:+.1f}"
    change = change_pct(base.mean, new.mean)
    return "n/a" if math.isnan(change) else f"{change:+.1f}%"


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
    """Return the LKP 0-day comparison of COLUMNS (the first is the base)."""
    base = columns[0]
    lines = [
        f"{labels[0]:<16}" + "".join(f" {label:<27}" for label in labels[1:]),
        "-" * 16 + "".join(" " + "-" * 27 for _ in labels[1:]),
        "         %stddev" + "     %change         %stddev" * (len(labels) - 1),
        "             \\  " + "        |                \\  " * (len(labels) - 1),
    ]
    for metric in _present(columns):
        b = base[metric.path]
        row = f"{_number(b.mean):>10}{_stddev(b)}"
        for column in columns[1:]:
            new = column[metric.path]
            mark = "*" if significant(b, new) else " "
            row += f"{_lkp_change(metric, b, new):>10}{mark}"
            row += f"{_number(new.mean):>11}{_stddev(new)}"
        lines.append(f"{row}  {metric.path}")
    return "\n".join(line.rstrip() for line in lines) + "\n\n" + _runs_note(columns)


def _gain(metric: Metric, base: float, new: float) -> float:
    """Return mmtests' %: positive when NEW is better (higher rate, less time)."""
    change = change_pct(base, new)
    return change if metric.kind == RATE else -change


def _average(metric: Metric, sample: Sample) -> float:
    """Return the Hmean of a rate, the Amean of anything else."""
    return sample.hmean if metric.kind == RATE else sample.mean


def _mmtests_cell(metric: Metric, columns: Sequence[dict[str, Sample]], i: int) -> str:
    """Return one `value (  x.xx%)` cell, `value *  x.xx%*` when significant."""
    base, sample = columns[0][metric.path], columns[i][metric.path]
    value = _average(metric, sample)
    gain = 0.0 if i == 0 else _gain(metric, _average(metric, base), value)
    change = "    n/a" if math.isnan(gain) else f"{gain:7.2f}"
    shown = "n/a" if math.isnan(value) else f"{value:.2f}"
    if i and significant(base, sample):
        return f"{shown} *{change}%*"
    return f"{shown} ({change}%)"


def mmtests(labels: Sequence[str], columns: Sequence[dict[str, Sample]]) -> str:
    """Return the mmtests compare-kernels table of COLUMNS (first is base)."""
    metrics = _present(columns)
    cells = [
        [_mmtests_cell(m, columns, i) for i in range(len(columns))] for m in metrics
    ]
    width = max([len(c) for row in cells for c in row] + [len(x) for x in labels]) + 2
    name = max((len(m.path) for m in metrics), default=6)
    lines = [" " * (10 + name) + "".join(f"{x:>{width}}" for x in labels)]
    for metric, row in zip(metrics, cells, strict=True):
        average = "Hmean" if metric.kind == RATE else "Amean"
        lines.append(
            f"{average:<10}{metric.path:<{name}}"
            + "".join(f"{c:>{width}}" for c in row)
        )
    note = _runs_note(columns) + "; + is better (Hmean of rates, Amean of times)"
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


def render(
    fmt: str, labels: Sequence[str], columns: Sequence[dict[str, Sample]]
) -> str:
    """Return COLUMNS in layout FMT (one of FORMATS)."""
    return (lkp if fmt == "lkp" else mmtests)(labels, columns)
