"""Sysctls of the page allocator, and the journal that always restores them.

Before a sysctl is written, its original value goes into a journal file
(fsynced, then renamed into place); the value is written only after that.
Every `pcplab host ...` command (and `pcplab run --engine host`) first
restores what a journal left by an interrupted run holds, so a sweep killed
with SIGKILL, or a crash, changes the kernel only until the next command.
A lock file held for the whole life of a run keeps a second command from
restoring the journal of a run that is still going.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from pcplab import spec_keys
from pcplab.errors import BadInput, PcplabError

SYSCTL_DIR = Path("/proc/sys")
DEFAULT_STATE_DIR = Path("/var/lib/pcplab")
JOURNAL_NAME = "sysctl-journal.json"
LOCK_NAME = "sysctl-journal.lock"
HIGH_FRACTION = "vm.percpu_pagelist_high_fraction"
# The sysctls that shape the page allocator's PCP and watermarks; each one
# this kernel has is recorded in every result.
RECORDED = (
    HIGH_FRACTION,
    "vm.pcp_batch_scale_max",  # only on kernels carrying that 2024 patch
    "vm.min_free_kbytes",
    "vm.watermark_scale_factor",
    "vm.watermark_boost_factor",
    "vm.lowmem_reserve_ratio",
    "vm.defrag_mode",
    "vm.stat_interval",
    "vm.zone_reclaim_mode",
    "vm.numa_zonelist_order",
    "vm.overcommit_memory",
    "vm.swappiness",
)


def sysctl_path(name: str) -> Path:
    """Return the /proc/sys file of a dotted sysctl name."""
    return SYSCTL_DIR / name.replace(".", "/")


def read_sysctl(name: str) -> str:
    """Read one sysctl, whitespace collapsed (e.g. "256 256 32 0")."""
    return " ".join(sysctl_path(name).read_text().split())


def read_recorded() -> dict[str, str]:
    """Read every recorded sysctl this kernel has."""
    values = {}
    for name in RECORDED:
        with contextlib.suppress(OSError):
            values[name] = read_sysctl(name)
    return values


def write_sysctl(name: str, value: str | int) -> None:
    """Write one sysctl; a refused value raises BadInput naming the kernel's reason."""
    try:
        sysctl_path(name).write_text(f"{value}\n")
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            allowed = spec_keys.key("high_fraction").range_words()
            raise BadInput(
                f"the kernel refused {name} = {value} (EINVAL); {allowed}"
            ) from exc
        raise PcplabError(f"cannot write {name} = {value}: {exc.strerror}") from exc


def state_dir() -> Path:
    """Return the journal's directory: $PCPLAB_STATE_DIR or /var/lib/pcplab."""
    return Path(os.environ.get("PCPLAB_STATE_DIR") or DEFAULT_STATE_DIR)


def journal_path() -> Path:
    """Return the journal file's path."""
    return state_dir() / JOURNAL_NAME


def require_root(what: str, alternative: str = "") -> None:
    """Refuse, before anything runs, a command that writes sysctls without root."""
    if os.geteuid() != 0:
        raise BadInput(
            f"{what} writes {HIGH_FRACTION} and needs root; "
            f"run it as root (sudo){alternative}"
        )


def _fsync_dir(path: Path) -> None:
    """Flush a directory entry change (create, rename, unlink) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: Path, data: dict[str, Any]) -> None:
    """Write JSON to a temporary file, fsync it, rename it over `path`."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class JournalBusy(PcplabError):
    """Another pcplab command holds the journal lock (a run is going on)."""


