"""Kernel-side tracing of the PCP: probe what the kernel permits, trace, analyse.

Methods, best first (`probe()` picks the first that works here):

- ``bpftrace-kprobe`` / ``bpftrace-fentry``: kprobes (or fentry) on
  rmqueue_bulk and free_pcppages_bulk time each call from entry to return,
  as funclatency does; the kmem tracepoints give pages per call.
- ``tracefs-tracepoint``: no kprobes or fentry, but tracepoints. A burst of
  kmem:mm_page_alloc_zone_locked events with percpu_refill=1 on one CPU is
  one rmqueue_bulk, a burst of kmem:mm_page_pcpu_drain is one
  free_pcppages_bulk, and the first-to-last span of a burst approximates
  the time under zone->lock. The events come from a private tracefs
  instance's ring buffer (per-CPU, nanosecond timestamps), read raw and
  joined into bursts (`bursts`).
- ``bpftrace-tracepoint``: the same bursts, joined in the kernel by a BPF
  program that prints one line per burst (costlier per event; see METHODS).

Bursts and their statistics are in `bursts`, the raw ring-buffer decoder in
`ringbuffer`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pcplab.host import journal
from pcplab.host.bursts import (
    DEFAULT_GAP_NS,
    Burst,
    BurstSet,
    analysis,
    join_bursts,
    stats,
)
from pcplab.host.owner import Owner, remove_instance
from pcplab.host.ringbuffer import decode_raw, parse_format, parse_header_page

TRACEFS = journal.TRACEFS
KALLSYMS = Path("/proc/kallsyms")
BTF_VMLINUX = Path("/sys/kernel/btf/vmlinux")
REFILL_EVENT = "kmem/mm_page_alloc_zone_locked"
DRAIN_EVENT = "kmem/mm_page_pcpu_drain"
FUNCTIONS = ("rmqueue_bulk", "free_pcppages_bulk")
DEFAULT_BUFFER_KB = 32768  # per CPU, tracefs method
# tracefs before bpftrace for tracepoints: the BPF program's own cost per
# event (maps keyed by CPU) inflated the measured span per page 3.5-fold on
# the development machine and split bursts (docs/host-engine.md).
METHODS = (
    "bpftrace-kprobe",
    "bpftrace-fentry",
    "tracefs-tracepoint",
    "bpftrace-tracepoint",
)
CHOICES = ("auto", *METHODS, "off")
ATTACH_TIMEOUT_S = 60.0


def parse_bpftrace_bursts(
    lines: Iterable[str],
) -> tuple[list[Burst], list[Burst], dict[str, list[int]], int]:
    """Parse the burst lines of BPFTRACE_BURSTS (and call lines, lost counts).

    Returns (refill bursts, drain bursts, {function: [ns, ...]}, lost events);
    the first burst of each CPU and kind is dropped (maybe cut by attaching).
    """
    seen: set[tuple[str, int]] = set()
    refills: list[Burst] = []
    drains: list[Burst] = []
    calls: dict[str, list[int]] = {name: [] for name in FUNCTIONS}
    lost = 0
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        if parts[0] in ("R", "D") and len(parts) == 6:
            cpu, start, end, pages, events = (int(p) for p in parts[1:])
            if (parts[0], cpu) not in seen:
                seen.add((parts[0], cpu))
                continue
            target = refills if parts[0] == "R" else drains
            target.append(Burst(cpu, start, end, pages, events))
        elif parts[0] in ("r", "f") and len(parts) == 2:
            calls[FUNCTIONS[parts[0] == "f"]].append(int(parts[1]))
        elif line.startswith("Lost ") and len(parts) > 1 and parts[1].isdigit():
            lost += int(parts[1])
    return refills, drains, calls, lost


# --------------------------------------------------------------------------
# Probing


@dataclass
class Probe:
    """What tracing this kernel permits: the chosen method and every reason."""

    method: str | None
    reasons: dict[str, str]  # method: "ok" or why it cannot be used
    mounted_tracefs: bool = False

    def unavailable_reason(self) -> str:
        """One line saying why no method can be used."""
        return "; ".join(f"{m}: {r}" for m, r in self.reasons.items())


def _has_symbol(name: str) -> bool:
    """Tell whether /proc/kallsyms has a function `name` (not inlined away)."""
    try:
        with KALLSYMS.open() as f:
            return any(line.split()[2] == name for line in f if len(line.split()) > 2)
    except OSError:
        return False


def ensure_tracefs() -> tuple[bool, str | None]:
    """Mount tracefs if needed; return (mounted by us, error or None)."""
    if (TRACEFS / "events").is_dir():
        return False, None
    try:
        subprocess.run(
            ["mount", "-t", "tracefs", "nodev", str(TRACEFS)],
            check=True,
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        return False, f"tracefs is not mounted and cannot be: {detail.strip()}"
    return True, None


def _bpftrace_attaches(program: str) -> str:
    """Try a bpftrace program that exits at once; return "ok" or the error line."""
    try:
        proc = subprocess.run(
            ["bpftrace", "-e", program],
            capture_output=True,
            text=True,
            timeout=ATTACH_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bpftrace did not run: {exc}"
    if proc.returncode == 0:
        return "ok"
    errors = [
        line.strip()
        for line in (proc.stderr + proc.stdout).splitlines()
        if "ERROR" in line or "rror" in line
    ]
    return errors[-1] if errors else f"bpftrace exited {proc.returncode}"


def _bpftrace_has_kfunc() -> bool:
    """Tell whether bpftrace --info reports kfunc (fentry) support."""
    try:
        proc = subprocess.run(
            ["bpftrace", "--info"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    match = re.search(r"^\s*kfunc:\s*(\w+)", proc.stdout + proc.stderr, re.M)
    return match is not None and match.group(1) == "yes"


def probe(preference: str = "auto") -> Probe:
    """Find the best tracing method this kernel permits (tried, not assumed)."""
    wanted = METHODS if preference == "auto" else (preference,)
    reasons: dict[str, str] = {}
    if preference == "off":
        return Probe(None, {"off": "tracing was switched off (--trace off)"})
    if os.geteuid() != 0:
        return Probe(
            None, {"tracing": "needs root (tracefs and BPF need CAP_SYS_ADMIN)"}
        )
    mounted, error = ensure_tracefs()
    if error:
        return Probe(None, {m: error for m in wanted})
    events_ok = all(
        (TRACEFS / "events" / e / "format").exists()
        for e in (REFILL_EVENT, DRAIN_EVENT)
    )
    bpftrace = shutil.which("bpftrace")
    missing_syms = [f for f in FUNCTIONS if not _has_symbol(f)]
    for method in wanted:
        if method.startswith("bpftrace") and bpftrace is None:
            reasons[method] = "bpftrace is not installed (apt-get install bpftrace)"
        elif method.endswith("tracepoint") and not events_ok:
            reasons[method] = f"no {REFILL_EVENT} / {DRAIN_EVENT} tracepoints"
        elif method == "bpftrace-kprobe" and not (TRACEFS / "kprobe_events").exists():
            reasons[method] = "this kernel has no kprobes (no kprobe_events in tracefs)"
        elif method == "bpftrace-fentry" and not BTF_VMLINUX.exists():
            reasons[method] = "fentry needs BTF (/sys/kernel/btf/vmlinux is missing)"
        elif method == "bpftrace-fentry" and not _bpftrace_has_kfunc():
            reasons[method] = "this kernel has no fentry (bpftrace --info: kfunc: no)"
        elif method in ("bpftrace-kprobe", "bpftrace-fentry") and missing_syms:
            reasons[method] = (
                f"{', '.join(missing_syms)} not in /proc/kallsyms (inlined?)"
            )
        else:
            test = {
                "bpftrace-kprobe": "kprobe:free_pcppages_bulk {} BEGIN { exit(); }",
                "bpftrace-fentry": "kfunc:free_pcppages_bulk {} BEGIN { exit(); }",
                "bpftrace-tracepoint": (
                    "tracepoint:kmem:mm_page_pcpu_drain {} BEGIN { exit(); }"
                ),
            }.get(method)
            reasons[method] = _bpftrace_attaches(test) if test else "ok"
        if reasons[method] == "ok":
            return Probe(method, reasons, mounted)
    return Probe(None, reasons, mounted)


# --------------------------------------------------------------------------
# Tracers: start() when the traced phase begins, stop() when it ends,
# result() afterwards.

BPFTRACE_BURSTS = r"""
BEGIN { printf("ready\n"); }
tracepoint:kmem:mm_page_alloc_zone_locked /args->percpu_refill == 1/ {
  $t = nsecs;
  if ($t - @rl[cpu] >= GAP) {
    if (@rn[cpu] > 0) {
      printf("R %d %lld %lld %d %d\n", cpu, @rs[cpu], @rl[cpu], @rn[cpu], @re[cpu]);
    }
    @rs[cpu] = $t; @rn[cpu] = 0; @re[cpu] = 0;
  }
  @rn[cpu] = @rn[cpu] + (1 << args->order); @re[cpu] = @re[cpu] + 1; @rl[cpu] = $t;
}
tracepoint:kmem:mm_page_pcpu_drain {
  $t = nsecs;
  if ($t - @dl[cpu] >= GAP) {
    if (@dn[cpu] > 0) {
      printf("D %d %lld %lld %d %d\n", cpu, @ds[cpu], @dl[cpu], @dn[cpu], @de[cpu]);
    }
    @ds[cpu] = $t; @dn[cpu] = 0; @de[cpu] = 0;
  }
  @dn[cpu] = @dn[cpu] + (1 << args->order); @de[cpu] = @de[cpu] + 1; @dl[cpu] = $t;
}
END { clear(@rs); clear(@rl); clear(@rn); clear(@re);
      clear(@ds); clear(@dl); clear(@dn); clear(@de); }
