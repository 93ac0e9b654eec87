"""`pcplab sweep`: a grid over any spec keys, one table row per point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from pcplab import engine, machines
from pcplab.cli_examples import EXAMPLES
from pcplab.cli_options import (
    engine_option,
    jobs_option,
    schedule_option,
    timing_options,
    workload_option,
)
from pcplab.comparison import FORMATS
from pcplab.inputs import check_output_file
from pcplab.policies import PolicyOption
from pcplab.repeat_cli import repeat_options
from pcplab.repeats import expand, regroup, runs_per_point
from pcplab.runs import (
    check_host_placement,
    check_scheduler,
    grid,
    materialize,
    parse_params,
    run_specs,
)
from pcplab.spec_keys import option


def _metrics(result: dict[str, Any]) -> dict[str, Any]:
    """Return the headline figures of one run as a flat row.

    Every metric the LKP and mmtests layouts show (pcplab.comparison.METRICS):
    the table, its CSV and a comparison of the same runs carry the same ones.
    """
    from pcplab.comparison import metric_values
    from pcplab.results import flatten

    return metric_values(flatten(result))


def _step_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """Return rmqueue_bulk's average in each scale-max schedule step, if any."""
    return {
        f"scale_max_steps.{i}.rmqueue_bulk.avg": step["rmqueue_bulk"]["avg"]
        for i, step in enumerate(result.get("scale_max_steps") or [])
    }


@click.command(
    "sweep", short_help="Run a grid over any spec keys.", epilog=EXAMPLES["sweep"]
)
@engine_option("sim")
@workload_option()
@option("machine", "--machine", metavar="NAME", help="Machine profile (sim).")
@option("policy", "--policy", cls=PolicyOption, metavar="P")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=V1,V2",
    help="A spec key and its values; the grid is the product of all --param.",
)
@timing_options
@schedule_option()
@jobs_option(1)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Run on this Dask cluster (sim and native engines only).",
)
@repeat_options
@click.option(
    "--format",
    "layout",
    type=click.Choice(["table", *FORMATS, "runtest"]),
    help="table: a row per point; lkp: LKP's base ±%stddev %change new; mmtests: "
    "compare-kernels' Hmean/Amean, Stddev, CoeffVar; runtest: will-it-scale "
    "runtest.py's CSV (a grid of tasks and mode only; unmeasured cells empty). "
    "Default: lkp with --seeds/--repeat, else table.",
)
@click.option("--json", "as_json", is_flag=True, help="Print every run's JSON.")
@click.option(
    "--output", "json_out", metavar="FILE", help="Also write every run's JSON to FILE."
)
@click.option("--csv", "csv_out", metavar="FILE", help="Write the rows as CSV.")
def sweep_command(
    engine_name: str,
    workload: str,
    machine: str | None,
    policy: str | None,
    params: tuple[str, ...],
    duration: float | None,
    warmup: float | None,
    scale_max_schedule: str | None,
    jobs: int,
    scheduler: str | None,
    seeds: int | None,
    repeat: int | None,
    layout: str | None,
    as_json: bool,
    json_out: str | None,
    csv_out: str | None,
) -> None:
    """Run WORKLOAD at every point of the --param grid; print one row per point."""
    from pcplab.report import write_csv
    from pcplab.spec_keys import parse_scale_max_schedule

    schedule = (
        None
        if scale_max_schedule is None
        else parse_scale_max_schedule(scale_max_schedule)
    )
    engine.engine_binary(engine_name)
    check_scheduler(scheduler)
    parsed = parse_params(params, "--param")
    base: dict[str, Any] = {"engine": engine_name, "workload": workload}
    if machine is not None:
        machines.load_profile(machine)  # refuse an unknown profile early
        base["machine"] = machine
    if policy is not None:
        base["policy"] = policy
    if duration is not None:
        base["duration_s"] = duration
    if warmup is not None:
        base["warmup_s"] = warmup
    if schedule is not None:
        base["scale_max_schedule"] = schedule
    points = grid(parsed)
    if layout == "runtest":
        from pcplab.runtest import check_grid

        check_grid(points)
    specs = [{**base, **point} for point in points]
    # run_specs refuses this too, but only after every point is resolved.
    check_host_placement(specs, scheduler, jobs)
    runs = runs_per_point([s["engine"] for s in specs], seeds, repeat)
    layout = layout or ("lkp" if runs > 1 else "table")
    if schedule is not None and any(s.get("engine") == "host" for s in specs):
        from pcplab.host.execute import refuse_host_scale_max_schedule

        refuse_host_scale_max_schedule()
    # The engine knows its spec keys and ranges: let it check every point
    # before anything runs (one line and exit 2 on the first bad one).
    for spec in specs:
        engine.resolve(materialize(spec))
    check_output_file(json_out, "--output")
    check_output_file(csv_out, "--csv")
    results = run_specs(
        expand(specs, runs, seeds is not None), jobs, scheduler=scheduler, desc="sweep"
    )
    per_point = regroup(results, runs)
    rows = [
        {**p, **({"run": i + 1} if runs > 1 else {}), **_metrics(r), **_step_metrics(r)}
        for p, group in zip(points, per_point, strict=True)
        for i, r in enumerate(group)
    ]
    data = [
        {"point": p, "run": i + 1, "result": r}
        for p, group in zip(points, per_point, strict=True)
        for i, r in enumerate(group)
    ]
    if json_out:
        Path(json_out).write_text(json.dumps(data, indent=1) + "\n")
    if csv_out:
        write_csv(Path(csv_out), rows)
    if as_json:
        click.echo(json.dumps(data, indent=1))
    else:
        click.echo(_render(layout, points, per_point, rows))


def _labels(points: list[dict[str, Any]]) -> list[str]:
    """Name each grid point by the keys that vary: "batch=31,kernel=6.6".

    A --param of one value holds for every point; the header says it.
    """
    varying = [k for k in points[0] if len({str(p[k]) for p in points}) > 1]
    keys = varying or list(points[0])
    return [",".join(f"{k}={p[k]}" for k in keys) or "base" for p in points]


def _render(
    layout: str,
    points: list[dict[str, Any]],
    per_point: list[list[dict[str, Any]]],
    rows: list[dict[str, Any]],
) -> str:
    """Return the sweep in LAYOUT: a row per run, or the points compared."""
    from pcplab import headers
    from pcplab.comparison import report
    from pcplab.summary import format_table

    if layout == "runtest":
        from pcplab.runtest import runtest_csv

        return runtest_csv(per_point)
    if layout == "table":
        names = list(rows[0]) if rows else []
        table = [["" if v is None else v for v in row.values()] for row in rows]
        ran = headers.line([r for group in per_point for r in group])
        return "\n".join([f"pcplab sweep: {ran}", *format_table(names, table, left=0)])
    return report(layout, _labels(points), per_point)
