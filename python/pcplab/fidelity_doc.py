"""docs/fidelity.md: every reference row beside the model, in-sample and left out.

The in-sample figure runs the constants fitted on every fit machine;
the left-out figure runs, for each machine, the constants fitted without it
(machines/crossval.toml, `pcplab fit --cross-validate`): what the model
predicts for a machine it has never seen. The summary gives each machine's
worst row per kind of figure against its tolerance, which the experiment's
module names (pcplab.experiments); the machines of the held-out figures
(pcplab/heldout/, under their threads' names), which no fit reads, follow
with their one figure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pcplab import basis, experiments, recordlist
from pcplab.fidelity import Spread, read_machines
from pcplab.render import md_table
from pcplab.tolerance import Kind, Residual, published_of, worst_by_machine

Rows = dict[str, list[dict[str, Any]]]


def render_markdown(results: Rows, cv: Rows | None = None) -> str:
    """Return the fidelity tables: model beside published, error on every row."""
    cv = cv or {}
    lines: list[str] = []
    for exp in experiments.registered():
        if exp.name in results:
            lines += exp.section(results[exp.name], cv.get(exp.name, []))
    return "\n".join(lines)


def _at(kind: Kind, worst: Residual, seeds: tuple[float, float] | None = None) -> str:
    """Format a worst row as its error and where it is ("+8.7% at 31").

    With the range of that row's error over the seeds, if it ran several
    ("+8.7% at 31 (seeds +7.9% to +9.4%)").
    """
    _, what, r = worst
    text = f"{kind.error(r)} at {what.split('@')[1]}"
    if seeds:
        text += f" (seeds {kind.error(seeds[0])} to {kind.error(seeds[1])})"
    return text


def _within(kind: Kind, r: Residual) -> str:
    """Say whether a residual is inside the tolerance the verdict reads."""
    return "yes" if kind.within(r[2], published_of(r)) else "**no**"


def _owners(results: Rows) -> dict[tuple[str, str], str]:
    """Return the experiment of every (machine, kind@row) figure of RESULTS."""
    return {
        (r[0], r[1]): name
        for name, rows in results.items()
        for r in experiments.get(name).residuals(rows)
    }


def _held_out_basis(owner: str | None, worst: Residual) -> str:
    """Say what a held-out figure rests on: nothing fitted, or a fitted profile."""
    if owner is None:
        return "none: held out"
    row = worst[1].split("@")[1]
    note = basis.of(owner, [(worst[0], row)], left_out=False).note
    return f"none: held out, {note}" if note else "none: held out"


def _tally(
    hits: dict[str, int], totals: dict[str, int], starts: dict, by_thread: dict
) -> str:
    """Say how many figures of each basis are within tolerance, and what each is."""

    def by(starts: dict) -> str:
        return "; ".join(
            f"from {start}: {h} of {n}" for start, (h, n) in sorted(starts.items())
        )

    caveat = (
        " A fold started from the full fit has read the rows it leaves out "
        "through its start: its figures are not predictions."
        if any(s.startswith("full fit") for s in [*starts, *by_thread])
        else ""
    )
    thread = (
        f"; left out with their whole thread {hits['thread']} of "
        f"{totals['thread']} (folds started {by(by_thread)})"
        if totals["thread"]
        else ""
    )
    return (
        f"Within tolerance: {hits['in']} of {totals['in']} reference rows "
        f"in-sample; left out {hits['out']} of {totals['out']} (folds started "
        f"{by(starts) or 'nowhere: no fold on file'}){thread}; held out "
        f"{hits['held']} of {totals['held']} figures, {hits['seen']} of "
        f"{totals['seen']} of them on a fitted machine's profile.{caveat}"
    )


def _count(
    hits: dict[str, int], totals: dict[str, int], by_start: dict, key: str, start: str
) -> Callable[[Kind, Residual | None], None]:
    """Return a counter of KEY's figures, within tolerance or not, under START."""

    def count(k: Kind, r: Residual | None) -> None:
        if r is None:
            return
        hit = k.within(r[2], published_of(r))
        hits[key] += hit
        totals[key] += 1
        h, n = by_start.get(start, (0, 0))
        by_start[start] = (h + hit, n + 1)

    return count


