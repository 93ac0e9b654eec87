"""`pcplab tune`'s parts: knobs, runs by seed, and what may be recommended.

The knobs a kernel generation has (KNOBS: pcp_batch_scale_max, the high
fraction, the relinquish policy, and batch as a developer override) span
a space; a setting is run on the model for each workload and seed (the
Evaluator keeps every run, so none is done twice). A setting may be
recommended when its budgets held in every seed; a costlier one (a
rebuild, a patch) over a cheaper one only when it is faster beyond the
seeds' spread (choose). tune_search searches the space with these.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pcplab import engine, headers
from pcplab.budgets import Budget
from pcplab.errors import BadInput
from pcplab.repeats import regroup
from pcplab.runs import materialize, run_specs
from pcplab.stats import Sample, significant, welch_p

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


# What a setting asks of a kernel, cheapest first: a knob's effort is 1 for
# a sysctl, 2 for a Kconfig rebuild, 3 for a patch (a developer override).
EFFORTS = ("the kernel's defaults", "a sysctl", "a kernel rebuild", "a patch")


def effort(keys: dict[str, Any]) -> int:
    """Return what setting KEYS asks of a kernel (an index of EFFORTS)."""
    by_key = {k.key: k for k in KNOBS}
    return max(
        (3 if by_key[k].developer else 1 if by_key[k].sysctl else 2 for k in keys),
        default=0,
    )


@dataclass
class Point:
    """One evaluated setting: its score, budget figures and feasibility.

    The figures are over the seeds it ran (`seeds`): a setting that missed
    a budget in its first seed is not run again (it cannot hold in all).
    """

    keys: dict[str, Any]
    score: float = 0.0  # throughput relative to the kernel's defaults (mean)
    ops_per_s: dict[str, float] = field(default_factory=dict)  # per workload
    worst: dict[str, float | None] = field(default_factory=dict)  # per budget
    feasible: bool = False  # every budget held in every seed it ran
    seed_scores: list[float] = field(default_factory=list)  # score per seed
    first: dict[str, float | None] = field(default_factory=dict)  # seed 1's figures

    @property
    def seeds(self) -> int:
        """How many seeds the setting ran."""
        return len(self.seed_scores)


@dataclass
class Tuning:
    """What a search found: every point, the front and the recommendation."""

    points: list[Point]
    front: list[Point]
    recommendation: Point | None
    default: Point
    settable: Point | None = None  # the best the kernel takes without a patch
    settings_run: int = 0  # before settings that ran alike became one point
    runs: int = 0  # engine runs, every workload and seed
    # the fastest setting turned down for a gain inside the seeds' spread,
    # and Welch's p of that gain against the recommendation
    turned_down: Point | None = None
    turned_down_p: float | None = None
    ran: str | None = None  # what its runs ran (pcplab.headers), for the plot


class Evaluator:
    """Runs settings on the model, seed by seed, and scores them.

    Every run is kept by the setting as the engine resolves it and by seed,
    so that a setting is never run twice for one seed: the first pass runs
    seed 1 of many settings, the last one adds the other seeds to the few
    that can be recommended.
    """

    def __init__(
        self,
        base: dict[str, Any],
        workloads: dict[str, float],
        budgets: Sequence[Budget],
        seeds: int,
        jobs: int,
        ticker: Any = None,
        watched: Sequence[Budget] = (),
    ) -> None:
        self.base, self.workloads, self.budgets = base, workloads, budgets
        self.seeds, self.jobs, self.ticker = seeds, jobs, ticker
        # figures kept beside the budgets' (a --pareto metric), never a limit
        names = {b.name for b in budgets}
        self.metrics = [*budgets, *(w for w in watched if w.name not in names)]
        self.default_ops: dict[str, float] = {}
        self.default_worst: dict[str, float | None] = {}
        self.runs = 0
        self._done: dict[str | None, dict[int, list[dict[str, Any]]]] = {}
        self._resolved: dict[str, str | None] = {}

    def specs(self, keys: dict[str, Any]) -> list[dict[str, Any]]:
        """Return the run specs of one setting, a spec per workload."""
        return [{**self.base, "workload": w, **keys} for w in self.workloads]

    def resolved(self, keys: dict[str, Any]) -> str | None:
        """Return the setting as the engine resolves it, None if refused.

        Two settings that resolve alike (scale_max=5 is the kernel's
        default) are one setting: the search runs it once.
        """
        name = json.dumps(keys, sort_keys=True)
        if name not in self._resolved:
            try:
                specs = [engine.resolve(materialize(s)) for s in self.specs(keys)]
                found = json.dumps([s.get("spec", s) for s in specs], sort_keys=True)
            except BadInput:  # e.g. high below batch
                found = None
            self._resolved[name] = found
        return self._resolved[name]

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

    def evaluate(
        self, settings: Sequence[dict[str, Any]], seeds: int | None = None
    ) -> list[Point]:
        """Run each setting's first SEEDS seeds (all by default); return Points.

        Runs done before (the same setting, or one that resolves alike)
        are reused, not run again.
        """
        wanted = seeds or self.seeds
        todo = []
        for keys in settings:
            done = self._done.setdefault(self.resolved(keys), {})
            todo += [(keys, i) for i in range(wanted) if i not in done]
        todo = list({(self.resolved(k), i): (k, i) for k, i in todo}.values())
        specs = [self._seeded(s, i) for keys, i in todo for s in self.specs(keys)]
        # the host's sysctl is global: its runs go one at a time
        jobs = 1 if self.base.get("engine") == "host" else self.jobs
        results = run_specs(specs, jobs, desc="tune", ticker=self.ticker)
        self.runs += len(results)
        if results and not self.default_ops:  # the first runs: budgets told?
            self._check_measurable(results[0])
        for (keys, i), group in zip(
            todo, regroup(results, len(self.workloads)), strict=True
        ):
            self._done[self.resolved(keys)][i] = group
        return [self._point(keys) for keys in settings]

    def ran(self) -> str:
        """Return what every run so far ran: engine, machine, kernel, ... (headers)."""
        done = [r for d in self._done.values() for g in d.values() for r in g]
        return headers.line(done)

    def _seeded(self, spec: dict[str, Any], i: int) -> dict[str, Any]:
        """Return run I of SPEC: seed I + 1 on the sim, a repeat elsewhere."""
        return {**spec, "seed": i + 1} if self.base.get("engine") == "sim" else spec

    def _check_measurable(self, result: dict[str, Any]) -> None:
        """Refuse a budget whose statistic this engine cannot measure."""
        for budget in self.metrics:
            reason = budget.unmeasured(result)
            if reason:
                raise BadInput(
                    f"the {result.get('engine')} engine cannot measure "
                    f"{budget.name} here ({reason}); give a budget it measures, "
                    "e.g. fault.p99"
                )

    def _point(self, keys: dict[str, Any]) -> Point:
        """Score one setting from every seed it ran."""
        done = self._done[self.resolved(keys)]
        groups = [done[i] for i in sorted(done)]  # seeds; workloads inner
        point = Point(keys=dict(keys))
        for j, workload in enumerate(self.workloads):
            ops = [g[j]["throughput"]["ops_per_s"] for g in groups]
            point.ops_per_s[workload] = sum(ops) / len(ops)
        if not keys:
            self.default_ops = dict(point.ops_per_s)
        per_seed = [self._figures(g) for g in groups]
        for budget in self.metrics:
            measured = [f[budget.name] for f in per_seed if f[budget.name] is not None]
            point.worst[budget.name] = max(measured) if measured else None
        if not keys:
            self.default_worst = dict(point.worst)
        point.seed_scores = [f["score"] for f in per_seed]
        point.score = sum(point.seed_scores) / len(point.seed_scores)
        point.first = per_seed[0]
        point.feasible = all(self._holds(point, b) for b in self.budgets)
        return point

    def _figures(self, group: list[dict[str, Any]]) -> dict[str, Any]:
        """Return one seed's score and budget figures (worst over workloads)."""
        total = sum(self.workloads.values())
        figures: dict[str, Any] = {
            "score": sum(
                w * r["throughput"]["ops_per_s"] / self.default_ops[name]
                for (name, w), r in zip(self.workloads.items(), group, strict=True)
                if self.default_ops.get(name)
            )
            / total
        }
        for budget in self.metrics:
            values = [budget.value(r) for r in group]
            measured = [v for v in values if v is not None]
            figures[budget.name] = max(measured) if measured else None
        return figures

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
    """Return the points no other beats on score and METRIC at once, in seed 1.

    Seed 1 is the run every setting has (most ran no other): their figures
    compare like with like, where a mean over three seeds would not.
    """
    if metric is None:
        return sorted(points, key=lambda p: -p.first["score"])[:1]
    scored = [(p, p.first["score"], p.first.get(metric)) for p in points]
    scored = [s for s in scored if s[2] is not None]

    def dominated(score: float, value: float) -> bool:
        return any(
            s >= score and v <= value and (s > score or v < value) for _, s, v in scored
        )

    return [p for p, s, v in sorted(scored, key=lambda t: t[2]) if not dominated(s, v)]


