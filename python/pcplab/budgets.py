"""Latency budgets: `rmqueue_bulk.p99=100us`, `zone_lock_hold.max=1ms`.

A budget names a latency or hold-time statistic of the result schema
(docs/engine-protocol.md) and its limit: `<function>.<stat>` for
latency_ns (rmqueue_bulk, free_pcppages_bulk, fault) and
`<lock>_hold.<stat>` for lock_hold_ns (zone_lock, lru_lock, and the
per-caller holds rmqueue_bulk_hold, free_pcppages_bulk_hold).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pcplab.errors import BadInput

FUNCTIONS = ("rmqueue_bulk", "free_pcppages_bulk", "fault")
LOCKS = ("zone_lock", "lru_lock", "rmqueue_bulk", "free_pcppages_bulk")
STATS = ("avg", "p50", "p99", "max")
# Percentiles are read off the engines' log-linear histograms: 2**HIST_SUB_BITS
# buckets per power of two (src/include/pcplab/histogram.h), the value
# reported being the midpoint of its bucket.
BUCKETED = ("p50", "p99")
HIST_SUB_BITS = 4
UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_TEXT = re.compile(
    r"(?P<metric>[a-z_0-9.]+)=(?P<value>[0-9]+(?:\.[0-9]+)?)(?P<unit>[a-zµ]*)"
)


def metric_names() -> list[str]:
    """Return every metric a budget may name."""
    names = [f"{f}.{s}" for f in FUNCTIONS for s in STATS]
    return names + [f"{lock}_hold.{s}" for lock in LOCKS for s in STATS]


def metric_path(name: str) -> str:
    """Return the result path of metric NAME, or refuse it in one line."""
    base, _, stat = name.rpartition(".")
    if stat in STATS and base in FUNCTIONS:
        return f"latency_ns.{base}.{stat}"
    lock = base.removesuffix("_hold")
    if stat in STATS and base.endswith("_hold") and lock in LOCKS:
        return f"lock_hold_ns.{lock}.{stat}"
    raise BadInput(
        f"unknown metric '{name}'; known: <function>.<stat> for "
        f"{', '.join(FUNCTIONS)} and <lock>_hold.<stat> for {', '.join(LOCKS)}; "
        f"stat: {', '.join(STATS)}"
    )


@dataclass(frozen=True)
class Budget:
    """A limit on one latency or hold statistic, in ns."""

    name: str  # as given: rmqueue_bulk.p99
    path: str  # in the result: latency_ns.rmqueue_bulk.p99
    limit_ns: float

    def value(self, result: dict[str, Any]) -> float | None:
        """Return the statistic in RESULT; None if the run did not measure it."""
        section, name, stat = self.path.split(".")
        entry = (result.get(section) or {}).get(name) or {}
        if not entry.get("count"):
            return None
        return entry.get(stat)

    def unmeasured(self, result: dict[str, Any]) -> str | None:
        """Say why RESULT has no such statistic at all (not just no calls)."""
        section, name, _ = self.path.split(".")
        if (result.get(section) or {}).get(name) is not None:
            return None
        reasons = result.get("unavailable") or {}
        return reasons.get(f"{section}.{name}", "the result has no such figure")

    def __str__(self) -> str:
        return f"{self.name} <= {format_ns(self.limit_ns)}"


def bucket_width(ns: float) -> float:
    """Return the width of the histogram bucket that holds a value of NS."""
    if ns < 2**HIST_SUB_BITS:
        return 1.0
    return float(2 ** (math.floor(math.log2(ns)) - HIST_SUB_BITS))


def resolved(name: str, ns: float) -> float:
    """Return a figure of metric NAME rounded to what its statistic resolves.

    A percentile (BUCKETED: the midpoint of a histogram bucket) is rounded
    to the largest power of ten no wider than its bucket, so that no digit
    is kept that the histogram cannot resolve; any other figure is exact.
    """
    if name.rpartition(".")[2] not in BUCKETED:
        return ns
    step = 10 ** math.floor(math.log10(bucket_width(ns)))
    return round(ns / step) * step


def format_ns(ns: float) -> str:
    """Return a duration to four significant digits, in the largest unit >= 1."""
    for unit in ("s", "ms", "us"):
        if ns >= UNITS[unit]:
            return f"{ns / UNITS[unit]:.4g} {unit}"
    return f"{ns:.4g} ns"


def format_metric(name: str, ns: float) -> str:
    """Return a figure of metric NAME, to the digits its statistic resolves."""
    return format_ns(resolved(name, ns))


def parse_budget(text: str) -> Budget:
    """Parse METRIC=VALUE+UNIT (ns, us, ms or s: every metric is a time)."""
    match = _TEXT.fullmatch(text.strip())
    if not match or match.group("unit") not in ("", *UNITS):
        raise BadInput(
            f"--budget {text!r} is not METRIC=VALUE+UNIT; give e.g. "
            "rmqueue_bulk.p99=100us or zone_lock_hold.max=1ms (ns, us, ms, s)"
        )
    name = match.group("metric")
    path = metric_path(name)
    if not match.group("unit"):
        raise BadInput(
            f"--budget {text!r} has no unit; {name} is a time: give ns, us, ms "
            f"or s, e.g. {name}={match.group('value')}us"
        )
    limit = float(match.group("value")) * UNITS[match.group("unit")]
    if limit <= 0:
        raise BadInput(f"--budget {text!r} allows no time at all; give a limit > 0")
    return Budget(name, path, limit)
