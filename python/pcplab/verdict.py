"""The report's verdict: every scored figure, what it rests on, and the three counts.

Each experiment's figures are its residuals (pcplab.tolerance, the ones
the fit weighs) and what its TOML's `[[scores]]` judge beyond them
(pcplab.scorers: rankings, tails, signs, this kernel beside its calibrated
model). Each is marked in-sample, left out (by which fold) or held out
(pcplab.basis), and the table counts the three apart: a hit in-sample says
the fit reached a row it read, one held out that the model predicted it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pcplab import basis, experiments, scorers
from pcplab.render import md_table

Rows = dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class Figure:
    """One scored figure of one experiment, and what it rests on."""

    experiment: str
    scored: scorers.Scored
    basis: basis.Basis


def _scored(
    name: str, rows: list[dict[str, Any]]
) -> tuple[list[scorers.Scored], list[str]]:
    """Return the scored figures of experiment NAME's ROWS, and its unscored lines."""
    exp, kinds = experiments.get(name), experiments.kinds()
    found = scorers.from_residuals(exp.residuals(rows), kinds)
    extra, unscored = scorers.score(rows, exp.spec(), kinds)
    return found + extra, unscored


def figures(
    results: Rows, cv: Rows | None = None
) -> tuple[list[Figure], dict[str, list[str]]]:
    """Return every scored figure of RESULTS (full fit) and CV (the folds).

    Also, per experiment, the lines saying what it could not score.
    """
    out: list[Figure] = []
    unscored: dict[str, list[str]] = {}
    for name in [n for n in experiments.names() if n in results]:
        found, unscored[name] = _scored(name, results[name])
        out += [Figure(name, s, basis.of(name, s.rests_on, False)) for s in found]
        if cv and cv.get(name):
            folded, _ = _scored(name, cv[name])
            out += [Figure(name, s, basis.of(name, s.rests_on, True)) for s in folded]
    return out, unscored


def counts(found: list[Figure]) -> dict[str, tuple[int, int]]:
    """Return (within, scored) per basis."""
    return {
        b: (
            sum(f.scored.within for f in found if f.basis.kind == b),
            sum(f.basis.kind == b for f in found),
        )
        for b in basis.BASES
    }


def tally(found: list[Figure]) -> str:
    """Return the three counts on one line ("in-sample 15/15 · left out 3/5 · ...")."""
    return " · ".join(f"{b} {w}/{n}" for b, (w, n) in counts(found).items())


def no_fold(found: list[Figure]) -> list[str]:
    """Return the machines of in-sample figures that no fold on file leaves out."""
    return sorted(
        {
            m
            for f in found
            if f.basis.kind == basis.IN_SAMPLE
            for m in basis.without_fold(f.experiment, f.scored.rests_on)
        }
    )


def _worst(found: list[Figure]) -> str:
    """Return each missed kind's worst figure: its error, bound and where it missed."""
    worst: dict[str, Figure] = {}
    missed: dict[str, list[str]] = {}
    for f in found:
        if f.scored.within:
            continue
        label = f.scored.label
        if f.basis.kind not in missed.setdefault(label, []):
            missed[label].append(f.basis.kind)
            missed[label].sort(key=basis.BASES.index)
        if label not in worst or f.scored.miss > worst[label].scored.miss:
            worst[label] = f
    return "; ".join(
        f"{label} {f.scored.error} at {f.scored.row}, {f.basis.kind} (tolerance "
        f"{f.scored.bound}; missed {', '.join(missed[label])})"
        for label, f in worst.items()
    )


def _cell(found: list[Figure], kind: str) -> str:
    """Return a table cell: within/scored of one basis, with its notes."""
    mine = [f for f in found if f.basis.kind == kind]
    if not mine:
        return "-"
    notes = sorted({f.basis.note for f in mine if f.basis.note})
    cell = f"{sum(f.scored.within for f in mine)}/{len(mine)}"
    return f"{cell} ({'; '.join(notes)})" if notes else cell


def render(
    results: Rows, cv: Rows | None = None, notes: dict[str, str] | None = None
) -> list[str]:
    """Return the verdict: the three counts, then a row per experiment and machine."""
    found, unscored = figures(results, cv)
    rows = []
    for name in [n for n in experiments.names() if n in results or n in (notes or {})]:
        if name not in results:
            rows.append([name, "-", "-", "-", "-", f"not scored: {notes[name]}"])
            continue
        mine = [f for f in found if f.experiment == name]
        for line in unscored.get(name, []):
            rows.append([name, "-", "-", "-", "-", line])
        if not mine and not unscored.get(name):
            rows.append(
                [name, "-", "-", "-", "-", "not scored: no figure with a tolerance"]
            )
        machines = list(dict.fromkeys(f.scored.machine for f in mine))
        for machine in machines:
            theirs = [f for f in mine if f.scored.machine == machine]
            rows.append(
                [
                    name,
                    machine,
                    *(_cell(theirs, b) for b in basis.BASES),
                    _worst(theirs) or "none",
                ]
            )
    header = ["experiment", "machine", *basis.BASES, "worst miss per kind"]
    lines = [f"**{tally(found)}** (within tolerance / scored)", ""]
    missing = no_fold(found)
    if missing:
        lines += [
            f"No fold on file leaves out {', '.join(missing)}: no left-out figure.",
            "",
        ]
    return lines + md_table(header, rows)


def render_figures(results: Rows, cv: Rows | None = None) -> list[str]:
    """Return every scored figure as a table row, marked with what it rests on."""
    found, _ = figures(results, cv)
    header = [
        "experiment",
        "machine",
        "figure",
        "at",
        "error",
        "tolerance",
        "within",
        "rests on",
    ]
    rows = [
        [
            f.experiment,
            f.scored.machine,
            f.scored.label,
            f.scored.row,
            f.scored.error,
            f.scored.bound,
            "yes" if f.scored.within else "**no**",
            f"{f.basis.kind}{f' ({f.basis.note})' if f.basis.note else ''}",
        ]
        for f in found
    ]
    return md_table(header, rows)


def flat(results: Rows, cv: Rows | None = None) -> list[dict[str, Any]]:
    """Return every scored figure as a flat row (the report's verdict.csv)."""
    found, _ = figures(results, cv)
    return [
        {
            "experiment": f.experiment,
            "machine": f.scored.machine,
            "figure": f.scored.label,
            "at": f.scored.row,
            "error": f.scored.error,
            "tolerance": f.scored.bound,
            "within": f.scored.within,
            "basis": f.basis.kind,
            "basis_note": f.basis.note,
        }
        for f in found
    ]
