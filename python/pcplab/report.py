"""Render reproduced experiments: the threads' own layouts, CSV, JSON, plots, index.

Every table is printed in its reference thread's layout with the published
figure and the model's error beside each modelled one; funclatency
histograms are printed in bcc's layout; `write_report` writes one CSV and
one JSON per table, PNG plots, and an index.md that links them.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pcplab.fidelity import error_pct
from pcplab.fidelity_doc import render_markdown
from pcplab.funclatency import format_funclatency

SEP = "   "


def _err(model: float | None, published: float | None) -> str:
    """Format the model's error against PUBLISHED, or n/a."""
    if model is None or published is None:
        return "n/a"
    e = error_pct(model, published)
    return "n/a" if e is None else f"{e:+.1f}%"


def _pair(model: float, published: float | None, fmt: str, unit: str = "") -> str:
    """Format "model/published" (or the model alone where nothing is published)."""
    if published is None:
        return f"{model:{fmt}}{unit}"
    return f"{model:{fmt}}{unit}/{published:{fmt}}{unit}"


def _line(layout: str, cells: Sequence[str], left: int = 0) -> str:
    """Return one row's cells aligned to the header's columns (LEFT left-aligned)."""
    columns = list(re.finditer(r"\S+(?: \S+)*", layout))
    widths = [b.start() - a.start() - len(SEP) for a, b in itertools.pairwise(columns)]
    widths.append(len(columns[-1].group()))
    return SEP.join(
        f"{c:<{w}}" if i < left else f"{c:>{w}}"
        for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    ).rstrip()


def _by_machine(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Group rows by their machine, in order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["machine"], []).append(row)
    return groups


def text_aaron2018(rows: list[dict[str, Any]], layout: str) -> str:
    """Return Aaron Lu's table per machine: model/published, score error."""
    out = []
    for machine, group in _by_machine(rows).items():
        out += [
            f"{machine}: model/published (score error in brackets)",
            layout,
        ]
        for r in group:
            score = _pair(r["score"], r["score_published"], ".0f")
            out.append(
                _line(
                    layout,
                    [
                        str(r["batch"]),
                        f"{score} ({_err(r['score'], r['score_published'])})",
                        _pair(r["change_pct"], r["change_published"], "+.2f", "%"),
                        _pair(r["zone_contention"], r["zone_published"], ".0f", "%"),
                        _pair(r["lru_contention"], r["lru_published"], ".0f", "%"),
                        _pair(r["total_contention"], r["total_published"], ".0f", "%"),
                    ],
                )
            )
        out.append("")
    return "\n".join(out)


def text_ying2023(rows: list[dict[str, Any]], layout: str) -> str:
    """Return Huang Ying's table per machine: pages/s per task, holds in us."""
    out = []
    for machine, group in _by_machine(rows).items():
        out += [f"{machine}: model/published (error), hold times in us", layout]
        for r in group:
            cells = [str(r["batch"])]
            for key, fmt in (
                ("throughput", ".0f"),
                ("free_avg_us", ".2f"),
                ("free_p99_us", ".2f"),
                ("alloc_avg_us", ".2f"),
                ("alloc_p99_us", ".2f"),
            ):
                pub = r[key.removesuffix("_us") + "_published"]
                cells.append(f"{_pair(r[key], pub, fmt)} ({_err(r[key], pub)})")
            out.append(_line(layout, cells))
        out.append("")
    return "\n".join(out)


def text_yafang2024(rows: list[dict[str, Any]], function: str = "rmqueue_bulk") -> str:
    """Return the funclatency histograms, model then published, per scale max."""
    out = []
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
            f"(avg error {_err(r['avg_ns'], r['avg_published'])})"
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


def text_hahn2025(rows: list[dict[str, Any]], layout: str) -> str:
    """Return the relinquish table: each policy's bogo ops, delta and holds."""
    out = [layout]
    for r in rows:
        for policy in ("off", "contended", "batched"):
            if f"bogo_ops_s_{policy}" not in r:
                continue
            if policy == "off":
                delta = "base"
            else:
                delta = f"{r[f'delta_{policy}_pct']:+.3f}%"
                if policy == "contended" and r["delta_published"] is not None:
                    delta += f"/{r['delta_published']:+.3f}%"
            out.append(
                _line(
                    layout,
                    [
                        r["machine"],
                        r["args"],
                        policy,
                        f"{r[f'bogo_ops_s_{policy}']:.0f}",
                        delta,
                        f"{r[f'max_hold_us_{policy}']:.0f}",
                        str(r[f"holds_over_1ms_{policy}"]),
                        str(r[f"holds_over_10ms_{policy}"]),
                    ],
                    left=2,
                )
            )
    out.append("(delta: model/published for contended; holds over 1 ms and 10 ms")
    out.append(" count whole log2 buckets at or above the bound)")
    return "\n".join(out) + "\n"


