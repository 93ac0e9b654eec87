"""lkp2023autotune: 51a755c56dc0 (pcp->high auto-tuning) on page_fault2, LKP 2023.

The kernel test robot's report of "mm: tune PCP high automatically" against
90b41691b988 (its framework, high_min = high_max): page_fault2, 104 threads
on lkp-skl-fpga01 (pcplab/record/, split `fit`: `pcplab fit` reads it). The
model's 6.18 with pcp->high pinned at high_min, and as it is. The report's
kbuild and stress-ng rows are listed as not modelled (pcplab.recordlist).
"""

from __future__ import annotations

from pcplab.experiments._common import LkpChange, own_name

NAME = own_name(__name__)
FITTED = True
ORDER = 2023
_EXP = LkpChange(NAME, "autotune", "record, fit split")
KINDS = _EXP.kinds
run, residuals, text, section = _EXP.run, _EXP.residuals, _EXP.text, _EXP.section
plots = _EXP.plots
