"""docs/fidelity.md: every reference row beside the model, in-sample and left out.

The in-sample figure runs the constants fitted on every reference machine;
the left-out figure runs, for each machine, the constants fitted without it
(machines/crossval.toml, `pcplab fit --cross-validate`): what the model
predicts for a machine it has never seen. The summary gives each machine's
worst row per kind of figure against the tolerance of pcplab.tolerance.
"""

from __future__ import annotations

from typing import Any

from pcplab.fidelity import error_pct, load_experiment, reference_machines
from pcplab.tolerance import KINDS, residuals, worst_by_machine

Rows = dict[str, list[dict[str, Any]]]


def _err(model: float, published: float) -> str:
    """Format the relative error, or n/a where the published figure is 0."""
    e = error_pct(model, published)
    return "n/a" if e is None else f"{e:+.1f}%"


def _opt(value: float | None, fmt: str, unit: str = "") -> str:
    """Format VALUE with FMT and UNIT, or n/a where there is none."""
    return "n/a" if value is None else f"{value:{fmt}}{unit}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Return a Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def render_markdown(results: Rows, cv: Rows | None = None) -> str:
    """Return the fidelity tables: model beside published, error on every row."""
    cv = cv or {}
    lines: list[str] = []
    if "aaron2018" in results:
        out = _index(cv.get("aaron2018", []), "batch")
        lines += [
            "## aaron2018: page_fault1, 4.18, one task per CPU (d8a759b57035)",
            "",
            "Score in pages/s, contention in % of all CPU time: in-sample / "
            "left out / published; the errors are the in-sample and the left-out "
            "one.",
            "",
        ]
        rows = []
        for r in results["aaron2018"]:
            if r["score_published"] is None:  # a profile beyond the thread's
                continue
            o = out.get((r["machine"], r["batch"]))
            rows.append(
                [
                    r["machine"],
                    r["batch"],
                    _three(r["score"], o, "score", r["score_published"], ".0f"),
                    _err(r["score"], r["score_published"])
                    + (f" / {_err(o['score'], r['score_published'])}" if o else ""),
                    _three(
                        r["change_pct"], o, "change_pct", r["change_published"], "+.1f"
                    ),
                    _three(
                        r["zone_contention"],
                        o,
                        "zone_contention",
                        r["zone_published"],
                        ".0f",
                    ),
                    _three(
                        r["lru_contention"],
                        o,
                        "lru_contention",
                        r["lru_published"],
                        ".0f",
                    ),
                    _three(
                        r["total_contention"],
                        o,
                        "total_contention",
                        r["total_published"],
                        ".0f",
                    ),
                ]
            )
        lines += _table(
            [
                "machine",
                "batch",
                "score",
                "score error",
                "change %",
                "zone_contention",
                "lru_contention",
                "total_contention",
            ],
            rows,
        )
        lines.append("")
    if "ying2023" in results:
        out = _index(cv.get("ying2023", []), "batch")
        lines += [
            "## ying2023: high = 2 x batch, free scaling off (52166607ecc9)",
            "",
            "Per-task pages/s and zone->lock hold in us: in-sample / left out / "
            f"published; {load_experiment('ying2023')['spec']['tasks']} tasks "
            "(the mail does not say how many).",
            "",
        ]
        rows = []
        for r in results["ying2023"]:
            o = out.get((r["machine"], r["batch"]))
            cells = [r["machine"], r["batch"]]
            for key, field, fmt in (
                ("throughput", "throughput", ".0f"),
                ("free_avg", "free_avg_us", ".2f"),
                ("free_p99", "free_p99_us", ".2f"),
                ("alloc_avg", "alloc_avg_us", ".2f"),
                ("alloc_p99", "alloc_p99_us", ".2f"),
            ):
                pub = r[f"{key}_published"]
                cells.append(_three(r[field], o, field, pub, fmt))
                cells.append(
                    _err(r[field], pub) + (f" / {_err(o[field], pub)}" if o else "")
                )
            rows.append(cells)
        lines += _table(
            [
                "machine",
                "batch",
                "per-task pages/s",
                "error",
                "free avg",
                "error",
                "free 99%",
                "error",
                "alloc avg",
                "error",
                "alloc 99%",
                "error",
            ],
            rows,
        )
        lines.append("")
    if "yafang2024" in results:
        out = _index(cv.get("yafang2024", []), "scale_max")
        lines += [
            "## yafang2024: 10 x mmap_fill 6 GiB on the EPYC 7W83 VM",
            "",
            "funclatency rmqueue_bulk average, entry to return: in-sample / "
            "left out / published.",
            "",
        ]
        rows = []
        for r in results["yafang2024"]:
            if r.get("host"):
                continue
            o = out.get((r["machine"], r["scale_max"]))
            rows.append(
                [
                    r["scale_max"],
                    _three(r["avg_ns"], o, "avg_ns", r["avg_published"], ".0f"),
                    _err(r["avg_ns"], r["avg_published"])
                    + (f" / {_err(o['avg_ns'], r['avg_published'])}" if o else ""),
                    r["count"],
                ]
            )
        lines += _table(["scale max", "avg ns", "error", "calls"], rows)
        lines.append("")
    if "hahn2025" in results:
        lines += [
            "## hahn2025: stress-ng vm, relinquish zone->lock when contended",
            "",
            "bogo ops/s (real) change from off to contended (model / published).",
            "",
        ]
        rows = [
            [
                r["machine"],
                r["args"],
                f"{r['delta_pct']:+.3f}% / " + _opt(r["delta_published"], "+.3f", "%"),
                _opt(r.get("delta_batched_pct"), "+.3f", "%"),
                f"{r['max_hold_off_us']:.0f} -> {r['max_hold_contended_us']:.0f}",
                f"{r['max_hold_us_off']:.0f} / {r['max_hold_us_contended']:.0f}"
                + (
                    f" / {r['max_hold_us_batched']:.0f}"
                    if "max_hold_us_batched" in r
                    else ""
                ),
            ]
            for r in results["hahn2025"]
        ]
        lines += _table(
            [
                "machine",
                "stress-ng",
                "delta",
                "delta batched",
                "max free hold us",
                "max zone->lock hold us (off / contended / batched)",
            ],
            rows,
        )
        lines.append("")
    return "\n".join(lines)


