"""Lock contention of the measured phase from `perf lock record`/`perf lock contention`.

`perf lock record -a` records the kernel's lock:contention_begin/end
tracepoints (with call chains) on every CPU; `perf lock contention` joins
them into per-caller contended counts and wait times. pcplab starts the
recorder before the engine with its events disabled (`-D -1`), switches
them on at the engine's "measure-start" and off at "measure-end" through
perf's control FIFO (each command acknowledged), so the data covers the
measured phase only. The text of `perf lock contention -v` is parsed here:
its rows, their units (ns/us/ms/s) and the call chains that say which lock
each row waited for.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pcplab.host.owner import Owner

METHOD = "perf lock contention (lock:contention_begin/end)"
CONTENTION_METHOD = (
    "perf lock contention: spinlock wait under the zone->lock callers and under "
    "the lruvec->lru_lock callers, as % of all CPU time of the measured phase "
    "(tasks x seconds), LKP's lock contention figures"
)
CHOICES = ("perf", "off")
ACK_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 120.0
UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# Lock primitives at the top of a call chain: skipped to find who took the lock.
_PRIMITIVE = re.compile(
    r"^(_raw_(spin|read|write)_lock\w*|__pv_queued_spin_lock_slowpath|"
    r"(native_)?queued_(spin|read|write)_lock_slowpath|do_raw_spin_lock|"
    r"__raw_spin_lock\w*|pv_wait\w*|__mutex_lock\w*|mutex_lock\w*|"
    r"rwsem_down_\w+|down_(read|write)\w*|rt_spin_lock\w*)$"
)
# Functions that take zone->lock (mm/page_alloc.c); rmqueue_bulk is inlined
# into __rmqueue_pcplist and rmqueue_buddy into get_page_from_freelist on
# some builds, free_pcppages_bulk into free_frozen_page_commit on others.
ZONE_TAKERS = frozenset(
    {
        "rmqueue_bulk",
        "__rmqueue_pcplist",
        "rmqueue_pcplist",
        "rmqueue_buddy",
        "rmqueue",
        "get_page_from_freelist",
        "free_pcppages_bulk",
        "free_one_page",
        "__free_pages_ok",
        "free_frozen_page_commit",
        "free_unref_page_commit",
        "reserve_highatomic_pageblock",
        "unreserve_highatomic_pageblock",
    }
)
# perf 6.1 names as caller the frame above the taker: these callers, with no
# call chain to look at, waited for zone->lock.
ZONE_CALLERS = ZONE_TAKERS | {
    "__alloc_frozen_pages_noprof",
    "__alloc_pages_noprof",
    "__alloc_pages",
    "free_unref_folios",
    "free_unref_page",
    "__free_frozen_pages",
}
# Functions that take lruvec->lru_lock (mm/swap.c, mm/vmscan.c, memcontrol).
LRU_LOCKERS = frozenset(
    {
        "folio_lruvec_lock",
        "folio_lruvec_lock_irq",
        "folio_lruvec_lock_irqsave",
        "folio_lruvec_relock_irq",
        "folio_lruvec_relock_irqsave",
    }
)
LRU_CALLERS = frozenset(
    {
        "folio_batch_move_lru",
        "__page_cache_release",
        "page_cache_release",
        "release_pages",
        "folios_put_refs",
        "lru_add_drain",
        "lru_add_drain_cpu",
        "lru_add_fn",
        "lru_note_cost",
        "lru_note_cost_refault",
        "folio_isolate_lru",
        "isolate_lru_folios",
        "shrink_active_list",
        "shrink_inactive_list",
        "move_folios_to_lru",
        "check_move_unevictable_folios",
        "folio_activate",
    }
)
_TIME = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s)?$")
_FRAME = re.compile(r"^\s+0x[0-9a-fA-F]+\s*(\S*)")
_SUFFIX = re.compile(r"(\.(part|constprop|isra|cold|llvm)(\.\d+)?)+$")


def function_name(symbol: str) -> str:
    """`__page_cache_release.part.0+0x58` -> `__page_cache_release`."""
    return _SUFFIX.sub("", symbol.split("+", 1)[0])


def parse_time_ns(number: str, unit: str) -> float:
    """Convert perf's `46.48 ms` (number and unit) to nanoseconds."""
    if unit not in UNITS:
        raise ValueError(f"unknown time unit '{unit}' in perf lock contention")
    return float(number) * UNITS[unit]


