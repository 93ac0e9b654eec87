"""Cross-validation folds that share their runs: one per machine, one per thread.

A fold refits the [fit] constants without the rows of some reference
machines: one machine (leave-one-machine-out) or every machine of one
thread, i.e. every row of one mail (leave-one-thread-out). A fold only
predicts what it left out if its search never saw those rows, so each
fold picks its start by the cost on its own rows alone, from points no
published figure set (the middle of the bounds, scrambled Sobol points)
or, when asked, the full fit (which has seen them; the fold says so).

A full cross-validation from nothing must fit one machine's day, so the
folds share their work:
- every run is kept by (point, machine): folds that start from the same
  point read one run of each machine there, whichever fold ran it first;
- each fold's Jacobian is measured by forward differences at its start
  (again shared by every fold that starts there), and then moved by
  Broyden's rank-one rule at every point the search accepts, so a step
  costs one run of the fold's rows instead of one per constant; it is
  measured again where a step lowered the cost by less than REFRESH of
  what the Jacobian predicted, since the model's cliffs soon leave a
  secant behind (a trust region's gain ratio, read as "re-measure");
- the thread folds run first, and each one's constants are a start for
  the folds of its machines: fitted without any row of the thread, they
  have seen none of that machine's, and they hold what the other threads
  teach, so a machine fold begins where most of its own work is done;
- a fold on file from an earlier run is one more start for the same fold
  (it saw none of its rows either): a search stopped early resumes where it
  stopped, and its start keeps the first run's name, marked RESUMED.
The search itself is scipy's least_squares (trust-region reflective,
bounded) on the same [1, 2] log scale as pcplab.fit, and it stops when a
step taken with a freshly measured Jacobian lowers the cost by less than
FTOL of itself, or after max_nfev steps in all (a small gain on a secant
measures the Jacobian again and searches on); the fold keeps the
lowest-cost point it ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from pcplab import fidelity
from pcplab.errors import BadInput
from pcplab.experiments import residuals
from pcplab.fidelity import THREAD
from pcplab.fit import FitResult, Space, cost, evaluate

STEP = 0.05  # forward-difference step of a measured Jacobian, in [1, 2] units
REFRESH = 0.25  # a step gaining less than this of its prediction re-measures
FTOL = 0.01  # a step that lowers the cost by less than this share ends a fold
# least_squares' statuses for a search that stalled: ftol (2), xtol (3) or
# both (4). On a secant each is the same stall: the steps it rejected shrank
# the trust region without ever moving the Jacobian (only accepted points do).
STALLED = (2, 3, 4)
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


class SharedRuns:
    """Every reference machine's residuals at every point run so far."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.seen: dict[tuple, list[tuple[str, str, float]]] = {}
        self.ran = 0  # machine runs done (a point's machines run as one batch)

    def rows(
        self, constants: dict[str, float], only: Sequence[str]
    ) -> list[tuple[str, str, float]]:
        """Return the residuals of ONLY's rows at CONSTANTS, running what is new."""
        point = tuple(sorted(constants.items()))
        missing = [m for m in only if (point, m) not in self.seen]
        if missing:
            found = residuals(evaluate(constants, missing, self.workers))
            for m in missing:
                self.seen[(point, m)] = [r for r in found if r[0] == m]
            self.ran += len(missing)
        return [r for m in only for r in self.seen[(point, m)]]


class Broyden:
    """A measured Jacobian, moved by Broyden's rule at each point accepted.

    scipy's least_squares calls it at every point it accepts; FUN's values
    there are already run, so the update costs nothing. With MEASURE, a
    step whose fall in cost is less than REFRESH of the fall the
    Jacobian predicted for it has the Jacobian measured again there.
    """

    def __init__(
        self,
        j: np.ndarray,
        x: np.ndarray,
        f: np.ndarray,
        fun: Callable,
        measure: Callable | None = None,
    ) -> None:
        self.j, self.x, self.f, self.fun = j, x.copy(), f, fun
        self.measure = measure
        self.measured = 1  # Jacobians measured, the start's included
        self.age = 0  # secant updates since the Jacobian was last measured
        self.step_age = 0  # the age of the Jacobian the last step was taken with

    def __call__(self, x: np.ndarray, *_: object) -> np.ndarray:
        """Return the Jacobian at X (measured, or moved by every step since)."""
        f, dx = self.fun(x), x - self.x
        if dx @ dx == 0:
            return self.j
        self.step_age = self.age
        predicted = cost(self.f) - cost(self.f + self.j @ dx)
        if self.measure and cost(self.f) - cost(f) < REFRESH * predicted:
            self.remeasure(x, f)
        else:
            self.j = self.j + np.outer(f - self.f - self.j @ dx, dx) / (dx @ dx)
            self.age += 1
        self.x, self.f = x.copy(), f
        return self.j

    def remeasure(self, x: np.ndarray, f: np.ndarray) -> None:
        """Measure the Jacobian at X (FUN's value there: F), and search from X."""
        assert self.measure is not None
        self.j, self.x, self.f = self.measure(x, f), x.copy(), f
        self.measured += 1
        self.age = 0


