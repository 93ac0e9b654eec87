"""The host owner and its journal, in process: stand-in /proc/sys, lock, tracefs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import needs
from pcplab.host import journal, owner, sysctl

HF = sysctl.HIGH_FRACTION


@pytest.fixture
def host(tmp_path, monkeypatch):
    """Return a stand-in high-fraction file; state, lock and tracefs are private."""
    root = tmp_path / "sys"
    (root / "vm").mkdir(parents=True)
    hf = root / "vm" / "percpu_pagelist_high_fraction"
    hf.write_text("0\n")
    monkeypatch.setattr(sysctl, "SYSCTL_DIR", root)
    monkeypatch.setenv("PCPLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(journal, "LOCK_DIR", tmp_path / "run")
    monkeypatch.setattr(journal, "TRACEFS_INSTANCES", tmp_path / "instances")
    (tmp_path / "instances").mkdir()
    monkeypatch.setattr(owner.os, "geteuid", lambda: 0)
    return hf


def _reaped_pid() -> int:
    """Return the pid of a process that has ended and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _leave(record: dict) -> Path:
    """Write RECORD as the journal a killed command left."""
    path = journal.journal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


def test_original_is_journalled_before_the_write_and_restored(host):
    """The original goes to the journal before the write; leaving restores it."""
    with owner.Owner("test") as own:
        own.set_sysctl(HF, 100)
        data = json.loads(journal.journal_path().read_text())
        assert data["sysctls"] == {HF: "0"} and data["pid"] == os.getpid()
        assert data["boot_id"] == journal.boot_id()
        assert host.read_text() == "100\n"
        own.set_sysctl(HF, 1000)  # the original stays "0"
        data = json.loads(journal.journal_path().read_text())
        assert data["sysctls"] == {HF: "0"}
    assert host.read_text() == "0\n"
    assert not journal.journal_path().exists()


def test_an_error_inside_still_restores(host):
    """An exception inside the block restores the original and removes the journal."""
    with pytest.raises(RuntimeError), owner.Owner("test") as own:
        own.set_sysctl(HF, 8)
        raise RuntimeError("boom")
    assert host.read_text() == "0\n"
    assert not journal.journal_path().exists()


def test_a_dead_commands_journal_is_undone_once(host, capsys):
    """The next command restores what a dead one left, says so, and only once."""
    pid = _reaped_pid()
    _leave({"pid": pid, "sysctls": {HF: "0"}})
    host.write_text("1000\n")
    assert owner.recover() == [f"{HF} to 0"]
    assert host.read_text() == "0\n"
    assert f"pid {pid}" in capsys.readouterr().err
    assert owner.recover() == []
    assert not journal.journal_path().exists()


def test_a_second_owner_is_refused_while_the_first_holds_the_kernel(host, capsys):
    """One owner per kernel: a second is refused and the first's journal is kept."""
    with owner.Owner("first") as own:
        own.set_sysctl(HF, 100)
        assert owner.recover() == []  # the holder lives: nothing of it is touched
        assert host.read_text() == "100\n"
        with pytest.raises(journal.KernelBusy, match="'first'"):
            owner.Owner("second").__enter__()
    assert host.read_text() == "0\n"


def test_the_lock_names_the_journal_of_another_state_dir(host, tmp_path, monkeypatch):
    """A command with another state dir still finds what a killed holder left."""
    first = tmp_path / "first"
    monkeypatch.setenv("PCPLAB_STATE_DIR", str(first))
    lock = journal.KernelLock()
    lock.claim(first / journal.JOURNAL_NAME, "killed")
    os.close(lock.fd)  # as a SIGKILL would: the name stays in the lock file
    _leave({"pid": _reaped_pid(), "sysctls": {HF: "0"}})
    host.write_text("1000\n")
    monkeypatch.setenv("PCPLAB_STATE_DIR", str(tmp_path / "second"))
    assert owner.recover() == [f"{HF} to 0"]
    assert host.read_text() == "0\n"


def test_children_dirs_and_instances_of_a_dead_command_are_undone(host, tmp_path):
    """A live child is killed, a directory and a tracefs instance are removed."""
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        dead = _reaped_pid()
        directory = Path(journal.temp_dir("lock"))
        instance = journal.TRACEFS_INSTANCES / f"pcplab-{dead}"
        instance.mkdir()
        _leave(
            {
                "pid": dead,
                "boot_id": journal.boot_id(),
                "children": [
                    {
                        "pid": child.pid,
                        "start": journal.process_start(child.pid),
                        "what": "perf lock record",
                    }
                ],
                "tracefs": [str(instance)],
                "dirs": [str(directory)],
            }
        )
        lines: list[str] = []
        owner.recover(lines.append)
        assert child.wait(timeout=10) == -9
        assert not directory.exists() and not instance.exists()
        assert any(f"stopped perf lock record (pid {child.pid})" in x for x in lines)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_reused_pid_is_not_killed(host):
    """A child whose start time differs is someone else: it is left alone."""
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        start = journal.process_start(stranger.pid)
        _leave(
            {
                "pid": _reaped_pid(),
                "children": [{"pid": stranger.pid, "start": start + 1, "what": "x"}],
            }
        )
        owner.recover(lambda line: None)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_a_journal_of_an_earlier_boot_restores_nothing(host):
    """The sysctls were reset by the reboot: the journal's values are not written."""
    _leave({"pid": _reaped_pid(), "boot_id": "another-boot", "sysctls": {HF: "8"}})
    host.write_text("100\n")
    lines: list[str] = []
    assert owner.recover(lines.append) == []
    assert host.read_text() == "100\n"
    assert "earlier boot" in lines[0]
    assert not journal.journal_path().exists()


