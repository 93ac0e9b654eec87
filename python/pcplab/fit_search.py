"""The least-squares search every fit runs: shared runs, a secant Jacobian.

`pcplab fit` and each of its cross-validation folds (pcplab.folds) search
the [fit] constants the same way, so one convergence rule holds for all:
- every run is kept by (point, machine) (SharedRuns): searches that pass
  through the same point read one run of each machine there;
- the Jacobian is measured by forward differences at the start, and then
  moved by Broyden's rank-one rule at every point the search accepts, so a
  step costs one run of the rows instead of one per constant; it is
  measured again where a step lowered the cost by less than REFRESH of
  what the Jacobian predicted, since the model's cliffs soon leave a
  secant behind (a trust region's gain ratio, read as "re-measure");
- the search itself is scipy's least_squares (trust-region reflective,
  bounded) on pcplab.fit's [1, 2] log scale; it stops when a step taken
  with a freshly measured Jacobian lowers the cost by less than FTOL of
  itself (or the trust region shrinks below xtol there), or after max_nfev
  steps in all (a stall on a secant measures the Jacobian again and
  searches on); the search keeps the lowest-cost point it ran.
A search starts from the lowest-cost of its candidate starts on its own
rows (best_start): the full fit from constants.toml, the middle of the
bounds or Sobol points (--start, --samples), a fold from those and from
what the folds it may read found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import least_squares

from pcplab.experiments import residuals
from pcplab.fit import FitResult, Space, cost, evaluate

STEP = 0.05  # forward-difference step of a measured Jacobian, in [1, 2] units
REFRESH = 0.25  # a step gaining less than this of its prediction re-measures
FTOL = 0.01  # a step that lowers the cost by less than this share ends a search
# least_squares' statuses for a search that stalled: ftol (2), xtol (3) or
# both (4). On a secant each is the same stall: the steps it rejected shrank
# the trust region without ever moving the Jacobian (only accepted points do).
STALLED = (2, 3, 4)


class SharedRuns:
    """Every reference machine's residuals at every point run so far.

    Searches that share one (the folds of a cross-validation) read each
    machine's run at a point once, whichever ran it first.
    """

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
    """Fit SPACE's constants on ONLY's rows from START; return the best point run.

    MAX_NFEV 0 keeps START as it is (its cost on ONLY's rows).
    """
    if not max_nfev:
        res = runs.rows(start, only)
        return FitResult(start, cost([v for *_, v in res]), res, 1, list(only))
    x0 = space.to_unit(start)
    first = runs.rows(space.from_unit(x0), only)
    at_start = {(m, w): v for m, w, v in first}
    if len(at_start) != len(first):  # one would be lost from the cost
        labels = Counter((m, w) for m, w, _ in first)
        twice = sorted(f"{m}: {w}" for (m, w), n in labels.items() if n > 1)
        raise ValueError(f"fitted figures share a label: {', '.join(twice)}")
    tried: dict[bytes, np.ndarray] = {}  # this search's points: the best is kept
    ran_at: dict[bytes, dict[str, float]] = {}  # the constants each point ran

    def fun(x: np.ndarray) -> np.ndarray:
        key = np.round(x, 6).tobytes()
        if key not in tried:
            ran_at[key] = space.from_unit(x)
            got = {(m, w): v for m, w, v in runs.rows(ran_at[key], only)}
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
    left = max_nfev
    while True:
        found = least_squares(
            fun, jac.x, jac=jac, bounds=(1, 2), x_scale=0.1, ftol=FTOL, max_nfev=left
        )
        left -= found.nfev
        # a stall ends the search only when its step had a measured Jacobian:
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
    # the constants that ran there (a new run only if one was not learnt)
    constants = space.unlearnt(ran_at[best], j0, log)
    res = runs.rows(constants, only)
    return FitResult(
        constants=constants,
        cost=cost([v for *_, v in res]),
        residuals=res,
        evaluations=len(tried),
        machines=list(only),
    )


def candidates(
    space: Space, starts: dict[str, dict[str, float]], samples: int
) -> dict[str, dict[str, float]]:
    """Return STARTS and SAMPLES Sobol points, each named, as search starts."""
    points = dict(starts)
    for i, point in enumerate(space.samples(samples) if samples else []):
        points[f"sample {i + 1} of {samples}"] = point
    return points


def best_start(
    space: Space,
    runs: SharedRuns,
    only: Sequence[str],
    points: dict[str, dict[str, float]],
) -> tuple[str, dict[str, float], float]:
    """Return the name, the constants and the cost of ONLY's lowest-cost POINT."""
    costs = {
        label: cost([v for *_, v in runs.rows(fitted(space, p), only)])
        for label, p in points.items()
    }
    label = min(costs, key=costs.__getitem__)
    return label, fitted(space, points[label]), costs[label]


def best_of(
    space: Space,
    starts: dict[str, dict[str, float]],
    only: Sequence[str],
    workers: int,
    max_nfev: int,
    log: Callable[[str], None] = lambda _: None,
    samples: int = 0,
    runs: SharedRuns | None = None,
) -> FitResult:
    """Fit ONLY's rows from the lowest-cost of STARTS and SAMPLES Sobol points.

    RUNS, shared with the folds that follow, keeps every machine's run at
    every point for them (a fold from the full fit then runs it once).
    """
    runs = runs or SharedRuns(workers)
    label, start, at = best_start(space, runs, only, candidates(space, starts, samples))
    log(f"from the {label}, cost {at:.1f}")
    result = search(space, runs, only, start, max_nfev, log)
    result.start = label
    return result


def fitted(space: Space, point: dict[str, float]) -> dict[str, float]:
    """Return POINT's values of SPACE's constants, rounded as the search's are."""
    return space.from_unit(space.to_unit(point))