"""

BPFTRACE_CALLS = r"""
ENTRY:rmqueue_bulk { @t[tid] = nsecs; }
EXIT:rmqueue_bulk /@t[tid]/ { printf("r %lld\n", nsecs - @t[tid]); delete(@t[tid]); }
ENTRY:free_pcppages_bulk { @t[tid] = nsecs; }
EXIT:free_pcppages_bulk /@t[tid]/ {
  printf("f %lld\n", nsecs - @t[tid]); delete(@t[tid]);
}
"""


def bpftrace_program(method: str, gap_ns: int) -> str:
    """Return the bpftrace program of a bpftrace method."""
    program = BPFTRACE_BURSTS.replace("GAP", str(int(gap_ns)))
    if method == "bpftrace-kprobe":
        program += BPFTRACE_CALLS.replace("ENTRY", "kprobe").replace(
            "EXIT", "kretprobe"
        )
    elif method == "bpftrace-fentry":
        program += BPFTRACE_CALLS.replace("ENTRY", "kfunc").replace("EXIT", "kretfunc")
    return program


class BpftraceTracer:
    """Run bpftrace for the traced phase; bursts are joined in the kernel."""

    def __init__(self, method: str, gap_ns: int, owner: Owner) -> None:
        self.method = method
        self.owner = owner
        self.gap_ns = gap_ns
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.seconds = 0.0
        self._started = 0.0
        self._reader: threading.Thread | None = None

    def _read(self, stream: IO[str], sink: list[str], ready: threading.Event) -> None:
        for line in stream:
            if line.strip() == "ready":
                ready.set()
            sink.append(line)
        ready.set()

    def start(self) -> None:
        """Start bpftrace and return once its probes are attached."""
        self.proc = self.owner.spawn(
            ["bpftrace", "-e", bpftrace_program(self.method, self.gap_ns)],
            "bpftrace",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ready = threading.Event()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._reader = threading.Thread(
            target=self._read, args=(self.proc.stdout, self.lines, ready), daemon=True
        )
        self._reader.start()
        threading.Thread(
            target=self._read,
            args=(self.proc.stderr, self.errors, threading.Event()),
            daemon=True,
        ).start()
        if not ready.wait(ATTACH_TIMEOUT_S) or self.proc.poll() is not None:
            self.abort()
            raise RuntimeError(
                "bpftrace did not attach: "
                + (" ".join(e.strip() for e in self.errors) or "timed out")
            )
        self._started = time.monotonic()

    def stop(self) -> None:
        """Detach: SIGINT makes bpftrace run END and exit."""
        self.seconds = time.monotonic() - self._started
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=ATTACH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.owner.reaped(self.proc)
        if self._reader is not None:
            self._reader.join(timeout=10)

    def abort(self) -> None:
        """Kill bpftrace if it still runs (error paths)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None:
            self.owner.reaped(self.proc)

    def result(self) -> dict[str, Any]:
        """Analyse the burst lines into the tracing section of the result."""
        refills, drains, calls, lost = parse_bpftrace_bursts(self.lines + self.errors)
        sets = [
            BurstSet(bursts=b, events=sum(x.events for x in b))
            for b in (refills, drains)
        ]
        out = analysis(self.method, sets[0], sets[1], self.gap_ns, self.seconds, lost)
        for kind in ("refill", "drain"):  # joined in the kernel: no gap diagnostics
            out[kind]["gap_inside_p99_ns"] = None
            out[kind]["gaps_near_threshold"] = None
        if self.method != "bpftrace-tracepoint":
            out["calls_ns"] = {name: stats(v) for name, v in calls.items()}
        return out


