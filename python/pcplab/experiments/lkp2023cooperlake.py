"""lkp2023cooperlake: -V3 7/9 (high auto-tuning), page_fault2, 4-socket Cooper Lake.

The kernel test robot's review of "[PATCH -V3 7/9] mm: tune PCP high
automatically" (ba6149e96007, later 51a755c56dc0) against 9f9d0b08696f:
page_fault2, 16 processes on lkp-cpl-4sp2 (pcplab/record/, held out: a
micro-architecture and a 4-socket machine the fit has never seen). The
model's 6.18 with pcp->high pinned at high_min, and as it is.
"""

from __future__ import annotations

from pcplab.experiments._common import LkpChange, own_name

NAME = own_name(__name__)
ORDER = 2023
_EXP = LkpChange(NAME, "cooperlake", "record, held out")
KINDS = _EXP.kinds
run, residuals, text, section = _EXP.run, _EXP.residuals, _EXP.text, _EXP.section
plots = _EXP.plots
