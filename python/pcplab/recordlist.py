"""The public record's rows no experiment models, each with why (never scored).

Every row of pcplab/record/ whose workload the model does not run (kbuild,
netperf, lmbench3, iperf3, vm-scalability file reads, stress-ng), grouped by
CSV, machine and workload, with record/unmodelled.toml's reason. The rows of
the workloads it names as modelled are the lkp2023* experiments' and
mel2022highorder's.
"""

from __future__ import annotations

import tomllib
from typing import Any

from pcplab import data
from pcplab.render import md_table

HEADER = ["record CSV", "machine", "workload", "rows", "split", "why not modelled"]
HEADING = "## The public record's rows not modelled"


def _workload(r: dict[str, str]) -> str:
    """Return a record row's workload's first word (LKP: will-it-scale's test)."""
    if "testcase" in r:
        return r["test"] if r["testcase"] == "will-it-scale" else r["testcase"]
    return r["workload"].split()[0]


def _reasons() -> dict[str, Any]:
    """Return record/unmodelled.toml: the modelled workloads and the reasons."""
    with open(data.RECORD / "unmodelled.toml", "rb") as f:
        return tomllib.load(f)


def unmodelled() -> list[list[Any]]:
    """Return a table row per CSV, machine and workload the model does not run."""
    spec = _reasons()
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for path in sorted(data.RECORD.glob("*.csv")):
        if path.stem == "machines":
            continue
        for r in data.record_rows(path.stem):
            key = (path.stem, r.get("lkp_host") or r["machine"], _workload(r))
            if key[2] not in spec["modelled"]:
                groups.setdefault(key, []).append(r)
    return [
        [*key, len(rows), _splits(rows), spec["reasons"][key[2]]]
        for key, rows in groups.items()
    ]


def _splits(rows: list[dict[str, str]]) -> str:
    """Return the splits of ROWS ("fit", "heldout" or both)."""
    return "/".join(sorted({r["split"] for r in rows}))


def section() -> list[str]:
    """Return docs/fidelity.md's last section: the rows listed, with the reason."""
    return [HEADING, "", _reasons()["intro"], "", *md_table(HEADER, unmodelled()), ""]
