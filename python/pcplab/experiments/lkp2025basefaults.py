"""lkp2025basefaults: LKP's base kernels of page_fault reports, on five new machines.

A kernel test robot report on any commit prints, for the commit's parent,
the absolute will-it-scale per-task score and the perf-profile shares.
pcplab/record/lkp2025_base_page_fault.csv holds those of five page_fault2/3
reports on machines no other experiment runs (Granite Rapids, Sapphire
Rapids, two Ice Lakes, a Cascade Lake). Each row's base runs on its
machine's profile at the nearest kernel generation (the TOML's [base]);
the per-task score is scored, and each share the model names (the TOML's
[figures]) where the run has one task per CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pcplab import charts, machines
from pcplab.data import record_rows
from pcplab.experiments._common import (
    _short,
    lkp_figures,
    load_experiment,
    mode_table,
    own_name,
    profile_for,
    published_kernel,
    run_specs,
    sim_spec,
    table_section,
    timing,
)
from pcplab.headers import PUBLISHED_KERNEL, RAN, ran
from pcplab.render import md_table
from pcplab.tolerance import Kind, Residual, add

NAME = own_name(__name__)
ORDER = 2025
KINDS = {
    "basefaults_score": Kind(True, 0.10, "per-task score, LKP base kernels (record)"),
    "basefaults_share": Kind(
        False, 10, "perf-profile share, LKP base kernels (record)"
    ),
}
HEADER = ["LKP host", "test, tasks", "kernel", "metric", "published", "model", "scored"]


def _key(r: dict[str, str]) -> tuple[str, str, str, int, str]:
    """Return what a record row's run is: host, test, mode, tasks, base commit."""
    return r["lkp_host"], r["test"], r["mode"], int(r["tasks"]), r["commit_base"]


def _spec(exp: dict[str, Any], key: tuple, quick: bool) -> dict[str, Any]:
    """Return the sim spec of one base kernel's run on its machine."""
    host, test, mode, tasks, base = key
    return sim_spec(
        profile_for(exp, host),
        **exp["spec"],
        **timing(mode_table(exp, quick)),
        **exp["base"][base],
        workload=test,
        mode=mode,
        tasks=tasks,
    )


def model_figure(res: dict[str, Any], figure: str) -> float:
    """Return a sim result's FIGURE: "self.F", "children.F" or an lkp_figures key.

    A function the profile does not list had no cycles charged (0.0); a
    leaf's children share is its self share.
    """
    kind, _, fn = figure.partition(".")
    if not fn:
        return lkp_figures(res)[figure]
    profile = res["perf_profile"]
    own = profile["self"].get(fn, 0.0)
    return own if kind == "self" else profile["children"].get(fn, own)


