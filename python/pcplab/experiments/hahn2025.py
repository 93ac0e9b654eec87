"""hahn2025: Joshua Hahn's stress-ng vm, relinquish zone->lock when contended.

linux-mm 2025: stress-ng --vm with zone->lock held through a whole
free_pcppages_bulk (off), released every pcp->batch pages when contended,
and batched. The published deltas (0.02%) are below a run's noise: the rows
are reported, not fitted.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pcplab import charts
from pcplab.experiments._common import (
    charged,
    heading,
    instrument_line,
    load_experiment,
    mode_table,
    own_name,
    reference_rows,
    run_specs,
    sim_spec,
)
from pcplab.headers import RAN, ran
from pcplab.render import hist_rows, line, md_table, opt, with_errors

NAME = own_name(__name__)
ORDER = 2025
POLICIES = ("off", "contended", "batched")  # in the order they are printed
MS = 1_000_000


def holds_over(hist: Sequence[Sequence[int]], bound_ns: int) -> int:
    """Count holds in log2 buckets that lie wholly at or above BOUND_NS."""
    return sum(int(count) for lo, _, count in hist if int(lo) >= bound_ns)


def _hold_fields(res: dict[str, Any]) -> dict[str, Any]:
    """Return the zone->lock hold figures of one run: max, >1 ms, >10 ms."""
    hold = res["lock_hold_ns"]["zone_lock"]
    hist = hold.get("log2_hist") or []
    return {
        "max_hold_us": hold["max"] / 1000,
        "holds_over_1ms": holds_over(hist, MS),
        "holds_over_10ms": holds_over(hist, 10 * MS),
        "hold_hist": hist,
    }


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Run stress-ng vm with relinquish off, contended and batched."""
    exp = load_experiment(NAME)
    mode = mode_table(exp, quick)
    policies = exp["policies"]
    rows = [r for r in reference_rows(exp["reference"]) if r["metric"] == exp["metric"]]
    cases = []
    for row in rows:
        words = row["stress_ng_args"].split()
        tasks = int(words[words.index("--vm") + 1])
        total_gb = int(words[words.index("--vm-bytes") + 1].rstrip("G"))
        cases.append((exp["reference_machine"], row, tasks, total_gb * 1024 // tasks))
    specs = [
        sim_spec(
            machine,
            **exp["spec"],
            tasks=tasks,
            size_mib=size,
            relinquish=policy,
            duration_s=mode["duration_s"],
        )
        for machine, _, tasks, size in cases
        for policy in policies
    ]
    for extra in exp.get("model_only", []):
        cases.append((extra["machine"], {"stress_ng_args": extra["args"]}, None, 0))
        specs += [
            sim_spec(
                extra["machine"],
                **exp["spec"],
                size_mib=extra["size_mib"],
                relinquish=policy,
                duration_s=mode["model_only_duration_s"],
            )
            for policy in policies
        ]
    results = run_specs(NAME, specs, workers, scheduler)
    out = []
    for i, (machine, row, _, _) in enumerate(cases):
        runs = dict(zip(policies, results[i * len(policies) :], strict=False))
        a = runs["off"]["throughput"]["ops_per_s"]
        entry: dict[str, Any] = {
            "machine": machine,
            "args": row["stress_ng_args"],
            "instrument": charged(runs["off"]),
            RAN: ran(*runs.values()),
            "delta_published": float(row["delta_pct"]) if "delta_pct" in row else None,
        }
        for policy, res in runs.items():
            b = res["throughput"]["ops_per_s"]
            entry[f"bogo_ops_s_{policy}"] = b
            if policy != "off":
                entry[f"delta_{policy}_pct"] = 100.0 * (b - a) / a if a else None
            for key, value in _hold_fields(res).items():
                entry[f"{key}_{policy}"] = value
        # The names of earlier reports: contended against off.
        entry["bogo_ops_s_off"] = a
        entry["delta_pct"] = entry.get("delta_contended_pct")
        entry["max_hold_off_us"] = (
            runs["off"]["lock_hold_ns"]["free_pcppages_bulk"]["max"] / 1000
        )
        if "contended" in runs:
            entry["max_hold_contended_us"] = (
                runs["contended"]["lock_hold_ns"]["free_pcppages_bulk"]["max"] / 1000
            )
        out.append(entry)
    return out


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return the relinquish table: each policy's bogo ops, delta and holds."""
    layout = spec["layout"]
    out = [instrument_line(spec), layout]
    for r in rows:
        for policy in POLICIES:
            if f"bogo_ops_s_{policy}" not in r:
                continue
            if policy == "off":
                delta = "base"
            else:
                delta = f"{r[f'delta_{policy}_pct']:+.3f}%"
                if policy == "contended" and r["delta_published"] is not None:
                    delta += f"/{r['delta_published']:+.3f}%"
            out.append(
                line(
                    layout,
                    [
                        r["machine"],
                        r["args"],
                        policy,
                        f"{r[f'bogo_ops_s_{policy}']:.0f}",
                        delta,
                        f"{r[f'max_hold_us_{policy}']:.0f}",
                        str(r[f"holds_over_1ms_{policy}"]),
                        str(r[f"holds_over_10ms_{policy}"]),
                    ],
                    left=2,
                )
            )
    out.append("(delta: model/published for contended; holds over 1 ms and 10 ms")
    out.append(" count whole log2 buckets at or above the bound)")
    return "\n".join(out) + "\n"


def tables(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Return the rows with the delta's error, and every hold histogram."""
    holds = []
    for r in rows:
        for policy in POLICIES:
            if f"hold_hist_{policy}" in r:
                holds += hist_rows(
                    r["machine"], "policy", policy, r[f"hold_hist_{policy}"]
                )
    flat = [with_errors(r, {"delta_pct": "delta_published"}) for r in rows]
    return {NAME: flat, f"{NAME}_holds": holds}


POLICY_AXIS = "relinquish policy"
HOLD_AXIS = "zone->lock hold (µs, log2 buckets)"


def _case(machine: str, args: str, width: int = 48) -> str:
    """Return a stress-ng case's name, its machine and arguments, wrapped.

    An option stays on one line with its value (a no-break space between).
    """
    bound = re.sub(r"(-\S+) (?!-)", "\\1\u00a0", args)
    return textwrap.fill(f"{machine}: {bound}", width, break_on_hyphens=False)


def _policy_bars(
    row: dict[str, Any], key: str, ylabel: str, scale: float = 1.0
) -> charts.Panel:
    """Return a panel of one case: KEY_<policy> of each policy as a bar."""
    policies = [p for p in POLICIES if f"{key}_{p}" in row]
    series = [
        charts.model(charts.placed([row], [i]), "x", f"{key}_{p}", p, scale, "bar")
        for i, p in enumerate(policies)
    ]
    return charts.Panel(
        _case(row["machine"], row["args"]),
        POLICY_AXIS,
        ylabel,
        series,
        xticks=charts.categories(policies),
    )


def _hold_histograms(row: dict[str, Any]) -> charts.Panel:
    """Return a panel of one case: each policy's zone->lock holds per log2 bucket."""
    series = [
        charts.Series(
            p,
            *charts.log2_buckets(row[f"hold_hist_{p}"], trim=True),
            style="steps",
            lw=5.0 - 1.8 * i,  # equal histograms of two policies both show
        )
        for i, p in enumerate(POLICIES)
        if row.get(f"hold_hist_{p}")
    ]
    return charts.Panel(
        _case(row["machine"], row["args"]),
        HOLD_AXIS,
        "zone->lock holds (count per bucket)",
        series,
        xscale="log",
        yscale="log",
    )


def _deltas(
    rows: list[dict[str, Any]], reference: list[dict[str, str]], compared: str
) -> charts.Panel:
    """Return each case's change from off: the model's policies, every published row.

    The published rows compare contended with off in each of stress-ng's
    metrics (COMPARED is the one the model's rows are); their bars are the
    run-to-run variation the thread gives.
    """
    cases = {r["args"]: _case(r["machine"], r["args"], 24) for r in rows}
    for r in reference:
        args = r["stress_ng_args"]
        cases.setdefault(args, _case(r["machine"], args, 24))
    where = {args: i for i, args in enumerate(cases)}
    spots = iter(charts.offsets(2 + len({r["metric"] for r in reference})))
    series = []
    for policy in POLICIES[1:]:
        off = next(spots)
        placed = charts.placed(rows, [where[r["args"]] + off for r in rows])
        series.append(
            charts.model(placed, "x", f"delta_{policy}_pct", policy, style="points")
        )
    for metric, group in charts.grouped(reference, "metric").items():
        off = next(spots)
        placed = charts.placed(group, [where[r["stress_ng_args"]] + off for r in group])
        key = "contended" if metric == compared else f"contended, {metric}"
        series.append(
            charts.published(
                placed, "x", "delta_pct", key, style="points", err="variation_pct"
            )
        )
    return charts.Panel(
        "change of each policy from off",
        "stress-ng case",
        "bogo ops/s change from off (%)",
        series,
        xticks=charts.categories(list(cases.values())),
        zero_line=True,
    )


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot per case the bogo ops/s, longest hold and holds; and the deltas from off."""
    exp = load_experiment(NAME)
    reference = reference_rows(exp["reference"])
    title = f"{NAME}: stress-ng vm, zone->lock relinquished in free_pcppages_bulk"
    return [
        *charts.draw(
            charts.Figure(
                out / f"{NAME}_bogo_ops",
                f"{title}: throughput and longest hold",
                [
                    *(
                        _policy_bars(r, "bogo_ops_s", "stress-ng vm (bogo ops/s)")
                        for r in rows
                    ),
                    *(
                        _policy_bars(r, "max_hold_us", "longest zone->lock hold (µs)")
                        for r in rows
                    ),
                ],
                ncols=len(rows),
                keys=POLICIES,
            )
        ),
        *charts.draw(
            charts.Figure(
                out / f"{NAME}_hold_times",
                f"{title}: zone->lock holds",
                [_hold_histograms(r) for r in rows],
                keys=POLICIES,
            )
        ),
        *charts.draw(
            charts.Figure(
                out / f"{NAME}_delta",
                f"{title}: change from off",
                [_deltas(rows, reference, exp["metric"])],
                size=(7.5, 3.8),
                published_note="published, contended (bars: run-to-run variation)",
                keys=POLICIES,
            )
        ),
    ]


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md table: the deltas and the longest holds."""
    lines = [
        *heading(NAME),
        "bogo ops/s (real) change from off to contended (model / published).",
        "",
    ]
    cells = [
        [
            r["machine"],
            r["args"],
            f"{r['delta_pct']:+.3f}% / " + opt(r["delta_published"], "+.3f", "%"),
            opt(r.get("delta_batched_pct"), "+.3f", "%"),
            f"{r['max_hold_off_us']:.0f} -> {r['max_hold_contended_us']:.0f}",
            f"{r['max_hold_us_off']:.0f} / {r['max_hold_us_contended']:.0f}"
            + (
                f" / {r['max_hold_us_batched']:.0f}"
                if "max_hold_us_batched" in r
                else ""
            ),
        ]
        for r in rows
    ]
    lines += md_table(
        [
            "machine",
            "stress-ng",
            "delta",
            "delta batched",
            "max free hold us",
            "max zone->lock hold us (off / contended / batched)",
        ],
        cells,
    )
    lines.append("")
    return lines
