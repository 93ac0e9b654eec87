"""What `pcplab tune` prints: the recommendation, its figures, the front, JSON, plot.

Percentiles are printed to the digits their histogram resolves
(budgets.format_metric); a recommendation that costs more than a cheaper
setting (a rebuild, a patch) says what it was weighed against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pcplab.budgets import Budget, format_metric, resolved
from pcplab.charts import title
from pcplab.stats import Sample, change_pct
from pcplab.summary import format_table
from pcplab.tune import EFFORTS, Point, Tuning, effort, how_to_apply, patches


def label(keys: dict[str, Any]) -> str:
    """Name a setting: "scale_max=0 batch=8", or the kernel's defaults."""
    return " ".join(f"{k}={v}" for k, v in keys.items()) or "(kernel defaults)"


def _figures(point: Point, budgets: list[Budget]) -> str:
    """Name a setting with its throughput and worst budget figures."""
    return (
        f"{label(point.keys)}: throughput {point.score:.3f}x the kernel's "
        f"defaults {_held(point, budgets)}"
    )


def _held(point: Point, budgets: list[Budget]) -> str:
    """Return a setting's spread over its seeds and worst budget figures."""
    figures = ", ".join(
        f"{b.name} {format_metric(b.name, point.worst[b.name])}"
        for b in budgets
        if point.worst.get(b.name) is not None
    )
    spread = Sample.of(point.seed_scores).pct_std
    return f"(±{spread:.1f}% over {point.seeds} seeds)" + (
        f"; worst {figures}" if figures else ""
    )


def _turned_down(result: Tuning) -> str | None:
    """Say which faster setting was not worth its cost, and why."""
    faster, rec = result.turned_down, result.recommendation
    if faster is None or rec is None:
        return None
    gain = change_pct(rec.score, faster.score)
    return (
        f"  {label(faster.keys)} is {gain:+.1f}% faster, inside the seeds' spread "
        f"(Welch's t-test p = {result.turned_down_p:.2f}, {faster.seeds} seeds "
        f"each): not worth {EFFORTS[effort(faster.keys)]}"
    )


def closest(result: Tuning, budgets: list[Budget]) -> str:
    """Say which setting came closest to the budgets, and by how much it missed.

    The miss is the printed figure's (a percentile rounded to what its
    histogram resolves) over the limit: no digit the figure does not have.
    """

    def excess(p: Point) -> tuple[float, Budget]:
        over = [
            (resolved(b.name, p.worst.get(b.name) or 0.0) / b.limit_ns, b)
            for b in budgets
            if p.worst.get(b.name) is not None
        ]
        return max(over, key=lambda o: o[0], default=(float("inf"), budgets[0]))

    point = min(result.points, key=lambda p: excess(p)[0])
    ratio, budget = excess(point)
    if ratio == float("inf"):
        return "no setting measured the budgets' statistics"
    figure = format_metric(budget.name, point.worst[budget.name] or 0.0)
    return (
        f"no setting meets the budgets; the closest, {label(point.keys)}, misses "
        f"{budget} by {100 * (ratio - 1):.0f}% ({figure})"
    )


def run_commands(
    base: dict[str, Any], keys: dict[str, Any], workloads: dict[str, float]
) -> list[str]:
    """Return the `pcplab run` line of each workload at setting KEYS, seed 1."""
    spec = {**base, **keys}
    order = dict.fromkeys(("engine", "machine", "kernel", "tasks", "policy", *keys))
    flags = [f"--{k.replace('_', '-')} {spec[k]}" for k in order if k in spec]
    where = 1 + ("machine" in spec)  # --workload after the engine and machine
    tail = flags[where:]
    if "duration_s" in spec:
        tail.append(f"--duration {spec['duration_s']:g}")
    if spec["engine"] == "sim":
        tail.append("--seed 1")
    return [
        " ".join(["pcplab run", *flags[:where], f"--workload {w}", *tail])
        for w in workloads
    ]


