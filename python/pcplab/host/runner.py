"""Run pcplab-host: kernel-state snapshots and tracing at its phase changes.

The engine tells its phase changes on a socket (`sync_fd`, see
docs/host-engine.md) and waits for "go": at "measure-start" and
"measure-end" this side snapshots /proc/vmstat, /proc/zoneinfo and the
sysctls; at "trace-start" and "trace-end" it switches kernel tracing on and
off. The engine's JSON and these snapshots are merged into one result.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

from pcplab import engine
from pcplab.errors import BadInput, EngineError
from pcplab.host import lockstat, owner, procfs, profile, sysctl, trace
from pcplab.host.owner import Owner

DEFAULT_TRACE_S = 1.0
PMU_DIR = Path("/sys/bus/event_source/devices/cpu")
LOCK_STAT = Path("/proc/lock_stat")


def snapshot() -> dict[str, Any]:
    """Read the kernel state that a run records before and after measuring."""
    return {
        "vmstat": procfs.read_vmstat(),
        "pagesets": procfs.read_pagesets(),
        "sysctls": sysctl.read_recorded(),
    }


def _drain(stream: IO[str], sink: list[str]) -> None:
    """Read a pipe to its end and close it (a thread per pipe: no deadlock)."""
    with stream:
        sink.append(stream.read())


def _stop_engine(proc: subprocess.Popen[str]) -> None:
    """End the engine and its tasks: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class _Phases:
    """What happens at each phase change the engine announces."""

    def __init__(
        self,
        tracer: Any,
        locks: lockstat.Recorder | None = None,
        profiler: profile.Recorder | None = None,
    ) -> None:
        self.tracer = tracer
        self.locks = locks
        self.profiler = profiler
        self.lock_error: str | None = None
        self.profile_error: str | None = None
        self.before: dict[str, Any] | None = None
        self.after: dict[str, Any] | None = None
        self.trace_error: str | None = None
        self.traced = False

    def handle(self, event: str) -> None:
        """Act on one event; tracing failures are recorded, not fatal."""
        if event == "measure-start":
            self.before = snapshot()
            self._locks("start")
        elif event == "measure-end":
            self._locks("stop")
            self.after = snapshot()
        elif event == "trace-start" and self.tracer is not None:
            try:
                self.tracer.start()
                self.traced = True
            except (OSError, RuntimeError) as exc:
                self.trace_error = f"tracing failed to start: {exc}"
        elif event == "trace-end" and self.traced:
            self.tracer.stop()
        elif event not in ("trace-start", "trace-end"):
            raise EngineError(f"pcplab-host announced an unknown phase '{event}'")

    def _locks(self, action: str) -> None:
        """Switch the perf recorders on or off; a failure is recorded, not fatal."""
        recorders = ((self.locks, "lock_error"), (self.profiler, "profile_error"))
        for rec, error in recorders:
            if rec is None or getattr(self, error) is not None:
                continue
            try:
                getattr(rec, action)()
            except (OSError, RuntimeError) as exc:
                setattr(self, error, f"{rec.WHAT} failed to {action}: {exc}")
                rec.abort()


def run_engine(spec: dict[str, Any], phases: _Phases, owner: Owner) -> dict[str, Any]:
    """Run `pcplab-host run` with a sync socket; return its JSON result."""
    binary = engine.engine_binary("host")
    ours, theirs = socket.socketpair()
    request = json.dumps({**spec, "sync_fd": theirs.fileno()})
    try:
        proc = owner.spawn(  # it asks for its own parent-death signal
            [str(binary), "run"],
            "pcplab-host",
            pdeathsig=False,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=(theirs.fileno(),),
        )
    except OSError as exc:
        raise EngineError(f"cannot start {binary}: {exc.strerror}") from exc
    finally:
        theirs.close()
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True),
    ]
    try:
        for reader in readers:
            reader.start()
        assert proc.stdin is not None
        proc.stdin.write(request)
        proc.stdin.close()
        with ours.makefile("rw") as channel:
            for line in channel:
                phases.handle(line.strip())
                channel.write("go\n")
                channel.flush()
        proc.wait()
        owner.reaped(proc)
    except BaseException:
        _stop_engine(proc)
        if phases.tracer is not None:
            phases.tracer.abort()
        for rec in (phases.locks, phases.profiler):
            if rec is not None:
                rec.abort()
        raise
    finally:
        ours.close()
        for reader in readers:
            if reader.ident is not None:  # a signal may land before both started
                reader.join(timeout=30)
    message = "".join(err).strip()
    if proc.returncode == 2:
        raise BadInput.relayed(message or "pcplab: pcplab-host rejected its input")
    if proc.returncode != 0:
        raise EngineError(
            f"pcplab-host run failed (exit status {proc.returncode})"
            + (f": {message.removeprefix('pcplab: error: ')}" if message else "")
        )
    try:
        return json.loads("".join(out))
    except json.JSONDecodeError as exc:
        raise EngineError(f"pcplab-host run wrote no valid JSON: {exc}") from exc


