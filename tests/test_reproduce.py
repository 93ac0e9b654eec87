"""`pcplab reproduce` and `pcplab sweep`: layouts, report files, bad input."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import tomllib
from pathlib import Path

import pytest
import tomli_w

from pcplab import data, engine, experiments, fidelity, machines
from pcplab.experiments._common import heldout_rows

EXPERIMENTS = data.EXPERIMENTS  # the experiments the installed package ships
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
AARON_HEADER = (
    "batch   score   change   zone_contention   lru_contention   total_contention"
)
BCC_HEADER = "     nsecs               : count     distribution"
BCC_ROW = re.compile(r"^ *\d+ -> \d+ +: \d+ +\|\**\s*\|$")
AVG_LINE = re.compile(r"^avg = (\d+) nsecs, total: (\d+) nsecs, count: (\d+)$")


def _csv_rows(path: Path) -> list[dict[str, str]]:
    """Return the rows of a CSV file."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _tiny_experiments(tmp_path: Path, changes: dict[str, dict]) -> Path:
    """Copy the experiments with the [quick] tables of CHANGES replaced; return it."""
    target = tmp_path / "experiments"
    shutil.copytree(EXPERIMENTS, target)
    for name, quick in changes.items():
        path = target / f"{name}.toml"
        data = tomllib.loads(path.read_text())
        data["quick"] = quick
        path.write_text(tomli_w.dumps(data))
    return target


def _check_index(out: Path) -> str:
    """Check that index.md exists and every local link in it names a file."""
    index = (out / "index.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", index)
    assert links
    for link in links:
        assert (out / link).is_file(), link
    return index


def _check_png(path: Path) -> None:
    """Check that PATH is a non-empty PNG file."""
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC), path
    assert len(data) > 1000


def test_every_experiment_has_a_spec() -> None:
    """Every reference thread and the host have a TOML with quick and full."""
    for name in ("aaron2018", "ying2023", "yafang2024", "hahn2025", "host"):
        spec = tomllib.loads((EXPERIMENTS / f"{name}.toml").read_text())
        assert "quick" in spec and "full" in spec, name
        assert spec["quick"]["duration_s"] < spec["full"]["duration_s"]


def test_yafang2024_histograms_and_report(pcplab, tmp_path: Path) -> None:
    """Quick yafang2024 prints bcc histograms and writes CSV, JSON, PNG, index."""
    out = tmp_path / "report"
    proc = pcplab("reproduce", "yafang2024", "--quick", "--out", out)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    published = experiments.reference_rows("yafang2024_rmqueue_bulk_summary")
    # A model and a published histogram per scale max, each in bcc's layout,
    # and as root one more of this kernel's refills (tracepoint bursts).
    kernel = sum(1 for line in lines if line.startswith("this host's kernel"))
    assert kernel == (1 if os.geteuid() == 0 else 0)
    assert lines.count(BCC_HEADER) == 2 * len(published) + kernel
    starts = [i for i, line in enumerate(lines) if line == BCC_HEADER]
    for start in starts:
        rows = []
        for line in lines[start + 1 :]:
            if not line:
                break
            assert BCC_ROW.match(line), line
            rows.append(line)
        bars = [len(r.split("|")[1]) for r in rows]
        assert set(bars) == {40}
        assert any(r.split("|")[1] == "*" * 40 for r in rows)
    avgs = [AVG_LINE.match(line) for line in lines if line.startswith("avg = ")]
    assert len(avgs) == 2 * len(published) + kernel and all(avgs)
    for match in avgs:
        avg, total, count = (int(g) for g in match.groups())
        assert avg == total // count
    # Tables: the summary has one row per published row.
    summary = _csv_rows(out / "yafang2024_summary.csv")
    assert len(summary) == len(published)
    assert [int(r["scale_max"]) for r in summary] == [
        int(r["pcp_batch_scale_max"]) for r in published
    ]
    data = json.loads((out / "yafang2024_summary.json").read_text())
    assert [float(r["avg_ns"]) for r in summary] == [r["avg_ns"] for r in data]
    hist = _csv_rows(out / "yafang2024_histogram.csv")
    ref_hist = experiments.reference_rows("yafang2024_rmqueue_bulk_funclatency")
    assert len([r for r in hist if r["source"] == "published"]) == len(ref_hist)
    _check_png(out / "yafang2024_histogram.png")
    index = _check_index(out)
    assert "yafang2024_histogram.png" in index


