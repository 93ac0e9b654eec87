"""What a thread's reader judges beyond each figure, as an experiment's TOML declares.

An experiment's `[[scores]]` tables name a generic scorer and the row
fields it reads (docs/fidelity.md, "Scoring"); none is written per
experiment:

- `ranking`: the order of the rows' `by` (machines) by a figure, at each
  value of `at`; a pair whose published figures are within the tolerance of
  each other is not ordered, every other pair must keep its order.
- `percentile`: a quantile of a log2 histogram (funclatency's), model
  against published, within `factor` (2: one bucket) either way.
- `sign`: the sign of a change, a row field that is one or the change of
  a figure from the row at `from` to the row at `to`; a published change
  smaller than pcplab.tolerance.FLOOR_PTS points has no sign to judge.
- `paired`: a figure of the rows matching `model_where` against the same
  figure of the rows matching `published_where` (this kernel beside its
  calibrated model), as a pcplab.tolerance.Kind judges it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pcplab.tolerance import FLOOR_PTS, Kind, miss_of

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Scored:
    """One judged figure: where, its error beside its bound, within or not.

    REST_ON names the (machine, row) pairs whose figures it is built from,
    so that what it rests on (in-sample, left out, held out) can be told.
    """

    machine: str
    label: str
    row: str
    error: str
    bound: str
    within: bool
    miss: float  # the error as a share of its bound (1: at its edge)
    rests_on: tuple[tuple[str, str], ...]


def from_residuals(
    residuals: Iterable[tuple[str, str, float]], kinds: dict[str, Kind]
) -> list[Scored]:
    """Return each residual (pcplab.tolerance) as a scored figure."""
    out = []
    for r in residuals:
        machine, what, value = r
        kind, row = what.split("@", 1)
        k = kinds[kind]
        published = getattr(r, "published", None)
        out.append(
            Scored(
                machine,
                k.label,
                row,
                k.error(value),
                k.bound(published),
                k.within(value, published),
                miss_of(r, kinds),
                ((machine, row),),
            )
        )
    return out


def _kind(score: dict[str, Any], kinds: dict[str, Kind]) -> Kind:
    """Return the Kind a score names (`kind`), or the one its `tolerance` states."""
    if "kind" in score:
        return kinds[score["kind"]]
    return Kind(
        bool(score.get("ratio", True)), float(score["tolerance"]), score["label"]
    )


def _value(row: dict[str, Any], key: str) -> float | None:
    """Return ROW's number under KEY, None where it has none."""
    value = row.get(key)
    return None if value is None or value == "" else float(value)


def _groups(rows: Rows, key: str) -> dict[str, Rows]:
    """Return ROWS grouped by their KEY, in order."""
    out: dict[str, Rows] = {}
    for r in rows:
        if key in r:
            out.setdefault(str(r[key]), []).append(r)
    return out


def ranking(rows: Rows, score: dict[str, Any], kinds: dict[str, Kind]) -> list[Scored]:
    """Score the order of `by` by `field` against `published`, at each `at`."""
    kind, by = _kind(score, kinds), score.get("by", "machine")
    out = []
    for at, group in _groups(rows, score["at"]).items():
        items = [
            (str(r[by]), _value(r, score["field"]), _value(r, score["published"]))
            for r in group
        ]
        items = [(n, m, p) for n, m, p in items if m is not None and p is not None]
        ordered = [
            (a, b)
            for a in items
            for b in items
            if a[2] > b[2] and not kind.within(kind.residual(a[2], b[2]) or 0.0, b[2])
        ]
        if not ordered:
            continue  # no two published figures apart by more than the tolerance
        reversed_ = [(a[0], b[0]) for a, b in ordered if a[1] <= b[1]]

        def order(index: int, items: list = items) -> str:
            return " > ".join(n for n, *_ in sorted(items, key=lambda i: -i[index]))

        out.append(
            Scored(
                f"the {len(items)} machines" if by == "machine" else by,
                score["label"],
                at,
                f"model {order(1)}; published {order(2)}"
                + (
                    f" ({len(reversed_)} of {len(ordered)} pairs reversed)"
                    if reversed_
                    else ""
                ),
                f"order of pairs over {kind.bound()} apart",
                not reversed_,
                (1 + len(reversed_) / len(ordered)) if reversed_ else 0.0,
                tuple((n, at) for n, *_ in items),
            )
        )
    return out


def hist_quantile(hist: list[list[int]], q: float) -> tuple[int, int] | None:
    """Return the log2 bucket [lo, hi] holding quantile Q of HIST, None if empty."""
    total = sum(c for *_, c in hist)
    if total <= 0:
        return None
    seen = 0
    for lo, hi, count in hist:
        seen += count
        if seen >= q * total:
            return lo, hi
    return hist[-1][0], hist[-1][1]


