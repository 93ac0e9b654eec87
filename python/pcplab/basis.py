"""What a scored figure rests on: a row the fit read, a fold that left it out, neither.

- in-sample: the fit the constants on file came from read the figure's
  row (a machine of a FITTED experiment that constants.toml's [last_fit]
  names, at a row its TOML's [fit] table keeps: its `batch` list, or
  every row without one);
- left out: the figure was run with the constants of the fold that left
  its machine out (machines/crossval.toml), which names where the fold's
  search started: a fold started from the full fit has seen its rows
  through that start (docs/fidelity.md);
  Also in-sample: a row its TOML's `measured_rows` names (by prefix),
  whose costs were measured on the very machine it is judged on (a
  calibrated profile beside the kernel it was calibrated on);
- held out: no fit reads its row (pcplab/heldout/, a row of a fitted
  experiment the [fit] table skips, the record's held-out side, a FITTED
  experiment the last fit did not read yet, this host); said when it runs
  on a profile some fitted machine has.

An experiment added later needs nothing here: FITTED, its [fit] table and
its [machines] (or `profile`) say it all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pcplab import experiments, fidelity, machines
from pcplab.experiments._common import fitted_profiles

IN_SAMPLE, LEFT_OUT, HELD_OUT = "in-sample", "left out", "held out"
BASES = (IN_SAMPLE, LEFT_OUT, HELD_OUT)


@dataclass(frozen=True)
class Basis:
    """What one scored figure rests on, and a note saying how (may be empty)."""

    kind: str
    note: str = ""


# The crossval.toml whose folds the figures ran with: the package's, or
# the one `pcplab fidelity --folds FILE` names, for the block it runs
# (folds_from).
_FOLDS_FILE: ContextVar[Path] = ContextVar("folds_file", default=machines.CROSSVAL)


@contextmanager
def folds_from(path: Path) -> Iterator[None]:
    """Name the folds' starts after PATH's inside the block (--folds FILE)."""
    token = _FOLDS_FILE.set(path)
    try:
        yield
    finally:
        _FOLDS_FILE.reset(token)


def _starts() -> tuple[dict[str, str], dict[str, str]]:
    """Return the starts of the folds file in use, read again when it changes."""
    path = _FOLDS_FILE.get()
    return _read_starts(path, path.stat().st_mtime_ns if path.is_file() else None)


@cache
def _read_starts(
    path: Path, mtime: int | None
) -> tuple[dict[str, str], dict[str, str]]:
    """Return the starts of PATH's machine folds and of its thread folds."""
    if mtime is None:
        return {}, {}
    doc = machines.read_toml(path)
    starts = doc.get("start", {})
    by_machine = {
        m: str(starts.get(m, "an unrecorded start")) for m in doc.get("left_out", {})
    }
    by_thread = {
        t: str(starts.get(fidelity.THREAD + t, "an unrecorded start"))
        for t in doc.get("left_out_thread", {})
    }
    # a thread of one machine shares that machine's fold (pcplab.folds)
    for thread, mine in fidelity.threads().items():
        if len(mine) == 1 and mine[0] in by_machine:
            by_thread.setdefault(thread, by_machine[mine[0]])
    return by_machine, by_thread


def fold_starts() -> dict[str, str]:
    """Return, per machine with a fold on file, where that fold's search started."""
    return _starts()[0]


def thread_fold_starts() -> dict[str, str]:
    """Return, per fitted thread with a fold on file, where its search started."""
    return _starts()[1]


def _fit_table(name: str) -> tuple[set[str], set[str] | None]:
    """Return the machines experiment NAME's fit read and its row labels.

    Only a fit the constants on file came from counts (read_by_fit): an
    experiment made FITTED since reads none yet. The labels are None where
    the [fit] table keeps every row.
    """
    if name not in experiments.read_by_fit():
        return set(), set()
    exp = experiments.get(name)
    batches = exp.spec().get("fit", {}).get("batch")
    labels = None if batches is None else {str(b) for b in batches}
    return set(exp.fit_machines()), labels


def _read_by_fit(name: str, machine: str, row: str) -> bool:
    """Say whether the fit reads the figure of NAME's MACHINE at ROW ("5/0": both)."""
    fitted, labels = _fit_table(name)
    if machine not in fitted:
        return False
    return labels is None or all(part in labels for part in row.split("/"))


def _profile(name: str, machine: str) -> str:
    """Return the profile experiment NAME runs its row label MACHINE on."""
    spec = experiments.get(name).spec()
    mapped = spec.get("machines")
    if isinstance(mapped, dict) and machine in mapped:
        return str(mapped[machine])
    return str(spec.get("profile", machine))


def of(name: str, rests_on: Iterable[tuple[str, str]], left_out: bool) -> Basis:
    """Return what a figure of experiment NAME built from REST_ON rests on.

    LEFT_OUT: it was run with each machine's fold (pcplab.fidelity.left_out).
    A figure built from several rows is in-sample if the fit read any.
    """
    pairs = list(rests_on)
    machines_of = sorted({m for m, _ in pairs})
    if left_out:
        starts = {fold_starts().get(m, "?") for m in machines_of}
        start = starts.pop() if len(starts) == 1 else "several starts"
        whose = machines_of[0] if len(machines_of) == 1 else "each machine"
        return Basis(LEFT_OUT, f"fold without {whose}, start: {start}")
    if any(_read_by_fit(name, m, row) for m, row in pairs):
        return Basis(IN_SAMPLE)
    measured = experiments.get(name).spec().get("measured_rows", [])
    if any(row.startswith(tuple(measured)) for _, row in pairs):
        return Basis(IN_SAMPLE, "its costs measured on the machine it is judged on")
    seen = fitted_profiles(experiments.read_by_fit())
    if any(_profile(name, m) in seen for m in machines_of):
        return Basis(HELD_OUT, "on a fitted machine's profile")
    return Basis(HELD_OUT)


def without_fold(name: str, rests_on: Iterable[tuple[str, str]]) -> list[str]:
    """Return the machines of an in-sample figure of NAME that no fold leaves out."""
    return sorted({m for m, _ in rests_on if m not in fold_starts()})
