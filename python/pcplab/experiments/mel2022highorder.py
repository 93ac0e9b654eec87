"""mel2022highorder: page_fault1 scaling on 5.17-rc3, a Cascade Lake and a Zen1.

Mel Gorman, linux-mm 2022-02-17 (Message-ID
20220217093113.GU3366@techsingularity.net): mmtests page_fault1 Hmean per
task count, 5.17.0-rc3 vanilla against the "high-order PCP caching"
follow-up series, on a 2-socket Cascade Lake (processes; split fit) and an
8-node Zen1 (threads; held out). The model runs 6.6 at every count up to
the machine's CPUs; the vanilla throughput and its shape are scored, the
series' rows shown beside them (pcplab/record/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pcplab import charts, machines
from pcplab.data import record_rows
from pcplab.experiments._common import (
    charged,
    instrument_line,
    load_experiment,
    mode_table,
    own_name,
    profile_for,
    run_specs,
    table_section,
    timing,
)
from pcplab.headers import PUBLISHED_KERNEL, RAN, ran
from pcplab.render import err, md_table, opt
from pcplab.tolerance import Kind, Residual, add

NAME = own_name(__name__)
ORDER = 2022
KINDS = {
    "mel2022_throughput": Kind(True, 0.10, "page_fault1 faults/s, 5.17-rc3 (record)"),
    "mel2022_shape": Kind(True, 0.10, "faults/s at the most tasks over the fewest"),
}
# will-it-scale's mode names as mmtests prints them -> the spec's `mode`
MODES = {"processes": "process", "threads": "thread"}
OVER = "more tasks than CPUs: the sim runs one task per CPU"


def published(exp: dict[str, Any]) -> list[dict[str, Any]]:
    """Return a row per machine and task count: every column of the record's."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for r in record_rows(exp["record"]):
        key = (r["machine"], int(r["nr_task"]))
        row = out.setdefault(key, {"machine": r["machine"], "nr_task": key[1]})
        row["split"] = r["split"]
        row[PUBLISHED_KERNEL] = r["kernel"]
        if r["metric"] == "Hmean":
            row["mode"] = r["mode"]
            row[r["kernel_column"]] = float(r["value"])
            row[f"{r['kernel_column']}_change"] = float(r["change_pct"])
        else:  # Stddev, with the mode the mail printed beside it
            row[f"{r['kernel_column']}_stddev"] = float(r["value"])
            row["stddev_mode"] = r["mode"]
    return list(out.values())


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Run page_fault1 on 6.6 at each published task count up to the CPUs."""
    exp = load_experiment(NAME)
    rows = published(exp)
    base = {**exp["spec"], **timing(mode_table(exp, quick))}
    cpus = {
        m: machines.fit_facts(profile_for(exp, m))["cpus"]
        for m in {r["machine"] for r in rows}
    }
    runnable = [r for r in rows if r["nr_task"] <= cpus[r["machine"]]]
    specs = [
        {
            "engine": "sim",
            "machine": profile_for(exp, r["machine"]),
            **base,
            "mode": MODES[r["mode"]],
            "tasks": r["nr_task"],
        }
        for r in runnable
    ]
    results = dict(
        zip(map(id, runnable), run_specs(NAME, specs, workers, scheduler), strict=True)
    )
    vanilla, series = exp["kernel_column"], exp["series_column"]
    out = []
    for r in rows:
        res = results.get(id(r))
        row = {
            **r,
            "profile": profile_for(exp, r["machine"]),
            "cpus": cpus[r["machine"]],
            "published": r[vanilla],
            "series": r[series],
            "model": None if res is None else res["throughput"]["ops_per_s"],
            "model_note": OVER if res is None else "",
            RAN: [],  # nothing ran for a count above the CPUs
        }
        if res is not None:
            row |= {
                RAN: ran(res),
                "instrument": charged(res),
                "zone_contention": res["contention"]["zone_lock_pct"],
                "lru_contention": res["contention"]["lru_lock_pct"],
            }
        out.append(row)
    return out


def shape(rows: list[dict[str, Any]], machine: str) -> dict[str, Any]:
    """Return MACHINE's throughput at its most tasks run over its fewest."""
    modelled = [r for r in rows if r["machine"] == machine and r["model"] is not None]
    lo = min(modelled, key=lambda r: r["nr_task"])
    hi = max(modelled, key=lambda r: r["nr_task"])
    return {
        "lo": lo["nr_task"],
        "hi": hi["nr_task"],
        "model": hi["model"] / lo["model"],
        "published": hi["published"] / lo["published"],
    }


