"""Run the benchmarks and record their JSON in bench/results/.

Benchmarks are not tests: CI machines are noisy, so targets are read from
these files (and from README/issue notes), never asserted in the test suite.

    python3 bench/run.py            # every benchmark
    python3 bench/run.py fastpath   # one of them
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from pcplab import engine, machines

RESULTS = Path(__file__).resolve().parent / "results"


def host() -> dict[str, str]:
    """Describe the machine the benchmark ran on."""
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {
        "cpu_model": model,
        "kernel": platform.release(),
        "machine": platform.node(),
    }


# Runs of each measurement: this machine is a VM whose speed swings by up to
# 1.8x within minutes (a busy neighbour on the host), so one run says little.
# The best run is the code's cost on a quiet host; the median is typical.
RUNS = 5


def _runs(name: str) -> list[dict]:
    """Run bench binary NAME RUNS times; return each run's JSON."""
    binary = engine.bin_dir() / name
    runs = []
    for _ in range(RUNS):
        out = subprocess.run([binary], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    return runs


def fastpath() -> dict:
    """PCP alloc+free pair and zone->lock per-page costs (bench/fastpath.c)."""
    runs = _runs("bench-fastpath")
    # the run with the lowest median round; its fastest round beside it
    best = min(runs, key=lambda r: r["pcp_alloc_free_pair_ns"])
    result = dict(best)
    result["runs"] = RUNS
    result["pair_ns_median_of_runs"] = statistics.median(
        r["pcp_alloc_free_pair_ns"] for r in runs
    )
    result["pair_ns_each_run"] = [r["pcp_alloc_free_pair_ns"] for r in runs]
    result["target_pair_ns"] = 20
    return result


# The checks of bench/listcheck.c, each a figure in every run.
LIST_CHECKS = ("add_l1", "del_l1", "add_cold", "del_cold")


def listcheck() -> dict:
    """Cycles of one CONFIG_DEBUG_LIST check, in L1 and cold (bench/listcheck.c)."""
    runs = _runs("bench-listcheck")
    medians = {
        check: statistics.median(r[check]["cycles_per_call"] for r in runs)
        for check in LIST_CHECKS
    }
    return {
        "runs": runs,
        "cycles_per_call_median_of_runs": {c: round(m, 2) for c, m in medians.items()},
    }


def _sim_request(machine: str, **spec: object) -> dict:
    """Build the JSON request of a sim run of MACHINE's profile."""
    return {"engine": "sim", "machine": machines.load_profile(machine), **spec}


def _start_sim(binary: Path, request: dict) -> tuple[subprocess.Popen, IO[bytes]]:
    """Start `BINARY run` on REQUEST; return it and the file of its output."""
    out = tempfile.TemporaryFile()
    proc = subprocess.Popen([binary, "run"], stdin=subprocess.PIPE, stdout=out)
    proc.stdin.write(json.dumps(request).encode())
    proc.stdin.close()
    return proc, out


def _finish_sim(
    proc: subprocess.Popen, out_file: IO[bytes], usage: os.struct_rusage, status: int
) -> dict:
    """Collect a reaped run's result, host CPU time and peak RSS."""
    proc.returncode = os.waitstatus_to_exitcode(status)
    with out_file:
        out_file.seek(0)
        out = out_file.read()
    if proc.returncode:
        raise RuntimeError(f"{proc.args[0]} failed with status {proc.returncode}")
    return {
        "result": json.loads(out),
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_mib": usage.ru_maxrss / 1024,
    }


def _timed_sim(machine: str, **spec: object) -> dict:
    """Run pcplab-sim once; return its result with host CPU time and peak RSS."""
    proc, out = _start_sim(
        engine.bin_dir() / "pcplab-sim", _sim_request(machine, **spec)
    )
    _, status, usage = os.wait4(proc.pid, 0)
    return _finish_sim(proc, out, usage, status)


# The benchmarked run: will-it-scale page_fault1 on all 192 CPUs of the
# 2018 thread's Skylake-EX, 2.5 virtual seconds.
SIM_RUN = {
    "workload": "page_fault1",
    "kernel": "4.18",
    "duration_s": 2.0,
    "warmup_s": 0.5,
}


def sim() -> dict:
    """Measure the simulator: real-time factor, page ops per host s, peak RSS."""
    virtual = SIM_RUN["duration_s"] + SIM_RUN["warmup_s"]
    sky = [_timed_sim("skylake-ex", **SIM_RUN) for _ in range(RUNS)]
    cpu = sorted(run["cpu_s"] for run in sky)
    pages = sky[0]["result"]["throughput"]["pages_per_s"] * virtual
    meta = _timed_sim("meta-316cpu", workload="page_fault1", duration_s=0.5)
    return {
        "skylake_ex_page_fault1_192_tasks": {
            "virtual_s": virtual,
            "runs": RUNS,
            "host_cpu_s_each_run": [round(c, 2) for c in cpu],
            "real_time_factor_best": round(virtual / cpu[0], 3),
            "real_time_factor_median": round(virtual / statistics.median(cpu), 3),
            "sim_page_ops_per_host_s_best": round(pages / cpu[0]),
            "max_rss_mib": round(max(run["max_rss_mib"] for run in sky), 1),
        },
        "meta_316cpu_page_fault1": {
            "host_cpu_s": round(meta["cpu_s"], 2),
            "max_rss_mib": round(meta["max_rss_mib"], 1),
        },
        "target_real_time_factor": 0.5,
        "target_max_rss_mib": 3072,
    }


# The simulator against an older build of it, each on its own spec: pairs
# run at the same time on two cores, so that both share the host's hour
# (this VM's speed swings by up to 1.8x within minutes), the first to start
# alternating. $PCPLAB_BASE_SIM names the older pcplab-sim; $PCPLAB_BASE_SPEC
# the benchmarked request as that commit's profiles write it
# (docs/architecture.md, "Keeping the simulator fast").
PAIRS = 10


def _run_pair(runs: list[tuple[str, Path, dict]]) -> dict[str, dict]:
    """Start every run at once, in the given order; return results by name."""
    procs = {}
    for name, binary, request in runs:
        proc, out = _start_sim(binary, request)
        procs[proc.pid] = (name, proc, out)
    done = {}
    while len(done) < len(procs):
        pid, status, usage = os.wait4(-1, 0)
        name, proc, out = procs[pid]
        done[name] = _finish_sim(proc, out, usage, status)
    return done


def sim_against() -> dict:
    """CPU time of the benchmarked sim run against an older build's, in pairs."""
    base = Path(os.environ.get("PCPLAB_BASE_SIM", ""))
    base_spec = Path(os.environ.get("PCPLAB_BASE_SPEC", ""))
    if not base.is_file() or not base_spec.is_file():
        raise SystemExit(
            "bench: sim_against needs $PCPLAB_BASE_SIM (an older pcplab-sim) "
            "and $PCPLAB_BASE_SPEC (its request JSON)"
        )
    runs = [
        (
            "this",
            engine.bin_dir() / "pcplab-sim",
            _sim_request("skylake-ex", **SIM_RUN),
        ),
        ("base", base, json.loads(base_spec.read_text())),
    ]
    pairs = [_run_pair(runs if i % 2 == 0 else runs[::-1]) for i in range(PAIRS)]
    ratios = sorted(pair["this"]["cpu_s"] / pair["base"]["cpu_s"] for pair in pairs)
    pages = {
        name: pairs[0][name]["result"]["throughput"]["pages_per_s"]
        for name in ("this", "base")
    }
    median = statistics.median(ratios)
    return {
        "base": str(base),
        "pairs": PAIRS,
        "cpu_s_each_pair_this_base": [
            [round(pair["this"]["cpu_s"], 2), round(pair["base"]["cpu_s"], 2)]
            for pair in pairs
        ],
        "cpu_ratio_median": round(median, 3),
        "cpu_ratio_range": [round(ratios[0], 3), round(ratios[-1], 3)],
        "pages_per_virtual_s": pages,
        "cpu_per_page_ratio_median": round(median * pages["base"] / pages["this"], 3),
        "target_cpu_ratio_max": 1.1,
    }


# The host engine's perf methods (docs/host-engine.md), each beside an
# untraced will-it-scale run in the same minute: $WILL_IT_SCALE names a built
# page_fault1_processes (github.com/antonblanchard/will-it-scale).
PERF_METHODS = {
    "untraced": [],
    "perf_lock_record": [
        "perf",
        "lock",
        "record",
        "-a",
        "-o",
        "/tmp/bench-lock.data",
        "--",
    ],
    "perf_record_g": ["perf", "record", "-a", "-g", "-o", "/tmp/bench-perf.data", "--"],
}


def _wis_average(command: list[str]) -> float:
    """Run will-it-scale under COMMAND; return its `average:` ops/s line."""
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return float(next(x for x in out.splitlines() if x.startswith("average:"))[8:])


def perf_overhead() -> dict:
    """Measure what perf lock record and perf record -g cost will-it-scale."""
    wis = os.environ.get("WILL_IT_SCALE")
    if not wis or not Path(wis).is_file():
        raise SystemExit(
            "bench: perf_overhead needs $WILL_IT_SCALE, a built page_fault1_processes"
        )
    tasks = str(min(4, os.cpu_count() or 1))
    ops: dict[str, list[float]] = {name: [] for name in PERF_METHODS}
    for _ in range(RUNS):  # alternate, so that drifts hit every method alike
        for name, prefix in PERF_METHODS.items():
            ops[name].append(_wis_average([*prefix, wis, "-t", tasks, "-s", "5"]))
    base = statistics.median(ops["untraced"])
    return {
        "workload": f"will-it-scale page_fault1_processes -t {tasks} -s 5",
        "runs": RUNS,
        "ops_per_s_each_run": ops,
        "median_ops_per_s": {k: statistics.median(v) for k, v in ops.items()},
        "overhead_pct_of_median": {
            k: round(100 * (1 - statistics.median(v) / base), 2)
            for k, v in ops.items()
            if k != "untraced"
        },
        "spread_pct_untraced": round(
            100 * (max(ops["untraced"]) - min(ops["untraced"])) / base, 1
        ),
    }


BENCHMARKS = {
    "fastpath": fastpath,
    "listcheck": listcheck,
    "sim": sim,
    "sim_against": sim_against,
    "perf_overhead": perf_overhead,
}


def main(argv: list[str]) -> int:
    """Run the named benchmarks (all by default) and write their results."""
    names = argv or sorted(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:  # before any runs, so that a typo overwrites no result
        listed = ", ".join(f"'{name}'" for name in unknown)
        print(f"bench: unknown benchmark {listed}; known: {', '.join(BENCHMARKS)}")
        return 2
    RESULTS.mkdir(exist_ok=True)
    for name in names:
        record = {
            "benchmark": name,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": host(),
            "result": BENCHMARKS[name](),
        }
        path = RESULTS / f"{name}.json"
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"{path}: {json.dumps(record['result'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
