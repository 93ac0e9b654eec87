"""Every option of every command refuses a bad value before anything runs.

The table below has at least one bad value for each option and argument of
each command; test_the_table_covers_every_option walks click's command tree
so that a new option without a case fails. Every case gets the bad-input
contract of conftest.py (one stderr line `pcplab: error: ...; <allowed>`,
exit 2, empty stdout), and leaves no file behind.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
from pathlib import Path

import click
import pytest

from conftest import BAD_INPUT_LINE
from pcplab import engine, inputs, machines, runs
from pcplab.cli import cli
from pcplab.errors import BadInput

# Long enough that a run which wrongly starts hits the case's timeout.
FOREVER = ("--duration", "3600")
RUN = ("run", "--workload", "page_fault1", "--tasks", "2", *FOREVER)
SIM = ("run", "--engine", "sim", "--machine", "skylake-ex", "--workload")
SIM_RUN = (*SIM, "page_fault1", "--tasks", "2", *FOREVER)
HOST_RUN = ("host", "run", "--workload", "page_fault1", "--tasks", "1", *FOREVER)
# pcplab run on this kernel: a model knob given to it is refused.
RUN_ON_HOST = ("run", "--engine", "host", "--workload", "page_fault1", "--tasks", "1")
RESTORE = ("host", "restore", "--sysctl")
HF_NAME = "vm.percpu_pagelist_high_fraction"
HOST_SWEEP = ("host", "sweep", "--high-fraction", "0", "--workload", "page_fault1")
HOST_SWEEP = (*HOST_SWEEP, "--tasks", "1", *FOREVER)
OVERHEAD = ("host", "overhead", "--workload", "page_fault1", "--tasks", "1")
OVERHEAD = (*OVERHEAD, *FOREVER)
COMPARE = ("compare", "--workload", "page_fault1", "--tasks", "1", *FOREVER)
SWEEP = ("sweep", "--machine", "skylake-ex", "--workload", "page_fault1")
SWEEP = (*SWEEP, "--param", "tasks=1", *FOREVER)
HOST_ENGINE_SWEEP = ("sweep", "--workload", "page_fault1", "--param", "tasks=1")
HOST_ENGINE_SWEEP = (*HOST_ENGINE_SWEEP, *FOREVER)
# An address nothing listens on: a sweep that tries it waits 30 s to connect.
NOWHERE = ("--scheduler", "tcp://127.0.0.1:1")
MANUAL = ("pagesets", "--managed-pages", "1000", "--low-wmark", "10", "--cpus", "2")
FULL_WIDTH_4 = "\uff14"  # '４', which Python's int() takes for 4
ARABIC_4 = "\u0664"  # '٤'

# /etc by a path of .. from the test's directory (.. of / is / again).
ETC = "{tmp}" + "/.." * 64 + "/etc"

TUNE = ("tune", "--machine", "skylake-ex", "--workload", "page_fault1")
TUNE = (*TUNE, "--budget", "rmqueue_bulk.p99=1ms", "--duration", "3600")

# (command, option or ARGUMENT, argv, what the line must name). "{tmp}" in
# argv is a fresh empty directory of the test.
CASES: list[tuple[str, str, tuple[str, ...], str]] = [
    ("", "--version", ("--version=1",), "--version"),
    ("", "--help", ("--help=1",), "--help"),
    # pagesets
    ("pagesets", "--host", ("pagesets", "--host", "--cpus", "2"), "--cpus"),
    ("pagesets", "--host", ("pagesets", "--host=yes"), "--host"),
    ("pagesets", "--managed-pages", (*MANUAL, "--managed-pages", "0"), "managed_pages"),
    ("pagesets", "--managed-pages", (*MANUAL, "--managed-pages", "1e6"), "1e6"),
    ("pagesets", "--low-wmark", (*MANUAL, "--low-wmark", "1001"), "low_wmark"),
    ("pagesets", "--low-wmark", (*MANUAL, "--low-wmark", "-1"), "low_wmark"),
    ("pagesets", "--cpus", (*MANUAL, "--cpus", "0"), "cpus"),
    ("pagesets", "--cpus", (*MANUAL, "--cpus", ARABIC_4), "--cpus"),
    ("pagesets", "--high-fraction", (*MANUAL, "--high-fraction", "7"), "high_fraction"),
    ("pagesets", "--kernel", (*MANUAL, "--kernel", "5.0"), "'5.0' is not one of"),
    ("pagesets", "--json", (*MANUAL, "--json=1"), "--json"),
    ("pagesets", "--help", ("pagesets", "--help=1"), "--help"),
    # run
    ("run", "--engine", (*RUN, "--engine", "bogus"), "'bogus' is not one of"),
    ("run", "--workload", (*RUN, "--workload", "nosuch"), "workload 'nosuch'"),
    ("run", "--tasks", (*RUN, "--tasks", FULL_WIDTH_4), "--tasks"),
    ("run", "--tasks", (*RUN, "--tasks", "0"), "tasks 0"),
    ("run", "--machine", (*SIM_RUN, "--machine", "nosuch"), "machine 'nosuch'"),
    ("run", "--machine", (*RUN, "--machine", "skylake-ex"), "--machine"),
    ("run", "--duration", (*RUN, "--duration", "1e-12"), r"duration_s.*0\.001"),
    ("run", "--duration", (*RUN, "--duration", "nan"), "--duration"),
    ("run", "--warmup", (*RUN, "--warmup", "1e-9"), r"warmup_s.*0 or 0\.001"),
    ("run", "--warmup", (*RUN, "--warmup", "-1"), "warmup_s"),
    ("run", "--kernel", (*RUN, "--kernel", "5.0"), "'5.0' is not one of"),
    ("run", "--batch", (*RUN, "--batch", "0"), "batch 0"),
    ("run", "--high", (*RUN, "--batch", "63", "--high", "10"), r"high 10.*63\.\."),
    ("run", "--high", (*RUN, "--high", "10"), "zone's batch"),
    ("run", "--high-fraction", (*RUN, "--high-fraction", "7"), "high_fraction 7"),
    ("run", "--scale-max", (*RUN, "--scale-max", "7"), "scale_max 7"),
    (
        "run",
        "--scale-max-schedule",
        (*RUN, "--scale-max-schedule", f"0:{FULL_WIDTH_4}"),
        "--scale-max-schedule",
    ),
    ("run", "--relinquish", (*RUN, "--relinquish", "never"), "relinquish"),
    ("run", "--task-start", (*RUN, "--task-start", "lockstep"), "task-start"),
    ("run", "--no-free-scaling", (*RUN, "--no-free-scaling=yes"), "--no-free-scaling"),
    ("run", "--no-alloc-scaling", (*RUN, "--no-alloc-scaling=1"), "--no-alloc-scal"),
    ("run", "--pagevec-size", (*RUN, "--pagevec-size", "32"), "PAGEVEC_SIZE takes 1"),
    ("run", "--folios-put-release", (*RUN, "--folios-put-release=1"), "--folios-put"),
    (
        "run",
        "--folios-put-release",
        (*RUN_ON_HOST, "--no-folios-put-release"),
        "folios_put_release",
    ),
    ("run", "--config-debug-list", (*RUN, "--config-debug-list=1"), "--config-debug"),
    ("run", "--config-debug-list", (*RUN_ON_HOST, "--config-debug-list"), "debug_list"),
    ("run", "--memory-mib", (*RUN, "--memory-mib", "1"), "memory_mib 1"),
    ("run", "--size-mib", (*RUN, "--size-mib", "0"), "size_mib 0"),
    ("run", "--seed", (*RUN, "--seed", "-1"), "seed -1"),
    ("run", "--mode", (*RUN, "--mode", "fork"), "--mode.*'fork'.*'thread'"),
    ("run", "--cross-free", (*SIM_RUN, "--tasks", "3", "--cross-free"), "tasks, not 3"),
    ("run", "--nodes", (*SIM_RUN, "--nodes", "0,0"), "node 0 more than once"),
    ("run", "--nodes", (*SIM_RUN, "--nodes", "\uff10"), "--nodes"),
    ("run", "--nodes", (*SIM_RUN, "--nodes", "4"), "no node"),
    ("run", "--placement", (*RUN, "--placement", "random"), "--placement"),
    (
        "run",
        "--instrument",
        (*SIM_RUN, "--instrument", "function_graph:clear_page"),
        "the model traces no such function",
    ),
    (
        "run",
        "--instrument",
        (*SIM_RUN, "--instrument", "funclatency:rmqueue_bulk,free_pcppages_bulk"),
        "funclatency probes one function",
    ),
    ("run", "--instrument", (*SIM_RUN, "--instrument", "ftrace"), "unknown kind"),
    (
        "run",
        "--instrument",
        (*SIM_RUN, "--instrument", "function_graph-children"),
        "name the functions it traces",
    ),
    (
        "run",
        "--instrument",
        (*RUN, "--engine", "native", "--instrument", "perf-profile"),
        "charges no instrument",
    ),
    ("run", "--lock-stats", (*RUN, "--lock-stats", "bogus"), "--lock-stats"),
    ("run", "--lock-stats", (*SIM_RUN, "--lock-stats", "perf"), "--lock-stats"),
    ("run", "--profile", (*RUN, "--profile", "bogus"), "--profile"),
    ("run", "--profile", (*SIM_RUN, "--profile", "perf"), "--profile records"),
    ("run", "--json", (*RUN, "--json=1"), "--json"),
    ("run", "--output", (*RUN, "--output", "/dev/full"), "--output /dev/full"),
    ("run", "--output", (*RUN, "--output", "{tmp}"), "is a directory"),
    ("run", "--output", (*RUN, "--output", "{tmp}/no/r.json"), "does not exist"),
    ("run", "--output", (*RUN, "--output", "/proc/r.json"), "/proc"),
    ("run", "--help", ("run", "--help=1"), "--help"),
    # machines
    ("machines", "NAME", ("machines", "nosuch"), "machine 'nosuch'"),
    ("machines", "--json", ("machines", "--json=1"), "--json"),
    ("machines", "--help", ("machines", "--help=1"), "--help"),
    # calibrate
    ("calibrate", "--out", ("calibrate", "--out", "/dev/full"), "--out /dev/full"),
    ("calibrate", "--out", ("calibrate", "--out", "/proc/h.toml"), "/proc"),
    ("calibrate", "--name", ("calibrate", "--name", "../etc/x"), "--name"),
    ("calibrate", "--help", ("calibrate", "--help=1"), "--help"),
    # fidelity
    ("fidelity", "NAMES", ("fidelity", "nosuch"), "nosuch"),
    ("fidelity", "--quick", ("fidelity", "--quick=1"), "--quick"),
    ("fidelity", "--jobs", ("fidelity", "--jobs", "0"), "--jobs"),
    ("fidelity", "--left-out", ("fidelity", "--left-out=1"), "--left-out"),
    ("fidelity", "--out", ("fidelity", "--out", "/dev/full"), "--out /dev/full"),
    ("fidelity", "--output", ("fidelity", "--output", "{tmp}/no/f.json"), "--output"),
    ("fidelity", "--json", ("fidelity", "--json=1"), "--json"),
    ("fidelity", "--seeds", ("fidelity", "--seeds", "101"), "--seeds"),
    ("fidelity", "--folds", ("fidelity", "--folds", "{tmp}"), "--folds .*directory"),
    (
        "fidelity",
        "--folds",
        ("fidelity", "--folds", "{tmp}/c.toml", "--no-left-out"),
        "--no-left-out",
    ),
    ("fidelity", "--reference", ("fidelity", "--reference", "{tmp}"), "machines.csv"),
    ("fidelity", "--help", ("fidelity", "--help=1"), "--help"),
    # fit
    ("fit", "--constants", ("fit", "--constants", "bogus"), "bogus"),
    ("fit", "--max-nfev", ("fit", "--max-nfev", "-1"), "--max-nfev"),
    ("fit", "--seeds", ("fit", "--seeds", "0"), "--seeds"),
    ("fit", "--cross-validate", ("fit", "--cross-validate", "-1"), "--cross-validate"),
    ("fit", "--jacobian", ("fit", "--jacobian=1"), "--jacobian"),
    ("fit", "--scheduler", ("fit", "--scheduler", "h:99999"), "--scheduler"),
    ("fit", "--jobs", ("fit", "--jobs", FULL_WIDTH_4), "--jobs"),
    ("fit", "--start", ("fit", "--start", "zero"), "--start"),
    ("fit", "--samples", ("fit", "--samples", "-1"), "--samples"),
    ("fit", "--start", ("fit", "--start", "sample"), "--samples N"),
    ("fit", "--leave-out", ("fit", "--leave-out", "Skylake-EX"), "--cross-validate"),
    (
        "fit",
        "--leave-out",
        ("fit", "--leave-out", "nosuch", "--cross-validate", "1"),
        "--leave-out nosuch: no such fold",
    ),
    ("fit", "--out", ("fit", "--out", "/proc/fit"), "--out /proc/fit"),
    ("fit", "--out", ("fit", "--out", "/dev/full"), "not a directory"),
    ("fit", "--out", ("fit", "--out", ETC), "is /etc, a directory of the system"),
    ("fit", "--reference", ("fit", "--reference", "{tmp}"), "machines.csv"),
    ("fit", "--help", ("fit", "--help=1"), "--help"),
    # reproduce
    ("reproduce", "NAMES", ("reproduce", "nosuch"), "nosuch"),
    ("reproduce", "--quick", ("reproduce", "--quick=1"), "--quick"),
    ("reproduce", "--out", ("reproduce", "--out", "/proc/report"), "--out /proc"),
    ("reproduce", "--out", ("reproduce", "--out", "/dev/full"), "not a directory"),
    ("reproduce", "--out", ("reproduce", "--out", ETC), "is /etc, a directory of"),
    ("reproduce", "--jobs", ("reproduce", "--jobs", "0"), "--jobs"),
    (
        "reproduce",
        "--scheduler",
        ("reproduce", "--scheduler", "h:99999"),
        "--scheduler",
    ),
    ("reproduce", "--machine", ("reproduce", "--machine", "nosuch"), "nosuch"),
    ("reproduce", "--machine", ("reproduce", "host", "--machine", "x"), "aaron2018"),
    ("reproduce", "--reference", ("reproduce", "--reference", "{tmp}"), "machines.csv"),
    ("policies", "--json", ("policies", "--json=1"), "--json"),
    ("policies", "--help", ("policies", "--help=1"), "--help"),
    ("reproduce", "--seeds", ("reproduce", "--seeds", "0"), "--seeds"),
    ("reproduce", "--seeds", ("reproduce", "--seeds", "101"), "--seeds"),
    ("reproduce", "--help", ("reproduce", "--help=1"), "--help"),
    # sweep
    ("sweep", "--engine", (*SWEEP, "--engine", "bogus"), "'bogus' is not one of"),
    ("sweep", "--workload", (*SWEEP, "--workload", "nosuch"), "workload 'nosuch'"),
    ("sweep", "--machine", (*SWEEP, "--machine", "nosuch"), "machine 'nosuch'"),
    ("sweep", "--param", (*SWEEP, "--param", "batch"), "--param"),
    ("sweep", "--param", (*SWEEP, "--param", f"tasks={FULL_WIDTH_4}"), "tasks"),
    ("sweep", "--param", (*SWEEP, "--param", "bogus=1"), "bogus"),
    ("sweep", "--param", (*SWEEP, "--param", "batch=31,,63"), "an empty value"),
    ("sweep", "--param", (*SWEEP, "--param", "tasks=2"), "sets tasks twice"),
    ("sweep", "--duration", (*SWEEP, "--duration", "0"), "duration_s 0"),
    ("sweep", "--warmup", (*SWEEP, "--warmup", "1e-4"), "warmup_s"),
    ("sweep", "--jobs", (*SWEEP, "--jobs", "0"), "--jobs"),
    (
        "sweep",
        "--jobs",
        (*HOST_ENGINE_SWEEP, "--engine", "host", "--jobs", "2"),
        "--jobs 2 .*host engine measures this host's one kernel, one run at a time",
    ),
    (
        "sweep",
        "--scale-max-schedule",
        (*SWEEP, "--scale-max-schedule", "0:9"),
        "--scale-max-schedule",
    ),
    ("sweep", "--scheduler", (*SWEEP, "--scheduler", "no where"), "--scheduler"),
    (
        "sweep",
        "--scheduler",
        (*HOST_ENGINE_SWEEP, *NOWHERE, "--engine", "host"),
        "--scheduler runs on a Dask cluster's workers, but the host engine",
    ),
    (
        "sweep",
        "--scheduler",
        (*HOST_ENGINE_SWEEP, *NOWHERE, "--param", "engine=native,host"),
        "host engine measures this host's kernel",
    ),
    ("sweep", "--output", (*SWEEP, "--output", "/dev/full"), "--output /dev/full"),
    ("sweep", "--json", (*SWEEP, "--json=1"), "--json"),
    ("sweep", "--csv", (*SWEEP, "--csv", "{tmp}"), "--csv"),
    ("run", "--policy", (*SIM_RUN, "--policy", "lifo"), "unknown policy 'lifo'"),
    (
        "run",
        "--policy",
        (*SIM_RUN, "--policy", "event-driven", "--kernel", "6.6"),
        "6.18",
    ),
    ("run", "--cross-free-ratio", (*SIM_RUN, "--cross-free-ratio", "3"), "cross_free"),
    (
        "run",
        "--cross-free-ratio",
        (*SIM_RUN, "--cross-free", "--cross-free-ratio", "65"),
        "cross_free_ratio 65",
    ),
    ("run", "--seeds", (*SIM_RUN, "--seeds", "0"), "--seeds"),
    ("run", "--seeds", (*RUN, "--seeds", "2"), "--repeat N"),
    ("run", "--seeds", (*SIM_RUN, "--seeds", "2", "--seed", "3"), "--seed"),
    ("run", "--repeat", (*SIM_RUN, "--repeat", "2"), "--seeds N"),
    ("run", "--repeat", (*RUN, "--repeat", "x"), "--repeat"),
    ("sweep", "--policy", (*SWEEP, "--policy", "fifo"), "unknown policy 'fifo'"),
    ("sweep", "--seeds", (*SWEEP, "--seeds", "1"), "--seeds"),
    ("sweep", "--seeds", (*SWEEP, "--engine", "native", "--seeds", "3"), "--repeat"),
    ("sweep", "--seeds", (*SWEEP, "--seeds", "3", "--param", "seed=4"), "seed="),
    ("sweep", "--repeat", (*SWEEP, "--repeat", "3"), "--seeds N"),
    ("sweep", "--repeat", (*SWEEP, "--repeat", "101"), "--repeat"),
    ("sweep", "--format", (*SWEEP, "--format", "csv"), "--format"),
    (
        "sweep",
        "--format",
        (*SWEEP, "--format", "runtest", "--param", "batch=31"),
        "--param batch has no column",
    ),
    ("sweep", "--help", ("sweep", "--help=1"), "--help"),
    # tune
    ("tune", "--machine", (*TUNE, "--machine", "nosuch"), "machine 'nosuch'"),
    ("tune", "--engine", (*TUNE, "--engine", "bogus"), "'bogus' is not one of"),
    ("tune", "--engine", (*TUNE, "--engine", "host"), "--machine goes with"),
    ("tune", "--workload", (*TUNE, "--workload", "nosuch"), "workload 'nosuch'"),
    ("tune", "--workload", (*TUNE, "--workload", "mmap_fill:0"), "WEIGHT > 0"),
    ("tune", "--budget", (*TUNE, "--budget", "rmqueue_bulk.p98=1ms"), "unknown metric"),
    ("tune", "--budget", (*TUNE, "--budget", "fault.p99=3 weeks"), "--budget"),
    ("tune", "--budget", (*TUNE, "--budget", "rmqueue_bulk.p99=100"), "no unit"),
    ("tune", "--pareto", (*TUNE, "--pareto", "zone_lock.max"), "unknown metric"),
    ("tune", "--knob", (*TUNE, "--knob", "high"), "--knob"),
    ("tune", "--knob", (*TUNE, "--kernel", "4.18", "--knob", "scale_max"), "4.18"),
    ("tune", "--kernel", (*TUNE, "--kernel", "5.0"), "'5.0' is not one of"),
    ("tune", "--policy", (*TUNE, "--policy", "x"), "unknown policy 'x'"),
    ("tune", "--knob", (*TUNE, "--policy", "uma-lockfail", "--knob", "policy"), "one"),
    ("tune", "--tasks", (*TUNE, "--tasks", "0"), "tasks 0"),
    ("tune", "--duration", (*TUNE, "--duration", "0"), "duration_s 0"),
    ("tune", "--seeds", (*TUNE, "--seeds", "0"), "--seeds"),
    ("tune", "--trials", (*TUNE, "--trials", "0"), "--trials"),
    ("tune", "--jobs", (*TUNE, "--jobs", "0"), "--jobs"),
    ("tune", "--plot", (*TUNE, "--plot", "/dev/full"), "--plot /dev/full"),
    ("tune", "--json", (*TUNE, "--json=1"), "--json"),
    ("tune", "--help", ("tune", "--help=1"), "--help"),
    # compare
    ("compare", "--workload", (*COMPARE, "--workload", "nosuch"), "nosuch"),
    ("compare", "--tasks", (*COMPARE, "--tasks", ARABIC_4), "--tasks"),
    ("compare", "--duration", (*COMPARE, "--duration", "1e-6"), "duration_s"),
    ("compare", "--warmup", (*COMPARE, "--warmup", "7200"), "warmup_s"),
    ("compare", "--size-mib", (*COMPARE, "--size-mib", "0"), "size_mib"),
    ("compare", "--lock-stats", (*COMPARE, "--lock-stats", "bogus"), "--lock-stats"),
    ("compare", "--profile", (*COMPARE, "--profile", "bogus"), "--profile"),
    (
        "compare",
        "--profile",
        (*COMPARE, "--base", "batch=7", "--new", "batch=8", "--profile", "perf"),
        "--profile measures this kernel",
    ),
    ("compare", "--base", (*COMPARE, "--base", "batch=31,63"), "--base"),
    ("compare", "--base", (*COMPARE, "--base", "bogus=1", "--new", "batch=3"), "bogus"),
    ("compare", "--new", (*COMPARE, "--new", "batch"), "--param"),
    ("compare", "--new", (*COMPARE, "--base", "batch=7", "--new", "batch=7"), "same"),
    ("compare", "--seeds", (*COMPARE, "--seeds", "3"), "--base/--new"),
    ("compare", "--seeds", (*COMPARE, "--new", "batch=7", "--seeds", "3"), "--repeat"),
    ("compare", "--repeat", (*COMPARE, "--repeat", "1"), "--repeat"),
    ("compare", "--format", (*COMPARE, "--format", "html"), "--format"),
    ("compare", "--kernel", (*COMPARE, "--kernel", "5.0"), "'5.0' is not one of"),
    ("compare", "--kernel", (*COMPARE, "--kernel", "4.18"), "--kernel sets the model"),
    (
        "compare",
        "--scale-max-schedule",
        (*COMPARE, "--scale-max-schedule", "1:2:3"),
        "--scale-max-schedule",
    ),
    ("compare", "--model", (*COMPARE, "--model", "host"), "--model"),
    ("compare", "--machine", (*COMPARE, "--machine", "nosuch"), "nosuch"),
    ("compare", "--trace", (*COMPARE, "--trace", "dtrace"), "--trace"),
    ("compare", "--trace-seconds", (*COMPARE, "--trace-seconds", "1e-6"), "--trace"),
    ("compare", "--burst-gap-ns", (*COMPARE, "--burst-gap-ns", "0"), "--burst-gap"),
    ("compare", "--json", (*COMPARE, "--json=1"), "--json"),
    ("compare", "--output", (*COMPARE, "--output", "/dev/full"), "--output"),
    ("compare", "--help", ("compare", "--help=1"), "--help"),
    # host
    ("host", "--help", ("host", "--help=1"), "--help"),
    ("host info", "--no-probe", ("host", "info", "--no-probe=1"), "--no-probe"),
    ("host info", "--json", ("host", "info", "--json=1"), "--json"),
    ("host info", "--help", ("host", "info", "--help=1"), "--help"),
    ("host restore", "--help", ("host", "restore", "--help=1"), "--help"),
    ("host restore", "--sysctl", (*RESTORE, "vm.swappiness=1"), "allowed names"),
    ("host restore", "--sysctl", (*RESTORE, f"{HF_NAME}=x"), "no number"),
    (
        "host restore",
        "--sysctl",
        (*RESTORE, f"{HF_NAME}=0", "--sysctl", f"{HF_NAME}=8"),
        "twice",
    ),
    ("host run", "--workload", (*HOST_RUN, "--workload", "lock_repairman"), "lock"),
    ("host run", "--tasks", (*HOST_RUN, "--tasks", "0"), "tasks 0"),
    ("host run", "--lock-stats", (*HOST_RUN, "--lock-stats", "bogus"), "--lock-stats"),
    ("host run", "--profile", (*HOST_RUN, "--profile", "bogus"), "--profile"),
    ("host run", "--duration", (*HOST_RUN, "--duration", "1e-12"), "duration_s"),
    ("host run", "--warmup", (*HOST_RUN, "--warmup", "1e-12"), "warmup_s"),
    ("host run", "--size-mib", (*HOST_RUN, "--size-mib", "-1"), "size_mib"),
    ("host run", "--mode", (*HOST_RUN, "--mode", "fork"), "--mode"),
    ("host run", "--untimed", (*HOST_RUN, "--untimed=no"), "--untimed"),
    ("host run", "--high-fraction", (*HOST_RUN, "--high-fraction", "7"), "high.fract"),
    ("host run", "--trace", (*HOST_RUN, "--trace", "dtrace"), "--trace"),
    ("host run", "--trace-seconds", (*HOST_RUN, "--trace-seconds", "-1"), "--trace"),
    ("host run", "--burst-gap-ns", (*HOST_RUN, "--burst-gap-ns", "x"), "--burst-gap"),
    ("host run", "--json", (*HOST_RUN, "--json=1"), "--json"),
    ("host run", "--output", (*HOST_RUN, "--output", "/dev/zero"), "--output"),
    ("host run", "--help", ("host", "run", "--help=1"), "--help"),
    ("host sweep", "--high-fraction", (*HOST_SWEEP, "--high-fraction", "0,7"), "7"),
    ("host sweep", "--high-fraction", (*HOST_SWEEP, "--high-fraction", "8,"), "8,"),
    ("host sweep", "--workload", (*HOST_SWEEP, "--workload", "nosuch"), "nosuch"),
    ("host sweep", "--tasks", (*HOST_SWEEP, "--tasks", "1.5"), "--tasks"),
    ("host sweep", "--duration", (*HOST_SWEEP, "--duration", "0"), "duration_s"),
    ("host sweep", "--warmup", (*HOST_SWEEP, "--warmup", "inf"), "--warmup"),
    ("host sweep", "--size-mib", (*HOST_SWEEP, "--size-mib", "0"), "size_mib"),
    ("host sweep", "--mode", (*HOST_SWEEP, "--mode", "fork"), "--mode"),
    ("host sweep", "--untimed", (*HOST_SWEEP, "--untimed=1"), "--untimed"),
    ("host sweep", "--trace", (*HOST_SWEEP, "--trace", "dtrace"), "--trace"),
    ("host sweep", "--trace-seconds", (*HOST_SWEEP, "--trace-seconds", "1e-4"), "0 or"),
    ("host sweep", "--burst-gap-ns", (*HOST_SWEEP, "--burst-gap-ns", "0"), "--burst"),
    ("host sweep", "--json", (*HOST_SWEEP, "--json=1"), "--json"),
    ("host sweep", "--output", (*HOST_SWEEP, "--output", "{tmp}/x/y"), "--output"),
    ("host sweep", "--help", ("host", "sweep", "--help=1"), "--help"),
    ("host overhead", "--workload", (*OVERHEAD, "--workload", "nosuch"), "nosuch"),
    ("host overhead", "--tasks", (*OVERHEAD, "--tasks", "-2"), "tasks -2"),
    ("host overhead", "--duration", (*OVERHEAD, "--duration", "1e-5"), "duration_s"),
    ("host overhead", "--warmup", (*OVERHEAD, "--warmup", "-0.5"), "warmup_s"),
    ("host overhead", "--size-mib", (*OVERHEAD, "--size-mib", "2e3"), "--size-mib"),
    ("host overhead", "--mode", (*OVERHEAD, "--mode", "fork"), "--mode"),
    ("host overhead", "--untimed", (*OVERHEAD, "--untimed"), "--untimed"),
    ("host overhead", "--rounds", (*OVERHEAD, "--rounds", "0"), "--rounds"),
    ("host overhead", "--json", (*OVERHEAD, "--json=1"), "--json"),
    ("host overhead", "--output", (*OVERHEAD, "--output", "/proc/o"), "--output"),
    ("host overhead", "--help", ("host", "overhead", "--help=1"), "--help"),
]
HIGH_FRACTION = "/proc/sys/vm/percpu_pagelist_high_fraction"
# Cases of these commands need root to reach their check (the sysctl).
NEEDS_ROOT = ("host sweep",)


def _high_fraction() -> str | None:
    """Return vm.percpu_pagelist_high_fraction, None where there is none."""
    try:
        return Path(HIGH_FRACTION).read_text()
    except OSError:
        return None


def _commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> list[tuple[str, click.Command]]:
    """Return every command of the tree under COMMAND with its path."""
    found = [(" ".join(path), command)]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            found += _commands(sub, (*path, name))
    return found


def _name(param: click.Parameter) -> str:
    """Name PARAM as the table does: its longest flag, or its metavar."""
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    return (param.name or "").upper()


def _params() -> set[tuple[str, str]]:
    """Return (command, option) for every parameter of every command."""
    return {
        (path, _name(param))
        for path, command in _commands(cli)
        for param in command.get_params(click.Context(command))
    }


def test_the_table_covers_every_option():
    """Each option and argument of each command has a bad-value case, no stale one."""
    table = {(command, option) for command, option, _, _ in CASES}
    assert _params() - table == set(), "options without a bad-value case"
    assert table - _params() == set(), "cases of options that do not exist"


def test_every_number_option_takes_ascii_digits_only():
    """No numeric option uses click's INT or FLOAT, which take '４' and 'nan'."""
    loose = [
        (path, _name(param))
        for path, command in _commands(cli)
        for param in command.get_params(click.Context(command))
        if isinstance(param.type, click.types.IntParamType | click.types.FloatParamType)
        and not isinstance(param.type, inputs.NUMBER_TYPES)
    ]
    assert loose == []


