"""Fault injection on the host side: kill pcplab anywhere, damage its journal.

After SIGKILL at each point of `host sweep`, `host run` and `tune --engine
host`, the next `pcplab host info` must leave no process the killed one
started, no tracefs instance or temporary directory of it, its name out of
the kernel's lock and the sysctl at its original value. Root only, as CI
runs; each test restores the sysctl itself too, whatever happens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import child_pids, gone_within, needs
from pcplab.host import journal, sysctl

HF = sysctl.sysctl_path(sysctl.HIGH_FRACTION)
root_only = needs(None if os.geteuid() == 0 else "needs root (CI runs as root)")
TRACED = ("--trace", "tracefs-tracepoint", "--trace-seconds", "3")
WORKLOAD = ("--workload", "page_fault1", "--tasks", "1")


@pytest.fixture
def original():
    """Return the live high fraction; put it back after the test, whatever it did."""
    value = HF.read_text()
    yield value.strip()
    HF.write_text(value)


def _firsts(original: str) -> tuple[str, str]:
    """Two sweep values unlike the live one, so that each change shows."""
    return ("900", "100") if original == "1000" else ("1000", "100")


def _argv(*args: str) -> list[str]:
    """Return the installed pcplab command with ARGS."""
    import sysconfig

    return [str(Path(sysconfig.get_path("scripts")) / "pcplab"), *args]


def _commands(original: str) -> dict[str, list[str]]:
    """Return the host commands that change the kernel, as a user starts them."""
    first, second = _firsts(original)
    return {
        "host sweep": _argv(
            "host", "sweep", "--high-fraction", f"{first},{second}", *WORKLOAD,
            "--duration", "3", "--warmup", "0", *TRACED,
        ),
        "host run": _argv(
            "host", "run", "--high-fraction", first, *WORKLOAD,
            "--duration", "3", "--warmup", "0", *TRACED,
        ),
        "tune --engine host": _argv(
            "tune", "--engine", "host", *WORKLOAD, "--duration", "3",
            "--budget", "fault.p99=1s", "--trials", "2", "--plot",
            str(Path(tempfile.gettempdir()) / "pcplab-faults-tune.png"),
        ),
    }  # fmt: skip


def _record(state: Path) -> dict:
    """Return the journal in STATE as it stands, {} while there is none."""
    try:
        return json.loads((state / journal.JOURNAL_NAME).read_text())
    except (OSError, ValueError):
        return {}


# When to kill: a test of the journal's record and the live sysctl.
# (a sysctl changed in every one: a tune's first run keeps the defaults)
KILL_POINTS = {
    "perf recording": lambda rec, hf, second: (
        bool(rec.get("sysctls"))
        and any(c["what"] == "perf lock record" for c in rec.get("children", []))
    ),
    "tracefs instance live": lambda rec, hf, second: (
        bool(rec.get("sysctls")) and bool(rec.get("tracefs"))
    ),
    "second setting": lambda rec, hf, second: hf == second,
}
CASES = [
    ("host sweep", "perf recording"),
    ("host sweep", "tracefs instance live"),
    ("host sweep", "second setting"),
    ("host run", "perf recording"),
    ("host run", "tracefs instance live"),
    ("tune --engine host", "perf recording"),
    ("tune --engine host", "tracefs instance live"),
]


def _default_signals() -> None:
    """In the child: the signals' default actions, whatever the runner ignores.

    A pcplab started with SIGHUP ignored (nohup) rightly keeps ignoring it;
    the tests ask what it does with the signals a terminal would send.
    """
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def _descendants(pid: int) -> set[int]:
    """Every process below PID now."""
    found, todo = set(), [pid]
    while todo:
        for child in child_pids(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _start_and_wait(argv: list[str], state: Path, ready, second: str):
    """Start ARGV with a private state dir; return it once READY holds, or fail."""
    env = {**os.environ, "PCPLAB_STATE_DIR": str(state)}
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_signals,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        if ready(_record(state), HF.read_text().strip(), second):
            return proc
        time.sleep(0.01)
    proc.kill()
    _, err = proc.communicate()
    pytest.fail(f"the kill point never came (exit {proc.returncode}): {err[-500:]}")


def _leftovers(pid: int, started: set[int]) -> list[str]:
    """Return what of the killed command PID is still on the host."""
    found = [f"process {p}" for p in started if not gone_within(p, 2)]
    instances = Path("/sys/kernel/tracing/instances")
    found += [str(i) for i in instances.glob(f"pcplab-{pid}")]
    found += [str(d) for d in Path(tempfile.gettempdir()).glob(f"pcplab-{pid}-*")]
    lock = (journal.LOCK_DIR / journal.LOCK_NAME).read_text()
    if f'"pid": {pid}' in lock:
        found.append(f"the lock names pid {pid}")
    return found


@root_only
@pytest.mark.parametrize("command, point", CASES)
def test_sigkill_leaves_nothing_after_the_next_command(
    tmp_path, original, command, point
):
    """SIGKILL at a kill point; `host info` then undoes all the command left."""
    second = _firsts(original)[1]
    proc = _start_and_wait(
        _commands(original)[command], tmp_path, KILL_POINTS[point], second
    )
    started = _descendants(proc.pid)
    proc.kill()
    proc.communicate(timeout=30)
    assert HF.read_text().strip() != original  # the kill left the kernel changed
    info = subprocess.run(
        _argv("host", "info", "--no-probe"),
        capture_output=True,
        text=True,
        env={**os.environ, "PCPLAB_STATE_DIR": str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert info.returncode == 0, info.stderr
    assert HF.read_text().strip() == original, info.stderr
    assert f"restored {sysctl.HIGH_FRACTION} to {original}" in info.stderr
    assert _leftovers(proc.pid, started) == [], info.stderr
    assert not (tmp_path / journal.JOURNAL_NAME).exists()


@root_only
def test_a_second_sweep_with_another_state_dir_is_refused(tmp_path, original):
    """One lock per kernel: the second is refused; the sysctl ends at its original."""
    first, second = _firsts(original)
    one = _start_and_wait(
        _argv("host", "sweep", "--high-fraction", first, *WORKLOAD, "--duration", "30",
              "--trace", "off"),
        tmp_path / "one",
        lambda rec, hf, _: hf == first,
        second,
    )  # fmt: skip
    try:
        two = subprocess.run(
            _argv("host", "sweep", "--high-fraction", second, *WORKLOAD, "--trace",
                  "off"),
            capture_output=True,
            text=True,
            env={**os.environ, "PCPLAB_STATE_DIR": str(tmp_path / "two")},
            timeout=60,
            check=False,
        )  # fmt: skip
        assert two.returncode == 2
        lines = two.stderr.strip().splitlines()
        assert len(lines) == 1 and f"pid {one.pid}" in lines[0], lines
        assert HF.read_text().strip() == first  # the first sweep goes on
    finally:
        one.send_signal(signal.SIGTERM)
        one.communicate(timeout=60)
    assert HF.read_text().strip() == original


DAMAGES = {
    "empty": b"",
    "truncated": b'{"pid": 12, "sysctls": {"vm.percpu_',
    "binary garbage": bytes(range(256)) * 4,
    "a list": b"[]",
    "an unknown sysctl": json.dumps(
        {"pid": 2**22 + 1, "sysctls": {"vm.no_such_sysctl": "0"}}
    ).encode(),
    "a directory": None,
}


@root_only
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_journal_names_the_command_that_restores(tmp_path, original, damage):
    """One line names the command; it works; no internal error on the way."""
    path = tmp_path / journal.JOURNAL_NAME
    if DAMAGES[damage] is None:
        path.mkdir()
    else:
        path.write_bytes(DAMAGES[damage])
    HF.write_text("1000")
    env = {**os.environ, "PCPLAB_STATE_DIR": str(tmp_path)}
    info = subprocess.run(
        _argv("host", "info", "--no-probe"),
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert info.returncode == 0 and "internal error" not in info.stderr
    line = next(x for x in info.stderr.splitlines() if "damaged" in x)
    command = line.split("run '", 1)[1].rstrip("'").split()
    assert command[:3] == ["pcplab", "host", "restore"]
    sweep = subprocess.run(  # no change while what was changed is unknown
        _argv("host", "sweep", "--high-fraction", "100", *WORKLOAD, "--trace", "off"),
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert sweep.returncode == 1 and "damaged journal" in sweep.stderr
    assert HF.read_text().strip() == "1000"
    fixed = subprocess.run(
        _argv(*command[1:]), capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr
    assert HF.read_text().strip() == "0"
    assert journal.damaged_paths(tmp_path) == []


def _engine_of(proc: subprocess.Popen, name: str) -> int:
    """Wait for PROC's engine child NAME to start; return its pid."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for child in child_pids(proc.pid):
            try:
                if name in Path(f"/proc/{child}/cmdline").read_text():
                    return child
            except OSError:
                pass
        time.sleep(0.01)
    proc.kill()
    pytest.fail(f"{name} did not start")


