"""The guards on every result: runs out of memory, and runs beyond the fit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pcplab import data, fitted

MACHINES = Path(__file__).parent / "data" / "machines"


def test_a_run_out_of_memory_warns_and_says_so(pcplab) -> None:
    """mmap_fill beyond the memory: a warning on stderr and `incomplete` in the JSON."""
    proc = pcplab(
        "run", "--engine", "sim", "--machine", MACHINES / "desktop-32g.toml",
        "--workload", "mmap_fill", "--memory-mib", 1024, "--duration", 0.2, "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["vmstat"]["alloc_failures"] > 0
    assert any("allocations failed" in r for r in result["incomplete"])
    assert proc.stderr.startswith("pcplab: warning: the run is incomplete: ")
    assert proc.stderr.count("\n") == 1


def test_a_run_inside_the_memory_is_complete(pcplab) -> None:
    """The same run with room for its pages: no warning, `incomplete` empty."""
    proc = pcplab(
        "run", "--engine", "sim", "--machine", MACHINES / "desktop-32g.toml",
        "--workload", "mmap_fill", "--duration", 0.2, "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["incomplete"] == []
    assert proc.stderr == ""


def test_epyc_9654_2s_is_beyond_the_fit(pcplab) -> None:
    """384 CPUs of Zen 4: a line on stderr, the reasons in `outside_fit` and summary."""
    profile = MACHINES / "epyc-9654-2s.toml"
    args = ["run", "--engine", "sim", "--machine", profile, "--kernel", "4.18",
            "--workload", "page_fault1", "--duration", 0.01]  # fmt: skip
    proc = pcplab(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    line = "pcplab: warning: epyc-9654-2s is outside what the model was fitted on: "
    assert proc.stderr.startswith(line) and proc.stderr.count("\n") == 1
    reasons = json.loads(proc.stdout)["outside_fit"]
    assert any(r.startswith("384 CPUs, beyond") for r in reasons)
    assert any("microarchitecture zen4" in r for r in reasons)
    assert "outside what the model was fitted on" in pcplab(*args).stdout


def test_a_fitted_machine_on_its_own_kernel_is_inside() -> None:
    """Skylake-EX on 4.18 is a fitted row; on 6.19 no row of it was fitted."""
    assert fitted.outside("skylake-ex", "4.18") == []
    assert [r.split(",")[0] for r in fitted.outside("skylake-ex", "6.19")] == [
        "kernel 6.19"
    ]


def test_a_generic_part_is_beyond_the_fit() -> None:
    """An Arm Altra runs as the generic x86 server: it says so."""
    reasons = fitted.outside(str(MACHINES / "ampere-altra.toml"), "6.18")
    assert any(r.startswith("a generic part") for r in reasons)


def test_the_reach_is_the_fitted_experiments_data(monkeypatch, tmp_path) -> None:
    """The kernels come from the fitted experiments' TOMLs, not from a list."""
    for spec in data.EXPERIMENTS.glob("*.toml"):
        shutil.copy(spec, tmp_path)
    toml = tmp_path / "aaron2018.toml"
    toml.write_text(toml.read_text().replace('kernel = "4.18"', 'kernel = "6.19"'))
    monkeypatch.setenv("PCPLAB_EXPERIMENTS", str(tmp_path))
    assert fitted.outside("skylake-ex", "6.19") == []
    assert fitted.outside("skylake-ex", "4.18") != []
