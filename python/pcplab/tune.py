"""`pcplab tune`: the best PCP setting for a machine, workloads and a budget.

The knobs a kernel generation has (KNOBS: pcp_batch_scale_max, the high
fraction, the relinquish policy, and batch as a developer override) span
a space; every point is run on the model for each workload and seed. The
recommendation is the point of highest throughput (relative to the
kernel's defaults, weighted over the workloads) whose budgets hold in
every run; the front is the Pareto front of throughput against the first
budget's metric. Small spaces are searched whole (a grid), larger ones
with optuna's TPE sampler under the budgets as constraints.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pcplab import engine
from pcplab.budgets import Budget
from pcplab.errors import BadInput
from pcplab.repeats import expand, regroup
from pcplab.runs import materialize, run_specs

# A space of at most this many points is run whole; a larger one is sampled.
GRID_LIMIT = 48
# TPE asks again for settings it has seen; give up after this many asks a trial.
ASKS_PER_TRIAL = 10
DEFAULT = None  # a knob left at the kernel's own value


@dataclass(frozen=True)
class Knob:
    """A setting tune may change: its spec key, values, and how to apply it."""

    key: str
    values: tuple[Any, ...]
    kernels: tuple[str, ...]  # the model generations that have it
    apply: str  # how to set it on a real kernel; {v} is the value
    developer: bool = False  # not settable without patching the kernel
    sysctl: str | None = None  # the running kernel's knob (--engine host)
    opt_in: bool = False  # searched only when --knob names it
    listed: bool = False  # its values: the engines' list (policies), not VALUES


KNOBS = (
    Knob(
        "scale_max",
        (0, 1, 2, 3, 4, 5, 6),
        ("6.18", "6.19"),
        "CONFIG_PCP_BATCH_SCALE_MAX={v} (Kconfig since v6.7, a rebuild: the "
        "2024 sysctl vm.pcp_batch_scale_max was not merged)",
    ),
    Knob(
        "high_fraction",
        (DEFAULT, 64, 256, 1024),
        ("6.6", "6.18", "6.19"),
        "sysctl -w vm.percpu_pagelist_high_fraction={v}",
        sysctl="vm.percpu_pagelist_high_fraction",
    ),
    Knob(
        "relinquish",
        (DEFAULT, "off", "contended", "batched"),
        ("6.18", "6.19"),
        "relinquish {v}: 'batched' is v6.19's free_pcppages_bulk; 'contended' "
        "the unmerged 2025 patch; 'off' before v6.19 (a kernel, not a knob)",
        developer=True,
    ),
    Knob(
        "batch",
        (DEFAULT, 8, 16, 31, 63),
        ("4.18", "6.6", "6.18", "6.19"),
        "batch {v}: not settable on this kernel (zone_batchsize() computes it); "
        "a developer override, i.e. a patch",
        developer=True,
    ),
    Knob(
        "policy",
        (),
        ("4.18", "6.6", "6.18", "6.19"),
        "policy {v}: a patch, not a setting: 'pcplab policies' names the "
        "proposal it models (src/mm/policies/)",
        developer=True,
        opt_in=True,
        listed=True,
    ),
)


def _has_sysctl(name: str) -> bool:
    """Whether the running kernel has sysctl NAME (vm.x -> /proc/sys/vm/x)."""
    return Path("/proc/sys", *name.split(".")).exists()


def knobs_for(
    kernel: str, names: Sequence[str] | None, engine_name: str = "sim"
) -> list[Knob]:
    """Return the knobs of KERNEL (the running kernel's sysctls for host).

    NAMES, when given, picks among them and refuses any other; without
    them, every knob but the opt-in ones (the policy: a patch to compare,
    not a setting to recommend unasked).
    """
    if engine_name == "host":
        kernel = "this kernel"
        have = [k for k in KNOBS if k.sysctl and _has_sysctl(k.sysctl)]
    else:
        have = [k for k in KNOBS if kernel in k.kernels]
    have = [_listed(k) if k.listed else k for k in have]
    if names is None:
        return [k for k in have if not k.opt_in]
    known = {k.key: k for k in have}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadInput(
            f"unknown knob {', '.join(unknown)} for kernel {kernel}; "
            f"known: {', '.join(known) or 'none'}"
        )
    return [known[n] for n in dict.fromkeys(names)]


def _listed(knob: Knob) -> Knob:
    """Return KNOB with the engines' names as its values, the default first."""
    names = [p["name"] for p in engine.list_policies() if p["name"] != "default"]
    return replace(knob, values=(DEFAULT, *names))


def space(knobs: Sequence[Knob]) -> list[dict[str, Any]]:
    """Return every combination of the knobs' values (DEFAULT keys left out)."""
    if not knobs:
        raise BadInput("the search space is empty; give at least one --knob")
    return [
        {k.key: v for k, v in zip(knobs, combo, strict=True) if v is not DEFAULT}
        for combo in itertools.product(*(k.values for k in knobs))
    ]


@dataclass
class Point:
    """One evaluated setting: its score, budget figures and feasibility."""

    keys: dict[str, Any]
    score: float = 0.0  # throughput relative to the kernel's defaults
    ops_per_s: dict[str, float] = field(default_factory=dict)  # per workload
    worst: dict[str, float | None] = field(default_factory=dict)  # per budget
    feasible: bool = False


@dataclass
class Tuning:
    """What a search found: every point, the front and the recommendation."""

    points: list[Point]
    front: list[Point]
    recommendation: Point | None
    default: Point
    settable: Point | None = None  # the best the kernel takes without a patch
    settings_run: int = 0  # before settings that ran alike became one point


class Evaluator:
    """Runs settings on the model and scores them against the defaults."""

    def __init__(
        self,
        base: dict[str, Any],
        workloads: dict[str, float],
        budgets: Sequence[Budget],
        seeds: int,
        jobs: int,
    ) -> None:
        self.base, self.workloads, self.budgets = base, workloads, budgets
        self.seeds, self.jobs = seeds, jobs
        self.default_ops: dict[str, float] = {}
        self.default_worst: dict[str, float | None] = {}

    def specs(self, keys: dict[str, Any]) -> list[dict[str, Any]]:
        """Return the run specs of one setting, a spec per workload."""
        return [{**self.base, "workload": w, **keys} for w in self.workloads]

    def resolved(self, keys: dict[str, Any]) -> str | None:
        """Return the setting as the engine resolves it, None if refused.

        Two settings that resolve alike (scale_max=5 is the kernel's
        default) are one setting: the search runs it once.
        """
        try:
            specs = [engine.resolve(materialize(s)) for s in self.specs(keys)]
        except BadInput:  # e.g. high below batch
            return None
        return json.dumps([s.get("spec", s) for s in specs], sort_keys=True)

    def valid(self, keys: dict[str, Any]) -> bool:
        """Whether the engine accepts the setting."""
        return self.resolved(keys) is not None

    def distinct(self, settings: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return the accepted settings that resolve unlike each other and {}."""
        seen = {self.resolved({})}
        out = []
        for keys in settings:
            r = self.resolved(keys)
            if r is not None and r not in seen:
                seen.add(r)
                out.append(keys)
        return out

    def evaluate(self, settings: Sequence[dict[str, Any]]) -> list[Point]:
        """Run every setting for every workload and seed; return their Points."""
        specs = [s for keys in settings for s in self.specs(keys)]
        seeded = self.base.get("engine") == "sim"
        # the host's sysctl is global: its runs go one at a time
        jobs = 1 if self.base.get("engine") == "host" else self.jobs
        results = run_specs(expand(specs, self.seeds, seeded), jobs, desc="tune")
        if not self.default_ops:  # the first runs: can the budgets be told?
            self._check_measurable(results[0])
        runs = regroup(results, self.seeds * len(self.workloads))
        return [self._point(k, r) for k, r in zip(settings, runs, strict=True)]

    def _check_measurable(self, result: dict[str, Any]) -> None:
        """Refuse a budget whose statistic this engine cannot measure."""
        for budget in self.budgets:
            reason = budget.unmeasured(result)
            if reason:
                raise BadInput(
                    f"the {result.get('engine')} engine cannot measure "
                    f"{budget.name} here ({reason}); give a budget it measures, "
                    "e.g. fault.p99"
                )

    def _point(self, keys: dict[str, Any], runs: list[dict[str, Any]]) -> Point:
        """Score one setting from its runs (workload by workload, seeds inner)."""
        point = Point(keys=dict(keys))
        per_workload = regroup(runs, self.seeds)
        for workload, group in zip(self.workloads, per_workload, strict=True):
            ops = [r["throughput"]["ops_per_s"] for r in group]
            point.ops_per_s[workload] = sum(ops) / len(ops)
        for budget in self.budgets:
            values = [budget.value(r) for r in runs]
            measured = [v for v in values if v is not None]
            point.worst[budget.name] = max(measured) if measured else None
        if not keys:
            self.default_ops = dict(point.ops_per_s)
            self.default_worst = dict(point.worst)
        total = sum(self.workloads.values())
        point.score = (
            sum(
                w * point.ops_per_s[name] / self.default_ops[name]
                for name, w in self.workloads.items()
                if self.default_ops.get(name)
            )
            / total
        )
        point.feasible = all(self._holds(point, b) for b in self.budgets)
        return point

    def _holds(self, point: Point, budget: Budget) -> bool:
        """Whether BUDGET holds at POINT.

        No call at all meets a latency budget, unless the kernel's defaults
        made calls: then the setting moved the work elsewhere (pcp-buddy
        refills without rmqueue_bulk), and the budget says nothing of it.
        """
        worst = point.worst[budget.name]
        if worst is None:
            return not point.keys or self.default_worst.get(budget.name) is None
        return worst <= budget.limit_ns


def pareto_front(points: Sequence[Point], metric: str | None) -> list[Point]:
    """Return the points no other beats on score and METRIC at once."""
    if metric is None:
        return sorted(points, key=lambda p: -p.score)[:1]
    scored = [p for p in points if p.worst.get(metric) is not None]

    def dominated(p: Point) -> bool:
        return any(
            q.score >= p.score
            and q.worst[metric] <= p.worst[metric]
            and (q.score > p.score or q.worst[metric] < p.worst[metric])
            for q in scored
        )

    return sorted(
        (p for p in scored if not dominated(p)), key=lambda p: p.worst[metric]
    )


def _search_optuna(
    evaluator: Evaluator,
    knobs: Sequence[Knob],
    trials: int,
    seed: int,
    known: Sequence[Point] = (),
) -> list[Point]:
    """Sample TRIALS new settings with TPE; the budgets are its constraints.

    A sampled setting among KNOWN (already run) is told its score unrun;
    the search ends after ASKS_PER_TRIAL asks per trial (a small space is
    sampled whole before that).
    """
    import optuna  # only for spaces too large to run whole

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed)
    )
    # settings the engine resolves alike (batch=63 where 63 is the batch)
    # are one: run once, named by the fewest keys
    known_by = {evaluator.resolved(p.keys): p for p in known}
    points: list[Point] = []
    batch = max(1, evaluator.jobs)
    for _ in range(ASKS_PER_TRIAL * trials // batch + 1):
        if len(points) >= trials:
            break
        asked = [study.ask() for _ in range(min(batch, trials - len(points)))]
        settings = [_suggest(trial, knobs) for trial in asked]
        identities = [evaluator.resolved(keys) for keys in settings]
        fresh = {
            i: keys
            for i, keys in zip(identities, settings, strict=True)
            if i is not None and i not in known_by
        }
        for i, p in zip(fresh, evaluator.evaluate(list(fresh.values())), strict=True):
            known_by[i] = p
            points.append(p)
        for trial, keys, i in zip(asked, settings, identities, strict=True):
            p = known_by.get(i) if i is not None else None
            if p is None:  # the engine refuses the combination
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            if len(keys) < len(p.keys):
                p.keys = keys
            for budget, excess in zip(
                evaluator.budgets, _violation(p, evaluator.budgets), strict=True
            ):
                trial.set_constraint(budget.name, excess)
            study.tell(trial, p.score)
    return points


def _suggest(trial: Any, knobs: Sequence[Knob]) -> dict[str, Any]:
    """Return the setting TRIAL samples (DEFAULT values left out)."""
    text = {
        k.key: trial.suggest_categorical(k.key, [str(v) for v in k.values])
        for k in knobs
    }
    return {k.key: _typed(k, text[k.key]) for k in knobs if text[k.key] != "None"}


def _size(knobs: Sequence[Knob]) -> int:
    """Return the number of points of the knobs' space."""
    n = 1
    for k in knobs:
        n *= len(k.values)
    return n


def _typed(knob: Knob, text: str) -> Any:
    """Return the knob's value whose str() is TEXT (optuna's choices are str)."""
    return next(v for v in knob.values if str(v) == text)


def _violation(point: Point, budgets: Sequence[Budget]) -> list[float]:
    """Return optuna's constraint values: > 0 where a budget is exceeded."""
    return [
        (point.worst[b.name] or 0.0) / b.limit_ns - 1.0 if b.limit_ns else 0.0
        for b in budgets
    ]


def tune(
    base: dict[str, Any],
    workloads: dict[str, float],
    budgets: Sequence[Budget],
    knobs: Sequence[Knob],
    *,
    seeds: int,
    trials: int | None = None,
    pareto: str | None = None,
    jobs: int | None = None,
) -> Tuning:
    """Search the knobs' space; return the points, front and recommendation."""
    evaluator = Evaluator(base, workloads, budgets, seeds, jobs or os.cpu_count() or 1)
    if not evaluator.valid({}):
        raise BadInput("the engine refuses the base run; check the workloads")
    default = evaluator.evaluate([{}])[0]
    settings = evaluator.distinct(space(knobs))
    if not settings:
        raise BadInput(
            "the search space is empty (the engine refused every setting); "
            "give other --knob values or workloads"
        )
    if len(settings) <= GRID_LIMIT and trials is None:
        points = [default, *evaluator.evaluate(settings)]
    else:
        # What a kernel takes without a patch is a small space: run it whole,
        # so "without a patch" is an answer, not a sample; TPE samples the rest.
        plain = [k for k in knobs if not k.developer]
        whole = plain and len(plain) < len(knobs) and _size(plain) <= GRID_LIMIT
        grid = evaluator.evaluate(evaluator.distinct(space(plain))) if whole else []
        budget = trials or GRID_LIMIT
        found = _search_optuna(evaluator, knobs, budget, 1, [default, *grid])
        points = [default, *grid, *found]
    run = len(points)
    points = _one_per_outcome(points, default)
    feasible = [p for p in points if p.feasible]
    best = recommend(feasible)
    settable = recommend([p for p in feasible if not patches(p.keys)])
    metric = pareto or (budgets[0].name if budgets else None)
    front = pareto_front(points, metric)
    return Tuning(points, front, best, default, settable, run)


# Settings within this share of the best throughput count as equal: the
# simplest of them is recommended (seeds differ by more than this).
TIE = 0.005


def _one_per_outcome(points: Sequence[Point], default: Point) -> list[Point]:
    """Keep one of the settings that ran alike in every seed, the simplest.

    batch=63 where zone_batchsize() gives 63, or a relinquish rule that
    never triggers, runs exactly as the setting without it: one row.
    """

    def rank(p: Point) -> tuple[bool, int, int]:
        return (p is not default, patches(p.keys), len(p.keys))

    simplest: dict[tuple, Point] = {}
    for p in points:
        outcome = (tuple(sorted(p.ops_per_s.items())), tuple(sorted(p.worst.items())))
        kept = simplest.setdefault(outcome, p)
        if rank(p) < rank(kept):
            simplest[outcome] = p
    return list(simplest.values())


def patches(keys: dict[str, Any]) -> int:
    """Count a setting's developer overrides (0: a kernel takes it as it is)."""
    return sum(k.developer and k.key in keys for k in KNOBS)


def recommend(feasible: Sequence[Point]) -> Point | None:
    """Return the simplest of the fastest feasible points.

    Among the points within TIE of the best throughput, the one with the
    fewest developer overrides (a patch), then the fewest changed knobs:
    a setting a kernel can take beats a patch worth half a percent.
    """
    if not feasible:
        return None
    top = max(p.score for p in feasible)
    near = [p for p in feasible if p.score >= top * (1 - TIE)]
    return min(near, key=lambda p: (patches(p.keys), len(p.keys), -p.score))


def how_to_apply(keys: dict[str, Any], kernel: str) -> list[str]:
    """Return how each changed knob is set on a real kernel of KERNEL's line."""
    by_key = {k.key: k for k in KNOBS}
    if not keys:
        return [f"keep the kernel's defaults ({kernel}): nothing to set"]
    return [by_key[key].apply.format(v=value) for key, value in keys.items()]