DAMAGES = {
    "empty": b"",
    "truncated": b'{"pid": 12, "sysctls": {"vm.percpu_pagelist_h',
    "binary": bytes(range(256)),
    "a list": b"[1, 2]",
    "no pid": b'{"sysctls": {}}',
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_journal_is_set_aside_with_the_way_back(host, damage):
    """No internal error: the journal is kept aside and the line names the command."""
    path = _leave({})
    path.write_bytes(DAMAGES[damage])
    host.write_text("1000\n")
    lines: list[str] = []
    owner.recover(lines.append)
    assert len(lines) == 1
    assert "damaged" in lines[0] and f"{HF} is 1000" in lines[0]
    assert f"pcplab host restore --sysctl {HF}=0" in lines[0]
    assert (
        not path.exists()
        and journal.damaged_paths()[0].read_bytes() == (DAMAGES[damage])
    )
    with pytest.raises(owner.PcplabError, match="damaged journal"):  # until put back
        with owner.Owner("sweep") as own:
            own.set_sysctl(HF, 100)
    assert host.read_text() == "1000\n"
    owner.write_settings(owner.parse_settings((f"{HF}=0",)))
    assert host.read_text() == "0\n" and journal.damaged_paths() == []


def test_a_directory_in_place_of_the_journal_is_set_aside(host):
    """A directory at the journal's path is moved aside, not an IsADirectoryError."""
    path = journal.journal_path()
    path.mkdir(parents=True)
    lines: list[str] = []
    owner.recover(lines.append)
    assert "a directory" in lines[0] and not path.exists()


def test_an_unknown_sysctl_is_not_written_but_the_known_ones_are(host):
    """Only sysctls pcplab writes are restored; the rest is named, the file kept."""
    _leave({"pid": _reaped_pid(), "sysctls": {HF: "0", "vm.no_such_sysctl": "1"}})
    host.write_text("1000\n")
    lines: list[str] = []
    assert owner.recover(lines.append) == [f"{HF} to 0"]
    assert any("vm.no_such_sysctl is not a sysctl pcplab changes" in x for x in lines)
    assert journal.damaged_paths()


def test_paths_that_are_not_pcplabs_are_never_removed(host, tmp_path):
    """A journal naming a stranger's directory does not make pcplab remove it."""
    precious = tmp_path / "precious"
    precious.mkdir()
    _leave({"pid": _reaped_pid(), "dirs": [str(precious), "/"], "tracefs": ["/etc"]})
    owner.recover(lambda line: None)
    assert precious.is_dir()


@needs(None if os.geteuid() == 0 else "root, to bind-mount a read-only directory")
def test_a_read_only_state_dir_still_restores(host, tmp_path):
    """The sysctl comes back; the journal that cannot be removed is said so."""
    path = _leave({"pid": _reaped_pid(), "sysctls": {HF: "0"}})
    host.write_text("1000\n")
    subprocess.run(["mount", "-o", "bind", str(path.parent), str(path.parent)])
    subprocess.run(["mount", "-o", "remount,bind,ro", str(path.parent)], check=True)
    try:
        lines: list[str] = []
        assert owner.recover(lines.append) == [f"{HF} to 0"]
        assert host.read_text() == "0\n"
        assert "remove it by hand" in lines[-1]
    finally:
        subprocess.run(["umount", str(path.parent)], check=True)


def test_orphans_named_with_a_dead_pid_are_removed(host):
    """A directory pcplab-<dead pid>-... and the process that names it go."""
    dead = _reaped_pid()
    directory = Path(tempfile.gettempdir()) / f"pcplab-{dead}-lock-x"
    directory.mkdir()
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", str(directory)],
        start_new_session=True,
    )
    try:
        # the sweep finds it by its command line: wait until it has exec'd
        cmdline = Path(f"/proc/{sleeper.pid}/cmdline")
        deadline = time.monotonic() + 10
        while str(directory).encode() not in cmdline.read_bytes():
            assert time.monotonic() < deadline, "the sleeper never exec'd"
            time.sleep(0.01)
        lines: list[str] = []
        owner.sweep_orphans(lines.append)
        assert sleeper.wait(timeout=10) == -9
        assert not directory.exists()
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


@pytest.mark.parametrize(
    "item, message",
    [
        ("vm.swappiness=10", "allowed names"),
        (f"{HF}", "allowed names"),
        (f"{HF}=-1", "no number"),
    ],
)
def test_restore_settings_are_checked(item, message):
    """--sysctl takes only a sysctl pcplab writes, with a number."""
    with pytest.raises(owner.BadInput, match=message):
        owner.parse_settings((item,))
