"""`pcplab tune`'s search: a coarse first pass, early stopping, then every seed.

A small space (GRID_LIMIT settings) is run whole, seed 1 of each. A larger
one is run knob by knob first: seed 1 of every one-knob change from the
kernel's defaults gives each value's effect on throughput and on every
budget's figure. A Predictor multiplies those effects (and what the runs
of combinations showed of each pair of knobs) into seed 1's figures of a
setting not run yet; each round runs the few settings whose odds of
holding the budgets times their gain over the best that held at their
effort (a sysctl, a rebuild, a patch) is highest. The search stops when
no setting is predicted to do better, when PATIENCE rounds in a row found
nothing better, or after ROUNDS rounds. Only then do the settings that
may be recommended run their other seeds (tune.finish). `--trials N`
samples with optuna's TPE instead.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pcplab import progress
from pcplab.budgets import Budget, metric_path
from pcplab.errors import BadInput
from pcplab.tune import (
    DEFAULT,
    EFFORTS,
    TIE,
    Evaluator,
    Knob,
    Point,
    Tuning,
    choose,
    effort,
    finish,
    one_per_outcome,
    pareto_front,
    patches,
    space,
)

# A space of at most this many settings is run whole (seed 1 of each).
GRID_LIMIT = 48
# Rounds after the knob-by-knob pass, and settings run per round (at least
# --jobs): the search usually stops earlier, when nothing predicts a gain.
ROUNDS = 4
WIDTH = 2
# ... and it stops after this many rounds in a row found nothing better.
PATIENCE = 2
# A setting predicted within this factor of a budget may still hold: run it;
# the predictions' spread (log-normal) that ranks such settings by their odds.
SLACK = 1.5
SPREAD = 0.25
# TPE asks again for settings it has seen; give up after this many asks a trial.
ASKS_PER_TRIAL = 10


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
    ticker = progress.Ticker("tune", seeds * len(workloads))
    jobs = jobs or os.cpu_count() or 1
    watched = [Budget(pareto, metric_path(pareto), math.inf)] if pareto else []
    evaluator = Evaluator(base, workloads, budgets, seeds, jobs, ticker, watched)
    try:
        if not evaluator.valid({}):
            raise BadInput("the engine refuses the base run; check the workloads")
        if trials is not None:
            _plan(evaluator, trials + GRID_LIMIT)
            default = evaluator.evaluate([{}])[0]
            found = _sampled(evaluator, knobs, trials, default)
        elif _size(knobs) <= GRID_LIMIT:  # small: run whole
            settings = _nonempty(evaluator.distinct(space(knobs)))
            _plan(evaluator, len(settings))
            default = evaluator.evaluate([{}])[0]
            found = evaluator.evaluate(settings, seeds=1)
        else:
            singles = _nonempty(evaluator.distinct(_singles(knobs)))
            _plan(evaluator, len(singles) + ROUNDS * _width(evaluator))
            default = evaluator.evaluate([{}])[0]
            found = _staged(evaluator, knobs, singles, default)
        _plan(evaluator, 0)
        points = finish(evaluator, [default, *found])
    finally:
        ticker.close()
    default = next(p for p in points if not p.keys)
    run = len(points)
    points = one_per_outcome(points, default)
    best, turned_down, p_value = choose(points, seeds)
    settable, _, _ = choose([p for p in points if not patches(p.keys)], seeds)
    metric = pareto or (budgets[0].name if budgets else None)
    return Tuning(
        points,
        pareto_front(points, metric),
        best,
        default,
        settable,
        run,
        evaluator.runs,
        turned_down,
        p_value,
        evaluator.ran(),
    )


def _plan(evaluator: Evaluator, settings: int) -> None:
    """Tell the ticker: the runs done, SETTINGS more, and the last pass."""
    if evaluator.ticker is not None:
        per = len(evaluator.workloads)
        finals = (len(EFFORTS) - 1) * (evaluator.seeds - 1)
        evaluator.ticker.plan(evaluator.runs + per * (settings + finals))


def _width(evaluator: Evaluator) -> int:
    """Return the settings a round of the staged search runs at once."""
    return max(WIDTH, evaluator.jobs)


def _nonempty(settings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return SETTINGS, refusing an empty space before anything runs."""
    if not settings:
        raise BadInput(
            "the search space is empty (the engine refused every setting); "
            "give other --knob values or workloads"
        )
    return settings


def _singles(knobs: Sequence[Knob]) -> list[dict[str, Any]]:
    """Return every one-knob change from the kernel's defaults."""
    return [{k.key: v} for k in knobs for v in k.values if v is not DEFAULT]


Figures = dict[str, float | None]


def _staged(
    evaluator: Evaluator,
    knobs: Sequence[Knob],
    singles: Sequence[dict[str, Any]],
    default: Point,
) -> list[Point]:
    """Run seed 1 knob by knob, then the settings predicted to do better.

    A one-knob change that ran exactly as the defaults did (batch=63 where
    zone_batchsize() gives 63) is the default value of its knob: the
    settings searched afterwards leave it out.
    """
    first = evaluator.evaluate(singles, seeds=1)
    points = [p for p in first if p.first != default.first]
    model = Predictor(default, points)
    kept = set(model.effects)
    settings = space(
        [
            replace(k, values=(DEFAULT, *(v for v in k.values if (k.key, v) in kept)))
            for k in knobs
        ]
    )
    refused: set[str] = set()
    idle = 0  # rounds in a row that found nothing better
    for left in range(ROUNDS, 0, -1):
        if idle == PATIENCE:
            break
        _plan(evaluator, left * _width(evaluator))
        chosen = []
        for keys in _ranked(evaluator, settings, [default, *points], model):
            if len(chosen) == _width(evaluator):
                break
            if json.dumps(keys, sort_keys=True) in refused:
                continue
            if evaluator.valid(keys):
                chosen.append(keys)
            else:
                refused.add(json.dumps(keys, sort_keys=True))
        if not chosen:  # nothing is predicted to do better: stop early
            break
        before = _floors([default, *points])
        for point in evaluator.evaluate(chosen, seeds=1):
            model.learn(point)
            points.append(point)
        after = _floors([default, *points])
        better = any(a > b * (1 + TIE) for a, b in zip(after, before, strict=True))
        idle = 0 if better else idle + 1
    return points


