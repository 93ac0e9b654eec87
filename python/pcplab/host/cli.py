"""The `pcplab host` commands (info, run, sweep, restore, overhead) and `compare`."""

from __future__ import annotations

import functools
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pcplab import engine
from pcplab.cli_examples import EXAMPLES
from pcplab.cli_options import schedule_option, timing_options, workload_option
from pcplab.comparison import FORMATS
from pcplab.errors import BadInput, PcplabError
from pcplab.host import (
    journal,
    lockstat,
    owner,
    procfs,
    profile,
    report,
    runner,
    sweep,
    sysctl,
    trace,
)
from pcplab.host.execute import execute_run, guard, refuse_host_scale_max_schedule
from pcplab.inputs import AsciiIntRange, check_output_file
from pcplab.repeat_cli import repeat_options
from pcplab.spec_keys import option
from pcplab.summary import lkp_name

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 88}
MODEL_ENGINES = ("native", "sim")


def _emit(data: Any, as_json: bool, text: str, output: str | None) -> None:
    """Write the JSON to --output if asked; print JSON or the text."""
    if output is not None:
        Path(output).write_text(json.dumps(data, indent=2) + "\n")
    click.echo(json.dumps(data, indent=2) if as_json else text)


def run_on_host(
    spec: dict[str, Any],
    *,
    as_json: bool,
    output: str | None,
    lock_stats: str | None = None,
    profile_with: str = "off",
) -> None:
    """`pcplab run --engine host`: run, then print the summary or the JSON."""
    result = execute_run(spec, lock_stats=lock_stats, profile_with=profile_with)
    _emit(result, as_json, report.format_host_summary(result), output)


def _with_options(
    func: Callable[..., Any], options: list[Callable[..., Any]]
) -> Callable[..., Any]:
    """Apply click OPTIONS to FUNC in the order they are listed."""
    for add_option in reversed(options):
        func = add_option(func)
    return func


@click.group("host", context_settings=CONTEXT)
@click.pass_context
def host(ctx: click.Context) -> None:
    """Measure the running kernel: its pagesets, a run, a sweep, a restore.

    Every pcplab command run as root first undoes what an interrupted one
    left (its journal is in $PCPLAB_STATE_DIR or /var/lib/pcplab): the
    sysctls it changed, the perf or bpftrace it started, its tracefs
    instance and temporary directories, one line for each.
    """
    if ctx.invoked_subcommand != "restore":  # which says what it undid
        owner.recover()


def _workload_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the options that describe a host workload run."""
    options = [
        workload_option(("host",)),
        option("tasks", "--tasks", required=True, metavar="N"),
        option("duration_s", "--duration", metavar="S"),
        option("warmup_s", "--warmup", metavar="S"),
        option("size_mib", "--size-mib", metavar="M"),
        option("mode", "--mode"),
        option(
            "timed",
            "--untimed",
            is_flag=True,
            help="Do not time first touches (no fault latency).",
        ),
    ]
    return _with_options(func, options)


def _trace_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the kernel-tracing options."""
    options = [
        click.option(
            "--trace",
            "trace_method",
            type=click.Choice(trace.CHOICES),
            default="auto",
            show_default=True,
            help="Kernel tracing method (auto: the best permitted).",
        ),
        option(
            "trace_s",
            "--trace-seconds",
            default=runner.DEFAULT_TRACE_S,
            show_default=True,
            help="Length of the traced phase after the measurement (0: none).",
        ),
        click.option(
            "--burst-gap-ns",
            type=AsciiIntRange(1),
            default=trace.DEFAULT_GAP_NS,
            show_default=True,
            help="Tracepoints further apart than this start a new burst.",
        ),
    ]
    return _with_options(func, options)


LOCK_STATS_HELP = (
    "Lock contention of the measured phase: perf (perf lock record/contention, "
    "root) or off; default perf where permitted, else off with the reason."
)


def lock_stats_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --lock-stats perf|off (default: perf where permitted)."""
    return click.option(
        "--lock-stats",
        type=click.Choice(lockstat.CHOICES),
        default=None,
        help=LOCK_STATS_HELP,
    )(func)


PROFILE_HELP = (
    "perf-profile of the measured phase: perf (perf record -a -g, root; "
    "LKP's perf-profile.self/children shares) or off (the default)."
)


def profile_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --profile perf|off (default off)."""
    return click.option(
        "--profile",
        "profile_with",
        type=click.Choice(profile.CHOICES),
        default="off",
        show_default=True,
        help=PROFILE_HELP,
    )(func)