def render_summary(
    results: Rows,
    cv: Rows | None,
    spread: tuple[Spread, Spread] = ({}, {}),
    thread: tuple[Rows, Spread] | None = None,
) -> str:
    """Return each machine's worst row per figure, in-sample, left out, held out.

    Every left-out figure names where its fold's search started, every
    held-out one whether it ran on a fitted machine's profile (pcplab.basis).
    SPREAD: the range of every figure's error over the seeds, in-sample and
    left out, where the rows are means over several (pcplab.fidelity).
    THREAD: the rows run with each thread's fold, and their spread.
    """
    kinds = experiments.kinds()
    seeds_in, seeds_out = spread
    by_thread, seeds_thread = thread or ({}, {})
    inside = worst_by_machine(experiments.residuals(results), kinds)
    outside = worst_by_machine(experiments.residuals(cv or {}), kinds)
    threads = worst_by_machine(experiments.residuals(by_thread), kinds)
    # in-sample: the machines the constants on file were fitted on; the rows
    # of a machine only a newly FITTED experiment reads are held out below
    fitted, owners = read_machines(), _owners(results)
    rows = []
    hits = dict.fromkeys(("in", "out", "thread", "held", "seen"), 0)
    totals = dict.fromkeys(hits, 0)
    starts: dict[str, tuple[int, int]] = {}
    thread_starts: dict[str, tuple[int, int]] = {}
    fold_of_thread = basis.thread_fold_starts()
    for machine in fitted:
        start = basis.fold_starts().get(machine, "no fold")
        # a machine of several threads: the first with a fold on file
        t_starts = [fold_of_thread.get(t) for t in fitted[machine]]
        t_start = next(filter(None, t_starts), "no fold")
        count_out = _count(hits, totals, starts, "out", start)
        count_thread = _count(hits, totals, thread_starts, "thread", t_start)
        for kind, worst in inside.get(machine, {}).items():
            k = kinds[kind]
            o = outside.get(machine, {}).get(kind)
            t = threads.get(machine, {}).get(kind)
            hits["in"] += k.within(worst[2], published_of(worst))
            totals["in"] += 1
            count_out(k, o)
            count_thread(k, t)
            rows.append(
                [
                    machine,
                    f"{k.label} ({k.bound(published_of(worst))})",
                    _at(k, worst, seeds_in.get((machine, worst[1]))),
                    "-" if o is None else _at(k, o, seeds_out.get((machine, o[1]))),
                    "-" if o is None else start,
                    "-" if o is None else _within(k, o),
                    "-"
                    if t is None
                    else f"{_at(k, t, seeds_thread.get((machine, t[1])))}, "
                    f"within: {_within(k, t)} (from {t_start})",
                ]
            )
    # held-out figures (a thread's own machine names): no fit reads them, so
    # their one figure, from the full fit's constants, is a prediction, the
    # more so when no fitted machine shares its profile
    for machine, worst_kinds in inside.items():
        if machine in fitted:
            continue
        for kind, worst in worst_kinds.items():
            k = kinds[kind]
            rests_on = _held_out_basis(owners.get((machine, worst[1])), worst)
            hit = k.within(worst[2], published_of(worst))
            seen = "profile" in rests_on
            hits["held"] += hit
            totals["held"] += 1
            hits["seen"] += hit and seen
            totals["seen"] += seen
            rows.append(
                [
                    machine,
                    f"{k.label} ({k.bound(published_of(worst))})",
                    "not fitted",
                    _at(k, worst, seeds_in.get((machine, worst[1]))),
                    rests_on,
                    _within(k, worst),
                    "-",
                ]
            )
    header = [
        "machine",
        "figure (tolerance)",
        "in-sample worst",
        "left out worst",
        "fold's start",
        "within",
        "left out with its thread",
    ]
    tally = _tally(hits, totals, starts, thread_starts)
    return "\n".join([*md_table(header, rows), "", tally])


SUMMARY_HEADING = "## Summary: each machine's worst row, in-sample and left out"


def render_document(
    results: Rows,
    cv: Rows | None,
    spread: tuple[Spread, Spread] = ({}, {}),
    seeds: int = 1,
    thread: tuple[Rows, Spread] | None = None,
) -> str:
    """Return the summary, then every table (what `pcplab fidelity` prints).

    SEEDS: how many seeds of the sim each figure is the mean of; SPREAD the
    range of each figure's error over them (pcplab.fidelity.over_seeds).
    """
    over = (
        f" Every modelled figure is the mean of seeds 1..{seeds} of the sim "
        f"(`pcplab fidelity --seeds {seeds}`), and each worst row gives the "
        "range of its error over those seeds."
        if seeds > 1
        else " Every modelled figure is the sim's run with seed 1, the one the "
        "fit reads; `pcplab fidelity --seeds N` gives means over N seeds and "
        "each worst row's range over them."
    )
    head = [
        SUMMARY_HEADING,
        "",
        "In-sample: the constants of constants.toml, fitted on every machine "
        "of the experiments its [last_fit] names (the reference CSVs and the "
        "fit side of the mined record). Left out: for each machine, the "
        "constants of the fold fitted without its rows (crossval.toml); "
        "`fold's start` says where that fold's search began, and a fold "
        "started from the full fit has read the rows it leaves out through "
        "its start, so its figure is not a prediction. `within`: the left-out"
        " worst row is inside the tolerance. `left out with its thread`: the "
        "same machine run with the constants of the fold fitted without every"
        " row of its thread (its mail: every machine of it left out at once),"
        " and where that fold started. Below the reference machines, the "
        "held-out figures (pcplab/heldout/ under their threads' machine "
        "names, the record's held-out side), which no fit reads: their figure"
        " from constants.toml is a prediction, `fold's start` says whether it"
        " ran on a profile some fitted machine has." + over,
        "",
    ]
    if results.keys() & set(experiments.fitted()):
        head += [render_summary(results, cv, spread, thread), ""]
    tail = "\n".join(recordlist.section())
    return "\n".join(head) + "\n" + render_markdown(results, cv) + "\n" + tail


def splice(existing: str, generated: str) -> str:
    """Return EXISTING's prose above its summary, then GENERATED (the tables).

    docs/fidelity.md opens with what was tried and why, written by hand;
    `pcplab fidelity --out` regenerates only what follows.
    """
    prose, found, _ = existing.partition(SUMMARY_HEADING)
    return (prose if found else "") + generated
