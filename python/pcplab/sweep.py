"""Grids of engine runs over any spec keys, on local cores or a Dask cluster."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import click

from pcplab import engine, machines, progress
from pcplab.errors import BadInput
from pcplab.inputs import DECIMAL, FLOAT, INTEGER, AsciiIntRange, check_output_file

# A Dask scheduler address: [scheme://]host[:port], or inproc://NAME.
SCHEDULER = re.compile(
    r"(?:(?:tcp|tls|ws|wss|ucx)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)"
    r"(?::(?P<port>[0-9]{1,5}))?/?|inproc://\S+"
)
# Keys whose values stay strings (a kernel generation "6.6" is not a number).
STRING_KEYS = ("workload", "machine", "mode", "kernel", "relinquish", "placement")


def _value(text: str) -> Any:
    """Read one grid value: an int, a float, true/false, or a string.

    Only ASCII digits make a number: '４' stays a string, which the engine
    refuses where it wants a number.
    """
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if INTEGER.fullmatch(text):
        return int(text)
    if DECIMAL.fullmatch(text) and math.isfinite(float(text)):
        return float(text)
    return text


def check_scheduler(address: str | None) -> None:
    """Refuse a --scheduler that is no Dask address, or when Dask is missing."""
    if address is None:
        return
    match = SCHEDULER.fullmatch(address)
    port = match and match.group("port")
    if not match or (port and not 1 <= int(port) <= 65535):
        raise BadInput(
            f"--scheduler {address!r} is not a Dask scheduler address; give "
            "[tcp://]HOST[:PORT] with PORT 1..65535, e.g. tcp://10.0.0.1:8786"
        )
    if importlib.util.find_spec("distributed") is None:
        raise BadInput(
            "--scheduler needs dask.distributed; install it with "
            "pip install 'pcplab[dask]', or drop --scheduler"
        )


def parse_param(text: str) -> tuple[str, list[Any]]:
    """Parse "batch=31,63,127" into ("batch", [31, 63, 127])."""
    key, sep, values = text.partition("=")
    parts = [part for part in values.split(",") if part.strip()]
    if not sep or not key.strip() or not parts:
        raise BadInput(
            f"--param {text!r} is not KEY=V1,V2,...; give e.g. batch=31,63,127"
        )
    key = key.strip()
    if key in STRING_KEYS:
        return key, [part.strip() for part in parts]
    return key, [_value(part) for part in parts]


def grid(params: Sequence[tuple[str, Sequence[Any]]]) -> list[dict[str, Any]]:
    """Return the cartesian product of the params as a list of key dicts."""
    keys = [key for key, _ in params]
    return [
        dict(zip(keys, combo, strict=True))
        for combo in itertools.product(*(values for _, values in params))
    ]


def materialize(spec: dict[str, Any]) -> dict[str, Any]:
    """Return SPEC ready for an engine: a sim machine named by profile is loaded."""
    spec = dict(spec)
    if isinstance(spec.get("machine"), str):
        spec["machine"] = machines.load_profile(spec["machine"])
    return spec


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one spec on its engine (the host engine through its front end)."""
    spec = materialize(spec)
    if spec.get("engine") == "host":
        from pcplab.host.cli import execute_run

        return execute_run(spec)
    return engine.run(spec)


def _run_dask(
    specs: list[dict[str, Any]], scheduler: Any, bar: Any
) -> list[dict[str, Any]]:
    """Run the specs on a Dask cluster at SCHEDULER (an address or a Client)."""
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise BadInput(
            "--scheduler needs dask.distributed; install it with "
            "pip install 'pcplab[dask]', or drop --scheduler"
        ) from None
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = client.map(run_one, specs, pure=False)
        for _ in dask_completed(futures):
            bar.update()
        return client.gather(futures)
    finally:
        if own:
            client.close()


def run_specs(
    specs: Iterable[dict[str, Any]],
    jobs: int = 1,
    *,
    scheduler: Any = None,
    desc: str = "runs",
) -> list[dict[str, Any]]:
    """Run every spec, JOBS at a time (or on a Dask cluster); results in order."""
    specs = list(specs)
    bar = progress.bar(len(specs), desc)
    try:
        if scheduler is not None:
            return _run_dask(specs, scheduler, bar)
        results: list[Any] = [None] * len(specs)
        if jobs <= 1:  # in this thread (the host engine handles signals here)
            for i, spec in enumerate(specs):
                results[i] = run_one(spec)
                bar.update()
            return results
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(run_one, s): i for i, s in enumerate(specs)}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update()
        return results
    finally:
        bar.close()