def _output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --json and --output."""
    func = click.option(
        "--output", metavar="FILE", help="Also write the JSON to FILE."
    )(func)
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def _spec(
    workload: str,
    tasks: int,
    duration: float | None,
    warmup: float | None,
    size_mib: int | None,
    mode: str | None,
    untimed: bool,
) -> dict[str, Any]:
    """Build a host spec from the workload options."""
    spec: dict[str, Any] = {"engine": "host", "workload": workload, "tasks": tasks}
    optional = {
        "duration_s": duration,
        "warmup_s": warmup,
        "size_mib": size_mib,
        "mode": mode,
    }
    spec.update({k: v for k, v in optional.items() if v is not None})
    if untimed:
        spec["timed"] = False
    return spec


def _check_output(output: str | None) -> None:
    """Refuse an unwritable --output before anything runs."""
    check_output_file(output, "--output")


@host.command(
    "info",
    short_help="Pagesets, sysctls, kernel version, tracing.",
    epilog=EXAMPLES["host info"],
)
@click.option("--no-probe", is_flag=True, help="Skip probing kernel tracing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info_command(no_probe: bool, as_json: bool) -> None:
    """Print the kernel version, the PCP sysctls and every CPU's pagesets."""
    if no_probe:
        probed = trace.Probe(None, {"probe": "skipped (--no-probe)"})
    else:
        probed = trace.probe()
        if probed.mounted_tracefs:
            owner.unmount(str(trace.TRACEFS))
    info = {
        "kernel": procfs.kernel_release(),
        "cpus": os.cpu_count(),
        "mem_available_bytes": procfs.read_meminfo().get("MemAvailable", 0),
        "thp": procfs.thp_setting("enabled"),
        "sysctls": sysctl.read_recorded(),
        "pagesets": procfs.read_pagesets(),
        "tracing": {"method": probed.method, "reasons": probed.reasons},
    }
    _emit(info, as_json, report.format_info(info), None)


@host.command(
    "run",
    short_help="Run a workload on the running kernel.",
    epilog=EXAMPLES["host run"],
)
@_workload_options
@option(
    "high_fraction",
    "--high-fraction",
    metavar="F",
    help="Set vm.percpu_pagelist_high_fraction for the run (root).",
)
@_trace_options
@lock_stats_option
@profile_option
@_output_options
def run_command(
    workload: str,
    tasks: int,
    duration: float | None,
    warmup: float | None,
    size_mib: int | None,
    mode: str | None,
    untimed: bool,
    high_fraction: int | None,
    trace_method: str,
    trace_seconds: float,
    burst_gap_ns: int,
    lock_stats: str | None,
    profile_with: str,
    as_json: bool,
    output: str | None,
) -> None:
    """Run a workload against this kernel; like `pcplab run --engine host`."""
    _check_output(output)
    spec = _spec(workload, tasks, duration, warmup, size_mib, mode, untimed)
    if high_fraction is not None:
        spec["high_fraction"] = high_fraction
    result = execute_run(
        spec,
        trace_method=trace_method,
        trace_s=trace_seconds,
        gap_ns=burst_gap_ns,
        lock_stats=lock_stats,
        profile_with=profile_with,
    )
    _emit(result, as_json, report.format_host_summary(result), output)


@host.command(
    "sweep",
    short_help="Run a workload at each high fraction (root).",
    epilog=EXAMPLES["host sweep"],
)
@click.option(
    "--high-fraction",
    "fractions",
    required=True,
    metavar="F,F,...",
    help="vm.percpu_pagelist_high_fraction values, e.g. 0,8,100,1000.",
)
@_workload_options
@_trace_options
@_output_options
def sweep_command(
    fractions: str,
    workload: str,
    tasks: int,
    duration: float | None,
    warmup: float | None,
    size_mib: int | None,
    mode: str | None,
    untimed: bool,
    trace_method: str,
    trace_seconds: float,
    burst_gap_ns: int,
    as_json: bool,
    output: str | None,
) -> None:
    """Run the workload at each value; the original value is always restored."""
    sysctl.require_root(
        "pcplab host sweep", ", or run 'pcplab run --engine host' without a sweep"
    )
    _check_output(output)
    values = sweep.parse_fractions(fractions)
    spec = _spec(workload, tasks, duration, warmup, size_mib, mode, untimed)
    guard([{**spec, "high_fraction": v} for v in values], trace_method, trace_seconds)
    with owner.hold("pcplab host sweep") as own:
        original = sysctl.read_sysctl(sysctl.HIGH_FRACTION)
        points = sweep.sweep(
            spec,
            values,
            owner=own,
            progress=lambda line: click.echo(f"pcplab: {line}", err=True),
            trace_method=trace_method,
            trace_s=trace_seconds,
            gap_ns=burst_gap_ns,
        )
    click.echo(f"pcplab: restored {sysctl.HIGH_FRACTION} to {original}", err=True)
    data = {"sweep": points, "restored": {sysctl.HIGH_FRACTION: original}}
    _emit(data, as_json, report.format_sweep(points), output)