def test_aaron2018_layout_and_rows(pcplab, tmp_path: Path, monkeypatch) -> None:
    """aaron2018 prints the thread's header and a CSV row per published row."""
    batches = [31, 63]
    monkeypatch.setenv(
        "PCPLAB_EXPERIMENTS",
        str(
            _tiny_experiments(
                tmp_path, {"aaron2018": {"duration_s": 0.2, "batch": batches}}
            )
        ),
    )
    out = tmp_path / "report"
    proc = pcplab("reproduce", "aaron2018", "--quick", "--out", out, "--jobs", 2)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    published = [
        r
        for r in experiments.reference_rows("aaron2018_page_fault1_batch_sweep")
        if int(r["batch"]) in batches
    ]
    machines = {r["machine"] for r in published}
    labels = AARON_HEADER.split("   ")
    heads = [i for i, x in enumerate(lines) if re.split(r" {3,}", x) == labels]
    assert len(heads) == len(machines)
    for head in heads:  # every column's cells end where its label ends
        ends = [m.end() for m in re.finditer(r"\S+(?: \S+)*", lines[head])]
        for row in lines[head + 1 : lines.index("", head)]:
            assert [m.end() for m in re.finditer(r"\S+(?: \S+)*", row)] == ends, row
    rows = _csv_rows(out / "aaron2018.csv")
    assert len(rows) == len(published)
    for row, ref in zip(rows, published, strict=True):
        assert (row["machine"], row["batch"]) == (ref["machine"], ref["batch"])
        assert float(row["score_published"]) == float(ref["score"])
        err = 100 * (float(row["score"]) - float(ref["score"])) / float(ref["score"])
        assert float(row["score_error_pct"]) == pytest.approx(err)
    _check_png(out / "aaron2018_throughput.png")
    index = _check_index(out)
    assert all(label in index for label in labels)


def test_aaron2018prefetch_predicts_two_machines_no_fit_has_seen(
    pcplab, tmp_path: Path, monkeypatch
) -> None:
    """Four servers against the thread's both-patch row; two never fitted on."""
    monkeypatch.setenv(
        "PCPLAB_EXPERIMENTS",
        str(_tiny_experiments(tmp_path, {"aaron2018prefetch": {"duration_s": 0.1}})),
    )
    out = tmp_path / "report"
    proc = pcplab(
        "reproduce", "aaron2018prefetch", "--quick", "--out", out, "--seeds", 1
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["machine"]: r for r in _csv_rows(out / "aaron2018prefetch.csv")}
    held = heldout_rows("aaron2018prefetch_page_fault1")
    both = {
        r["machine"]: float(r["score"]) for r in held if r["patches"] == "pick+prefetch"
    }
    assert set(rows) == set(both)
    fitted = {m: r["fitted"] == "True" for m, r in rows.items()}
    assert fitted == {
        "Broadwell(2S)": True,
        "Skylake(4S)": True,
        "Skylake(2S)": False,
        "Broadwell(4S)": False,
    }
    # the unseen machines are in no row the fit reads
    assert not {"Skylake(2S)", "Broadwell(4S)"} & set(fidelity.reference_machines())
    for machine, row in rows.items():
        assert float(row["score_published"]) == both[machine]
        assert float(row["ratio_published"]) == pytest.approx(
            both[machine] / both["Broadwell(2S)"]
        )
        # each server runs on a profile of its own family and socket count
        family, sockets = re.fullmatch(r"(\w+)\((\d)S\)", machine).groups()
        text = machines.profile_paths()[row["profile"]].read_text()
        uarch, _, _ = machines.find_uarch(tomllib.loads(text)["cpu_model"])
        assert family.lower() in uarch, (machine, uarch)
        profile = machines.load_profile(row["profile"])
        assert profile["topology"]["sockets"] == int(sockets), machine
    # the predictions are those profiles' own runs at the thread's 4.18 and
    # full load, and their ratios are to the anchor's run
    exp = experiments.load_experiment("aaron2018prefetch")
    assert (exp["spec"]["workload"], exp["spec"]["kernel"]) == ("page_fault1", "4.18")
    alone = {
        machine: engine.run(
            {
                "engine": "sim",
                "machine": machines.load_profile(rows[machine]["profile"]),
                **exp["spec"],
                "duration_s": 0.1,
            }
        )["throughput"]["ops_per_s"]
        for machine in ("Broadwell(2S)", "Skylake(2S)", "Broadwell(4S)")
    }
    assert len(set(alone.values())) == len(alone)
    for machine, score in alone.items():
        assert float(rows[machine]["score"]) == pytest.approx(score, rel=1e-9)
        ratio = score / alone["Broadwell(2S)"]
        assert float(rows[machine]["ratio"]) == pytest.approx(ratio, rel=1e-9)
    assert "Broadwell(4S)   lkp-bdw-ex1" in proc.stdout


