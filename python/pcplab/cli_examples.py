"""Example lines for each command's --help, as bcc tools end their usage."""

from __future__ import annotations


def _epilog(*lines: str) -> str:
    """Return an epilog click prints as written (a backspace line: no rewrap)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


EXAMPLES = {
    "pagesets": _epilog(
        "pcplab pagesets --host                 # this host's zones, model/kernel",
        "pcplab pagesets --managed-pages 4194304 --low-wmark 11623 --cpus 64",
        "pcplab pagesets --host --high-fraction 100 --json",
    ),
    "run": _epilog(
        "pcplab run --workload page_fault1 --tasks 2 --duration 5",
        "pcplab run --engine sim --machine skylake-ex --kernel 4.18 --batch 31 \\",
        "    --workload page_fault1 --duration 1      # Aaron Lu's 2018 row",
        "pcplab run --engine sim --machine epyc-7w83-vm --workload mmap_fill \\",
        "    --tasks 10 --scale-max-schedule 0:5,0.5:0  # the 2024 sysctl",
        "pcplab run --engine sim --machine meta-316cpu --workload page_fault1 \\",
        "    --tasks 64 --cross-free --policy pcp-buddy --seeds 3",
        "pcplab run --engine host --workload page_fault1 --tasks 4  # this kernel",
    ),
    "machines": _epilog(
        "pcplab machines                        # every profile",
        "pcplab machines broadwell-ep           # its facts and derived costs",
    ),
    "policies": _epilog(
        "pcplab policies",
        "pcplab run --engine sim --machine haswell-desktop --workload stress_vm \\",
        "    --policy uma-lockfail",
    ),
    "fidelity": _epilog(
        "pcplab fidelity --quick --no-left-out  # in-sample only, fast",
        "pcplab fidelity --out docs/fidelity.md # its tables, below its prose",
        "pcplab fidelity aaron2018 --folds fit/crossval.toml  # a new fit's folds",
        "pcplab fidelity aaron2018 --seeds 5    # means of 5 seeds, and their range",
    ),
    "fit": _epilog(
        "pcplab fit --max-nfev 14               # refit constants.toml",
        "pcplab fit --max-nfev 0 --cross-validate 4  # machine and thread folds",
        "pcplab fit --max-nfev 0 --jacobian     # is the fit at an optimum?",
        "pcplab fit --max-nfev 0 --seeds 5      # its cost on the means of 5 seeds",
        "pcplab fit --start middle --max-nfev 0 --cross-validate 12 \\",
        "    --leave-out Skylake-EX             # one fold from scratch; run again",
        "                                       # with another: both in fit/",
        "pcplab fit --start sample --samples 16 --max-nfev 0 \\",
        "    --cross-validate 12 --leave-out Skylake-EX  # from Sobol points",
        "pcplab fit --start middle --samples 8 --max-nfev 0 \\",
        "    --cross-validate 30 --leave-out aaron2018  # all of a mail's rows out",
    ),
    "calibrate": _epilog(
        "pcplab calibrate --out myhost.toml     # then --machine myhost.toml",
    ),
    "reproduce": _epilog(
        "pcplab reproduce all --quick           # every thread, report/index.html",
        "pcplab reproduce aaron2018 --machine cascade-lake  # one more machine",
        "pcplab reproduce policies --seeds 5 --out policies-report",
    ),
    "sweep": _epilog(
        "pcplab sweep --machine skylake-ex --workload page_fault1 \\",
        "    --param batch=31,63 --param kernel=4.18 --seeds 3 --duration 0.3",
        "                                       # the 2018 question, on 4.18:",
        "                                       # LKP's %change and stddev",
        "pcplab sweep --machine broadwell-ep --workload page_fault1 \\",
        "    --param kernel=6.6,6.18,6.19 --seeds 3 --format mmtests",
        "pcplab sweep --engine native --workload page_fault1 --param tasks=1,2 \\",
        "    --repeat 5 --csv runs.csv",
    ),
    "host info": _epilog("pcplab host info", "pcplab host info --json"),
    "host run": _epilog(
        "pcplab host run --workload page_fault1 --tasks 4 --duration 5",
        "pcplab host run --workload mmap_fill --tasks 2 --size-mib 512 --trace auto",
    ),
    "host sweep": _epilog(
        "pcplab host sweep --workload page_fault1 --tasks 4 --high-fraction 0,8,100",
    ),
    "host restore": _epilog(
        "pcplab host restore   # after a crash or kill -9",
        "pcplab host restore --sysctl vm.percpu_pagelist_high_fraction=0",
    ),
    "host overhead": _epilog(
        "pcplab host overhead --workload page_fault1 --tasks 2 --rounds 5",
    ),
}