class TracefsTracer:
    """A private tracefs instance whose ring buffer is read raw after tracing."""

    def __init__(
        self, gap_ns: int, owner: Owner, buffer_kb: int = DEFAULT_BUFFER_KB
    ) -> None:
        self.gap_ns = gap_ns
        self.owner = owner
        self.buffer_kb = buffer_kb
        self.dir = TRACEFS / "instances" / f"pcplab-{os.getpid()}"
        self.seconds = 0.0
        self._started = 0.0
        self.pages: dict[int, list[bytes]] = {}
        self.lost = 0

    def _write(self, rel: str, value: str) -> None:
        (self.dir / rel).write_text(value)

    def start(self) -> None:
        """Create the instance, enable the two events, switch tracing on."""
        self.owner.tracefs_instance(self.dir)  # journalled before it exists
        self.dir.mkdir()
        try:
            self._write("tracing_on", "0")
            self._write("buffer_size_kb", str(self.buffer_kb))
            self._write("options/overwrite", "0")  # keep the oldest when full
            self._write("trace_clock", "local")
            self._write(f"events/{REFILL_EVENT}/filter", "percpu_refill == 1")
            self._write(f"events/{REFILL_EVENT}/enable", "1")
            self._write(f"events/{DRAIN_EVENT}/enable", "1")
            self._write("tracing_on", "1")
        except OSError:
            self.abort()
            raise
        self._started = time.monotonic()

    def stop(self) -> None:
        """Switch tracing off and read every CPU's raw buffer."""
        self._write("tracing_on", "0")
        self.seconds = time.monotonic() - self._started
        page_size = int(self._read_text("buffer_subbuf_size_kb", "4")) * 1024
        for cpu_dir in sorted((self.dir / "per_cpu").glob("cpu*")):
            cpu = int(cpu_dir.name[3:])
            self.pages[cpu] = _read_raw(cpu_dir / "trace_pipe_raw", page_size)
            self.lost += _lost_events(cpu_dir / "stats")
        self.abort()

    def _read_text(self, rel: str, default: str) -> str:
        try:
            return (self.dir / rel).read_text().strip()
        except OSError:
            return default

    def abort(self) -> None:
        """Switch the instance off and remove it (error paths too)."""
        if self.dir.exists():
            remove_instance(self.dir)
        if not self.dir.exists():
            self.owner.instance_removed(self.dir)

    def result(self) -> dict[str, Any]:
        """Decode the raw buffers, join bursts, and summarize both kinds."""
        events = TRACEFS / "events"
        header = parse_header_page((events / "header_page").read_text())
        refill_fmt = parse_format(
            REFILL_EVENT, (events / REFILL_EVENT / "format").read_text()
        )
        drain_fmt = parse_format(
            DRAIN_EVENT, (events / DRAIN_EVENT / "format").read_text()
        )
        refills, drains = decode_raw(self.pages, header, refill_fmt, drain_fmt)
        return analysis(
            "tracefs-tracepoint",
            join_bursts(refills, self.gap_ns),
            join_bursts(drains, self.gap_ns),
            self.gap_ns,
            self.seconds,
            self.lost,
        )


def _read_raw(path: Path, page_size: int) -> list[bytes]:
    """Read every page a CPU's trace_pipe_raw holds, without blocking."""
    pages = []
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            try:
                chunk = os.read(fd, page_size)
            except BlockingIOError:
                break
            if not chunk:
                break
            pages.append(chunk)
    finally:
        os.close(fd)
    return pages


def _lost_events(stats_path: Path) -> int:
    """Sum the overrun and dropped events of a CPU's stats file."""
    lost = 0
    with contextlib.suppress(OSError):
        for line in stats_path.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("overrun", "dropped events"):
                lost += int(value.split()[0])
    return lost


def make_tracer(
    method: str, owner: Owner, gap_ns: int = DEFAULT_GAP_NS
) -> BpftraceTracer | TracefsTracer:
    """Return the tracer of a probed method, its instance or process OWNER's."""
    if method == "tracefs-tracepoint":
        return TracefsTracer(gap_ns, owner)
    return BpftraceTracer(method, gap_ns, owner)