MODEL_RUNS = {
    "sim": ["--engine", "sim", "--machine", "skylake-ex", "--workload", "page_fault1"],
    "native": ["--engine", "native", "--workload", "page_fault1", "--tasks", "2"],
}


@pytest.mark.parametrize("engine", MODEL_RUNS)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL, signal.SIGHUP])
def test_a_model_engine_dies_with_its_front_end(engine, signum):
    """No engine runs on 5 s after pcplab got the signal; TERM/HUP say so.

    An engine left behind runs its 600 s; one that dies can still take over
    a second to tear down a 192-CPU model's memory on a loaded 2-CPU guest
    (a CI run beside a fidelity run missed 1 s once).
    """
    proc = subprocess.Popen(
        _argv("run", *MODEL_RUNS[engine], "--duration", "600"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,  # under nohup SIGHUP comes in ignored
    )
    child = _engine_of(proc, f"pcplab-{engine}")
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert gone_within(child, 5.0)
    assert proc.returncode in (128 + signum, -signum)
    if signum != signal.SIGKILL:
        name = signal.Signals(signum).name
        assert err.strip().splitlines() == [f"pcplab: interrupted by {name}"]


@root_only
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_tune_on_the_host_says_it_was_interrupted(tmp_path, original, signum):
    """A signal between runs: one line, no blank one, nothing left behind."""
    proc = _start_and_wait(
        _commands(original)["tune --engine host"],
        tmp_path,
        KILL_POINTS["perf recording"],
        "",
    )
    started = _descendants(proc.pid)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    last = err.rstrip("\n").splitlines()
    assert last[-1].startswith(f"pcplab: interrupted by {signal.Signals(signum).name}")
    assert "" not in [x.strip() for x in last[-2:]]
    assert HF.read_text().strip() == original
    assert _leftovers(proc.pid, started) == []