def _metrics(result: dict[str, Any]) -> dict[str, Any]:
    """Return the headline figures of one run as a flat row."""
    from pcplab.api import Result

    flat = Result(result).flat()
    keep = (
        "throughput.ops_per_s",
        "throughput.pages_per_s",
        "contention.zone_lock_pct",
        "contention.lru_lock_pct",
        "latency_ns.rmqueue_bulk.avg",
        "latency_ns.rmqueue_bulk.p99",
        "latency_ns.free_pcppages_bulk.avg",
        "latency_ns.free_pcppages_bulk.p99",
        "lock_hold_ns.zone_lock.max",
    )
    return {k: flat.get(k) for k in keep}


def _step_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """Return rmqueue_bulk's average in each scale-max schedule step, if any."""
    return {
        f"scale_max_steps.{i}.rmqueue_bulk.avg": step["rmqueue_bulk"]["avg"]
        for i, step in enumerate(result.get("scale_max_steps") or [])
    }


@click.command("sweep", short_help="Run a grid over any spec keys.")
@click.option(
    "--engine",
    "engine_name",
    default="sim",
    show_default=True,
    metavar="E",
    help="Engine: native, sim, host (if built).",
)
@click.option("--workload", required=True, metavar="W", help="Workload.")
@click.option("--machine", metavar="NAME", help="Machine profile (sim).")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=V1,V2",
    help="A spec key and its values; the grid is the product of all --param.",
)
@click.option("--duration", type=FLOAT, metavar="S", help="Measured seconds.")
@click.option("--warmup", type=FLOAT, metavar="S", help="Seconds before measuring.")
@click.option(
    "--scale-max-schedule",
    metavar="T:V[,T:V...]",
    help="Change pcp_batch_scale_max in every run: to V (0..6) at T seconds "
    "into the measured phase, e.g. 0:5,0.5:0.",
)
@click.option(
    "--jobs", type=AsciiIntRange(1), default=1, show_default=True, help="Parallel runs."
)
@click.option("--scheduler", metavar="ADDRESS", help="Run on this Dask cluster.")
@click.option("--json", "json_out", metavar="FILE", help="Write the results as JSON.")
@click.option("--csv", "csv_out", metavar="FILE", help="Write the rows as CSV.")
def sweep_command(
    engine_name: str,
    workload: str,
    machine: str | None,
    params: tuple[str, ...],
    duration: float | None,
    warmup: float | None,
    scale_max_schedule: str | None,
    jobs: int,
    scheduler: str | None,
    json_out: str | None,
    csv_out: str | None,
) -> None:
    """Run WORKLOAD at every point of the --param grid; print one row per point."""
    from pcplab.inputs import parse_scale_max_schedule
    from pcplab.report import write_csv
    from pcplab.summary import format_table

    schedule = (
        None
        if scale_max_schedule is None
        else parse_scale_max_schedule(scale_max_schedule)
    )
    engine.engine_binary(engine_name)
    check_scheduler(scheduler)
    parsed = [parse_param(p) for p in params]
    base: dict[str, Any] = {"engine": engine_name, "workload": workload}
    if machine is not None:
        machines.load_profile(machine)  # refuse an unknown profile early
        base["machine"] = machine
    if duration is not None:
        base["duration_s"] = duration
    if warmup is not None:
        base["warmup_s"] = warmup
    if schedule is not None:
        base["scale_max_schedule"] = schedule
    points = grid(parsed)
    specs = [{**base, **point} for point in points]
    if schedule is not None and any(s.get("engine") == "host" for s in specs):
        from pcplab.host.cli import refuse_host_scale_max_schedule

        refuse_host_scale_max_schedule()
    # The engine knows its spec keys and ranges: let it check every point
    # before anything runs (one line and exit 2 on the first bad one).
    for spec in specs:
        engine.resolve(materialize(spec))
    check_output_file(json_out, "--json")
    check_output_file(csv_out, "--csv")
    results = run_specs(specs, jobs, scheduler=scheduler, desc="sweep")
    rows = [
        {**p, **_metrics(r), **_step_metrics(r)}
        for p, r in zip(points, results, strict=True)
    ]
    if json_out:
        data = [{"point": p, "result": r} for p, r in zip(points, results, strict=True)]
        Path(json_out).write_text(json.dumps(data, indent=1) + "\n")
    if csv_out:
        write_csv(Path(csv_out), rows)
    headers = list(rows[0]) if rows else []
    table = [["" if v is None else v for v in row.values()] for row in rows]
    for line in format_table(headers, table, left=0):
        click.echo(line)