class _Lock:
    """An exclusive flock on the journal's lock file, released at close."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise JournalBusy(
                f"another pcplab host command is changing sysctls (lock "
                f"{directory / LOCK_NAME}); wait for it to finish"
            ) from None

    def close(self) -> None:
        """Release the lock."""
        os.close(self.fd)


def _restore_values(values: dict[str, str]) -> list[str]:
    """Write back original values; return "name to value" for each one."""
    done = []
    for name, value in values.items():
        write_sysctl(name, value)
        done.append(f"{name} to {value}")
    return done


def restore_pending(*, quiet_if_none: bool = True) -> list[str]:
    """Restore what a journal of an interrupted run holds; say so on stderr.

    Returns the "name to value" restored. A journal that belongs to a run
    still going (its lock is held) is left alone; without root a journal is
    reported but cannot be restored.
    """
    path = journal_path()
    if not path.exists():
        if not quiet_if_none:
            print(f"pcplab: no journal at {path}: nothing to restore", file=sys.stderr)
        return []
    if os.geteuid() != 0:
        print(
            f"pcplab: warning: {path} holds sysctls of an interrupted run; "
            "run 'pcplab host restore' as root",
            file=sys.stderr,
        )
        return []
    try:
        lock = _Lock(path.parent)
    except JournalBusy:
        print(
            f"pcplab: a running pcplab command owns {path}; it restores itself",
            file=sys.stderr,
        )
        return []
    try:
        if not path.exists():
            return []
        data = json.loads(path.read_text())
        done = _restore_values(data.get("sysctls", {}))
        path.unlink()
        _fsync_dir(path.parent)
    finally:
        lock.close()
    owner = data.get("pid")
    print(
        f"pcplab: restored {', '.join(done) or 'nothing'} from the journal of an "
        f"interrupted run (pid {owner})",
        file=sys.stderr,
    )
    return done


class Interrupted(PcplabError):
    """SIGINT or SIGTERM arrived; what was changed has been restored."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name}")
        self.exit_status = 128 + signum


def raise_interrupted(signum: int, frame: FrameType | None) -> None:
    """Signal handler: turn SIGINT/SIGTERM into an exception that unwinds."""
    raise Interrupted(signum)


class Journal:
    """Set sysctls for the length of a `with` block; restore them however it ends.

    Entering takes the lock, restoring a stale journal first; each set()
    records the original before writing; leaving (normally, by an
    exception, or by SIGINT/SIGTERM, which are turned into Interrupted)
    writes the originals back and removes the journal.
    """

    def __init__(self, command: str) -> None:
        self.command = command
        self.path = journal_path()
        self.original: dict[str, str] = {}
        self.restored: list[str] = []
        self._lock: _Lock | None = None
        self._old_handlers: dict[int, Any] = {}

    def __enter__(self) -> Journal:
        self._lock = _Lock(self.path.parent)
        try:
            if self.path.exists():  # left by a run that died: restore it first
                data = json.loads(self.path.read_text())
                done = _restore_values(data.get("sysctls", {}))
                self.path.unlink()
                _fsync_dir(self.path.parent)
                print(
                    f"pcplab: restored {', '.join(done)} from the journal of an "
                    f"interrupted run (pid {data.get('pid')})",
                    file=sys.stderr,
                )
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._old_handlers[signum] = signal.signal(signum, raise_interrupted)
        except BaseException:
            self._lock.close()
            raise
        return self

    def set(self, name: str, value: str | int) -> None:
        """Record `name`'s original value durably, then write `value`."""
        if name not in self.original:
            self.original[name] = read_sysctl(name)
            _write_durably(
                self.path,
                {
                    "pid": os.getpid(),
                    "command": self.command,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "sysctls": self.original,
                },
            )
        write_sysctl(name, value)

    def restore(self) -> list[str]:
        """Write every original value back and remove the journal."""
        # No signal may cut the restore short.
        blocked = signal.pthread_sigmask(
            signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}
        )
        try:
            done = _restore_values(self.original)
            if self.path.exists():
                self.path.unlink()
                _fsync_dir(self.path.parent)
            self.original = {}
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        self.restored += done
        return done

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.restore()
        finally:
            for signum, handler in self._old_handlers.items():
                signal.signal(signum, handler)
            if self._lock is not None:
                self._lock.close()
        if isinstance(exc, Interrupted) and self.restored:
            exc.line += f"; restored {', '.join(self.restored)}"
