"""What a result cannot vouch for: failed allocations, tasks cut short."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any


def incomplete(result: dict[str, Any]) -> list[str]:
    """Return why RESULT's figures fall short of its measured time ([]: they do not)."""
    reasons = []
    failures = (result.get("vmstat") or {}).get("alloc_failures") or 0
    if failures:
        reasons.append(
            f"{failures:.0f} page allocations failed: the machine ran out of memory "
            "(vmstat.alloc_failures)"
        )
    if result.get("alloc_failed"):
        reasons.append(
            "a task stopped at its failed allocation, before the deadline: the "
            "run was cut short and its throughput averages in the stopped "
            "tasks' idle time (alloc_failed)"
        )
    return reasons


def warn(what: str, reasons: Sequence[str]) -> None:
    """Print one warning line on stderr: WHAT, then REASONS (none: nothing)."""
    if reasons:
        print(f"pcplab: warning: {what}: {'; '.join(reasons)}", file=sys.stderr)


def mark_incomplete(result: dict[str, Any]) -> dict[str, Any]:
    """Add RESULT's `incomplete` field, warn on stderr if it has reasons; return it."""
    result["incomplete"] = incomplete(result)
    warn("the run is incomplete", result["incomplete"])
    return result
