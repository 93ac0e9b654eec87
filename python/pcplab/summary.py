"""Readable text summary of an engine result, and the table helper it uses."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from pcplab import headers
from pcplab.funclatency import format_funclatency
from pcplab.locktable import format_rows, model_rows
from pcplab.results import per_call
from pcplab.stressng import metrics_lines

NA = "n/a"
HISTOGRAMS = ("rmqueue_bulk", "free_pcppages_bulk")
INDENT = "  "


def format_value(value: Any) -> str:
    """Format one result value: n/a for null, yes/no, integers, rounded floats."""
    if value is None:
        return NA
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.2f}"
    return str(value)


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1
) -> list[str]:
    """Align rows under headers: the first `left` columns left, the others right.

    tabulate's plain layout (two spaces between columns), cells formatted by
    format_value, every line indented.
    """
    import tabulate

    cells = [[format_value(c) for c in row] for row in rows]
    align = ["left" if i < left else "right" for i in range(len(headers))]
    # no padding beyond the columns' two spaces (tabulate's documented knob)
    padding, tabulate.MIN_PADDING = tabulate.MIN_PADDING, 0
    try:
        text = tabulate.tabulate(
            cells,
            headers=list(headers),
            tablefmt="plain",
            colalign=align,
            disable_numparse=True,
        )
    finally:
        tabulate.MIN_PADDING = padding
    return [(INDENT + line).rstrip() for line in text.splitlines()]


def _mapping_table(section: Mapping[str, Any] | None) -> list[str]:
    """Return a one-row table of a flat section such as throughput or pcp."""
    if not section:
        return [f"{INDENT}{NA}"]
    return format_table(list(section), [list(section.values())], left=0)


def _header(result: Mapping[str, Any]) -> list[str]:
    """Return the title line and the resolved spec of the run."""
    spec = result.get("spec") or {}
    title = (
        f"pcplab run: {headers.line([result])}; "
        f"{format_value(result.get('duration_s'))} s measured"
    )
    scalars = [
        f"{key} {format_value(value)}"
        for key, value in spec.items()
        if not isinstance(value, (list, dict))
    ]
    lines = [title]
    lines += textwrap.wrap(
        "spec: " + ", ".join(scalars), width=88, subsequent_indent=INDENT
    )
    machine = result.get("machine")
    if isinstance(machine, Mapping):
        machine = ", ".join(
            f"{key} {format_value(value)}"
            for key, value in machine.items()
            if not isinstance(value, (list, dict))
        )
    if machine:
        lines += textwrap.wrap(
            f"machine: {machine}", width=88, subsequent_indent=INDENT
        )
    return lines


def _pagesets(result: Mapping[str, Any]) -> list[str]:
    """Return the table of the model's pagesets (one row per zone)."""
    pagesets = result.get("pagesets") or []
    if not pagesets:
        return [f"{INDENT}{NA}"]
    headers = list(pagesets[0])
    rows = [[ps.get(h) for h in headers] for ps in pagesets]
    return format_table(headers, rows, left=2)


def _latency(result: Mapping[str, Any]) -> list[str]:
    """Return the avg/p50/p99/max latency table, one row per timed function."""
    latency = result.get("latency_ns") or {}
    headers = ["function", "count", "avg", "p50", "p99", "max"]
    rows = [
        [name] + [per_call(stats or {}).get(h) for h in headers[1:]]
        for name, stats in latency.items()
    ]
    return format_table(headers, rows) if rows else [f"{INDENT}{NA}"]


def _histogram(name: str, stats: Mapping[str, Any] | None) -> list[str]:
    """Return the funclatency histogram of one function, indented."""
    lines = [f"funclatency {name} (entry to return, lock wait included):"]
    if not stats or not stats.get("log2_hist"):
        return lines + [f"{INDENT}{NA}"]
    count = stats.get("count")
    total = stats.get("total")
    if total is None and count and stats.get("avg") is not None:
        total = round(stats["avg"] * count)  # the schema carries avg, not the sum
    text = format_funclatency(stats["log2_hist"], total=total, count=count)
    return lines + text.splitlines()