@pytest.mark.parametrize(
    ("command", "option", "argv", "named"),
    CASES,
    ids=[f"{c or 'pcplab'} {o} {' '.join(a[-2:])}" for c, o, a, _ in CASES],
)
def test_bad_value_is_refused_before_anything_runs(
    bad_input, tmp_path, command, option, argv, named
):
    """One line naming the culprit and what is allowed, exit 2, nothing written.

    A command that writes sysctls refuses a user who is not root first: then
    the line it gives is that refusal.
    """
    if command in NEEDS_ROOT and os.geteuid() != 0:
        named = "needs root"
    empty = tmp_path / "empty"
    empty.mkdir()
    args = [a.replace("{tmp}", str(empty)) for a in argv]
    before = _high_fraction()
    line = bad_input(*args, timeout=30)
    assert re.search(named, line), line
    assert list(empty.iterdir()) == []  # no result, no probe, no directory
    assert _high_fraction() == before  # no sysctl touched


def test_a_damaged_crossval_in_out_is_refused_naming_out(bad_input, tmp_path):
    """A damaged crossval.toml in `fit --out` is one line naming --out.

    `fit --leave-out` reads --out's thread folds before any run; the file
    stays as it was, and the line names --out, not fidelity's --folds.
    """
    written = tmp_path / "crossval.toml"
    written.write_text("[left_out_thread.aaron2018]\nbogus_constant = 1.0\n")
    before = written.read_bytes()
    argv = ("fit", "--max-nfev", "0", "--cross-validate", "1")
    line = bad_input(*argv, "--leave-out", "aaron2018", "--out", tmp_path)
    assert re.search(rf"--out {re.escape(str(written))}: no \[left_out_thread", line)
    assert written.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crossval.toml"]


