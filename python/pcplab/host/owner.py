"""One owner for everything a pcplab command starts or changes on the host.

Every sysctl pcplab writes, every child it starts (perf, bpftrace,
pcplab-host), every tracefs instance and temporary directory goes through
the Owner of the command, which journals it first (`journal`) and undoes
it when its block ends: normally, by an error, or by SIGINT, SIGTERM or
SIGHUP (`interrupts`). Its children are in process groups of their own and
get SIGKILL from the kernel if pcplab dies (PR_SET_PDEATHSIG, by setpriv
or the engine itself). After a SIGKILL or a crash, the next pcplab command
as root, of any kind, finds the journal of a dead pid and undoes it
(`recover`), one line for each thing it puts back; what no journal names
but bears a dead pcplab's pid in its name goes the same way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from pcplab import interrupts
from pcplab.errors import BadInput, Interrupted, PcplabError
from pcplab.host import journal, sysctl

Say = Callable[[str], None]
KILL_WAIT_S = 5.0


def _say(line: str) -> None:
    """Tell the user one thing put back, on stderr."""
    print(f"pcplab: {line}", file=sys.stderr)


def _pcplab_running(pid: int) -> bool:
    """Tell whether PID is a live pcplab process (not a stranger with a reused pid)."""
    if journal.process_start(pid) is None:
        return False
    try:
        return b"pcplab" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _kill_group(pid: int) -> bool:
    """SIGKILL PID and its process group; wait until gone; tell whether it is."""
    with contextlib.suppress(OSError):
        if os.getpgid(pid) == pid:  # a group of its own: its children go too
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    while journal.process_start(pid) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def remove_instance(path: Path) -> None:
    """Switch a tracefs instance off and remove it (its events go with it)."""
    for control in ("tracing_on", "events/enable"):
        with contextlib.suppress(OSError):  # tracefs's own files: never created
            fd = os.open(path / control, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
    for _ in range(50):  # rmdir fails while a reader still has a file open
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def unmount(path: str) -> bool:
    """Unmount a tracefs pcplab mounted; tell whether it was mounted."""
    if not os.path.ismount(path):
        return False
    subprocess.run(["umount", path], check=False, capture_output=True)
    return True


def _undo(record: journal.Record, say: Say) -> list[str]:
    """Undo what RECORD names; return the sysctls restored, "name to value"."""
    who = f"an interrupted run (pid {record.pid})"
    same_boot = record.boot_id in (None, journal.boot_id())
    if same_boot:
        for child in record.children:
            if journal.is_running(child.pid, child.start):
                gone = _kill_group(child.pid)
                state = "stopped" if gone else "could not stop"
                say(f"{state} {child.what} (pid {child.pid}) left by {who}")
        for instance in record.tracefs:
            if Path(instance).exists():
                remove_instance(Path(instance))
                say(f"removed the tracefs instance {instance} left by {who}")
        for mount in record.mounts:
            if unmount(mount):
                say(f"unmounted {mount}, mounted by {who}")
    for directory in record.dirs:
        if Path(directory).is_dir() and not Path(directory).is_symlink():
            shutil.rmtree(directory, ignore_errors=True)
            say(f"removed {directory} left by {who}")
    if not same_boot:
        say(
            f"the journal of pid {record.pid} is of an earlier boot: its sysctls "
            "and processes ended with that boot; nothing to restore"
        )
        return []
    done = []
    for name, value in record.sysctls.items():
        sysctl.write_sysctl(name, value)
        done.append(f"{name} to {value}")
    if done:
        say(f"restored {', '.join(done)} from the journal of {who}")
    return done


def restore_command(names: list[str] | None = None) -> str:
    """Return the command that puts the sysctls pcplab writes back to the defaults."""
    names = names or list(sysctl.WRITTEN)
    pairs = " ".join(f"--sysctl {n}={sysctl.WRITTEN[n]}" for n in names)
    return f"pcplab host restore {pairs}"


def damage_line(path: Path, reason: str, aside: Path | None, error: str | None) -> str:
    """Say a journal is damaged, what may be changed now, and how to put it back."""
    where = (
        f"kept as {aside}"
        if aside is not None
        else f"left in place (cannot move it aside: {error})"
    )
    live = []
    for name in sysctl.WRITTEN:
        with contextlib.suppress(OSError):
            live.append(f"{name} is {sysctl.read_sysctl(name)}")
    return (
        f"the journal {path} is damaged ({reason}), {where}; pcplab may have "
        f"changed {', '.join(sysctl.WRITTEN)} (now: {', '.join(live) or 'unreadable'})"
        f"; to put back the kernel's defaults run '{restore_command()}'"
    )


def _recover_journal(path: Path, say: Say) -> list[str]:
    """Undo the journal at PATH if its owner is dead; return the sysctls restored."""
    if not (path.exists() or path.is_symlink()):
        return []
    reason = None
    try:
        record, problems = journal.parse(path.read_bytes().decode())
    except IsADirectoryError:
        reason = "a directory, not a file"
    except OSError as exc:
        reason = f"unreadable: {exc.strerror}"
    except UnicodeDecodeError:
        reason = "not text"
    except journal.Damaged as exc:
        reason = str(exc)
    if reason is not None:
        aside, error = journal.move_aside(path)
        say(damage_line(path, reason, aside, error))
        return []
    if record.pid == os.getpid():
        return []
    if _pcplab_running(record.pid) and journal.is_running(record.pid, record.pid_start):
        say(f"a running pcplab command (pid {record.pid}) owns {path}; it restores it")
        return []
    done = _undo(record, say)
    if problems:
        aside, error = journal.move_aside(path)
        say(damage_line(path, "; ".join(problems), aside, error))
    elif (error := journal.remove(path)) is not None:
        say(f"could not remove the journal {path} ({error}): remove it by hand")
    return done


def sweep_orphans(say: Say) -> None:
    """Remove what bears a dead pcplab's pid in its name but no journal named."""
    with contextlib.suppress(OSError):
        for instance in journal.TRACEFS_INSTANCES.glob("pcplab-*"):
            match = journal.OWN_INSTANCE.match(instance.name)
            if match and not _pcplab_running(int(match.group(1))):
                remove_instance(instance)
                say(f"removed the tracefs instance {instance} of a dead pcplab")
    dead = []
    for directory in Path(tempfile.gettempdir()).glob("pcplab-*-*"):
        match = journal.OWN_TEMP_DIR.match(directory.name)
        if match and not _pcplab_running(int(match.group(1))):
            dead.append(directory)
    # a perf of a dead pcplab names its directory in its argv
    marks = {f"pcplab-{journal.OWN_TEMP_DIR.match(d.name)[1]}-".encode() for d in dead}
    for pid, cmdline in _processes() if marks else ():
        if pid != os.getpid() and any(mark in cmdline for mark in marks):
            name = Path(cmdline.split(b"\0")[0].decode(errors="replace")).name
            if _kill_group(pid):
                say(f"stopped {name} (pid {pid}) of a dead pcplab")
    for directory in dead:
        shutil.rmtree(directory, ignore_errors=True)
        say(f"removed {directory} of a dead pcplab")


