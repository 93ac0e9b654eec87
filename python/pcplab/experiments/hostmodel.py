"""hostmodel: this host's kernel beside the model of this host (issue 33 item 2).

The one untraced 6.x kernel at hand is the host's own. Its profile is
measured first (pcplab.calibrate.measure: sysfs, the bench programs and the
kernel's own page fault). Each case of the TOML then runs on the kernel
(`--engine host --profile perf`) and on the sim twice: predicted, from the
profile's hardware facts alone with every cost from the global constants
(what the model says of any machine it was not fitted on), and calibrated,
with the measured costs. Rows carry pages/s and LKP's perf-profile shares;
the residuals hold both models to 10% of the kernel's throughput and 10
points of each share.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

from pcplab import charts, machines, runs
from pcplab.experiments._common import load_experiment, mode_table, own_name
from pcplab.headers import RAN, ran
from pcplab.host import procfs
from pcplab.host.execute import execute_run
from pcplab.memguard import mem_available_bytes
from pcplab.render import md_table
from pcplab.tolerance import Kind, Residual, add

NAME = own_name(__name__)
ORDER = 10000  # no thread: after host
NEEDS_ROOT = "runs the kernel under perf record and measures this host"
MIB = 1 << 20
MODELS = ("predicted", "calibrated")
KINDS = {
    "hostmodel_throughput": Kind(True, 0.10, "this kernel's pages/s"),
    "hostmodel_share": Kind(False, 10, "this kernel's perf-profile share"),
}


def _cases(exp: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the TOML's cases as specs: tasks 0 is one per CPU, sizes set."""
    cpus = os.cpu_count() or 1
    out = []
    for case in exp["cases"]:
        spec = {**exp["spec"], **case, "tasks": case["tasks"] or cpus}
        if case["workload"] == "mmap_fill":
            share = exp["memory_share"] * mem_available_bytes()
            spec["size_mib"] = max(16, int(share / spec["tasks"] / MIB))
        out.append(spec)
    return out


def _shares(res: dict[str, Any], exp: dict[str, Any]) -> dict[str, float | None]:
    """Return a result's LKP shares the TOML names, None where not profiled.

    A profiled run without a sample in a function has 0% there (perf report
    lists only what was sampled); a leaf the sim names only as self is its
    own children share.
    """
    profile = res.get("perf_profile") or {}
    self_ = profile.get("self") or {}
    out: dict[str, float | None] = {}
    for kind in ("self", "children"):
        shares = profile.get(kind) or {}
        for fn in exp[kind]:
            value = shares.get(fn, self_.get(fn, 0.0))
            out[f"{kind}.{fn}"] = value if shares else None
    return out


