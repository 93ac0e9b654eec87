"""Checks of command-line input made before anything runs.

Numbers: click's own INT and FLOAT take whatever Python's int() and float()
take, which includes digits of every script ('４', '٤'), underscores
('1_000'), 'nan' and 'inf'. The types here take ASCII decimal numbers only
and are used by every numeric option (tests/test_bad_input.py checks it).

Output paths: every file or directory a command writes is checked before
it runs, so that a run of minutes or hours does not end in a failed write.
"""

from __future__ import annotations

import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import click

from pcplab.errors import BadInput

INTEGER = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# Where the kernel's own files live: results are never written there.
KERNEL_FILESYSTEMS = ("/proc", "/sys")
# The system's own directories: an --out directory gets a dozen files named
# by the command (index.md, constants.toml, ...), never in one of these.
SYSTEM_DIRECTORIES = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/opt",
    "/run",
    "/sbin",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/share",
    "/var",
    "/var/lib",
)


class _Ascii:
    """Refuse a string that is not a plain ASCII number before click converts it."""

    pattern: re.Pattern[str]
    kind: str

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Convert VALUE as click's type does, if it is written in ASCII digits."""
        self.check_ascii(value, param, ctx)
        number = super().convert(value, param, ctx)
        return self.check_finite(value, number, param, ctx)

    def check_ascii(self, value: Any, param: Any, ctx: Any) -> None:
        """Refuse VALUE if it is a string but not an ASCII number."""
        if isinstance(value, str) and not self.pattern.fullmatch(value):
            self.fail(f"{value!r} is not {self.kind}", param, ctx)

    def check_finite(self, value: Any, number: Any, param: Any, ctx: Any) -> Any:
        """Return NUMBER (converted from VALUE) if finite; refuse it otherwise."""
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is too large", param, ctx)
        return number


class _AsciiInteger(_Ascii):
    """An integer written in ASCII digits (0-9), with an optional sign."""

    pattern = INTEGER
    kind = "an integer in ASCII digits (e.g. 42)"


class _AsciiDecimal(_Ascii):
    """A finite decimal number written in ASCII (e.g. 0.5, 2, 1e-3)."""

    pattern = DECIMAL
    kind = "a decimal number in ASCII digits (e.g. 0.5 or 1e-3)"


class AsciiInt(_AsciiInteger, click.types.IntParamType):
    """An integer written in ASCII digits (0-9), with an optional sign."""


class AsciiIntRange(_AsciiInteger, click.IntRange):
    """An ASCII integer within a range (click.IntRange's bounds and help)."""


class AsciiFloat(_AsciiDecimal, click.types.FloatParamType):
    """A finite decimal number written in ASCII (e.g. 0.5, 2, 1e-3)."""


class AsciiFloatRange(_AsciiDecimal, click.FloatRange):
    """An ASCII decimal number within a range (click.FloatRange's bounds and help)."""


INT = AsciiInt()
FLOAT = AsciiFloat()
NUMBER_TYPES = (AsciiInt, AsciiIntRange, AsciiFloat, AsciiFloatRange)


def parse_int_list(text: str, option: str, example: str) -> list[int]:
    """Parse "0,1,3" into integers written in ASCII digits; refuse anything else."""
    parts = [part.strip() for part in text.split(",")]
    if not all(INTEGER.fullmatch(part) for part in parts):
        raise BadInput(
            f"{option} {text!r} is not a comma-separated list of integers in "
            f"ASCII digits; give e.g. {option} {example}"
        )
    return [int(part) for part in parts]


def _refuse(option: str, path: str, what: str, allowed: str) -> BadInput:
    """Return the bad-input error for output PATH of OPTION."""
    return BadInput(f"{option} {path} {what}; {allowed}")


def _in_kernel_filesystem(path: str) -> bool:
    """Say whether PATH (resolved) lies in /proc or /sys."""
    real = os.path.realpath(path)
    return any(real == fs or real.startswith(fs + "/") for fs in KERNEL_FILESYSTEMS)


