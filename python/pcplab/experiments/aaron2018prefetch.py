"""aaron2018prefetch: page_fault1 at full load on four LKP servers, two held out.

Aaron Lu, linux-mm 2018-01, "free_pcppages_bulk: prefetch buddy while not
holding lock" (97334162e4d7, with 0a5f4e5b4562, v4.17): the score of
will-it-scale page_fault1, one task per CPU, on a 2- and a 4-socket
Broadwell and Skylake. The 2-socket Skylake and the 4-socket Broadwell are
in no reference CSV and their figures are never fitted on
(pcplab/heldout/): the model predicts them from their public facts alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pcplab import charts
from pcplab.experiments._common import (
    charged,
    fitted_profiles,
    heldout_rows,
    instrument_line,
    load_experiment,
    mode_table,
    own_name,
    profile_for,
    run_specs,
    server_ticks,
    sim_spec,
    table_section,
    timing,
)
from pcplab.headers import PUBLISHED_KERNEL, RAN, ran
from pcplab.render import err, line
from pcplab.stats import change_pct
from pcplab.tolerance import Kind, Residual, add

NAME = own_name(__name__)
ORDER = 2018
BATCH = 31  # every run's: 4.18's zone_batchsize() on these zones, as the thread ran
KINDS = {
    "heldout_score": Kind(True, 0.10, "score (held out)"),
    "heldout_ratio": Kind(True, 0.10, "score over the anchor's (held out)"),
}


def published(exp: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return per machine its LKP host and its scores by (kernel, patches)."""
    out: dict[str, dict[str, Any]] = {}
    for row in heldout_rows(exp["heldout"]):
        entry = out.setdefault(row["machine"], {"lkp_host": row["lkp_host"], "by": {}})
        entry["by"][(row["kernel"], row["patches"])] = float(row["score"])
    return out


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Run page_fault1 at full load, 4.18, the default batch, on the four servers."""
    exp = load_experiment(NAME)
    figures = published(exp)
    machines = [(m, profile_for(exp, m)) for m in figures]
    base = {**exp["spec"], **timing(mode_table(exp, quick))}
    results = run_specs(
        NAME, [sim_spec(profile, **base) for _, profile in machines], workers, scheduler
    )
    from pcplab import experiments  # the registry imports this module

    seen = fitted_profiles(experiments.read_by_fit())
    held = (exp["kernel_row"], exp["patches"])
    rows = []
    for (machine, profile), res in zip(machines, results, strict=True):
        thread = figures[machine]
        rows.append(
            {
                "machine": machine,
                "profile": profile,
                "lkp_host": thread["lkp_host"],
                "fitted": profile in seen,
                "instrument": charged(res),
                RAN: ran(res),
                PUBLISHED_KERNEL: exp["kernel_row"],
                "score": res["throughput"]["ops_per_s"],
                "score_published": thread["by"][held],
                "zone_contention": res["contention"]["zone_lock_pct"],
                "lru_contention": res["contention"]["lru_lock_pct"],
                **{
                    f"published_{kernel}_{patches}": score
                    for (kernel, patches), score in thread["by"].items()
                },
            }
        )
    anchor = next(r for r in rows if r["machine"] == exp["anchor"])
    for r in rows:
        r["ratio"] = r["score"] / anchor["score"]
        r["ratio_published"] = r["score_published"] / anchor["score_published"]
    return rows


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of the held-out rows: the score and its ratio to the anchor's."""
    out: list[Residual] = []
    anchor = load_experiment(NAME)["anchor"]
    for r in rows:
        add(
            out,
            KINDS,
            r["machine"],
            "heldout_score",
            BATCH,
            r["score"],
            r["score_published"],
        )
        if r["machine"] != anchor:
            add(
                out,
                KINDS,
                r["machine"],
                "heldout_ratio",
                BATCH,
                r["ratio"],
                r["ratio_published"],
            )
    return out


