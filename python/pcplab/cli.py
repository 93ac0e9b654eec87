"""The pcplab command line: parse flags, build the engine's JSON, print results."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from pcplab import engine, fitted, interrupts, machines
from pcplab.cli_examples import EXAMPLES
from pcplab.cli_options import (
    engine_option,
    schedule_option,
    timing_options,
    workload_option,
)
from pcplab.errors import BadInput, EngineError, InvariantViolation, PcplabError
from pcplab.host import owner
from pcplab.host.cli import compare, host, run_on_host
from pcplab.inputs import (
    INT,
    check_output_file,
    parse_int_list,
)
from pcplab.memguard import check_memory, mem_available_bytes
from pcplab.model_cli import calibrate_command, fidelity_command, fit_command
from pcplab.policies import PolicyOption
from pcplab.repeat_cli import emit_repeated, repeat_options
from pcplab.repeats import run_repeated, runs_per_point
from pcplab.reproduce import reproduce_command
from pcplab.spec_keys import option, parse_scale_max_schedule
from pcplab.summary import (
    TRACED_FIGURES,
    figure,
    format_beside_untraced,
    format_summary,
    format_table,
)
from pcplab.sweep_cli import sweep_command
from pcplab.tune_cli import tune_command

MANUAL_FLAGS = {
    "managed_pages": "--managed-pages",
    "low_wmark": "--low-wmark",
    "cpus": "--cpus",
}
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 88}


def _emit_json(data: Any) -> None:
    """Print `data` as indented JSON on stdout."""
    click.echo(json.dumps(data, indent=2))


@click.group(context_settings=CONTEXT, invoke_without_command=True)
@click.version_option(package_name="pcplab", prog_name="pcplab")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Laboratory for the Linux page allocator's per-CPU page lists (PCP)."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
    elif ctx.invoked_subcommand != "host":  # `host` does it, but for `host restore`
        owner.recover()  # what an interrupted command left on this host, as root


def _host_rows(high_fraction: int | None, kernel: str | None) -> list[dict[str, Any]]:
    """Model every populated zone of this host and pair it with the kernel's view."""
    from pcplab import procfs_zoneinfo  # only this path reads /proc

    zones = [z for z in procfs_zoneinfo.read_host_zoneinfo() if z.managed > 0]
    if not zones:
        raise PcplabError("/proc/zoneinfo lists no zone with managed pages")
    live = procfs_zoneinfo.read_high_fraction()
    fraction = live if high_fraction is None else high_fraction
    request: dict[str, Any] = {"high_fraction": fraction, "zones": []}
    if kernel is not None:
        request["kernel"] = kernel
    for z in zones:
        request["zones"].append(
            {
                "node": z.node,
                "name": z.zone,
                "managed_pages": z.managed,
                "low_wmark": z.low,
                "cpus": procfs_zoneinfo.node_cpus(z.node),
            }
        )
    models = engine.pagesets(request).get("zones") or []
    if len(models) != len(zones):
        raise EngineError(f"pagesets replied {len(models)} zones for {len(zones)}")
    rows = []
    for z, asked, model in zip(zones, request["zones"], models, strict=True):
        first = min(z.pagesets, key=lambda p: p.cpu) if z.pagesets else None
        kernel_view = None
        mismatched = []
        if first is not None:
            kernel_view = {
                "cpu": first.cpu,
                "batch": first.batch,
                "high": first.high,
                "high_min": first.high_min,
                "high_max": first.high_max,
            }
            # Kernels before 6.7 show no high_min/high_max: compare high then.
            keys = ["batch"] + (
                ["high_min", "high_max"] if first.high_min is not None else ["high"]
            )
            mismatched = [k for k in keys if model.get(k) != kernel_view[k]]
        rows.append(
            {
                "node": z.node,
                "zone": z.zone,
                "managed_pages": z.managed,
                "low_wmark": z.low,
                "cpus": asked["cpus"],
                "high_fraction": fraction,
                "kernel_high_fraction": live,
                "model": {
                    k: model.get(k) for k in ("batch", "high", "high_min", "high_max")
                },
                "kernel": kernel_view,
                # The kernel's pagesets follow the live fraction only.
                "match": None
                if kernel_view is None or fraction != live
                else not mismatched,
                "mismatched": mismatched,
            }
        )
    return rows


