"""bench/run.py refuses an unknown benchmark before it runs or writes anything."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pcplab import engine

BENCH = Path(__file__).resolve().parent.parent / "bench" / "run.py"


def _bench_module():
    """Import bench/run.py, which is a script and not in the package."""
    spec = importlib.util.spec_from_file_location("bench_run", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_unknown_benchmark_runs_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """A typo after a good name runs neither, and leaves no result file."""
    bench = _bench_module()
    ran = []
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "results")
    monkeypatch.setitem(bench.BENCHMARKS, "sim", lambda: ran.append("sim") or {})
    assert bench.main(["sim", "--help"]) == 2
    assert ran == [] and not (tmp_path / "results").exists()
    assert "unknown benchmark '--help'" in capsys.readouterr().out
    assert bench.main(["sim"]) == 0 and ran == ["sim"]
    assert (tmp_path / "results" / "sim.json").is_file()


def test_sim_against_needs_a_base_and_runs_pairs(tmp_path, monkeypatch):
    """Without a base build it refuses; with one it times both in pairs."""
    bench = _bench_module()
    monkeypatch.delenv("PCPLAB_BASE_SIM", raising=False)
    with pytest.raises(SystemExit, match="PCPLAB_BASE_SIM"):
        bench.sim_against()
    short = {**bench.SIM_RUN, "duration_s": 0.05, "warmup_s": 0.01}
    monkeypatch.setattr(bench, "SIM_RUN", short)
    monkeypatch.setattr(bench, "PAIRS", 2)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(bench._sim_request("skylake-ex", **short)))
    monkeypatch.setenv("PCPLAB_BASE_SIM", str(engine.bin_dir() / "pcplab-sim"))
    monkeypatch.setenv("PCPLAB_BASE_SPEC", str(spec))
    result = bench.sim_against()
    assert len(result["cpu_s_each_pair_this_base"]) == 2
    pages = result["pages_per_virtual_s"]
    assert pages["this"] == pages["base"] > 0  # the same build on the same spec
    low, high = result["cpu_ratio_range"]
    assert 0 < low <= result["cpu_ratio_median"] <= high
