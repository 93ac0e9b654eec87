"""ying2023: Huang Ying's debug kernel, high = 2 x batch, per batch.

linux-mm 2023, "mm, pcp: reduce lock contention for draining high-order
pages" (52166607ecc9): page_fault1 throughput per task and the zone->lock
hold of rmqueue_bulk and free_pcppages_bulk, average and 99%, timed with
ftrace function_graph on those two functions alone (set_ftrace_filter): the
mail "extracted ... to 2 separate functions to make it easy to measure the
function run time with ftrace function_graph tracer", and its 22-42 ns per
page cannot hold a traced call per page (set_graph_function would trace one
under zone->lock, over 74 ns). The model charges that instrument.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pcplab import charts
from pcplab.experiments._common import (
    charged,
    fitted_rows,
    heading,
    instrument_line,
    load_experiment,
    mode_table,
    own_name,
    profile_for,
    reference_rows,
    run_specs,
    sim_spec,
    timing,
)
from pcplab.headers import RAN, ran
from pcplab.render import (
    by_machine,
    err,
    errors,
    index_by,
    line,
    md_table,
    pair,
    three,
    with_errors,
)
from pcplab.tolerance import Kind, Residual, add

NAME = own_name(__name__)
ORDER = 2023
FITTED = True
KINDS = {
    "throughput": Kind(True, 0.10, "per-task pages/s"),
    "free_avg": Kind(True, 0.30, "free hold avg"),
    "alloc_avg": Kind(True, 0.30, "alloc hold avg"),
    "free_p99": Kind(True, 0.40, "free hold 99%"),
    "alloc_p99": Kind(True, 0.40, "alloc hold 99%"),
}
# Each figure: its row key, its format, and its published key's stem.
FIGURES = (
    ("throughput", ".0f", "throughput"),
    ("free_avg_us", ".2f", "free_avg"),
    ("free_p99_us", ".2f", "free_p99"),
    ("alloc_avg_us", ".2f", "alloc_avg"),
    ("alloc_p99_us", ".2f", "alloc_p99"),
)


def run(
    quick: bool,
    workers: int,
    *,
    scheduler: Any = None,
    mode: str | None = None,
    only: Sequence[str] | None = None,
    constants: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Run the 2023 debug kernel (high = 2 x batch, no free scaling) per batch."""
    exp = load_experiment(NAME)
    table = mode_table(exp, quick, mode)
    rows = fitted_rows(exp, table, only)
    specs = [
        sim_spec(
            profile_for(exp, row["machine"]),
            constants,
            **exp["spec"],
            batch=int(row["batch"]),
            high=exp["high_per_batch"] * int(row["batch"]),
            **timing(table),
        )
        for row in rows
    ]
    results = run_specs(NAME, specs, workers, scheduler)
    out = []
    for row, res in zip(rows, results, strict=True):
        hold = res["lock_hold_ns"]
        out.append(
            {
                "machine": row["machine"],
                "batch": int(row["batch"]),
                "instrument": charged(res),
                RAN: ran(res),
                "throughput": res["throughput"]["ops_per_task_per_s"],
                "throughput_published": float(row["throughput_pages_per_s"]),
                "free_avg_us": hold["free_pcppages_bulk"]["avg"] / 1000,
                "free_avg_published": float(row["free_latency_avg_us"]),
                "free_p99_us": hold["free_pcppages_bulk"]["p99"] / 1000,
                "free_p99_published": float(row["free_latency_p99_us"]),
                "alloc_avg_us": hold["rmqueue_bulk"]["avg"] / 1000,
                "alloc_avg_published": float(row["alloc_latency_avg_us"]),
                "alloc_p99_us": hold["rmqueue_bulk"]["p99"] / 1000,
                "alloc_p99_published": float(row["alloc_latency_p99_us"]),
            }
        )
    return out


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of the 2023 rows: per-task throughput and hold times."""
    out: list[Residual] = []
    for r in rows:
        m, b = r["machine"], r["batch"]
        add(out, KINDS, m, "throughput", b, r["throughput"], r["throughput_published"])
        for kind in ("free_avg", "alloc_avg", "free_p99", "alloc_p99"):
            add(out, KINDS, m, kind, b, r[f"{kind}_us"], r[f"{kind}_published"])
    return out


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return Huang Ying's table per machine: pages/s per task, holds in us."""
    layout = spec["layout"]
    out = [instrument_line(spec), ""]
    for machine, group in by_machine(rows).items():
        out += [f"{machine}: model/published (error), hold times in us", layout]
        for r in group:
            cells = [str(r["batch"])]
            for key, fmt, stem in FIGURES:
                pub = r[f"{stem}_published"]
                cells.append(f"{pair(r[key], pub, fmt)} ({err(r[key], pub)})")
            out.append(line(layout, cells))
        out.append("")
    return "\n".join(out)