def _row(
    spec: dict[str, Any], engine: str, results: list[dict[str, Any]], exp: dict
) -> dict[str, Any]:
    """Return one row: a case on one engine, the mean (and sd) over RESULTS."""
    row: dict[str, Any] = {
        "workload": spec["workload"],
        "tasks": spec["tasks"],
        "engine": engine,
        RAN: ran(*results),
    }
    figures = [
        {"pages_per_s": r["throughput"]["pages_per_s"], **_shares(r, exp)}
        for r in results
    ]
    for key in figures[0]:
        values = [f[key] for f in figures if f[key] is not None]
        row[key] = statistics.fmean(values) if values else None
        if len(values) > 1:
            row[f"{key}_std"] = statistics.stdev(values)
    return row


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Measure this host, run each case on its kernel and on both models."""
    from pcplab import calibrate  # here, like tomli_w (_profiles)

    exp = load_experiment(NAME)
    mode = mode_table(exp, quick)
    measured = calibrate.measure()
    profiles = _profiles(measured)
    timed = measured.get("kernel_timing", "")
    build = _build()
    rows = []
    for case in _cases(exp):
        window = case.pop("model_duration_s", mode["duration_s"])
        spec = {**case, "duration_s": mode["duration_s"]}
        # the guest's speed moves between runs: the kernel's figure is a mean
        # with its spread, as the models' are over seeds
        kernels = [
            execute_run({**spec, "engine": "host"}, profile_with="perf")
            for _ in range(mode["kernel_runs"])
        ]
        rows.append(_row(case, "host", kernels, exp))
        instrument = _instrument(kernels[0], exp)
        sim = _model_spec(spec, exp, build, instrument)
        sim["duration_s"] = window
        for model in MODELS:
            specs = [
                {**sim, "machine": profiles[model], "seed": seed}
                for seed in range(1, mode["seeds"] + 1)
            ]
            results = runs.run_specs(specs, workers, scheduler=scheduler, desc=model)
            row = _row(case, model, results, exp)
            rows.append({**row, "build": build, "instrument": instrument})
            if model == "calibrated":
                rows[-1]["calibration"] = timed
    return rows


def _instrument(kernel: dict[str, Any], exp: dict[str, Any]) -> str:
    """Return the models' instrument: the kernel's profile was sampled by this event.

    Without a PMU (a VM guest) perf records the cpu-clock software event,
    whose samples wait out interrupts-off sections; the models then sample
    the same way (docs/machines.md, "Instruments").
    """
    event = (kernel.get("perf_profile") or {}).get("event") or ""
    if event.startswith("cpu-clock"):
        return "perf-profile-cpu-clock"
    return exp["instrument"]


def _model_spec(
    spec: dict[str, Any], exp: dict[str, Any], build: dict[str, Any], instrument: str
) -> dict[str, Any]:
    """Return a case's spec for the models: instrumented, built and started as here.

    The host engine's tasks leave one start barrier together (src/host), so
    the models' tasks start in step too: staggered, mmap_fill's first fill of a
    few GiB ends inside a one-second window in the sim and not on the host.
    """
    sim = {**spec, "engine": "sim", "kernel": exp["kernel"], "instrument": instrument}
    sim["task_start"] = "in_step"
    if build["enabled"]:
        sim["config_debug_list"] = True
    return sim


def _build() -> dict[str, Any]:
    """Return this kernel's CONFIG_DEBUG_LIST, which the model of it then runs.

    A build option, not a generation's cost (docs/machines.md): the model of
    this host is built as this kernel was, where its config is readable.
    """
    return procfs.build_option("CONFIG_DEBUG_LIST")


def _profiles(profile: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return PROFILE loaded as the engine takes it: predicted and calibrated."""
    out = {}
    for model in MODELS:
        drop = "costs" if model == "predicted" else None
        mine = {k: v for k, v in profile.items() if k != drop}
        name = f"host-{model}"
        out[model] = machines.profile_of({**mine, "name": name}, name)
    return out


def _figures(exp: dict[str, Any]) -> list[str]:
    """Return the figure keys the TOML names: pages/s, then every share."""
    shares = [f"{kind}.{fn}" for kind in ("self", "children") for fn in exp[kind]]
    return ["pages_per_s", *shares]


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Each model's pages/s and shares against this kernel's, per case."""
    out: list[Residual] = []
    kernel = {(r["workload"], r["tasks"]): r for r in rows if r["engine"] == "host"}
    for r in rows:
        host = kernel.get((r["workload"], r["tasks"]))
        if r["engine"] == "host" or host is None:
            continue
        case = f"{r['engine']} {r['workload']} x{r['tasks']}"
        for key in _figures(load_experiment(NAME)):
            kind = "hostmodel_throughput" if key == "pages_per_s" else "hostmodel_share"
            add(out, KINDS, "this host", kind, f"{case} {key}", r[key], host[key])
    return out


def _cell(r: dict[str, Any], key: str) -> str:
    """Format one figure with its spread over seeds, if any."""
    value = r.get(key)
    if value is None:
        return "n/a"
    fmt = ".0f" if key == "pages_per_s" else ".1f"
    spread = f" ± {r[f'{key}_std']:{fmt}}" if f"{key}_std" in r else ""
    return f"{value:{fmt}}{spread}"


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return the kernel beside both models, case by case."""
    keys = _figures(spec)
    header = ["workload", "tasks", "engine", "pages/s", *keys[1:]]
    cells = [
        [r["workload"], str(r["tasks"]), r["engine"], *(_cell(r, k) for k in keys)]
        for r in rows
    ]
    notes = [
        f"kernel: this host's, beside the sim's {spec['kernel']} generation on this "
        "host's profile (measured now); predicted: its hardware facts and the "
        "global constants; calibrated: with its measured [costs].",
        "shares: LKP's perf-profile.<self|children>.cycles-pp.<function>, % of the "
        "workload's sampled cycles (host: perf record -a -g; sim: its cycle terms, "
        "perf-profile sampling charged); kernel figures are means ± sd over runs "
        "one after another, model figures over seeds.",
        *_instrument_note(rows),
        *_build_note(rows),
        *_calibration_note(rows),
    ]
    return "\n".join([*notes, *md_table(header, cells)]) + "\n"


