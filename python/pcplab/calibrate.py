"""`pcplab calibrate`: measure this host and write its sim machine profile.

The topology comes from sysfs; the hardware facts of the profile schema
(docs/machines.md) from measurements: LLC and DRAM load latency,
core-to-core line transfer, the store bandwidth of all CPUs and the clock
with one and with every CPU busy (bench-hostcost), LLC size, Meltdown and
hypervisor from the kernel; the measured costs from the native engine's
fast paths and zone->lock per-page costs (bench-fastpath), the hardware's
page clear as the kernel's fault runs it (bench/clearpage.c), page copy and
a read fault that maps the zero page (the trap: exc_page_fault, split into
its entry and its return by perf record where it runs), and, where
the host engine runs, the kernel's own page fault (first-touch latency and
throughput of page_fault1).
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import tomli_w

from pcplab import engine, guards, machines
from pcplab.errors import BadInput, EngineError
from pcplab.host import procfs

SYSFS_CPU = Path("/sys/devices/system/cpu")
SYSFS_NODE = Path("/sys/devices/system/node")


def _read(path: Path) -> str:
    """Return a sysfs file's text, stripped ('' if unreadable)."""
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def host_topology() -> dict[str, Any]:
    """Return this host's topology in machine-profile form."""
    packages, cores, threads = set(), set(), 0
    for cpu in sorted(SYSFS_CPU.glob("cpu[0-9]*")):
        topo = cpu / "topology"
        if not topo.is_dir():
            continue
        threads += 1
        package = _read(topo / "physical_package_id")
        packages.add(package)
        cores.add((package, _read(topo / "core_id")))
    sockets = max(1, len(packages))
    nodes = len(list(SYSFS_NODE.glob("node[0-9]*"))) or 1
    mhz = 0.0
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("cpu MHz"):
            mhz = float(line.split(":")[1])
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    return {
        "sockets": sockets,
        "numa_nodes": nodes if nodes % sockets == 0 or sockets % nodes == 0 else 1,
        "cores_per_socket": max(1, len(cores) // sockets),
        "smt": max(1, threads // max(1, len(cores))),
        "ghz": round(mhz / 1000, 2) if mhz else 2.0,
        "memory_gb": max(1, round(mem_kb / 1024 / 1024)),
    }


def _bench(name: str, *args: str) -> dict[str, Any]:
    """Run one of the installed bench programs; return its JSON."""
    binary = engine.bin_dir() / name
    proc = subprocess.run(
        [binary, *args], capture_output=True, text=True, check=False, timeout=600
    )
    if proc.returncode:
        raise EngineError(f"{name} failed: {proc.stderr.strip()[:200]}")
    return json.loads(proc.stdout)


KERNEL_RUN = {"engine": "host", "workload": "page_fault1", "tasks": 1, "duration_s": 2}


def _kernel_fault(profile_with: str = "off") -> dict[str, Any] | None:
    """Time the kernel's own page fault with the host engine, if it runs.

    PROFILE_WITH "perf": under `perf record -a -g`, as hostmodel profiles it.
    """
    from pcplab.host.execute import execute_run

    try:
        result = execute_run(dict(KERNEL_RUN), profile_with=profile_with)
    except Exception:  # noqa: BLE001 - no host engine: calibrate without it
        return None
    fault = (result.get("latency_ns") or {}).get("fault") or {}
    ops = (result.get("throughput") or {}).get("ops_per_s")
    if not fault.get("avg") or not ops:
        return None
    timed = {"fault_ns": float(fault["avg"]), "page_ns": 1e9 / float(ops)}
    if result.get("perf_profile"):
        timed["perf_profile"] = result["perf_profile"]
    return timed


# The zero-page loop's functions, by perf record (bench-hostcost zero): the
# whole exception, the fault's own handling inside it, where the return to
# user is sampled (cpu-clock: the user instruction after iret; cycles: the
# IRET-to-user path), and the system calls the loop makes outside its timing.
TRAP_CHILDREN = "asm_exc_page_fault"
TRAP_HANDLED = "handle_mm_fault"
TRAP_RETURN = ("user", "swapgs_restore_regs_and_return_to_usermode")
UNTIMED = "do_syscall_64"
ZERO_LOOP_S = "1"


def _zero_loop_profile() -> dict[str, Any] | str:
    """Profile bench-hostcost's zero-page loop with perf record; or say why not."""
    from pcplab.host import lockstat, profile

    why = profile.probe()
    if why:
        return why
    binary = engine.bin_dir() / "bench-hostcost"
    with tempfile.TemporaryDirectory(prefix="pcplab-calibrate-") as tmp:
        data = Path(tmp) / "perf.data"
        proc = subprocess.run(
            [lockstat.perf_binary(), "record", "-q", "-g", "-o", str(data)]
            + ["--", str(binary), "zero", ZERO_LOOP_S],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode:
            return f"perf record failed: {proc.stderr.strip()[-200:]}"
        try:
            return profile.shares(data, binary.name)
        except (RuntimeError, ValueError) as err:
            return str(err)


def trap_split(zero_ns: float, found: dict[str, Any] | str) -> tuple[dict, str]:
    """Return the trap's entry and return costs out of a zero-page fault.

    FOUND is the zero-page loop's perf profile (or why there is none). The
    fault's own handle_mm_fault (a zero-page pte) and the loop's untimed
    mmap and munmap are taken out; what the exception holds besides is its
    entry, what lands at the return its return. Without a profile the
    whole zero-page fault is the entry: an upper bound.
    """
    children = found.get("children", {}) if isinstance(found, dict) else {}
    if TRAP_CHILDREN not in children:
        why = found if isinstance(found, str) else f"no {TRAP_CHILDREN} samples"
        costs = {"fault_trap_ns": zero_ns, "fault_trap_return_ns": 0.0}
        return costs, f"the whole zero-page fault as the trap's entry ({why})"
    own = found["self"]
    handled = children.get(TRAP_HANDLED, 0.0)
    untimed = children.get(UNTIMED, 0.0)
    back = sum(max(own.get(f, 0.0), children.get(f, 0.0)) for f in TRAP_RETURN)
    entry = children[TRAP_CHILDREN] - handled
    timed = 100 - untimed
    costs = {
        "fault_trap_ns": round(zero_ns * entry / timed, 1),
        "fault_trap_return_ns": round(zero_ns * back / timed, 1),
    }
    return costs, (
        f"split by perf record ({found['event']}) of the zero-page loop: entry "
        f"{entry:.1f}%, return {back:.1f}%, {TRAP_HANDLED} {handled:.1f}%, "
        f"untimed system calls {untimed:.1f}%"
    )


def _kernel_pair(with_perf: bool) -> tuple[dict | None, dict | None]:
    """Time the kernel's fault, then (WITH_PERF) once more under perf record."""
    return _kernel_fault(), _kernel_fault("perf") if with_perf else None


# perf record's default frequency (tools/perf/builtin-record.c): the samples
# a second of each busy CPU, cpu-clock's as the PMU's cycles'.
PERF_SAMPLES_PER_S = 4000


def perf_sample(
    plain: list[dict[str, float] | None], profiled: list[dict[str, float] | None]
) -> tuple[dict[str, float], str]:
    """Return what one perf sample cost the kernel: perf_sample_ns, and how.

    PLAIN[i] and PROFILED[i] are page_fault1 runs one after the other,
    without and under `perf record -a -g`: a guest's page rate drifts over
    a calibration (down by a fifth, start to end, here), so each pair is
    compared, and the median pair's slowdown is spread over the samples a
    second of the task's CPU takes. A slowdown below zero (the drift) is
    no cost: 0.
    """
    both = zip(plain, profiled, strict=True)
    pairs = [(p["page_ns"], q["page_ns"]) for p, q in both if p and q]
    if not pairs:
        return {}, ""
    slower = sorted(traced / base - 1 for base, traced in pairs)
    median = slower[(len(slower) - 1) // 2]
    each = max(median, 0.0) * 1e9 / PERF_SAMPLES_PER_S
    runs = ", ".join(f"{1e9 / b:,.0f} -> {1e9 / t:,.0f}" for b, t in pairs)
    return {"perf_sample_ns": round(each, 1)}, (
        f"page_fault1 without, then under perf record -a -g ({runs} pages/s): "
        f"the median pair {median:+.1%}, at {PERF_SAMPLES_PER_S} samples a second"
    )


# The kernel's functions whose time the calibrated model charges apart from
# the fault's own code (FAULT_TERMS, UNMAP_TERMS), read from the perf-profile
# of calibrate's page_fault1 runs: the clear, the allocator around it less
# the buddy refill it calls (bench-fastpath times that), and the free path
# to the pcp lists less the drain it calls. 6.18 frees through
# free_unref_folios, 6.1 and 5.x through free_unref_page_list. x86 and
# arm64 ask for an anonymous fault's page with __GFP_ZERO
# (vma_alloc_zeroed_movable_folio(), before 6.3 __alloc_zeroed_user_highpage()),
# whatever init_on_alloc says, so its clear runs inside the allocator
# (post_alloc_hook()) and is taken out of the allocator's children; elsewhere
# where the clear runs is not known and the benches' figures stand.
ZEROED_BY_ALLOCATOR = ("x86_64", "aarch64")
CLEAR_FUNCTIONS = ("clear_page_erms", "clear_page_rep", "clear_page_orig")
ALLOC_FUNCTION, REFILL_FUNCTION = "get_page_from_freelist", "rmqueue_bulk"
FREE_FUNCTIONS = ("free_unref_folios", "free_unref_page_list")
DRAIN_FUNCTION = "free_pcppages_bulk"


# What a page of the profiled run paid the buddy under zone->lock: the
# refill and the drain over all its pages, the recycled ones too.
PAID_BUDDY = ("buddy_alloc_page_ns", "buddy_free_page_ns")


def _profiled_page(timed: dict[str, Any], page_ns: float) -> dict[str, float]:
    """Return one profiled run's clear, pcp paths and buddy paid, in ns a page.

    A share of the task's samples times PAGE_NS, the page of the run beside
    it without perf: the samples' own cost is in no share.
    """
    own, calls = timed["perf_profile"]["self"], timed["perf_profile"]["children"]
    clear = sum(own.get(f, 0.0) for f in CLEAR_FUNCTIONS)
    refill, drain = calls.get(REFILL_FUNCTION, 0.0), calls.get(DRAIN_FUNCTION, 0.0)
    alloc = calls.get(ALLOC_FUNCTION, 0.0) - refill - clear
    free = max(calls.get(f, 0.0) for f in FREE_FUNCTIONS) - drain
    shares = {"clear_page_ns": clear, "pcp_alloc_ns": alloc, "pcp_free_ns": free}
    shares |= dict(zip(PAID_BUDDY, (refill, drain), strict=True))
    return {k: share * page_ns / 100 for k, share in shares.items()}


def profile_costs(
    plain: list[dict[str, Any] | None], profiled: list[dict[str, Any] | None]
) -> tuple[dict[str, float], str]:
    """Return the kernel's clear and pcp paths from its perf-profile, and how.

    PLAIN[i] and PROFILED[i] are the page_fault1 pairs of perf_sample. The
    benches time a clear and a pcp list of their own; the kernel's, in
    the fault that clears a cold page with the allocator's checks around
    its list, took twice and five times theirs on an EPYC guest
    (docs/fidelity.md). Also what a page paid the buddy (PAID_BUDDY, not
    costs: _kernel_costs takes them out of the kernel's fault). Each is
    the median over the pairs; none off x86 and arm64, where a pair has
    no profile, or where a path came out empty (the buddy may: 6.18's
    pcp->high can hold a run's pages).
    """
    if platform.machine() not in ZEROED_BY_ALLOCATOR:
        return {}, ""
    found = [
        _profiled_page(q, p["page_ns"])
        for p, q in zip(plain, profiled, strict=True)
        if p and q and q.get("perf_profile")
    ]
    paths = [{k: v for k, v in page.items() if k not in PAID_BUDDY} for page in found]
    if not found or any(min(page.values()) <= 0 for page in paths):
        return {}, ""
    costs = {k: round(statistics.median(f[k] for f in found), 1) for k in found[0]}
    said = ", ".join(f"{k} {v:g}" for k, v in costs.items() if k not in PAID_BUDDY)
    paid = ", ".join(f"{k} {costs[k]:g}" for k in PAID_BUDDY)
    return costs, (
        f"{said}: the kernel's perf-profile in page_fault1 under perf record, "
        f"the median of {len(found)} runs (self clear_page_*; children "
        f"{ALLOC_FUNCTION} less {REFILL_FUNCTION} and the clear; children "
        f"{FREE_FUNCTIONS[0]} less {DRAIN_FUNCTION}), each share times the "
        f"page of the run beside it without perf; the buddy as its pages paid "
        f"it, taken out of the fault ({paid}: children {REFILL_FUNCTION}, "
        f"{DRAIN_FUNCTION})"
    )


def median_fault(
    runs: list[dict[str, float] | None],
) -> tuple[dict[str, float] | None, str]:
    """Return the kernel run of median page rate among RUNS, and what they were.

    A guest's speed moves with its host's load: two calibrations a minute
    apart timed page_fault1 30% apart (docs/fidelity.md), so the kernel's
    fault is timed at the start, the middle and the end of a calibration.
    """
    timed = sorted((r for r in runs if r), key=lambda r: r["page_ns"])
    if not timed:
        return None, ""
    rates = ", ".join(f"{1e9 / r['page_ns']:,.0f}" for r in timed)
    return timed[(len(timed) - 1) // 2], (
        f"the median of {len(timed)} runs over the calibration ({rates} pages/s)"
    )


def _llc_bytes() -> int:
    """Return the size of CPU 0's last-level cache from sysfs (0 if unknown)."""
    sizes = []
    for index in sorted((SYSFS_CPU / "cpu0" / "cache").glob("index[0-9]*")):
        text = _read(index / "size")
        if text[:-1].isdigit() and text[-1] in "KM":
            sizes.append(int(text[:-1]) << (10 if text[-1] == "K" else 20))
    return max(sizes, default=0)


def _host_flags() -> dict[str, Any]:
    """Return what the kernel says of this CPU: model, Meltdown, ERMS, hypervisor."""
    model, flags = "", ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and not model:
            model = value.strip()
        if key.strip() == "flags" and not flags:
            flags = value
    meltdown = _read(SYSFS_CPU / "vulnerabilities" / "meltdown")
    return {
        "cpu_model": model,
        "meltdown": bool(meltdown) and not meltdown.startswith("Not affected"),
        "vm_guest": "hypervisor" in flags.split(),
        "erms": "erms" in flags.split(),
    }


def _clocks(
    topology: dict[str, Any], turbo: float, all_core: float
) -> dict[str, float]:
    """Return the measured turbos, lowering the base clock to fit under them.

    /proc/cpuinfo's MHz is the nominal clock; a guest whose host is busy, or
    a part held at a power limit, may run below it, and the measured clock
    is what its work pays. One busy core is never slower than all of them.
    """
    topology["ghz"] = min(topology["ghz"], all_core)
    return {"turbo_ghz": max(turbo, all_core), "all_core_ghz": all_core}


def busy() -> str | None:
    """Say how busy this host is when it is too busy to measure, else None.

    Every measurement here times one or two CPUs against the clock: with
    more runnable tasks than CPUs they time the sharing (a 2-CPU guest at a
    load of 11 measured a 0.5 GHz clock and a 5 us clear_page), not the part.
    """
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load <= 0.5 * cpus:
        return None
    return f"load average {load:.1f} on {cpus} CPUs"


def _clear_source(hw: dict[str, Any]) -> str:
    """Say how clear_page_ns was timed, beside the timings it is not."""
    clear = hw["clear_page"]
    variants = clear["variants_ns"]
    return (
        f"clear_page_ns: {clear['insn']} on mapped, cold large pages, one per "
        f"{clear['gap_ns']} ns, as the fault clears (back to back "
        f"{variants['streaming_stos_4k']} ns, on first touch "
        f"{variants['faulting']} ns)"
    )


def measure() -> dict[str, Any]:
    """Measure this host; return the profile (without writing it)."""
    load = busy()
    if load:
        guards.warn(
            "this host is busy while calibrating",
            [f"{load}: the clocks, latencies and costs measure the sharing"],
        )
    # the kernel's fault at the start, the middle and the end (median_fault),
    # each beside a run under perf record where perf runs (perf_sample)
    from pcplab.host import profile as host_profile

    with_perf = not host_profile.probe()
    pairs = [_kernel_pair(with_perf)]
    fast = _bench("bench-fastpath")
    topology = host_topology()
    llc = _llc_bytes()
    # CPUs 0 and 1: two cores of the first socket in Linux's numbering
    other = "1" if (os.cpu_count() or 1) > 1 else "0"
    hw = _bench("bench-hostcost", "0", other, str(llc or 8 << 20))
    per_page = {row["pages"]: row for row in fast["zone_lock_per_page_ns"]}[63]
    pcp_half = fast["pcp_alloc_free_pair_ns"] / 2
    costs = {
        "clear_page_ns": hw["clear_page_ns"],
        "copy_page_ns": hw["copy_page_ns"],
        "pcp_alloc_ns": round(pcp_half, 2),
        "pcp_free_ns": round(pcp_half, 2),
        "buddy_alloc_page_ns": per_page["rmqueue_bulk"],
        "buddy_free_page_ns": per_page["free_pcppages_bulk"],
    }
    pairs.append(_kernel_pair(with_perf))
    sources = ["bench-fastpath (native engine)", "bench-hostcost", _clear_source(hw)]
    if load:
        sources.append(f"measured busy ({load})")
    if hw.get("zero_fault_ns", -1) > 0:
        trap, how = trap_split(hw["zero_fault_ns"], _zero_loop_profile())
        costs.update(trap)
        sources.append(f"bench-hostcost zero-page read faults (the trap), {how}")
    flags = _host_flags()
    # Measured facts; what one socket cannot show (another socket's DRAM and
    # cores) comes from the microarchitecture table.
    hardware: dict[str, Any] = {
        "llc_ns": hw["llc_ns"],
        "dram_ns": hw["dram_ns"],
        "socket_ns": hw["line_xfer_ns"],
        "mem_gbs": round(hw["store_gbs"] / topology["sockets"], 2),
        "meltdown": flags["meltdown"],
        "erms": flags["erms"],
        "vm_guest": flags["vm_guest"],
    }
    if llc:
        hardware["llc_mb"] = round(llc / (1 << 20), 2)
    if hw.get("all_core_ghz", -1) > 0:  # the adds run on this architecture
        hardware.update(_clocks(topology, hw["turbo_ghz"], hw["all_core_ghz"]))
        sources.append("bench-hostcost dependent adds (the clock under load)")
    try:
        machines.find_uarch(flags["cpu_model"])
    except BadInput:
        hardware["uarch"] = "generic"
        sources.append(f"'{flags['cpu_model']}' is in no uarch.toml row: generic")
    profile = {
        "name": "host",
        "description": f"{hw['cpu_model']}, calibrated on {platform.node()} "
        f"({platform.release()}) {time.strftime('%Y-%m-%d')}",
        "cpu_model": flags["cpu_model"],
        "topology": topology,
        "hardware": hardware,
        "costs": costs,
    }
    derived = _drop_refused(profile, sources)
    pairs.append(_kernel_pair(with_perf))
    plain, profiled = (list(runs) for runs in zip(*pairs, strict=True))
    kernel, runs = median_fault(plain)
    # the kernel runs these costs rest on: a guest's page rate drifts over
    # minutes, so a model calibrated here follows the runs timed here
    # (hostmodel prints them beside the kernel's own)
    timing = []
    kernel_paths, how_paths = profile_costs(plain, profiled) if with_perf else ({}, "")
    paid = {k: kernel_paths.pop(k) for k in PAID_BUDDY if k in kernel_paths}
    if kernel_paths:  # the kernel's own clear and pcp paths replace the benches'
        profile["costs"].update(kernel_paths)
        sources[sources.index(_clear_source(hw))] += " (not charged: kernel_timing's)"
        derived = _drop_refused(profile, sources)
    if kernel is not None:  # a profiled run implies a plain one: paths need it
        profile["costs"].update(_kernel_costs(derived | paid, kernel))
        closed, how_closed = close_on_kernel(profile, kernel)
        profile["costs"].update(closed)
        timed = f"host engine page_fault1 (the kernel's own faults), {runs}"
        timing += [t for t in (timed, how_paths, how_closed) if t]
    if with_perf:
        sample, how = perf_sample(plain, profiled)
        profile["costs"].update(sample)
        timing.append(f"perf_sample_ns: {how}" if how else "no perf sample timed")
    # the benches' facts in source, the kernel runs in kernel_timing: each once
    profile["source"] = "pcplab calibrate: " + "; ".join(sources)
    if timing:
        profile["kernel_timing"] = "; ".join(timing)
    return profile


# What the model charges apart from handle_mm_fault's own code in a fault,
# and from the unmap's in the rest of a page (enum cost_kind's names).
FAULT_TERMS = (
    "fault_trap_ns",
    "fault_trap_return_ns",
    "clear_page_ns",
    "pcp_alloc_ns",
    "buddy_alloc_page_ns",
    "lru_add_page_ns",
)
UNMAP_TERMS = ("pcp_free_ns", "buddy_free_page_ns", "lru_del_page_ns")


def _kernel_costs(derived: dict[str, float], kernel: dict[str, float]) -> dict:
    """Return fault_base_ns and unmap_page_ns: the kernel's, less the model's terms.

    The kernel's fault (and the rest of its page) holds what the model
    charges apart: the trap, the clear, the pcp lists, the buddy's page and
    the LRU's. Each as the engine resolves it for the page_fault1 run that
    timed the kernel (DERIVED), so the buddy's cold struct pages are that
    run's; the buddy's terms, where the kernel's profile gave them, as its
    pages paid them (PAID_BUDDY: a page the pcp lists recycled paid none).
    """
    base = kernel["fault_ns"] - sum(derived[k] for k in FAULT_TERMS)
    rest = kernel["page_ns"] - kernel["fault_ns"] - sum(derived[k] for k in UNMAP_TERMS)
    return {
        "fault_base_ns": round(max(base, 0.0), 1),
        "unmap_page_ns": round(max(rest, 0.0), 1),
    }


# The sim run the calibrated costs must reproduce: the kernel's page_fault1
# above (KERNEL_RUN), on the engine's default generation, as resolved. Ten
# virtual seconds (0.2 s of CPU): a page rate over one second moves by 3-5%
# with how many munmap lumps (128 MiB each) fall inside it.
CLOSURE_RUN = {
    "engine": "sim",
    "workload": "page_fault1",
    "tasks": 1,
    "duration_s": 10.0,
    "warmup_s": 0.5,
}


# How close the closure brings the sim's fault and page to the kernel's,
# and the most sim runs it takes: the terms add but not exactly (a slower
# fault lets 6.18's pcp->high decay over more ticks a page), so it steps
# again where one step left more than this.
CLOSURE_TOLERANCE, CLOSURE_STEPS = 0.001, 3


def _closure_run(profile: dict[str, Any]) -> tuple[float, float]:
    """Return the fault and the page (ns) of CLOSURE_RUN on PROFILE."""
    spec = {**CLOSURE_RUN, "machine": machines.profile_of(profile, "host")}
    if procfs.build_option("CONFIG_DEBUG_LIST")["enabled"]:
        spec["config_debug_list"] = True
    result = engine.run(spec)
    fault = float(result["latency_ns"]["fault"]["avg"])
    return fault, 1e9 / float(result["throughput"]["pages_per_s"])


def close_on_kernel(
    profile: dict[str, Any], kernel: dict[str, float]
) -> tuple[dict[str, float], str]:
    """Return fault_base_ns and unmap_page_ns that make the sim run KERNEL's rate.

    _kernel_costs takes each term the model charges apart out of the
    kernel's fault; what the sim's run then pays differs from what the
    kernel's did (without a profile of the kernel, every page is taken
    to meet the buddy; where the pcp lists recycle a run's pages, as
    6.18's auto-tuned pcp->high does page_fault1's 128 MiB, it pays none,
    and the calibrated model ran 10% fast on an EPYC guest). So the sim
    runs page_fault1 on PROFILE's costs, built as this kernel was, and
    its miss of the kernel's fault and of the rest of a page goes into
    the fault's and the unmap's own code, until within CLOSURE_TOLERANCE.
    """
    costs = dict(profile["costs"])
    runs = []
    for _ in range(CLOSURE_STEPS):
        fault, page = _closure_run({**profile, "costs": costs})
        runs.append((fault, page))
        miss = kernel["fault_ns"] - fault
        rest = kernel["page_ns"] - kernel["fault_ns"] - (page - fault)
        if max(abs(miss), abs(rest)) <= CLOSURE_TOLERANCE * kernel["page_ns"]:
            break
        costs["fault_base_ns"] = round(max(costs["fault_base_ns"] + miss, 0.0), 1)
        costs["unmap_page_ns"] = round(max(costs["unmap_page_ns"] + rest, 0.0), 1)
    closed = {k: costs[k] for k in ("fault_base_ns", "unmap_page_ns")}
    moved = ", ".join(f"{k} {closed[k] - profile['costs'][k]:+.1f}" for k in closed)
    fault, page = runs[0]
    return closed, (
        f"closed on the sim: its page_fault1 on the derived costs ran "
        f"{1e9 / page:,.0f} pages/s (fault {fault:,.0f} ns) against the "
        f"kernel's {1e9 / kernel['page_ns']:,.0f} ({kernel['fault_ns']:,.0f} ns): "
        f"{moved} in {len(runs)} runs"
    )


# How the engine names a value it refuses (src/arch/sim/machine.c).
REFUSED = re.compile(r"'(\w+)' = (\S+) is out of range")


def _drop_refused(profile: dict[str, Any], sources: list[str]) -> dict[str, float]:
    """Drop each measured fact the engine refuses; return the costs it derives.

    A noisy host can measure nonsense (an "LLC hit" of 400 ns on a guest
    whose neighbours share the cache); the engine's ranges are the one
    judge (the uarch table's fact stands in), and SOURCES says which
    measurement was replaced. The costs are those of the run _kernel_fault
    times: page_fault1, one task.
    """
    spec = {"engine": "sim", "workload": "page_fault1", "tasks": 1}
    while True:
        try:
            machine = machines.profile_of(profile, "host")
            resolved = engine.resolve({**spec, "machine": machine})
            return resolved["machine_detail"]["costs"]
        except BadInput as exc:
            refused = REFUSED.search(str(exc))
            if not refused or refused[1] not in profile["hardware"]:
                raise
            del profile["hardware"][refused[1]]
            name, value = refused[1], refused[2]
            sources.append(f"measured {name} {value} refused: the table's")


def calibrate(out: str | None, name: str) -> Path:
    """Measure this host and write its profile to OUT or the user's dir."""
    profile = measure()
    profile["name"] = name
    path = Path(out) if out else machines.user_dir() / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(tomli_w.dumps(profile))
    os.replace(tmp, path)
    return path