def _cells(r: dict[str, Any]) -> list[str]:
    """Return one machine's cells: score, its error, the ratio, its error, locks."""
    return [
        f"{r['score']:.0f} / {r['score_published']:.0f}",
        err(r["score"], r["score_published"]),
        f"{r['ratio']:.3f} / {r['ratio_published']:.3f}",
        err(r["ratio"], r["ratio_published"]),
        f"{r['zone_contention']:.0f}%",
        f"{r['lru_contention']:.0f}%",
    ]


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return the four servers: model/published score and ratio, the model's locks."""
    out = [
        instrument_line(spec),
        f"{spec['kernel_row']} + {spec['patches']} (the 4.18 model's free path); "
        f"fit: the machine's figures are among those fitted on",
        spec["layout"],
    ]
    for r in rows:
        out.append(
            line(
                spec["layout"],
                [
                    r["machine"],
                    r["lkp_host"],
                    "yes" if r["fitted"] else "no",
                    *_cells(r),
                ],
                left=3,
            )
        )
    return "\n".join(out) + "\n"


def _published_runs(
    exp: dict[str, Any], where: dict[str, int]
) -> dict[str, list[dict[str, Any]]]:
    """Return the thread's scores by kernel and patches, with scores over the anchor's.

    Each has its machine's place on the axis (WHERE), as "x".
    """
    figures = published(exp)
    anchor = figures[exp["anchor"]]["by"]
    runs: dict[str, list[dict[str, Any]]] = {}
    for machine, thread in figures.items():
        for (kernel, patches), score in thread["by"].items():
            runs.setdefault(f"{kernel} {patches}", []).append(
                {
                    "x": where[machine],
                    "score": score,
                    "ratio": score / anchor[(kernel, patches)],
                }
            )
    return runs


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot per server the model's score and ratio beside every published run.

    The thread's runs: each kernel, with and without the patches; the ratio
    is to the anchor's score in the same run.
    """
    exp = load_experiment(NAME)
    where = {r["machine"]: i for i, r in enumerate(rows)}
    runs = _published_runs(exp, where)
    offs = charts.offsets(1 + len(runs))
    model = charts.placed(rows, [where[r["machine"]] + offs[0] for r in rows])
    ticks = server_ticks(rows)
    panels = []
    for key, ylabel, scale in (
        ("score", "page_fault1 score (M pages/s)", 1e-6),
        ("ratio", f"score over {exp['anchor']}'s (ratio)", 1.0),
    ):
        series = [charts.model(model, "x", key, "model, 4.18", scale, style="points")]
        for off, (label, group) in zip(offs[1:], runs.items(), strict=True):
            placed = charts.placed(group, [r["x"] + off for r in group])
            series.append(
                charts.published(placed, "x", key, label, scale, style="points")
            )
        panels.append(
            charts.Panel(
                "the model against every published run",
                "LKP server (fitted: its 2018 sweep is in the fit)",
                ylabel,
                series,
                xticks=ticks,
                from_zero=True,
            )
        )
    return charts.draw(
        charts.Figure(
            out / f"{NAME}_scores",
            f"{NAME}: page_fault1 at full load, two servers no fit has seen",
            panels,
            ncols=2,
            size=(6.5, 4.0),
        )
    )


def _effect(r: dict[str, Any], kernel: str, before: str, after: str) -> str:
    """Return the published gain of a patch on KERNEL, or n/a if not published."""
    a = r.get(f"published_{kernel}_{before}")
    b = r.get(f"published_{kernel}_{after}")
    return "n/a" if a is None or b is None else f"{change_pct(a, b):+.1f}%"


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md table: the held-out servers beside the seen ones."""
    exp = load_experiment(NAME)
    cells = [
        [
            r["machine"],
            r["lkp_host"],
            "yes" if r["fitted"] else "no",
            *_cells(r),
            _effect(r, exp["kernel_row"], "none", "pick"),
            _effect(r, exp["kernel_row"], "pick", "pick+prefetch"),
        ]
        for r in rows
    ]
    return table_section(
        NAME,
        f"Held out: figures no fit reads (pcplab/heldout/). Score in pages/s, "
        f"model / published ({exp['kernel_row']} with both patches, the free "
        f"path of the 4.18 model), and over {exp['anchor']}'s in the same table; "
        "the model's lock contention in % of all CPU time (the thread gives "
        "none). `in the fit`: the machine's 2018 sweep is among the rows "
        "fitted on. The published gain of each patch is shown beside; the "
        "model has no kernel without them.",
        [
            "machine",
            "LKP host (assumed)",
            "in the fit",
            "score",
            "error",
            f"over {exp['anchor']}",
            "error",
            "zone->lock",
            "LRU lock",
            "published: pick",
            "+ prefetch",
        ],
        cells,
    )