def _lock_hold(result: Mapping[str, Any]) -> list[str]:
    """Return the zone->lock hold-time table."""
    locks = result.get("lock_hold_ns") or {}
    headers = ["lock", "count", "avg", "p99", "max"]
    rows = [
        [name.replace("_lock", "->lock")]
        + [per_call(stats or {}).get(h) for h in headers[1:]]
        for name, stats in locks.items()
    ]
    return format_table(headers, rows) if rows else [f"{INDENT}{NA}"]


def _samples(result: Mapping[str, Any]) -> list[str]:
    """Return the per-second ops samples, will-it-scale style, wrapped."""
    samples = result.get("samples") or []
    if not samples:
        return [f"{INDENT}{NA}"]
    text = ", ".join(
        f"{format_value(s.get('t_s'))}s {format_value(s.get('ops'))}" for s in samples
    )
    return textwrap.wrap(
        text, width=86, initial_indent=INDENT, subsequent_indent=INDENT
    )


def _steps(result: Mapping[str, Any]) -> list[str]:
    """Return the scale-max schedule's steps: each one's bulk calls and averages."""
    headers = [
        "from_s",
        "scale_max",
        "rmqueue_bulk",
        "avg",
        "free_pcppages_bulk",
        "avg",
    ]
    rows = [
        [
            s.get("t_s"),
            s.get("scale_max"),
            s["rmqueue_bulk"].get("count"),
            per_call(s["rmqueue_bulk"]).get("avg"),
            s["free_pcppages_bulk"].get("count"),
            per_call(s["free_pcppages_bulk"]).get("avg"),
        ]
        for s in result.get("scale_max_steps") or []
    ]
    return format_table(headers, rows, left=0)


def _invariants(result: Mapping[str, Any]) -> list[str]:
    """Return the invariant checks and every violation found."""
    inv = result.get("invariants") or {}
    violations = inv.get("violations") or []
    lines = [
        f"{INDENT}checked {format_value(inv.get('checked'))}, "
        f"pages conserved {format_value(inv.get('pages_conserved'))}, "
        f"violations {len(violations)}"
    ]
    return lines + [f"{INDENT}{INDENT}{v}" for v in violations]


def _unavailable(result: Mapping[str, Any]) -> list[str]:
    """Return each field the engine could not measure, with its reason."""
    unavailable = result.get("unavailable") or {}
    if not unavailable:
        return [f"{INDENT}none"]
    return [f"{INDENT}{field}: {reason}" for field, reason in unavailable.items()]


def _instrument(result: Mapping[str, Any]) -> list[str]:
    """Return the instrument the result was measured with and what it cost."""
    instr = result.get("instrument")
    if not instr:
        return []
    costs = ", ".join(f"{k} {v:.1f}" for k, v in instr["costs_ns"].items())
    return [
        f"instrument: {instr['instrument']} (costs ns: {costs})",
        *_mapping_table(
            {
                "probe_hits": instr["probe_hits"],
                "nested_calls": instr["nested_calls"],
                "samples": instr["samples"],
                "charged_ms": instr["charged_ns"] / 1e6,
                "under_zone_lock_ms": instr["charged_under_zone_lock_ns"] / 1e6,
                "pct_of_cpu_time": instr["charged_pct_of_cpu_time"],
            }
        ),
    ]


PROFILE_ROWS_SHOWN = 8  # the largest self (and children) shares in a summary


def lkp_name(kind: str, function: str) -> str:
    """LKP's metric name of a perf-profile share: kind 'self' or 'children'."""
    return f"perf-profile.{kind}.cycles-pp.{function}"


def _perf_profile(result: Mapping[str, Any]) -> list[str]:
    """Return the perf-profile section: its method, the largest shares by LKP name."""
    section = result.get("perf_profile")
    if not isinstance(section, Mapping):
        return []
    sampled = (
        f"{section['samples']} samples over {section['recorded_s']:.2f} s; "
        if "samples" in section
        else ""
    )
    lines = [
        f"perf-profile (% of cycles, the {PROFILE_ROWS_SHOWN} largest of each kind):",
        *textwrap.wrap(
            sampled + str(section.get("method")),
            width=86,
            initial_indent=INDENT,
            subsequent_indent=INDENT,
        ),
    ]
    rows = [
        [lkp_name(kind, function), share]
        for kind in ("self", "children")
        for function, share in sorted(
            (section.get(kind) or {}).items(), key=lambda kv: (-kv[1], kv[0])
        )[:PROFILE_ROWS_SHOWN]
    ]
    return lines + format_table(["metric", "%"], rows)