def lines(
    result: Tuning,
    budgets: list[Budget],
    metric: str | None,
    base: dict[str, Any],
    workloads: dict[str, float],
    seeds: int,
    outside_fit: list[str] | None = None,
) -> list[str]:
    """Return the text: what ran, the recommendation, how to apply it, the front.

    The first line says what the runs ran (their resolved specs, as every
    table does: pcplab.headers), not what was asked.
    """
    rec = result.recommendation
    out = [
        f"pcplab tune: {result.ran or 'n/a'}; {result.settings_run} settings tried "
        f"({len(result.points)} ran unlike the others; {result.runs} runs); "
        f"budgets: {', '.join(map(str, budgets)) or 'none'}",
        "",
    ]
    if rec is None:
        out.append(closest(result, budgets))
    else:
        if rec.keys:
            out.append(f"recommendation: {_figures(rec, budgets)}")
        else:
            out.append(
                "recommendation: keep the kernel's defaults: they meet the "
                f"budgets {_held(rec, budgets)}"
            )
        out += [line for line in [_turned_down(result)] if line]
        if seeds < 2:
            out.append(
                "  one seed: no spread to test a gain against, so a costlier "
                "setting is recommended only where nothing cheaper meets the budgets"
            )
        if outside_fit:
            out.append(
                "  extrapolated: the model was not fitted on this machine: "
                + "; ".join(outside_fit)
            )
        out.append("how to apply it:")
        kernel = base.get("kernel", "this kernel")
        out += [f"  {line}" for line in how_to_apply(rec.keys, kernel)]
        if patches(rec.keys):
            settable = result.settable
            out.append(
                "without a patch: "
                + (
                    _figures(settable, budgets)
                    if settable
                    else "no setting this kernel takes meets the budgets"
                )
            )
        out.append(f"check it (seed 1 of the {seeds} it held in):")
        out += [f"  {line}" for line in run_commands(base, rec.keys, workloads)]
    out += [
        "",
        f"Pareto front ({metric or 'throughput'}; seed 1, the run every setting has):",
        *_table(result, metric),
    ]
    return out


def _table(result: Tuning, metric: str | None) -> list[str]:
    """Return the front as text rows, seed 1's figures beside the seeds run.

    The budgets column says whether they held in every seed the setting ran.
    """
    headers = ["setting", "throughput", metric or "", "seeds", "budgets"]
    rows = [
        [
            label(p.keys),
            f"{p.first['score']:.3f}x",
            format_metric(metric, p.first[metric])
            if metric and p.first.get(metric)
            else "n/a",
            str(p.seeds),
            "met" if p.feasible else "missed",
        ]
        for p in result.front
    ]
    if metric is None:
        headers, rows = headers[:2] + headers[3:], [r[:2] + r[3:] for r in rows]
    return format_table(headers, rows)


def as_json(result: Tuning, metric: str | None) -> dict[str, Any]:
    """Return the --json document: the recommendation and the front."""

    def row(p: Any) -> dict[str, Any]:
        return {
            "keys": p.keys,
            "throughput_ratio": p.score,
            "seed_throughput_ratios": p.seed_scores,
            "seeds": p.seeds,
            "ops_per_s": p.ops_per_s,
            "worst": p.worst,
            "seed1": p.first,
            "budgets_met": p.feasible,
        }

    rec, down = result.recommendation, result.turned_down
    return {
        "recommendation": None if rec is None else rec.keys,
        "recommended": None if rec is None else row(rec),
        "turned_down": None
        if down is None
        else {**row(down), "welch_p": result.turned_down_p},
        "settable": None if result.settable is None else row(result.settable),
        "default": row(result.default),
        "front_metric": metric,
        "front": [row(p) for p in result.front],
        "settings_run": result.settings_run,
        "runs": result.runs,
        "points": [row(p) for p in result.points],
    }


def plot(result: Tuning, metric: str, limit: float | None, path: Path) -> None:
    """Draw throughput against METRIC: every point, the front, the budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    pts = [p for p in result.points if p.first.get(metric) is not None]
    ax.scatter(
        [p.first[metric] / 1e3 for p in pts],
        [p.first["score"] for p in pts],
        s=14,
        color="0.6",
        label="settings tried",
    )
    ax.plot(
        [p.first[metric] / 1e3 for p in result.front],
        [p.first["score"] for p in result.front],
        "o-",
        color="C0",
        label="Pareto front",
    )
    if limit is not None:
        ax.axvline(limit / 1e3, color="C3", linestyle="--", label="budget")
    rec = result.recommendation
    if rec is not None and rec.first.get(metric) is not None:
        ax.scatter(
            [rec.first[metric] / 1e3],
            [rec.first["score"]],
            s=90,
            marker="*",
            color="C2",
            zorder=3,
            label="recommendation",
        )
    ax.set_xlabel(f"{metric}, seed 1 (µs)")
    ax.set_ylabel("throughput relative to the kernel's defaults, seed 1")
    ax.set_xscale("log")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    title(fig, f"pcplab tune: throughput against {metric}", result.ran)
    with plt.rc_context({"svg.fonttype": "none"}):  # an SVG's text stays text
        fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
