"""Several runs of one configuration: seeds for the sim, repeats elsewhere.

The sim is deterministic (one spec and seed, one result, byte for byte), so
its spread comes from different seeds (`--seeds N`: seeds 1..N); native and
host runs vary by themselves and are repeated as they are (`--repeat N`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pcplab.errors import BadInput

# The upper bound of --seeds and --repeat: enough for any t-test.
MAX_RUNS = 100


def runs_per_point(
    engines: Sequence[str], seeds: int | None, repeat: int | None
) -> int:
    """Check --seeds/--repeat against the engines; return runs per point."""
    if seeds is not None and repeat is not None:
        raise BadInput("--seeds and --repeat are exclusive; give one of them")
    if seeds is not None and any(e != "sim" for e in engines):
        raise BadInput(
            "--seeds varies the sim engine's random seed; native and host runs "
            "vary by themselves: give --repeat N"
        )
    if repeat is not None and "sim" in engines:
        raise BadInput(
            "--repeat would rerun the deterministic sim engine to the same "
            "figures; give --seeds N for its spread"
        )
    return seeds or repeat or 1


def expand(
    specs: Sequence[dict[str, Any]], runs: int, seeds: bool
) -> list[dict[str, Any]]:
    """Return RUNS copies of every spec in turn (seeds 1..RUNS if SEEDS)."""
    if seeds and any("seed" in spec for spec in specs):
        raise BadInput(
            "--seeds sets the seed of every run to 1..N; drop the seed "
            "(seed=, --seed) or --seeds"
        )
    return [
        {**spec, "seed": i + 1} if seeds else dict(spec)
        for spec in specs
        for i in range(runs)
    ]


def regroup(results: Sequence[Any], runs: int) -> list[list[Any]]:
    """Cut the results of expand()ed specs back into one list per spec."""
    return [list(results[i : i + runs]) for i in range(0, len(results), runs)]


def run_repeated(
    spec: dict[str, Any],
    runs: int,
    seeds: bool,
    lock_stats: str | None = None,
    profile_with: str = "off",
) -> list[dict[str, Any]]:
    """Run SPEC RUNS times (seeds 1..RUNS if SEEDS), one after another."""
    from pcplab.runs import run_one

    results = []
    for one in expand([spec], runs, seeds):
        if one.get("engine") == "host":
            from pcplab.host.execute import execute_run

            results.append(
                execute_run(one, lock_stats=lock_stats, profile_with=profile_with)
            )
        else:
            results.append(run_one(one))
    return results


def _is_number(value: Any) -> bool:
    """Whether VALUE is an int or float figure (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _mean_hist(hists: list[Any]) -> Any:
    """Average log2 histograms [[lo, hi, count], ...] bucket by bucket.

    An engine's histogram stops at its highest non-empty bucket, so seeds'
    histograms differ in length: a bucket one seed lacks counts 0 there.
    The mean's buckets then sum to the mean of the seeds' counts, the
    figure a funclatency footer prints beside them.
    """
    if not all(isinstance(h, list) for h in hists):
        return hists[0]
    if not all(isinstance(b, list) and len(b) == 3 for h in hists for b in h):
        return hists[0]
    sums: dict[tuple[Any, Any], float] = {}
    for hist in hists:
        for lo, hi, count in hist:
            sums[(lo, hi)] = sums.get((lo, hi), 0) + count
    return [[lo, hi, total / len(hists)] for (lo, hi), total in sorted(sums.items())]


def combine_rows(
    runs: list[list[dict[str, Any]]], what: str = "an experiment"
) -> list[dict[str, Any]]:
    """Merge the rows of one experiment (WHAT) run with several seeds, row by row.

    A number the seeds disagree on becomes its mean, and `<field>_std` its
    standard deviation (one they agree on stays as it is); a log2 histogram
    its bucket-wise mean; any other value is the first seed's. `seeds` says
    how many were merged.
    """
    import statistics

    if len({len(rows) for rows in runs}) > 1:
        counts = ", ".join(str(len(rows)) for rows in runs)
        raise ValueError(
            f"the seeds' runs of {what} gave different rows ({counts} rows); "
            "cannot merge them (a host row another pcplab held the host for?)"
        )
    out = []
    for rows in zip(*runs, strict=True):
        merged: dict[str, Any] = {}
        for key, first in rows[0].items():
            values = [r.get(key) for r in rows]
            if all(_is_number(v) for v in values) and len(set(values)) > 1:
                merged[key] = statistics.fmean(values)
                if f"{key}_std" not in rows[0]:
                    merged[f"{key}_std"] = statistics.stdev(values)
            elif isinstance(first, list):
                merged[key] = _mean_hist(values)
            else:
                merged[key] = first
        merged["seeds"] = len(rows)
        out.append(merged)
    return out