def _floors(points: Sequence[Point]) -> list[float]:
    """Return, per effort, the best seed-1 score that held at it or below."""
    held = [p for p in points if p.feasible]
    return [
        max((p.first["score"] for p in held if effort(p.keys) <= level), default=0.0)
        for level in range(len(EFFORTS))
    ]


class Predictor:
    """Seed 1's figures of a setting not run yet, from the runs so far.

    Each knob value's effect (its one-knob run over the defaults', both
    seed 1: common random numbers) is multiplied in; so is, for each pair
    of knobs a setting changes together, the mean excess over that product
    that the runs of such settings showed. Knobs that act on one quantity
    (batch and scale_max both size a refill) are learnt not to add up.
    """

    def __init__(self, default: Point, singles: Sequence[Point]) -> None:
        self.base: Figures = dict(default.first)
        self.effects = {
            next(iter(p.keys.items())): self._ratios(p.first, self.base)
            for p in singles
        }
        self.excess: dict[tuple[str, str], dict[str, list[float]]] = {}

    @staticmethod
    def _ratios(figures: Figures, base: Figures) -> Figures:
        """Return FIGURES over BASE, figure by figure (None where either has none)."""
        return {
            k: v / base[k] if v is not None and base.get(k) else None
            for k, v in figures.items()
        }

    def _product(self, keys: dict[str, Any]) -> Figures:
        """Return the defaults' figures times each changed knob's own effect."""
        figures = dict(self.base)
        for knob, value in keys.items():
            effect = self.effects.get((knob, value), {})
            for name, now in figures.items():
                factor = effect.get(name, 1.0)
                figures[name] = None if now is None or factor is None else now * factor
        return figures

    def learn(self, point: Point) -> None:
        """Take POINT's seed 1 as the evidence of its pairs of knobs."""
        pairs = list(itertools.combinations(sorted(point.keys), 2))
        if not pairs:
            return
        ratios = self._ratios(point.first, self._product(point.keys))
        for pair in pairs:
            seen = self.excess.setdefault(pair, {})
            for name, ratio in ratios.items():
                if ratio:  # a share of the log excess per pair
                    seen.setdefault(name, []).append(math.log(ratio) / len(pairs))

    def predict(self, keys: dict[str, Any]) -> Figures:
        """Return the predicted seed-1 figures of setting KEYS."""
        figures = self._product(keys)
        for pair in itertools.combinations(sorted(keys), 2):
            for name, logs in self.excess.get(pair, {}).items():
                if figures.get(name) is not None:
                    figures[name] *= math.exp(sum(logs) / len(logs))
        return figures


def _ranked(
    evaluator: Evaluator,
    settings: Sequence[dict[str, Any]],
    points: Sequence[Point],
    model: Predictor,
) -> list[dict[str, Any]]:
    """Return the settings not run yet that are predicted to do better.

    Better: every budget within SLACK of its limit, and a score above the
    best that held in seed 1 at the same or a smaller effort, ranked by
    the expected gain (the odds of holding the budgets times the gain).
    """
    run = {json.dumps(p.keys, sort_keys=True) for p in points}
    floors = _floors(points)
    ranked = []
    for keys in settings:
        if not keys or json.dumps(keys, sort_keys=True) in run:
            continue
        figures = model.predict(keys)
        odds = _odds(figures, evaluator.budgets)
        score, floor = figures["score"], floors[effort(keys)]
        if odds > 0 and score is not None and score > floor * (1 + TIE):
            ranked.append((odds * (score - floor), effort(keys), keys))
    ranked.sort(key=lambda r: -r[0])
    return [keys for _, _, keys in ranked]


def _odds(figures: Figures, budgets: Sequence[Budget]) -> float:
    """Return the odds that predicted FIGURES hold every budget (0 beyond SLACK).

    The prediction's error is taken as log-normal with a spread of SPREAD
    (a search heuristic: it only orders the settings to run).
    """
    odds = 1.0
    for b in budgets:
        value = figures.get(b.name)
        if value is None or value <= 0:
            continue
        if value > b.limit_ns * SLACK:
            return 0.0
        z = math.log(b.limit_ns / value) / SPREAD
        odds *= 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    return odds


def _sampled(
    evaluator: Evaluator, knobs: Sequence[Knob], trials: int, default: Point
) -> list[Point]:
    """Run seed 1 of what a kernel takes without a patch whole, then TPE's TRIALS.

    What a kernel takes without a patch is a small space: run whole, so
    "without a patch" is an answer, not a sample; TPE samples the rest.
    """
    plain = [k for k in knobs if not k.developer]
    whole = plain and len(plain) < len(knobs) and _size(plain) <= GRID_LIMIT
    grid = (
        evaluator.evaluate(evaluator.distinct(space(plain)), seeds=1) if whole else []
    )
    return [*grid, *_search_optuna(evaluator, knobs, trials, 1, [default, *grid])]


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
        for i, p in zip(
            fresh, evaluator.evaluate(list(fresh.values()), seeds=1), strict=True
        ):
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