@dataclass
class Row:
    """One row of `perf lock contention`, with its call chain if printed."""

    contended: int
    wait_total_ns: float
    wait_max_ns: float | None
    lock_type: str
    caller: str
    stack: list[str] = field(default_factory=list)


def _take_time(tokens: list[str]) -> float:
    """Pop one time value (`46.48 ms` or `46.48ms`) from the front of tokens."""
    match = _TIME.match(tokens.pop(0))
    if not match:
        raise ValueError("a time column of perf lock contention is not a number")
    number, unit = match.groups()
    if unit is None:
        unit = tokens.pop(0)
    return parse_time_ns(number, unit)


def _columns(header: str) -> list[str]:
    """`contended   total wait     max wait ...` -> its column names."""
    return [c.strip() for c in re.split(r"\s{2,}", header.strip()) if c.strip()]


def parse_contention(text: str) -> tuple[list[Row], dict[str, int]]:
    """Parse the text of `perf lock contention [-v]`: its rows and the bad count.

    Lines before the header and perf's debug lines are skipped; a call chain
    (with -v) follows its row, one frame per line.
    """
    rows: list[Row] = []
    columns: list[str] | None = None
    debug: dict[str, int] = {}
    for line in text.splitlines():
        if columns is None:
            if re.match(r"^\s*contended\s+", line) and "caller" in line:
                columns = _columns(line)
            continue
        counts = re.findall(r"\b(bad|total):\s*(\d+)", line)
        if counts and re.match(r"^\s*bad:", line):
            debug.update((k, int(v)) for k, v in counts)
            continue
        frame = _FRAME.match(line)
        if frame and rows:
            if frame.group(1):
                rows[-1].stack.append(frame.group(1))
            continue
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            continue
        values: dict[str, Any] = {}
        try:
            for i, name in enumerate(columns):
                if name == "caller":
                    values[name] = " ".join(tokens)
                    tokens = []
                elif name == "type":
                    values[name] = tokens.pop(0)
                elif name == "contended":
                    values[name] = int(tokens.pop(0))
                elif "wait" in name:
                    values[name] = _take_time(tokens)
                else:  # an unknown column: keep its first token
                    values[name] = tokens.pop(0) if i < len(columns) else None
        except (IndexError, ValueError):
            continue
        if "contended" not in values or "total wait" not in values:
            continue
        rows.append(
            Row(
                contended=values["contended"],
                wait_total_ns=values["total wait"],
                wait_max_ns=values.get("max wait"),
                lock_type=values.get("type", "unknown"),
                caller=values.get("caller", "?"),
            )
        )
    if columns is None:
        raise ValueError("perf lock contention printed no table header")
    return rows, debug


def lock_class(row: Row) -> tuple[str | None, str | None]:
    """Return (lock, taker): 'zone_lock', 'lru_lock' or None, and who took it.

    From the call chain when there is one: the first frame below the lock
    primitives took the lock; from the caller's name otherwise.
    """
    frames = [function_name(f) for f in row.stack]
    taker = next((f for f in frames if not _PRIMITIVE.match(f)), None)
    caller = function_name(row.caller)
    if not row.lock_type.startswith("spinlock"):
        return None, taker
    if frames:
        if any(f in LRU_LOCKERS for f in frames):
            return "lru_lock", taker
        if taker in ZONE_TAKERS:
            return "zone_lock", taker
        if taker in LRU_CALLERS:
            return "lru_lock", taker
        return None, taker
    if caller in ZONE_CALLERS:
        return "zone_lock", None
    if caller in LRU_CALLERS or caller in LRU_LOCKERS:
        return "lru_lock", None
    return None, None