def _print_host_rows(rows: list[dict[str, Any]]) -> None:
    """Print the host pagesets table: model values beside the kernel's."""

    def pair(row: dict[str, Any], key: str) -> str:
        kernel_value = (row["kernel"] or {}).get(key)
        shown = "n/a" if kernel_value is None else str(kernel_value)
        return f"{row['model'][key]}/{shown}"

    headers = [
        "node",
        "zone",
        "managed",
        "low",
        "cpus",
        "batch",
        "high_min",
        "high_max",
        "match",
    ]
    table = []
    for row in rows:
        if row["kernel"] is None:
            match = "n/a (no pageset)"
        elif row["match"] is None:
            match = f"n/a (kernel at {row['kernel_high_fraction']})"
        else:
            match = "yes" if row["match"] else "no: " + ",".join(row["mismatched"])
        table.append(
            [
                row["node"],
                row["zone"],
                row["managed_pages"],
                row["low_wmark"],
                row["cpus"],
                pair(row, "batch"),
                pair(row, "high_min"),
                pair(row, "high_max"),
                match,
            ]
        )
    fraction, live = rows[0]["high_fraction"], rows[0]["kernel_high_fraction"]
    click.echo(
        f"model/kernel pagesets (model: percpu_pagelist_high_fraction {fraction}; "
        f"kernel: first CPU's pageset in /proc/zoneinfo, fraction {live})"
    )
    for line in format_table(headers, table, left=2):
        click.echo(line)


@cli.command(
    short_help="The pcp batch and high of a zone, or of this host.",
    epilog=EXAMPLES["pagesets"],
)
@click.option(
    "--host",
    is_flag=True,
    help="Model every zone of this host (/proc/zoneinfo) beside the kernel's values.",
)
@click.option(
    "--managed-pages", type=INT, metavar="N", help="Managed pages of the zone."
)
@click.option(
    "--low-wmark", type=INT, metavar="L", help="Low watermark of the zone, in pages."
)
@click.option("--cpus", type=INT, metavar="C", help="CPUs of the zone's node.")
@option(
    "high_fraction",
    "--high-fraction",
    metavar="F",
    help="vm.percpu_pagelist_high_fraction (default 0; with --host the live value).",
)
@option("kernel", "--kernel")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def pagesets(
    host: bool,
    managed_pages: int | None,
    low_wmark: int | None,
    cpus: int | None,
    high_fraction: int | None,
    kernel: str | None,
    as_json: bool,
) -> None:
    """Compute pcp batch, high_min and high_max of a zone the kernel's way."""
    given = {"managed_pages": managed_pages, "low_wmark": low_wmark, "cpus": cpus}
    if host:
        extra = [MANUAL_FLAGS[k] for k, v in given.items() if v is not None]
        if extra:
            raise BadInput(
                f"--host reads the zones from /proc/zoneinfo; drop {', '.join(extra)}"
            )
        rows = _host_rows(high_fraction, kernel)
        if as_json:
            _emit_json(rows)
        else:
            _print_host_rows(rows)
        return
    missing = [MANUAL_FLAGS[k] for k, v in given.items() if v is None]
    if missing:
        raise BadInput(
            f"pagesets needs {', '.join(missing)}; give --managed-pages, "
            "--low-wmark and --cpus, or --host"
        )
    zone = {"node": 0, "name": "Normal", **given}
    request: dict[str, Any] = {"zones": [zone]}
    if kernel is not None:
        request["kernel"] = kernel
    if high_fraction is not None:
        request["high_fraction"] = high_fraction
    model = engine.pagesets(request)["zones"][0]
    answer = {k: model[k] for k in ("batch", "high_min", "high_max")}
    if as_json:
        _emit_json(answer)
        return
    headers = ["zone", "managed_pages", "low_wmark", "cpus", *answer]
    for line in format_table(
        headers, [[zone["name"], *given.values(), *answer.values()]]
    ):
        click.echo(line)


