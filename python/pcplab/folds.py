"""Cross-validation folds that share their runs: one per machine, one per thread.

A fold refits the [fit] constants without the rows of some reference
machines: one machine (leave-one-machine-out) or every machine of one
thread, i.e. every row of one mail (leave-one-thread-out). A fold only
predicts what it left out if its search never saw those rows, so each
fold picks its start by the cost on its own rows alone, from points no
published figure set (the middle of the bounds, scrambled Sobol points)
or, when asked, the full fit (which has seen them; the fold says so).

A full cross-validation from nothing must fit one machine's day, so the
folds share their work (each search is pcplab.fit_search's, which says
how it steps and when it stops):
- every run is kept by (point, machine): folds that start from the same
  point read one run of each machine there, whichever fold ran it first;
- the thread folds run first, and each one's constants are a start for
  the folds of its machines: fitted without any row of the thread, they
  have seen none of that machine's, and they hold what the other threads
  teach, so a machine fold begins where most of its own work is done;
- a fold on file from an earlier run is one more start for the same fold
  (it saw none of its rows either): a search stopped early resumes where it
  stopped, and its start keeps the first run's name, marked RESUMED.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pcplab import fidelity
from pcplab.errors import BadInput
from pcplab.fidelity import THREAD
from pcplab.fit import EarlierFold, FitResult, Space
from pcplab.fit_search import SharedRuns, best_start, candidates, search

RESUMED = " (resumed)"  # marks the start of a fold that went on from its earlier run


@dataclass(frozen=True)
class Fold:
    """One fold: the machines whose rows it leaves out, under its label."""

    label: str  # a machine's name, or THREAD + an experiment's
    left_out: tuple[str, ...]

    def fitted_on(self, everyone: Sequence[str]) -> list[str]:
        """Return the machines whose rows this fold fits."""
        return [m for m in everyone if m not in self.left_out]


def every_fold(names: Sequence[str] = ()) -> list[Fold]:
    """Return each thread's fold that is not one machine's, then each machine's.

    NAMES (machines or fitted experiments, --leave-out) picks some, kept in
    this order; a thread with one machine is that machine's fold and is not
    repeated. The threads come first: each one's constants are a start for the
    folds of its machines (cross_validate).
    """
    folds = [
        Fold(THREAD + thread, tuple(mine))
        for thread, mine in fidelity.threads().items()
        if len(mine) > 1
    ]
    folds += [Fold(m, (m,)) for m in fidelity.reference_machines()]
    if not names:
        return folds
    known = {f.label: f for f in folds} | {
        f.label.removeprefix(THREAD): f for f in folds
    }
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadInput(
            f"--leave-out {', '.join(unknown)}: no such fold; a reference "
            f"machine or a thread of several: {', '.join(repr(k) for k in known)}"
        )
    picked = {known[n] for n in names}
    return [f for f in folds if f in picked]


def cross_validate(
    space: Space,
    starts: dict[str, dict[str, float]],
    workers: int,
    max_nfev: int,
    log: Callable[[str], None] = lambda _: None,
    leave_out: Sequence[str] = (),
    samples: int = 0,
    done: Callable[[dict[str, FitResult]], None] = lambda _: None,
    earlier: dict[str, EarlierFold] | None = None,
    runs: SharedRuns | None = None,
) -> dict[str, FitResult]:
    """Fit every fold (or LEAVE_OUT's) from its best start; return them by label.

    STARTS and SAMPLES Sobol points are each judged on the fold's own rows;
    the lowest is searched (0 steps: kept as it is). EARLIER (by fold
    label, an earlier crossval.toml's) is one more start for that fold,
    which then keeps the first start's name, RESUMED, and counts its
    points. A thread's fold (EARLIER's, or fitted
    here) is one more start for the folds of its machines: it has seen
    none of their rows, and the other threads' are fitted already. DONE gets
    the folds finished so far after each one, so a run stopped midway keeps
    them. RUNS (the full fit's, or a new store) keeps every run for all of
    them.
    """
    everyone = list(fidelity.reference_machines())
    points = candidates(space, starts, samples)
    earlier = earlier or {}
    thread_folds = {
        label.removeprefix(THREAD): fold.constants
        for label, fold in earlier.items()
        if label.startswith(THREAD)
    }
    of_thread = fidelity.threads()
    runs = runs or SharedRuns(workers)
    out = {}
    for fold in every_fold(leave_out):
        only = fold.fitted_on(everyone)
        # the folds of the thread this fold's machine belongs to, if any
        mine = points | {
            f"{THREAD}{thread} fold": constants
            for thread, constants in thread_folds.items()
            if set(fold.left_out) < set(of_thread.get(thread, ()))
        }
        before = earlier.get(fold.label)
        if before:
            mine[_EARLIER] = before.constants
        label, start, at = best_start(space, runs, only, mine)
        log(f"leaving out {fold.label}: from the {label}, cost {at:.1f}")
        result = search(space, runs, only, start, max_nfev, log)
        result.start = label
        if label == _EARLIER and before:
            result.start, result.earlier_points = resumed(before.start), before.points
        log(
            f"{fold.label}: cost {result.cost:.1f} after {result.evaluations} "
            f"points ({runs.ran} machine runs so far)"
        )
        out[fold.label] = result
        if fold.label.startswith(THREAD):
            thread_folds[fold.label.removeprefix(THREAD)] = result.constants
        done(dict(out))
    return out


_EARLIER = "earlier fold"


def resumed(start: str) -> str:
    """Name the start of a fold resumed from an earlier run that began at START."""
    return start if start.endswith(RESUMED) else start + RESUMED