def search(
    space: Space,
    runs: SharedRuns,
    only: Sequence[str],
    start: dict[str, float],
    max_nfev: int,
    log: Callable[[str], None] = lambda _: None,
) -> FitResult:
    """Fit SPACE's constants on ONLY's rows from START; return the best point run."""
    x0 = space.to_unit(start)
    at_start = {(m, w): v for m, w, v in runs.rows(space.from_unit(x0), only)}
    tried: dict[bytes, np.ndarray] = {}  # this fold's points: the best is kept

    def fun(x: np.ndarray) -> np.ndarray:
        key = np.round(x, 6).tobytes()
        if key not in tried:
            got = {(m, w): v for m, w, v in runs.rows(space.from_unit(x), only)}
            # a row a point lacks (a call that never ran) keeps the start's value
            tried[key] = np.array([got.get(k, v) for k, v in at_start.items()])
            log(f"point {len(tried)}: cost {cost(tried[key]):.1f}")
        return tried[key]

    def measure(x: np.ndarray, fx: np.ndarray) -> np.ndarray:
        columns = []
        for i in range(len(x)):
            h = STEP if x[i] + STEP <= 2 else -STEP
            moved = x.copy()
            moved[i] += h
            columns.append((fun(moved) - fx) / h)
        return np.array(columns).T

    f0 = fun(x0)
    j0 = measure(x0, f0)
    jac = Broyden(j0, x0, f0, fun, measure)
    left = max(1, max_nfev)
    while True:
        found = least_squares(
            fun, jac.x, jac=jac, bounds=(1, 2), x_scale=0.1, ftol=FTOL, max_nfev=left
        )
        left -= found.nfev
        # a stall ends the fold only when its step had a measured Jacobian:
        # a secant that has drifted stalls far from the optimum
        if found.status not in STALLED or left <= 0 or jac.step_age == 0:
            break
        if jac.age:
            jac.remeasure(jac.x, jac.f)
        log(
            f"stalled (status {found.status}) on a {jac.step_age}-step secant: "
            "measured again"
        )
    ended = (
        "steps spent"
        if left <= 0
        else f"converged (status {found.status}, a {jac.step_age}-step secant)"
    )
    log(f"{len(tried)} points, {jac.measured} Jacobians measured, {ended}")
    best = min(tried, key=lambda k: cost(tried[k]))
    constants = space.unlearnt(space.from_unit(np.frombuffer(best)), j0, log)
    res = runs.rows(constants, only)
    return FitResult(
        constants=constants,
        cost=cost([v for *_, v in res]),
        residuals=res,
        evaluations=len(tried),
        machines=list(only),
    )


def cross_validate(
    space: Space,
    starts: dict[str, dict[str, float]],
    workers: int,
    max_nfev: int,
    log: Callable[[str], None] = lambda _: None,
    leave_out: Sequence[str] = (),
    samples: int = 0,
    done: Callable[[dict[str, FitResult]], None] = lambda _: None,
    threads: dict[str, dict[str, float]] | None = None,
    earlier: dict[str, tuple[dict[str, float], str]] | None = None,
) -> dict[str, FitResult]:
    """Fit every fold (or LEAVE_OUT's) from its best start; return them by label.

    STARTS and SAMPLES Sobol points are each judged on the fold's own rows;
    the lowest is searched (0 steps: kept as it is). A thread's fold (from
    THREADS, a crossval.toml's, or fitted here) is one more start for the
    folds of its machines: it has seen none of their rows, and the other
    threads' are fitted already. EARLIER (by fold label: its constants and
    where its search began, an earlier crossval.toml's) is one more start for
    that fold, which then keeps the first start's name, RESUMED. DONE gets
    the folds finished so far after each one, so a run stopped midway keeps
    them.
    """
    everyone = list(fidelity.reference_machines())
    points = dict(starts)
    for i, point in enumerate(space.samples(samples) if samples else []):
        points[f"sample {i + 1} of {samples}"] = point
    thread_folds = dict(threads or {})
    of_thread = fidelity.threads()
    runs = SharedRuns(workers)
    out = {}
    for fold in every_fold(leave_out):
        only = fold.fitted_on(everyone)
        # the folds of the thread this fold's machine belongs to, if any
        candidates = points | {
            f"{THREAD}{thread} fold": constants
            for thread, constants in thread_folds.items()
            if set(fold.left_out) < set(of_thread.get(thread, ()))
        }
        before = (earlier or {}).get(fold.label)
        if before:
            candidates[_EARLIER] = before[0]
        costs = {
            label: cost([v for *_, v in runs.rows(_fitted(space, p), only)])
            for label, p in candidates.items()
        }
        label = min(costs, key=costs.__getitem__)
        log(f"leaving out {fold.label}: from the {label}, cost {costs[label]:.1f}")
        start = _fitted(space, candidates[label])
        if max_nfev:
            result = search(space, runs, only, start, max_nfev, log)
        else:
            res = runs.rows(start, only)
            result = FitResult(start, costs[label], res, 1, list(only))
        result.start = label if label != _EARLIER else resumed(before[1])
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


def _fitted(space: Space, point: dict[str, float]) -> dict[str, float]:
    """Return POINT's values of SPACE's constants, rounded as the search's are."""
    return space.from_unit(space.to_unit(point))
