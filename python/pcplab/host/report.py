"""Text reports of the host engine: a run's summary, `host info`, sweeps, compare."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from pcplab.funclatency import format_funclatency
from pcplab.locktable import format_rows, format_time, host_rows
from pcplab.summary import INDENT, format_summary, format_table, format_value

VMSTAT_SHOWN = 12  # the largest vmstat deltas shown in a summary


def _hist_section(title: str, stats: Mapping[str, Any] | None) -> list[str]:
    """Return a funclatency histogram of exact stats under a title."""
    if not stats or not stats.get("log2_hist"):
        return [title, f"{INDENT}n/a"]
    text = format_funclatency(
        stats["log2_hist"], total=stats.get("total"), count=stats.get("count")
    )
    return [title, *text.splitlines()]


def pagesets_table(zones: Sequence[Mapping[str, Any]]) -> list[str]:
    """Return one row per (zone, CPU): count, high, batch, high_min, high_max."""
    headers = ["node", "zone", "cpu", "count", "high", "batch", "high_min", "high_max"]
    rows = [
        [zone["node"], zone["zone"], *(cpu.get(h) for h in headers[2:])]
        for zone in zones
        for cpu in zone["cpus"]
    ]
    return format_table(headers, rows, left=2) if rows else [f"{INDENT}n/a"]


def sysctl_lines(sysctls: Mapping[str, str]) -> list[str]:
    """Return `name = value` lines, aligned."""
    width = max((len(k) for k in sysctls), default=0)
    return [f"{INDENT}{k:<{width}} = {v}" for k, v in sysctls.items()]


def _tracing(result: Mapping[str, Any]) -> list[list[str]]:
    """Return the tracing sections: method, per-kind tables, span histograms."""
    tracing = result.get("tracing") or {}
    method = tracing.get("method")
    if not method:
        return [["kernel tracing: unavailable", f"{INDENT}{tracing.get('error')}"]]
    head = [
        f"kernel tracing: {method}, {tracing['traced_s']:.2f} s traced after "
        f"the measurement, {tracing.get('lost_events', 0)} events lost",
    ]
    traced = (result.get("host") or {}).get("traced") or {}
    if traced:
        head.append(
            f"{INDENT}throughput while traced: "
            f"{format_value(traced['throughput']['ops_per_s'])} ops/s"
        )
    headers = ["call", "calls", "pages", "pages/call avg", "p99", "span avg ns", "p99"]
    rows = []
    for kind, name in (("refill", "rmqueue_bulk"), ("drain", "free_pcppages_bulk")):
        k = tracing[kind]
        pages, span = k.get("pages_per_call") or {}, k.get("span_ns") or {}
        rows.append(
            [
                name,
                k["calls"],
                k["pages"],
                pages.get("avg"),
                pages.get("p99"),
                span.get("avg"),
                span.get("p99"),
            ]
        )
    sections = [head + format_table(headers, rows)]
    gaps = [
        f"{INDENT}{kind}: gap threshold {tracing[kind]['gap_ns']} ns, p99 gap "
        f"inside a burst {format_value(tracing[kind]['gap_inside_p99_ns'])} ns, "
        f"{format_value(tracing[kind]['gaps_near_threshold'])} gaps near the threshold"
        for kind in ("refill", "drain")
    ]
    sections.append(["burst joining:", *gaps])
    for kind, name in (("refill", "rmqueue_bulk"), ("drain", "free_pcppages_bulk")):
        sections.append(
            _hist_section(
                f"zone->lock span per {name} (first to last tracepoint of a burst):",
                tracing[kind].get("span_ns"),
            )
        )
    for name, stats in (tracing.get("calls_ns") or {}).items():
        sections.append(_hist_section(f"funclatency {name} (kprobe/fentry):", stats))
    return sections


LOCK_ROWS_SHOWN = 12  # the callers with the most wait shown in a summary


def _lock_contention(result: Mapping[str, Any]) -> list[str]:
    """Return the perf lock contention section: method, totals, top callers."""
    locks = result.get("lock_contention")
    if not locks:
        reason = (result.get("unavailable") or {}).get("lock_contention")
        return ["lock contention: n/a", f"{INDENT}{reason}"]
    contention = result.get("contention") or {}
    lines = [
        f"lock contention: {locks['method']}, {locks['recorded_s']:.2f} s of the "
        f"measured phase, {locks['cpu_time_s']:.2f} task-seconds",
        *textwrap.wrap(
            f"contention figures: {contention.get('method')}",
            width=86,
            initial_indent=INDENT,
            subsequent_indent=INDENT,
        ),
    ]
    totals = locks["totals"]
    lines += [
        f"{INDENT}all {name}: {totals[name]['contended']} contended, "
        f"{format_time(totals[name]['total_wait_ns'])} total wait"
        for name in ("zone_lock", "lru_lock", "spinlock")
    ]
    return lines + format_rows(host_rows(result), LOCK_ROWS_SHOWN)


def _init_on_alloc(state: Mapping[str, Any] | None) -> list[str]:
    """Return the init_on_alloc line: which new pages the allocator clears."""
    if not state:
        return []
    enabled = state.get("enabled")
    where = {
        True: "1: every page is cleared as the allocator hands it out",
        False: "0: the allocator clears only pages asked for zeroed (__GFP_ZERO)",
        None: "unknown",
    }[enabled]
    return [f"{INDENT}init_on_alloc: {where} ({state.get('source')})"]


def format_host_summary(result: Mapping[str, Any]) -> str:
    """Return the generic run summary followed by the host's own sections."""
    kernel = result.get("kernel") or {}
    latency = result.get("latency_ns") or {}
    sections: list[list[str]] = [
        _lock_contention(result),
        _hist_section(
            "first-touch fault latency (user space, TSC):", latency.get("fault")
        ),
    ]
    sections += _tracing(result)
    if kernel:
        sections.append(
            [f"kernel {kernel.get('release')}, sysctls in force:"]
            + sysctl_lines(kernel.get("sysctls") or {})
            + [
                f"{INDENT}transparent_hugepage: "
                + ", ".join(f"{k} {v}" for k, v in (kernel.get("thp") or {}).items())
            ]
            + _init_on_alloc(kernel.get("init_on_alloc"))
        )
        sections.append(
            ["pagesets after the measurement (/proc/zoneinfo):"]
            + pagesets_table((kernel.get("pagesets") or {}).get("after") or [])
        )
        delta = kernel.get("vmstat_delta") or {}
        top = sorted(delta.items(), key=lambda kv: -abs(kv[1]))[:VMSTAT_SHOWN]
        sections.append(
            [f"/proc/vmstat deltas over the measurement (largest {len(top)}):"]
            + textwrap.wrap(
                ", ".join(f"{k} {v}" for k, v in top),
                width=86,
                initial_indent=INDENT,
                subsequent_indent=INDENT,
            )
        )
    notes = result.get("notes") or []
    generic = dict(result)
    if isinstance(result.get("contention"), Mapping):  # the method has its line
        generic["contention"] = {
            k: v for k, v in result["contention"].items() if k != "method"
        }
    if notes:
        sections.append(
            ["notes:"]
            + [
                line
                for note in notes
                for line in textwrap.wrap(
                    note,
                    width=86,
                    initial_indent=INDENT,
                    subsequent_indent=INDENT + INDENT,
                )
            ]
        )
    extra = "\n\n".join("\n".join(s) for s in sections)
    return format_summary(generic) + "\n\n" + extra


