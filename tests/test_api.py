"""The Python API (`pcplab.run` -> Result) and runs on a local Dask cluster."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import pcplab as lab
from pcplab import api, runs

SPEC = {
    "engine": "sim",
    "machine": "haswell-desktop",
    "workload": "page_fault1",
    "batch": 63,
    "duration_s": 0.1,
    "warmup_s": 0,
}


def test_run_to_dataframe() -> None:
    """The metric DataFrame has a row per latency/hold metric equal to the JSON."""
    result = lab.run(SPEC)
    assert isinstance(result, api.Result)
    assert result["spec"]["batch"] == 63
    df = result.to_dataframe()
    assert list(df.columns) == list(api.METRIC_COLUMNS)
    expected = [
        (section, name)
        for section in api.METRIC_SECTIONS
        for name in result[section]
        if isinstance(result[section][name], dict)
    ]
    assert list(zip(df["section"], df["name"], strict=True)) == expected
    for row in df.itertuples():
        stats = result[row.section][row.name]
        assert row.count == stats["count"]
        if not stats["count"]:  # never called: NaN, not 0 ns
            assert all(math.isnan(x) for x in (row.avg, row.p99, row.max))
            continue
        assert (row.avg, row.p99, row.max) == (stats["avg"], stats["p99"], stats["max"])
    flat = result.to_dataframe(flat=True)
    assert len(flat) == 1
    ops = result["throughput"]["ops_per_s"]
    assert flat.loc[0, "throughput.ops_per_s"] == pytest.approx(ops)
    assert flat.loc[0, "spec.batch"] == 63


def test_api_errors_carry_no_command_line_prefix() -> None:
    """A Python caller gets the message; only the CLI prints "pcplab: ..."."""
    with pytest.raises(lab.BadInput) as caught:
        lab.run({**SPEC, "batch": 0})
    assert str(caught.value).startswith("batch 0 is out of range")
    assert caught.value.line.startswith("pcplab: error: batch 0")


def test_run_is_deterministic_and_matches_cli(pcplab, tmp_path: Path) -> None:
    """pcplab.run gives the same result JSON as `pcplab run --engine sim`."""
    out = tmp_path / "r.json"
    proc = pcplab(
        *("run", "--engine", "sim", "--machine", "haswell-desktop"),
        *("--workload", "page_fault1", "--batch", 63, "--duration", 0.1),
        *("--warmup", 0, "--output", out),
    )
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(out.read_text())
    assert lab.run(SPEC)["throughput"] == cli["throughput"]


def test_dask_matches_local() -> None:
    """A tiny grid on a local Dask cluster gives the same results as locally."""
    from dask import distributed  # a test dependency (pyproject [test])

    specs = [
        {**SPEC, **point}
        for point in runs.grid([("batch", [31, 127]), ("kernel", ["6.6", "6.18"])])
    ]
    local = runs.run_specs(specs, 2)
    with distributed.LocalCluster(
        n_workers=2, processes=False, dashboard_address=None
    ) as cluster:
        remote = runs.run_specs(specs, scheduler=cluster.scheduler_address)
    assert remote == local


def test_example_script(tmp_path: Path) -> None:
    """examples/batch_sweep.py runs and writes its CSV."""
    script = Path(__file__).resolve().parents[1] / "examples" / "batch_sweep.py"
    out = tmp_path / "sweep.csv"
    proc = subprocess.run(
        [sys.executable, str(script), "--duration", "0.05", "--csv", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text().splitlines()
    assert lines[0].startswith("batch,")
    assert len(lines) == 1 + 3


def test_sweep_returns_a_dataframe_with_nan_for_what_did_not_occur() -> None:
    """pcplab.sweep: a row per point and seed; uncalled statistics are NaN."""
    df = lab.sweep({"batch": [31, 63]}, SPEC, seeds=2, jobs=2)
    assert list(zip(df["batch"], df["seed"], strict=True)) == [
        (31, 1),
        (31, 2),
        (63, 1),
        (63, 2),
    ]
    assert (df["throughput.ops_per_s"] > 0).all()
    assert (df["spec.batch"] == df["batch"]).all()
    uncalled = df["latency_ns.free_pcppages_bulk.count"] == 0
    assert df.loc[uncalled, "latency_ns.free_pcppages_bulk.avg"].isna().all()
    called = ~uncalled
    assert df.loc[called, "latency_ns.free_pcppages_bulk.avg"].notna().all()
