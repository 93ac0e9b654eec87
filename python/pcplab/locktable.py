"""Lock waits per caller in the layout of `perf lock contention`.

perf prints `contended  total wait  max wait  avg wait  type  caller`,
one row per caller, times in the unit that keeps them short. The model's
exact waits (result `locks.<lock>.callers`) and the host's perf lock
records (result `lock_contention.callers`) both print through here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

HEADERS = ("contended", "total wait", "max wait", "avg wait", "type", "lock", "caller")
# The locks the PCP threads argue about, by their result key and kernel name.
MODEL_LOCKS = {"zone_lock": "zone->lock", "lru_lock": "lru_lock"}


def format_time(ns: float | None) -> str:
    """Return a duration as perf does: ns, us, ms or s, two decimals."""
    if ns is None:
        return "n/a"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.2f} {unit}"
    return f"{ns:.2f} ns"


def model_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return zone->lock's and lru_lock's callers of a model result."""
    rows = []
    for key, name in MODEL_LOCKS.items():
        lock = (result.get("locks") or {}).get(key) or {}
        for caller in lock.get("callers") or []:
            rows.append({**caller, "type": "spinlock", "lock": name})
    return sorted(rows, key=lambda r: -r["total_wait_ns"])


def host_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the callers perf lock contention recorded on the host."""
    callers = (result.get("lock_contention") or {}).get("callers") or []
    return [
        {**c, "lock": MODEL_LOCKS.get(c.get("lock") or "", c.get("lock") or "")}
        for c in callers
    ]


def format_rows(rows: Iterable[Mapping[str, Any]], limit: int = 12) -> list[str]:
    """Return the perf lock contention table of ROWS, right-aligned like perf."""
    cells = [
        [
            str(r["contended"]),
            format_time(r["total_wait_ns"]),
            format_time(r["max_wait_ns"]),
            format_time(r["avg_wait_ns"]),
            r.get("type") or "",
            r.get("lock") or "",
            r["caller"],
        ]
        for r in list(rows)[:limit]
    ]
    if not cells:
        return ["  no waits"]
    widths = [max(len(row[i]) for row in [list(HEADERS), *cells]) for i in range(7)]
    lines = []
    for row in [list(HEADERS), *cells]:
        right = "  ".join(c.rjust(w) for c, w in zip(row[:6], widths, strict=False))
        lines.append(f"  {right}   {row[6]}")
    return lines