@cli.command(
    short_help="Run a workload; report throughput and latency.",
    epilog=EXAMPLES["run"],
)
@engine_option(
    engine.DEFAULT_ENGINE,
    "Engine (if built): the model on real threads, in virtual time, "
    "or the running kernel.",
)
@workload_option()
@option("tasks", "--tasks", metavar="N")
@option(
    "machine",
    "--machine",
    metavar="NAME",
    help="Machine profile for --engine sim (see 'pcplab machines').",
)
@timing_options
@option("kernel", "--kernel")
@option("batch", "--batch", metavar="B")
@option("high", "--high", metavar="H")
@option("high_fraction", "--high-fraction", metavar="F")
@option("scale_max", "--scale-max", metavar="S")
@schedule_option()
@option("relinquish", "--relinquish")
@option("no_free_scaling", "--no-free-scaling", is_flag=True)
@option("no_alloc_scaling", "--no-alloc-scaling", is_flag=True)
@option("pagevec_size", "--pagevec-size", metavar="N")
@option(
    "folios_put_release",
    "--folios-put-release/--no-folios-put-release",
    is_flag=True,
    default=None,
)
@option("config_debug_list", "--config-debug-list", is_flag=True)
@option("task_start", "--task-start")
@option("memory_mib", "--memory-mib", metavar="M")
@option("size_mib", "--size-mib", metavar="M")
@option("seed", "--seed", metavar="N")
@option("mode", "--mode")
@option("cross_free", "--cross-free", is_flag=True)
@option("cross_free_ratio", "--cross-free-ratio", metavar="N")
@option("nodes", "--nodes", metavar="N[,N...]")
@option("placement", "--placement")
@option("instrument", "--instrument", metavar="KIND[:F[,F...]]")
@click.option(
    "--lock-stats",
    type=click.Choice(["perf", "off"]),
    help="--engine host: lock contention of the measured phase with perf lock "
    "(root), or off; default perf where permitted, else off with the reason.",
)
@click.option(
    "--profile",
    "profile_with",
    type=click.Choice(["perf", "off"]),
    help="--engine host: perf-profile of the measured phase with perf record "
    "(root), or off, the default; the sim engine writes its model's own.",
)
@option("policy", "--policy", cls=PolicyOption, metavar="P")
@repeat_options
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON.")
@click.option("--output", metavar="FILE", help="Also write the result JSON to FILE.")
def run(
    engine_name: str,
    workload: str,
    tasks: int | None,
    machine: str | None,
    duration: float | None,
    warmup: float | None,
    kernel: str | None,
    batch: int | None,
    high: int | None,
    high_fraction: int | None,
    scale_max: int | None,
    scale_max_schedule: str | None,
    relinquish: str | None,
    no_free_scaling: bool,
    no_alloc_scaling: bool,
    config_debug_list: bool,
    task_start: str | None,
    pagevec_size: int | None,
    folios_put_release: bool | None,
    memory_mib: int | None,
    size_mib: int | None,
    seed: int | None,
    mode: str | None,
    cross_free: bool,
    cross_free_ratio: int | None,
    nodes: str | None,
    placement: str | None,
    instrument: str | None,
    lock_stats: str | None,
    profile_with: str | None,
    policy: str | None,
    seeds: int | None,
    repeat: int | None,
    as_json: bool,
    output: str | None,
) -> None:
    """Run a workload on an engine and report throughput, contention, latency.

    --instrument charges a tracer's own cost where the traced kernel pays it
    and shows the figures beside the same run untraced.
    """
    runs = runs_per_point([engine_name], seeds, repeat)
    if high is not None and high_fraction is not None:
        raise BadInput(
            "--high and --high-fraction exclude each other; give one of them"
        )
    schedule = (
        None
        if scale_max_schedule is None
        else parse_scale_max_schedule(scale_max_schedule)
    )
    engine.engine_binary(engine_name)  # refuse an engine that is not built
    check_output_file(output, "--output")
    if lock_stats is not None and engine_name != "host":
        raise BadInput(
            f"--lock-stats records the running kernel's locks with perf; the "
            f"{engine_name} engine reports its model's contention itself, so drop "
            "--lock-stats or use --engine host"
        )
    if profile_with is not None and engine_name != "host":
        raise BadInput(
            f"--profile records the running kernel with perf record; the "
            f"{engine_name} engine's result has its model's perf_profile (the sim's "
            "shares; the native's none), so drop --profile or use --engine host"
        )
    if instrument is not None and engine_name == "host":
        raise BadInput(
            "--instrument charges a modelled tracer's cost; the host engine is "
            "measured by the kernel's own tracepoints and perf lock, which its "
            "result declares, so drop --instrument or use --engine sim"
        )
    if schedule is not None and engine_name == "host":
        from pcplab.host.execute import refuse_host_scale_max_schedule

        refuse_host_scale_max_schedule()
    spec: dict[str, Any] = {"engine": engine_name, "workload": workload}
    if (engine_name == "sim") != (machine is not None):
        raise BadInput(
            "--machine goes with --engine sim (and sim needs it); "
            "see 'pcplab machines' for the profiles"
        )
    if machine is not None:
        spec["machine"] = machines.load_profile(machine)
    optional = {
        "tasks": tasks,
        "duration_s": duration,
        "warmup_s": warmup,
        "kernel": kernel,
        "batch": batch,
        "high": high,
        "high_fraction": high_fraction,
        "scale_max": scale_max,
        "relinquish": relinquish,
        "task_start": task_start,
        "memory_mib": memory_mib,
        "size_mib": size_mib,
        "seed": seed,
        "mode": mode,
        "placement": placement,
        "policy": policy,
        "pagevec_size": pagevec_size,
        "folios_put_release": folios_put_release,
        "cross_free_ratio": cross_free_ratio,
        "instrument": instrument,
    }
    spec.update({key: value for key, value in optional.items() if value is not None})
    if schedule is not None:
        spec["scale_max_schedule"] = schedule
    if no_free_scaling:
        spec["no_free_scaling"] = True
    if no_alloc_scaling:
        spec["no_alloc_scaling"] = True
    if config_debug_list:
        spec["config_debug_list"] = True
    if cross_free:
        spec["cross_free"] = True
    if nodes is not None:
        spec["nodes"] = parse_int_list(nodes, "--nodes", "0,1")
        repeated = sorted({n for n in spec["nodes"] if spec["nodes"].count(n) > 1})
        if repeated:
            raise BadInput(
                f"--nodes {nodes} names node {', '.join(map(str, repeated))} "
                "more than once; give each node once, e.g. --nodes 0,1"
            )
    if engine_name != "host":  # the host engine checks its own memory
        resolved = engine.resolve(spec)
        needed = resolved.get("memory_bytes")
        if isinstance(needed, bool) or not isinstance(needed, (int, float)):
            raise EngineError("the engine's resolve reply has no number memory_bytes")
        check_memory(int(needed), mem_available_bytes())
    outside_fit = None
    if machine is not None:  # said with the figures, once they are there
        outside_fit = fitted.outside(machine, str(resolved.get("kernel")))
    if runs > 1:
        results = run_repeated(
            spec, runs, seeds is not None, lock_stats, profile_with or "off"
        )
        if outside_fit:
            fitted.warn_outside(spec["machine"]["name"], outside_fit)
        emit_repeated(results, as_json, output)
        return
    if engine_name == "host":  # the running kernel: python/pcplab/host
        run_on_host(
            spec,
            as_json=as_json,
            output=output,
            lock_stats=lock_stats,
            profile_with=profile_with or "off",
        )
        return
    violation = None
    try:
        result = engine.run(spec)
    except InvariantViolation as exc:
        result, violation = exc.result, exc
    if outside_fit is not None:
        result["outside_fit"] = outside_fit
        fitted.warn_outside(spec["machine"]["name"], outside_fit)
    beside = None
    if result.get("instrument"):
        untraced_spec = {k: v for k, v in spec.items() if k != "instrument"}
        untraced = engine.run(untraced_spec)
        beside = format_beside_untraced(untraced, result)
        result["instrument"]["untraced"] = {
            ".".join(p for p in path if p is not None): figure(untraced, path)
            for path in TRACED_FIGURES
        }
    if output is not None:
        Path(output).write_text(json.dumps(result, indent=2) + "\n")
    if as_json:
        _emit_json(result)
    else:
        click.echo(format_summary(result))
        if beside is not None:
            click.echo("\n" + beside)
    if violation is not None:
        raise violation


