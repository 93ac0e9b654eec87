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
from pathlib import Path
from typing import Any

from pcplab import charts, data, machines, runs
from pcplab.data import record_rows
from pcplab.errors import BadInput
from pcplab.headers import PUBLISHED_KERNEL, RAN, ran
from pcplab.render import md_table
from pcplab.stats import change_pct
from pcplab.tolerance import Kind, Residual, add


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


def published_kernel(rows: Sequence[dict[str, str]]) -> str:
    """Return the kernels of published ROWS (their `kernel` column), joined by "|".

    A kernel's note in brackets ("v6.7-rc1 (both commits in ...)") is left out.
    """
    return "|".join(dict.fromkeys(r["kernel"].split(" (")[0] for r in rows))


def load_experiment(name: str) -> dict[str, Any]:
    """Return the experiment spec NAME.toml as a dict (its name added)."""
    with open(data.experiment_file(name), "rb") as f:
        spec = tomllib.load(f)
    spec["name"] = name
    return spec


def fit_machines(exp: dict[str, Any]) -> list[str]:
    """Return the machines whose rows `pcplab fit` reads in experiment EXP.

    A reference experiment's are its CSV's; a record experiment's are the
    machines of its record's rows on the fit side (the record README's
    split, chosen before any model run), never a held-out one's.
    """
    if "reference" in exp:
        return list(
            dict.fromkeys(r["machine"] for r in reference_rows(exp["reference"]))
        )
    # an LKP commit's experiment runs the rows of one test
    rows = record_rows(exp["record"], "fit")
    rows = [r for r in rows if r.get("test") == exp.get("test", r.get("test"))]
    return list(dict.fromkeys(record_machine(r) for r in rows))


def record_machine(row: dict[str, str]) -> str:
    """Return the machine of a record row: LKP's host name, else its `machine`."""
    return row.get("lkp_host") or row["machine"]


def fit_side(
    rows: list[dict[str, str]], only: Sequence[str] | None
) -> list[dict[str, str]]:
    """Return a record experiment's ROWS, or with ONLY the fit side's of those.

    `pcplab fit` and its folds name the machines (ONLY) whose rows they
    read: a held-out row is never among them, even on a fit machine.
    """
    if only is None:
        return rows
    return [r for r in rows if r["split"] == "fit" and record_machine(r) in only]


def fitted_profiles(fitted: Sequence[str]) -> set[str]:
    """Return the profiles of the machines the FITTED experiments' fit reads."""
    out = set()
    for name in fitted:
        exp = load_experiment(name)
        out |= {profile_for(exp, m) for m in fit_machines(exp)}
    return out


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
    """Return the lines naming the instrument and the kernel build a TOML declares."""
    instrument = spec.get("spec", {}).get("instrument", "none")
    if instrument == "none":
        line = "instrument: none (the published figures name no tracer)"
    else:
        line = (
            f"instrument: {instrument}, as the thread measured; the model "
            "charges its cost (docs/machines.md, Instruments)"
        )
    return f"{line}\n{build_line(spec)}"


