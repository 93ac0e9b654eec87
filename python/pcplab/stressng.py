"""stress-ng --metrics-brief's table of a stress_vm run (stress-ng's core-log).

stress-ng prints, per stressor, `stressor  bogo ops  real time  usr time
sys time  bogo ops/s (real time)  bogo ops/s (usr+sys time)` with the
formats of stress_metrics_dump(). The model counts bogo ops over the
measured window, but keeps no user/system split of CPU time: those cells
are n/a, with the reason in a footnote, and so is the rate built on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEAD = "%-13s %9.9s %9.9s %9.9s %9.9s %12s %14s"
TITLES = ("stressor", "bogo ops", "real time", "usr time", "sys time")
TITLES += ("bogo ops/s", "bogo ops/s")
UNITS = ("", "", "(secs) ", "(secs) ", "(secs) ", "(real time)", "(usr+sys time)")
NA = "n/a"
NOT_SPLIT = (
    "usr time, sys time, bogo ops/s (usr+sys time): n/a, the {engine} engine "
    "keeps no user/system split of CPU time (stress-ng reads getrusage())"
)


def _cell(value: float | None, width: int, fmt: str) -> str:
    """Format VALUE right-aligned in WIDTH with FMT, or n/a."""
    return f"{NA:>{width}}" if value is None else f"{value:{width}{fmt}}"


def metrics_lines(result: Mapping[str, Any]) -> list[str]:
    """Return stress-ng's brief metrics table of a stress_vm RESULT and its notes."""
    rate = (result.get("throughput") or {}).get("ops_per_s")
    seconds = result.get("duration_s")
    bogo = None if rate is None or seconds is None else round(rate * seconds)
    row = " ".join(
        [
            f"{'vm':<13}",
            _cell(bogo, 9, "d"),
            _cell(seconds, 9, ".2f"),
            _cell(None, 9, ".2f"),
            _cell(None, 9, ".2f"),
            _cell(rate, 12, ".2f"),
            _cell(None, 14, ".2f"),
        ]
    )
    return [
        HEAD % TITLES,
        HEAD % UNITS,
        row,
        "",
        "bogo ops: counted over the measured window (the warm-up excluded); "
        "real time: that window, in the engine's time",
        NOT_SPLIT.format(engine=result.get("engine")),
    ]
