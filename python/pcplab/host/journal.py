"""The host journal (what a command started or changed, on disk) and the kernel lock.

A record names the command's pid (with its start time, so that a reused
pid is not taken for it) and the boot it ran in, each sysctl's original
value, each child process, tracefs instance and temporary directory. It
is written whole at every change (a temporary file, fsynced, renamed over
the journal, the directory fsynced), so a SIGKILL leaves the record of
before or of after the change, never half of one. A journal that does not
parse, or that names what pcplab never writes or creates, is damaged:
`parse` says what, and keeps only the entries it can trust.

One lock per running kernel, /run/pcplab/host.lock, whatever
$PCPLAB_STATE_DIR says: the sysctls are the kernel's, not a directory's.
Its holder writes the path of its journal into it, so that a command
started with another state directory still finds what a killed one left.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pcplab.errors import BadInput, PcplabError
from pcplab.host import sysctl

DEFAULT_STATE_DIR = Path("/var/lib/pcplab")
JOURNAL_NAME = "sysctl-journal.json"
DAMAGED_SUFFIX = ".damaged"
# /run is emptied at every boot, as the sysctls are reset: a lock (and the
# journal path it names) never outlives the kernel state it guards.
LOCK_DIR = Path("/run/pcplab")
LOCK_NAME = "host.lock"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
TRACEFS = Path("/sys/kernel/tracing")
TRACEFS_INSTANCES = TRACEFS / "instances"
# What pcplab names its own: tracefs instances pcplab-<pid>, temporary
# directories pcplab-<pid>-<what>. A journal naming anything else is not
# trusted with it (it would have pcplab remove a stranger's directory).
OWN_INSTANCE = re.compile(r"^pcplab-(\d+)$")
OWN_TEMP_DIR = re.compile(r"^pcplab-(\d+)-[A-Za-z0-9_.-]+$")
_SYSCTL_VALUE = re.compile(r"^-?\d+( -?\d+)*$")


def state_dir() -> Path:
    """Return the journal's directory: $PCPLAB_STATE_DIR or /var/lib/pcplab."""
    return Path(os.environ.get("PCPLAB_STATE_DIR") or DEFAULT_STATE_DIR)


def journal_path() -> Path:
    """Return the journal file's path."""
    return state_dir() / JOURNAL_NAME


def damaged_paths(directory: Path | None = None) -> list[Path]:
    """Return the damaged journals moved aside in a state directory, oldest first."""
    directory = directory or state_dir()
    with contextlib.suppress(OSError):
        return sorted(directory.glob(JOURNAL_NAME + DAMAGED_SUFFIX + "*"))
    return []


def boot_id() -> str | None:
    """Return this boot's id (the kernel's random boot_id), None if unreadable."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return None


def process_start(pid: int) -> int | None:
    """Return a process's start time in clock ticks since boot, None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after it
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has finished: nothing of it runs
        return None
    return int(fields[19])


def is_running(pid: int, start: int | None) -> bool:
    """Tell whether the process PID that started at START still runs."""
    now = process_start(pid)
    return now is not None and (start is None or now == start)


@dataclass
class Child:
    """A process pcplab started: killed with its process group when left behind."""

    pid: int
    start: int | None
    what: str


@dataclass
class Record:
    """One command's journal: everything it started or changed on the host."""

    pid: int
    command: str
    pid_start: int | None = None
    boot_id: str | None = None
    started: str = ""
    sysctls: dict[str, str] = field(default_factory=dict)
    children: list[Child] = field(default_factory=list)
    tracefs: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)  # tracefs, if pcplab mounted it

    @classmethod
    def new(cls, command: str) -> Record:
        """Return the empty record of this process."""
        pid = os.getpid()
        return cls(
            pid=pid,
            command=command,
            pid_start=process_start(pid),
            boot_id=boot_id(),
            started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        )

    def empty(self) -> bool:
        """Tell whether the record holds nothing to undo."""
        return not (
            self.sysctls or self.children or self.tracefs or self.dirs or self.mounts
        )


class Damaged(PcplabError):
    """A journal that cannot be read as a record at all."""


