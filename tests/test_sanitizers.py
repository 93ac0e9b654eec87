"""The C core under ASan+UBSan and under TSan.

The property test and native runs with several tasks must finish without a
single report (any report aborts with a non-zero status).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SANITIZERS = {
    "address,undefined": {
        "ASAN_OPTIONS": "halt_on_error=1:detect_leaks=1:abort_on_error=0",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    },
    "thread": {"TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1"},
}
RUNS = [
    {"workload": "page_fault1", "tasks": 2, "duration_s": 1},
    {
        "workload": "page_fault1",
        "tasks": 4,
        "duration_s": 1,
        "batch": 7,
        "relinquish": "contended",
    },
    {
        "workload": "mmap_fill",
        "tasks": 3,
        "duration_s": 1,
        "size_mib": 32,
        "kernel": "6.19",
        "scale_max_schedule": [[0.3, 0], [0.6, 6]],
    },
    {"workload": "page_fault1", "tasks": 2, "duration_s": 1, "kernel": "4.18"},
    {
        "workload": "page_fault1",
        "tasks": 2,
        "duration_s": 1,
        "kernel": "6.6",
        "high_fraction": 100,
    },
]


@pytest.fixture(scope="module", params=sorted(SANITIZERS))
def sanitized(request, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Build pcplab-native with one sanitizer set; return it and its env."""
    build = tmp_path_factory.mktemp("san")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(
        [
            "cmake",
            "-S",
            ROOT,
            "-B",
            build,
            *generator,
            "-DCMAKE_BUILD_TYPE=Debug",
            f"-DPCPLAB_SANITIZE={request.param}",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["cmake", "--build", build, "--target", "pcplab-native"],
        check=True,
        capture_output=True,
    )
    return build / "pcplab-native", {**os.environ, **SANITIZERS[request.param]}


def test_property_test_is_clean(sanitized):
    """Random operations on every generation raise no sanitizer report."""
    binary, env = sanitized
    for kernel in ("4.18", "6.6", "6.18", "6.19"):
        proc = subprocess.run(
            [binary, "proptest", "--kernel", kernel, "--ops", "200000"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert json.loads(proc.stdout)["violations"] == 0


@pytest.mark.parametrize("spec", RUNS, ids=lambda s: f"{s['workload']}-{s['tasks']}")
def test_native_runs_are_clean(sanitized, spec):
    """Native runs with threads racing on the model raise no report."""
    binary, env = sanitized
    proc = subprocess.run(
        [binary, "run"],
        input=json.dumps({**spec, "memory_mib": 1024}),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout)
    assert result["invariants"]["pages_conserved"]
    assert result["throughput"]["ops_per_s"] > 0
