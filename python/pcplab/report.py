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

from pcplab import experiments
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
    written: dict[str, list[Path]] = {"csv": [], "json": [], "png": [], "txt": []}
    experiment = experiments.get(name)
    for table, flat in experiment.tables(rows).items():
        write_csv(out / f"{table}.csv", flat)
        (out / f"{table}.json").write_text(json.dumps(flat, indent=1) + "\n")
        written["csv"].append(out / f"{table}.csv")
        written["json"].append(out / f"{table}.json")
    (out / f"{name}.txt").write_text(text + "\n")
    written["txt"].append(out / f"{name}.txt")
    written["png"] = experiment.plots(rows, out)
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
    published = experiments.published()
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
        if name in published:
            md = render_markdown({name: results[name]})
            lines += ["Model beside published:", "", md, ""]
    path = out / "index.md"
    path.write_text("\n".join(lines) + "\n")
    return path