def tables(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Return one table: every row with the error of each published figure."""
    pairs = {key: f"{stem}_published" for key, _, stem in FIGURES}
    return {NAME: [with_errors(r, pairs) for r in rows]}


# The hold times plotted: the row's key, the reference CSV's column, the title.
HOLDS = (
    ("free_avg_us", "free_latency_avg_us", "free_pcppages_bulk, average"),
    ("free_p99_us", "free_latency_p99_us", "free_pcppages_bulk, 99%"),
    ("alloc_avg_us", "alloc_latency_avg_us", "rmqueue_bulk, average"),
    ("alloc_p99_us", "alloc_latency_p99_us", "rmqueue_bulk, 99%"),
)


def _panel(
    rows: list[dict[str, Any]],
    ref: list[dict[str, str]],
    figure: tuple[str, str, str],
    ylabel: str,
    scale: float = 1.0,
    **axes: Any,
) -> charts.Panel:
    """Return one figure against batch, a colour per machine, model and published."""
    key, column, title = figure
    model = charts.grouped(rows, "machine")
    published = charts.grouped(ref, "machine")
    series = []
    for machine in [*model, *(m for m in published if m not in model)]:
        series.append(
            charts.model(model.get(machine, []), "batch", key, machine, scale)
        )
        series.append(
            charts.published(
                published.get(machine, []), "batch", column, machine, scale
            )
        )
    return charts.Panel(
        title, "pcp->batch (pages)", ylabel, series, xscale="log2", **axes
    )


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot the per-task throughput, and each hold's avg and 99%, against batch."""
    ref = reference_rows(load_experiment(NAME)["reference"])
    throughput = ("throughput", "throughput_pages_per_s", "page_fault1 per task")
    hold = "zone->lock hold (µs)"
    return [
        *charts.draw(
            charts.Figure(
                out / f"{NAME}_throughput",
                f"{NAME}: throughput against pcp->batch (high = 2 x batch)",
                [
                    _panel(
                        rows,
                        ref,
                        throughput,
                        "throughput (M pages/s per task)",
                        1e-6,
                        from_zero=True,
                    )
                ],
            )
        ),
        *charts.draw(
            charts.Figure(
                out / f"{NAME}_hold_times",
                f"{NAME}: zone->lock hold against pcp->batch (high = 2 x batch)",
                [_panel(rows, ref, h, hold, yscale="log") for h in HOLDS],
                ncols=2,
            )
        ),
    ]


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md table: in-sample / left out / published."""
    left = index_by(cv, "batch")
    lines = [
        *heading(NAME),
        "Per-task pages/s and zone->lock hold in us: in-sample / left out / "
        f"published; {load_experiment(NAME)['spec']['tasks']} tasks "
        "(the mail does not say how many).",
        "",
    ]
    cells = []
    for r in rows:
        o = left.get((r["machine"], r["batch"]))
        row = [r["machine"], r["batch"]]
        for key, fmt, stem in FIGURES:
            pub = r[f"{stem}_published"]
            row += [three(r[key], o, key, pub, fmt), errors(r[key], o, key, pub)]
        cells.append(row)
    header = ["machine", "batch", "per-task pages/s", "error"]
    for what in ("free avg", "free 99%", "alloc avg", "alloc 99%"):
        header += [what, "error"]
    lines += md_table(header, cells)
    lines += ["", *_split_section(rows)]
    return lines


def hold_split(
    batches: Sequence[float], holds_us: Sequence[float]
) -> tuple[float, float]:
    """Fit hold = per call + per page x batch by least squares: (us, ns).

    Each hold weighs by its relative error, as the tolerances do: unweighted,
    the 2047 batch's tens of us would set the line alone and push the
    curvature of the larger batches into the part per call.
    """
    import numpy as np  # polyfit: the maintained least-squares line

    weights = [1 / h for h in holds_us]
    per_page, per_call = np.polyfit(batches, holds_us, 1, w=weights)
    return float(per_call), float(per_page) * 1000


def _split_section(rows: list[dict[str, Any]]) -> list[str]:
    """Return each machine's average holds split into per call and per page."""
    cells = []
    for machine, group in by_machine(rows).items():
        if len({r["batch"] for r in group}) < 2:
            continue
        batches = [r["batch"] for r in group]
        row = [machine]
        for what in ("free_avg", "alloc_avg"):
            model = hold_split(batches, [r[f"{what}_us"] for r in group])
            kernel = hold_split(batches, [r[f"{what}_published"] for r in group])
            row += [
                f"{model[0]:.2f} / {kernel[0]:.2f}",
                f"{model[1]:.1f} / {kernel[1]:.1f}",
            ]
        cells.append(row)
    if not cells:
        return []
    header = ["machine", "free per call (us)", "free per page (ns)"]
    header += ["alloc per call (us)", "alloc per page (ns)"]
    return [
        "Each average hold as a part per call plus a part per page (hold = "
        "call + page x batch, least squares of the relative errors over the "
        "batches): in-sample / published.",
        "",
        *md_table(header, cells),
        "",
    ]