def summarise(rows: list[Row], cpu_time_s: float) -> dict[str, Any]:
    """Group rows per caller and lock; totals and % of CPU time per lock."""
    groups: dict[tuple[str, str | None, str], dict[str, Any]] = {}
    for row in rows:
        lock, taker = lock_class(row)
        key = (function_name(row.caller), lock, row.lock_type)
        g = groups.setdefault(
            key,
            {
                "caller": key[0],
                "lock": lock,
                "type": row.lock_type,
                "taker": [],
                "contended": 0,
                "total_wait_ns": 0.0,
                "max_wait_ns": 0.0,
            },
        )
        if taker and taker not in g["taker"]:
            g["taker"].append(taker)
        g["contended"] += row.contended
        g["total_wait_ns"] += row.wait_total_ns
        g["max_wait_ns"] = max(g["max_wait_ns"], row.wait_max_ns or 0.0)
    callers = sorted(groups.values(), key=lambda g: -g["total_wait_ns"])
    for g in callers:
        g["avg_wait_ns"] = g["total_wait_ns"] / g["contended"] if g["contended"] else 0
        for k in ("total_wait_ns", "max_wait_ns", "avg_wait_ns"):
            g[k] = round(g[k], 1)
    totals: dict[str, dict[str, float]] = {}
    for name, match in (
        ("zone_lock", lambda g: g["lock"] == "zone_lock"),
        ("lru_lock", lambda g: g["lock"] == "lru_lock"),
        ("spinlock", lambda g: g["type"].startswith("spinlock")),
        ("all", lambda g: True),
    ):
        chosen = [g for g in callers if match(g)]
        wait = sum(g["total_wait_ns"] for g in chosen)
        totals[name] = {
            "contended": sum(g["contended"] for g in chosen),
            "total_wait_ns": round(wait, 1),
            "pct_of_cpu_time": 100 * wait / (cpu_time_s * 1e9) if cpu_time_s else None,
        }
    return {"callers": callers, "totals": totals}


def contention_figures(section: dict[str, Any]) -> dict[str, Any]:
    """Return the result's `contention` figures from a lock_contention section."""
    totals = section["totals"]
    return {
        "zone_lock_pct": totals["zone_lock"]["pct_of_cpu_time"],
        "lru_lock_pct": totals["lru_lock"]["pct_of_cpu_time"],
        "total_pct": totals["spinlock"]["pct_of_cpu_time"],
        "method": CONTENTION_METHOD,
    }


def perf_binary() -> str:
    """Return the perf every pcplab command runs: PATH's, else the bare name."""
    return shutil.which("perf") or "perf"