def render_text(name: str, rows: list[dict[str, Any]], exp: dict[str, Any]) -> str:
    """Return experiment NAME's tables in its thread's layout, with a title."""
    title = f"== {name}: {exp.get('title', '')}"
    if name == "aaron2018":
        body = text_aaron2018(rows, exp["layout"])
    elif name == "ying2023":
        body = text_ying2023(rows, exp["layout"])
    elif name == "yafang2024":
        body = text_yafang2024(rows, exp.get("function", "rmqueue_bulk"))
    elif name == "hahn2025":
        body = text_hahn2025(rows, exp["layout"])
    else:
        body = text_generic(rows, exp.get("layout"))
    return f"{title}\n\n{body}"


def text_generic(rows: list[dict[str, Any]], layout: str | None) -> str:
    """Return rows of scalar fields as an aligned table (the host experiment)."""
    flat = [{k: v for k, v in r.items() if not isinstance(v, list)} for r in rows]
    if not flat:
        return "(no rows)\n"
    keys = list(flat[0])
    widths = [max(len(k), *(len(_cell(r.get(k))) for r in flat)) for k in keys]
    lines = ["  ".join(f"{k:>{w}}" for k, w in zip(keys, widths, strict=True))]
    for r in flat:
        lines.append(
            "  ".join(
                f"{_cell(r.get(k)):>{w}}" for k, w in zip(keys, widths, strict=True)
            )
        )
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    """Format one table cell."""
    if isinstance(value, float):
        return f"{value:.2f}"
    return "" if value is None else str(value)


# --- tables for CSV and JSON ---------------------------------------------


def _with_errors(row: dict[str, Any], pairs: dict[str, str]) -> dict[str, Any]:
    """Return ROW with an <model>_error_pct column for each model/published pair."""
    out = {k: v for k, v in row.items() if not isinstance(v, list)}
    for model, published in pairs.items():
        pub = row.get(published)
        out[f"{model}_error_pct"] = None if pub is None else error_pct(row[model], pub)
    return out


def _hist_rows(source: str, key: str, value: Any, hist: Any) -> list[dict[str, Any]]:
    """Return log2 histogram rows in long form, one per bucket."""
    return [
        {"source": source, key: value, "lo_ns": lo, "hi_ns": hi, "count": count}
        for lo, hi, count in hist
    ]


