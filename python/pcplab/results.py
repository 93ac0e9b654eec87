"""Reading result documents (docs/engine-protocol.md) as flat rows."""

from __future__ import annotations

from typing import Any

# The statistics of a latency or hold that mean nothing without a call.
UNCOUNTED = ("avg", "p50", "p99", "max", "total")


def flatten(result: dict[str, Any]) -> dict[str, Any]:
    """Return every scalar field of RESULT keyed by its dotted path (no lists).

    A statistic of a function that was never called (its `count` is 0) is
    None, not 0 ns: it did not occur (NaN in a DataFrame).
    """
    import pandas as pd  # json_normalize: the maintained nested-JSON flattener

    row = pd.json_normalize(_per_call_everywhere(result), sep=".").iloc[0]
    return {
        key: (None if _is_nan(value) else value)
        for key, value in row.to_dict().items()
        if not isinstance(value, (list, dict))
    }


def per_call(stats: dict[str, Any]) -> dict[str, Any]:
    """Return a function's STATS with its per-call statistics None if it had no call."""
    if stats.get("count") != 0:
        return stats
    return {**stats, **{key: None for key in UNCOUNTED if key in stats}}


def _per_call_everywhere(value: Any) -> Any:
    """Return VALUE with per_call() applied to every mapping in it."""
    if not isinstance(value, dict):
        return value
    return per_call({key: _per_call_everywhere(v) for key, v in value.items()})


def _is_nan(value: Any) -> bool:
    """Whether VALUE is a float NaN (pandas' mark of a null it read)."""
    return isinstance(value, float) and value != value
