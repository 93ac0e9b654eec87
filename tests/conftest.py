"""Shared fixtures: run the installed pcplab command and check its bad-input lines."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# `pcplab: <what is wrong>; <what is allowed>` (docs/engine-protocol.md); the
# front end's own lines read `pcplab: error: ...; ...`.
BAD_INPUT_LINE = re.compile(r"^pcplab: \S.*; \S.*$")
# No test skips: a test that cannot run (no root, no perf lock, no
# ../shared) fails and names what it lacks, as it would on CI's machine,
# which has all of them. A developer without one deselects those tests by
# hand (pytest --deselect), knowing what is not checked.


def require(missing: str | None) -> None:
    """Fail the test for want of MISSING (a reason it cannot run here)."""
    if missing is not None:
        pytest.fail(f"this test cannot run here: {missing}")


def needs(missing: str | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Return a decorator that calls require(MISSING) before the test runs."""

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(test)  # pytest reads the fixtures off __wrapped__
        def run(*args: Any, **kwargs: Any) -> Any:
            require(missing)
            return test(*args, **kwargs)

        return run

    return decorate


Runner = Callable[..., subprocess.CompletedProcess]


@pytest.fixture(scope="session")
def pcplab_command() -> list[str]:
    """Return the argv prefix of the installed pcplab console script."""
    script = Path(sysconfig.get_path("scripts")) / "pcplab"
    if script.exists():
        return [str(script)]
    found = shutil.which("pcplab")
    if found is None:
        pytest.fail("the pcplab command is not installed: run 'make setup'")
    return [found]


@pytest.fixture
def pcplab(pcplab_command: list[str]) -> Runner:
    """Return a function that runs `pcplab ARGS...` and returns the finished run."""

    def run(*args: object, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*pcplab_command, *(str(a) for a in args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    return run


@pytest.fixture
def bad_input(pcplab: Runner) -> Callable[..., str]:
    """Return a checker of the bad-input contract that returns the stderr line."""

    def check(*args: object, timeout: float = 60) -> str:
        proc = pcplab(*args, timeout=timeout)
        lines = proc.stderr.splitlines()
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        assert len(lines) == 1, proc.stderr
        assert proc.stdout == ""
        assert BAD_INPUT_LINE.match(lines[0]), lines[0]
        return lines[0]

    return check


def _check_schedule_5_to_0(result: dict[str, Any]) -> None:
    """Check a run with scale_max 5, 0.5 s of warm-up and 0 from 0.3 s on.

    The steps add up to the run's calls, and rmqueue_bulk is called more
    often and takes less time per call once the knob is 0 (batch instead of
    up to batch << 5).
    Had the schedule counted from the start of the run, the change would
    have come during the warm-up and both steps would be fast.
    """
    steps = result["scale_max_steps"]
    assert [(s["t_s"], s["scale_max"]) for s in steps] == [(0, 5), (0.3, 0)]
    for name in ("rmqueue_bulk", "free_pcppages_bulk"):
        total = result["latency_ns"][name]["count"]
        assert sum(s[name]["count"] for s in steps) == total
    before, after = (s["rmqueue_bulk"] for s in steps)
    assert before["count"] > 0 and after["count"] > 0
    # More calls a second once the knob is 0 (~18x native, 2.5x on the
    # sim's 8-task desktop), where a step timed from the start of the run
    # gives ~1x. Calls are counted, not timed: a native thread preempted
    # inside one call made the ratio of averages fall from ~12x to 2.4x
    # under load (1 in 6 runs beside two CPU hogs); call rates only move
    # with the throughput.
    switch, duration = steps[1]["t_s"], result["spec"]["duration_s"]
    rate_before = before["count"] / switch
    rate_after = after["count"] / (duration - switch)
    assert rate_after > 2 * rate_before, steps
    assert after["avg"] < before["avg"], steps


@pytest.fixture
def schedule_5_to_0_check() -> Callable[[dict[str, Any]], None]:
    """Return the check of a run whose scale-max schedule went from 5 to 0."""
    return _check_schedule_5_to_0


def child_pids(pid: int) -> list[int]:
    """Return the pids of PID's children (empty once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def gone_within(pid: int, within: float) -> bool:
    """Wait up to WITHIN seconds for PID to end; a zombie counts as ended."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False
