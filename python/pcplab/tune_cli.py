"""`pcplab tune`: which PCP setting for my machine, workloads and budget."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import click

from pcplab import engine, fitted, machines
from pcplab.budgets import format_ns, metric_path, parse_budget
from pcplab.cli_options import engine_option, jobs_option, seeds_option
from pcplab.errors import BadInput
from pcplab.host import owner
from pcplab.inputs import AsciiIntRange, check_output_file
from pcplab.policies import PolicyOption
from pcplab.runs import materialize
from pcplab.spec_keys import option
from pcplab.tune import KNOBS, Point, Tuning, how_to_apply, knobs_for, patches, tune

EPILOG = """\b
Examples:
  pcplab tune --machine epyc-7w83-vm --workload mmap_fill \\
      --budget rmqueue_bulk.p99=100us
      the 2024 thread's question (its 10 tasks): the fastest setting whose
      refills stay under 100 us at the 99th percentile
  pcplab tune --machine meta-316cpu --workload stress_vm \\
      --budget zone_lock_hold.max=1ms --knob scale_max --knob relinquish
  pcplab tune --machine skylake-ex --workload page_fault1:3 \\
      --workload mmap_fill:1 --pareto rmqueue_bulk.p99 --json
  pcplab tune --machine meta-316cpu --workload stress_vm --tasks 64 \\
      --budget zone_lock_hold.max=1ms --knob policy --knob scale_max
      the policies of src/mm/policies/ as one more knob: which proposal,
      with which scale max, is fastest within the budget
"""


def _workloads(texts: tuple[str, ...]) -> dict[str, float]:
    """Parse W or W:WEIGHT options into {workload: weight}."""
    out: dict[str, float] = {}
    for text in texts:
        name, _, weight = text.partition(":")
        try:
            value = float(weight) if weight else 1.0
        except ValueError:
            value = -1.0
        if not name or not value > 0 or value == float("inf"):
            raise BadInput(
                f"--workload {text!r} is not W or W:WEIGHT with WEIGHT > 0; "
                "give e.g. page_fault1:2"
            )
        if name in out:
            raise BadInput(f"--workload {name} is given twice; give it once")
        out[name] = value
    return out


def _label(keys: dict[str, Any]) -> str:
    """Name a setting: "scale_max=0 batch=8", or the kernel's defaults."""
    return " ".join(f"{k}={v}" for k, v in keys.items()) or "(kernel defaults)"


def _figures(point: Point, budgets: list[Any]) -> str:
    """Name a setting with its throughput and worst budget figures."""
    figures = ", ".join(
        f"{b.name} {format_ns(point.worst[b.name])}"
        for b in budgets
        if point.worst.get(b.name) is not None
    )
    return (
        f"{_label(point.keys)}: throughput {point.score:.3f}x the kernel's "
        "defaults" + (f"; worst {figures}" if figures else "")
    )