def _row(exp: dict[str, Any], r: dict[str, str], res: dict[str, Any]) -> dict:
    """Return one record row beside the model's figure of it."""
    figure = exp["figures"].get(r["metric"], "")
    profile = profile_for(exp, r["lkp_host"])
    per_cpu = int(r["tasks"]) == machines.fit_facts(profile)["cpus"]
    return {
        "machine": r["lkp_host"],
        "profile": profile,
        "split": r["split"],
        "test": r["test"],
        "mode": r["mode"],
        "tasks": int(r["tasks"]),
        "commit_base": r["commit_base"],
        "kernel": exp["base"][r["commit_base"]]["kernel"],
        RAN: ran(res),
        PUBLISHED_KERNEL: published_kernel([r]),
        "metric": r["metric"],
        "figure": figure,
        "published": float(r["value"]),
        "published_stddev_pct": r["stddev_pct"],
        "model": model_figure(res, figure) if figure else None,
        # LKP samples every CPU: below one task per CPU its shares hold idle
        "scored": bool(figure) and (figure == "score" or per_cpu),
    }


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Run each report's base kernel on its machine; a row per record row."""
    exp = load_experiment(NAME)
    record = record_rows(exp["record"])
    keys = list(dict.fromkeys(_key(r) for r in record))
    specs = [_spec(exp, k, quick) for k in keys]
    results = dict(zip(keys, run_specs(NAME, specs, workers, scheduler), strict=True))
    return [_row(exp, r, results[_key(r)]) for r in record]


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of each scored row: the per-task score, the shares."""
    out: list[Residual] = []
    for r in rows:
        if r["scored"]:
            kind = "basefaults_score" if r["figure"] == "score" else "basefaults_share"
            add(
                out,
                KINDS,
                r["machine"],
                kind,
                _short(r["metric"]),
                r["model"],
                r["published"],
            )
    return out


def _cells(r: dict[str, Any]) -> list[str]:
    """Return a row's cells: where, the metric, LKP's figure and the model's."""
    fmt = ".0f" if r["figure"] == "score" or r["published"] > 1000 else ".2f"
    spread = f" ±{r['published_stddev_pct']}%" if r["published_stddev_pct"] else ""
    model = "(no model figure)" if r["model"] is None else f"{r['model']:{fmt}}"
    return [
        r["machine"],
        f"{r['test']} {r['mode']}, {r['tasks']}",
        f"{r['kernel']} / {r[PUBLISHED_KERNEL]}",
        _short(r["metric"]),
        f"{r['published']:{fmt}}{spread}",
        model,
        "yes" if r["scored"] else "no",
    ]


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return every base figure of the reports beside the model's."""
    builds = [
        f"{commit}: model {base['kernel']}, CONFIG_DEBUG_LIST"
        + ("=y, charged" if base.get("config_debug_list") else " off")
        for commit, base in spec["base"].items()
    ]
    lines = [
        "instrument: perf-profile, as LKP measured; the model charges its cost",
        *builds,
        *md_table(HEADER, [_cells(r) for r in rows]),
    ]
    return "\n".join(lines) + "\n"


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md table of every base figure."""
    intro = load_experiment(NAME)["intro"]
    return table_section(NAME, intro, HEADER, [_cells(r) for r in rows])


def _points(
    rows: list[dict[str, Any]], ticks: list[str], what: tuple[str, str, str, float]
) -> charts.Panel:
    """Return a panel of ROWS' model and published figures, a category each.

    WHAT: the panel's title, x label, y label and the figures' scale.
    """
    title, xlabel, ylabel, scale = what
    placed = charts.placed(rows, [float(i) for i in range(len(rows))])
    key = "score" if xlabel == "LKP host" else "perf-profile"
    return charts.Panel(
        title,
        xlabel,
        ylabel,
        [
            charts.model(placed, "x", "model", key, scale, style="points"),
            charts.published(placed, "x", "published", key, scale, style="points"),
        ],
        xticks=charts.categories(ticks),
        from_zero=True,
    )


def tick(metric: str) -> str:
    """Return a metric's plot label: an lru_lock call chain by its caller."""
    short = _short(metric)
    lock = ".folio_lruvec_lock_irqsave."
    if short.startswith("calltrace.") and lock in metric:
        return f"lru_lock < {metric.split(lock)[1].split('.')[0]}"
    return short


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot each machine's per-task score, and its shares, beside LKP's base."""
    drawn = [r for r in rows if r["figure"]]
    scores = [r for r in drawn if r["figure"] == "score"]
    what = ("per-task score", "LKP host", "thousand ops/s per task (k)", 1e-3)
    panels = [_points(scores, [r["machine"] for r in scores], what)]
    for host, mine in charts.grouped(drawn, "machine").items():
        shares = [r for r in mine if r["figure"] != "score"]
        title = f"{host}, {mine[0]['test']}, {mine[0]['tasks']} tasks"
        what = (title, "LKP metric", "share of cycles (%)", 1.0)
        panels.append(_points(shares, [tick(r["metric"]) for r in shares], what))
    figure = charts.Figure(
        out / f"{NAME}_base",
        f"{NAME}: LKP base kernels on five machines",
        panels,
        ncols=3,
        published_note="LKP's report (base kernel)",
        size=(5.5, 5.0),
    )
    return charts.draw(figure)
