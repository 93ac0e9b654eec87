"""The host engine against the running kernel: every workload, root and not, restore."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import pcplab
from conftest import child_pids, gone_within, needs, require
from pcplab import engine
from pcplab.host import journal, procfs, sysctl

WORKLOADS = tuple(engine.workload_names("host"))  # src/workloads/*/host.c
SHORT = ("--tasks", "2", "--duration", "1", "--warmup", "0.3", "--size-mib", "32")
HF = Path("/proc/sys/vm/percpu_pagelist_high_fraction")
SYSTEM_PYTHON = Path("/usr/bin/python3")
root_only = needs(None if os.geteuid() == 0 else "needs root (CI runs as root)")


def _largest_pcp_block() -> int:
    """Return the base pages of the largest block a pcp list keeps: a THP's."""
    path = Path("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
    if not path.exists():
        return 1 << 3  # PAGE_ALLOC_COSTLY_ORDER: the largest order kept without THP
    return int(path.read_text()) // os.sysconf("SC_PAGE_SIZE")


def _json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _check_run(result: dict, workload: str) -> None:
    """Check what every host result must hold, whatever the workload."""
    assert result["engine"] == "host" and result["spec"]["workload"] == workload
    assert result["throughput"]["ops_per_s"] > 0
    assert result["throughput"]["pages_per_s"] > 0
    assert 0.9 <= result["duration_s"] <= 1.5
    assert len(result["samples"]) == 1 and result["samples"][0]["ops"] > 0
    fault = result["latency_ns"]["fault"]
    assert fault["count"] > 0 and 0 < fault["p50"] <= fault["p99"] <= fault["max"]
    assert sum(row[2] for row in fault["log2_hist"]) == fault["count"]
    assert result["invariants"] is None and "invariants" in result["unavailable"]
    if result["contention"] is None:  # perf lock not permitted (or --lock-stats off)
        assert "contention" in result["unavailable"]
        assert result["lock_contention"] is None
        assert "lock_contention" in result["unavailable"]
    else:
        assert "perf lock contention" in result["contention"]["method"]
        assert result["lock_contention"]["callers"]
    assert result["kernel"]["release"] == os.uname().release
    assert sysctl.HIGH_FRACTION in result["kernel"]["sysctls"]
    assert result["pagesets"] and all(p["batch"] >= 1 for p in result["pagesets"])
    # pages first-touched in the measured window were faulted then
    pages = result["throughput"]["pages_per_s"] * result["duration_s"]
    if workload != "page_fault3":  # shared file pages stay cached: no allocation
        assert result["vmstat"]["pgfault"] >= 0.8 * pages
        assert result["vmstat"]["pgalloc"] >= 0.8 * pages


@pytest.fixture(scope="module")
def unprivileged() -> Iterator[list[str]]:
    """Yield an argv prefix running pcplab as user nobody (no capabilities).

    The test's interpreter may live where nobody cannot read (/root), so the
    installed package and click are copied for the system Python. The state
    directory ($PCPLAB_STATE_DIR) is one that nobody may read.
    """
    able = os.geteuid() == 0 and shutil.which("setpriv") and SYSTEM_PYTHON.exists()
    require(
        None if able else "needs root, setpriv and /usr/bin/python3 to drop privileges"
    )
    import click
    import tabulate

    base = Path(tempfile.mkdtemp(prefix="pcplab-nobody-"))
    try:
        shutil.copytree(Path(pcplab.__file__).parent, base / "pkgs" / "pcplab")
        shutil.copytree(Path(click.__file__).parent, base / "pkgs" / "click")
        shutil.copytree(Path(tabulate.__file__).parent, base / "pkgs" / "tabulate")
        (base / "state").mkdir()
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755)
        yield [
            "env",
            f"PYTHONPATH={base / 'pkgs'}",
            f"PCPLAB_STATE_DIR={base / 'state'}",
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            str(SYSTEM_PYTHON),
            "-c",
            "import sys; from pcplab.cli import main; sys.exit(main())",
        ]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run(argv: list[str], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, **kw
    )


