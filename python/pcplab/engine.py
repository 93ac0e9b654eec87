"""Find and run the C engine binaries: a JSON request on stdin, JSON on stdout."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from pcplab.errors import BadInput, EngineError, InvariantViolation
from pcplab.guards import mark_incomplete

# The engines of the design; which of them are built is read from _bin.
KNOWN_ENGINES = ("native", "sim", "host")
DEFAULT_ENGINE = "native"
_PREFIX = "pcplab-"


def bin_dir() -> Path:
    """Return the directory where CMake installed the engine binaries."""
    return Path(__file__).resolve().parent / "_bin"


def built_engines() -> list[str]:
    """Return the names of the engines whose binaries are installed, sorted."""
    directory = bin_dir()
    if not directory.is_dir():
        return []
    return sorted(
        path.name.removeprefix(_PREFIX)
        for path in directory.iterdir()
        if path.name.startswith(_PREFIX) and os.access(path, os.X_OK)
    )


def engine_binary(engine: str) -> Path:
    """Return the binary of `engine`, or raise BadInput if it is not built."""
    built = built_engines()
    if engine in built:
        return bin_dir() / f"{_PREFIX}{engine}"
    allowed = ", ".join(built) or "none (run 'make setup')"
    if engine in KNOWN_ENGINES:
        raise BadInput(f"engine '{engine}' is not built yet; built engines: {allowed}")
    raise BadInput(f"unknown engine '{engine}'; built engines: {allowed}")


def _engine_list(command: str, engines: list[str]) -> tuple[dict[str, Any], ...]:
    """Return what the first built of ENGINES prints for COMMAND (a JSON list).

    The build writes the list beside the engines (CMakeLists.txt), so it is
    read from there without starting a binary where the build left it.
    """
    if not engines:
        return ()
    written = bin_dir() / f"{command}.json"
    if written.is_file():
        return tuple(json.loads(written.read_text()))
    binary = bin_dir() / f"{_PREFIX}{engines[0]}"
    proc = _spawn(binary, command, "")
    if proc.returncode:
        detail = proc.stderr.strip() or _describe_exit(proc.returncode)
        raise EngineError(f"{binary.name} {command} failed: {detail}")
    try:
        return tuple(json.loads(proc.stdout))
    except json.JSONDecodeError as exc:
        raise EngineError(f"{binary.name} {command} wrote no JSON: {exc}") from exc


@functools.cache
def list_workloads() -> tuple[dict[str, Any], ...]:
    """Return the workloads the engines know, as `pcplab-<engine> workloads` lists them.

    Each is {name, description, default_size_mib, default_tasks, placement,
    ops, engines}, sorted by name. Every engine links every workload's
    descriptor, so any built engine gives the same list; none built gives
    an empty one.
    """
    return _engine_list("workloads", built_engines())


@functools.cache
def list_policies() -> tuple[dict[str, Any], ...]:
    """Return the PCP policies of the model, as `pcplab-<engine> policies` lists them.

    Each is {name, summary, decides, needs}, sorted by name; the model
    engines (native, sim) link every policy file of src/mm/policies/. None
    built gives an empty list.
    """
    return _engine_list("policies", [e for e in built_engines() if e != "host"])


def workload_names(engine: str | None = None) -> list[str]:
    """Return the names of the workloads `engine` runs (any engine: None), sorted."""
    return [
        w["name"] for w in list_workloads() if engine is None or engine in w["engines"]
    ]


def _describe_exit(returncode: int) -> str:
    """Say how a child process ended, naming the signal if one killed it."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


# The engines running now, of every thread: stop_all() ends them when the
# command is interrupted while worker threads wait on them.
_running: set[subprocess.Popen[str]] = set()
_running_lock = threading.Lock()


def _spawn(binary: Path, command: str, text: str) -> subprocess.CompletedProcess:
    """Run `binary command` with `text` on stdin and wait; raise if it cannot start."""
    try:
        proc = subprocess.Popen(
            [str(binary), command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
    except OSError as exc:
        raise EngineError(f"cannot start {binary}: {exc.strerror}") from exc
    with _running_lock:
        _running.add(proc)
    try:
        with proc:
            try:
                out, err = proc.communicate(text)
            except BaseException:  # an interrupt: the engine ends with us
                proc.kill()
                raise
    finally:
        with _running_lock:
            _running.discard(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stop_all() -> None:
    """Kill every engine still running (the command is being interrupted)."""
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.kill()


def call(engine: str, command: str, request: dict[str, Any]) -> dict[str, Any]:
    """Run `pcplab-<engine> <command>` with `request` on stdin; return its reply."""
    binary = engine_binary(engine)
    what = f"{binary.name} {command}"
    try:
        text = json.dumps(request, allow_nan=False)
    except ValueError:
        raise BadInput(
            f"the {command} request holds a NaN or infinite number; give finite numbers"
        ) from None
    proc = _spawn(binary, command, text)
    message = proc.stderr.strip()
    if proc.returncode == 2:
        raise BadInput.relayed(message or f"pcplab: {what} rejected its input")
    if proc.returncode not in (0, 3):
        detail = f": {message}" if message else ""
        raise EngineError(f"{what} failed ({_describe_exit(proc.returncode)}){detail}")
    if message:
        print(message, file=sys.stderr)  # warnings of a successful run
    try:
        reply = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise EngineError(f"{what} wrote no valid JSON: {exc}") from exc
    if not isinstance(reply, dict):
        raise EngineError(f"{what} wrote JSON that is not an object")
    if proc.returncode == 3:
        violations = (reply.get("invariants") or {}).get("violations") or []
        first = violations[0] if violations else "no violation was named"
        raise InvariantViolation(
            f"invariant violated: {first} ({len(violations)} in all)", reply
        )
    return reply


def pagesets(request: dict[str, Any]) -> dict[str, Any]:
    """Ask the model for the batch, high_min and high_max of the request's zones."""
    return call(DEFAULT_ENGINE, "pagesets", request)


def resolve(spec: dict[str, Any]) -> dict[str, Any]:
    """Validate `spec` and fill in its defaults without running anything."""
    return call(spec.get("engine", DEFAULT_ENGINE), "resolve", spec)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Run `spec` on its engine; return the result with its `incomplete` field."""
    return mark_incomplete(call(spec.get("engine", DEFAULT_ENGINE), "run", spec))