# The last pass gives every seed to at most this many rounds of candidates.
FINAL_ROUNDS = 4


def finish(evaluator: Evaluator, points: list[Point]) -> list[Point]:
    """Run every seed of the fastest setting of each effort that held in seed 1.

    Only these can be recommended (or be the "without a patch" answer).
    Seed 1 ranks them (every setting ran it: a common random number); one
    that misses in a later seed gives way to the next of its effort. One
    no faster in seed 1 than a cheaper setting that held is not run again:
    it cannot beat that setting beyond the seeds' spread (the search's
    rounds skip such settings by the same rule).
    """
    by_keys = {json.dumps(p.keys, sort_keys=True): p for p in points}
    for _ in range(FINAL_ROUNDS):
        wanted = []
        for level in range(len(EFFORTS)):
            held = [p for p in by_keys.values() if p.feasible]
            best = min(
                (p for p in held if effort(p.keys) == level),
                key=lambda p: (-p.first["score"], patches(p.keys), len(p.keys)),
                default=None,
            )
            if best is None or best.seeds >= evaluator.seeds:
                continue
            cheaper = [p.first["score"] for p in held if effort(p.keys) < level]
            if best.first["score"] > max(cheaper, default=0.0):
                wanted.append(best)
        if not wanted:
            break
        for p in evaluator.evaluate([p.keys for p in wanted]):
            by_keys[json.dumps(p.keys, sort_keys=True)] = p
    return list(by_keys.values())


