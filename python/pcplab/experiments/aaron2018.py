"""aaron2018: Aaron Lu's page_fault1 batch sweep on 4.18, five LKP machines.

linux-mm 2018, "mm, page_alloc: double zone's batchsize" (d8a759b57035):
will-it-scale page_fault1, one task per CPU, pcp->batch 31..511; the score,
its change from batch 31 and the zone and LRU lock contention.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pcplab import charts, lockshape, machines
from pcplab.experiments._common import (
    Option,
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
ORDER = 2018
FITTED = True
OPTIONS = {
    "extra_machines": Option(
        "--machine",
        "NAME",
        "Also run aaron2018's grid on this profile (model only).",
        check=machines.check_profile,
    )
}
KINDS = {
    "score": Kind(True, 0.10, "score"),
    "change": Kind(False, 5, "change from batch 31"),
    "zone": Kind(False, 10, "zone->lock contention"),
    "lru": Kind(False, 10, "LRU lock contention"),
}


# Each lock's contention in a row: the model's, and the kernel's published.
MODEL_LOCKS = {"zone": "zone_contention", "lru": "lru_contention"}
KERNEL_LOCKS = {"zone": "zone_published", "lru": "lru_published"}


def run(
    quick: bool,
    workers: int,
    *,
    scheduler: Any = None,
    extra_machines: Sequence[str] = (),
    mode: str | None = None,
    only: Sequence[str] | None = None,
    constants: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Run page_fault1, 4.18, one task per CPU, batch 31..511, five machines."""
    exp = load_experiment(NAME)
    table = mode_table(exp, quick, mode)
    rows = fitted_rows(exp, table, only)
    batches = sorted({int(r["batch"]) for r in rows})
    profiles = [(r["machine"], profile_for(exp, r["machine"]), r) for r in rows]
    for extra in [*exp.get("extra_machines", []), *extra_machines]:
        # labelled by its profile's name; "profile" keeps the file it came from
        rows_of = [{"batch": str(b), "profile": extra} for b in batches]
        profiles += [(machines.label(extra), extra, r) for r in rows_of]
    base_spec = {**exp["spec"], **timing(table)}
    specs = [
        sim_spec(profile, constants, **base_spec, batch=int(row["batch"]))
        for _, profile, row in profiles
    ]
    results = run_specs(NAME, specs, workers, scheduler)
    base: dict[str, float] = {}
    out = []
    for (label, _, row), res in zip(profiles, results, strict=True):
        score = res["throughput"]["ops_per_s"]
        base.setdefault(label, score)
        c = res["contention"]

        def published(key: str, row: dict[str, str] = row) -> float | None:
            return float(row[key]) if key in row else None

        out.append(
            {
                "machine": label,
                "batch": int(row["batch"]),
                "instrument": charged(res),
                RAN: ran(res),
                "score": score,
                "score_published": published("score"),
                "change_pct": 100.0 * (score / base[label] - 1),
                "change_published": published("change_pct"),
                "zone_contention": c["zone_lock_pct"],
                "zone_published": published("zone_contention_pct"),
                "lru_contention": c["lru_lock_pct"],
                "lru_published": published("lru_contention_pct"),
                "total_contention": c["total_pct"],
                "total_published": published("total_contention_pct"),
                **({"profile": row["profile"]} if "profile" in row else {}),
            }
        )
    lockshape.attach(out, MODEL_LOCKS)
    return out


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of the 2018 sweep rows: score, change, zone and LRU."""
    out: list[Residual] = []
    first = {}
    for r in rows:
        first.setdefault(r["machine"], r["batch"])
    for r in rows:
        if r["score_published"] is None:
            continue
        m, b = r["machine"], r["batch"]
        add(out, KINDS, m, "score", b, r["score"], r["score_published"])
        if b != first[m]:
            add(out, KINDS, m, "change", b, r["change_pct"], r["change_published"])
        add(out, KINDS, m, "zone", b, r["zone_contention"], r["zone_published"])
        add(out, KINDS, m, "lru", b, r["lru_contention"], r["lru_published"])
    return out


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return Aaron Lu's table per machine: model/published, score error."""
    layout = spec["layout"]
    out = [instrument_line(spec), ""]
    for machine, group in by_machine(rows).items():
        out += [f"{machine}: model/published (score error in brackets)", layout]
        for r in group:
            score = pair(r["score"], r["score_published"], ".0f")
            out.append(
                line(
                    layout,
                    [
                        str(r["batch"]),
                        f"{score} ({err(r['score'], r['score_published'])})",
                        pair(r["change_pct"], r["change_published"], "+.2f", "%"),
                        pair(r["zone_contention"], r["zone_published"], ".0f", "%"),
                        pair(r["lru_contention"], r["lru_published"], ".0f", "%"),
                        pair(r["total_contention"], r["total_published"], ".0f", "%"),
                    ],
                )
            )
        out.append("")
    grid = sorted({r["batch"] for r in rows})
    out += lockshape.text(lockshape.table(rows, KERNEL_LOCKS), grid)
    return "\n".join(out)


