"""`pcplab fit --jacobian`: how every fitted row moves with each constant.

Measured, not derived: each constant of the [fit] table is moved by STEP
of its value and every fitted row is run again. A damped Gauss-Newton step
from that Jacobian is then run as well. If the cost it measures is near
the cost it predicts, the rows are linear at that scale and more
least-squares steps will help; if not (zone->lock contention jumps at a
cliff), the fit sits at a local optimum for steps that size. The same
Jacobian, restricted to some machines' rows, says what fixing their misses
would cost the others.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pcplab.experiments import residuals
from pcplab.fit import Space, cost, cost_by_machine, evaluate

STEP = 0.1  # each constant moves by this share of its value
DAMPING = 1.0  # Levenberg-Marquardt damping of the step, in log units


@dataclass
class Jacobian:
    """Residuals at CONSTANTS and their derivatives by each constant's log."""

    constants: dict[str, float]
    rows: list[tuple[str, str, float]]  # (machine, kind@row, residual)
    d: dict[str, list[float]]  # constant -> d residual / d ln(constant), per row

    def matrix(self) -> np.ndarray:
        """Return the rows x constants matrix."""
        return np.array([self.d[name] for name in self.d]).T

    def residuals(self) -> np.ndarray:
        """Return the residual of every row."""
        return np.array([v for *_, v in self.rows])


def measure(
    space: Space,
    constants: dict[str, float],
    only: Sequence[str],
    workers: int,
    step: float = STEP,
) -> Jacobian:
    """Run every row of machines ONLY at CONSTANTS and with each one moved."""
    rows = residuals(evaluate(constants, only, workers))
    d = {}
    for name in space.names:
        moved = {**constants, name: constants[name] * (1 + step)}
        again = {(m, k): v for m, k, v in residuals(evaluate(moved, only, workers))}
        # a row the moved run lacks (a call that never ran) did not move
        d[name] = [(again.get((m, k), v) - v) / math.log1p(step) for m, k, v in rows]
    return Jacobian(dict(constants), rows, d)


def gauss_newton(
    jac: Jacobian, space: Space, machines: Sequence[str] | None = None
) -> tuple[dict[str, float], np.ndarray]:
    """Return the damped step's constants and its predicted residuals.

    The step is fitted on the rows of MACHINES (default: every row) and
    predicted on every row, so it shows what fixing some machines costs
    the others. Constants stay inside the [fit] bounds.
    """
    j, r = jac.matrix(), jac.residuals()
    keep = [
        i for i, row in enumerate(jac.rows) if machines is None or row[0] in machines
    ]
    n = len(jac.d)
    a = np.vstack([j[keep], math.sqrt(DAMPING) * np.eye(n)])
    b = np.concatenate([-r[keep], np.zeros(n)])
    x, *_ = np.linalg.lstsq(a, b, rcond=None)
    stepped = dict(jac.constants)
    for name, lo, hi, dx in zip(space.names, space.lo, space.hi, x, strict=True):
        stepped[name] = round(
            float(np.clip(jac.constants[name] * math.exp(dx), lo, hi)), 4
        )
    moved = np.array([math.log(stepped[k] / jac.constants[k]) for k in jac.d])
    return stepped, r + j @ moved


def report(
    space: Space, constants: dict[str, float], only: Sequence[str], workers: int
) -> dict[str, Any]:
    """Measure the Jacobian, run its step; return jacobian.json's document."""
    jac = measure(space, constants, only, workers)
    stepped, predicted = gauss_newton(jac, space)
    measured = [v for *_, v in residuals(evaluate(stepped, only, workers))]
    return {
        **asdict(jac),
        "step": STEP,
        "gauss_newton": {
            "constants": stepped,
            "cost_now": cost(jac.residuals()),
            "predicted_cost": cost(predicted),
            "measured_cost": cost(measured),
            "by_machine_now": cost_by_machine(jac.rows, jac.residuals()),
            "by_machine_measured": cost_by_machine(jac.rows, measured),
        },
    }
