"""Progress bars with ETA on stderr for long runs (tqdm), quiet when not a TTY."""

from __future__ import annotations

import os
import sys
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
