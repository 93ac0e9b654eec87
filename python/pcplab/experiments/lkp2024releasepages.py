"""lkp2024releasepages: 99fbb6bfc16f (folios_put_refs) and PAGEVEC_SIZE 31, page_fault2.

The kernel test robot's report of "mm: make folios_put() the basis of
release_pages()" against its parent 5dad604809c5, and the retest in its
thread with PAGEVEC_SIZE raised from 15 to 31: page_fault2, 104 processes on
lkp-skl-fpga01 (pcplab/record/, split `fit`: `pcplab fit` reads it). The
model's 6.18 (release_pages as the parent had it, `folios_put_release` off)
against the same with `folios_put_release` (the commit, PAGEVEC_SIZE 15) and
with `pagevec_size` 31 as well (the retest).
"""

from __future__ import annotations

from typing import Any

from pcplab.experiments._common import LkpChange, own_name
from pcplab.stats import ALPHA, welch_p_of_means

NAME = own_name(__name__)
FITTED = True
ORDER = 2024
_EXP = LkpChange(NAME, "release", "record, fit split")
KINDS = _EXP.kinds
run, residuals, section = _EXP.run, _EXP.residuals, _EXP.section
plots = _EXP.plots


def welch_line(row: dict[str, Any]) -> str:
    """Return a score row's model change and Welch's p over its seeds (compare's)."""
    n = int(row.get("seeds", 1))
    sides = [
        (row[f"{s}_model"], row.get(f"{s}_model_std", 0.0), n) for s in ("base", "new")
    ]
    p = welch_p_of_means(*sides)
    verdict = (
        "one seed: no test (reproduce --seeds 3)"
        if p != p
        else f"Welch's p = {p:.2g}{'*' if p < ALPHA else ''} over {n} seeds"
    )
    return (
        f"{row['commit_new']}: model {row['change_model']:+.1f}% "
        f"(LKP {row['change_published']:+.1f}%), {verdict}"
    )


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return the report's figures beside the model's, and each change's Welch test."""
    scores = [r for r in rows if r["metric"] == "will-it-scale.per_process_ops"]
    lines = [welch_line(r) for r in scores if "change_model" in r]
    return _EXP.text(rows, spec) + "\n".join(
        ["per-process score against 5dad604809c5 (* p < 0.05):", *lines, ""]
    )
