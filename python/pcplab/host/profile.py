"""perf-profile of the measured phase: `perf record -a -g`, then `perf report`.

LKP's perf-profile.self.cycles-pp.<function> and .children.cycles-pp.<function>
are shares of all sampled cycles. pcplab records `perf record -a -g` the way
it records `perf lock record` (lockstat.Recorder: started with its events
disabled, switched on at "measure-start" and off at "measure-end" through
perf's control FIFO), and reads `perf report --stdio --sort symbol -g none`
with and without `--children`, kept to the workload's own samples (its
tasks are `pcplab-host` processes) so that other work on a shared machine
does not count. Kernel symbols keep their function names (without `.part.0`
and the like); every user-space sample is summed into `user`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from pcplab.host import lockstat

CHOICES = ("perf", "off")
COMM = "pcplab-host"
USER = "user"
_EVENT = re.compile(r"^#\s*Samples:\s*(\S+)\s+of event '([^']+)'")
_ROW = re.compile(r"^\s*([0-9.]+)%\s+(?:([0-9.]+)%\s+)?\[([.kgHu])\]\s+(\S+)")


def parse_report(text: str) -> dict[str, Any]:
    """Parse `perf report --stdio --sort symbol -g none`: event, samples, shares.

    With `--children` a row has two percentages (children, self); without,
    one (self). Returns {"event", "samples", "self", "children"} (children
    empty without the column), shares in % of the samples reported.
    """
    event = samples = None
    self_: dict[str, float] = {}
    children: dict[str, float] = {}
    for line in text.splitlines():
        match = _EVENT.match(line)
        if match:
            samples, event = match.groups()
            continue
        row = _ROW.match(line)
        if not row:
            continue
        first, second, where, symbol = row.groups()
        name = USER if where == "." else lockstat.function_name(symbol)
        own = float(second if second is not None else first)
        self_[name] = self_.get(name, 0.0) + own
        if second is not None and where != ".":
            children[name] = max(children.get(name, 0.0), float(first))
    if event is None:
        raise ValueError("perf report printed no '# Samples: ... of event' line")
    return {
        "event": event,
        "samples": samples,
        "self": _rounded(self_),
        "children": _rounded(children),
    }


def _rounded(shares: dict[str, float]) -> dict[str, float]:
    """Sort shares largest first (then by name) and round them to 0.01%."""
    order = sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))
    return {k: round(v, 2) for k, v in order}


def method(event: str) -> str:
    """Say how the section was measured, naming perf's event."""
    pmu = (
        "cpu-clock (a software timer: no hardware PMU here, so samples land "
        "where interrupts are enabled again, not where cycles are spent)"
        if event.startswith("cpu-clock")
        else event
    )
    return (
        f"perf record -a -g of the measured phase, event {pmu}; perf report "
        f"--sort symbol of the {COMM} tasks' samples (--comms {COMM} "
        "--percentage relative)"
    )


def report(data: Path, comm: str, *extra: str) -> str:
    """Run `perf report` on DATA, COMM's samples only, with EXTRA options."""
    proc = subprocess.run(
        [
            lockstat.perf_binary(),
            "report",
            "-i",
            str(data),
            "--stdio",
            "--sort",
            "symbol",
            "-g",
            "none",
            "--comms",
            comm,
            "--percentage",
            "relative",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"perf report failed ({proc.returncode}): "
            + (proc.stderr.strip().splitlines() or ["no message"])[-1]
        )
    return proc.stdout


def shares(data: Path, comm: str) -> dict[str, Any]:
    """Return the event, self and children shares of COMM's samples in DATA."""
    own = parse_report(report(data, comm, "--no-children"))
    calls = parse_report(report(data, comm, "--children"))
    return {
        "event": own["event"],
        "samples": own["samples"],
        "self": own["self"],
        "children": calls["children"],
    }


class Recorder(lockstat.Recorder):
    """`perf record -a -g` switched on for the measured phase only."""

    RECORD = ("record", "-a", "-g")
    WHAT = "perf record"
    DIR = "profile"

    def result(self) -> dict[str, Any]:
        """Report self and children shares of the recorded measured phase."""
        self.check_recorded()
        found = shares(self.data, COMM)
        return {
            "method": method(found["event"]),
            "event": found["event"],
            "samples": found["samples"],
            "recorded_s": round(self.recorded_s or 0.0, 4),
            "self": found["self"],
            "children": found["children"],
        }


def merge(result: dict[str, Any], profile: dict[str, Any] | None, reason: str) -> None:
    """Put `perf_profile` (or null and its reason) in a host result."""
    unavailable = result.setdefault("unavailable", {})
    result["perf_profile"] = profile
    if profile is None:
        unavailable["perf_profile"] = f"not recorded: {reason}"
    else:
        unavailable.pop("perf_profile", None)


def probe() -> str | None:
    """Return None if `perf record -a` can run here, else why not."""
    if os.geteuid() != 0:
        return "perf record -a needs root"
    if shutil.which("perf") is None:
        return "no perf binary in PATH (Debian package linux-perf)"
    return None