# --- machine profiles: Python's check, and the C parser behind it ---------

TOPOLOGY = """[topology]
sockets = 2
numa_nodes = 2
cores_per_socket = 8
smt = 2
ghz = 2.2
memory_gb = 64
"""
BAD_PROFILES = [
    ("smt = 2", "smt = 3", r"'smt' = 3 .*allowed 1, 2, 4, 8"),
    ("smt = 2", "smt = 16", r"'smt' = 16 .*allowed 1, 2, 4, 8"),
    (
        "ghz = 2.2",
        "ghz = 2.2\nturbo = 3",
        r"unknown key 'turbo' in \[topology\]; allowed",
    ),
    (
        "sockets = 2",
        'sockets = "2"',
        r"sockets = \"2\" is a string; sockets must be an",
    ),
    ("sockets = 2", "sockets = true", r"sockets = true is a boolean"),
    (
        "sockets = 2",
        "sockets = 2.0",
        r"sockets = 2.0 is a float; sockets must be an int",
    ),
    ("numa_nodes = 2", "numa_nodes = [2]", r"numa_nodes = \[2\] is an array"),
    ("cores_per_socket = 8", "cores_per_socket = 8.5", r"cores_per_socket = 8.5"),
    ("smt = 2", "smt = 2.5", r"smt = 2.5 is a float"),
    ("ghz = 2.2", 'ghz = "fast"', r"ghz = \"fast\" is a string; ghz must be a number"),
    ("memory_gb = 64", "memory_gb = false", r"memory_gb = false is a boolean"),
    ("ghz = 2.2", "ghz = nan", r"ghz = nan is not finite; ghz must be a number"),
    ("", "[hardware]\ndram_ns = inf", r"dram_ns = inf is not finite"),
    ("", "[costs]\nclear_page_ns = inf", r"clear_page_ns = inf is not a cost"),
    ("memory_gb = 64\n", "", r"lacks memory_gb"),
    (TOPOLOGY, "", r"has no \[topology\]"),
    ("", '[costs]\nclear_page_ns = "fast"', r"\[costs\] clear_page_ns = \"fast\""),
    ("", "[costs]\nclear_page_ns = true", r"\[costs\] clear_page_ns = true"),
    ("", "[costs]\nclear_page_ns = -1", r"'clear_page_ns' = -1 is out of range"),
    (
        "",
        "[costs]\nfault_base_ns = 1e308",
        r"'fault_base_ns' = 1e\+308 is out of range; allowed 0\.\.100000",
    ),
    (
        "",
        "[costs]\nmmap_ns = 2e6",
        r"'mmap_ns' = 2e\+06 is out of range; allowed 0\.\.1e",
    ),
    ("", "[costs]\nzone_lock_ns = 3", r"unknown cost 'zone_lock_ns' in \[costs\]"),
    (
        "[topology]",
        'lock = "mcs"\n[topology]',
        r"lock 'mcs' is unknown; allowed: queued",
    ),
    ("[topology]", "lock = 1\n[topology]", r"lock = 1 is an integer"),
    ("[topology]", "used_by = 1\n[topology]", r"'used_by' must be a list"),
]