def _ns(value: float) -> str:
    """Format nanoseconds in the unit a reader reads them in."""
    for unit, scale in (("ms", 1e6), ("us", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} ns"


def percentile(
    rows: Rows, score: dict[str, Any], kinds: dict[str, Kind]
) -> list[Scored]:
    """Score a quantile of the log2 histogram `hist` against `published`, per `at`."""
    q, factor = float(score["quantile"]), float(score.get("factor", 2))
    out = []
    for r in rows:
        model, published = r.get(score["hist"]), r.get(score["published"])
        if not model or not published or score["at"] not in r:
            continue
        calls = sum(c for *_, c in model)
        if calls * (1 - q) < 1:
            continue  # too few calls to place that quantile
        m, p = hist_quantile(model, q), hist_quantile(published, q)
        if m is None or p is None:
            continue
        ratio = max(m[0], 1) / max(p[0], 1)
        out.append(
            Scored(
                str(r.get("machine", "")),
                score["label"],
                str(r[score["at"]]),
                f"model {_ns(m[0])} to {_ns(m[1])}, published {_ns(p[0])} to "
                f"{_ns(p[1])} ({ratio:.3g}x)",
                f"{factor:g}x (log2 buckets)",
                1 / factor - 1e-9 <= ratio <= factor + 1e-9,
                abs(math.log(ratio)) / math.log(factor),
                ((str(r.get("machine", "")), str(r[score["at"]])),),
            )
        )
    return out


def _changes(
    rows: Rows, score: dict[str, Any]
) -> list[tuple[dict[str, Any], str, float | None, float | None]]:
    """Return (row, where, model change, published change) of SCORE's changes."""
    if "from" not in score:
        return [
            (
                r,
                str(r.get(score["at"], "")),
                _value(r, score["field"]),
                _value(r, score["published"]),
            )
            for r in rows
        ]
    out = []
    for group in _groups(rows, score.get("by", "machine")).values():
        at = {str(r.get(score["key"])): r for r in group}
        a, b = at.get(str(score["from"])), at.get(str(score["to"]))
        if a is None or b is None:
            continue
        pair = []
        for key in (score["field"], score["published"]):
            x, y = _value(a, key), _value(b, key)
            pair.append(None if not x or y is None else 100 * (y / x - 1))
        out.append((a, f"{score['from']} -> {score['to']}", *pair))
    return out


def sign(rows: Rows, score: dict[str, Any], kinds: dict[str, Kind]) -> list[Scored]:
    """Score the sign of each change SCORE names, where the published one has one."""
    out = []
    for row, where, model, published in _changes(rows, score):
        if model is None or published is None or abs(published) < FLOOR_PTS:
            continue
        same = model * published > 0
        machine = str(row.get(score.get("by", "machine"), ""))
        rests = [(machine, p) for p in where.split(" -> ")]
        out.append(
            Scored(
                machine,
                score["label"],
                where,
                f"model {model:+.1f}%, published {published:+.1f}%",
                "the published sign",
                same,
                0.0 if same else 1 + abs(model) / max(abs(published), FLOOR_PTS),
                tuple(rests),
            )
        )
    return out


def paired(rows: Rows, score: dict[str, Any], kinds: dict[str, Kind]) -> list[Scored]:
    """Score `field` of the `model_where` rows against the `published_where` rows."""
    kind = _kind(score, kinds)

    def where(r: dict[str, Any], cond: dict[str, Any]) -> bool:
        return all(r.get(k) == v for k, v in cond.items())

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(r.get(k) for k in score["match"])

    theirs = {key(r): r for r in rows if where(r, score["published_where"])}
    out = []
    for r in rows:
        if not where(r, score["model_where"]) or key(r) not in theirs:
            continue
        m, p = _value(r, score["field"]), _value(theirs[key(r)], score["field"])
        value = kind.residual(m, p)
        if value is None:
            continue
        row = " ".join(str(k) for k in key(r))
        machine = str(r.get("machine", "this host"))
        out.append(
            Scored(
                machine,
                kind.label,
                row,
                kind.error(value),
                kind.bound(p),
                kind.within(value, p),
                kind.miss(value, p),
                ((machine, row),),
            )
        )
    return out


SCORERS: dict[str, Callable[[Rows, dict[str, Any], dict[str, Kind]], list[Scored]]] = {
    "ranking": ranking,
    "percentile": percentile,
    "sign": sign,
    "paired": paired,
}


def check(spec: dict[str, Any], where: str) -> None:
    """Refuse a `[[scores]]` table of SPEC (the TOML at WHERE) with no known scorer."""
    for score in spec.get("scores", []):
        if score.get("scorer") not in SCORERS or "label" not in score:
            raise TypeError(
                f"{where}: [[scores]] needs a label and a scorer of "
                f"{', '.join(SCORERS)}; got {score}"
            )


def score(
    rows: Rows, spec: dict[str, Any], kinds: dict[str, Kind]
) -> tuple[list[Scored], list[str]]:
    """Return what SPEC's `[[scores]]` judge in ROWS, and why any judged nothing.

    A score with nothing to judge says so with its `missing` line (else
    "nothing to compare").
    """
    check(spec, str(spec.get("name", "an experiment")))
    out, unscored = [], []
    for s in spec.get("scores", []):
        found = SCORERS[s["scorer"]](rows, s, kinds)
        if not found:
            unscored.append(
                f"{s['label']}: not scored: {s.get('missing', 'nothing to compare')}"
            )
        out += found
    return out, unscored