def _processes() -> Iterator[tuple[int, bytes]]:
    """Yield (pid, command line) of every process."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                yield int(entry.name), (entry / "cmdline").read_bytes()


def _recover_under(lock: journal.KernelLock, own: Path, say: Say) -> list[str]:
    """Undo every journal of a dead command that the lock or the state dir names."""
    done = []
    paths = [own]
    previous = lock.previous_journal()
    if previous is not None and previous != own:
        paths.insert(0, previous)
    for path in paths:
        done += _recover_journal(path, say)
    sweep_orphans(say)
    return done


def recover(say: Say = _say) -> list[str]:
    """Undo what interrupted pcplab commands left on this host; said line by line.

    Root only (without root, a journal is pointed out, not restored); while
    another command holds the kernel's lock, what it started is its own and
    nothing is touched. Returns the sysctls restored, "name to value".
    """
    path = journal.journal_path()
    if os.geteuid() != 0:
        if path.exists():
            say(
                f"warning: {path} holds sysctls of an interrupted run; "
                "run 'pcplab host restore' as root"
            )
        return []
    try:
        lock = journal.KernelLock()
    except journal.KernelBusy:
        return []
    try:
        with interrupts.deferred():
            return _recover_under(lock, path, say)
    finally:
        lock.release()


def parse_settings(settings: tuple[str, ...]) -> dict[str, str]:
    """Check `--sysctl NAME=VALUE` items: a sysctl pcplab writes, once, a number."""
    wanted: dict[str, str] = {}
    allowed = ", ".join(sysctl.WRITTEN)
    for item in settings:
        name, sep, value = item.partition("=")
        if not sep or name not in sysctl.WRITTEN:
            raise BadInput(
                f"--sysctl {item}: give NAME=VALUE with a sysctl pcplab changes; "
                f"allowed names: {allowed}"
            )
        if name in wanted:
            raise BadInput(f"--sysctl {name} is given twice; give each sysctl once")
        if not value.isdigit():
            raise BadInput(f"--sysctl {item}: the value is no number; e.g. {name}=0")
        wanted[name] = value
    return wanted


def write_settings(wanted: dict[str, str]) -> None:
    """Write sysctls under the kernel's lock; then the damaged journals are moot."""
    with interrupts.deferred():
        lock = journal.KernelLock(journal.KernelLock.OWNER_WAIT_S)
        try:
            for name, value in wanted.items():
                sysctl.write_sysctl(name, value)
                _say(f"set {name} to {value}")
            for path in journal.damaged_paths():
                with contextlib.suppress(OSError):
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                    else:
                        path.unlink()
                    _say(f"removed the damaged journal {path}")
        finally:
            lock.release()


