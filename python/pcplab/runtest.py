"""will-it-scale's runtest.py CSV of a sweep over tasks (and mode).

runtest.py prints `tasks,processes,processes_idle,threads,threads_idle,linear`,
a first row `0,0,100,0,100,0`, then per task count the total ops/s of the
process and the thread binary (`average:`), the idle % of /proc/stat over
each run, and linear = tasks x max(processes, threads) at 1 task. Here a
cell the sweep did not measure is empty: both idle columns (no engine
counts idle time as /proc/stat does), the mode it did not run, linear
without a 1-task point, and the idle cells of the first row.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from pcplab.errors import BadInput

COLUMNS = ("tasks", "processes", "processes_idle", "threads", "threads_idle", "linear")
GRID_KEYS = {"tasks", "mode"}
MODES = {"process": "processes", "thread": "threads"}


def check_grid(points: Sequence[dict[str, Any]]) -> None:
    """Refuse a grid runtest.py's table cannot hold: tasks (and mode) only."""
    keys = {key for point in points for key in point}
    if "tasks" not in keys:
        raise BadInput(
            "--format runtest is will-it-scale's table over task counts; "
            "give --param tasks=1,2,4 (and --param mode=process,thread)"
        )
    if keys - GRID_KEYS:
        extra = ", ".join(sorted(keys - GRID_KEYS))
        raise BadInput(
            f"--format runtest has one row per task count; --param {extra} "
            "has no column there: give only tasks and mode, or another --format"
        )


def _mean_ops(group: Sequence[dict[str, Any]]) -> float | None:
    """Return the mean total ops/s of one point's runs (will-it-scale's average)."""
    values = [(r.get("throughput") or {}).get("ops_per_s") for r in group]
    return None if None in values else statistics.fmean(values)


def runtest_csv(per_point: Sequence[Sequence[dict[str, Any]]]) -> str:
    """Return runtest.py's CSV of the runs of each grid point."""
    table: dict[int, dict[str, int]] = {}
    for group in per_point:
        spec = group[0]["spec"]
        column = MODES[str(spec.get("mode", "process"))]
        ops = _mean_ops(group)
        if ops is not None:  # an integer, as will-it-scale's `average:`
            table.setdefault(int(spec["tasks"]), {})[column] = int(ops)
    one = table.get(1, {})
    linear = max(one.values()) if one else None
    lines = [",".join(COLUMNS), "0,0,,0,,0"]
    for tasks, row in sorted(table.items()):
        cells = [
            str(tasks),
            _int(row.get("processes")),
            "",
            _int(row.get("threads")),
            "",
            _int(None if linear is None else linear * tasks),
        ]
        lines.append(",".join(cells))
    return "\n".join(lines)


def _int(value: int | None) -> str:
    """Format an ops/s figure as runtest.py's %d, empty where none was run."""
    return "" if value is None else str(value)