@host.command(
    "restore",
    short_help="Undo what an interrupted run left; set a sysctl back.",
    epilog=EXAMPLES["host restore"],
)
@click.option(
    "--sysctl",
    "settings",
    multiple=True,
    metavar="NAME=VALUE",
    help="Also write NAME=VALUE, a sysctl pcplab changes (the way out of a damaged "
    "journal, whose lines name it); removes the damaged journals.",
)
def restore_command(settings: tuple[str, ...]) -> None:
    """Undo what the journal of an interrupted run holds, and remove it.

    Stops the perf or bpftrace it started, removes its tracefs instance and
    temporary directories, writes back the sysctls it changed.
    """
    wanted = owner.parse_settings(settings)
    path = journal.journal_path()
    if os.geteuid() != 0 and (wanted or path.exists()):
        raise BadInput(
            f"{path if path.exists() else 'writing a sysctl'} needs root; run "
            "'pcplab host restore' as root"
        )
    done = owner.recover()
    if wanted:
        owner.write_settings(wanted)
    elif not done and journal.damaged_paths():
        raise PcplabError(
            f"{journal.damaged_paths()[0]} is a damaged journal; put the sysctls "
            f"back with '{owner.restore_command()}'"
        )
    elif not done:
        click.echo(f"pcplab: no journal at {path}: nothing to restore", err=True)


@host.command(
    "overhead",
    short_help="Timed vs untimed throughput: the cost of timing.",
    epilog=EXAMPLES["host overhead"],
)
@_workload_options
@click.option(
    "--rounds",
    type=AsciiIntRange(1, 100),
    default=3,
    show_default=True,
    help="Timed and untimed runs, alternating.",
)
@_output_options
def overhead_command(
    workload: str,
    tasks: int,
    duration: float | None,
    warmup: float | None,
    size_mib: int | None,
    mode: str | None,
    untimed: bool,
    rounds: int,
    as_json: bool,
    output: str | None,
) -> None:
    """Measure what timing every first touch costs (median of alternating runs)."""
    if untimed:
        raise BadInput("overhead runs both timed and untimed; drop --untimed")
    _check_output(output)
    spec = _spec(workload, tasks, duration, warmup, size_mib, mode, False)
    guard([spec], "off", 0)
    ops: dict[str, list[float]] = {"timed": [], "untimed": []}
    for _ in range(rounds):
        for name, timed in (("timed", True), ("untimed", False)):
            result = runner.run(
                {**spec, "timed": timed},
                trace_method="off",
                trace_s=0,
                lock_stats="off",
            )
            ops[name].append(result["throughput"]["ops_per_s"])
    timed_ops = statistics.median(ops["timed"])
    untimed_ops = statistics.median(ops["untimed"])
    data = {
        "workload": workload,
        "ops_per_s": ops,
        "median_timed": timed_ops,
        "median_untimed": untimed_ops,
        "overhead_pct": 100 * (1 - timed_ops / untimed_ops),
    }
    text = (
        f"{workload}, {tasks} tasks, {rounds} rounds: untimed {untimed_ops:.0f} ops/s, "
        f"timed {timed_ops:.0f} ops/s (medians); timing costs "
        f"{data['overhead_pct']:.2f}%"
    )
    _emit(data, as_json, text, output)


def _get(result: dict[str, Any], path: str) -> Any:
    """Follow a dotted path into a result; None where anything is missing."""
    value: Any = result
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _pages_per(result: dict[str, Any], pages: str, calls: str) -> float | None:
    """Pages per call from the pcp section, None if unmeasured or no calls."""
    p, c = _get(result, f"pcp.{pages}"), _get(result, f"pcp.{calls}")
    return p / c if p is not None and c else None


def _share(result: dict[str, Any], kind: str, function: str) -> float | None:
    """Return a perf-profile share (0 if never sampled), None without a profile."""
    section = result.get("perf_profile")
    if not isinstance(section, dict):
        return None
    return (section.get(kind) or {}).get(function, 0.0)