def _index(rows: list[dict[str, Any]], key: str) -> dict[tuple[Any, Any], dict]:
    """Index rows by (machine, KEY)."""
    return {(r.get("machine"), r.get(key)): r for r in rows}


def _three(inside: float, out: dict | None, field: str, published: float, fmt: str):
    """Format in-sample / left-out / published (left out: '-' where not run)."""
    middle = "-" if out is None else f"{out[field]:{fmt}}"
    return f"{inside:{fmt}} / {middle} / {published:{fmt}}"


def render_summary(results: Rows, cv: Rows | None) -> str:
    """Return each machine's worst row per figure, in-sample and left out."""
    inside = worst_by_machine(residuals(results))
    outside = worst_by_machine(residuals(cv or {}))
    rows = []
    for machine in reference_machines():
        for kind, (what, r) in inside.get(machine, {}).items():
            k = KINDS[kind]
            o = outside.get(machine, {}).get(kind)
            rows.append(
                [
                    machine,
                    f"{k.label} ({k.bound()})",
                    f"{k.error(r)} at {what.split('@')[1]}",
                    "-" if o is None else f"{k.error(o[1])} at {o[0].split('@')[1]}",
                    "-" if o is None else ("yes" if abs(o[1]) <= 1 else "**no**"),
                ]
            )
    header = ["machine", "figure (tolerance)", "in-sample worst", "left out worst"]
    return "\n".join(_table([*header, "within"], rows))


def render_document(results: Rows, cv: Rows | None) -> str:
    """Return the summary, then every table (what `pcplab fidelity` prints)."""
    head = [
        "## Summary: each machine's worst row, in-sample and left out",
        "",
        "In-sample: the constants of constants.toml, fitted on every "
        "reference machine. Left out: for each machine, the constants fitted "
        "without it (crossval.toml), i.e. the model's prediction for a machine "
        "it has not seen. `within`: the left-out worst row is inside the "
        "tolerance.",
        "",
    ]
    if results.keys() & {"aaron2018", "ying2023", "yafang2024"}:
        head += [render_summary(results, cv), ""]
    return "\n".join(head) + "\n" + render_markdown(results, cv)
