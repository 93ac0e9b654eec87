"""yafang2024: Yafang Shao's rmqueue_bulk funclatency, scale max 5 and 0.

linux-mm 2024, "mm/page_alloc: Introduce a new sysctl knob
vm.pcp_batch_scale_max": ten parallel mmap 6 GiB, fill, munmap loops on an
AMD EPYC 7W83 KVM guest; bcc's funclatency of rmqueue_bulk. As root, the
same workload also runs, scaled to fit, on this host's kernel.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pcplab import charts, engine
from pcplab.experiments._common import (
    charged,
    heading,
    instrument_line,
    keep,
    load_experiment,
    mode_table,
    own_name,
    profile_for,
    reference_rows,
    run_specs,
    sim_spec,
    timing,
)
from pcplab.funclatency import format_funclatency
from pcplab.headers import RAN, ran
from pcplab.render import err, errors, hist_rows, index_by, md_table, three, with_errors
from pcplab.tolerance import Kind, Residual, add

NAME = own_name(__name__)
ORDER = 2024
FITTED = True
KINDS = {
    "avg": Kind(True, 0.50, "rmqueue_bulk avg"),
    "ratio": Kind(True, 1.0, "avg ratio 5 -> 0"),
}


def published_histograms(exp: dict[str, Any]) -> dict[int, list[list[int]]]:
    """Return the published funclatency rows [[lo, hi, count]] per scale max."""
    hists: dict[int, list[list[int]]] = {}
    for row in reference_rows(exp["histograms"]):
        hists.setdefault(int(row["pcp_batch_scale_max"]), []).append(
            [int(row["bucket_lo_ns"]), int(row["bucket_hi_ns"]), int(row["count"])]
        )
    return hists


def run(
    quick: bool,
    workers: int,
    *,
    scheduler: Any = None,
    mode: str | None = None,
    only: Sequence[str] | None = None,
    constants: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Run ten parallel 6 GiB mmap_fill on the EPYC VM, scale max 5 and 0."""
    exp = load_experiment(NAME)
    rows = keep(reference_rows(exp["reference"]), only)
    published = published_histograms(exp)
    times = timing(mode_table(exp, quick, mode))
    specs = [
        sim_spec(
            profile_for(exp, row["machine"]),
            constants,
            **exp["spec"],
            scale_max=int(row["pcp_batch_scale_max"]),
            **times,
        )
        for row in rows
    ]
    results = run_specs(NAME, specs, workers, scheduler)
    out = []
    for row, res in zip(rows, results, strict=True):
        lat = res["latency_ns"][exp["function"]]
        scale_max = int(row["pcp_batch_scale_max"])
        out.append(
            {
                "machine": row["machine"],
                "scale_max": scale_max,
                "instrument": charged(res),
                RAN: ran(res),
                "avg_ns": lat["avg"],
                "avg_published": float(row["avg_ns"]),
                "log2_hist": lat["log2_hist"],
                "count": lat["count"],
                "total_ns": lat.get("total", lat["avg"] * lat["count"]),
                "count_published": int(row["count"]),
                "total_published": int(row["total_ns"]),
                "log2_hist_published": published.get(scale_max, []),
                "duration_s": times["duration_s"],  # what count covers
            }
        )
    host = None if mode or constants else _on_this_kernel(exp, quick)
    if host is not None:
        out.append(host)
    return out


def _on_this_kernel(exp: dict[str, Any], quick: bool) -> dict[str, Any] | None:
    """Run the same mmap_fill, scaled to fit, on this kernel (root only).

    This kernel offers no entry-to-return timing of rmqueue_bulk here
    (no kprobes or fentry), so the histogram is of the tracepoint bursts
    of refills: first to last kmem:mm_page_alloc_zone_locked event with
    percpu_refill=1 on one CPU, an approximation of the zone->lock hold.
    """
    host = exp.get("host")
    if not host or os.geteuid() != 0 or "host" not in engine.built_engines():
        return None
    from pcplab.host.execute import execute_run
    from pcplab.memguard import mem_available_bytes

    cpus = os.cpu_count() or 1
    size = max(16, int(mem_available_bytes() * host["memory_share"] / cpus) >> 20)
    duration = host["quick_duration_s" if quick else "full_duration_s"]
    res = execute_run(
        {
            "engine": "host",
            "workload": host["workload"],
            "tasks": cpus,
            "size_mib": size,
            "warmup_s": host["warmup_s"],
            "duration_s": duration,
        }
    )
    lat = (res.get("latency_ns") or {}).get(exp["function"])
    method = "entry to return"
    if not lat:
        lat = ((res.get("tracing") or {}).get("refill") or {}).get("span_ns")
        method = "refill burst span, " + str((res.get("tracing") or {}).get("method"))
    if not lat or not lat.get("count"):
        return None
    return {
        "scale_max": f"kernel ({platform.release()}, {cpus} x {size} MiB)",
        "host": True,
        "method": method,
        RAN: ran(res),
        "avg_ns": lat["avg"],
        "log2_hist": lat["log2_hist"],
        "count": lat["count"],
        "total_ns": lat.get("total", lat["avg"] * lat["count"]),
        "duration_s": duration,
    }


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of the 2024 rows: each average, and the 5 -> 0 ratio."""
    out: list[Residual] = []
    by_max = {r["scale_max"]: r for r in rows if not r.get("host")}
    for s, r in by_max.items():
        add(out, KINDS, r["machine"], "avg", s, r["avg_ns"], r["avg_published"])
    if 5 in by_max and 0 in by_max and by_max[0]["avg_ns"]:
        hi, lo = by_max[5], by_max[0]
        model = hi["avg_ns"] / lo["avg_ns"]
        published = hi["avg_published"] / lo["avg_published"]
        add(out, KINDS, hi["machine"], "ratio", "5/0", model, published)
    return out


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return the funclatency histograms, model then published, per scale max."""
    function = spec.get("function", "rmqueue_bulk")
    out = [instrument_line(spec), ""]
    for r in rows:
        if r.get("host"):
            out.append(f"this host's {r['scale_max']}: {function} ({r['method']})")
            out.append(
                format_funclatency(
                    r["log2_hist"], total=r["total_ns"], count=r["count"]
                )
            )
            out.append("")
            continue
        out.append(
            f"pcp_batch_scale_max {r['scale_max']}: model funclatency {function} "
            f"(avg error {err(r['avg_ns'], r['avg_published'])})"
        )
        out.append(
            format_funclatency(r["log2_hist"], total=r["total_ns"], count=r["count"])
        )
        out.append("")
        out.append(f"pcp_batch_scale_max {r['scale_max']}: published")
        out.append(
            format_funclatency(
                r["log2_hist_published"],
                total=r["total_published"],
                count=r["count_published"],
            )
        )
        out.append("")
    return "\n".join(out)