def test_each_section_starts_with_what_ran(pcplab, tmp_path: Path, monkeypatch):
    """The text, index.md and figures open with what the results ran.

    ying2023zones: the TOML's profile, tasks, instrument and model kernel,
    and the kernel of the mail's figures (its held-out CSV), both said.
    """
    monkeypatch.setenv(
        "PCPLAB_EXPERIMENTS",
        str(_tiny_experiments(tmp_path, {"ying2023zones": {"duration_s": 0.05}})),
    )
    out = tmp_path / "report"
    proc = pcplab("reproduce", "ying2023zones", "--quick", "--out", out, "--seeds", 1)
    assert proc.returncode == 0, proc.stderr
    exp = experiments.load_experiment("ying2023zones")
    spec = exp["spec"]
    (published,) = {r["kernel"] for r in heldout_rows(exp["heldout"])}
    ran = (
        f"pcplab reproduce ying2023zones: engine sim, machine {exp['profile']}, "
        f"kernel {spec['kernel']} (model) / {published} (published), "
        f"workload {spec['workload']}, tasks {spec['tasks']}, "
        f"instrument {spec['instrument']}"
    )
    text = proc.stdout.splitlines()
    title = text.index(f"== ying2023zones: {exp['title']}")
    assert text[title + 1] == ran
    assert (out / "ying2023zones.txt").read_text().splitlines()[1] == ran
    index = _check_index(out).splitlines()
    section = index.index("## ying2023zones")
    assert index[section + 2] == f"`{ran}`"
    svg = (out / "ying2023zones_contention.svg").read_text()
    assert f"machine {exp['profile']}," in svg and f"kernel {spec['kernel']} " in svg


def test_hahn2025_policies(pcplab, tmp_path: Path, monkeypatch) -> None:
    """hahn2025 runs off, contended and batched; writes hold-time plots."""
    tiny = {"duration_s": 0.2, "model_only_duration_s": 0.05}
    monkeypatch.setenv(
        "PCPLAB_EXPERIMENTS", str(_tiny_experiments(tmp_path, {"hahn2025": tiny}))
    )
    out = tmp_path / "report"
    proc = pcplab("reproduce", "hahn2025", "--quick", "--out", out, "--seeds", 1)
    assert proc.returncode == 0, proc.stderr
    rows = _csv_rows(out / "hahn2025.csv")
    published = [
        r
        for r in experiments.reference_rows("hahn2025_relinquish_stress_ng")
        if r["metric"] == "bogo ops/s (real)"
    ]
    assert len(rows) == len(published) + 1  # and the 316-CPU machine
    # each machine's zone->lock holds per policy: (bucket's lower bound, count)
    holds: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for h in _csv_rows(out / "hahn2025_holds.csv"):
        buckets = holds.setdefault((h["source"], h["policy"]), [])
        buckets.append((int(h["lo_ns"]), float(h["count"])))
    for machine in {r["machine"] for r in rows}:
        mine = [r for r in rows if r["machine"] == machine]
        for policy in ("off", "contended", "batched"):
            assert all(float(r[f"bogo_ops_s_{policy}"]) > 0 for r in mine)
            buckets = holds.get((machine, policy), [])
            for bound, name in ((10**6, "1ms"), (10**7, "10ms")):
                counted = sum(int(r[f"holds_over_{name}_{policy}"]) for r in mine)
                over = sum(n for lo, n in buckets if lo >= bound)
                assert counted == over, (machine, policy, name)
        # released every pcp->batch pages, the same drains take more holds
        # than with the lock held through each (off)
        total = {p: sum(n for _, n in holds[(machine, p)]) for p in ("off", "batched")}
        assert total["batched"] > total["off"] > 0, machine
    _check_png(out / "hahn2025_hold_times.png")
    _check_index(out)


def test_sweep_grid(pcplab, tmp_path: Path) -> None:
    """Sweep runs the cartesian grid and writes one CSV row per point."""
    out = tmp_path / "sweep.csv"
    js = tmp_path / "sweep.json"
    proc = pcplab(
        *("sweep", "--engine", "sim", "--machine", "haswell-desktop"),
        *("--workload", "page_fault1", "--duration", "0.1", "--warmup", "0"),
        *("--param", "batch=31,63", "--param", "kernel=6.6,6.18", "--jobs", "2"),
        *("--csv", out, "--output", js),
    )
    assert proc.returncode == 0, proc.stderr
    rows = _csv_rows(out)
    assert [(r["batch"], r["kernel"]) for r in rows] == [
        ("31", "6.6"),
        ("31", "6.18"),
        ("63", "6.6"),
        ("63", "6.18"),
    ]
    data = json.loads(js.read_text())
    for row, point in zip(rows, data, strict=True):
        assert point["result"]["spec"]["batch"] == int(row["batch"])
        ops = point["result"]["throughput"]["ops_per_s"]
        assert float(row["throughput.ops_per_s"]) == pytest.approx(ops)


@pytest.mark.parametrize(
    "args",
    [
        ("reproduce", "nosuch"),
        ("reproduce", "aaron2018", "--jobs", "0"),
        ("sweep", "--engine", "sim", "--workload", "page_fault1", "--param", "batch"),
        ("sweep", "--engine", "sim", "--workload", "page_fault1", "--param", "x=1"),
    ],
)
def test_bad_input(bad_input, args) -> None:
    """Bad names, --jobs, --param syntax and spec keys give one line, exit 2."""
    line = bad_input(*args)
    assert "allowed" in line or "give" in line