@pytest.mark.parametrize(("old", "new", "named"), BAD_PROFILES)
def test_a_bad_profile_is_one_line_naming_the_key(bad_input, tmp_path, old, new, named):
    """A bad key, type or value of a profile: one line naming it, nothing run."""
    text = TOPOLOGY.replace(old, new, 1) if old else TOPOLOGY + new + "\n"
    profile = tmp_path / "m.toml"
    profile.write_text(text)
    out = tmp_path / "r.json"
    line = bad_input(*SIM[:4], str(profile), *SIM_RUN[5:], "--output", str(out))
    assert re.search(named, line), line
    assert not out.exists()


def test_a_binary_profile_is_one_line(bad_input, tmp_path):
    """A binary file given as a profile (here the engine itself) is one line."""
    binary = engine.engine_binary("sim")
    line = bad_input(*SIM[:4], str(binary), *SIM_RUN[5:])
    assert "cannot read machine profile" in line
    for junk in (b"\x00\x01\n\xff\xfe[topology\n\r\n", b"\n\n[[[\n\x00"):
        (tmp_path / "junk.toml").write_bytes(junk)
        bad_input(*SIM[:4], str(tmp_path / "junk.toml"), *SIM_RUN[5:])


def test_a_file_name_with_a_line_break_stays_one_line(bad_input, tmp_path):
    """A file name holding a newline is shown escaped, not on two lines."""
    line = bad_input(*SIM[:4], str(tmp_path / "a\nb.toml"), *SIM_RUN[5:])
    assert "a\\nb.toml" in line