def build_line(spec: dict[str, Any]) -> str:
    """Return the line saying which kernel build options the model ran, and why."""
    if spec.get("spec", {}).get("config_debug_list"):
        return f"build: CONFIG_DEBUG_LIST=y, charged ({spec['build']})"
    return (
        "build: CONFIG_DEBUG_LIST not known (the record gives no kernel "
        "config); modelled without it"
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


# LKP's perf-profile rows the model has a figure for: the metric's tail after
# "perf-profile.", and the figure (pcplab.experiments._common.lkp_figures).
LKP_FIGURES = {
    "calltrace.cycles-pp.native_queued_spin_lock_slowpath._raw_spin_lock_irqsave"
    ".rmqueue_bulk": "zone_alloc",
    "calltrace.cycles-pp.native_queued_spin_lock_slowpath._raw_spin_lock_irqsave"
    ".free_pcppages_bulk": "zone_free",
    "calltrace.cycles-pp.native_queued_spin_lock_slowpath._raw_spin_lock_irqsave"
    ".folio_lruvec_lock_irqsave.release_pages": "lru_free",
    # since 99fbb6bfc16f (v6.9) release_pages' lru_lock is taken in folios_put_refs
    "calltrace.cycles-pp.native_queued_spin_lock_slowpath._raw_spin_lock_irqsave"
    ".folio_lruvec_lock_irqsave.folios_put_refs": "lru_free",
    "calltrace.cycles-pp.native_queued_spin_lock_slowpath._raw_spin_lock_irqsave"
    ".folio_lruvec_lock_irqsave.folio_batch_move_lru": "lru_fault",
    "children.cycles-pp.rmqueue_bulk": "in_rmqueue_bulk",
    "children.cycles-pp.free_pcppages_bulk": "in_free_pcppages_bulk",
}
# Functions calling nothing the profile names, so their self and children
# shares are one figure: the perf_profile section of a sim result charges them
# under these names on every generation (docs/machines.md, "Where the cycles
# go"); other functions' names and inlining changed between v6.7 and 6.18.
LEAF_FUNCTIONS = (
    "native_queued_spin_lock_slowpath",
    "copy_page",
    "clear_page_erms",
    "__free_one_page",
    "__list_del_entry_valid_or_report",
)
# Leaf functions only a build with a spec key has: no model figure without it.
BUILD_FUNCTIONS = {"__list_del_entry_valid_or_report": "config_debug_list"}
# The model's lock waits each LKP call chain is: (lock, caller).
_LOCK_CALLERS = {
    "zone_alloc": ("zone_lock", "rmqueue_bulk"),
    "zone_free": ("zone_lock", "free_pcppages_bulk"),
    "lru_free": ("lru_lock", "release_pages"),
    "lru_fault": ("lru_lock", "folio_batch_move_lru"),
}


def lkp_figure(metric: str) -> str | None:
    """Return the model's figure for an LKP row ("score", "zone_free"...), or None."""
    if metric.startswith("will-it-scale.per_"):
        return "score"
    tail = metric.removeprefix("perf-profile.")
    kind, _, fn = tail.partition(".cycles-pp.")
    if kind in ("self", "children") and fn in LEAF_FUNCTIONS:
        return f"leaf:{fn}"
    return next((f for m, f in LKP_FIGURES.items() if tail.startswith(m)), None)


def lkp_figures(res: dict[str, Any]) -> dict[str, float]:
    """Return a sim result's figures as LKP's: score, shares of CPU time (%)."""
    cpu_ns = res["tasks"] * res["duration_s"] * 1e9
    out = {"score": res["throughput"]["ops_per_task_per_s"]}
    for fn in LEAF_FUNCTIONS:
        build_key = BUILD_FUNCTIONS.get(fn)
        if build_key is None or res.get("spec", {}).get(build_key):
            out[f"leaf:{fn}"] = res["perf_profile"]["self"].get(fn, 0.0)
    for figure, (lock, caller) in _LOCK_CALLERS.items():
        waits = res["locks"][lock]["callers"]
        ns = sum(c["total_wait_ns"] for c in waits if c["caller"] == caller)
        out[figure] = 100 * ns / cpu_ns
    for fn in ("rmqueue_bulk", "free_pcppages_bulk"):
        lat = res["latency_ns"][fn]
        out[f"in_{fn}"] = 100 * lat["count"] * lat["avg"] / cpu_ns
    return out


def pinned(spec: dict[str, Any]) -> dict[str, Any]:
    """Return SPEC with high = "high_min" replaced by the zone's computed high_min.

    pcp->high fixed at what the kernel computes without auto-tuning (high_min,
    the v6.6 zone_highsize()): read from the pagesets of a 1 ms run of SPEC.
    """
    if spec.get("high") != "high_min":
        return spec
    probe = {k: v for k, v in spec.items() if k != "high"}
    res = runs.run_specs([{**probe, "duration_s": 0.001, "warmup_s": 0}], 1)[0]
    return {**spec, "high": min(z["high_min"] for z in res["pagesets"])}


def new_kernels(exp: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return the spec keys of each new kernel of an LKP experiment, by commit.

    A report compares one commit with its parent ([new], under the key "");
    a thread with a retest compares several with the same parent
    ([new_by_commit], keyed by the record's commit_new).
    """
    return exp.get("new_by_commit") or {"": exp["new"]}


def _commit(exp: dict[str, Any], row: dict[str, str]) -> str:
    """Return the key of new_kernels(EXP) that record ROW's new kernel is."""
    return row["commit_new"] if "new_by_commit" in exp else ""


def lkp_change_run(
    name: str,
    quick: bool,
    workers: int,
    scheduler: Any,
    fit: FitOptions | None = None,
) -> list[dict[str, Any]]:
    """Run an LKP commit's parent ([base]) and each new kernel; a row per figure.

    The rows are the record CSV's rows of the TOML's `test` and `split`; each
    carries the published base, new and change beside the model's. FIT:
    what `pcplab fit` asks of a FITTED one (its mode, machines, constants).
    """
    fit = fit or FitOptions()
    exp = load_experiment(name)
    rows = [
        r for r in record_rows(exp["record"], exp["split"]) if r["test"] == exp["test"]
    ]
    rows = fit_side(rows, fit.only)
    hosts = sorted({r["lkp_host"] for r in rows})
    news = new_kernels(exp)
    base = {**exp["spec"], **timing(mode_table(exp, quick, fit.mode))}
    specs = [
        pinned(sim_spec(profile_for(exp, h), fit.constants, **base, **side))
        for h in hosts
        for side in (exp["base"], *news.values())
    ]
    results = iter(run_specs(name, specs, workers, scheduler))
    ran_on = {h: [next(results) for _ in range(len(news) + 1)] for h in hosts}
    sides = {
        (h, c): (ran_on[h][0], ran_on[h][1 + i])
        for h in hosts
        for i, c in enumerate(news)
    }
    model = {k: (lkp_figures(b), lkp_figures(n)) for k, (b, n) in sides.items()}
    out = []
    for r in rows:
        figure = lkp_figure(r["metric"])
        side = (r["lkp_host"], _commit(exp, r))
        if figure not in model[side][0]:  # not in the model's build
            figure = None
        row: dict[str, Any] = {
            "machine": r["lkp_host"],
            "profile": profile_for(exp, r["lkp_host"]),
            "split": r["split"],
            "commit_new": r["commit_new"],
            RAN: ran(*sides[side]),
            PUBLISHED_KERNEL: published_kernel([r]),
            "metric": r["metric"],
            "figure": figure or "",
            "unit": r["change_unit"],
            "base_published": float(r["base_value"]),
            "new_published": float(r["new_value"]),
            "change_published": float(r["change"]),
        }
        if figure:
            b, n = model[side][0][figure], model[side][1][figure]
            row |= {
                "base_model": b,
                "new_model": n,
                "change_model": change_pct(b, n) if figure == "score" else n - b,
            }
        out.append(row)
    return out


def lkp_kinds(prefix: str, split: str) -> dict[str, Any]:
    """Return the kinds of figure of an LKP commit experiment, named PREFIX_*."""
    return {
        f"{prefix}_change": Kind(False, 5, f"score change, {prefix} ({split})"),
        f"{prefix}_zone": Kind(False, 10, f"zone->lock share, {prefix} ({split})"),
        f"{prefix}_lru": Kind(False, 10, f"LRU lock share, {prefix} ({split})"),
    }


def lkp_residuals(
    prefix: str, rows: list[dict[str, Any]], not_scored: Sequence[str] = ()
) -> list[Residual]:
    """Residuals: the headline score's change, each lock share before and after.

    NOT_SCORED: "figure.side" or "metric.side" the record says is not that
    figure (a call chain named otherwise on that kernel).
    """
    kinds = lkp_kinds(prefix, "")
    out: list[Residual] = []
    # a retest compares several commits with one parent: each commit's
    # figures are its own (labelled by it), the parent's are scored once
    several = len({r.get("commit_new", "") for r in rows}) > 1
    done: set[tuple[str, str]] = set()

    def score(r: dict[str, Any], kind: str, label: str, side: str) -> None:
        if several and side != "base":
            label = f"{label}.{r['commit_new']}"
        if (r["machine"], label) not in done:
            done.add((r["machine"], label))
            model, published = r[f"{side}_model"], r[f"{side}_published"]
            add(out, kinds, r["machine"], kind, label, model, published)

    for r in rows:
        figure = r["figure"]
        if figure == "score" and ".per_" in r["metric"]:
            score(r, f"{prefix}_change", "score", "change")
        kind = {"zone": f"{prefix}_zone", "lru_": f"{prefix}_lru"}.get(figure[:4])
        if kind is None:
            continue
        for side in ("base", "new"):
            if {f"{figure}.{side}", f"{r['metric']}.{side}"} & set(not_scored):
                continue
            score(r, kind, f"{figure}.{side}", side)
    return out


def _short(metric: str) -> str:
    """Return an LKP metric's name shortened: the spinlock frames as "slowpath <"."""
    for long, short in (
        ("perf-profile.", ""),
        ("cycles-pp.", ""),
        ("native_queued_spin_lock_slowpath._raw_spin_lock_irqsave.", "slowpath < "),
    ):
        metric = metric.replace(long, short)
    return metric


def lkp_cells(r: dict[str, Any]) -> list[str]:
    """Return a row's cells: metric, published base -> new (change), the model's."""
    unit = "%" if r["unit"] == "pct" else " pp"

    def side(who: str) -> str:
        if who == "model" and not r["figure"]:
            return "(no model figure)"
        b, n, c = (r[f"{k}_{who}"] for k in ("base", "new", "change"))
        fmt = ".0f" if r["figure"] == "score" or b > 1000 else ".2f"
        return f"{b:{fmt}} -> {n:{fmt}} ({c:+.1f}{unit})"

    return [r["machine"], _short(r["metric"]), side("published"), side("model")]


LKP_HEADER = ["LKP host", "metric", "published base -> new (change)", "model"]


def lkp_text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return an LKP commit experiment's figures, published beside the model."""
    out = [
        instrument_line(spec),
        f"{spec['commit']}: base {spec['base_note']}; new {spec['new_note']}",
        *md_table(LKP_HEADER, [lkp_cells(r) for r in rows]),
    ]
    return "\n".join(out) + "\n"


def lkp_section(name: str, rows: list[dict[str, Any]], intro: str) -> list[str]:
    """Return an LKP commit experiment's docs/fidelity.md section."""
    return table_section(name, intro, LKP_HEADER, [lkp_cells(r) for r in rows])


def _tick(metric: str) -> str:
    """Return an LKP metric's plot label: a lock's call chain by lock and caller."""
    kind, _, chain = metric.removeprefix("perf-profile.").partition(".cycles-pp.")
    figure = lkp_figure(metric)
    if kind == "calltrace" and figure in _LOCK_CALLERS:
        lock, caller = _LOCK_CALLERS[figure]
        return (
            f"{lock.replace('_', '->', 1) if lock == 'zone_lock' else lock} < {caller}"
        )
    return f"{chain.split('.')[0]} ({kind})"


def lkp_plotted(rows: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """Return the rows an LKP commit's plot draws: per-task scores, model shares.

    The per-task score (will-it-scale.per_*_ops) is drawn base and new; every
    perf-profile row the model has a figure for is drawn as its change (pp).
    """
    scores = [r for r in rows if r["metric"].startswith("will-it-scale.per_")]
    shares = [r for r in rows if r["figure"] not in ("", "score")]
    return scores, shares


def lkp_plots(name: str, rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot an LKP commit's per-task score and perf-profile changes beside LKP's."""
    exp = load_experiment(name)
    scores, shares = lkp_plotted(rows)
    # one commit: "base", "new"; a retest's several: base and each commit
    commits = list(dict.fromkeys(r.get("commit_new", "") for r in scores))
    kernels = ["base", "new"] if len(commits) < 2 else ["base", *commits]
    sides = [
        {
            "x": float(i and 1 + commits.index(r.get("commit_new", ""))),
            "pub": r[f"{side}_published"],
        }
        | {
            k.replace(f"{side}_model", "model"): v
            for k, v in r.items()
            if k.startswith(f"{side}_model")
        }
        for r in scores
        for i, side in enumerate(("base", "new"))
    ]
    score = charts.Panel(
        f"{rows[0]['machine']}, {exp['test']}, {exp['spec']['tasks']} tasks",
        "kernel",
        "score (ops/s per task)",
        [
            charts.model(sides, "x", "model", "score", style="points"),
            charts.published(sides, "x", "pub", "score", style="points"),
        ],
        xticks=charts.categories(kernels),
        from_zero=True,
    )
    changes = charts.placed(shares, [float(i) for i in range(len(shares))])
    profile = charts.Panel(
        "perf-profile, new - base",
        "LKP metric",
        "change of share (pp of cycles)",
        [
            charts.model(changes, "x", "change_model", "perf-profile", style="points"),
            charts.published(
                changes, "x", "change_published", "perf-profile", style="points"
            ),
        ],
        xticks=charts.categories(
            [
                _tick(r["metric"])
                + (f"\n{r['commit_new']}" if len(commits) > 1 else "")
                for r in shares
            ]
        ),
        zero_line=True,
    )
    figure = charts.Figure(
        out / f"{name}_change",
        f"{name}: {exp['commit']}",
        [score, profile],
        ncols=2,
        published_note="LKP's report",
        size=(5.5, 5.0),  # room for the slanted metric names under the panel
    )
    return charts.draw(figure)


@dataclass(frozen=True)
class FitOptions:
    """What `pcplab fit` asks of a FITTED experiment's run (the contract's).

    MODE: the TOML table to run instead of [quick]/[full]; ONLY: the fit's
    machines whose rows to run (None: every row); CONSTANTS: the point tried.
    """

    mode: str | None = None
    only: Sequence[str] | None = None
    constants: dict[str, float] | None = None


@dataclass(frozen=True)
class LkpChange:
    """The contract of an LKP commit experiment (pcplab/experiments/__init__.py).

    NAME: the module's; PREFIX names its kinds; SPLIT says how its rows stand.
    """

    name: str
    prefix: str
    split: str

    @property
    def kinds(self) -> dict[str, Kind]:
        """Return its kinds of figure."""
        return lkp_kinds(self.prefix, self.split)

    def run(
        self, quick: bool, workers: int, *, scheduler: Any = None, **fit: Any
    ) -> list[dict[str, Any]]:
        """Run the commit's parent ([base]) and the commit ([new]).

        FIT: the contract's mode, only and constants (FitOptions' fields).
        """
        return lkp_change_run(self.name, quick, workers, scheduler, FitOptions(**fit))

    def residuals(self, rows: list[dict[str, Any]]) -> list[Residual]:
        """Residuals of the score's change and the zone->lock and LRU shares."""
        exp = load_experiment(self.name)
        return lkp_residuals(self.prefix, rows, exp.get("not_scored", []))

    def text(self, rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
        """Return every figure of the report, published beside the model."""
        return lkp_text(rows, spec)

    def section(
        self, rows: list[dict[str, Any]], cv: list[dict[str, Any]]
    ) -> list[str]:
        """Return the docs/fidelity.md table of the report's figures."""
        return lkp_section(self.name, rows, load_experiment(self.name)["intro"])

    def plots(self, rows: list[dict[str, Any]], out: Path) -> list[Path]:
        """Plot the per-task score and the perf-profile changes beside LKP's."""
        return lkp_plots(self.name, rows, out)
