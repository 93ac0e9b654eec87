"""SIGINT, SIGTERM and SIGHUP end a pcplab command alike: Interrupted, raised once.

The exception unwinds every `with` and `finally` on the way out, so the
engines are stopped and the host's sysctls and tracers put back; the CLI
prints it as one line and exits 128 + the signal's number. After the first
signal the others are ignored, so that a second Ctrl-C cannot cut the
putting back short (a SIGKILL still can: the host journal covers that).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from pcplab.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    """Signal handler: ignore further signals, raise Interrupted."""
    for other in SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signum)


def install() -> dict[int, Any]:
    """Turn the three signals into Interrupted where nobody else handles them.

    Returns the handlers replaced, for restore(); only the main thread can
    install handlers, so elsewhere nothing is done.
    """
    replaced: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return replaced
    for signum in SIGNALS:
        current = signal.getsignal(signum)
        if current in (signal.SIG_DFL, signal.default_int_handler):
            replaced[signum] = signal.signal(signum, _raise_interrupted)
    return replaced


def restore(replaced: dict[int, Any]) -> None:
    """Put back the handlers install() replaced."""
    for signum, handler in replaced.items():
        signal.signal(signum, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold the three signals off for a block that must not be cut short."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS))
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