@root_only
@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_workload_runs_as_root(pcplab, workload):
    """A short run of each workload on this kernel, as root, untraced."""
    result = _json(
        pcplab(
            "host", "run", "--workload", workload, *SHORT, "--trace", "off", "--json"
        )
    )
    _check_run(result, workload)
    assert result["tracing"]["method"] is None


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_workload_runs_unprivileged(unprivileged, workload):
    """Each workload runs as nobody; tracing is reported unavailable, not faked."""
    result = _json(
        _run(
            [
                *unprivileged,
                "run",
                "--engine",
                "host",
                "--workload",
                workload,
                *SHORT,
                "--json",
            ]
        )
    )
    _check_run(result, workload)
    assert result["lock_hold_ns"] is None and result["pcp"] is None
    assert "needs root" in result["unavailable"]["pcp"]
    assert "needs root" in result["unavailable"]["latency_ns.rmqueue_bulk"]
    assert result["lock_contention"] is None and result["contention"] is None
    assert "needs root" in result["unavailable"]["lock_contention"]


def test_unprivileged_sweep_is_refused_before_anything_runs(unprivileged):
    """Without root a sweep (or a run that sets the sysctl) is refused on one line."""
    before = HF.read_text()
    for args in (
        ("host", "sweep", "--high-fraction", "0,8"),
        ("run", "--engine", "host", "--high-fraction", "8"),
    ):
        proc = _run(
            [
                *unprivileged,
                *args,
                "--workload",
                "page_fault1",
                "--tasks",
                "1",
                "--duration",
                "3600",
            ],
            timeout=30,
        )
        assert proc.returncode == 2 and proc.stdout == ""
        assert len(proc.stderr.splitlines()) == 1 and "needs root" in proc.stderr
        assert HF.read_text() == before


def test_thread_mode_and_untimed(pcplab):
    """Threads share one mm; an untimed run reports no fault latency, and says why."""
    threads = _json(
        pcplab(
            "host",
            "run",
            "--workload",
            "page_fault1",
            *SHORT,
            "--mode",
            "thread",
            "--trace",
            "off",
            "--json",
        )
    )
    assert (
        threads["spec"]["mode"] == "thread" and threads["throughput"]["ops_per_s"] > 0
    )
    untimed = _json(
        pcplab(
            "host",
            "run",
            "--workload",
            "page_fault1",
            *SHORT,
            "--untimed",
            "--trace",
            "off",
            "--json",
        )
    )
    assert untimed["latency_ns"]["fault"] is None
    assert "untimed" in untimed["unavailable"]["latency_ns.fault"]
    assert untimed["throughput"]["ops_per_s"] > 0


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (("--batch", "63"), "batch is a model knob"),
        (("--scale-max", "0"), "scale_max is a model knob"),
        (("--kernel", "4.18"), "kernel is a model knob"),
        (("--high-fraction", "7"), "high_fraction 7 is out of range"),
        (("--workload", "nosuch"), "unknown workload 'nosuch'"),
        (("--size-mib", "0"), "size_mib 0 is out of range"),
    ],
)
def test_bad_input_is_one_line_and_runs_nothing(bad_input, args, pattern):
    """Model knobs and bad values: one stderr line, exit 2, nothing run."""
    started = time.monotonic()
    base = [
        "run",
        "--engine",
        "host",
        "--workload",
        "page_fault1",
        "--tasks",
        "1",
        "--duration",
        "3600",
    ]
    line = bad_input(*base, *args)
    assert pattern in line
    assert time.monotonic() - started < 30