def test_reproduce_checks_a_machine_profile_whole_before_it_starts(bad_input, tmp_path):
    """A profile only the engine refuses (3 SMT threads) is refused up front.

    aaron2018's --machine was only loaded, so the engine refused it at its
    first run, 25 s in, and left --out behind empty.
    """
    profile = tmp_path / "smt3.toml"
    profile.write_text(TOPOLOGY.replace("smt = 2", "smt = 3"))
    out = tmp_path / "rep"
    line = bad_input(
        "reproduce",
        "aaron2018",
        "--quick",
        "--machine",
        profile,
        "--out",
        out,
        timeout=10,
    )
    assert "'smt' = 3 is no SMT width" in line
    assert not out.exists()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"smt": 3}, r"'smt' = 3 is no SMT width; allowed 1, 2, 4, 8"),
        ({"turbo": 3}, r"unknown key 'turbo' in \[topology\]; allowed sockets"),
        ({"sockets": 2.5}, r"'sockets' needs an integer; allowed 1\.\.64"),
        ({"smt": "2"}, r"'smt' needs an integer; allowed 1, 2, 4, 8"),
        ({"ghz": True}, r"'ghz' needs a number; allowed 0\.1\.\.10"),
        ({"numa_nodes": 3}, r"numa_nodes 3 is neither a multiple nor a divisor"),
        ({"cores_per_socket": 1024, "smt": 8}, r"32768 CPUs.*; allowed at most"),
    ],
)
def test_the_engine_refuses_a_bad_topology_itself(change, named):
    """The C parser is a second guard: the API's JSON skips the TOML checks."""
    profile = machines.load_profile("skylake-ex")
    profile["topology"] = {**profile["topology"], **change}
    spec = {"engine": "sim", "workload": "page_fault1", "machine": profile}
    with pytest.raises(BadInput) as caught:
        engine.resolve(spec)
    line = caught.value.line
    assert re.fullmatch(r"pcplab: error: machine profile: .*; .*", line), line
    assert re.search(named, line), line


