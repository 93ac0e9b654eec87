"""The tolerances the model is held to, and every error in units of them.

A figure of a machine the fit has not seen must be within its tolerance
(docs/fidelity.md). Every error is divided by that tolerance. The fit
weighs ratios in log space, so that a miss by 2x counts the same above and
below; a ratio tolerance of 10% is a log ratio of log(1.10). The verdict
reads a tolerance as it is stated: "within 30%" is a relative error of at
most 30% either way (-25% is within), "within 2x" a factor either way.

A figure that is itself a percentage (a share of CPU time, a change in %)
is held to its stated points only while they are a small part of it: the
verdict reads its tolerance as SHARE_OF_SIZE of the published figure,
never more than the points stated and never less than FLOOR_PTS (a 10-point
tolerance on a 13% figure would pass a model that said 3%). The fit keeps
weighing the stated points (docs/fidelity.md, "How the model is fitted").

Each experiment module (pcplab.experiments) names its own kinds of figure
and computes its residuals with `add`; the registry gathers them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# A percentage figure's tolerance: this share of the published figure, at
# most its stated points, at least FLOOR_PTS (docs/fidelity.md).
SHARE_OF_SIZE = 0.25
FLOOR_PTS = 2.0


class Residual(tuple):  # noqa: SLOT001 - it carries the figures it compares
    """(reference machine, "kind@row", error in tolerances), and its two figures.

    Unpacks as the triple the fit reads; `model` and `published` let the
    verdict read a percentage's tolerance against the figure's own size.
    """

    model: float | None
    published: float | None

    def __new__(
        cls,
        machine: Any,
        what: str | None = None,
        value: float | None = None,
        model: float | None = None,
        published: float | None = None,
    ) -> Residual:
        """Return the triple, remembering MODEL and PUBLISHED.

        Given one iterable (as dataclasses.asdict rebuilds a tuple), the
        triple it holds, without the figures.
        """
        triple = tuple(machine) if what is None else (machine, what, value)
        self = super().__new__(cls, triple)
        self.model, self.published = model, published
        return self

    def __getnewargs__(self) -> tuple[Any, ...]:  # type: ignore[override]
        """Return what pickling rebuilds it from (the figures too)."""
        return (*self, self.model, self.published)


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

    def points(self, published: float | None = None) -> float:
        """Return a percentage figure's tolerance in points, read against PUBLISHED.

        SHARE_OF_SIZE of the published figure, at most the stated points and
        at least FLOOR_PTS; the stated points where no figure is known.
        """
        if published is None:
            return self.tolerance
        share = SHARE_OF_SIZE * abs(published)
        return max(min(FLOOR_PTS, self.tolerance), min(self.tolerance, share))

    def miss(self, residual: float, published: float | None = None) -> float:
        """Return the error as a share of the tolerance the verdict reads (1: its edge).

        PUBLISHED, for a percentage figure, sizes its tolerance (points()).
        """
        if not self.ratio:
            return abs(residual) * self.tolerance / self.points(published)
        if self.tolerance >= 1:
            return abs(residual)
        factor = math.exp(residual * math.log1p(self.tolerance))
        return abs(factor - 1) / self.tolerance

    def within(self, residual: float, published: float | None = None) -> bool:
        """Say whether an error is inside the tolerance the verdict reads."""
        return self.miss(residual, published) <= 1 + 1e-9  # +10.0% is within 10%

    def bound(self, published: float | None = None) -> str:
        """Say the tolerance (a percentage's, read against PUBLISHED)."""
        if not self.ratio:
            points = self.points(published)
            if published is None or points == self.tolerance:
                return f"{self.tolerance:g} pts"
            if points == FLOOR_PTS:
                return f"{points:g} pts, the floor"
            return f"{points:.2g} pts, {100 * SHARE_OF_SIZE:g}% of {published:.4g}"
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
        out.append(Residual(machine, f"{kind}@{row}", r, model, published))


def error_pct(model: float, published: float) -> float | None:
    """Return the model's relative error against the published figure, in %."""
    if not published:
        return None
    return 100.0 * (model - published) / published


def published_of(residual: tuple[str, str, float]) -> float | None:
    """Return the published figure a residual compares (None if it does not say)."""
    return getattr(residual, "published", None)


def miss_of(residual: tuple[str, str, float], kinds: dict[str, Kind]) -> float:
    """Return a residual's error as a share of the tolerance the verdict reads."""
    kind = kinds[residual[1].split("@")[0]]
    return kind.miss(residual[2], published_of(residual))


def worst_by_machine(
    res: list[Residual], kinds: dict[str, Kind]
) -> dict[str, dict[str, Residual]]:
    """Return, per machine and kind of figure, the residual that misses most."""
    out: dict[str, dict[str, Residual]] = {}
    for r in res:
        kind = r[1].split("@")[0]
        best = out.setdefault(r[0], {}).get(kind)
        if best is None or miss_of(r, kinds) > miss_of(best, kinds):
            out[r[0]][kind] = r
    return out
