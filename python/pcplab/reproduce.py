"""`pcplab reproduce`: run the reference experiments and write the report folder.

Each experiment of pcplab/experiments/*.toml is run (sim engine, or this
host's kernel for `host`), printed in its thread's layout beside the
published figures of pcplab/reference/*.csv (pcplab.data says how to read
others), and written into the report folder (CSV, JSON, PNG, index.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from pcplab import data, fidelity, machines, report, sweep
from pcplab.errors import BadInput
from pcplab.inputs import AsciiIntRange, check_output_dir

MIB = 1 << 20
NAMES = (*fidelity.EXPERIMENTS, "host")


def _mem_available() -> int:
    """Return MemAvailable in bytes."""
    from pcplab.memguard import mem_available_bytes

    return mem_available_bytes()


def host_experiment(
    quick: bool, workers: int, *, scheduler: Any = None
) -> list[dict[str, Any]]:
    """Run page_fault1 and mmap_fill on this kernel per high fraction, and the model."""
    exp = fidelity.load_experiment("host")
    mode = exp["quick" if quick else "full"]
    cpus = os.cpu_count() or 1
    size = max(16, int(_mem_available() * exp["memory_share"] / cpus / MIB))
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
            kernel = sweep.run_specs([{**spec, "engine": "host"}], 1, desc="host")[0]
            model = sweep.run_specs(
                [{**spec, "engine": exp["model_engine"]}],
                workers,
                scheduler=scheduler,
                desc="host model",
            )[0]
            for engine_name, res in (("host", kernel), (exp["model_engine"], model)):
                lat = (res.get("latency_ns") or {}).get("rmqueue_bulk") or {}
                if not lat:  # the kernel's refills from tracepoint bursts
                    refill = (res.get("tracing") or {}).get("refill") or {}
                    lat = refill.get("span_ns") or {}
                rows.append(
                    {
                        "workload": workload,
                        "high_fraction": fraction,
                        "engine": engine_name,
                        "pages_per_s": res["throughput"]["pages_per_s"],
                        "rmqueue_bulk_avg_ns": lat.get("avg"),
                        "rmqueue_bulk_p99_ns": lat.get("p99"),
                        "log2_hist": lat.get("log2_hist") or [],
                    }
                )
    return rows


def _use_reference(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
    """Check --reference (or $PCPLAB_REFERENCE) and use it for the command."""
    ctx.with_resource(data.reference_from(value))
    data.experiments_dir()  # a bad $PCPLAB_EXPERIMENTS is refused here too


def reference_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --reference DIR to COMMAND; a DIR without machines.csv is refused."""
    return click.option(
        "--reference",
        metavar="DIR",
        expose_value=False,
        callback=_use_reference,
        help="Read the published figures from DIR (default: $PCPLAB_REFERENCE, "
        "else the package's copy).",
    )(command)


def _runner(name: str) -> Callable[..., list[dict[str, Any]]]:
    """Return the function that runs experiment NAME."""
    return host_experiment if name == "host" else fidelity.EXPERIMENTS[name]


def check_names(names: Sequence[str]) -> list[str]:
    """Expand "all" and refuse unknown experiment names."""
    if not names or "all" in names:
        return list(NAMES)
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise BadInput(
            f"unknown experiment {', '.join(unknown)}; allowed: all, {', '.join(NAMES)}"
        )
    return list(dict.fromkeys(names))


def run_experiments(
    names: Sequence[str],
    *,
    quick: bool,
    jobs: int,
    scheduler: Any = None,
    extra_machines: Sequence[str] = (),
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Run the named experiments; return their rows and notes on skipped ones."""
    results: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, str] = {}
    for name in check_names(names):
        if name == "host" and os.geteuid() != 0:
            notes[name] = (
                "skipped: the host experiment sweeps vm.percpu_pagelist_high_fraction"
                " and needs root; run pcplab reproduce host as root"
            )
            continue
        options: dict[str, Any] = {"scheduler": scheduler}
        if name == "aaron2018" and extra_machines:
            options["extra_machines"] = extra_machines
        results[name] = _runner(name)(quick, jobs, **options)
    return results, notes


def write(
    out: Path,
    results: dict[str, list[dict[str, Any]]],
    notes: dict[str, str],
    header: str,
) -> tuple[dict[str, str], Path]:
    """Write the report folder OUT; return the printed texts and index.md."""
    out.mkdir(parents=True, exist_ok=True)
    texts, files = {}, {}
    for name, rows in results.items():
        texts[name] = report.render_text(name, rows, fidelity.load_experiment(name))
        files[name] = report.write_experiment(name, rows, texts[name], out)
    index = report.write_index(out, results, texts, files, notes, header)
    return texts, index


@click.command("reproduce", short_help="Run the reference experiments; write a report.")
@click.argument("names", nargs=-1)
@click.option("--quick", is_flag=True, help="Fewer rows, shorter runs.")
@click.option(
    "--out",
    default="report",
    show_default=True,
    metavar="DIR",
    help="The report folder.",
)
@click.option(
    "--jobs",
    type=AsciiIntRange(1),
    default=os.cpu_count() or 1,
    show_default=True,
    help="Parallel runs.",
)
@click.option(
    "--scheduler", metavar="ADDRESS", help="Run on the Dask cluster at ADDRESS."
)
@click.option(
    "--machine",
    "extra_machines",
    multiple=True,
    metavar="NAME",
    help="Also run aaron2018's grid on this profile (model only).",
)
@reference_option
def reproduce_command(
    names: tuple[str, ...],
    quick: bool,
    out: str,
    jobs: int,
    scheduler: str | None,
    extra_machines: tuple[str, ...],
) -> None:
    """Run NAMES (or all) of the reference experiments; print and write the report.

    NAMES: all, aaron2018, ying2023, yafang2024, hahn2025, host.
    """
    chosen = check_names(names)
    for name in chosen:
        data.experiment_file(name)  # every spec is there before anything runs
    if extra_machines and "aaron2018" not in chosen:
        raise BadInput(
            "--machine adds machines to aaron2018's grid; run aaron2018 too "
            "(or all), or drop --machine"
        )
    for machine in extra_machines:
        machines.load_profile(machine)
    sweep.check_scheduler(scheduler)
    target = check_output_dir(out, "--out")
    start = time.monotonic()
    results, notes = run_experiments(
        names,
        quick=quick,
        jobs=jobs,
        scheduler=scheduler,
        extra_machines=extra_machines,
    )
    header = (
        f"Generated by `pcplab reproduce {' '.join(names) or 'all'}"
        f"{' --quick' if quick else ''}` in {time.monotonic() - start:.0f} s "
        f"({'Dask at ' + scheduler if scheduler else f'{jobs} local jobs'})."
    )
    texts, index = write(target, results, notes, header)
    for name in texts:
        click.echo(texts[name])
    for name, note in notes.items():
        click.echo(f"== {name}: {note}\n")
    click.echo(f"report: {index}")