def test_engine_protocol_errors():
    """pcplab-host itself: exit 2 and one line for bad specs and commands."""
    binary = engine.engine_binary("host")
    for spec, pattern in (
        ({"workload": "page_fault1", "tasks": 1, "relinquish": "off"}, "model knob"),
        ({"workload": "page_fault1", "tasks": 1, "trace_s": 1}, "needs sync_fd"),
        ({"workload": "page_fault1", "tasks": 1, "mode": "fiber"}, "unknown mode"),
        ({"workload": "page_fault1", "tasks": 1, "bogus": 1}, "unknown spec key"),
        ({"workload": "page_fault1"}, "tasks is required"),
        ({"workload": "page_fault1", "tasks": 1, "engine": "native"}, "host engine"),
    ):
        proc = _run([str(binary), "resolve"], input=json.dumps(spec), timeout=10)
        assert proc.returncode == 2 and proc.stdout == "", (spec, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and pattern in proc.stderr
    resolved = _json(
        _run([str(binary), "resolve"], input='{"workload":"page_fault2","tasks":3}')
    )
    assert resolved["memory_bytes"] == 2 * 3 * 128 << 20  # page cache + copies
    assert resolved["mode"] == "process" and resolved["timed"] is True


def test_high_fraction_must_be_in_force():
    """The engine refuses a high_fraction not in force (the front end sets it)."""
    live = int(HF.read_text())
    other = 1000 if live != 1000 else 100
    proc = _run(
        [str(engine.engine_binary("host")), "run"],
        input=json.dumps(
            {"workload": "page_fault1", "tasks": 1, "high_fraction": other}
        ),
        timeout=10,
    )
    assert proc.returncode == 2 and "is not in force" in proc.stderr


def test_memory_guard_refuses_before_running(bad_input):
    """A run larger than MemAvailable less the margin is refused at once."""
    size = procfs.read_meminfo()["MemAvailable"] // (1 << 20)
    before = HF.read_text()
    line = bad_input(
        "run",
        "--engine",
        "host",
        "--workload",
        "mmap_fill",
        "--tasks",
        "2",
        "--size-mib",
        size,
        "--duration",
        "3600",
        timeout=30,
    )
    assert "MemAvailable" in line
    line = bad_input(
        "host",
        "sweep",
        "--high-fraction",
        "0,8",
        "--workload",
        "page_fault2",
        "--tasks",
        "1",
        "--size-mib",
        size,
        "--duration",
        "3600",
        timeout=30,
    )
    assert "MemAvailable" in line if os.geteuid() == 0 else "needs root" in line
    assert HF.read_text() == before


def test_live_vmstat_and_pagesets():
    """The live /proc files parse: event counters and a pageset per CPU per zone."""
    vm = procfs.read_vmstat()
    assert vm["pgfault"] > 0 and any(k.startswith("pgalloc_") for k in vm)
    zones = procfs.read_pagesets()
    assert zones and all(z["managed_pages"] > 0 for z in zones)
    for zone in zones:
        assert len(zone["cpus"]) >= (os.cpu_count() or 1)
        for cpu in zone["cpus"]:
            assert cpu["batch"] >= 1 and cpu["count"] >= 0
            if cpu["high_min"] is not None:  # pcp->high is clamped lazily
                assert 0 <= cpu["high_min"] <= cpu["high_max"]


@root_only
def test_host_info(pcplab):
    """`pcplab host info` shows this kernel's release, sysctls and pagesets."""
    info = _json(pcplab("host", "info", "--json"))
    assert info["kernel"] == os.uname().release
    assert info["sysctls"][sysctl.HIGH_FRACTION] == HF.read_text().strip()
    live = procfs.read_pagesets()
    assert [(z["zone"], len(z["cpus"])) for z in info["pagesets"]] == [
        (z["zone"], len(z["cpus"])) for z in live
    ]
    assert info["tracing"]["reasons"]
    text = pcplab("host", "info", "--no-probe")
    assert text.returncode == 0 and "percpu_pagelist_high_fraction" in text.stdout


@root_only
def test_traced_run_at_a_high_fraction(pcplab, tmp_path):
    """Live tracepoint bursts obey the PCP rules; the sysctl comes back."""
    before = HF.read_text()
    # what the lists may hold when the fraction is written: up to the cap
    # of the high in force before (auto-tuned up to high_max since 6.7)
    normal_before = [z for z in procfs.read_pagesets() if z["zone"] == "Normal"]
    high_max_before = max(
        c["high_max"] or c["high"] for z in normal_before for c in z["cpus"]
    )
    env = {**os.environ, "PCPLAB_STATE_DIR": str(tmp_path)}
    result = _json(
        _run(
            [
                *_pcplab_argv(),
                "host",
                "run",
                "--workload",
                "page_fault1",
                "--tasks",
                "2",
                "--duration",
                "0.5",
                "--warmup",
                "0.2",
                "--high-fraction",
                "1000",
                "--trace",
                "tracefs-tracepoint",
                "--trace-seconds",
                "0.3",
                "--json",
            ],
            env=env,
        )
    )
    assert HF.read_text() == before
    unavailable = result["tracing"]["method"] is None
    require(
        f"tracing unavailable: {result['tracing']['error']}" if unavailable else None
    )
    tracing = result["tracing"]
    assert tracing["method"] == "tracefs-tracepoint"
    normal = next(p for p in result["pagesets"] if p["zone"] == "Normal")
    assert normal["high_min"] == normal["high_max"]  # fraction set: no auto-tuning
    drain = tracing["drain"]
    assert drain["calls"] > 0 and result["pcp"]["drains"] == drain["calls"]
    # a drain frees at most what the list holds, which passes high by the
    # last block freed into it: up to a THP's pages less one, as the pcp
    # lists keep HPAGE_PMD_ORDER blocks (any process's, e.g. a huge page
    # madvised elsewhere). Writing the fraction lowers high but drains
    # nothing: a list filled under the high of before empties later, in
    # drains that drain_pages_zone() repeats back to back (one burst).
    slack = _largest_pcp_block() - 1
    assert drain["pages_per_call"]["max"] <= (
        max(normal["high_max"], high_max_before) + slack
    )
    # the run's own drains (most calls) keep to the new high
    assert drain["pages_per_call"]["p50"] <= normal["high_max"] + slack
    assert tracing["refill"]["calls"] > 0
    assert result["lock_hold_ns"]["zone_lock"]["count"] == (
        drain["calls"] + tracing["refill"]["calls"]
    )
    assert result["latency_ns"]["rmqueue_bulk"] is None
    assert "kprobes or fentry" in result["unavailable"]["latency_ns.rmqueue_bulk"]


def _pcplab_argv() -> list[str]:
    import sysconfig

    script = Path(sysconfig.get_path("scripts")) / "pcplab"
    return [str(script)] if script.exists() else [shutil.which("pcplab") or "pcplab"]


def _sweep_first() -> str:
    """Return a first sweep value unlike the live one, so the change shows."""
    return "900" if HF.read_text().strip() == "1000" else "1000"


def _start_sweep(tmp_path: Path) -> subprocess.Popen:
    """Start a long sweep with a private journal; return once it changed the sysctl."""
    first = _sweep_first()
    env = {**os.environ, "PCPLAB_STATE_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [
            *_pcplab_argv(),
            "host",
            "sweep",
            "--high-fraction",
            f"{first},100",
            "--workload",
            "page_fault1",
            "--tasks",
            "1",
            "--duration",
            "60",
            "--warmup",
            "0",
            "--trace",
            "off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (
            tmp_path / journal.JOURNAL_NAME
        ).exists() and HF.read_text().strip() == first:
            if child_pids(proc.pid):
                return proc
        time.sleep(0.05)
    proc.kill()
    proc.communicate()
    pytest.fail("the sweep did not start")


@root_only
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sweep_restores_on_signal(tmp_path, signum):
    """SIGTERM or SIGINT: the sweep stops its engine and restores the sysctl."""
    original = HF.read_text()
    proc = _start_sweep(tmp_path)
    engine_pid = child_pids(proc.pid)[0]
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert HF.read_text() == original
    assert not (tmp_path / journal.JOURNAL_NAME).exists()
    last = err.strip().splitlines()[-1]
    assert f"interrupted by {signal.Signals(signum).name}" in last
    assert f"restored {sysctl.HIGH_FRACTION} to {original.strip()}" in last
    assert gone_within(engine_pid, 10)


@root_only
def test_sweep_killed_leaves_its_journal_for_the_next_command(tmp_path, pcplab_command):
    """SIGKILL: the journal stays, the tasks die, the next host command restores."""
    original = HF.read_text()
    first = _sweep_first()
    proc = _start_sweep(tmp_path)
    engine_pid = child_pids(proc.pid)[0]
    try:
        proc.kill()
        proc.communicate(timeout=30)
        assert HF.read_text().strip() == first
        record = json.loads((tmp_path / journal.JOURNAL_NAME).read_text())
        assert record["sysctls"] == {sysctl.HIGH_FRACTION: original.strip()}
        assert record["pid"] == proc.pid
        assert gone_within(engine_pid, 10)  # the engine follows its parent (PDEATHSIG)
        info = _run(
            [*pcplab_command, "host", "info", "--no-probe"],
            env={**os.environ, "PCPLAB_STATE_DIR": str(tmp_path)},
        )
        assert info.returncode == 0, info.stderr
        assert f"restored {sysctl.HIGH_FRACTION} to {original.strip()}" in info.stderr
        assert f"pid {proc.pid}" in info.stderr
        assert HF.read_text() == original
        assert not (tmp_path / journal.JOURNAL_NAME).exists()
    finally:
        HF.write_text(original)


@root_only
def test_restore_command(tmp_path, pcplab_command):
    """`pcplab host restore` writes back a journal's values and removes it."""
    original = HF.read_text()
    env = {**os.environ, "PCPLAB_STATE_DIR": str(tmp_path)}
    try:
        (tmp_path / journal.JOURNAL_NAME).write_text(
            json.dumps({"pid": 1, "sysctls": {sysctl.HIGH_FRACTION: original.strip()}})
        )
        HF.write_text("100")
        proc = _run([*pcplab_command, "host", "restore"], env=env)
        assert proc.returncode == 0, proc.stderr
        assert "restored" in proc.stderr and HF.read_text() == original
        again = _run([*pcplab_command, "host", "restore"], env=env)
        assert again.returncode == 0 and "nothing to restore" in again.stderr
    finally:
        HF.write_text(original)


def test_overhead_and_compare(pcplab):
    """Overhead reports timed vs untimed; compare prints host and model.

    The overhead figure itself is a benchmark (docs/host-engine.md), not
    asserted here: one 0.5 s round on a shared 2-CPU machine is noise.
    """
    data = _json(
        pcplab(
            "host",
            "overhead",
            "--workload",
            "page_fault1",
            "--tasks",
            "1",
            "--duration",
            "0.5",
            "--warmup",
            "0.2",
            "--rounds",
            "1",
            "--json",
        )
    )
    assert data["median_timed"] > 0 and data["median_untimed"] > 0
    expected = 100 * (1 - data["median_timed"] / data["median_untimed"])
    assert data["overhead_pct"] == pytest.approx(expected, abs=0.01)
    compared = _json(
        pcplab(
            "compare",
            "--workload",
            "page_fault1",
            "--tasks",
            "1",
            "--duration",
            "0.5",
            "--warmup",
            "0.2",
            "--model",
            "native",
            "--trace",
            "off",
            "--json",
        )
    )
    rows = {r["metric"]: r for r in compared["rows"]}
    ops = rows["ops/s"]
    assert ops["host"] == compared["host"]["throughput"]["ops_per_s"] > 0
    assert ops["native"] == compared["model"]["throughput"]["ops_per_s"] > 0
    assert float(ops["ratio"]) == pytest.approx(ops["native"] / ops["host"], rel=1e-2)
    text = pcplab(
        "compare",
        "--workload",
        "page_fault1",
        "--tasks",
        "1",
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--trace",
        "off",
    )
    assert text.returncode == 0 and "native/host" in text.stdout
