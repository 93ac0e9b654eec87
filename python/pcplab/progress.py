"""Progress on stderr: tqdm bars on a TTY, and a Ticker of lines for any stderr."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any


def enabled() -> bool:
    """Say whether to draw bars: stderr is a TTY, not CI, not PCPLAB_NO_PROGRESS."""
    if os.environ.get("CI") or os.environ.get("PCPLAB_NO_PROGRESS"):
        return False
    return sys.stderr.isatty()


class _Quiet:
    """A stand-in for a bar that draws nothing."""

    def update(self, n: int = 1) -> None:
        """Count N steps (nothing is drawn)."""

    def close(self) -> None:
        """Close the bar (nothing to close)."""


def bar(total: int, desc: str) -> Any:
    """Return a bar of TOTAL steps named DESC: tqdm on a TTY, else a quiet one."""
    if not enabled():
        return _Quiet()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="run", file=sys.stderr, leave=False)


class Ticker:
    """A count of runs with an ETA, one stderr line every few seconds.

    Unlike bar(), it also writes when stderr is no terminal (a pipe, tee,
    nohup, CI): `tune: 12/40 runs, 23 s, ~40 s left`. The total is a plan
    the caller may revise as a search learns how much is left (plan()).
    PCPLAB_PROGRESS_EVERY sets the seconds between lines (default 5);
    PCPLAB_NO_PROGRESS silences it.
    """

    def __init__(self, desc: str, total: int, every: float | None = None) -> None:
        self.desc, self.total, self.done = desc, total, 0
        self._clock = time.monotonic
        self._start = self._clock()
        env = os.environ.get("PCPLAB_PROGRESS_EVERY")
        self.every = every if every is not None else float(env or 5.0)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = None
        if not os.environ.get("PCPLAB_NO_PROGRESS"):
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def plan(self, total: int) -> None:
        """Revise the total: the runs done plus those still expected."""
        with self._lock:
            self.total = max(total, self.done)

    def update(self, n: int = 1) -> None:
        """Count N runs done."""
        with self._lock:
            self.done += n
            self.total = max(self.total, self.done)

    def line(self) -> str:
        """Return the progress line: runs done of planned, elapsed, time left."""
        with self._lock:
            done, total = self.done, self.total
        elapsed = self._clock() - self._start
        text = f"{self.desc}: {done}/{total} runs, {elapsed:.0f} s"
        if done:
            text += f", ~{elapsed / done * (total - done):.0f} s left"
        return text

    def _tick(self) -> None:
        """Write a line every `every` seconds until closed."""
        while not self._stop.wait(self.every):
            print(self.line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        """Stop the lines; say how many runs took how long, if any ran."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        elapsed = self._clock() - self._start
        print(f"{self.desc}: {self.done} runs in {elapsed:.0f} s", file=sys.stderr)