def _int_or_none(value: Any) -> int | None:
    """Return VALUE if it is an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse(text: str) -> tuple[Record, list[str]]:
    """Read a journal's text; return the record and what of it was not trusted.

    Raises Damaged when the text is no record at all (not JSON, not an
    object, no pid). Entries that pcplab never writes (a sysctl it does not
    change, a value that is no number, a path that is not its own) are left
    out of the record and named in the list.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Damaged(f"not JSON: {exc.args[0] if exc.args else exc}") from None
    if not isinstance(data, dict):
        raise Damaged(f"a JSON {type(data).__name__}, not an object")
    pid = _int_or_none(data.get("pid"))
    if pid is None or pid <= 0:
        raise Damaged("no process id")
    record = Record(
        pid=pid,
        command=str(data.get("command", "?")),
        pid_start=_int_or_none(data.get("pid_start")),
        boot_id=data.get("boot_id") if isinstance(data.get("boot_id"), str) else None,
        started=str(data.get("started", "")),
    )
    problems = []
    sysctls = data.get("sysctls", {})
    if not isinstance(sysctls, dict):
        problems.append("sysctls is not an object")
        sysctls = {}
    for name, value in sysctls.items():
        if name not in sysctl.WRITTEN:
            problems.append(f"{name} is not a sysctl pcplab changes")
        elif not isinstance(value, str) or not _SYSCTL_VALUE.match(value):
            problems.append(f"{name} = {value!r} is not a sysctl value")
        else:
            record.sysctls[name] = value
    for item in _list(data, "children", problems):
        child = item if isinstance(item, dict) else {}
        pid_of = _int_or_none(child.get("pid"))
        if pid_of is None or pid_of <= 1:
            problems.append(f"child {item!r} has no process id")
            continue
        record.children.append(
            Child(pid_of, _int_or_none(child.get("start")), str(child.get("what", "")))
        )
    for path in _list(data, "tracefs", problems):
        if isinstance(path, str) and _owned(path, TRACEFS_INSTANCES, OWN_INSTANCE):
            record.tracefs.append(path)
        else:
            problems.append(f"{path!r} is not a tracefs instance of pcplab")
    for path in _list(data, "dirs", problems):
        if isinstance(path, str) and _owned(path, None, OWN_TEMP_DIR):
            record.dirs.append(path)
        else:
            problems.append(f"{path!r} is not a temporary directory of pcplab")
    for path in _list(data, "mounts", problems):
        if path == str(TRACEFS):
            record.mounts.append(path)
        else:
            problems.append(f"{path!r} is not a mount of pcplab")
    return record, problems


def _list(data: dict[str, Any], key: str, problems: list[str]) -> list[Any]:
    """Return DATA[KEY] if it is a list (missing: empty); else say so."""
    value = data.get(key, [])
    if isinstance(value, list):
        return value
    problems.append(f"{key} is not a list")
    return []


def _owned(path: str, parent: Path | None, name: re.Pattern[str]) -> bool:
    """Tell whether PATH is absolute, named like pcplab's own, under PARENT if given."""
    p = Path(path)
    if not p.is_absolute() or ".." in p.parts or not name.match(p.name):
        return False
    return parent is None or p.parent == parent


def _fsync_dir(path: Path) -> None:
    """Flush a directory entry change (create, rename, unlink) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(path: Path, record: Record) -> None:
    """Write RECORD over PATH atomically and durably; one line if it cannot."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(asdict(record), f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise PcplabError(
            f"cannot write the journal {path} ({exc.strerror}); nothing was "
            "changed: give a writable directory in PCPLAB_STATE_DIR"
        ) from exc


def remove(path: Path) -> str | None:
    """Remove a journal; return why it could not be, None when it is gone."""
    try:
        path.unlink()
        _fsync_dir(path.parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def move_aside(path: Path) -> tuple[Path | None, str | None]:
    """Rename a damaged journal beside itself; return (new path, or why not)."""
    aside = path.with_name(path.name + DAMAGED_SUFFIX)
    if aside.exists():
        aside = path.with_name(f"{aside.name}-{time.strftime('%Y%m%dT%H%M%S')}")
    try:
        os.rename(path, aside)
        _fsync_dir(path.parent)
    except OSError as exc:
        return None, exc.strerror or str(exc)
    return aside, None


class KernelBusy(BadInput):
    """Another pcplab command holds this kernel's lock."""


class KernelLock:
    """An exclusive flock on /run/pcplab/host.lock, held for a command's life."""

    # A command that only looks for leftovers holds it for milliseconds:
    # one that will change the kernel waits that long before it is refused.
    OWNER_WAIT_S = 2.0

    def __init__(self, wait_s: float = 0.0) -> None:
        """Take the lock, trying for WAIT_S seconds; KernelBusy if still held."""
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        path = LOCK_DIR / LOCK_NAME
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait_s
        while not self._try_lock():
            if time.monotonic() >= deadline:
                holder = self._read()
                os.close(self.fd)
                who = f"pid {holder.get('pid')}, '{holder.get('command')}'"
                raise KernelBusy(
                    f"another pcplab command ({who}) is using this kernel's "
                    f"sysctls and tracers (lock {path}); wait for it to finish"
                )
            time.sleep(0.05)
        self.previous = self._read()

    def _try_lock(self) -> bool:
        """Try once to take the flock; tell whether it was taken."""
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                os.close(self.fd)
                raise
            return False
        return True

    def _read(self) -> dict[str, Any]:
        """Return what the lock file says of its last holder ({} if nothing)."""
        try:
            data = json.loads(os.pread(self.fd, 65536, 0) or b"{}")
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def previous_journal(self) -> Path | None:
        """Return the journal the last holder named, if it did not clear it."""
        named = self.previous.get("journal")
        return Path(named) if isinstance(named, str) and named else None

    def claim(self, journal: Path, command: str) -> None:
        """Name this command and its journal in the lock file."""
        text = json.dumps(
            {"pid": os.getpid(), "command": command, "journal": str(journal)}
        ).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, text, 0)
        os.fsync(self.fd)

    def release(self) -> None:
        """Clear the holder's name and release the lock."""
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
        os.close(self.fd)


def temp_dir(what: str) -> Path:
    """Create a temporary directory named pcplab-<pid>-<what>-<random>."""
    return Path(tempfile.mkdtemp(prefix=f"pcplab-{os.getpid()}-{what}-"))