def choose(
    points: Sequence[Point], seeds: int, max_effort: int = len(EFFORTS) - 1
) -> tuple[Point | None, Point | None, float | None]:
    """Return the setting to recommend, and the faster one turned down (p).

    Among the settings that held in every seed, effort by effort (the
    defaults, a sysctl, a rebuild, a patch): a costlier setting replaces
    a cheaper one only if it is faster beyond the seeds' spread (Welch's
    t-test on the seeds' throughputs, as `pcplab compare` stars a change);
    where nothing cheaper meets the budgets, the cheapest that does.
    """
    held = [p for p in points if p.feasible and p.seeds >= seeds]
    chosen: Point | None = None
    turned_down: Point | None = None
    p_value: float | None = None
    for level in range(max_effort + 1):
        best = recommend([p for p in held if effort(p.keys) <= level])
        if best is None or best is chosen:
            continue
        if chosen is None:
            chosen = best
            continue
        base, new = Sample.of(chosen.seed_scores), Sample.of(best.seed_scores)
        if best.score > chosen.score and significant(base, new):
            chosen, turned_down, p_value = best, None, None
        elif best.score > chosen.score:
            turned_down, p_value = best, welch_p(base, new)
    return chosen, turned_down, p_value


# Settings within this share of the best throughput count as equal: the
# simplest of them is recommended (seeds differ by more than this).
TIE = 0.005


def one_per_outcome(points: Sequence[Point], default: Point) -> list[Point]:
    """Keep one of the settings that ran alike in every seed, the simplest.

    batch=63 where zone_batchsize() gives 63, or a relinquish rule that
    never triggers, runs exactly as the setting without it: one row.
    """

    def rank(p: Point) -> tuple[bool, int, int]:
        return (p is not default, patches(p.keys), len(p.keys))

    simplest: dict[tuple, Point] = {}
    for p in points:
        outcome = (
            tuple(p.seed_scores),
            tuple(sorted(p.ops_per_s.items())),
            tuple(sorted(p.worst.items())),
        )
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
