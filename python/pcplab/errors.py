"""Exceptions that the CLI turns into one stderr line and an exit status."""

from __future__ import annotations

import signal
from typing import Any


class PcplabError(Exception):
    """A failure reported as one stderr line with `exit_status`."""

    exit_status = 1

    def __init__(self, message: str, *, prefix: str = "pcplab: error: ") -> None:
        super().__init__(message)
        self.line = f"{prefix}{message}"


class BadInput(PcplabError):
    """Bad input: what is wrong and what is allowed; nothing was run (exit 2)."""

    exit_status = 2

    @classmethod
    def relayed(cls, line: str) -> BadInput:
        """Wrap the engine's own bad-input line, which is printed unchanged.

        The exception's message is the line without the engine's "pcplab: "
        prefix, like every other exception a Python caller sees.
        """
        exc = cls(line.removeprefix("pcplab: ").removeprefix("error: "))
        exc.line = line
        return exc


class EngineError(PcplabError):
    """The engine binary failed for a reason other than bad input (exit 1)."""


class InvariantViolation(PcplabError):
    """The engine found an allocator invariant broken; the result is kept (exit 3)."""

    exit_status = 3

    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result


class Interrupted(PcplabError):
    """SIGINT, SIGTERM or SIGHUP arrived; what the command changed is undone."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name}", prefix="pcplab: ")
        self.exit_status = 128 + signum