def _probe_new_file(target: str) -> None:
    """Create TARGET, write a byte (a full disk fails here) and remove it again."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, b"\n")
    finally:
        os.close(fd)
        os.unlink(target)


def _check_device(option: str, path: str) -> None:
    """Accept /dev/null and terminals; refuse every other device.

    A device is not probed by writing to it: /dev/full fails every write
    with ENOSPC, but a byte written to a disk, /dev/mem or /dev/kmsg does
    damage or leaves a trace. The result is a file, a terminal, or nothing.
    """
    allowed = "give a regular file, /dev/null, /dev/stdout or a terminal"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise _refuse(
            option, path, f"cannot be written ({exc.strerror})", allowed
        ) from None
    try:
        if os.isatty(fd):
            return
        if os.fstat(fd).st_rdev == os.stat(os.devnull).st_rdev:
            return
    finally:
        os.close(fd)
    raise _refuse(option, path, "is a device that cannot hold the output", allowed)


def check_output_file(
    path: str | None, option: str, *, make_parent: bool = False
) -> None:
    """Refuse an output FILE that cannot be written, before anything runs.

    A new file is created, written a byte and removed again (a missing or
    read-only directory, a full file system or /proc all fail there); an
    existing regular file is opened for appending, which leaves it as it
    was. With MAKE_PARENT, the missing directories of PATH are created as
    the command would.
    """
    if path is None:
        return
    allowed = "give a file in a writable directory"
    if not path:
        raise BadInput(f"{option} is empty; {allowed}")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise _refuse(
            option, path, f"cannot be reached ({exc.strerror})", allowed
        ) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise _refuse(option, path, "is a directory", "give a file name")
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        if stat.S_ISCHR(mode):
            _check_device(option, path)
        elif not os.access(path, os.W_OK):
            raise _refuse(option, path, "is a pipe this user cannot write", allowed)
        return
    if mode is not None and not stat.S_ISREG(mode):
        raise _refuse(option, path, "is not a regular file", allowed)
    if _in_kernel_filesystem(path):
        raise _refuse(option, path, "is in /proc or /sys, the kernel's own", allowed)
    if mode is not None:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        except OSError as exc:
            raise _refuse(
                option, path, f"cannot be written ({exc.strerror})", allowed
            ) from None
        return
    target = os.path.realpath(path)  # a dangling symbolic link: its target
    parent = Path(target).parent
    if make_parent:
        _make_directory(option, path, parent)
    elif not parent.is_dir():
        raise _refuse(option, path, f"is in {parent}, which does not exist", allowed)
    try:
        _probe_new_file(target)
    except OSError as exc:
        raise _refuse(
            option, path, f"cannot be created ({exc.strerror})", allowed
        ) from None


def _make_directory(option: str, path: str, directory: Path) -> None:
    """Create DIRECTORY (and its parents) for output PATH of OPTION."""
    allowed = "give a directory that can be created and written"
    if _in_kernel_filesystem(str(directory)):
        raise _refuse(option, path, "is in /proc or /sys, the kernel's own", allowed)
    itself = directory == Path(path)
    if directory.exists() and not directory.is_dir():
        what = (
            "is not a directory"
            if itself
            else f"needs directory {directory}, which is a file"
        )
        raise _refuse(option, path, what, allowed)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        what = (
            "cannot be created"
            if itself
            else f"needs directory {directory}, which cannot be created"
        )
        raise _refuse(option, path, f"{what} ({exc.strerror})", allowed) from None


def check_output_dir(path: str, option: str) -> Path:
    """Create output directory PATH if missing, check it is writable; return it.

    Writability is proven by creating, writing and removing a probe file in
    it: access() says yes on a read-only mount and to root everywhere.
    """
    if not path:
        raise BadInput(f"{option} is empty; give a directory")
    real = os.path.realpath(path)
    if real in SYSTEM_DIRECTORIES:
        raise _refuse(
            option,
            path,
            f"is {real}, a directory of the system",
            "give a directory of your own, e.g. report",
        )
    directory = Path(path)
    _make_directory(option, path, directory)
    fd, probe = -1, ""
    try:  # create and write a probe: a full disk fails the write
        fd, probe = tempfile.mkstemp(prefix=".pcplab-probe-", dir=directory)
        os.write(fd, b"\n")
    except OSError as exc:
        raise _refuse(
            option,
            path,
            f"cannot be written in ({exc.strerror})",
            "give a writable directory",
        ) from None
    finally:
        if fd >= 0:
            os.close(fd)
            os.unlink(probe)
    return directory


class NameChoice(click.Choice):
    """A Choice of names the engines list, read only when first needed.

    The names (workloads, policies) belong to the engines; the build writes
    them beside the binaries, so the CLI reads them at the first conversion
    or help page, not at import. A wrong name gets the engines' own wording.
    """

    def __init__(self, noun: str, names: Any) -> None:
        self.noun = noun
        self._names = names
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        """Return the names, as the engines list them."""
        return tuple(self._names())

    def get_invalid_choice_message(self, value: Any, ctx: Any) -> str:
        """Say the name is unknown and list the known ones, in one line."""
        return f"unknown {self.noun} '{value}'; known: {', '.join(self.choices)}"
