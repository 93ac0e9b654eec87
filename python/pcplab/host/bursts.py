"""Join trace events into bursts (one per rmqueue_bulk or drain) and summarize them.

A burst is a maximal run of events of one kind on one CPU whose gaps are
all below `gap_ns`. Inside one call the events are separated by the work
for one page under the lock, IRQs off (about 0.1-1 us, tracing included);
between two calls on one CPU lie at least one page fault per page taken
(refill) or a free per page given back (drain), so the gaps are bimodal;
the default threshold of 2 us sits in the valley measured on the
development machine (docs/host-engine.md shows the histogram). Every
analysis reports how many gaps fell near the threshold, so a threshold that
does not suit a machine shows itself. The first and last burst of each CPU
may be cut by the start or end of tracing and are dropped.

Pure: no tracing here (`trace` records the events), tested on recorded samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_GAP_NS = 2000


@dataclass
class Burst:
    """One run of same-kind events on one CPU: one rmqueue_bulk or drain call."""

    cpu: int
    start_ns: int
    end_ns: int
    pages: int
    events: int = 1

    @property
    def span_ns(self) -> int:
        """First-to-last event: approximately the time under zone->lock."""
        return self.end_ns - self.start_ns


@dataclass
class BurstSet:
    """The bursts of one kind, with the gap diagnostics of their joining."""

    bursts: list[Burst] = field(default_factory=list)
    events: int = 0
    dropped_edge: int = 0  # first/last bursts per CPU, maybe cut by tracing
    gaps_inside: list[int] = field(default_factory=list)
    near_threshold: int = 0  # gaps in [gap/2, 2 gap): ambiguous


def join_bursts(
    events: Iterable[tuple[int, int, int]], gap_ns: int = DEFAULT_GAP_NS
) -> BurstSet:
    """Join (cpu, ts_ns, pages) events, time-ordered per CPU, into bursts.

    Events of one CPU must come in time order (as each CPU's ring buffer
    holds them); CPUs may interleave. The first and last burst of each CPU
    are dropped, since tracing may have started or stopped inside them.
    """
    open_: dict[int, Burst] = {}
    per_cpu: dict[int, list[Burst]] = {}
    result = BurstSet()
    for cpu, ts, pages in events:
        result.events += 1
        cur = open_.get(cpu)
        if cur is not None:
            gap = ts - cur.end_ns
            if gap < 0:
                raise ValueError(f"events of CPU {cpu} are not in time order")
            if gap_ns // 2 <= gap < 2 * gap_ns:
                result.near_threshold += 1
            if gap < gap_ns:
                cur.end_ns = ts
                cur.pages += pages
                cur.events += 1
                result.gaps_inside.append(gap)
                continue
        burst = Burst(cpu, ts, ts, pages)
        open_[cpu] = burst
        per_cpu.setdefault(cpu, []).append(burst)
    for bursts in per_cpu.values():
        kept = bursts[1:-1]
        result.dropped_edge += len(bursts) - len(kept)
        result.bursts += kept
    return result


def log2_hist(values: Sequence[int]) -> list[list[int]]:
    """Return funclatency's log2 rows [lo, hi, count], slot 1 = 0..1, to the top."""
    import numpy as np  # only where a trace is summarised

    if not len(values):
        return []
    ns = np.asarray(values, dtype=np.int64)
    # slot = bit length (frexp's exponent), 0 and 1 both in slot 1
    slots = np.maximum(np.frexp(ns.astype(np.float64))[1], 1)
    counts = np.bincount(slots)
    return [
        [0 if i == 1 else 1 << (i - 1), (1 << i) - 1, int(counts[i])]
        for i in range(1, len(counts))
    ]


def percentile(sorted_values: Sequence[int], p: float) -> int:
    """Nearest-rank percentile p (0..100) of sorted values (numpy's inverted CDF)."""
    import numpy as np

    return int(np.percentile(sorted_values, p, method="inverted_cdf"))


def stats(values: Sequence[int]) -> dict[str, Any] | None:
    """Return {count, total, avg, p50, p99, max, log2_hist} of exact values."""
    if not values:
        return None
    ordered = sorted(values)
    total = sum(ordered)
    return {
        "count": len(ordered),
        "total": total,
        "avg": total // len(ordered),
        "p50": percentile(ordered, 50),
        "p99": percentile(ordered, 99),
        "max": ordered[-1],
        "log2_hist": log2_hist(ordered),
    }


def summarize(burst_set: BurstSet, gap_ns: int) -> dict[str, Any]:
    """Summarize one kind's bursts: calls, pages per call, span under the lock."""
    bursts = burst_set.bursts
    gaps = sorted(burst_set.gaps_inside)
    return {
        "calls": len(bursts),
        "events": burst_set.events,
        "pages": sum(b.pages for b in bursts),
        "pages_per_call": stats([b.pages for b in bursts]),
        "span_ns": stats([b.span_ns for b in bursts]),
        "dropped_edge_bursts": burst_set.dropped_edge,
        "gap_ns": gap_ns,
        "gap_inside_p99_ns": percentile(gaps, 99) if gaps else None,
        "gaps_near_threshold": burst_set.near_threshold,
    }


def analysis(
    method: str,
    refills: BurstSet,
    drains: BurstSet,
    gap_ns: int,
    seconds: float,
    lost: int,
) -> dict[str, Any]:
    """Return the tracing section: per-kind summaries and zone->lock spans."""
    return {
        "method": method,
        "traced_s": seconds,
        "lost_events": lost,
        "refill": summarize(refills, gap_ns),
        "drain": summarize(drains, gap_ns),
        "zone_lock_span_ns": stats([b.span_ns for b in refills.bursts + drains.bursts]),
    }