def tables(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Return the averages with their errors, and every histogram in long form."""
    hist = []
    for r in rows:
        if r.get("host"):
            hist += hist_rows("kernel", "scale_max", r["scale_max"], r["log2_hist"])
            continue
        hist += hist_rows("model", "scale_max", r["scale_max"], r["log2_hist"])
        hist += hist_rows(
            "published", "scale_max", r["scale_max"], r["log2_hist_published"]
        )
    summary = [
        # duration_s is the plots' (calls per second); the table stays as it was.
        {
            k: v
            for k, v in with_errors(r, {"avg_ns": "avg_published"}).items()
            if k != "duration_s"
        }
        for r in rows
        if not r.get("host")
    ]
    return {f"{NAME}_summary": summary, f"{NAME}_histogram": hist}


BUCKETS = "{} latency (µs, log2 buckets)"  # .format(the function traced)
SHARE = "share of calls (%)\npublished: a whole run, its length not given"


def _key(row: dict[str, Any]) -> str:
    """Return the legend key of a row: its scale max, or this kernel."""
    return "this kernel" if row.get("host") else f"scale max {row['scale_max']}"


def _calls_per_s(rows: list[dict[str, Any]], function: str) -> charts.Panel:
    """Return the model's (and this kernel's) calls per second in each bucket."""
    series = []
    for r in rows:
        duration = r.get("duration_s")
        if duration:
            edges, calls = charts.log2_buckets(r["log2_hist"], 1 / duration)
            series.append(charts.Series(_key(r), edges, calls, style="steps"))
    return charts.Panel(
        "model: calls per second",
        BUCKETS.format(function),
        "calls (per s, per bucket)",
        series,
        xscale="log",
        yscale="log",
    )


def _shares(
    rows: list[dict[str, Any]], published: dict[int, list[list[int]]], function: str
) -> charts.Panel:
    """Return the share of calls in each bucket: model beside every published row."""
    series = [
        charts.Series(_key(r), *charts.shares(r["log2_hist"]), style="steps")
        for r in rows
    ]
    series += [
        charts.Series(
            f"scale max {s}", *charts.shares(hist), published=True, style="steps"
        )
        for s, hist in published.items()
    ]
    return charts.Panel(
        "share of calls: model and published",
        BUCKETS.format(function),
        SHARE,
        series,
        xscale="log",
    )


def _averages(
    rows: list[dict[str, Any]], summary: list[dict[str, str]], function: str
) -> charts.Panel:
    """Return the average latency per scale max: model beside every published row."""
    model = {_key(r): r for r in rows}
    ref = {f"scale max {r['pcp_batch_scale_max']}": r for r in summary}
    names = [*ref, *(k for k in model if k not in ref)]
    series = []
    for i, name in enumerate(names):
        if name in model:
            spot = charts.placed([model[name]], [i - 0.1])
            series.append(charts.model(spot, "x", "avg_ns", name, 1e-3, "points"))
        if name in ref:
            spot = charts.placed([ref[name]], [i + 0.1])
            series.append(charts.published(spot, "x", "avg_ns", name, 1e-3, "points"))
    return charts.Panel(
        "average",
        "vm.pcp_batch_scale_max",
        f"{function} average latency (µs)",
        series,
        yscale="log",
        xticks=charts.categories(names),
    )


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot the histograms as calls per second and as shares, and the averages."""
    exp = load_experiment(NAME)
    function = exp["function"]
    return charts.draw(
        charts.Figure(
            out / f"{NAME}_histogram",
            f"{NAME}: funclatency {function}, {exp['title']}",
            [
                _calls_per_s(rows, function),
                _shares(rows, published_histograms(exp), function),
                _averages(rows, reference_rows(exp["reference"]), function),
            ],
            notes=[f"this kernel: {r['method']}" for r in rows if r.get("host")],
        )
    )


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md table: each average, in-sample / left out."""
    left = index_by(cv, "scale_max")
    lines = [
        *heading(NAME),
        "funclatency rmqueue_bulk average, entry to return: in-sample / "
        "left out / published.",
        "",
    ]
    cells = []
    for r in rows:
        if r.get("host"):
            continue
        o = left.get((r["machine"], r["scale_max"]))
        cells.append(
            [
                r["scale_max"],
                three(r["avg_ns"], o, "avg_ns", r["avg_published"], ".0f"),
                errors(r["avg_ns"], o, "avg_ns", r["avg_published"]),
                f"{r['count']:.0f}",  # a mean over seeds is not whole
            ]
        )
    lines += md_table(["scale max", "avg ns", "error", "calls"], cells)
    lines.append("")
    return lines