def _machines(rows: list[dict[str, Any]]) -> list[str]:
    """Return the machines of ROWS in the record's order."""
    return list(dict.fromkeys(r["machine"] for r in rows))


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals: the vanilla faults/s per task count, and each machine's shape."""
    out: list[Residual] = []
    for r in rows:
        at = f"{r['mode']}-{r['nr_task']}"
        add(
            out,
            KINDS,
            r["machine"],
            "mel2022_throughput",
            at,
            r["model"],
            r["published"],
        )
    for m in _machines(rows):
        s = shape(rows, m)
        at = f"{s['hi']}/{s['lo']}"
        add(out, KINDS, m, "mel2022_shape", at, s["model"], s["published"])
    return out


HEADER = [
    "machine",
    "split",
    "tasks",
    "vanilla Hmean (faults/s)",
    "vanilla Stddev",
    "model (6.6)",
    "error",
    "mm-highpcpopt-v2 (not modelled)",
    "mm-reverthighpcp-v1",
]


def _cells(r: dict[str, Any]) -> list[str]:
    """Return a row's cells: published vanilla, the model, the other kernels."""
    stddev = r.get("vanilla_stddev")
    revert = r.get("mm-reverthighpcp-v1")
    return [
        r["machine"],
        r["split"],
        f"{r['mode']}-{r['nr_task']}",
        f"{r['published']:.0f}",
        "" if stddev is None else f"{stddev:.0f} ({r['stddev_mode']})",
        opt(r["model"], ".0f") if r["model"] is not None else f"n/a ({OVER})",
        err(r["model"], r["published"]),
        f"{r['series']:.0f} ({r['mm-highpcpopt-v2_change']:+.2f}%)",
        ""
        if revert is None
        else f"{revert:.0f} ({r['mm-reverthighpcp-v1_change']:+.2f}%)",
    ]


def _shape_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Return a line per machine: its shape, the model's beside the mail's."""
    out = []
    for m in _machines(rows):
        s = shape(rows, m)
        out.append(
            f"- {m}: faults/s at {s['hi']} tasks over {s['lo']}: model "
            f"{s['model']:.2f}, published {s['published']:.2f} "
            f"({err(s['model'], s['published'])})"
        )
    return out


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return every row of the mail's two tables beside the model's figure."""
    out = [
        instrument_line(spec),
        "5.17.0-rc3 vanilla (scored) against the model's 6.6; the series' and the "
        "revert's Hmean (change from vanilla) as printed. The Zen1's Stddev rows "
        "are printed as page_fault1-processes-N under its threads Hmean rows.",
        *md_table(HEADER, [_cells(r) for r in rows]),
        "",
        *_shape_lines(rows),
    ]
    return "\n".join(out) + "\n"


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md section: the rows, then each machine's shape."""
    intro = load_experiment(NAME)["intro"]
    lines = table_section(NAME, intro, HEADER, [_cells(r) for r in rows])
    return [*lines, *_shape_lines(rows), ""]


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot faults/s against tasks per machine: the model, vanilla and the series."""
    panels = []
    for m in _machines(rows):
        mine = [r for r in rows if r["machine"] == m]
        first = mine[0]
        panels.append(
            charts.Panel(
                f"{m} ({first['cpus']} CPUs, {first['split']}), {first['mode']}",
                "tasks (count)",
                "page faults/s (millions)",
                [
                    charts.model(mine, "nr_task", "model", "model, 6.6", 1e-6),
                    charts.published(
                        mine, "nr_task", "published", "5.17-rc3 vanilla", 1e-6
                    ),
                    charts.published(
                        mine, "nr_task", "series", "mm-highpcpopt-v2", 1e-6
                    ),
                ],
                from_zero=True,
            )
        )
    figure = charts.Figure(
        out / f"{NAME}_scaling",
        f"{NAME}: page_fault1, 5.17-rc3 and the high-order PCP follow-up",
        panels,
        ncols=2,
        published_note="Mel Gorman's mail",
    )
    return charts.draw(figure)
