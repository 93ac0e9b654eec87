"""Options several commands share, written once: --engine, --workload, --jobs."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from pcplab import engine
from pcplab.inputs import AsciiIntRange
from pcplab.repeats import MAX_RUNS
from pcplab.spec_keys import option, schedule_help
from pcplab.workloads import WorkloadOption

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def engine_option(default: str, help_text: str = "Engine (if built).") -> Decorator:
    """Return --engine, a Choice of the engines, defaulting to DEFAULT."""
    return click.option(
        "--engine",
        "engine_name",
        type=click.Choice(engine.KNOWN_ENGINES),
        default=default,
        show_default=True,
        help=help_text,
    )


def workload_option(engines: tuple[str, ...] = engine.KNOWN_ENGINES) -> Decorator:
    """Return the required --workload, its help naming what ENGINES run."""
    return option(
        "workload",
        "--workload",
        cls=WorkloadOption,
        engines=engines,
        required=True,
        metavar="W",
    )


def timing_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --duration and --warmup (the spec keys duration_s, warmup_s)."""
    command = option("warmup_s", "--warmup", metavar="S")(command)
    return option("duration_s", "--duration", metavar="S")(command)


def schedule_option(more_help: str = "") -> Decorator:
    """Return --scale-max-schedule T:V[,T:V...], its help the table's plus MORE_HELP."""
    return option(
        "scale_max_schedule",
        "--scale-max-schedule",
        metavar="T:V[,T:V...]",
        help=schedule_help() + more_help,
    )


def seeds_option(default: int, help_text: str, **extra: Any) -> Decorator:
    """Return --seeds N: sim runs with seeds 1..N (at most MAX_RUNS)."""
    return click.option(
        "--seeds",
        type=AsciiIntRange(1, MAX_RUNS),
        default=default,
        show_default=True,
        help=help_text,
        **extra,
    )


def jobs_option(default: int | None = None) -> Decorator:
    """Return --jobs N: parallel runs (default: every CPU)."""
    return click.option(
        "--jobs",
        type=AsciiIntRange(1),
        default=default or os.cpu_count() or 1,
        show_default=True,
        help="Parallel runs.",
    )
