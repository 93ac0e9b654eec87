"""Sweeps of vm.percpu_pagelist_high_fraction: run a workload at each value.

The sysctl is changed only through the command's host owner, so the
original value comes back on success, on error, on SIGINT, SIGTERM and
SIGHUP, and (from its journal, by the next pcplab command) after SIGKILL or
a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pcplab.host import runner, sysctl
from pcplab.host.owner import Owner
from pcplab.inputs import parse_int_list


def parse_fractions(text: str) -> list[int]:
    """Parse "0,8,100,1000" into integers (the engine checks their range)."""
    return parse_int_list(text, "--high-fraction", "0,8,100,1000")


def sweep(
    spec: dict[str, Any],
    fractions: Sequence[int],
    *,
    owner: Owner,
    progress: Callable[[str], None] = lambda line: None,
    **run_options: Any,
) -> list[dict[str, Any]]:
    """Run `spec` at each high fraction, set through OWNER; return the points."""
    points = []
    for value in fractions:
        owner.set_sysctl(sysctl.HIGH_FRACTION, value)
        progress(f"{sysctl.HIGH_FRACTION} = {value}: running {spec['workload']}")
        result = runner.run({**spec, "high_fraction": value}, **run_options)
        points.append({"high_fraction": value, "result": result})
    return points
