"""The model beside every published figure of the reference CSVs.

Each reference experiment is run on the sim engine with the profile of its
machine, and every row of the reference CSVs (pcplab/reference, or where
pcplab.data is told to look) gets the modelled figure and the error.
`pcplab fidelity` writes docs/fidelity.md from it; the global constants are
fitted on these rows only, and the table shows all of them, good and bad.
"""

from __future__ import annotations

import csv
import os
import platform
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pcplab import data, engine, machines, sweep
from pcplab.errors import BadInput


def reference_dir() -> Path:
    """Return the directory of the published figures (pcplab.data decides)."""
    return data.reference_dir()


def reference_rows(name: str) -> list[dict[str, str]]:
    """Return the rows of the reference CSV NAME.csv."""
    with open(data.reference_file(name), newline="") as f:
        return list(csv.DictReader(f))


def experiments_dir() -> Path:
    """Return the directory of the experiment specs (pcplab.data decides)."""
    return data.experiments_dir()


def load_experiment(name: str) -> dict[str, Any]:
    """Return the experiment spec NAME.toml as a dict (its name added)."""
    with open(data.experiment_file(name), "rb") as f:
        spec = tomllib.load(f)
    spec["name"] = name
    return spec


def _mode(exp: dict[str, Any], quick: bool, mode: str | None = None) -> dict[str, Any]:
    """Return the experiment's [quick] or [full] table, or the one named MODE."""
    return exp[mode or ("quick" if quick else "full")]


def _timing(mode: dict[str, Any]) -> dict[str, float]:
    """Return the duration (and warm-up, where the mode sets one) of a mode."""
    return {k: mode[k] for k in ("duration_s", "warmup_s") if k in mode}


def _keep(
    rows: list[dict[str, str]], only: Sequence[str] | None
) -> list[dict[str, str]]:
    """Return the reference rows of the machines ONLY names (all if None)."""
    return rows if only is None else [r for r in rows if r["machine"] in only]


def profile_for(exp: dict[str, Any], machine: str) -> str:
    """Return the sim profile of reference MACHINE, or refuse in one line."""
    profile = exp.get("machines", {}).get(machine)
    if profile is None:
        raise BadInput(
            f"reference machine '{machine}' of {exp['name']} has no machine "
            f"profile; map it in [machines] of {data.experiment_file(exp['name'])}"
        )
    return profile


def sim_spec(
    machine: str, constants: dict[str, float] | None = None, **spec: Any
) -> dict[str, Any]:
    """Return a sim spec on MACHINE's profile (loaded where it runs).

    CONSTANTS, when given, replace the global constants of constants.toml
    (what `pcplab fit` tries); the profile is then loaded here.
    """
    if constants is None:
        return {"engine": "sim", "machine": machine, **spec}
    profile = machines.load_profile(machine)
    profile["constants"] = {**profile["constants"], **constants}
    return {"engine": "sim", "machine": profile, **spec}


def sim(machine: str, **spec: Any) -> dict[str, Any]:
    """Run the sim engine on MACHINE's profile; return the result."""
    return engine.run(
        {"engine": "sim", "machine": machines.load_profile(machine), **spec}
    )


def error_pct(model: float, published: float) -> float | None:
    """Return the model's relative error against the published figure, in %."""
    if not published:
        return None
    return 100.0 * (model - published) / published


def _run(
    name: str, specs: list[dict[str, Any]], workers: int, scheduler: Any
) -> list[dict[str, Any]]:
    """Run the specs of experiment NAME in parallel, with a progress bar."""
    return sweep.run_specs(specs, workers, scheduler=scheduler, desc=name)