def _instrument_note(rows: list[dict[str, Any]]) -> list[str]:
    """Return the line saying how the models sampled, from their rows."""
    used = sorted({r["instrument"] for r in rows if "instrument" in r})
    if used != ["perf-profile-cpu-clock"]:
        return []
    return [
        "sampling: this kernel's perf had no PMU and sampled cpu-clock, whose "
        "interrupt waits out interrupts-off sections; the models ran instrument "
        "perf-profile-cpu-clock, which samples them where interrupts come back on."
    ]


def _calibration_note(rows: list[dict[str, Any]]) -> list[str]:
    """Return the line saying which kernel runs the calibrated model rests on."""
    timed = next((r["calibration"] for r in rows if r.get("calibration")), "")
    return [f"calibration: {timed}"] if timed else []


def _build_note(rows: list[dict[str, Any]]) -> list[str]:
    """Return the line saying which build the models ran, from their rows."""
    builds = [r["build"] for r in rows if "build" in r]
    if not builds:
        return []
    b = builds[0]
    if b["enabled"] is None:
        return [
            f"build: CONFIG_DEBUG_LIST not known ({b['source']}); modelled without it"
        ]
    state = "=y, charged" if b["enabled"] else " not set"
    return [f"build: CONFIG_DEBUG_LIST{state} in both models ({b['source']})"]


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot each case's pages/s and shares: this kernel beside both models."""
    keys = _figures(load_experiment(NAME))
    panels = []
    for (workload, tasks), mine in _by_case(rows).items():
        for key, ylabel, scale in (
            ("pages_per_s", "throughput (M pages/s)", 1e-6),
            (None, "share of sampled cycles (%)", 1.0),
        ):
            names = [key] if key else keys[1:]
            series = [
                charts.model(
                    [_point(r, n, i) for i, n in enumerate(names)],
                    "x",
                    "y",
                    _engine(r["engine"]),
                    scale,
                    style="points",
                )
                for r in mine
            ]
            panels.append(
                charts.Panel(
                    f"{workload}, {tasks} tasks",
                    "figure" if key is None else "engine",
                    ylabel,
                    series,
                    xticks=charts.categories(names),
                    from_zero=True,
                )
            )
    return charts.draw(
        charts.Figure(
            out / NAME,
            f"{NAME}: this kernel beside the model of this host",
            panels,
            ncols=2,
            keys=["this kernel"],
            size=(5.5, 4.5),
        )
    )


def _engine(engine: str) -> str:
    """Return the legend key of an engine: this kernel, or a model of it."""
    return "this kernel" if engine == "host" else f"model, {engine}"


def _point(r: dict[str, Any], key: str, x: int) -> dict[str, Any]:
    """Return figure KEY of row R as a plot point at X, with its spread if any."""
    point = {"x": x, "y": r[key]}
    if f"{key}_std" in r:
        point["y_std"] = r[f"{key}_std"]
    return point


def _by_case(rows: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict]]:
    """Group the rows by (workload, tasks), in order."""
    out: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        out.setdefault((r["workload"], r["tasks"]), []).append(r)
    return out