# The figures an instrument's cost moves, beside the untraced run's.
TRACED_FIGURES = (
    ("latency_ns", "rmqueue_bulk", "avg"),
    ("latency_ns", "rmqueue_bulk", "p99"),
    ("latency_ns", "free_pcppages_bulk", "avg"),
    ("latency_ns", "free_pcppages_bulk", "p99"),
    ("lock_hold_ns", "rmqueue_bulk", "avg"),
    ("lock_hold_ns", "free_pcppages_bulk", "avg"),
    ("contention", "zone_lock_pct", None),
    ("contention", "lru_lock_pct", None),
    ("throughput", "pages_per_s", None),
)


def figure(result: Mapping[str, Any], path: tuple[str, str, str | None]) -> Any:
    """Return one figure of RESULT by its (section, name, statistic) path."""
    value = (result.get(path[0]) or {}).get(path[1])
    if path[2] is not None:
        value = (value or {}).get(path[2])
    return value


def format_beside_untraced(
    untraced: Mapping[str, Any], traced: Mapping[str, Any]
) -> str:
    """Return the table of what the instrument did to the figures it measured."""
    rows = []
    for path in TRACED_FIGURES:
        before, after = figure(untraced, path), figure(traced, path)
        change = (
            f"{100.0 * (after - before) / before:+.1f}%"
            if isinstance(before, (int, float)) and before and after is not None
            else NA
        )
        name = ".".join(part for part in path if part is not None)
        rows.append([name, before, after, change])
    instr = traced["instrument"]["instrument"]
    return "\n".join(
        [
            f"what {instr} does to the figures it measures (same spec and seed):",
            *format_table(["figure", "untraced", "traced", "change"], rows),
        ]
    )


# The front end's guards of a result: its field, and what the summary calls it.
GUARDS = (
    ("incomplete", "incomplete"),
    ("outside_fit", "outside what the model was fitted on (extrapolated)"),
)


def _guards(result: Mapping[str, Any]) -> list[str]:
    """Return a line per guard RESULT trips (GUARDS): what it is and why."""
    return [
        f"{INDENT}{name}: {'; '.join(result[key])}"
        for key, name in GUARDS
        if result.get(key)
    ]


def _stress_ng(result: Mapping[str, Any]) -> list[list[str]]:
    """Return stress-ng's metrics table for a stress_vm run (none for the others)."""
    if (result.get("spec") or {}).get("workload") != "stress_vm":
        return []
    lines = [f"{INDENT}{line}".rstrip() for line in metrics_lines(result)]
    return [["stress-ng --metrics-brief (bogo ops):", *lines]]


def format_summary(result: Mapping[str, Any]) -> str:
    """Return the readable text summary of one engine result."""
    latency = result.get("latency_ns") or {}
    sections: list[list[str]] = [_header(result)]
    if _guards(result):
        sections.append(["guards (figures not at face value):", *_guards(result)])
    sections += [
        ["pagesets:", *_pagesets(result)],
        ["throughput:", *_mapping_table(result.get("throughput"))],
        *_stress_ng(result),
        [
            "contention (% of all CPU time spent waiting):",
            *_mapping_table(result.get("contention")),
        ],
        ["latency (ns):", *_latency(result)],
    ]
    sections += [_histogram(name, latency.get(name)) for name in HISTOGRAMS]
    sections += [
        [
            "lock contention (as perf lock contention shows it; the model's waits):",
            *format_rows(model_rows(result)),
        ],
        ["lock hold time (ns):", *_lock_hold(result)],
        ["pcp:", *_mapping_table(result.get("pcp"))],
        ["vmstat:", *_mapping_table(result.get("vmstat"))],
        ["samples (ops per second):", *_samples(result)],
    ]
    if result.get("scale_max_steps"):
        sections.append(
            [
                "pcp_batch_scale_max schedule (calls, avg ns; each step to the next):",
                *_steps(result),
            ]
        )
    if result.get("instrument"):
        sections.append(_instrument(result))
    if isinstance(result.get("perf_profile"), Mapping):
        sections.append(_perf_profile(result))
    sections += [
        ["invariants:", *_invariants(result)],
        ["unavailable:", *_unavailable(result)],
    ]
    return "\n\n".join("\n".join(section) for section in sections)
