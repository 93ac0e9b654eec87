"""Reading result documents (docs/engine-protocol.md) as flat rows."""

from __future__ import annotations

from typing import Any


def flatten(result: dict[str, Any]) -> dict[str, Any]:
    """Return every scalar field of RESULT keyed by its dotted path (no lists)."""
    import pandas as pd  # json_normalize: the maintained nested-JSON flattener

    row = pd.json_normalize(result, sep=".").iloc[0].to_dict()
    return {
        key: (None if _is_nan(value) else value)
        for key, value in row.items()
        if not isinstance(value, (list, dict))
    }


def _is_nan(value: Any) -> bool:
    """Whether VALUE is a float NaN (pandas' mark of a null it read)."""
    return isinstance(value, float) and value != value