def _contention_reason() -> str:
    """Say why zone/LRU lock contention percentages cannot be measured here."""
    pmu = (
        "no hardware PMU for perf cycle sampling"
        if not PMU_DIR.exists()
        else ("perf cycle sampling (LKP's method) is not wired into the host engine")
    )
    stat = (
        "no /proc/lock_stat (CONFIG_LOCK_STAT off)"
        if not LOCK_STAT.exists()
        else ("lock_stat is not read by the host engine")
    )
    return (
        "needs LKP's perf sampling of the spinlock slow path, or lock_stat: "
        f"{pmu}; {stat}"
    )


def merge_locks(
    result: dict[str, Any], locks: dict[str, Any] | None, reason: str | None
) -> None:
    """Put `lock_contention` and `contention` (or their reasons) in a result."""
    unavailable = result.setdefault("unavailable", {})
    unavailable.pop("lock_contention", None)
    if locks is None:
        result["lock_contention"] = None
        unavailable["lock_contention"] = f"not recorded: {reason}"
        unavailable["contention"] = (
            "needs perf lock contention of the measured phase: "
            f"{reason}; else {_contention_reason()}"
        )
        return
    result["lock_contention"] = locks
    result["contention"] = lockstat.contention_figures(locks)
    unavailable.pop("contention", None)
    result.setdefault("notes", []).append(
        "lock_contention: perf lock record -a during the measured phase "
        f"({locks['recorded_s']:.2f} s, system-wide); the throughput of record "
        "includes its cost (docs/host-engine.md)"
    )


def merge(
    result: dict[str, Any],
    phases: _Phases,
    probed: trace.Probe,
    tracing: dict[str, Any] | None,
    locks: dict[str, Any] | None = None,
    lock_reason: str | None = "off",
) -> dict[str, Any]:
    """Merge kernel snapshots and tracing into the engine's result."""
    unavailable = result.setdefault("unavailable", {})
    for key in (
        "lock_hold_ns",
        "pcp",
        "contention",
        "latency_ns.rmqueue_bulk",
        "latency_ns.free_pcppages_bulk",
    ):
        unavailable.pop(key, None)
    before, after = phases.before or {}, phases.after or {}
    delta = procfs.vmstat_delta(before.get("vmstat", {}), after.get("vmstat", {}))
    result["pagesets"] = procfs.schema_pagesets(before.get("pagesets", []))
    result["vmstat"] = procfs.vmstat_summary(delta)
    result["kernel"] = {
        "release": procfs.kernel_release(),
        "sysctls": before.get("sysctls", {}),
        "thp": {
            "enabled": procfs.thp_setting("enabled"),
            "defrag": procfs.thp_setting("defrag"),
        },
        "init_on_alloc": procfs.init_on_alloc(),
        "pagesets": {
            "before": before.get("pagesets", []),
            "after": after.get("pagesets", []),
        },
        "vmstat_delta": delta,
    }
    result["contention"] = None
    unavailable["contention"] = _contention_reason()
    merge_locks(result, locks, lock_reason)
    calls = (tracing or {}).get("calls_ns") or {}
    for name in trace.FUNCTIONS:
        result["latency_ns"][name] = calls.get(name)
        if calls.get(name) is None:
            unavailable[f"latency_ns.{name}"] = (
                f"entry-to-return timing of {name} needs kprobes or fentry: "
                + "; ".join(
                    f"{m}: {probed.reasons[m]}"
                    for m in ("bpftrace-kprobe", "bpftrace-fentry")
                    if m in probed.reasons
                )
                if tracing is not None
                else f"entry-to-return timing of {name} needs kernel tracing: "
                + probed.unavailable_reason()
            )
    if tracing is None:
        reason = phases.trace_error or probed.unavailable_reason()
        result["lock_hold_ns"] = None
        result["pcp"] = None
        unavailable["lock_hold_ns"] = f"needs kernel tracing: {reason}"
        unavailable["pcp"] = f"needs kernel tracing: {reason}"
        result["tracing"] = {"method": None, "probe": probed.reasons, "error": reason}
        return result
    refill, drain = tracing["refill"], tracing["drain"]
    result["lock_hold_ns"] = {"zone_lock": tracing["zone_lock_span_ns"]}
    result["pcp"] = {
        "refills": refill["calls"],
        "drains": drain["calls"],
        "pages_refilled": refill["pages"],
        "pages_drained": drain["pages"],
    }
    result["tracing"] = {**tracing, "probe": probed.reasons}
    result.setdefault("notes", []).extend(
        [
            f"tracing: {tracing['method']} during a traced phase of "
            f"{tracing['traced_s']:.2f} s after the measured one (throughput is "
            "measured untraced)",
            "lock_hold_ns.zone_lock: first-to-last event span of each tracepoint "
            "burst (one rmqueue_bulk or free_pcppages_bulk); it misses the work "
            "before the first and after the last page",
            "pcp: refills and drains counted during the traced phase only",
        ]
    )
    return result


