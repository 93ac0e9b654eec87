"""bench/run.py refuses an unknown benchmark before it runs or writes anything."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
