"""Write the report folder of reproduced experiments: CSV, JSON, text, plots, index.

Each experiment's module (pcplab.experiments) lays out its own text in its
thread's layout, its tables and its plots; `write_experiment` writes them
as one CSV and one JSON per table, NAME.txt and PNG plots, and
`write_index` an index.md that links them and repeats the experiment's
section of docs/fidelity.md.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from pcplab import experiments, verdict
from pcplab.buildinfo import header_facts
from pcplab.fidelity_doc import render_markdown


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ROWS to PATH as CSV, with every key of every row as a column."""
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def write_experiment(
    name: str, rows: list[dict[str, Any]], text: str, out: Path
) -> dict[str, list[Path]]:
    """Write NAME's CSV, JSON, text and plots into OUT; return them by kind."""
    written: dict[str, list[Path]] = {
        "csv": [],
        "json": [],
        "png": [],
        "svg": [],
        "txt": [],
    }
    experiment = experiments.get(name)
    for table, flat in experiment.tables(rows).items():
        write_csv(out / f"{table}.csv", flat)
        (out / f"{table}.json").write_text(json.dumps(flat, indent=1) + "\n")
        written["csv"].append(out / f"{table}.csv")
        written["json"].append(out / f"{table}.json")
    (out / f"{name}.txt").write_text(text + "\n")
    written["txt"].append(out / f"{name}.txt")
    for plot in experiment.plots(rows, out):
        written["svg" if plot.suffix == ".svg" else "png"].append(plot)
    return written


def write_index(
    out: Path,
    results: dict[str, list[dict[str, Any]]],
    texts: dict[str, str],
    files: dict[str, dict[str, list[Path]]],
    notes: dict[str, str],
    header: str,
    cv: dict[str, list[dict[str, Any]]] | None = None,
) -> Path:
    """Write OUT/index.md (and index.html): where it stands, then each experiment.

    It opens with the pcplab version and commit, the date and the host, and
    the verdict: per experiment and machine, the figures within tolerance
    in-sample, left out (CV: the rows each machine's fold ran) and held
    out, and each kind's worst miss with its size; every scored figure
    follows at the end, and in verdict.csv and verdict.json.
    """
    facts = header_facts()
    lines = ["# pcplab reproduce", "", header, ""]
    lines += [f"- {key}: {value}" for key, value in facts.items()]
    lines += ["", "## Verdict", ""]
    lines += [
        "Each published figure against the model, and what a reader of the "
        "thread judges beyond it (an order of machines, a histogram's tail, "
        "the sign of a change), in units of its tolerance (docs/fidelity.md, "
        "Scoring): a figure is a hit when its error is within the tolerance. "
        "In-sample: the fit read its row. Left out: run with the constants of "
        "the fold that left its machine out (machines/crossval.toml). Held "
        "out: no fit reads its row. Every figure is listed at the end "
        "([verdict.csv](verdict.csv)).",
        "",
        *verdict.render(results, cv, notes),
        "",
    ]
    flat = verdict.flat(results, cv)
    write_csv(out / "verdict.csv", flat)
    (out / "verdict.json").write_text(json.dumps(flat, indent=1) + "\n")
    published = experiments.published()
    for name in [*results, *(n for n in notes if n not in results)]:
        lines += [f"## {name}", ""]
        if name in notes:
            lines += [notes[name], ""]
        if name not in results:
            continue
        ran = experiments.get(name).ran(results[name])
        lines += [] if ran is None else [f"`{ran}`", ""]
        for png in files[name]["png"]:
            lines += [f"![{png.stem}]({png.name})", ""]
        links = [
            f"[{p.name}]({p.name})"
            for kind in ("csv", "json", "txt", "svg")
            for p in files[name][kind]
        ]
        lines += ["Files: " + ", ".join(links), ""]
        lines += ["In the thread's layout:", "", "```", texts[name].rstrip(), "```", ""]
        if name in published:
            md = render_markdown({name: results[name]}, cv)
            lines += ["Model beside published:", "", md, ""]
    lines += ["## Every scored figure", "", *verdict.render_figures(results, cv), ""]
    path = out / "index.md"
    path.write_text("\n".join(lines) + "\n")
    write_html(path, out / "index.html")
    return path


def write_html(markdown_path: Path, html_path: Path) -> Path:
    """Write the report as one self-contained HTML page (images inlined)."""
    import base64
    import html
    import re

    import markdown  # python-markdown: tables and fenced code

    body = markdown.markdown(
        markdown_path.read_text(), extensions=["tables", "fenced_code"]
    )

    def inline(match: re.Match[str]) -> str:
        image = markdown_path.parent / html.unescape(match.group(1))
        if not image.is_file():
            return match.group(0)
        kind = "svg+xml" if image.suffix == ".svg" else image.suffix.lstrip(".")
        data = base64.b64encode(image.read_bytes()).decode()
        return f'src="data:image/{kind};base64,{data}"'

    body = re.sub(r'src="([^"]+)"', inline, body)
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>pcplab reproduce</title><style>"
        "body{font-family:sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}"
        "table{border-collapse:collapse;font-size:0.9rem}"
        "td,th{border:1px solid #ccc;padding:0.2rem 0.5rem;text-align:right}"
        "td:first-child,th:first-child{text-align:left}"
        "pre{background:#f6f6f6;padding:0.5rem;overflow-x:auto;font-size:0.8rem}"
        "img{max-width:100%}</style></head><body>\n"
        f"{body}\n</body></html>\n"
    )
    html_path.write_text(page)
    return html_path