def aaron2018(
    quick: bool,
    workers: int,
    *,
    scheduler: Any = None,
    extra_machines: Sequence[str] = (),
    mode: str | None = None,
    only: Sequence[str] | None = None,
    constants: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Run page_fault1, 4.18, one task per CPU, batch 31..511, five machines."""
    exp = load_experiment("aaron2018")
    mode = _mode(exp, quick, mode)
    rows = _keep(reference_rows(exp["reference"]), only)
    if "batch" in mode:
        keep = set(mode["batch"])
        rows = [r for r in rows if int(r["batch"]) in keep]
    batches = sorted({int(r["batch"]) for r in rows})
    profiles = [(r["machine"], profile_for(exp, r["machine"]), r) for r in rows]
    for extra in [*exp.get("extra_machines", []), *extra_machines]:
        profiles += [(extra, extra, {"batch": str(b)}) for b in batches]
    base_spec = {**exp["spec"], **_timing(mode)}
    specs = [
        sim_spec(profile, constants, **base_spec, batch=int(row["batch"]))
        for _, profile, row in profiles
    ]
    results = _run("aaron2018", specs, workers, scheduler)
    base: dict[str, float] = {}
    out = []
    for (label, _, row), res in zip(profiles, results, strict=True):
        score = res["throughput"]["ops_per_s"]
        base.setdefault(label, score)
        c = res["contention"]

        def published(key: str, row: dict[str, str] = row) -> float | None:
            return float(row[key]) if key in row else None

        out.append(
            {
                "machine": label,
                "batch": int(row["batch"]),
                "score": score,
                "score_published": published("score"),
                "change_pct": 100.0 * (score / base[label] - 1),
                "change_published": published("change_pct"),
                "zone_contention": c["zone_lock_pct"],
                "zone_published": published("zone_contention_pct"),
                "lru_contention": c["lru_lock_pct"],
                "lru_published": published("lru_contention_pct"),
                "total_contention": c["total_pct"],
                "total_published": published("total_contention_pct"),
            }
        )
    return out


def ying2023(
    quick: bool,
    workers: int,
    *,
    scheduler: Any = None,
    mode: str | None = None,
    only: Sequence[str] | None = None,
    constants: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Run the 2023 debug kernel (high = 2 x batch, no free scaling) per batch."""
    exp = load_experiment("ying2023")
    mode = _mode(exp, quick, mode)
    rows = _keep(reference_rows(exp["reference"]), only)
    if "batch" in mode:
        rows = [r for r in rows if int(r["batch"]) in set(mode["batch"])]
    specs = [
        sim_spec(
            profile_for(exp, row["machine"]),
            constants,
            **exp["spec"],
            batch=int(row["batch"]),
            high=exp["high_per_batch"] * int(row["batch"]),
            **_timing(mode),
        )
        for row in rows
    ]
    results = _run("ying2023", specs, workers, scheduler)
    out = []
    for row, res in zip(rows, results, strict=True):
        hold = res["lock_hold_ns"]
        out.append(
            {
                "machine": row["machine"],
                "batch": int(row["batch"]),
                "throughput": res["throughput"]["ops_per_task_per_s"],
                "throughput_published": float(row["throughput_pages_per_s"]),
                "free_avg_us": hold["free_pcppages_bulk"]["avg"] / 1000,
                "free_avg_published": float(row["free_latency_avg_us"]),
                "free_p99_us": hold["free_pcppages_bulk"]["p99"] / 1000,
                "free_p99_published": float(row["free_latency_p99_us"]),
                "alloc_avg_us": hold["rmqueue_bulk"]["avg"] / 1000,
                "alloc_avg_published": float(row["alloc_latency_avg_us"]),
                "alloc_p99_us": hold["rmqueue_bulk"]["p99"] / 1000,
                "alloc_p99_published": float(row["alloc_latency_p99_us"]),
            }
        )
    return out


def published_histograms(exp: dict[str, Any]) -> dict[int, list[list[int]]]:
    """Return the published funclatency rows [[lo, hi, count]] per scale max."""
    hists: dict[int, list[list[int]]] = {}
    for row in reference_rows(exp["histograms"]):
        hists.setdefault(int(row["pcp_batch_scale_max"]), []).append(
            [int(row["bucket_lo_ns"]), int(row["bucket_hi_ns"]), int(row["count"])]
        )
    return hists


def yafang2024(
    quick: bool,
    workers: int,
    *,
    scheduler: Any = None,
    mode: str | None = None,
    only: Sequence[str] | None = None,
    constants: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Run ten parallel 6 GiB mmap_fill on the EPYC VM, scale max 5 and 0."""
    exp = load_experiment("yafang2024")
    rows = _keep(reference_rows(exp["reference"]), only)
    published = published_histograms(exp)
    specs = [
        sim_spec(
            profile_for(exp, row["machine"]),
            constants,
            **exp["spec"],
            scale_max=int(row["pcp_batch_scale_max"]),
            **_timing(_mode(exp, quick, mode)),
        )
        for row in rows
    ]
    results = _run("yafang2024", specs, workers, scheduler)
    out = []
    for row, res in zip(rows, results, strict=True):
        lat = res["latency_ns"][exp["function"]]
        scale_max = int(row["pcp_batch_scale_max"])
        out.append(
            {
                "machine": row["machine"],
                "scale_max": scale_max,
                "avg_ns": lat["avg"],
                "avg_published": float(row["avg_ns"]),
                "log2_hist": lat["log2_hist"],
                "count": lat["count"],
                "total_ns": lat.get("total", lat["avg"] * lat["count"]),
                "count_published": int(row["count"]),
                "total_published": int(row["total_ns"]),
                "log2_hist_published": published.get(scale_max, []),
            }
        )
    host = None if mode or constants else _yafang_on_this_kernel(exp, quick)
    if host is not None:
        out.append(host)
    return out


def _yafang_on_this_kernel(exp: dict[str, Any], quick: bool) -> dict[str, Any] | None:
    """Run the same mmap_fill, scaled to fit, on this kernel (root only).

    This kernel offers no entry-to-return timing of rmqueue_bulk here
    (no kprobes or fentry), so the histogram is of the tracepoint bursts
    of refills: first to last kmem:mm_page_alloc_zone_locked event with
    percpu_refill=1 on one CPU, an approximation of the zone->lock hold.
    """
    host = exp.get("host")
    if not host or os.geteuid() != 0 or "host" not in engine.built_engines():
        return None
    from pcplab.host.execute import execute_run
    from pcplab.memguard import mem_available_bytes

    cpus = os.cpu_count() or 1
    size = max(16, int(mem_available_bytes() * host["memory_share"] / cpus) >> 20)
    res = execute_run(
        {
            "engine": "host",
            "workload": host["workload"],
            "tasks": cpus,
            "size_mib": size,
            "warmup_s": host["warmup_s"],
            "duration_s": host["quick_duration_s" if quick else "full_duration_s"],
        }
    )
    lat = (res.get("latency_ns") or {}).get(exp["function"])
    method = "entry to return"
    if not lat:
        lat = ((res.get("tracing") or {}).get("refill") or {}).get("span_ns")
        method = "refill burst span, " + str((res.get("tracing") or {}).get("method"))
    if not lat or not lat.get("count"):
        return None
    return {
        "scale_max": f"kernel ({platform.release()}, {cpus} x {size} MiB)",
        "host": True,
        "method": method,
        "avg_ns": lat["avg"],
        "log2_hist": lat["log2_hist"],
        "count": lat["count"],
        "total_ns": lat.get("total", lat["avg"] * lat["count"]),
    }


MS = 1_000_000


def holds_over(hist: Sequence[Sequence[int]], bound_ns: int) -> int:
    """Count holds in log2 buckets that lie wholly at or above BOUND_NS."""
    return sum(int(count) for lo, _, count in hist if int(lo) >= bound_ns)


def _hold_fields(res: dict[str, Any]) -> dict[str, Any]:
    """Return the zone->lock hold figures of one run: max, >1 ms, >10 ms."""
    hold = res["lock_hold_ns"]["zone_lock"]
    hist = hold.get("log2_hist") or []
    return {
        "max_hold_us": hold["max"] / 1000,
        "holds_over_1ms": holds_over(hist, MS),
        "holds_over_10ms": holds_over(hist, 10 * MS),
        "hold_hist": hist,
    }


def hahn2025(
    quick: bool, workers: int, *, scheduler: Any = None
) -> list[dict[str, Any]]:
    """Run stress-ng vm with relinquish off, contended and batched."""
    exp = load_experiment("hahn2025")
    mode = _mode(exp, quick)
    policies = exp["policies"]
    rows = [r for r in reference_rows(exp["reference"]) if r["metric"] == exp["metric"]]
    cases = []
    for row in rows:
        words = row["stress_ng_args"].split()
        tasks = int(words[words.index("--vm") + 1])
        total_gb = int(words[words.index("--vm-bytes") + 1].rstrip("G"))
        cases.append((exp["reference_machine"], row, tasks, total_gb * 1024 // tasks))
    specs = [
        sim_spec(
            machine,
            **exp["spec"],
            tasks=tasks,
            size_mib=size,
            relinquish=policy,
            duration_s=mode["duration_s"],
        )
        for machine, _, tasks, size in cases
        for policy in policies
    ]
    for extra in exp.get("model_only", []):
        cases.append((extra["machine"], {"stress_ng_args": extra["args"]}, None, 0))
        specs += [
            sim_spec(
                extra["machine"],
                **exp["spec"],
                size_mib=extra["size_mib"],
                relinquish=policy,
                duration_s=mode["model_only_duration_s"],
            )
            for policy in policies
        ]
    results = _run("hahn2025", specs, workers, scheduler)
    out = []
    for i, (machine, row, _, _) in enumerate(cases):
        runs = dict(zip(policies, results[i * len(policies) :], strict=False))
        a = runs["off"]["throughput"]["ops_per_s"]
        entry: dict[str, Any] = {
            "machine": machine,
            "args": row["stress_ng_args"],
            "delta_published": float(row["delta_pct"]) if "delta_pct" in row else None,
        }
        for policy, res in runs.items():
            b = res["throughput"]["ops_per_s"]
            entry[f"bogo_ops_s_{policy}"] = b
            if policy != "off":
                entry[f"delta_{policy}_pct"] = 100.0 * (b - a) / a if a else None
            for key, value in _hold_fields(res).items():
                entry[f"{key}_{policy}"] = value
        # The names of earlier reports: contended against off.
        entry["bogo_ops_s_off"] = a
        entry["delta_pct"] = entry.get("delta_contended_pct")
        entry["max_hold_off_us"] = (
            runs["off"]["lock_hold_ns"]["free_pcppages_bulk"]["max"] / 1000
        )
        if "contended" in runs:
            entry["max_hold_contended_us"] = (
                runs["contended"]["lock_hold_ns"]["free_pcppages_bulk"]["max"] / 1000
            )
        out.append(entry)
    return out


EXPERIMENTS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "aaron2018": aaron2018,
    "ying2023": ying2023,
    "yafang2024": yafang2024,
    "hahn2025": hahn2025,
}
# The experiments whose rows the constants are fitted on (hahn2025's deltas
# of 0.02% are below any run's noise: reported, not fitted).
FITTED = ("aaron2018", "ying2023", "yafang2024")


def reference_machines() -> dict[str, str]:
    """Map every reference machine of the fitted experiments to its experiment."""
    out = {}
    for name in FITTED:
        exp = load_experiment(name)
        for row in reference_rows(exp["reference"]):
            out.setdefault(row["machine"], name)
    return out


def run_machines(
    only: Sequence[str],
    workers: int,
    *,
    quick: bool = False,
    mode: str | None = None,
    constants: dict[str, float] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Run the fitted experiments' rows of the reference machines ONLY."""
    owner = reference_machines()
    results = {}
    for name in FITTED:
        mine = [m for m in only if owner.get(m) == name]
        if mine:
            results[name] = EXPERIMENTS[name](
                quick, workers, mode=mode, only=mine, constants=constants
            )
    return results


def left_out(
    folds: dict[str, dict[str, float]], quick: bool, workers: int
) -> dict[str, list[dict[str, Any]]]:
    """Predict each reference machine with the constants fitted without it."""
    out: dict[str, list[dict[str, Any]]] = {}
    for machine, constants in folds.items():
        for name, rows in run_machines(
            [machine], workers, quick=quick, constants=constants
        ).items():
            out.setdefault(name, []).extend(rows)
    return out