def tables(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Return every row with the error of each figure, and the lock shapes."""
    pairs = {
        "score": "score_published",
        "zone_contention": "zone_published",
        "lru_contention": "lru_published",
        "total_contention": "total_published",
    }
    plain = [{k: v for k, v in r.items() if not k.startswith("shape_")} for r in rows]
    return {
        NAME: [with_errors(r, pairs) for r in plain],
        f"{NAME}_shapes": lockshape.table(rows, KERNEL_LOCKS),
    }


# Each figure of a plot: the row's key, the reference CSV's column, its name.
SCORE = (("score", "score", "score"),)
LOCKS = (
    ("zone_contention", "zone_contention_pct", "zone->lock"),
    ("lru_contention", "lru_contention_pct", "LRU lock"),
    ("total_contention", "total_contention_pct", "total"),
)


def _per_machine(
    rows: list[dict[str, Any]],
    reference: list[dict[str, str]],
    figures: Sequence[tuple[str, str, str]],
    ylabel: str,
    scale: float = 1.0,
) -> list[charts.Panel]:
    """Return a panel per machine: FIGURES of the model beside every published row."""
    model = charts.grouped(rows, "machine")
    ref = charts.grouped(reference, "machine")
    return [
        charts.Panel(
            machine,
            "pcp->batch (pages)",
            ylabel,
            [
                s
                for key, column, label in figures
                for s in (
                    charts.model(model.get(machine, []), "batch", key, label, scale),
                    charts.published(
                        ref.get(machine, []), "batch", column, label, scale
                    ),
                )
            ],
            xscale="log2",
            from_zero=True,
        )
        for machine in [*model, *(m for m in ref if m not in model)]
    ]


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot per machine the score, and the zone, LRU and total contention."""
    reference = reference_rows(load_experiment(NAME)["reference"])
    return [
        *charts.draw(
            charts.Figure(
                out / f"{NAME}_throughput",
                f"{NAME}: page_fault1 score against pcp->batch (4.18, a task per CPU)",
                _per_machine(rows, reference, SCORE, "score (M pages/s)", 1e-6),
            )
        ),
        *charts.draw(
            charts.Figure(
                out / f"{NAME}_contention",
                f"{NAME}: zone->lock and LRU lock contention against pcp->batch",
                _per_machine(rows, reference, LOCKS, "lock contention (% of CPU time)"),
            )
        ),
    ]


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md table: in-sample / left out / published."""
    left = index_by(cv, "batch")
    lines = [
        *heading(NAME),
        "Score in pages/s, contention in % of all CPU time: in-sample / "
        "left out / published; the errors are the in-sample and the left-out "
        "one.",
        "",
    ]
    cells = []
    for r in rows:
        if r["score_published"] is None:  # a profile beyond the thread's
            continue
        o = left.get((r["machine"], r["batch"]))
        cells.append(
            [
                r["machine"],
                r["batch"],
                three(r["score"], o, "score", r["score_published"], ".0f"),
                errors(r["score"], o, "score", r["score_published"]),
                three(r["change_pct"], o, "change_pct", r["change_published"], "+.1f"),
                *(
                    three(r[field], o, field, r[published], ".0f")
                    for field, published in (
                        ("zone_contention", "zone_published"),
                        ("lru_contention", "lru_published"),
                        ("total_contention", "total_published"),
                    )
                ),
            ]
        )
    lines += md_table(
        [
            "machine",
            "batch",
            "score",
            "score error",
            "change %",
            "zone_contention",
            "lru_contention",
            "total_contention",
        ],
        cells,
    )
    lines.append("")
    return lines
