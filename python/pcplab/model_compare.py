"""Two configurations of the model side by side: `pcplab compare --base --new`.

The question of every PCP thread ("does batch 63 beat 31 on this machine?",
"what did 6.19 change?") as LKP and mmtests answer it for two kernels: the
same workload under a base and a new set of spec keys, several seeds (sim)
or repeats (native), %change and Welch's t-test per metric.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pcplab import engine
from pcplab.comparison import columns_of, report, statistics
from pcplab.errors import BadInput
from pcplab.repeats import expand, regroup
from pcplab.runs import materialize, parse_params, run_specs


def parse_keys(texts: Sequence[str], option: str) -> dict[str, Any]:
    """Parse repeated KEY=VALUE options into spec keys (one value each)."""
    keys: dict[str, Any] = {}
    for text, (key, values) in zip(texts, parse_params(texts, option), strict=True):
        if len(values) != 1:
            raise BadInput(
                f"{option} {text!r} gives {len(values)} values; give one KEY=VALUE "
                f"per {option}, e.g. {option} batch=63 (a grid is pcplab sweep's)"
            )
        keys[key] = values[0]
    return keys


def label(keys: dict[str, Any]) -> str:
    """Name a configuration by its keys: "batch=63,kernel=6.6"."""
    return ",".join(f"{k}={v}" for k, v in keys.items()) or "default"


def compare_models(
    common: dict[str, Any],
    base: dict[str, Any],
    new: dict[str, Any],
    runs: int,
    seeds: bool,
    layout: str,
) -> tuple[dict[str, Any], str]:
    """Run COMMON+BASE and COMMON+NEW RUNS times each; return JSON and text."""
    if base == new:
        raise BadInput("--base and --new are the same configuration; change a key")
    specs = [{**common, **base}, {**common, **new}]
    for spec in specs:  # the engine checks every key and range first
        engine.resolve(materialize(spec))
    # sim runs are independent processes; native runs would share the CPUs
    jobs = (os.cpu_count() or 1) if common["engine"] == "sim" else 1
    results = run_specs(expand(specs, runs, seeds), jobs, desc="compare")
    groups = regroup(results, runs)
    columns = columns_of(groups)
    labels = [label(base), label(new)]
    data = {
        "base": {"keys": base, "runs": groups[0], "statistics": statistics(columns[0])},
        "new": {"keys": new, "runs": groups[1], "statistics": statistics(columns[1])},
    }
    head = f"pcplab compare: base {labels[0]}, new {labels[1]}\n\n"
    return data, head + report(layout, labels, groups)
