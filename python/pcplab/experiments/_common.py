"""What every experiment module reads and runs: its TOML, its reference rows, sim specs.

The experiment specs and the published figures are found by pcplab.data
($PCPLAB_EXPERIMENTS, --reference, $PCPLAB_REFERENCE, else the package's).
"""

from __future__ import annotations

import csv
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pcplab import charts, data, machines, runs
from pcplab.errors import BadInput
from pcplab.render import md_table


def own_name(module: str) -> str:
    """Return an experiment's name from its module's __name__ ("aaron2018")."""
    return module.rpartition(".")[2]


def reference_rows(name: str) -> list[dict[str, str]]:
    """Return the rows of the reference CSV NAME.csv."""
    with open(data.reference_file(name), newline="") as f:
        return list(csv.DictReader(f))


def heldout_rows(name: str) -> list[dict[str, str]]:
    """Return the rows of the held-out CSV NAME.csv (figures never fitted on)."""
    with open(data.heldout_file(name), newline="") as f:
        return list(csv.DictReader(f))


def load_experiment(name: str) -> dict[str, Any]:
    """Return the experiment spec NAME.toml as a dict (its name added)."""
    with open(data.experiment_file(name), "rb") as f:
        spec = tomllib.load(f)
    spec["name"] = name
    return spec


def fitted_profiles(fitted: Sequence[str]) -> set[str]:
    """Return the profiles of the machines of the FITTED experiments."""
    return {
        profile
        for name in fitted
        for profile in load_experiment(name).get("machines", {}).values()
    }


def server_ticks(rows: list[dict[str, Any]]) -> list[tuple[float, str]]:
    """Return x ticks naming each row's machine and whether the fit has seen it."""
    return charts.categories(
        [f"{r['machine']}\n{'fitted' if r['fitted'] else 'unseen'}" for r in rows]
    )


def heading(name: str) -> list[str]:
    """Return the heading of experiment NAME's section of docs/fidelity.md."""
    return [f"## {name}: {load_experiment(name)['title']}", ""]


def table_section(
    name: str, intro: str, header: Sequence[str], cells: Sequence[Sequence[Any]]
) -> list[str]:
    """Return a docs/fidelity.md section: NAME's heading, INTRO, one table."""
    return [*heading(name), intro, "", *md_table(list(header), cells), ""]


def mode_table(
    exp: dict[str, Any], quick: bool, mode: str | None = None
) -> dict[str, Any]:
    """Return the experiment's [quick] or [full] table, or the one named MODE."""
    return exp[mode or ("quick" if quick else "full")]


def timing(mode: dict[str, Any]) -> dict[str, float]:
    """Return the duration (and warm-up, where the mode sets one) of a mode."""
    return {k: mode[k] for k in ("duration_s", "warmup_s") if k in mode}


def keep(
    rows: list[dict[str, str]], only: Sequence[str] | None
) -> list[dict[str, str]]:
    """Return the reference rows of the machines ONLY names (all if None)."""
    return rows if only is None else [r for r in rows if r["machine"] in only]


def fitted_rows(
    exp: dict[str, Any], table: dict[str, Any], only: Sequence[str] | None
) -> list[dict[str, str]]:
    """Return EXP's reference rows of the machines ONLY, at the mode's batches.

    A mode table with a `batch` list keeps the rows of those batches only
    (the quick runs); without one, every row.
    """
    rows = keep(reference_rows(exp["reference"]), only)
    if "batch" in table:
        kept = set(table["batch"])
        rows = [r for r in rows if int(r["batch"]) in kept]
    return rows


def profile_for(exp: dict[str, Any], machine: str) -> str:
    """Return the sim profile of reference MACHINE, or refuse in one line."""
    profile = exp.get("machines", {}).get(machine)
    if profile is None:
        raise BadInput(
            f"reference machine '{machine}' of {exp['name']} has no machine "
            f"profile; map it in [machines] of {data.experiment_file(exp['name'])}"
        )
    return profile


def sim_spec(
    machine: str, constants: dict[str, float] | None = None, **spec: Any
) -> dict[str, Any]:
    """Return a sim spec on MACHINE's profile (loaded where it runs).

    CONSTANTS, when given, replace the global constants of constants.toml
    (what `pcplab fit` tries); the profile is then loaded here.
    """
    if constants is None:
        return {"engine": "sim", "machine": machine, **spec}
    profile = machines.load_profile(machine)
    profile["constants"] = {**profile["constants"], **constants}
    return {"engine": "sim", "machine": profile, **spec}


def charged(res: dict[str, Any]) -> str:
    """Return the instrument the sim charged in result RES ("none" without one)."""
    return (res.get("instrument") or {}).get("instrument", "none")


def instrument_line(spec: dict[str, Any]) -> str:
    """Return the line naming the instrument an experiment's TOML declares."""
    instrument = spec.get("spec", {}).get("instrument", "none")
    if instrument == "none":
        return "instrument: none (the published figures name no tracer)"
    return (
        f"instrument: {instrument}, as the thread measured; the model charges "
        "its cost (docs/machines.md, Instruments)"
    )


# The seed every sim run of an experiment takes (`reproduce --seeds`), and
# whether one did; unset: each spec's own (the engine's default, 1).
_SEED: ContextVar[int | None] = ContextVar("experiment_seed", default=None)
_SEEDED: ContextVar[list[bool] | None] = ContextVar("experiment_seeded", default=None)


@contextmanager
def seeded(seed: int) -> Iterator[list[bool]]:
    """Run the sim specs of experiments with SEED; yield whether any was."""
    used: list[bool] = []
    tokens = (_SEED.set(seed), _SEEDED.set(used))
    try:
        yield used
    finally:
        _SEED.reset(tokens[0])
        _SEEDED.reset(tokens[1])


def run_seeds(run: Callable[[], Any], seeds: int) -> list[Any]:
    """Call RUN once per seed 1..SEEDS; return each call's result.

    Stops after the first call if it ran no sim spec: a seed changes
    nothing the host or the native engine measures.
    """
    out = []
    for seed in range(1, seeds + 1):
        with seeded(seed) as used:
            out.append(run())
        if not used:
            break
    return out


def run_specs(
    name: str, specs: list[dict[str, Any]], workers: int, scheduler: Any
) -> list[dict[str, Any]]:
    """Run the specs of experiment NAME in parallel, with a progress bar."""
    seed, used = _SEED.get(), _SEEDED.get()
    if seed is not None:
        specs = [{**s, "seed": seed} if s.get("engine") == "sim" else s for s in specs]
        if used is not None and any(s.get("engine") == "sim" for s in specs):
            used.append(True)
    return runs.run_specs(specs, workers, scheduler=scheduler, desc=name)


@dataclass(frozen=True)
class Option:
    """An option of `pcplab reproduce` an experiment takes (OPTIONS of its module).

    The value (a tuple: the option may be given more than once) reaches the
    module's run() as the keyword the module names it by, when given.
    """

    flag: str  # "--machine"
    metavar: str
    help: str
    check: Callable[[str], Any] | None = None  # raises BadInput on a bad value
