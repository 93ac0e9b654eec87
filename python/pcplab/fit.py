"""`pcplab fit`: the global constants by least squares on the published figures.

A machine differs from another only by its facts (machines/uarch.toml and
its profile); the constants in machines/constants.toml are the same for
all. This module says what fitting the ones listed in that file's [fit]
table means: their search space, every reference row the experiments'
[fit] tables name run at a point, the cost, the starts, and the files a fit
writes. The search is pcplab.fit_search's; the folds that judge the fit on
machines it has not seen (leave one machine or thread out, fit on the
rest, predict it) are pcplab.folds'.

Every residual is an error divided by the tolerance the project holds the
model to (each experiment module names its kinds of figure and tolerances:
pcplab.experiments), so a residual of 1 is a miss at the edge of
tolerance, whatever the metric.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import tomli_w
from scipy.stats import qmc

from pcplab import fidelity, machines
from pcplab.errors import BadInput

# How many seeds every evaluation of a fit averages (`pcplab fit --seeds`).
_SEEDS: ContextVar[int] = ContextVar("fit_seeds", default=1)


@contextmanager
def mean_of_seeds(seeds: int) -> Iterator[None]:
    """Make every evaluation inside the block the mean of seeds 1..SEEDS.

    Seed 1 alone reads a row on one of the model's cliffs as that seed
    lands on it (docs/fidelity.md): Skylake-EX's lock split at batch 63.
    """
    token = _SEEDS.set(seeds)
    try:
        yield
    finally:
        _SEEDS.reset(token)


def seeds_per_evaluation() -> int:
    """Return how many seeds each evaluation averages here (mean_of_seeds)."""
    return _SEEDS.get()


def evaluate(
    constants: dict[str, float] | None,
    only: Sequence[str],
    workers: int,
    mode: str = "fit",
) -> dict[str, list[dict[str, Any]]]:
    """Run the fitted experiments' rows of machines ONLY with CONSTANTS.

    Inside mean_of_seeds(N), each figure is the mean of seeds 1..N.
    """
    rows, _ = fidelity.over_seeds(
        lambda: fidelity.run_machines(only, workers, mode=mode, constants=constants),
        _SEEDS.get(),
    )
    return rows


def cost(values: Sequence[float]) -> float:
    """Return the fit's cost: half the sum of squared residuals."""
    return 0.5 * float(np.dot(values, values))


def cost_by_machine(
    rows: Sequence[tuple[str, str, float]], values: Sequence[float]
) -> dict[str, float]:
    """Return each machine's share of the cost of VALUES (one per row)."""
    out: dict[str, float] = {}
    for (machine, *_), value in zip(rows, values, strict=True):
        out[machine] = out.get(machine, 0.0) + 0.5 * value * value
    return out


@dataclass
class Space:
    """The constants being fitted, searched as log-scaled values in [1, 2].

    scipy's finite differences step each coordinate by a share of its own
    value, so the search runs on [1, 2] rather than [0, 1]: every constant
    then moves by 2-4% of its log range, well above the simulation's noise.
    """

    names: list[str]
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def from_file(cls, names: Sequence[str] | None = None) -> Space:
        """Return the [fit] table of constants.toml (or the NAMES of it)."""
        bounds = machines.read_toml(machines.CONSTANTS).get("fit", {})
        if names:
            unknown = sorted(set(names) - set(bounds))
            if unknown:
                raise BadInput(
                    f"cannot fit {', '.join(unknown)}; fittable: "
                    f"{', '.join(sorted(bounds))}"
                )
            bounds = {k: bounds[k] for k in names}
        if not bounds:
            raise BadInput("nothing to fit: constants.toml has an empty [fit] table")
        keys = list(bounds)
        lo = np.array([float(bounds[k][0]) for k in keys])
        hi = np.array([float(bounds[k][1]) for k in keys])
        if np.any(lo <= 0) or np.any(hi <= lo):
            raise BadInput("[fit] bounds must be 0 < lower < upper")
        return cls(keys, lo, hi)

    def unlearnt(
        self,
        constants: dict[str, float],
        jac: np.ndarray,
        log: Callable[[str], None] = lambda _: None,
    ) -> dict[str, float]:
        """Return CONSTANTS with each one JAC's rows do not move set to [unseen].

        A constant no fitted row moves (guest_miss_factor without a VM) was
        not learnt: it takes what the model knows without such a machine,
        not the search's start, which a fit on a left-out machine may have set.
        """
        unseen = self.unseen_values()
        out = dict(constants)
        for name, column in zip(self.names, np.asarray(jac).T, strict=True):
            if not np.any(column) and name in unseen:
                log(f"no fitted row moves {name}: {unseen[name]}")
                out[name] = unseen[name]
        return out

    def unseen_values(self) -> dict[str, float]:
        """Return constants.toml's [unseen] table: values no fitted row sets.

        Each is what the model knows without that kind of machine.
        """
        return machines.read_toml(machines.CONSTANTS).get("unseen", {})

    def middle(self) -> dict[str, float]:
        """Return the geometric middle of each constant's bounds.

        A start that no published figure set: a fold started there learns
        nothing from the machine it leaves out, unlike one started from the
        full fit.
        """
        return self.from_unit(np.full(len(self.names), 1.5))

    def samples(self, n: int, seed: int = 1) -> list[dict[str, float]]:
        """Return N quasi-random points of the bounds (scrambled Sobol, SEED).

        Starts that no published figure set, spread over the whole box on
        the same log scale as the middle, the same for every fold.
        """
        sobol = qmc.Sobol(len(self.names), scramble=True, seed=seed)
        return [self.from_unit(1 + u) for u in sobol.random(n)]

    def to_unit(self, values: dict[str, float]) -> np.ndarray:
        """Map constants to the search's [1, 2] log scale (clipped to bounds)."""
        v = np.clip([values[k] for k in self.names], self.lo, self.hi)
        return 1 + np.log(v / self.lo) / np.log(self.hi / self.lo)

    def from_unit(self, x: Sequence[float]) -> dict[str, float]:
        """Map a point of the search back to constants."""
        share = np.clip(np.asarray(x, dtype=float) - 1, 0, 1)
        v = self.lo * np.exp(share * np.log(self.hi / self.lo))
        return {k: float(round(val, 4)) for k, val in zip(self.names, v, strict=True)}


