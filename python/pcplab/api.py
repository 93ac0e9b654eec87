"""The Python API: `pcplab.run(spec)` returns a `Result`; `pcplab.sweep` a DataFrame.

>>> import pcplab
>>> r = pcplab.run({"engine": "sim", "machine": "skylake-ex",
...                 "workload": "page_fault1", "batch": 63, "duration_s": 0.5})
>>> r.to_dataframe()            # one row per latency / lock-hold metric
>>> r.to_dataframe(flat=True)   # one row, every scalar field
>>> pcplab.sweep({"batch": [31, 63]}, {"machine": "skylake-ex",
...               "workload": "page_fault1", "duration_s": 0.2}, seeds=3)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pcplab import runs
from pcplab.results import flatten

# The result sections of docs/engine-protocol.md whose entries are metrics.
METRIC_SECTIONS = ("latency_ns", "lock_hold_ns")
METRIC_COLUMNS = ("section", "name", "count", "total", "avg", "p50", "p99", "max")


class Result(Mapping[str, Any]):
    """One engine run's result JSON (docs/engine-protocol.md), read-only."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        spec = self.data.get("spec", {})
        return (
            f"Result(engine={self.data.get('engine')!r}, "
            f"workload={spec.get('workload')!r}, tasks={self.data.get('tasks')!r})"
        )

    def flat(self) -> dict[str, Any]:
        """Return every scalar field keyed by its dotted path (lists left out)."""
        return flatten(self.data)

    def metrics(self) -> list[dict[str, Any]]:
        """Return one row per latency and lock-hold metric (METRIC_COLUMNS).

        A function that was never called has count 0 and no avg, p50, p99
        or max (None; NaN in the DataFrame), not 0 ns.
        """
        rows = []
        for section in METRIC_SECTIONS:
            for name, stats in (self.data.get(section) or {}).items():
                if not isinstance(stats, dict):
                    continue
                row = {"section": section, "name": name}
                row.update({k: stats.get(k) for k in METRIC_COLUMNS[2:]})
                if not stats.get("count"):  # never called: no figure, not 0 ns
                    row.update({k: None for k in METRIC_COLUMNS[4:]})
                rows.append(row)
        return rows

    def to_dataframe(self, flat: bool = False) -> Any:
        """Return a pandas DataFrame: a row per metric, or one flat row."""
        import pandas as pd

        if flat:
            return pd.DataFrame([self.flat()])
        return pd.DataFrame(self.metrics(), columns=list(METRIC_COLUMNS))


def run(spec: dict[str, Any], **keys: Any) -> Result:
    """Run SPEC (plus KEYS) on its engine and return the Result.

    A sim `machine` may be given by profile name; the engine defaults to sim
    when a machine is named, else to native.
    """
    spec = {**spec, **keys}
    if "engine" not in spec:
        spec["engine"] = "sim" if "machine" in spec else "native"
    return Result(runs.run_one(spec))


def sweep(
    grid: Mapping[str, Sequence[Any]] | Sequence[dict[str, Any]],
    base: dict[str, Any] | None = None,
    *,
    seeds: int = 1,
    jobs: int = 1,
    scheduler: Any = None,
    **keys: Any,
) -> Any:
    """Run BASE (plus KEYS) at every point of GRID; return a DataFrame, a row per run.

    GRID maps spec keys to their values ({"batch": [31, 63]}: the product of
    all) or lists the points. SEEDS > 1 runs each point with seeds 1..N (sim).
    The columns are the point's keys, `seed`, and every scalar field of the
    result by its dotted path; a statistic of a call that never happened is
    NaN. JOBS runs go in parallel (or on the Dask cluster at SCHEDULER).
    """
    import pandas as pd

    from pcplab.repeats import expand

    points = runs.grid(list(grid.items())) if isinstance(grid, Mapping) else list(grid)
    spec = {**(base or {}), **keys}
    if "engine" not in spec:
        spec["engine"] = "sim" if "machine" in spec else "native"
    specs = expand([{**spec, **p} for p in points], seeds, seeds > 1)
    results = runs.run_specs(specs, jobs, scheduler=scheduler, desc="sweep")
    rows = []
    for i, result in enumerate(results):
        point = points[i // seeds]
        rows.append({**point, "seed": specs[i].get("seed"), **flatten(result)})
    return pd.DataFrame(rows)
