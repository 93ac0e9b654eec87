"""Run the benchmarks and record their JSON in bench/results/.

Benchmarks are not tests: CI machines are noisy, so targets are read from
these files (and from README/issue notes), never asserted in the test suite.

    python3 bench/run.py            # every benchmark
    python3 bench/run.py fastpath   # one of them
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from pcplab import engine

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


def fastpath() -> dict:
    """PCP alloc+free pair and zone->lock per-page costs (bench/fastpath.c)."""
    binary = engine.bin_dir() / "bench-fastpath"
    out = subprocess.run([binary], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    result["target_pair_ns"] = 20
    return result


BENCHMARKS = {"fastpath": fastpath}


def main(argv: list[str]) -> int:
    """Run the named benchmarks (all by default) and write their results."""
    names = argv or sorted(BENCHMARKS)
    RESULTS.mkdir(exist_ok=True)
    for name in names:
        if name not in BENCHMARKS:
            print(f"bench: unknown benchmark '{name}'; known: {', '.join(BENCHMARKS)}")
            return 2
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