def _run_commands(
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


def _table(result: Tuning, metric: str | None) -> list[str]:
    """Return the front as text rows: setting, throughput, metric, budgets."""
    from pcplab.summary import format_table

    headers = ["setting", "throughput", metric or "", "budgets"]
    rows = [
        [
            _label(p.keys),
            f"{p.score:.3f}x",
            format_ns(p.worst[metric]) if metric and p.worst.get(metric) else "n/a",
            "met" if p.feasible else "missed",
        ]
        for p in result.front
    ]
    return format_table(
        headers if metric else headers[:2] + headers[3:],
        [r if metric else r[:2] + r[3:] for r in rows],
    )


def _plot(result: Tuning, metric: str, limit: float | None, path: Path) -> None:
    """Draw throughput against METRIC: every point, the front, the budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    pts = [p for p in result.points if p.worst.get(metric) is not None]
    ax.scatter(
        [p.worst[metric] / 1e3 for p in pts],
        [p.score for p in pts],
        s=14,
        color="0.6",
        label="settings tried",
    )
    ax.plot(
        [p.worst[metric] / 1e3 for p in result.front],
        [p.score for p in result.front],
        "o-",
        color="C0",
        label="Pareto front",
    )
    if limit is not None:
        ax.axvline(limit / 1e3, color="C3", linestyle="--", label="budget")
    rec = result.recommendation
    if rec is not None and rec.worst.get(metric) is not None:
        ax.scatter(
            [rec.worst[metric] / 1e3],
            [rec.score],
            s=90,
            marker="*",
            color="C2",
            zorder=3,
            label="recommendation",
        )
    ax.set_xlabel(f"{metric}, worst over seeds (µs)")
    ax.set_ylabel("throughput relative to the kernel's defaults")
    ax.set_xscale("log")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _as_json(result: Tuning, metric: str | None) -> dict[str, Any]:
    """Return the --json document: the recommendation and the front."""

    def row(p: Any) -> dict[str, Any]:
        return {
            "keys": p.keys,
            "throughput_ratio": p.score,
            "ops_per_s": p.ops_per_s,
            "worst": p.worst,
            "budgets_met": p.feasible,
        }

    rec = result.recommendation
    return {
        "recommendation": None if rec is None else rec.keys,
        "recommended": None if rec is None else row(rec),
        "settable": None if result.settable is None else row(result.settable),
        "default": row(result.default),
        "front_metric": metric,
        "front": [row(p) for p in result.front],
        "settings_run": result.settings_run,
        "points": [row(p) for p in result.points],
    }


def _base_spec(
    engine_name: str,
    machine: str | None,
    kernel: str | None,
    policy: str | None,
    tasks: int | None,
    duration: float | None,
) -> dict[str, Any]:
    """Return the spec every setting starts from, refusing what does not apply."""
    if (engine_name == "sim") != (machine is not None):
        raise BadInput(
            "--machine goes with --engine sim; give it with sim (which needs it) only"
        )
    if machine is not None:
        machines.load_profile(machine)  # refuse a bad profile first
    base: dict[str, Any] = {"engine": engine_name}
    if engine_name == "host":
        if policy is not None or kernel is not None:
            raise BadInput(
                "--policy and --kernel are the model's; this kernel has its own "
                "rules: drop them with --engine host"
            )
        if tasks is None:
            raise BadInput("--engine host needs the tasks to run; give --tasks N")
        if os.geteuid() != 0:
            raise BadInput(
                "--engine host sets this kernel's sysctls for each setting; run as "
                "root, or tune the model (--engine sim)"
            )
    else:
        base["kernel"] = kernel or "6.18"
    optional = {
        "machine": machine,
        "tasks": tasks,
        "policy": policy,
        "duration_s": duration,
    }
    base.update({k: v for k, v in optional.items() if v is not None})
    return base


@click.command("tune", short_help="The best PCP setting for a budget.", epilog=EPILOG)
@engine_option(
    "sim",
    "sim: the machine profile's model; native: the model on this host's threads; "
    "host: this kernel itself (root: its sysctls are set and restored).",
)
@click.option("--machine", metavar="NAME|FILE", help="Machine profile (sim).")
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    required=True,
    metavar="W[:WEIGHT]",
    help="A workload and its weight in the throughput (default 1); repeatable.",
)
@click.option(
    "--budget",
    "budgets",
    multiple=True,
    metavar="METRIC=LIMIT",
    help="A latency budget, e.g. rmqueue_bulk.p99=100us, zone_lock_hold.max=1ms.",
)
@click.option("--pareto", metavar="METRIC", help="Front against this metric.")
@click.option(
    "--knob",
    "knob_names",
    multiple=True,
    type=click.Choice([k.key for k in KNOBS]),
    help="Search only these knobs (default: every knob of the kernel but policy, "
    "which is searched only when named: a patch, not a setting).",
)
@option("kernel", "--kernel", help="The model's kernel generation.")
@option("policy", "--policy", cls=PolicyOption, metavar="P")
@option("tasks", "--tasks", metavar="N", help="Tasks.")
@option(
    "duration_s",
    "--duration",
    "duration",
    metavar="S",
    help="Measured seconds per run, as in pcplab run (a shorter run may end "
    "before a loop of the workload does, and miss its frees).",
)
@seeds_option(3, "Seeds per setting; a budget must hold in every one.")
@click.option(
    "--trials",
    type=AsciiIntRange(1, 10000),
    metavar="N",
    help="Sample N settings with optuna (default: the whole grid if small).",
)
@jobs_option()
@click.option(
    "--plot",
    default="tune.png",
    show_default=True,
    metavar="FILE",
    help="The PNG of throughput against the budget's metric.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def tune_command(
    engine_name: str,
    machine: str | None,
    workloads: tuple[str, ...],
    budgets: tuple[str, ...],
    pareto: str | None,
    knob_names: tuple[str, ...],
    kernel: str | None,
    policy: str | None,
    tasks: int | None,
    duration: float | None,
    seeds: int,
    trials: int | None,
    jobs: int,
    plot: str,
    as_json: bool,
) -> None:
    """Find the fastest setting whose budgets hold, and the Pareto front."""
    parsed = [parse_budget(b) for b in budgets]
    if pareto is not None:
        metric_path(pareto)
    if not parsed and pareto is None:
        raise BadInput(
            "nothing to tune for; give a --budget METRIC=LIMIT or a --pareto METRIC"
        )
    weights = _workloads(workloads)
    base = _base_spec(engine_name, machine, kernel, policy, tasks, duration)
    for workload in weights:  # the engine checks kernel, workload, ranges
        engine.resolve(materialize({**base, "workload": workload}))
    kernel = base.get("kernel", "this kernel")
    knobs = knobs_for(kernel, knob_names or None, engine_name)
    if policy is not None and "policy" in knob_names:
        raise BadInput(
            "--policy fixes the policy and --knob policy searches it; give one"
        )
    check_output_file(plot, "--plot")
    outside_fit = None if machine is None else fitted.outside(machine, kernel)
    if outside_fit:  # every input checked: the runs are about to start
        fitted.warn_outside(machines.label(machine), outside_fit)
    # On this kernel every run sets its sysctls: one owner for all of them,
    # so that no other command changes the kernel between two settings.
    hold = owner.hold if engine_name == "host" else contextlib.nullcontext
    with hold("pcplab tune --engine host"):
        result = tune(
            base,
            weights,
            parsed,
            knobs,
            seeds=seeds,
            trials=trials,
            pareto=pareto,
            jobs=jobs,
        )
    metric = pareto or (parsed[0].name if parsed else None)
    if metric is not None:
        limit = next((b.limit_ns for b in parsed if b.name == metric), None)
        _plot(result, metric, limit, Path(plot))
    if as_json:
        doc = _as_json(result, metric)
        if outside_fit is not None:
            doc["outside_fit"] = outside_fit
        click.echo(json.dumps(doc, indent=2))
        return
    where = (
        f"{machines.label(machine)}, kernel {kernel}"
        if machine
        else f"this kernel ({os.uname().release})"
    )
    _print(result, parsed, metric, where, plot, base, weights, seeds, outside_fit)


def _print(
    result: Tuning,
    budgets: list[Any],
    metric: str | None,
    machine: str,
    plot: str,
    base: dict[str, Any],
    workloads: dict[str, float],
    seeds: int,
    outside_fit: list[str] | None = None,
) -> None:
    """Print the recommendation, how to apply it, and the front."""
    rec = result.recommendation
    tried, distinct = result.settings_run, len(result.points)
    click.echo(
        f"pcplab tune: {machine}, {tried} settings tried ({distinct} ran unlike "
        "the others); "
        f"budgets: {', '.join(map(str, budgets)) or 'none'}\n"
    )
    if rec is None:
        closest = min(
            result.points,
            key=lambda p: (
                max((p.worst[b.name] or 0) / b.limit_ns for b in budgets)
                if budgets
                else 0
            ),
        )
        click.echo(
            "no setting meets the budgets; the closest is "
            f"{_label(closest.keys)} ("
            + ", ".join(
                f"{b.name} {format_ns(closest.worst[b.name] or 0)}" for b in budgets
            )
            + "); fewer tasks (--tasks) or a larger budget may be met"
        )
    else:
        click.echo(f"recommendation: {_figures(rec, budgets)}")
        if outside_fit:
            click.echo(
                "  extrapolated: the model was not fitted on this machine: "
                + "; ".join(outside_fit)
            )
        click.echo("how to apply it:")
        for line in how_to_apply(rec.keys, base.get("kernel", "this kernel")):
            click.echo(f"  {line}")
        if patches(rec.keys):
            settable = result.settable
            click.echo(
                "without a patch: "
                + (
                    _figures(settable, budgets)
                    if settable
                    else "no setting this kernel takes meets the budgets"
                )
            )
        click.echo(f"check it (seed 1 of the {seeds} it held in):")
        for line in _run_commands(base, rec.keys, workloads):
            click.echo(f"  {line}")
    click.echo(f"\nPareto front ({metric or 'throughput'}):")
    for line in _table(result, metric):
        click.echo(line)
    if metric is not None:
        click.echo(f"\nplot: {plot}")