# --- the engines' JSON and command line, read without the front end -----

ENGINE_REQUESTS = [
    (
        '{"workload": "page_fault1", "tasks": 1, "workload": "nosuch"}',
        "the request gives key 'workload' twice; give each key once",
    ),
    (
        '{"workload": "page_fault1\\u0000x", "tasks": 1}',
        r"a string of the request holds a NUL \(\\u0000\); give strings",
    ),
    (
        '{"workload": "page_fault1", "tasks": 1, "args": {"x": 1, "x": 2}}',
        "the request gives key 'x' twice",
    ),
]


@pytest.mark.parametrize("engine_name", ["native", "sim", "host"])
@pytest.mark.parametrize(("request_text", "named"), ENGINE_REQUESTS)
def test_engines_refuse_repeated_keys_and_nul_characters(
    engine_name, request_text, named
):
    """A key given twice or a NUL in a string: one line and exit 2 from the engine.

    cJSON keeps both copies of a key (its lookups see the first) and ends a
    C string at an escaped NUL, so neither would otherwise be noticed.
    """
    line = _engine_refusal([engine.engine_binary(engine_name), "resolve"], request_text)
    assert re.search(named, line), line


def _engine_refusal(argv: list, stdin: str = "") -> str:
    """Run an engine binary; check it refused in one line; return the line."""
    proc = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert BAD_INPUT_LINE.match(line), line
    return line