def format_info(info: Mapping[str, Any]) -> str:
    """Return the text of `pcplab host info`."""
    probe = info["tracing"]
    lines = [
        f"kernel {info['kernel']} ({info['cpus']} CPUs, MemAvailable "
        f"{info['mem_available_bytes'] / (1 << 30):.1f} GiB, transparent_hugepage "
        f"{info['thp']})",
        "",
        "sysctls:",
        *sysctl_lines(info["sysctls"]),
        "",
        "pagesets (/proc/zoneinfo):",
        *pagesets_table(info["pagesets"]),
        "",
        f"kernel tracing: {probe['method'] or 'unavailable'}",
        *(f"{INDENT}{m}: {r}" for m, r in probe["reasons"].items()),
    ]
    return "\n".join(lines)


def format_sweep(points: Sequence[Mapping[str, Any]]) -> str:
    """Return the sweep table: one row per high fraction, change vs the first."""
    headers = [
        "high_fraction",
        "ops/s",
        "change",
        "fault p50",
        "fault p99",
        "high_min",
        "high_max",
        "refills",
        "pages/refill",
        "drains",
        "pages/drain",
        "lock span avg",
        "p99",
    ]
    rows = []
    base = points[0]["result"]["throughput"]["ops_per_s"] if points else None
    for point in points:
        r = point["result"]
        ops = r["throughput"]["ops_per_s"]
        fault = (r.get("latency_ns") or {}).get("fault") or {}
        first = next(
            (p for p in r.get("pagesets") or [] if p["zone"] == "Normal"),
            (r.get("pagesets") or [{}])[0] if r.get("pagesets") else {},
        )
        tracing = r.get("tracing") or {}
        refill, drain = tracing.get("refill") or {}, tracing.get("drain") or {}
        span = (r.get("lock_hold_ns") or {}).get("zone_lock") or {}
        rows.append(
            [
                point["high_fraction"],
                ops,
                f"{100 * (ops / base - 1):+.2f}%" if base else "n/a",
                fault.get("p50"),
                fault.get("p99"),
                first.get("high_min"),
                first.get("high_max"),
                refill.get("calls"),
                (refill.get("pages_per_call") or {}).get("avg"),
                drain.get("calls"),
                (drain.get("pages_per_call") or {}).get("avg"),
                span.get("avg"),
                span.get("p99"),
            ]
        )
    return "\n".join(format_table(headers, rows, left=0))


def format_compare(rows: Sequence[Sequence[Any]], model: str) -> str:
    """Return the compare table: metric, host, model, model/host ratio."""
    return "\n".join(
        format_table(["metric", "host", model, f"{model}/host"], rows, left=1)
    )