# The perf-profile shares set beside the model's: page clearing, the spin,
# and the two subtrees where Debian's init_on_alloc moves the clearing.
PROFILED = (
    ("self", "clear_page_erms"),
    ("self", "native_queued_spin_lock_slowpath"),
    ("children", "handle_mm_fault"),
    ("children", "get_page_from_freelist"),
)
COMPARED = (
    ("ops/s", functools.partial(_get, path="throughput.ops_per_s")),
    (
        "zone->lock contention %",
        functools.partial(_get, path="contention.zone_lock_pct"),
    ),
    (
        "lru_lock contention %",
        functools.partial(_get, path="contention.lru_lock_pct"),
    ),
    ("ops/s per task", functools.partial(_get, path="throughput.ops_per_task_per_s")),
    ("fault avg ns", functools.partial(_get, path="latency_ns.fault.avg")),
    ("fault p99 ns", functools.partial(_get, path="latency_ns.fault.p99")),
    (
        "zone->lock hold avg ns",
        functools.partial(_get, path="lock_hold_ns.zone_lock.avg"),
    ),
    (
        "zone->lock hold p99 ns",
        functools.partial(_get, path="lock_hold_ns.zone_lock.p99"),
    ),
    (
        "pages per refill",
        functools.partial(_pages_per, pages="pages_refilled", calls="refills"),
    ),
    (
        "pages per drain",
        functools.partial(_pages_per, pages="pages_drained", calls="drains"),
    ),
    *(
        (lkp_name(kind, fn), functools.partial(_share, kind=kind, function=fn))
        for kind, fn in PROFILED
    ),
)


def compare_rows(
    host_result: dict[str, Any], model_result: dict[str, Any]
) -> list[list[Any]]:
    """Return [metric, host, model, model/host] rows of two results."""
    rows = []
    for name, get in COMPARED:
        h, m = get(host_result), get(model_result)
        ratio = f"{m / h:.3f}" if h and m is not None else "n/a"
        rows.append([name, h, m, ratio])
    return rows


COMPARE_EPILOG = """\b
Examples:
  pcplab compare --workload page_fault1 --tasks 8
      this kernel and the native model, side by side with their ratio
  pcplab compare --workload page_fault1 --machine skylake-ex --kernel 4.18 \\
      --base batch=31 --new batch=63 --seeds 3 --duration 0.3
      the 2018 question on the model, on the 2018 kernel: the gain of batch
      63 in LKP's %change (* where significant), under LKP's header
  pcplab compare --workload page_fault1 --machine broadwell-ep \\
      --base kernel=6.6 --new kernel=6.19 --seeds 3 --format mmtests
"""


def _compare_models(
    ctx: click.Context,
    workload: str,
    tasks: int | None,
    model: str | None,
    machine: str | None,
    base: tuple[str, ...],
    new: tuple[str, ...],
    seeds: int | None,
    repeat: int | None,
    layout: str,
) -> None:
    """`compare --base --new`: two model configurations, LKP or mmtests layout."""
    from pcplab import machines
    from pcplab.model_compare import compare_models, parse_keys
    from pcplab.repeats import runs_per_point

    p = ctx.params
    measures = ("trace_method", "trace_seconds", "burst_gap_ns", "lock_stats")
    for name in (*measures, "profile_with"):
        if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT:
            flag = name.removesuffix("_with").removesuffix("_method")
            raise BadInput(
                f"--{flag.replace('_', '-')} measures this "
                "kernel; --base/--new compare two model runs: drop it"
            )
    model = model or ("sim" if machine is not None else "native")
    if (model == "sim") != (machine is not None):
        raise BadInput("--machine goes with the sim model (and sim needs it)")
    common: dict[str, Any] = {"engine": model, "workload": workload}
    if machine is not None:
        machines.load_profile(machine)  # refuse an unknown profile early
        common["machine"] = machine
    optional = {
        "kernel": p["kernel"],
        "tasks": tasks,
        "duration_s": p["duration"],
        "warmup_s": p["warmup"],
        "size_mib": p["size_mib"],
    }
    common.update({k: v for k, v in optional.items() if v is not None})
    if p["scale_max_schedule"] is not None:
        from pcplab.spec_keys import parse_scale_max_schedule

        common["scale_max_schedule"] = parse_scale_max_schedule(p["scale_max_schedule"])
    runs = runs_per_point([model], seeds, repeat)
    _check_output(p["output"])
    data, text = compare_models(
        common,
        parse_keys(base, "--base"),
        parse_keys(new, "--new"),
        runs,
        seeds is not None,
        layout,
    )
    _emit(data, p["as_json"], text, p["output"])