def run(
    spec: dict[str, Any],
    *,
    trace_method: str = "auto",
    trace_s: float = DEFAULT_TRACE_S,
    gap_ns: int = trace.DEFAULT_GAP_NS,
    lock_stats: str | None = None,
    profile_with: str = "off",
) -> dict[str, Any]:
    """Run the host engine on `spec`, trace if permitted, return the merged result.

    lock_stats: "perf" records lock contention with perf (refused if perf lock
    cannot record here), "off" does not, None records it where permitted.
    profile_with: "perf" records perf-profile shares (refused if perf record
    cannot run here), "off" does not.
    """
    with owner.hold("pcplab run --engine host") as own:
        return _run_owned(
            spec, own, trace_method, trace_s, gap_ns, lock_stats, profile_with
        )


def _run_owned(
    spec: dict[str, Any],
    own: Owner,
    trace_method: str,
    trace_s: float,
    gap_ns: int,
    lock_stats: str | None,
    profile_with: str = "off",
) -> dict[str, Any]:
    """Run() with every child, directory and tracefs instance OWN's."""
    lock_reason = lock_stats_reason(lock_stats)
    profile_reason = profile_reason_for(profile_with)
    recorder = (
        lockstat.Recorder(int(spec["tasks"]), own) if lock_reason is None else None
    )
    profiler = (
        profile.Recorder(int(spec["tasks"]), own) if profile_reason is None else None
    )
    probed = (
        trace.probe(trace_method)
        if trace_s > 0
        else trace.Probe(None, {"off": "no traced phase (--trace-seconds 0)"})
    )
    tracer = trace.make_tracer(probed.method, own, gap_ns) if probed.method else None
    phases = _Phases(tracer, recorder, profiler)
    tracing = locks = profiled = None
    try:
        for rec in (recorder, profiler):
            if rec is not None:
                rec.launch()
        result = run_engine({**spec, "trace_s": trace_s if tracer else 0}, phases, own)
        if phases.traced:
            try:
                tracing = tracer.result()
            except (OSError, ValueError) as exc:
                phases.trace_error = f"the trace could not be analysed: {exc}"
        if recorder is not None and phases.lock_error is None:
            locks, phases.lock_error = _perf_result(recorder, "perf lock contention")
        if profiler is not None and phases.profile_error is None:
            profiled, phases.profile_error = _perf_result(profiler, "perf report")
    finally:
        for rec in (recorder, profiler):
            if rec is not None:
                rec.abort()
    merged = merge(
        result, phases, probed, tracing, locks, lock_reason or phases.lock_error
    )
    profile.merge(
        merged, profiled, profile_reason or phases.profile_error or "perf record failed"
    )
    return merged


def profile_reason_for(choice: str) -> str | None:
    """None if the perf-profile is to be recorded, else why not.

    An explicit "perf" that cannot record here is refused (exit 2).
    """
    if choice == "off":
        return "off (--profile off, the default; --profile perf records it)"
    reason = profile.probe()
    if reason is not None:
        raise BadInput(f"--profile perf: {reason}; use --profile off")
    return None


def _perf_result(recorder: Any, what: str) -> tuple[Any, str | None]:
    """Return a perf recorder's result, or None and why WHAT failed."""
    try:
        return recorder.result(), None
    except (OSError, ValueError, RuntimeError) as exc:
        return None, f"{what} failed: {exc}"
    except subprocess.TimeoutExpired:
        return None, f"{what} took over 600 s"


def lock_stats_reason(choice: str | None) -> str | None:
    """None if lock contention is to be recorded, else why not.

    An explicit "perf" that cannot record here is refused (exit 2).
    """
    if choice == "off":
        return "off (--lock-stats off)"
    reason = lockstat.probe()
    if reason is not None and choice == "perf":
        raise BadInput(f"--lock-stats perf: {reason}; use --lock-stats off")
    return reason
