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
    # The base: this build behind a script that logs each start, on a spec
    # five times longer, so that its pages and its CPU time are its own.
    longer = bench._sim_request("skylake-ex", **{**short, "duration_s": 0.25})
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(longer))
    starts = tmp_path / "base-starts"
    base = tmp_path / "base-sim"
    real = engine.bin_dir() / "pcplab-sim"
    base.write_text(f'#!/bin/sh\necho run >> "{starts}"\nexec "{real}" "$@"\n')
    base.chmod(0o755)
    monkeypatch.setenv("PCPLAB_BASE_SIM", str(base))
    monkeypatch.setenv("PCPLAB_BASE_SPEC", str(spec))
    result = bench.sim_against()
    started = starts.read_text().splitlines() if starts.exists() else []
    assert started == ["run"] * 2, "the base build must run once a pair"
    pages = result["pages_per_virtual_s"]
    alone = {
        "this": engine.run(bench._sim_request("skylake-ex", **short)),
        "base": engine.run(longer),
    }
    assert pages == {k: r["throughput"]["pages_per_s"] for k, r in alone.items()}
    assert pages["this"] != pages["base"]
    # every pair is [this, base]: the base's five times the virtual time
    # costs it more CPU, so each ratio this/base is below 1
    each = result["cpu_s_each_pair_this_base"]
    assert len(each) == 2 and all(0 < this < base for this, base in each)
    low, high = result["cpu_ratio_range"]
    assert 0 < low <= result["cpu_ratio_median"] <= high < 1
    median = result["cpu_ratio_median"]
    assert result["cpu_per_page_ratio_median"] == pytest.approx(
        median * pages["base"] / pages["this"], abs=2e-3
    )
