"""The --workload option: a Choice of the workloads the engines list.

The engines own the workloads (src/workloads/<name>/); the front end keeps
no list of its own but the one the build writes beside the engines
(`_bin/workloads.json`), read when an option is converted or shown. An
engine refuses a workload it does not run (a host-only one on sim), in one
line.
"""

from __future__ import annotations

from typing import Any

import click

from pcplab import engine
from pcplab.errors import EngineError
from pcplab.inputs import NameChoice


def workload_help(engines: tuple[str, ...]) -> str:
    """Say which workloads run on ENGINES, and the tasks of those with their own.

    Those that run on only some of ENGINES say which.
    """
    try:
        listed = engine.list_workloads()
    except EngineError as exc:
        return f"Workload (the engines cannot list them: {exc})."
    if not listed:
        return "Workload (no engine is built: run 'make setup')."
    everywhere, some = [], []
    for workload in listed:
        where = [e for e in engines if e in workload["engines"]]
        if where == list(engines):
            everywhere.append(workload["name"])
        elif where:
            some.append(f"{workload['name']} ({', '.join(where)} only)")
    own = [
        f"{w['name']} runs {w['default_tasks']}"
        + (" unpinned" if w["placement"] == "spread" else "")
        + " tasks"
        for w in listed
        if w.get("default_tasks")
    ]
    runs_as = f" Without --tasks, {', '.join(own)}, as its thread did." if own else ""
    return f"Workload: {', '.join(everywhere + some)}.{runs_as}"


class WorkloadOption(click.Option):
    """A --workload option: a Choice of the workloads, its help naming their engines."""

    def __init__(self, *args: Any, engines: tuple[str, ...], **kwargs: Any) -> None:
        kwargs["type"] = NameChoice("workload", engine.workload_names)
        super().__init__(*args, **kwargs)
        self.engines = engines

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        """Fill in the help from the engines' list, then format it."""
        self.help = workload_help(self.engines)
        return super().get_help_record(ctx)
