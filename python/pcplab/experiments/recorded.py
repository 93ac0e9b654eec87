"""recorded: the public record's rows no experiment models, and why (not scored).

Every row of pcplab/record/ whose workload is not one the model runs
(kbuild, netperf, lmbench3, iperf3, vm-scalability file reads, stress-ng),
grouped by CSV, machine and workload, with the TOML's reason. The
page_fault2 rows are the lkp2023* experiments'.
"""

from __future__ import annotations

from typing import Any

from pcplab import data
from pcplab.experiments._common import (
    load_experiment,
    own_name,
    record_rows,
    table_section,
)
from pcplab.render import md_table

NAME = own_name(__name__)
ORDER = 2026
HEADER = ["record CSV", "machine", "workload", "rows", "split", "why not modelled"]


def _workload(r: dict[str, str]) -> str:
    """Return a record row's workload's first word (LKP: will-it-scale's test)."""
    if "testcase" in r:
        return r["test"] if r["testcase"] == "will-it-scale" else r["testcase"]
    return r["workload"].split()[0]


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """List the record's rows of workloads the model does not run (no run)."""
    exp = load_experiment(NAME)
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for path in sorted(data.RECORD.glob("*.csv")):
        if path.stem == "machines":
            continue
        for r in record_rows(path.stem):
            key = (path.stem, r.get("lkp_host") or r["machine"], _workload(r))
            if key[2] not in exp["modelled"]:
                groups.setdefault(key, []).append(r)
    return [
        {
            "csv": csv_name,
            "machine": machine,
            "workload": workload,
            "rows": len(rows),
            "split": "/".join(sorted({r["split"] for r in rows})),
            "reason": exp["reasons"][workload],
        }
        for (csv_name, machine, workload), rows in groups.items()
    ]


def _cells(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Return the table's cells."""
    keys = ("csv", "machine", "workload", "rows", "split", "reason")
    return [[r[k] for k in keys] for r in rows]


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return the rows recorded but not modelled, with the reason."""
    return "\n".join(md_table(HEADER, _cells(rows))) + "\n"


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md list of the rows recorded but not modelled."""
    return table_section(NAME, load_experiment(NAME)["intro"], HEADER, _cells(rows))