def probe() -> str | None:
    """Return None if `perf lock record` works here, else the reason it does not."""
    if os.geteuid() != 0:
        return "perf lock record -a needs root"
    perf = shutil.which("perf")
    if perf is None:
        return "no perf binary in PATH (Debian package linux-perf)"
    # named with this pid, so that a SIGKILL's leftover is known as ours
    with tempfile.TemporaryDirectory(prefix=f"pcplab-{os.getpid()}-probe-") as tmp:
        try:
            proc = subprocess.run(
                [perf, "lock", "record", "-a", "-o", f"{tmp}/probe.data", "--", "true"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"perf lock record could not run: {exc}"
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        detail = lines[0] if lines else f"exit status {proc.returncode}"
        return (
            "perf lock record -a failed (lock:contention_begin/end tracepoints "
            f"not permitted?): {detail}"
        )
    return None


class Recorder:
    """`perf lock record -a` started disabled, switched on for the measured phase.

    Its directory and its perf belong to OWNER, which removes and stops them
    however the command ends. A subclass records other events: its RECORD
    is perf's command line before the control options, WHAT its name.
    """

    RECORD: tuple[str, ...] = ("lock", "record", "-a")
    WHAT = "perf lock record"
    DIR = "lock"

    def __init__(self, tasks: int, owner: Owner) -> None:
        self.tasks = tasks
        self.owner = owner
        self.dir = owner.temp_dir(self.DIR)
        self.data = self.dir / "perf.data"
        self.proc: subprocess.Popen[bytes] | None = None
        self.ctl = self.ack = -1
        self.started: float | None = None
        self.recorded_s: float | None = None
        self.error: str | None = None

    def launch(self) -> None:
        """Start perf with its events disabled and a control FIFO pair."""
        ctl, ack = self.dir / "ctl", self.dir / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        # O_RDWR never blocks on a FIFO: perf opens its ends when it is ready
        self.ctl = os.open(ctl, os.O_RDWR)
        self.ack = os.open(ack, os.O_RDWR | os.O_NONBLOCK)
        with open(self.dir / "record.log", "wb") as log:
            self.proc = self.owner.spawn(
                [
                    perf_binary(),
                    *self.RECORD,
                    "-D",
                    "-1",
                    "--control",
                    f"fifo:{ctl},{ack}",
                    "-o",
                    str(self.data),
                ],
                self.WHAT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )

    def _command(self, word: str) -> None:
        """Send `enable`/`disable` and wait for perf's `ack`."""
        assert self.proc is not None
        os.write(self.ctl, f"{word}\n".encode())
        deadline = time.monotonic() + ACK_TIMEOUT_S
        reply = b""
        while b"ack" not in reply:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.WHAT} exited ({self.proc.returncode}): {self._log()}"
                )
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{self.WHAT} did not acknowledge '{word}'")
            ready, _, _ = select.select([self.ack], [], [], min(left, 0.1))
            if ready:
                reply += os.read(self.ack, 64)

    def _log(self) -> str:
        """Return the last line perf wrote to its log."""
        try:
            lines = (self.dir / "record.log").read_text(errors="replace").splitlines()
        except OSError:
            return "no log"
        lines = [ln for ln in lines if ln.strip()]
        return lines[-1].strip() if lines else "no message"

    def start(self) -> None:
        """Switch recording on (the measured phase starts)."""
        self._command("enable")
        self.started = time.monotonic()

    def stop(self) -> None:
        """Switch recording off and let perf write its file."""
        if self.started is not None and self.recorded_s is None:
            self._command("disable")
            self.recorded_s = time.monotonic() - self.started
        self._finish()

    def _finish(self) -> None:
        """SIGINT perf and wait for it to write perf.data."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"{self.WHAT} did not stop on SIGINT") from None
        finally:
            if self.proc.returncode is not None:
                self.owner.reaped(self.proc)

    def abort(self) -> None:
        """Stop perf and remove everything, whatever state it is in."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None:
            self.owner.reaped(self.proc)
        self.close()

    def close(self) -> None:
        """Close the FIFOs and remove the directory."""
        for fd in (self.ctl, self.ack):
            if fd >= 0:
                os.close(fd)
        self.ctl = self.ack = -1
        self.owner.remove_dir(self.dir)

    def check_recorded(self) -> None:
        """Raise unless perf recorded the measured phase and exited cleanly."""
        if self.recorded_s is None:
            raise RuntimeError("the measured phase was never recorded")
        if self.proc is not None and self.proc.returncode not in (0, -signal.SIGINT):
            raise RuntimeError(
                f"{self.WHAT} exited {self.proc.returncode}: {self._log()}"
            )

    def result(self) -> dict[str, Any]:
        """Run `perf lock contention -v` on the data and summarise it."""
        self.check_recorded()
        proc = subprocess.run(
            [
                perf_binary(),
                "lock",
                "contention",
                "-i",
                str(self.data),
                "-k",
                "wait_total",
                "-v",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        text = proc.stdout + "\n" + proc.stderr  # perf 6.1 prints the table on stderr
        if proc.returncode != 0:
            raise RuntimeError(
                f"perf lock contention failed ({proc.returncode}): "
                + (proc.stderr.strip().splitlines() or ["no message"])[-1]
            )
        rows, debug = parse_contention(text)
        cpu_time_s = self.tasks * self.recorded_s
        return {
            "method": METHOD,
            "recorded_s": round(self.recorded_s, 4),
            "cpu_time_s": round(cpu_time_s, 4),
            "command": "perf lock record -a (enabled for the measured phase); "
            "perf lock contention -k wait_total -v",
            **summarise(rows, cpu_time_s),
            "perf_bad_events": debug,  # perf's own check: {"bad": n, "total": n}
        }