def tables(name: str, rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Return experiment NAME's tables (name -> flat rows) for CSV and JSON."""
    if name == "aaron2018":
        pairs = {
            "score": "score_published",
            "zone_contention": "zone_published",
            "lru_contention": "lru_published",
            "total_contention": "total_published",
        }
        return {name: [_with_errors(r, pairs) for r in rows]}
    if name == "ying2023":
        keys = ("throughput", "free_avg_us", "free_p99_us", "alloc_avg_us")
        pairs = {k: k.removesuffix("_us") + "_published" for k in keys}
        pairs["alloc_p99_us"] = "alloc_p99_published"
        return {name: [_with_errors(r, pairs) for r in rows]}
    if name == "yafang2024":
        hist = []
        for r in rows:
            if r.get("host"):
                hist += _hist_rows(
                    "kernel", "scale_max", r["scale_max"], r["log2_hist"]
                )
                continue
            hist += _hist_rows("model", "scale_max", r["scale_max"], r["log2_hist"])
            hist += _hist_rows(
                "published", "scale_max", r["scale_max"], r["log2_hist_published"]
            )
        summary = [
            _with_errors(r, {"avg_ns": "avg_published"})
            for r in rows
            if not r.get("host")
        ]
        return {f"{name}_summary": summary, f"{name}_histogram": hist}
    if name == "hahn2025":
        holds = []
        for r in rows:
            for policy in ("off", "contended", "batched"):
                if f"hold_hist_{policy}" in r:
                    holds += _hist_rows(
                        r["machine"], "policy", policy, r[f"hold_hist_{policy}"]
                    )
        flat = [_with_errors(r, {"delta_pct": "delta_published"}) for r in rows]
        return {name: flat, f"{name}_holds": holds}
    return {
        name: [{k: v for k, v in r.items() if not isinstance(v, list)} for r in rows]
    }


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ROWS to PATH as CSV, with every key of every row as a column."""
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


# --- plots ------------------------------------------------------------------


def _pyplot() -> Any:
    """Return matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _against_batch(
    path: Path,
    rows: list[dict[str, Any]],
    panels: list[tuple[str, str, str]],
    title: str,
) -> Path:
    """Plot model (solid) and published (dashed) against batch, per machine."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4))
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, (model, published, label) in zip(axes, panels, strict=True):
        for machine, group in _by_machine(rows).items():
            xs = [r["batch"] for r in group]
            line = ax.plot(xs, [r[model] for r in group], "o-", label=machine)[0]
            pub = [r.get(published) for r in group]
            if all(p is not None for p in pub):
                ax.plot(xs, pub, "x--", color=line.get_color(), alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("pcp->batch")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8, title="solid: model, dashed: published")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _hist_plot(
    path: Path, series: list[tuple[str, Any]], title: str, xlabel: str
) -> Path:
    """Plot log2 histograms as bars side by side, normalised to shares."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    slots = max((len(h) for _, h in series), default=0)
    width = 0.8 / max(1, len(series))
    for i, (label, hist) in enumerate(series):
        total = sum(int(c) for _, _, c in hist) or 1
        xs = [k + i * width for k in range(len(hist))]
        ax.bar(xs, [int(c) / total for _, _, c in hist], width=width, label=label)
    ax.set_xticks(range(slots))
    ax.set_xticklabels([f"2^{k}" for k in range(slots)], rotation=90, fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of calls")
    ax.legend(fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plots(name: str, rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Write experiment NAME's PNG plots into OUT; return their paths."""
    if not rows:
        return []
    if name == "aaron2018":
        return [
            _against_batch(
                out / "aaron2018_throughput.png",
                rows,
                [
                    ("score", "score_published", "score (pages/s)"),
                    ("zone_contention", "zone_published", "zone->lock contention %"),
                ],
                "aaron2018: page_fault1 score and zone->lock contention",
            )
        ]
    if name == "ying2023":
        return [
            _against_batch(
                out / "ying2023_throughput.png",
                rows,
                [("throughput", "throughput_published", "pages/s per task")],
                "ying2023: throughput against batch",
            ),
            _against_batch(
                out / "ying2023_p99_latency.png",
                rows,
                [
                    ("free_p99_us", "free_p99_published", "free_pcppages_bulk 99% us"),
                    ("alloc_p99_us", "alloc_p99_published", "rmqueue_bulk 99% us"),
                ],
                "ying2023: p99 zone->lock hold against batch",
            ),
        ]
    if name == "yafang2024":
        series = []
        for r in rows:
            if r.get("host"):
                series.append((f"this kernel ({r['method']})", r["log2_hist"]))
                continue
            series.append((f"model, scale max {r['scale_max']}", r["log2_hist"]))
            series.append(
                (f"published, scale max {r['scale_max']}", r["log2_hist_published"])
            )
        return [
            _hist_plot(
                out / "yafang2024_histogram.png",
                series,
                "yafang2024: funclatency rmqueue_bulk",
                "nsecs (log2 bucket)",
            )
        ]
    if name == "hahn2025":
        series = [
            (f"{r['machine']} {policy}", r[f"hold_hist_{policy}"])
            for r in rows
            for policy in ("off", "contended", "batched")
            if r.get(f"hold_hist_{policy}")
        ]
        return [
            _hist_plot(
                out / "hahn2025_hold_times.png",
                series,
                "hahn2025: zone->lock hold-time distribution",
                "hold nsecs (log2 bucket)",
            )
        ]
    return []


# --- the report folder -------------------------------------------------------


def write_experiment(
    name: str, rows: list[dict[str, Any]], text: str, out: Path
) -> dict[str, list[Path]]:
    """Write NAME's CSV, JSON, text and plots into OUT; return them by kind."""
    written: dict[str, list[Path]] = {"csv": [], "json": [], "png": [], "txt": []}
    for table, flat in tables(name, rows).items():
        write_csv(out / f"{table}.csv", flat)
        (out / f"{table}.json").write_text(json.dumps(flat, indent=1) + "\n")
        written["csv"].append(out / f"{table}.csv")
        written["json"].append(out / f"{table}.json")
    (out / f"{name}.txt").write_text(text + "\n")
    written["txt"].append(out / f"{name}.txt")
    written["png"] = plots(name, rows, out)
    return written


def write_index(
    out: Path,
    results: dict[str, list[dict[str, Any]]],
    texts: dict[str, str],
    files: dict[str, dict[str, list[Path]]],
    notes: dict[str, str],
    header: str,
) -> Path:
    """Write OUT/index.md: tables, layouts and links to every file."""
    lines = ["# pcplab reproduce", "", header, ""]
    fidelity = {k: v for k, v in results.items() if k != "host"}
    for name in [*results, *(n for n in notes if n not in results)]:
        lines += [f"## {name}", ""]
        if name in notes:
            lines += [notes[name], ""]
        if name not in results:
            continue
        for png in files[name]["png"]:
            lines += [f"![{png.stem}]({png.name})", ""]
        links = [
            f"[{p.name}]({p.name})"
            for kind in ("csv", "json", "txt")
            for p in files[name][kind]
        ]
        lines += ["Files: " + ", ".join(links), ""]
        lines += ["In the thread's layout:", "", "```", texts[name].rstrip(), "```", ""]
        if name in fidelity:
            md = render_markdown({name: fidelity[name]})
            lines += ["Model beside published:", "", md, ""]
    path = out / "index.md"
    path.write_text("\n".join(lines) + "\n")
    return path