def test_an_escaped_backslash_before_u0000_is_no_nul():
    """An escaped backslash before u0000 is text, not a NUL: not refused as one."""
    spec = {"workload": "page_fault1", "tasks": 1, "args": {"a\\u0000": 1}}
    with pytest.raises(BadInput, match="takes no args"):
        engine.resolve(spec)


@pytest.mark.parametrize("ops", ["-5", "0", "1000000001", "4x", ""])
def test_proptest_refuses_a_bad_ops_count(ops):
    """The --ops of proptest is an integer in 1..1e9; else one line and exit 2."""
    line = _engine_refusal([engine.engine_binary("native"), "proptest", "--ops", ops])
    assert f"--ops '{ops}' is no integer in range; allowed 1..1000000000" in line


# --- high against batch, durations, nodes: the engines' spec parsers ------


@pytest.mark.parametrize("engine_name", ["native", "sim"])
def test_high_below_the_batch_is_refused_by_the_engine(engine_name):
    """A high is 0 or at least the batch (given, or the zone's), in every engine."""
    spec = {"engine": engine_name, "workload": "page_fault1", "tasks": 2}
    if engine_name == "sim":
        spec["machine"] = machines.load_profile("skylake-ex")
    for knobs, named in (
        ({"batch": 63, "high": 10}, "high 10 is below batch 63"),
        ({"batch": 31, "high": 30}, "high 30 is below batch 31"),
        ({"high": 10}, "high 10 is below the zone's batch 63"),
    ):
        with pytest.raises(BadInput, match=re.escape(named) + r".*; allowed 0 or"):
            engine.resolve({**spec, **knobs})
    for knobs in ({"batch": 63, "high": 0}, {"batch": 63, "high": 63}, {"high": 63}):
        assert engine.resolve({**spec, **knobs})["high"] == knobs["high"]
    # A small zone has a small batch: a high that is at least that is fine.
    assert engine.resolve({**spec, "memory_mib": 16, "high": 2})["high"] == 2