@dataclass
class FitResult:
    """What one least-squares fit found."""

    constants: dict[str, float]
    cost: float  # sum of squared residuals / 2, in tolerances
    residuals: list[tuple[str, str, float]]
    evaluations: int
    machines: list[str] = field(default_factory=list)
    start: str = ""  # which of the search's starts it came from
    # points run by the earlier searches a resumed fold went on from
    # (None: a crossval.toml from before [points] was kept)
    earlier_points: int | None = 0

    def total_points(self) -> int | None:
        """Return the points of every search of this fit (None: not all kept)."""
        if self.earlier_points is None:
            return None
        return self.evaluations + self.earlier_points

    def points_run(self) -> str:
        """Say how many points this fit ran, its earlier searches' included."""
        total = self.total_points()
        if total is None:
            return f"{self.evaluations} points run since it resumed"
        return f"{total} points run"


class EarlierFold(NamedTuple):
    """A fold on file in an earlier crossval.toml: a start for the same fold."""

    constants: dict[str, float]
    start: str  # where its first search began
    points: int | None  # points its searches ran ([points]; None: not kept)


# `pcplab fit --start`: which points each search starts from. "given" is
# the point the search is handed (the main fit: constants.toml; a fold: the
# main fit's result, which saw the machine the fold leaves out); "middle"
# is Space.middle(), which no published figure set. "sample" names no
# point: its search starts only from the best of --samples N.
STARTS = {
    "fitted": ("given",),
    "middle": ("middle",),
    "both": ("given", "middle"),
    "sample": (),
}


def start_points(
    space: Space, choice: str, label: str, given: dict[str, float]
) -> dict[str, dict[str, float]]:
    """Return the named points --start CHOICE searches from (GIVEN as LABEL)."""
    points = {"given": (label, given), "middle": ("middle", given | space.middle())}
    return dict(points[name] for name in STARTS[choice])


def write_constants(
    path: Path, fitted: dict[str, float], note: str, read: Sequence[str] | None
) -> None:
    """Rewrite constants.toml with FITTED values, keeping its comments.

    READ: the experiments whose rows the fit read, written to [last_fit]
    (pcplab.experiments.read_by_fit); None keeps the file's (no search ran).
    """
    lines = path.read_text().splitlines()
    out = []
    in_table = False  # the values are top-level keys; [unseen], [fit] follow
    table = ""
    for line in lines:
        key = line.split("=", 1)[0].strip()
        in_table = in_table or line.lstrip().startswith("[")
        if line.startswith("["):
            table = line.split("]", 1)[0] + "]"
        if table == "[last_fit]" and key == "experiments" and read is not None:
            names = ", ".join(f'"{n}"' for n in read)
            line = f"experiments = [{names}]"
        if key in fitted and not in_table and not line.lstrip().startswith("#"):
            comment = line[line.index("#") :] if "#" in line else ""
            text = (
                f"{key} = {tomli_w.dumps({'v': fitted[key]}).split('=', 1)[1].strip()}"
            )
            line = f"{text:<31} {comment}".rstrip()
        out.append(line)
    header = f"# Last fit: {note}"
    # the last fit's note ends the file's first comment block, whatever its
    # lines (a note written by hand may run on): all of it goes
    start = next((i for i, x in enumerate(out) if x.startswith("# Last fit:")), None)
    if start is not None:
        end = start + 1
        while end < len(out) and out[end].startswith("#"):
            end += 1
        del out[start:end]
    out.insert(next(i for i, x in enumerate(out) if not x.startswith("#")), header)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(out) + "\n")
    tmp.replace(path)


