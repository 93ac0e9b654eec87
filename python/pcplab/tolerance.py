"""The tolerances the model is held to, and every error in units of them.

A figure of a machine the fit has not seen must be within its tolerance
(docs/fidelity.md). Every error is divided by that tolerance, so a residual
of magnitude at most 1 is a hit, whatever the figure. Ratios are compared
in log space, so that a miss by 2x counts the same above and below; a
ratio tolerance of 10% is a log ratio of log(1.10).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Residual = tuple[str, str, float]  # (reference machine, kind@row, residual)


@dataclass(frozen=True)
class Kind:
    """One kind of published figure: how an error is measured and its bound."""

    experiment: str
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

    def bound(self) -> str:
        """Say the tolerance."""
        if not self.ratio:
            return f"{self.tolerance:g} pts"
        if self.tolerance >= 1:
            return f"{1 + self.tolerance:g}x"
        return f"{100 * self.tolerance:g}%"


KINDS = {
    "score": Kind("aaron2018", True, 0.10, "score"),
    "change": Kind("aaron2018", False, 5, "change from batch 31"),
    "zone": Kind("aaron2018", False, 10, "zone->lock contention"),
    "lru": Kind("aaron2018", False, 10, "LRU lock contention"),
    "throughput": Kind("ying2023", True, 0.10, "per-task pages/s"),
    "free_avg": Kind("ying2023", True, 0.30, "free hold avg"),
    "alloc_avg": Kind("ying2023", True, 0.30, "alloc hold avg"),
    "free_p99": Kind("ying2023", True, 0.40, "free hold 99%"),
    "alloc_p99": Kind("ying2023", True, 0.40, "alloc hold 99%"),
    "avg": Kind("yafang2024", True, 0.50, "rmqueue_bulk avg"),
    "ratio": Kind("yafang2024", True, 1.0, "avg ratio 5 -> 0"),
}


def log_ratio(model: float | None, published: float | None) -> float | None:
    """Return log(model / published), or None where either is missing or 0."""
    if not model or not published or model <= 0 or published <= 0:
        return None
    return math.log(model / published)


def _add(out: list[Residual], machine: str, kind: str, row: Any, m: Any, p: Any):
    """Append the residual of one figure, where it can be told."""
    r = KINDS[kind].residual(m, p)
    if r is not None:
        out.append((machine, f"{kind}@{row}", r))


def _aaron(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of the 2018 sweep rows: score, change, zone and LRU."""
    out: list[Residual] = []
    first = {}
    for r in rows:
        first.setdefault(r["machine"], r["batch"])
    for r in rows:
        if r["score_published"] is None:
            continue
        m, b = r["machine"], r["batch"]
        _add(out, m, "score", b, r["score"], r["score_published"])
        if b != first[m]:
            _add(out, m, "change", b, r["change_pct"], r["change_published"])
        _add(out, m, "zone", b, r["zone_contention"], r["zone_published"])
        _add(out, m, "lru", b, r["lru_contention"], r["lru_published"])
    return out


def _ying(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of the 2023 rows: per-task throughput and hold times."""
    out: list[Residual] = []
    for r in rows:
        m, b = r["machine"], r["batch"]
        _add(out, m, "throughput", b, r["throughput"], r["throughput_published"])
        for kind in ("free_avg", "alloc_avg", "free_p99", "alloc_p99"):
            _add(out, m, kind, b, r[f"{kind}_us"], r[f"{kind}_published"])
    return out


def _yafang(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of the 2024 rows: each average, and the 5 -> 0 ratio."""
    out: list[Residual] = []
    by_max = {r["scale_max"]: r for r in rows if not r.get("host")}
    for s, r in by_max.items():
        _add(out, r["machine"], "avg", s, r["avg_ns"], r["avg_published"])
    if 5 in by_max and 0 in by_max and by_max[0]["avg_ns"]:
        hi, lo = by_max[5], by_max[0]
        model = hi["avg_ns"] / lo["avg_ns"]
        published = hi["avg_published"] / lo["avg_published"]
        _add(out, hi["machine"], "ratio", "5/0", model, published)
    return out


RESIDUALS: dict[str, Callable[[list[dict[str, Any]]], list[Residual]]] = {
    "aaron2018": _aaron,
    "ying2023": _ying,
    "yafang2024": _yafang,
}


def residuals(results: dict[str, list[dict[str, Any]]]) -> list[Residual]:
    """Return (machine, kind@row, residual in tolerances) for every figure."""
    out = []
    for name, rows in results.items():
        if name in RESIDUALS:
            out += RESIDUALS[name](rows)
    return out


def worst_by_machine(res: list[Residual]) -> dict[str, dict[str, tuple[str, float]]]:
    """Return, per machine and kind of figure, the row that misses most."""
    out: dict[str, dict[str, tuple[str, float]]] = {}
    for machine, what, value in res:
        kind = what.split("@")[0]
        best = out.setdefault(machine, {}).get(kind)
        if best is None or abs(value) > abs(best[1]):
            out[machine][kind] = (what, value)
    return out