@pytest.mark.parametrize("engine_name", ["native", "sim", "host"])
def test_durations_have_a_minimum(engine_name):
    """duration_s from 0.001 s; warmup_s (and the host's trace_s) 0 or from 0.001."""
    spec = {"engine": engine_name, "workload": "page_fault1", "tasks": 1}
    if engine_name == "sim":
        spec["machine"] = machines.load_profile("skylake-ex")
    for key, value in (("duration_s", 1e-12), ("duration_s", 0), ("warmup_s", 1e-4)):
        with pytest.raises(BadInput, match=rf"{key} .*; allowed .*0\.001\.\."):
            engine.resolve({**spec, key: value})
    resolved = engine.resolve({**spec, "duration_s": 0.001, "warmup_s": 0})
    assert (resolved["duration_s"], resolved["warmup_s"]) == (0.001, 0)


def test_a_nan_in_an_api_spec_is_bad_input():
    """JSON has no NaN: a spec holding one is refused before an engine starts."""
    for value in (float("nan"), float("inf")):
        with pytest.raises(BadInput, match="NaN or infinite number; give finite"):
            engine.resolve({"workload": "page_fault1", "tasks": 1, "duration_s": value})


def test_the_api_refuses_host_runs_on_a_dask_cluster():
    """A host spec sent to a scheduler is bad input, refused before connecting."""
    specs = [
        {"engine": engine_name, "workload": "page_fault1", "tasks": 1}
        for engine_name in ("sim", "host")
    ]
    with pytest.raises(BadInput, match="the host engine measures this host's"):
        runs.run_specs(specs, scheduler=NOWHERE[1])


def test_repeated_nodes_are_refused_by_the_engine():
    """A node given twice is refused by the engine too (the API has no --nodes)."""
    spec = {
        "engine": "sim",
        "workload": "page_fault1",
        "machine": machines.load_profile("skylake-ex"),
        "nodes": [1, 0, 1],
    }
    with pytest.raises(BadInput, match=r"node 1 is given twice; give each node"):
        engine.resolve(spec)


# --- output paths ---------------------------------------------------------


def test_dev_full_fails_every_write_and_is_refused():
    """/dev/full opens for appending and passes access(); every write fails.

    Even a write of nothing fails with ENOSPC. The check still does not
    probe devices by writing: it takes /dev/null and terminals and refuses
    every other device, so the JSON never lands on /dev/full, /dev/zero, a
    disk or /dev/mem.
    """
    fd = os.open("/dev/full", os.O_WRONLY | os.O_APPEND)
    try:
        for data in (b"", b"x"):
            with pytest.raises(OSError) as caught:
                os.write(fd, data)
            assert caught.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
    assert os.access("/dev/full", os.W_OK)
    for device in ("/dev/full", "/dev/zero"):
        with pytest.raises(BadInput, match="is a device that cannot hold the output"):
            inputs.check_output_file(device, "--output")
    inputs.check_output_file("/dev/null", "--output")


def test_output_file_checks_leave_nothing_behind(tmp_path):
    """A new file is probed and removed; an existing one is left as it was."""
    new = tmp_path / "new.json"
    inputs.check_output_file(str(new), "--output")
    assert not new.exists()
    old = tmp_path / "old.json"
    old.write_text("kept")
    mtime = old.stat().st_mtime_ns
    inputs.check_output_file(str(old), "--output")
    assert old.read_text() == "kept" and old.stat().st_mtime_ns == mtime
    dangling = tmp_path / "link.json"
    dangling.symlink_to(tmp_path / "target.json")
    inputs.check_output_file(str(dangling), "--output")
    assert not (tmp_path / "target.json").exists() and dangling.is_symlink()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    inputs.check_output_file(str(fifo), "--output")  # no reader yet: not opened
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fifo",
        "link.json",
        "old.json",
    ]


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("", "is empty"),
        ("{tmp}", "is a directory"),
        ("{tmp}/missing/r.json", "which does not exist"),
        ("{tmp}/old.json/r.json", r"cannot be reached \(Not a directory\)"),
        ("/proc/r.json", "is in /proc or /sys"),
        ("/proc/sys/vm/percpu_pagelist_high_fraction", "is in /proc or /sys"),
        ("/sys/kernel/mm/r.json", "is in /proc or /sys"),
    ],
)
def test_unwritable_output_files_are_refused(tmp_path, path, named):
    """Every kind of unwritable output file gets one line saying why."""
    (tmp_path / "old.json").write_text("{}")
    with pytest.raises(BadInput, match=named) as caught:
        inputs.check_output_file(path.replace("{tmp}", str(tmp_path)), "--output")
    assert "; give " in caught.value.line


def test_a_failing_probe_write_is_refused(tmp_path, monkeypatch):
    """A full file system (or a read-only one) fails the probe: refused, cleaned up.

    access() says yes to root everywhere and on a read-only mount, and an
    empty write succeeds on a full disk: only writing a byte tells.
    """

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(inputs.os, "write", full)
    with pytest.raises(BadInput, match=r"cannot be created \(No space left"):
        inputs.check_output_file(str(tmp_path / "r.json"), "--output")
    with pytest.raises(BadInput, match=r"cannot be written in \(No space left"):
        inputs.check_output_dir(str(tmp_path / "report"), "--out")
    assert [p.name for p in tmp_path.iterdir()] == ["report"]
    assert list((tmp_path / "report").iterdir()) == []


def test_output_directories_are_created_and_probed(tmp_path):
    """An --out directory is created up front; the probe file is gone afterwards."""
    deep = tmp_path / "a" / "b"
    assert inputs.check_output_dir(str(deep), "--out") == deep
    assert deep.is_dir() and list(deep.iterdir()) == []
    (tmp_path / "file").write_text("")
    for path, named in (
        (tmp_path / "file", "is not a directory"),
        (tmp_path / "file" / "sub", "cannot be created"),
        (Path("/proc/pcplab"), "is in /proc or /sys"),
    ):
        with pytest.raises(BadInput, match=named):
            inputs.check_output_dir(str(path), "--out")


def test_reproduce_refuses_an_unwritable_out_before_any_experiment(bad_input, tmp_path):
    """The --out of reproduce is checked (and created) before the first run."""
    (tmp_path / "file").write_text("")
    line = bad_input("reproduce", "aaron2018", "--out", str(tmp_path / "file" / "r"))
    assert "--out" in line
    bad_input("reproduce", "aaron2018", "--out", "/sys/kernel/pcplab-report")
    assert not Path("/sys/kernel/pcplab-report").exists()
