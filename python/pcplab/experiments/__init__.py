"""The reference experiments: one module each, and the registry that finds them.

An experiment is three files: a module of this package (`aaron2018.py`), its
spec beside it (`aaron2018.toml`, found by pcplab.data, so
$PCPLAB_EXPERIMENTS may replace it) and, if it has any, its published
figures (`pcplab/reference/*.csv`, named by the spec). The registry imports
every module of this package whose name does not start with "_" (pkgutil
over the package's __path__; `_common` holds what the modules share), so
adding an experiment edits nothing else: `pcplab reproduce`, `pcplab
fidelity`, `pcplab fit`, the report folder and docs/fidelity.md ask the
registry and never name one. Like will-it-scale's testcases, a module keeps
one small contract; the module's name is the experiment's.

Required:

  ORDER: int
      Where it comes in `all`, the report and docs/fidelity.md, lowest first
      (a thread's year; the host's experiment, with no thread, comes last).
  run(quick, workers, *, scheduler=None, **options) -> list[dict]
      Run it and return its rows: QUICK picks its TOML's [quick] table, else
      [full]; WORKERS runs go in parallel, on the Dask cluster at SCHEDULER
      if one is given; OPTIONS are those of OPTIONS below that were given.
      Each row carries under `ran` the facts of the results it rests on
      (pcplab.headers.ran) and, where its TOML or record names the kernel
      of its published figure, that kernel under `kernel_published`: its
      text and every figure are headed by what ran (headers.of_rows).
  text(rows, spec) -> str
      The rows in its thread's layout, for the terminal and NAME.txt (SPEC:
      its TOML as load_experiment returns it; the title line is added).

Optional (the default in brackets):

  FITTED: bool [False]
      `pcplab fit` fits the global constants on its rows, and `pcplab
      fidelity` predicts them left out. Its TOML names a `reference` CSV
      (every row fitted) or a `record` CSV (pcplab/record/: the rows whose
      `split` is "fit"; _common.fit_machines). run() then also takes mode
      (a TOML table to use instead of [quick]/[full], e.g. "fit"), only
      (the fit's machines: the reference CSV's `machine` column, the
      record's `lkp_host` or `machine`; given, a record experiment runs
      only the fit side's rows of those) and constants (replacing
      constants.toml's).
  KINDS: dict[str, pcplab.tolerance.Kind] [{}]
      The kinds of figure it is held to, each with its tolerance; the names
      are unique across the experiments.
  residuals(rows) -> list[(machine, "kind@row", residual)] [none]
      Every error of its rows in tolerances (pcplab.tolerance.add).
  tables(rows) -> dict[str, list[dict]] [{NAME: rows without list fields}]
      Its CSV and JSON files in the report folder, by file stem.
  plots(rows, out) -> list[Path] [none]
      Write its plots into the folder OUT, each as a PNG and an SVG of the
      same stem (pcplab.charts; docs/reports.md says what each shows);
      return every path written.
  section(rows, cv) -> list[str] [no section]
      Its section of docs/fidelity.md, in-sample ROWS beside the left-out
      rows CV (possibly empty). An experiment with a section has published
      figures: `pcplab fidelity` runs it, and the report shows the section.
  NEEDS_ROOT: str | None [None]
      Why it needs root ("sweeps vm.percpu_pagelist_high_fraction"), if it
      does: `pcplab reproduce` skips it with that reason when not root.
  OPTIONS: dict[str, _common.Option] [{}]
      Options of `pcplab reproduce` it takes, by run()'s keyword.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any

from pcplab import charts, headers, machines
from pcplab.experiments._common import (
    Option,
    fit_machines,
    load_experiment,
    reference_rows,
)
from pcplab.render import scalars
from pcplab.tolerance import Kind, Residual

__all__ = [
    "Experiment",
    "fitted",
    "get",
    "kinds",
    "load_experiment",
    "names",
    "options",
    "published",
    "read_by_fit",
    "reference_rows",
    "registered",
    "residuals",
]

Rows = list[dict[str, Any]]
REQUIRED = ("ORDER", "run", "text")


class Experiment:
    """One experiment module seen through the contract, with its defaults."""

    def __init__(self, name: str, module: ModuleType) -> None:
        missing = [a for a in REQUIRED if not hasattr(module, a)]
        if missing:
            raise TypeError(
                f"experiment module {module.__name__} lacks {', '.join(missing)} "
                "(the contract is in pcplab/experiments/__init__.py)"
            )
        self.name = name
        self.module = module
        self.order: int = module.ORDER
        self.fitted: bool = getattr(module, "FITTED", False)
        self.kinds: dict[str, Kind] = getattr(module, "KINDS", {})
        self.needs_root: str | None = getattr(module, "NEEDS_ROOT", None)
        self.options: dict[str, Option] = getattr(module, "OPTIONS", {})
        self.published: bool = hasattr(module, "section")

    def __repr__(self) -> str:
        return f"<experiment {self.name} from {self.module.__file__}>"

    def spec(self) -> dict[str, Any]:
        """Return its TOML (pcplab.data finds it)."""
        return load_experiment(self.name)

    def fit_machines(self) -> list[str]:
        """Return the machines whose rows `pcplab fit` reads (none unless FITTED)."""
        return fit_machines(self.spec()) if self.fitted else []

    def run(self, quick: bool, workers: int, **options: Any) -> Rows:
        """Run it (see the contract); return its rows."""
        return self.module.run(quick, workers, **options)

    def ran(self, rows: Rows) -> str | None:
        """Return "pcplab reproduce NAME: engine sim, ...": what its ROWS ran."""
        ran = headers.of_rows(rows)
        return None if ran is None else f"pcplab reproduce {self.name}: {ran}"

    def text(self, rows: Rows, spec: dict[str, Any]) -> str:
        """Return its rows in its thread's layout, under a title and what ran."""
        title = f"== {self.name}: {spec.get('title', '')}"
        ran = self.ran(rows)
        head = title if ran is None else f"{title}\n{ran}"
        return f"{head}\n\n{self.module.text(rows, spec)}"

    def tables(self, rows: Rows) -> dict[str, Rows]:
        """Return its CSV/JSON tables by file stem."""
        if hasattr(self.module, "tables"):
            return self.module.tables(rows)
        return {self.name: [scalars(r) for r in rows]}

    def plots(self, rows: Rows, out: Path) -> list[Path]:
        """Write its plots into OUT (none for no rows); return their paths."""
        if not rows or not hasattr(self.module, "plots"):
            return []
        with charts.stating(headers.of_rows(rows)):
            return self.module.plots(rows, out)

    def section(self, rows: Rows, cv: Rows) -> list[str]:
        """Return its section of docs/fidelity.md (none without published figures)."""
        return self.module.section(rows, cv) if self.published else []

    def residuals(self, rows: Rows) -> list[Residual]:
        """Return every error of its rows, in tolerances."""
        if not hasattr(self.module, "residuals"):
            return []
        return self.module.residuals(rows)

    def skip_reason(self) -> str | None:
        """Say why it cannot run here (it needs root), or None if it can."""
        if self.needs_root is None or os.geteuid() == 0:
            return None
        return (
            f"skipped: the {self.name} experiment {self.needs_root} and needs "
            f"root; run pcplab reproduce {self.name} as root"
        )


