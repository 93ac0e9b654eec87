"""host: this host's kernel over a high-fraction sweep, beside the model.

page_fault1 and mmap_fill on the running kernel (`--engine host`, root:
the sweep sets vm.percpu_pagelist_high_fraction) per fraction, each beside
the model of this host on the same spec: the sim on this host's calibrated
profile (`pcplab calibrate`) when one is on file, which the TOML's scores
hold to the kernel, else the TOML's model_engine, unscored. There is no
published figure, so no section of docs/fidelity.md and nothing fitted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pcplab import charts, machines, runs
from pcplab.experiments._common import load_experiment, own_name
from pcplab.headers import RAN, ran
from pcplab.memguard import mem_available_bytes
from pcplab.render import generic_text
from pcplab.results import per_call

NAME = own_name(__name__)
ORDER = 9999  # no thread: after every one
NEEDS_ROOT = "sweeps vm.percpu_pagelist_high_fraction"
MIB = 1 << 20


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Run page_fault1 and mmap_fill on this kernel per high fraction, and the model."""
    exp = load_experiment(NAME)
    mode = exp["quick" if quick else "full"]
    cpus = os.cpu_count() or 1
    size = max(16, int(mem_available_bytes() * exp["memory_share"] / cpus / MIB))
    rows = []
    for workload in exp["workloads"]:
        base = {
            **exp["spec"],
            "workload": workload,
            "tasks": cpus,
            "duration_s": mode["duration_s"],
        }
        if workload == "mmap_fill":
            base["size_mib"] = size
        for fraction in mode["high_fraction"]:
            spec = {**base, "high_fraction": fraction}
            # The kernel's sysctl is global: host runs go one at a time.
            kernel = runs.run_specs([{**spec, "engine": "host"}], 1, desc="host")[0]
            mine = model_spec(exp, spec)
            model = runs.run_specs(
                [mine], workers, scheduler=scheduler, desc="host model"
            )[0]
            rows += [
                row(workload, fraction, engine_name, res)
                for engine_name, res in (("host", kernel), (mine["engine"], model))
            ]
    return rows


def model_spec(exp: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Return the model's side of SPEC: the calibrated sim if on file, else native."""
    if exp.get("calibrated") in machines.profile_paths():
        return {**spec, "engine": "sim", "machine": exp["calibrated"]}
    return {**spec, "engine": exp["model_engine"]}


def row(workload: str, fraction: int, engine_name: str, res: dict) -> dict[str, Any]:
    """Return one row: an engine's throughput and rmqueue_bulk in result RES.

    The kernel's rmqueue_bulk is the refill bursts of its tracepoint where
    it has no function timing; a run without a refill has no average (None,
    not 0 ns).
    """
    lat = (res.get("latency_ns") or {}).get("rmqueue_bulk") or {}
    if not lat:  # the kernel's refills from tracepoint bursts
        refill = (res.get("tracing") or {}).get("refill") or {}
        lat = refill.get("span_ns") or {}
    lat = per_call(lat)
    return {
        "workload": workload,
        "high_fraction": fraction,
        "engine": engine_name,
        "instrument": measured_with(res),
        RAN: ran(res),
        "pages_per_s": res["throughput"]["pages_per_s"],
        "rmqueue_bulk_avg_ns": lat.get("avg"),
        "rmqueue_bulk_p99_ns": lat.get("p99"),
        "log2_hist": lat.get("log2_hist") or [],
    }


def measured_with(res: dict) -> str:
    """Return what the host engine measured the kernel with ("none" elsewhere).

    Declared, not charged: the host engine measures, and the kernel it runs
    on pays for the measuring itself.
    """
    used = []
    method = (res.get("tracing") or {}).get("method")
    if method:
        used.append(f"{method} (traced phase)")
    if res.get("lock_contention"):
        used.append("perf lock contention (measured phase)")
    return ", ".join(used) or "none"


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return the rows' scalar fields as an aligned table, n/a explained."""
    table = generic_text(rows)
    if any(r["rmqueue_bulk_avg_ns"] is None for r in rows):
        table += "rmqueue_bulk n/a: no refill in the measured window\n"
    return table


# Each panel row: the row's key, its axis label, the factor to its unit.
FIGURES = (
    ("pages_per_s", "throughput (M pages/s)", 1e-6),
    ("rmqueue_bulk_avg_ns", "rmqueue_bulk average (µs)", 1e-3),
)


def _engine(engine: str) -> str:
    """Return the legend key of an engine: this kernel, or the model."""
    return "this kernel" if engine == "host" else f"model ({engine})"


def _panel(
    rows: list[dict[str, Any]], workload: str, figure: tuple[str, str, float]
) -> charts.Panel:
    """Return one figure of WORKLOAD against the high fraction, per engine."""
    key, ylabel, scale = figure
    fractions = sorted({r["high_fraction"] for r in rows})
    mine = [r for r in rows if r["workload"] == workload]
    series = [
        charts.model(
            charts.placed(group, [fractions.index(r["high_fraction"]) for r in group]),
            "x",
            key,
            _engine(engine),
            scale,
        )
        for engine, group in charts.grouped(mine, "engine").items()
    ]
    return charts.Panel(
        workload,
        "vm.percpu_pagelist_high_fraction (0: the default)",
        ylabel,
        series,
        xticks=charts.categories([str(f) for f in fractions]),
        from_zero=True,
    )


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot this kernel beside the model: pages/s and rmqueue_bulk per fraction."""
    workloads = list(charts.grouped(rows, "workload"))
    return charts.draw(
        charts.Figure(
            out / NAME,
            f"{NAME}: this kernel beside the model over the high fraction",
            [_panel(rows, w, f) for f in FIGURES for w in workloads],
            ncols=len(workloads),
            keys=["this kernel"],
            notes=[
                "this kernel's rmqueue_bulk: refill bursts of",
                "kmem:mm_page_alloc_zone_locked where the",
                "kernel has no kprobes (docs/host-engine.md)",
            ],
        )
    )