CROSSVAL = machines.CROSSVAL
THREAD = fidelity.THREAD


def write_crossval(
    path: Path, folds: dict[str, FitResult], day: str, keep_others: bool = False
) -> None:
    """Write each fold's constants (fitted without its rows) to PATH.

    A machine's fold goes to [left_out.MACHINE], a thread's (labelled
    "thread NAME", pcplab.folds) to [left_out_thread.NAME]. With
    KEEP_OTHERS the folds PATH already holds under other labels stay, so
    that folds run one at a time (`--leave-out`) add up to one file.
    """
    tables = ("left_out", "left_out_thread", "start", "points", "fold")
    doc: dict[str, dict[str, Any]] = {t: {} for t in tables}
    if keep_others and path.is_file():
        old = machines.read_toml(path, "--out", "give a directory of a fit")
        for t in tables:
            kept = old.get(t, {})
            doc[t] = {
                m: v
                for m, v in kept.items()
                if m not in folds and THREAD + m not in folds
            }
    for m, r in folds.items():
        if m.startswith(THREAD):
            doc["left_out_thread"][m.removeprefix(THREAD)] = r.constants
        else:
            doc["left_out"][m] = r.constants
        if r.start:
            doc["start"][m] = r.start
        if (total := r.total_points()) is not None:
            doc["points"][m] = total
        doc["fold"][m] = (
            f"cost {r.cost:.1f} on the rows it fits, {r.points_run()} ({day})"
        )
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        "# Cross-validation folds (`pcplab fit --cross-validate`): each\n"
        "# reference machine's constants fitted on the other machines only\n"
        "# ([left_out]), and each thread's fitted without every row of its\n"
        "# mail ([left_out_thread]). `pcplab fidelity` predicts each machine\n"
        "# with its folds; [start] names where each fold's search began,\n"
        "# [points] how many points its searches ran, [fold] what it reached.\n"
        + tomli_w.dumps({t: v for t, v in doc.items() if v})
    )
    tmp.replace(path)


_CROSSVAL_USAGE = "give a crossval.toml that `pcplab fit --cross-validate` wrote"


def earlier_folds(path: Path) -> dict[str, EarlierFold]:
    """Return PATH's folds by label (a machine, or "thread NAME").

    PATH is the crossval.toml in `pcplab fit --out`: each fold there is a
    start for the same fold run again (pcplab.folds, RESUMED).
    """
    doc = machines.read_toml(path, "--out", _CROSSVAL_USAGE)
    found = _fold_tables(doc, "left_out", f"--out {path}")
    found |= {
        THREAD + t: c
        for t, c in _fold_tables(doc, "left_out_thread", f"--out {path}").items()
    }
    starts, points = doc.get("start", {}), doc.get("points", {})
    return {
        m: EarlierFold(
            c,
            str(starts.get(m, "an unrecorded start")),
            points[m] if isinstance(points.get(m), int) else None,
        )
        for m, c in found.items()
    }


def crossval_constants(
    path: Path | None = None, table: str = "left_out", option: str = "--folds"
) -> dict[str, dict[str, float]]:
    """Return each left-out machine's constants: PATH's, else the package's.

    TABLE "left_out_thread": each thread's fold, by experiment, instead.
    OPTION names where PATH came from in an error (--folds, --out).
    """
    if path is None:
        if not CROSSVAL.is_file():
            return {}
        return machines.read_toml(CROSSVAL).get(table, {})
    doc = machines.read_toml(path, option, _CROSSVAL_USAGE)
    return _fold_tables(doc, table, f"{option} {path}")


def _fold_tables(
    doc: dict[str, Any], table: str, where: str
) -> dict[str, dict[str, float]]:
    """Return DOC's TABLE of folds, checked; WHERE names the file in an error."""
    if table not in doc and any(t in doc for t in ("left_out", "left_out_thread")):
        return {}  # folds of the other kind only (--leave-out a thread)
    folds = doc.get(table)
    known = set(machines.constants())
    if not isinstance(folds, dict) or not all(
        isinstance(c, dict)
        and set(c) <= known
        and all(isinstance(v, int | float) and v > 0 for v in c.values())
        for c in folds.values()
    ):
        raise BadInput(
            f"{where}: no [{table}.NAME] tables of positive constants; "
            f"{_CROSSVAL_USAGE}"
        )
    if table == "left_out":
        fidelity.check_machines(folds, f"{where} names")
    return folds