_found: dict[tuple[str, ...], dict[str, Experiment]] = {}


def _registry() -> dict[str, Experiment]:
    """Import every experiment module on the package's path; keep them by name."""
    path = tuple(__path__)
    if path not in _found:
        found = [
            Experiment(m.name, importlib.import_module(f"{__name__}.{m.name}"))
            for m in pkgutil.iter_modules(list(path))
            if not m.name.startswith("_")
        ]
        found.sort(key=lambda e: (e.order, e.name))
        _found[path] = {e.name: e for e in found}
    return _found[path]


def registered() -> list[Experiment]:
    """Return every experiment, in ORDER."""
    return list(_registry().values())


def names() -> list[str]:
    """Return every experiment's name, in ORDER."""
    return list(_registry())


def get(name: str) -> Experiment:
    """Return experiment NAME (a KeyError if there is none: check names first)."""
    return _registry()[name]


def fitted() -> list[str]:
    """Return the experiments whose rows the global constants are fitted on."""
    return [e.name for e in registered() if e.fitted]


def read_by_fit() -> list[str]:
    """Return the fitted experiments the constants on file were fitted on.

    constants.toml's [last_fit] names them (`pcplab fit` writes it); one
    made FITTED since has rows those constants never read, so its figures
    are predictions until a fit reads them.
    """
    named = machines.read_toml(machines.CONSTANTS).get("last_fit", {})
    return [n for n in fitted() if n in named.get("experiments", fitted())]


def published() -> list[str]:
    """Return the experiments with published figures (a docs/fidelity.md section)."""
    return [e.name for e in registered() if e.published]


def options() -> dict[str, tuple[Option, list[str]]]:
    """Return each option of `pcplab reproduce` the experiments take, and its takers."""
    out: dict[str, tuple[Option, list[str]]] = {}
    for e in registered():
        for key, option in e.options.items():
            out.setdefault(key, (option, []))[1].append(e.name)
    return out


def kinds() -> dict[str, Kind]:
    """Return every kind of figure of every experiment, by its unique name."""
    out: dict[str, Kind] = {}
    for e in registered():
        twice = out.keys() & e.kinds.keys()
        if twice:
            raise TypeError(f"experiment {e.name} names kinds {sorted(twice)} again")
        out.update(e.kinds)
    return out


def residuals(results: dict[str, Rows]) -> list[Residual]:
    """Return (machine, kind@row, residual in tolerances) of every figure."""
    registry = _registry()
    out: list[Residual] = []
    for name, rows in results.items():
        if name in registry:
            out += registry[name].residuals(rows)
    return out