@cli.command(
    "policies",
    short_help="List the model's PCP policies.",
    epilog=EXAMPLES["policies"],
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def policies_command(as_json: bool) -> None:
    """List the PCP policies of src/mm/policies/: what each decides.

    A policy is one file; `--policy NAME` on run, sweep and tune (or
    "policy" in a spec) runs the model with it.
    """
    from pcplab import policies

    if as_json:
        _emit_json(list(engine.list_policies()))
        return
    headers = ["policy", "decides", "needs", "summary"]
    for line in format_table(headers, policies.rows(), left=4):
        click.echo(line)


@cli.command(
    "machines",
    short_help="List the machine profiles of the sim engine.",
    epilog=EXAMPLES["machines"],
)
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def machines_command(name: str | None, as_json: bool) -> None:
    """List the machine profiles, or show NAME with the costs derived for it."""
    if name is None:
        rows = machines.describe()
        if as_json:
            _emit_json(rows)
            return
        headers = ["name", "cpus", "sockets", "nodes", "GHz", "memory", "cpu model"]
        table = [
            [
                r["name"],
                r["cpus"],
                r["sockets"],
                r["numa_nodes"],
                r["ghz"],
                f"{r['memory_gb']} GB",
                r["cpu_model"] or "-",
            ]
            for r in rows
        ]
        for line in format_table(headers, table, left=0):
            click.echo(line)
        return
    profile = machines.load_profile(name)
    reply = engine.resolve(
        {"engine": "sim", "workload": "page_fault1", "machine": profile}
    )
    detail = reply.get("machine_detail", {})
    if as_json:
        _emit_json(detail)
        return
    topo = detail.get("topology", {})
    click.echo(f"{detail.get('name')}: " + _facts(topo))
    hardware = detail.get("hardware", {})
    click.echo("hardware: " + _facts(hardware))
    for line in format_table(
        ["cost", "value"],
        [[k, v] for k, v in detail.get("costs", {}).items()],
        left=2,
    ):
        click.echo(line)


def _facts(facts: dict) -> str:
    """Join a machine's facts on one line, numbers to four significant digits."""
    shown = (v if isinstance(v, bool | str) else f"{v:.4g}" for v in facts.values())
    return ", ".join(f"{k} {v}" for k, v in zip(facts, shown, strict=True))


cli.add_command(host)  # pcplab host info|run|sweep|restore|overhead
cli.add_command(compare)
cli.add_command(reproduce_command)  # pcplab reproduce [NAME|all]
cli.add_command(sweep_command)  # pcplab sweep --param KEY=V1,V2 ...
cli.add_command(tune_command)  # pcplab tune --budget METRIC=LIMIT ...
cli.add_command(fidelity_command)  # pcplab fidelity [NAME ...]
cli.add_command(fit_command)  # pcplab fit --cross-validate N ...
cli.add_command(calibrate_command)  # pcplab calibrate --out FILE


def _usage_line(exc: click.UsageError) -> str:
    """Reduce a click usage error to one line saying where the allowed is told."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    where = exc.ctx.command_path if exc.ctx is not None else "pcplab"
    return f"pcplab: error: {message}; see '{where} --help' for what is allowed"


def _one_line(text: str) -> str:
    """Return TEXT as one line: each line break (in a file name, say) escaped."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def main(argv: list[str] | None = None) -> int:
    """Run the pcplab CLI; bad input gives one stderr line and exit status 2."""
    interrupts.install()  # SIGINT, SIGTERM and SIGHUP unwind alike
    try:
        status = cli.main(args=argv, prog_name="pcplab", standalone_mode=False)
    except click.UsageError as exc:
        click.echo(_usage_line(exc), err=True)
        return 2
    except PcplabError as exc:
        click.echo(_one_line(exc.line), err=True)
        return exc.exit_status
    except click.ClickException as exc:
        message = " ".join(exc.format_message().split())
        click.echo(f"pcplab: error: {message}", err=True)
        return exc.exit_code
    except click.Abort:
        click.echo("pcplab: interrupted", err=True)
        return 130
    except OSError as exc:
        click.echo(_one_line(f"pcplab: error: {exc}"), err=True)
        return 1
    except Exception as exc:  # a bug: one line, no traceback (PCPLAB_DEBUG shows it)
        if os.environ.get("PCPLAB_DEBUG"):
            raise
        where = f"{type(exc).__name__}: {exc}"
        click.echo(
            _one_line(
                f"pcplab: internal error: {where}; please report it "
                "(PCPLAB_DEBUG=1 shows the traceback)"
            ),
            err=True,
        )
        return 1
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())
