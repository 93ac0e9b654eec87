"""The model beside every published figure of shared/reference.

Each reference experiment is run on the sim engine with the profile of its
machine, and every row of the reference CSVs gets the modelled figure and
the error. `pcplab fidelity` writes docs/fidelity.md from it; the global
constants are fitted on these rows only, and the table shows all of them,
good and bad.
"""

from __future__ import annotations

import csv
import os
import platform
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pcplab import engine, machines, sweep
from pcplab.errors import BadInput


def reference_dir() -> Path:
    """Find shared/reference: $PCPLAB_REFERENCE, or beside the checkout."""
    candidates = [
        Path(os.environ.get("PCPLAB_REFERENCE", "/nonexistent")),
        Path.cwd().parent / "shared" / "reference",
        Path.cwd() / "shared" / "reference",
        Path(__file__).resolve().parents[3] / "shared" / "reference",
    ]
    for path in candidates:
        if (path / "machines.csv").is_file():
            return path
    raise BadInput(
        "cannot find shared/reference; run from the repository or set "
        "PCPLAB_REFERENCE to it"
    )


def reference_rows(name: str) -> list[dict[str, str]]:
    """Return the rows of shared/reference/NAME.csv."""
    with open(reference_dir() / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def experiments_dir() -> Path:
    """Find experiments/: $PCPLAB_EXPERIMENTS, or in or beside the checkout."""
    candidates = [
        Path(os.environ.get("PCPLAB_EXPERIMENTS", "/nonexistent")),
        Path.cwd() / "experiments",
        Path(__file__).resolve().parents[2] / "experiments",
        reference_dir().parent.parent / "main" / "experiments",
    ]
    for path in candidates:
        if (path / "aaron2018.toml").is_file():
            return path
    raise BadInput(
        "cannot find experiments/; run from the repository or set "
        "PCPLAB_EXPERIMENTS to it"
    )


def load_experiment(name: str) -> dict[str, Any]:
    """Return experiments/NAME.toml as a dict (its name added)."""
    path = experiments_dir() / f"{name}.toml"
    with open(path, "rb") as f:
        spec = tomllib.load(f)
    spec["name"] = name
    return spec


def _mode(exp: dict[str, Any], quick: bool) -> dict[str, Any]:
    """Return the experiment's [quick] or [full] table."""
    return exp["quick" if quick else "full"]


def sim_spec(machine: str, **spec: Any) -> dict[str, Any]:
    """Return a sim spec on MACHINE's profile (loaded where it runs)."""
    return {"engine": "sim", "machine": machine, **spec}


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
) -> list[dict[str, Any]]:
    """Run page_fault1, 4.18, one task per CPU, batch 31..511, three machines."""
    exp = load_experiment("aaron2018")
    mode = _mode(exp, quick)
    rows = reference_rows(exp["reference"])
    if "batch" in mode:
        keep = set(mode["batch"])
        rows = [r for r in rows if int(r["batch"]) in keep]
    batches = sorted({int(r["batch"]) for r in rows})
    profiles = [(r["machine"], exp["machines"][r["machine"]], r) for r in rows]
    for extra in [*exp.get("extra_machines", []), *extra_machines]:
        profiles += [(extra, extra, {"batch": str(b)}) for b in batches]
    base_spec = {**exp["spec"], "duration_s": mode["duration_s"]}
    specs = [
        sim_spec(profile, **base_spec, batch=int(row["batch"]))
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
    quick: bool, workers: int, *, scheduler: Any = None
) -> list[dict[str, Any]]:
    """Run the 2023 debug kernel (high = 2 x batch, no free scaling) per batch."""
    exp = load_experiment("ying2023")
    mode = _mode(exp, quick)
    rows = reference_rows(exp["reference"])
    if "batch" in mode:
        rows = [r for r in rows if int(r["batch"]) in set(mode["batch"])]
    specs = [
        sim_spec(
            exp["machines"][row["machine"]],
            **exp["spec"],
            batch=int(row["batch"]),
            high=exp["high_per_batch"] * int(row["batch"]),
            duration_s=mode["duration_s"],
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
    quick: bool, workers: int, *, scheduler: Any = None
) -> list[dict[str, Any]]:
    """Run ten parallel 6 GiB mmap_fill on the EPYC VM, scale max 5 and 0."""
    exp = load_experiment("yafang2024")
    rows = reference_rows(exp["reference"])
    published = published_histograms(exp)
    specs = [
        sim_spec(
            exp["machine"],
            **exp["spec"],
            scale_max=int(row["pcp_batch_scale_max"]),
            duration_s=_mode(exp, quick)["duration_s"],
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
    host = _yafang_on_this_kernel(exp, quick)
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
    from pcplab.cli import mem_available_bytes
    from pcplab.host.cli import execute_run

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


def _err(model: float, published: float) -> str:
    """Format the relative error, or n/a where the published figure is 0."""
    e = error_pct(model, published)
    return "n/a" if e is None else f"{e:+.1f}%"


def _opt(value: float | None, fmt: str, unit: str = "") -> str:
    """Format VALUE with FMT and UNIT, or n/a where there is none."""
    return "n/a" if value is None else f"{value:{fmt}}{unit}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Return a Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def render_markdown(results: dict[str, list[dict[str, Any]]]) -> str:
    """Return the fidelity tables: model beside published, error on every row."""
    lines: list[str] = []
    if "aaron2018" in results:
        lines += [
            "## aaron2018: page_fault1, 4.18, one task per CPU (d8a759b57035)",
            "",
            "Score in pages/s; contention in % of all CPU time (model / published).",
            "",
        ]
        rows = []
        for r in results["aaron2018"]:
            if r["score_published"] is None:  # a profile beyond the thread's
                continue
            rows.append(
                [
                    r["machine"],
                    r["batch"],
                    f"{r['score']:.0f} / {r['score_published']:.0f}",
                    _err(r["score"], r["score_published"]),
                    f"{r['change_pct']:+.2f}% / {r['change_published']:+.2f}%",
                    f"{r['zone_contention']:.0f} / {r['zone_published']:.0f}",
                    f"{r['lru_contention']:.0f} / {r['lru_published']:.0f}",
                    f"{r['total_contention']:.0f} / {r['total_published']:.0f}",
                ]
            )
        lines += _table(
            [
                "machine",
                "batch",
                "score",
                "score error",
                "change",
                "zone_contention",
                "lru_contention",
                "total_contention",
            ],
            rows,
        )
        lines.append("")
    if "ying2023" in results:
        lines += [
            "## ying2023: high = 2 x batch, free scaling off (52166607ecc9)",
            "",
            f"Per-task pages/s and zone->lock hold in us (model / published); "
            f"{load_experiment('ying2023')['spec']['tasks']} tasks "
            "(the mail does not say how many).",
            "",
        ]
        rows = []
        for r in results["ying2023"]:
            rows.append(
                [
                    r["machine"],
                    r["batch"],
                    f"{r['throughput']:.0f} / {r['throughput_published']:.0f}",
                    _err(r["throughput"], r["throughput_published"]),
                    f"{r['free_avg_us']:.2f} / {r['free_avg_published']:.2f}",
                    _err(r["free_avg_us"], r["free_avg_published"]),
                    f"{r['free_p99_us']:.2f} / {r['free_p99_published']:.2f}",
                    f"{r['alloc_avg_us']:.2f} / {r['alloc_avg_published']:.2f}",
                    _err(r["alloc_avg_us"], r["alloc_avg_published"]),
                    f"{r['alloc_p99_us']:.2f} / {r['alloc_p99_published']:.2f}",
                ]
            )
        lines += _table(
            [
                "machine",
                "batch",
                "throughput",
                "error",
                "free avg",
                "error",
                "free 99%",
                "alloc avg",
                "error",
                "alloc 99%",
            ],
            rows,
        )
        lines.append("")
    if "yafang2024" in results:
        lines += [
            "## yafang2024: 10 x mmap_fill 6 GiB on the EPYC 7W83 VM",
            "",
            "funclatency rmqueue_bulk average, entry to return (model / published).",
            "",
        ]
        rows = [
            [
                r["scale_max"],
                f"{r['avg_ns']:.0f} / {r['avg_published']:.0f}",
                _err(r["avg_ns"], r["avg_published"]),
                r["count"],
            ]
            for r in results["yafang2024"]
            if not r.get("host")
        ]
        lines += _table(["scale max", "avg ns", "error", "calls"], rows)
        lines.append("")
    if "hahn2025" in results:
        lines += [
            "## hahn2025: stress-ng vm, relinquish zone->lock when contended",
            "",
            "bogo ops/s (real) change from off to contended (model / published).",
            "",
        ]
        rows = [
            [
                r["machine"],
                r["args"],
                f"{r['delta_pct']:+.3f}% / " + _opt(r["delta_published"], "+.3f", "%"),
                _opt(r.get("delta_batched_pct"), "+.3f", "%"),
                f"{r['max_hold_off_us']:.0f} -> {r['max_hold_contended_us']:.0f}",
                f"{r['max_hold_us_off']:.0f} / {r['max_hold_us_contended']:.0f}"
                + (
                    f" / {r['max_hold_us_batched']:.0f}"
                    if "max_hold_us_batched" in r
                    else ""
                ),
            ]
            for r in results["hahn2025"]
        ]
        lines += _table(
            [
                "machine",
                "stress-ng",
                "delta",
                "delta batched",
                "max free hold us",
                "max zone->lock hold us (off / contended / batched)",
            ],
            rows,
        )
        lines.append("")
    return "\n".join(lines)
