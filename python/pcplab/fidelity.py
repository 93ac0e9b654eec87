"""The model beside every published figure of the reference CSVs.

Each experiment with published figures (pcplab.experiments) is run on the
sim engine with the profile of its machine, and every row of the reference
CSVs (pcplab/reference, or where pcplab.data is told to look) gets the
modelled figure and the error. `pcplab fidelity` writes docs/fidelity.md
from it; the global constants are fitted on the rows of the FITTED
experiments only, and the table shows all of them, good and bad.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pcplab import experiments
from pcplab.errors import BadInput
from pcplab.experiments._common import run_seeds
from pcplab.repeats import combine_rows

Rows = list[dict[str, Any]]
# The lowest and highest residual of a scored figure over the seeds, by
# (reference machine, "kind@row"), as pcplab.tolerance names a residual.
Spread = dict[tuple[str, str], tuple[float, float]]


def runners() -> dict[str, Callable[..., Rows]]:
    """Return the run function of each experiment with published figures."""
    return {name: experiments.get(name).run for name in experiments.published()}


def reference_machines() -> dict[str, list[str]]:
    """Map every machine the fit reads to the fitted experiments that read it.

    A machine of several threads (LKP's lkp-skl-fpga01 is in three reports)
    is one machine: a fold that leaves it out leaves out all its rows.
    """
    out: dict[str, list[str]] = {}
    for name in experiments.fitted():
        for machine in experiments.get(name).fit_machines():
            out.setdefault(machine, []).append(name)
    return out


def read_machines() -> dict[str, list[str]]:
    """Map every machine the constants on file were fitted on to its experiments.

    A machine only experiments made FITTED since the last fit read is not
    here: its figures are predictions until a fit reads them.
    """
    read = set(experiments.read_by_fit())
    out = {
        m: [e for e in mine if e in read] for m, mine in reference_machines().items()
    }
    return {m: mine for m, mine in out.items() if mine}


# A thread fold's label (pcplab.folds): "thread aaron2018".
THREAD = "thread "


def threads() -> dict[str, list[str]]:
    """Map every fitted thread (experiment) to its reference machines."""
    return {name: experiments.get(name).fit_machines() for name in experiments.fitted()}


def check_machines(names: Iterable[str], option: str) -> None:
    """Refuse NAMES given with OPTION unless each is a reference machine."""
    known = reference_machines()
    unknown = sorted(set(names) - set(known))
    if unknown:
        # quoted: a machine's name may hold commas (the EPYC guest's does)
        raise BadInput(
            f"{option} {', '.join(unknown)}: not a reference machine; "
            f"known: {', '.join(f'{m!r}' for m in known)}"
        )


def run_machines(
    only: Sequence[str],
    workers: int,
    *,
    quick: bool = False,
    mode: str | None = None,
    constants: dict[str, float] | None = None,
) -> dict[str, Rows]:
    """Run the fitted experiments' rows of the reference machines ONLY."""
    owner = reference_machines()
    results = {}
    for name in experiments.fitted():
        mine = [m for m in only if name in owner.get(m, ())]
        if mine:
            results[name] = experiments.get(name).run(
                quick, workers, mode=mode, only=mine, constants=constants
            )
    return results


def left_out(
    folds: dict[str, dict[str, float]], quick: bool, workers: int
) -> dict[str, Rows]:
    """Predict each reference machine with the constants fitted without it."""
    out: dict[str, Rows] = {}
    for machine, constants in folds.items():
        for name, rows in run_machines(
            [machine], workers, quick=quick, constants=constants
        ).items():
            out.setdefault(name, []).extend(rows)
    return out


def by_thread(
    machine_folds: dict[str, dict[str, float]],
    thread_folds: dict[str, dict[str, float]],
) -> dict[str, dict[str, float]]:
    """Map every reference machine to the constants of its thread's fold.

    A thread of one machine has no fold of its own (pcplab.folds): its
    machine's fold is it.
    """
    out = {}
    for thread, mine in threads().items():
        for machine in mine:
            if thread in thread_folds:
                out[machine] = thread_folds[thread]
            elif len(mine) == 1 and machine in machine_folds:
                out[machine] = machine_folds[machine]
    return out


def over_seeds(
    run: Callable[[], dict[str, Rows]], seeds: int
) -> tuple[dict[str, Rows], Spread]:
    """Run RUN once per seed 1..SEEDS; return its rows merged and each figure's range.

    Merged rows hold each figure's mean over the seeds and its standard
    deviation as `<field>_std` (pcplab.repeats.combine_rows).
    """
    runs = run_seeds(run, seeds)
    if len(runs) == 1:
        return runs[0], {}
    merged = {name: combine_rows([r[name] for r in runs], name) for name in runs[0]}
    values: dict[tuple[str, str], list[float]] = {}
    for results in runs:
        for machine, what, r in experiments.residuals(results):
            values.setdefault((machine, what), []).append(r)
    spread = {k: (min(v), max(v)) for k, v in values.items() if len(v) == len(runs)}
    return merged, spread
