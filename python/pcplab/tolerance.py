"""The tolerances the model is held to, and every error in units of them.

A figure of a machine the fit has not seen must be within its tolerance
(docs/fidelity.md). Every error is divided by that tolerance. The fit
weighs ratios in log space, so that a miss by 2x counts the same above and
below; a ratio tolerance of 10% is a log ratio of log(1.10). The verdict
reads a tolerance as it is stated: "within 30%" is a relative error of at
most 30% either way (-25% is within), "within 2x" a factor either way.

Each experiment module (pcplab.experiments) names its own kinds of figure
and computes its residuals with `add`; the registry gathers them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

Residual = tuple[str, str, float]  # (reference machine, kind@row, residual)


@dataclass(frozen=True)
class Kind:
    """One kind of published figure: how an error is measured and its bound."""

    ratio: bool  # a relative error (log ratio) rather than a difference
    tolerance: float  # 0.10 = 10% for a ratio; points for a difference
    label: str

    def residual(self, model: float | None, published: float | None) -> float | None:
        """Return the error in tolerances, or None where it cannot be told."""
        if model is None or published is None:
            return None
        if not self.ratio:
            return (model - published) / self.tolerance
        ratio = log_ratio(model, published)
        return None if ratio is None else ratio / math.log1p(self.tolerance)

    def error(self, residual: float) -> str:
        """Format a residual back as the error people read (% or points)."""
        if not self.ratio:
            return f"{residual * self.tolerance:+.1f} pts"
        factor = math.exp(residual * math.log1p(self.tolerance))
        if factor >= 2 or factor <= 0.5:
            return f"{factor:.2f}x"
        return f"{100 * (factor - 1):+.1f}%"

    def miss(self, residual: float) -> float:
        """Return the error as a share of the tolerance as stated (1: at its edge)."""
        if not self.ratio or self.tolerance >= 1:
            return abs(residual)
        factor = math.exp(residual * math.log1p(self.tolerance))
        return abs(factor - 1) / self.tolerance

    def within(self, residual: float) -> bool:
        """Say whether an error is inside the tolerance as stated."""
        return self.miss(residual) <= 1 + 1e-9  # +10.0% is within 10%

    def bound(self) -> str:
        """Say the tolerance."""
        if not self.ratio:
            return f"{self.tolerance:g} pts"
        if self.tolerance >= 1:
            return f"{1 + self.tolerance:g}x"
        return f"{100 * self.tolerance:g}%"


def log_ratio(model: float | None, published: float | None) -> float | None:
    """Return log(model / published), or None where either is missing or 0."""
    if not model or not published or model <= 0 or published <= 0:
        return None
    return math.log(model / published)


def add(
    out: list[Residual],
    kinds: dict[str, Kind],
    machine: str,
    kind: str,
    row: Any,
    model: float | None,
    published: float | None,
) -> None:
    """Append the residual of one figure of KINDS[KIND], where it can be told."""
    r = kinds[kind].residual(model, published)
    if r is not None:
        out.append((machine, f"{kind}@{row}", r))


def error_pct(model: float, published: float) -> float | None:
    """Return the model's relative error against the published figure, in %."""
    if not published:
        return None
    return 100.0 * (model - published) / published


def worst_by_machine(
    res: list[Residual], kinds: dict[str, Kind]
) -> dict[str, dict[str, tuple[str, float]]]:
    """Return, per machine and kind of figure, the row that misses most."""
    out: dict[str, dict[str, tuple[str, float]]] = {}
    for machine, what, value in res:
        kind = what.split("@")[0]
        best = out.setdefault(machine, {}).get(kind)
        if best is None or kinds[kind].miss(value) > kinds[kind].miss(best[1]):
            out[machine][kind] = (what, value)
    return out
