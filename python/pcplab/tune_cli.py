"""`pcplab tune`: which PCP setting for my machine, workloads and budget."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import click

from pcplab import engine, fitted, machines, tune_report
from pcplab.budgets import metric_path, parse_budget
from pcplab.cli_options import engine_option, jobs_option, seeds_option
from pcplab.errors import BadInput, PcplabError
from pcplab.host import owner
from pcplab.inputs import AsciiIntRange, check_output_file
from pcplab.policies import PolicyOption
from pcplab.runs import materialize
from pcplab.spec_keys import option
from pcplab.tune import KNOBS, knobs_for
from pcplab.tune_search import GRID_LIMIT, ROUNDS, WIDTH, tune

EPILOG = f"""\b
Examples:
  pcplab tune --machine epyc-7w83-vm --workload mmap_fill \\
      --budget rmqueue_bulk.p99=100us
      the 2024 thread's question (its 10 tasks): the fastest setting whose
      refills stay under 100 us at the 99th percentile
  pcplab tune --machine meta-316cpu --workload stress_vm \\
      --budget zone_lock_hold.max=1ms --knob scale_max --knob relinquish
  pcplab tune --machine broadwell-ep --kernel 4.18 --workload page_fault1:3 \\
      --workload page_fault2:1 --duration 1 --pareto rmqueue_bulk.p99 --json
      the 2018 batch question as a front: what each batch buys in
      will-it-scale faults (anonymous and file, 3:1) at what refill p99;
      14 runs, 41 s of CPU, 41 s on the shared 2-core box
  pcplab tune --machine meta-316cpu --workload stress_vm --tasks 64 \\
      --budget zone_lock_hold.max=1ms --knob policy --knob scale_max
      the policies of src/mm/policies/ as one more knob: which proposal,
      with which scale max, is fastest within the budget

How long: each setting tried is one `pcplab run` per workload and seed.
Tune runs seed 1 of a small space (up to {GRID_LIMIT} settings) whole; of a
larger one, seed 1 of every one-knob change, then rounds of the
combinations those runs predict to do better, until none is (at most
{ROUNDS} rounds of {WIDTH} settings, or --jobs if more). Then the few
settings it may recommend run their other seeds. The first example is
24 runs and 63 s of CPU, spread over --jobs cores: measured 58 s of wall
time on a shared 2-core box at a load of 2 to 3, 91 s at a load of 4 to
6. A progress line with an ETA goes to stderr every 5 s,
also into a pipe or a log (PCPLAB_PROGRESS_EVERY=S to change,
PCPLAB_NO_PROGRESS=1 to silence).
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
    optional = {
        "kernel": kernel,
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
    metavar="FILE",
    help="Also draw throughput against the budget's metric into this PNG "
    "(none unless asked).",
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
    plot: str | None,
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
        resolved = engine.resolve(materialize({**base, "workload": workload}))
    if engine_name != "host":  # without --kernel, the generation the engine runs
        base.setdefault("kernel", resolved["kernel"])
    kernel = base.get("kernel", "this kernel")
    knobs = knobs_for(kernel, knob_names or None, engine_name)
    if policy is not None and "policy" in knob_names:
        raise BadInput(
            "--policy fixes the policy and --knob policy searches it; give one"
        )
    if plot is not None:
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
    if plot is not None and metric is not None:
        limit = next((b.limit_ns for b in parsed if b.name == metric), None)
        tune_report.plot(result, metric, limit, Path(plot))
    if as_json:
        doc = tune_report.as_json(result, metric)
        if outside_fit is not None:
            doc["outside_fit"] = outside_fit
        click.echo(json.dumps(doc, indent=2))
    else:
        text = tune_report.lines(
            result, parsed, metric, base, weights, seeds, outside_fit
        )
        for line in text:
            click.echo(line)
        if plot is not None:
            click.echo(f"\nplot: {plot}")
    if result.recommendation is None:  # the report is out; the status says so
        raise PcplabError(tune_report.closest(result, parsed), prefix="pcplab: ")