def refuse_if_damaged() -> None:
    """Refuse to change a sysctl while a damaged journal leaves its original unknown."""
    damaged = journal.damaged_paths()
    if damaged:
        raise PcplabError(
            f"a damaged journal ({damaged[0]}) leaves unknown what pcplab changed; "
            f"put the sysctls back with '{restore_command()}' (it removes the "
            "damaged journals), then run again"
        )


class Owner:
    """The journal of one command: what it changes and starts, undone when it ends."""

    def __init__(self, command: str) -> None:
        self.command = command
        # Without root nothing of the kernel's can change and no journal
        # can be written: the record is kept in memory, for the undoing.
        self.persistent = os.geteuid() == 0
        self.path = journal.journal_path()
        self.record = journal.Record.new(command)
        self.lock: journal.KernelLock | None = None
        self.procs: dict[int, subprocess.Popen[Any]] = {}
        self.restored: list[str] = []
        self._handlers: dict[int, Any] = {}

    def __enter__(self) -> Owner:
        if self.persistent:
            with interrupts.deferred():
                self.lock = journal.KernelLock(journal.KernelLock.OWNER_WAIT_S)
                try:
                    _recover_under(self.lock, self.path, _say)
                    self.lock.claim(self.path, self.command)
                    # pcplab, or the perf it starts, may mount tracefs: what
                    # was not mounted before is unmounted at the end
                    if not os.path.ismount(journal.TRACEFS):
                        self.record.mounts.append(str(journal.TRACEFS))
                except BaseException:
                    self.lock.release()
                    raise
        self._handlers = interrupts.install()
        return self

    def _save(self) -> None:
        """Write the record (or remove the journal once it holds nothing)."""
        if not self.persistent:
            return
        if self.record.empty():
            if (error := journal.remove(self.path)) is not None:
                raise PcplabError(f"cannot remove the journal {self.path}: {error}")
        else:
            journal.write(self.path, self.record)

    def set_sysctl(self, name: str, value: str | int) -> None:
        """Record NAME's original value durably, then write VALUE."""
        if name not in self.record.sysctls:
            refuse_if_damaged()
            self.record.sysctls[name] = sysctl.read_sysctl(name)
            self._save()
        sysctl.write_sysctl(name, value)

    def restore_sysctls(self) -> list[str]:
        """Write every original value back; return "name to value" for each."""
        done = []
        with interrupts.deferred():
            for name, value in list(self.record.sysctls.items()):
                sysctl.write_sysctl(name, value)
                del self.record.sysctls[name]
                done.append(f"{name} to {value}")
            self._save()
        self.restored += done
        return done

    def spawn(
        self, argv: list[str], what: str, *, pdeathsig: bool = True, **popen: Any
    ) -> subprocess.Popen[Any]:
        """Start a child in a process group of its own and journal it.

        pdeathsig: have setpriv ask the kernel for SIGKILL when pcplab dies
        (a child that sets its own, as pcplab-host does, says False).
        """
        setpriv = shutil.which("setpriv") if pdeathsig else None
        if setpriv is not None:
            argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
        proc = subprocess.Popen(argv, start_new_session=True, **popen)
        self.procs[proc.pid] = proc
        self.record.children.append(
            journal.Child(proc.pid, journal.process_start(proc.pid), what)
        )
        self._save()
        return proc

    def reaped(self, proc: subprocess.Popen[Any]) -> None:
        """Forget a child that has been waited for."""
        self.procs.pop(proc.pid, None)
        self.record.children = [c for c in self.record.children if c.pid != proc.pid]
        self._save()

    def temp_dir(self, what: str) -> Path:
        """Create a temporary directory that is removed when the command ends."""
        path = journal.temp_dir(what)
        self.record.dirs.append(str(path))
        self._save()
        return path

    def remove_dir(self, path: Path) -> None:
        """Remove a temporary directory of temp_dir() now."""
        shutil.rmtree(path, ignore_errors=True)
        self.record.dirs = [d for d in self.record.dirs if d != str(path)]
        self._save()

    def tracefs_instance(self, path: Path) -> None:
        """Journal a tracefs instance before it is created."""
        self.record.tracefs.append(str(path))
        self._save()

    def instance_removed(self, path: Path) -> None:
        """Forget a tracefs instance that is gone."""
        self.record.tracefs = [t for t in self.record.tracefs if t != str(path)]
        self._save()

    def _stop_children(self) -> None:
        """Kill what still runs of the children, and reap them."""
        for proc in list(self.procs.values()):
            if proc.poll() is None:
                _kill_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=KILL_WAIT_S)
        self.procs.clear()
        self.record.children.clear()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            with interrupts.deferred():
                self._stop_children()
                for instance in self.record.tracefs:
                    remove_instance(Path(instance))
                self.record.tracefs.clear()
                for directory in self.record.dirs:
                    shutil.rmtree(directory, ignore_errors=True)
                self.record.dirs.clear()
                for mount in self.record.mounts:
                    unmount(mount)
                self.record.mounts.clear()
                self.restore_sysctls()
        finally:
            interrupts.restore(self._handlers)
            if self.lock is not None:
                self.lock.release()
        if isinstance(exc, Interrupted) and self.restored:
            exc.line += f"; restored {', '.join(self.restored)}"


_current: Owner | None = None


@contextlib.contextmanager
def hold(command: str) -> Iterator[Owner]:
    """Be the owner of COMMAND, or join the owner this process already has."""
    global _current
    if _current is not None:
        yield _current
        return
    with Owner(command) as own:
        _current = own
        try:
            yield own
        finally:
            _current = None
