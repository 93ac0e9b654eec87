"""policies: every PCP policy against the 6.18 default, on three machines.

Not a thread's experiment: issue 12's policy lab. Each case of the TOML
(page_fault1, mmap_fill, stress_vm, page_fault1 with cross-CPU free in
pairs and 3 to 1: allocator purge threads, and the mass exit) runs on
each machine under every policy the engines list (src/mm/policies/); a
row gives throughput, zone->lock contention, its longest hold and
rmqueue_bulk's 99th percentile, and each against the default policy's.
Nothing is published, so nothing is scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pcplab import charts, engine, machines
from pcplab.experiments._common import (
    load_experiment,
    mode_table,
    own_name,
    run_specs,
    sim_spec,
    timing,
)
from pcplab.headers import RAN, ran
from pcplab.render import line

NAME = own_name(__name__)
ORDER = 9000  # after the threads, before this host's kernel


def _tasks(machine: str, table: dict[str, Any]) -> int | None:
    """Return the task count of a quick run (at most max_tasks), else None."""
    cap = table.get("max_tasks")
    if cap is None:
        return None
    topology = machines.load_profile(machine)["topology"]
    cpus = topology.get("cpus") or (
        topology["sockets"] * topology["cores_per_socket"] * topology.get("smt", 1)
    )
    tasks = min(int(cap), int(cpus))
    return tasks - tasks % 4  # cross_free groups: pairs, and 3 to 1


def _figures(res: dict[str, Any]) -> dict[str, float | None]:
    """Return the figures a row keeps of one run."""
    rmqueue = res["latency_ns"]["rmqueue_bulk"]
    return {
        "mpages_per_s": res["throughput"]["pages_per_s"] / 1e6,
        "zone_lock_pct": res["contention"]["zone_lock_pct"],
        "zone_hold_max_us": res["lock_hold_ns"]["zone_lock"]["max"] / 1e3,
        "rmqueue_bulk_p99_us": rmqueue["p99"] / 1e3 if rmqueue["count"] else None,
    }


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Run every case on every machine under every policy."""
    exp = load_experiment(NAME)
    table = mode_table(exp, quick)
    policies = [p["name"] for p in engine.list_policies()]
    points, specs = [], []
    for machine in exp["machines"]:
        tasks = _tasks(machine, table)
        for case in exp["cases"]:
            keys = {k: v for k, v in case.items() if k != "name"}
            if tasks is not None:
                keys["tasks"] = tasks
            for policy in policies:
                points.append((machine, case["name"], policy))
                specs.append(
                    sim_spec(
                        machine, **exp["spec"], **keys, **timing(table), policy=policy
                    )
                )
    results = run_specs(NAME, specs, workers, scheduler)
    rows = [
        {"machine": m, "case": c, "policy": p, RAN: ran(res), **_figures(res)}
        for (m, c, p), res in zip(points, results, strict=True)
    ]
    base = {
        (r["machine"], r["case"]): r for r in rows if r["policy"] == exp["baseline"]
    }
    for r in rows:
        b = base[(r["machine"], r["case"])]
        r["throughput_vs_default_pct"] = (
            100 * (r["mpages_per_s"] / b["mpages_per_s"] - 1)
            if b["mpages_per_s"]
            else None
        )
        r["zone_lock_vs_default_pts"] = r["zone_lock_pct"] - b["zone_lock_pct"]
    return rows


def _cell(value: float | None, fmt: str) -> str:
    """Format a figure, n/a where it did not occur."""
    return "n/a" if value is None else f"{value:{fmt}}"


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return one line per machine, case and policy."""
    layout = spec["layout"]
    out = [layout]
    for r in rows:
        out.append(
            line(
                layout,
                [
                    r["machine"],
                    r["case"],
                    r["policy"],
                    _cell(r["mpages_per_s"], ".2f"),
                    _cell(r["zone_lock_pct"], ".2f"),
                    _cell(r["zone_hold_max_us"], ".0f"),
                    _cell(r["rmqueue_bulk_p99_us"], ".0f"),
                ],
                left=3,
            )
        )
    out.append(
        "rmqueue_bulk p99 n/a: no rmqueue_bulk call (pcp-buddy refills by "
        "claiming whole pageblocks)"
    )
    return "\n".join(out)


# The figures: (stem, title, [(row key, axis label, scale)]).
FIGURES = (
    (
        "throughput",
        "throughput and zone->lock contention",
        [
            ("mpages_per_s", "throughput (M pages/s)", 1.0),
            ("zone_lock_pct", "zone->lock contention (% of CPU time)", 1.0),
        ],
    ),
    (
        "holds",
        "the longest zone->lock hold and rmqueue_bulk's 99%",
        [
            ("zone_hold_max_us", "longest zone->lock hold (µs)", 1.0),
            ("rmqueue_bulk_p99_us", "rmqueue_bulk 99th percentile (µs)", 1.0),
        ],
    ),
)


def _panel(rows: list[dict[str, Any]], machine: str, key: str, label: str) -> Any:
    """Return one machine's panel of KEY: a bar per case and policy."""
    mine = [r for r in rows if r["machine"] == machine]
    cases = list(charts.grouped(mine, "case"))
    policies = list(charts.grouped(mine, "policy"))
    series = []
    for policy, offset in zip(policies, charts.offsets(len(policies)), strict=True):
        picked = [r for r in mine if r["policy"] == policy]
        xs = [cases.index(r["case"]) + offset for r in picked]
        bars = charts.model(charts.placed(picked, xs), "x", key, policy, style="bar")
        bars.width = 0.8 / len(policies)
        if any(y is not None for y in bars.ys):  # pcp-buddy calls no rmqueue_bulk
            series.append(bars)
    return charts.Panel(
        machine, "case", label, series, xticks=charts.categories(cases), from_zero=True
    )


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot each figure of FIGURES: a panel per machine and metric."""
    machines_ = list(charts.grouped(rows, "machine"))
    policies = list(charts.grouped(rows, "policy"))
    paths: list[Path] = []
    for stem, title, metrics in FIGURES:
        panels = [
            _panel(rows, machine, key, label)
            for key, label, _ in metrics
            for machine in machines_
        ]
        paths += charts.draw(
            charts.Figure(
                out / f"{NAME}_{stem}",
                f"{NAME}: {title}, each PCP policy",
                panels,
                ncols=len(machines_),
                keys=policies,
            )
        )
    return paths
