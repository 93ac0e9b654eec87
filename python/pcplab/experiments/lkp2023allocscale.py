"""lkp2023allocscale: c0a242394cb9 (alloc_factor scaling), page_fault2, LKP 2023.

The kernel test robot's report of "mm, page_alloc: scale the number of pages
that are batch allocated" against its parent 52166607ecc9: page_fault2, 52
processes on lkp-skl-fpga01 (pcplab/record/, split `fit`: `pcplab fit` reads
it). The two kernels differ only in the refill's alloc_factor: the model's
6.18 with pcp->high pinned at high_min (no auto-tuning yet), with and
without `no_alloc_scaling`.
"""

from __future__ import annotations

from pcplab.experiments._common import LkpChange, own_name

NAME = own_name(__name__)
FITTED = True
ORDER = 2023
_EXP = LkpChange(NAME, "allocscale", "record, fit split")
KINDS = _EXP.kinds
run, residuals, text, section = _EXP.run, _EXP.residuals, _EXP.text, _EXP.section
plots = _EXP.plots