@click.command(
    "compare",
    context_settings=CONTEXT,
    short_help="This kernel beside the model, or two model configurations.",
    epilog=COMPARE_EPILOG,
)
@workload_option(("host", *MODEL_ENGINES))
@option("tasks", "--tasks", metavar="N", help="Tasks.")
@timing_options
@option("size_mib", "--size-mib", metavar="M")
@click.option(
    "--model",
    type=click.Choice(MODEL_ENGINES),
    help="Model engine: sim if built, else native.",
)
@option(
    "machine",
    "--machine",
    metavar="NAME",
    help="Machine profile for --model sim (this host's calibrated one).",
)
@schedule_option(
    " Refused while the host engine cannot change the "
    "kernel's vm.pcp_batch_scale_max (mainline kernels have none).",
)
@click.option(
    "--base",
    multiple=True,
    metavar="KEY=V",
    help="Compare two model configurations instead: the base's spec keys.",
)
@click.option("--new", multiple=True, metavar="KEY=V", help="The new one's spec keys.")
@option(
    "kernel",
    "--kernel",
    help="With --base/--new: the kernel generation both run (a key of "
    "their own overrides it).",
)
@repeat_options
@click.option(
    "--format",
    "layout",
    type=click.Choice(FORMATS),
    default="lkp",
    show_default=True,
    help="Layout of --base/--new: LKP's or mmtests' compare-kernels.",
)
@_trace_options
@lock_stats_option
@profile_option
@_output_options
@click.pass_context
def compare(
    ctx: click.Context,
    workload: str,
    tasks: int,
    duration: float | None,
    warmup: float | None,
    size_mib: int | None,
    model: str | None,
    machine: str | None,
    scale_max_schedule: str | None,
    trace_method: str,
    trace_seconds: float,
    burst_gap_ns: int,
    lock_stats: str | None,
    profile_with: str,
    base: tuple[str, ...],
    new: tuple[str, ...],
    kernel: str | None,
    seeds: int | None,
    repeat: int | None,
    layout: str,
    as_json: bool,
    output: str | None,
) -> None:
    """Run the workload on this kernel and on the model; print both and the ratio.

    With --base and --new: run two configurations of the model instead, and
    print each metric's %change with Welch's t-test over --seeds/--repeat.
    """
    if base or new:
        _compare_models(
            ctx, workload, tasks, model, machine, base, new, seeds, repeat, layout
        )
        return
    if kernel is not None:
        raise BadInput(
            "--kernel sets the model generation of --base/--new; this kernel "
            "is the one running: drop --kernel, or give --base and --new"
        )
    if tasks is None:
        raise BadInput("--tasks is required to run this kernel; give --tasks N")
    if seeds is not None or repeat is not None or layout != "lkp":
        raise BadInput(
            "--seeds, --repeat and --format go with --base/--new (two model "
            "configurations); drop them, or give --base and --new"
        )
    if scale_max_schedule is not None:
        from pcplab.spec_keys import parse_scale_max_schedule

        parse_scale_max_schedule(scale_max_schedule)
        refuse_host_scale_max_schedule()  # the kernel's side cannot follow it
    _check_output(output)
    if model is None:  # the simulator needs this host's calibrated profile
        model = "sim" if machine is not None else "native"
    common: dict[str, Any] = {"workload": workload, "tasks": tasks}
    common.update(
        {
            k: v
            for k, v in {
                "duration_s": duration,
                "warmup_s": warmup,
                "size_mib": size_mib,
            }.items()
            if v is not None
        }
    )
    model_spec = {**common, "engine": model}
    if machine is not None:
        from pcplab import machines  # the simulator's profiles

        model_spec["machine"] = machines.load_profile(machine)
    host_spec = {**common, "engine": "host"}
    engine.engine_binary(model)
    runner.profile_reason_for(profile_with)  # refuse --profile perf here first
    guard([host_spec], trace_method, trace_seconds)
    guard([model_spec], "off", 0)
    host_result = runner.run(
        host_spec,
        trace_method=trace_method,
        trace_s=trace_seconds,
        gap_ns=burst_gap_ns,
        lock_stats=lock_stats,
        profile_with=profile_with,
    )
    model_result = engine.run(model_spec)
    rows = compare_rows(host_result, model_result)
    data = {
        "host": host_result,
        "model": model_result,
        "model_engine": model,
        "rows": [
            dict(zip(("metric", "host", model, "ratio"), r, strict=True)) for r in rows
        ],
    }
    head = (
        f"pcplab compare: {workload}, {tasks} tasks; host = this kernel "
        f"({procfs.kernel_release()}), {model} = the model"
    )
    _emit(data, as_json, head + "\n" + report.format_compare(rows, model), output)
    sys.stdout.flush()
