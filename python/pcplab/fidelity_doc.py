"""docs/fidelity.md: every reference row beside the model, in-sample and left out.

The in-sample figure runs the constants fitted on every reference machine;
the left-out figure runs, for each machine, the constants fitted without it
(machines/crossval.toml, `pcplab fit --cross-validate`): what the model
predicts for a machine it has never seen. The summary gives each machine's
worst row per kind of figure against its tolerance, which the experiment's
module names (pcplab.experiments); the machines of the held-out figures
(pcplab/heldout/, under their threads' names), which no fit reads, follow
with their one figure.
"""

from __future__ import annotations

from typing import Any

from pcplab import experiments, recordlist
from pcplab.fidelity import Spread, reference_machines
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


def render_summary(
    results: Rows,
    cv: Rows | None,
    spread: tuple[Spread, Spread] = ({}, {}),
) -> str:
    """Return each machine's worst row per figure, in-sample and left out.

    SPREAD: the range of every figure's error over the seeds, in-sample and
    left out, where the rows are means over several (pcplab.fidelity).
    """
    kinds = experiments.kinds()
    seeds_in, seeds_out = spread
    inside = worst_by_machine(experiments.residuals(results), kinds)
    outside = worst_by_machine(experiments.residuals(cv or {}), kinds)
    fitted = reference_machines()
    rows = []
    hits = {"in-sample": 0, "left out": 0, "held out": 0}
    held = 0
    for machine in fitted:
        for kind, worst in inside.get(machine, {}).items():
            k = kinds[kind]
            o = outside.get(machine, {}).get(kind)
            hits["in-sample"] += k.within(worst[2], published_of(worst))
            hits["left out"] += o is not None and k.within(o[2], published_of(o))
            rows.append(
                [
                    machine,
                    f"{k.label} ({k.bound(published_of(worst))})",
                    _at(k, worst, seeds_in.get((machine, worst[1]))),
                    "-" if o is None else _at(k, o, seeds_out.get((machine, o[1]))),
                    "-" if o is None else _within(k, o),
                ]
            )
    # held-out figures (a thread's own machine names): no fit reads them, so
    # their one figure, from the full fit's constants, is a left-out one
    for machine, worst_kinds in inside.items():
        if machine in fitted:
            continue
        for kind, worst in worst_kinds.items():
            k = kinds[kind]
            label = f"{k.label} ({k.bound(published_of(worst))})"
            hits["held out"] += k.within(worst[2], published_of(worst))
            held += 1
            rows.append(
                [
                    machine,
                    label,
                    "not fitted",
                    _at(k, worst, seeds_in.get((machine, worst[1]))),
                    _within(k, worst),
                ]
            )
    header = ["machine", "figure (tolerance)", "in-sample worst", "left out worst"]
    tally = (
        f"Within tolerance: {hits['in-sample']} of {len(rows) - held} reference "
        f"rows in-sample, {hits['left out']} left out; {hits['held out']} of "
        f"{held} held-out figures."
    )
    return "\n".join([*md_table([*header, "within"], rows), "", tally])


SUMMARY_HEADING = "## Summary: each machine's worst row, in-sample and left out"


def render_document(
    results: Rows,
    cv: Rows | None,
    spread: tuple[Spread, Spread] = ({}, {}),
    seeds: int = 1,
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
        "In-sample: the constants of constants.toml, fitted on every "
        "reference machine. Left out: for each machine, the constants fitted "
        "without it (crossval.toml), i.e. the model's prediction for a machine "
        "it has not seen. `within`: the left-out worst row is inside the "
        "tolerance. Below the reference machines, the held-out figures "
        "(pcplab/heldout/, under their threads' machine names), which no fit "
        "reads: their figure from constants.toml is already a prediction." + over,
        "",
    ]
    if results.keys() & set(experiments.fitted()):
        head += [render_summary(results, cv, spread), ""]
    tail = "\n".join(recordlist.section())
    return "\n".join(head) + "\n" + render_markdown(results, cv) + "\n" + tail


def splice(existing: str, generated: str) -> str:
    """Return EXISTING's prose above its summary, then GENERATED (the tables).

    docs/fidelity.md opens with what was tried and why, written by hand;
    `pcplab fidelity --out` regenerates only what follows.
    """
    prose, found, _ = existing.partition(SUMMARY_HEADING)
    return (prose if found else "") + generated
