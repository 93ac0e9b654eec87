"""The cells and columns the experiments print: thread layouts, CSV rows, Markdown.

Shared by the experiment modules (pcplab.experiments), which each lay out
their own tables with these: model/published pairs, errors, rows aligned to
a thread's header, flat rows for CSV and JSON, Markdown tables.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from pcplab.tolerance import error_pct

SEP = "   "  # between the columns of a thread's header


def err(model: float | None, published: float | None) -> str:
    """Format the model's error against PUBLISHED, or n/a."""
    if model is None or published is None:
        return "n/a"
    e = error_pct(model, published)
    return "n/a" if e is None else f"{e:+.1f}%"


def pair(model: float, published: float | None, fmt: str, unit: str = "") -> str:
    """Format "model/published" (or the model alone where nothing is published)."""
    if published is None:
        return f"{model:{fmt}}{unit}"
    return f"{model:{fmt}}{unit}/{published:{fmt}}{unit}"


def line(layout: str, cells: Sequence[str], left: int = 0) -> str:
    """Return one row's cells aligned to the header's columns (LEFT left-aligned)."""
    columns = list(re.finditer(r"\S+(?: \S+)*", layout))
    widths = [b.start() - a.start() - len(SEP) for a, b in itertools.pairwise(columns)]
    widths.append(len(columns[-1].group()))
    return SEP.join(
        f"{c:<{w}}" if i < left else f"{c:>{w}}"
        for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    ).rstrip()


NUMERIC = re.compile(r"^[+-]?(\d|\.\d|n/a$)")  # a cell line() right-aligns


def _columns(text: str) -> list[str]:
    """Split a header or row line() wrote into its cells (SEP or more apart)."""
    return re.split(r" {3,}", text.strip())


def _aligned(header: str, rows: list[str]) -> list[str]:
    """Return HEADER and ROWS with every column as wide as its widest cell.

    line() fits a cell into the room its header label leaves, and a wider
    cell pushes the rest of its row right of the labels; here each column
    takes its widest cell or label, numbers and their labels to the right.
    """
    labels = _columns(header)
    table = [_columns(row) for row in rows]
    if any(len(cells) != len(labels) for cells in table):
        return [header, *rows]  # not line()'s rows: leave them as written
    widths = [
        max(len(c) for c in column) for column in zip(labels, *table, strict=True)
    ]
    right = [
        all(NUMERIC.match(c) for c in column) for column in zip(*table, strict=True)
    ] or [False] * len(labels)

    def join(cells: list[str]) -> str:
        return SEP.join(
            f"{c:>{w}}" if r else f"{c:<{w}}"
            for c, w, r in zip(cells, widths, right, strict=True)
        ).rstrip()

    return [join(labels), *(join(cells) for cells in table)]


def align(text: str, layout: str | None) -> str:
    """Return TEXT with the rows under each LAYOUT header line up with it."""
    if not layout:
        return text
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if lines[i] != layout:
            out.append(lines[i])
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip():
            end += 1
        out += _aligned(lines[i], lines[i + 1 : end])
        i = end
    return "\n".join(out)


def by_machine(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Group rows by their machine, in order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["machine"], []).append(row)
    return groups


def scalars(row: dict[str, Any]) -> dict[str, Any]:
    """Return ROW without its list fields (histograms): one CSV row."""
    return {k: v for k, v in row.items() if not isinstance(v, list)}


def generic_text(rows: list[dict[str, Any]]) -> str:
    """Return rows of scalar fields as an aligned table, a column per key."""
    flat = [scalars(r) for r in rows]
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
    """Format one cell of generic_text."""
    if isinstance(value, float):
        return f"{value:.2f}"
    return "n/a" if value is None else str(value)


def with_errors(row: dict[str, Any], pairs: dict[str, str]) -> dict[str, Any]:
    """Return ROW with an <model>_error_pct column for each model/published pair."""
    out = scalars(row)
    for model, published in pairs.items():
        pub = row.get(published)
        out[f"{model}_error_pct"] = None if pub is None else error_pct(row[model], pub)
    return out


def hist_rows(source: str, key: str, value: Any, hist: Any) -> list[dict[str, Any]]:
    """Return log2 histogram rows in long form, one per bucket."""
    return [
        {"source": source, key: value, "lo_ns": lo, "hi_ns": hi, "count": count}
        for lo, hi, count in hist
    ]


# --- Markdown (docs/fidelity.md) ---------------------------------------------


def md_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    """Return the lines of a Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def opt(value: float | None, fmt: str, unit: str = "") -> str:
    """Format VALUE with FMT and UNIT, or n/a where there is none."""
    return "n/a" if value is None else f"{value:{fmt}}{unit}"


def index_by(rows: list[dict[str, Any]], key: str) -> dict[tuple[Any, Any], dict]:
    """Index rows by (machine, KEY): the left-out row beside an in-sample one."""
    return {(r.get("machine"), r.get(key)): r for r in rows}


def three(
    inside: float, out: dict | None, field: str, published: float, fmt: str
) -> str:
    """Format in-sample / left-out / published (left out: '-' where not run)."""
    middle = "-" if out is None else f"{out[field]:{fmt}}"
    return f"{inside:{fmt}} / {middle} / {published:{fmt}}"


def errors(inside: float, out: dict | None, field: str, published: float) -> str:
    """Format the in-sample error, and the left-out one where it ran."""
    return err(inside, published) + (f" / {err(out[field], published)}" if out else "")
