"""The report's index: where it stands first, then a page a browser shows."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import tomli_w

import pcplab
from conftest import needs
from pcplab import data

CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")


@pytest.fixture(scope="module")
def report(pcplab_command, tmp_path_factory) -> Path:
    """Run a tiny aaron2018 with two seeds; return its report folder."""
    tmp = tmp_path_factory.mktemp("report")
    specs = tmp / "experiments"
    shutil.copytree(data.experiments_dir(), specs)
    path = specs / "aaron2018.toml"
    spec = tomllib.loads(path.read_text())
    spec["quick"].update({"duration_s": 0.1, "batch": [31, 63]})
    path.write_text(tomli_w.dumps(spec))
    out = tmp / "report"
    proc = subprocess.run(
        [*pcplab_command, "reproduce", "aaron2018", "--quick", "--seeds", "2"]
        + ["--out", str(out), "--jobs", "2"],
        env={**os.environ, "PCPLAB_EXPERIMENTS": str(specs)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def test_index_opens_with_version_commit_date_host(report):
    """A reader knows what made the report, when and where, before anything."""
    lines = (report / "index.md").read_text().splitlines()
    assert lines[0] == "# pcplab reproduce"
    assert "--seeds 2" in lines[2] and "means over 2 seeds" in lines[2]
    facts = dict(line[2:].split(": ", 1) for line in lines[4:10])
    assert list(facts) == ["pcplab", "commit", "date", "host", "kernel", "cpu"]
    assert facts["pcplab"] == pcplab.__version__
    assert re.fullmatch(r"[0-9a-f]{12}(\+dirty)?|unknown", facts["commit"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", facts["date"])
    assert facts["kernel"] == os.uname().release


def _within(kind, model: str, published: str) -> bool | None:
    """Say whether MODEL is within KIND's tolerance of PUBLISHED (None: no figure).

    A percentage's tolerance is a quarter of the published figure, at most
    the stated points, at least 2 (docs/fidelity.md, Scoring).
    """
    if not model or not published:
        return None
    m, p = float(model), float(published)
    if kind.ratio:
        return abs(m / p - 1) <= kind.tolerance + 1e-9
    return abs(m - p) <= max(2, min(kind.tolerance, abs(p) / 4)) + 1e-9


def test_the_verdict_counts_every_machine(report):
    """Each machine run gets its hits out of its figures, in-sample and left out."""
    from pcplab.basis import fold_starts
    from pcplab.experiments.aaron2018 import KINDS

    text = (report / "index.md").read_text()
    verdict = text.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    with open(report / "aaron2018.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # each published figure of the CSV, within its kind's tolerance or not;
    # the change from batch 31 is a figure from a machine's second batch on
    columns = {
        "score": ("score", "score_published"),
        "change": ("change_pct", "change_published"),
        "zone": ("zone_contention", "zone_published"),
        "lru": ("lru_contention", "lru_published"),
    }
    expected: dict[str, list[bool]] = {}
    first: dict[str, str] = {}
    for r in rows:
        first.setdefault(r["machine"], r["batch"])
        if not r["score_published"]:
            continue
        for kind, (model, published) in columns.items():
            if kind == "change" and r["batch"] == first[r["machine"]]:
                continue
            hit = _within(KINDS[kind], r[model], r[published])
            if hit is not None:
                expected.setdefault(r["machine"], []).append(hit)
        # and the sign of a change of 2 points or more (aaron2018.toml's score)
        change, published = float(r["change_pct"]), float(r["change_published"])
        if r["batch"] != first[r["machine"]] and abs(published) >= 2:
            expected[r["machine"]].append(change * published > 0)
    assert expected
    for machine, hits in expected.items():
        # batches 31 and 63 are read by the fit: in-sample, then the fold's
        # own run (its count is the fold's: only that it is there)
        cell = f"{sum(hits)}/{len(hits)} | "
        fold = f"/{len(hits)} (fold without {machine}, start: {fold_starts()[machine]})"
        line = next(x for x in verdict.splitlines() if f"| {machine} |" in x)
        assert line.startswith(f"| aaron2018 | {machine} | {cell}"), (line, cell)
        assert fold in line and line.split(" | ")[4] == "-", line  # no held out
    assert verdict.count("| aaron2018 |") == len(expected)


def test_seeds_give_means_and_spreads(report):
    """Two seeds: every row says so, and the score carries its stddev."""
    with open(report / "aaron2018.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["seeds"] for r in rows} == {"2"}
    assert any(r.get("score_std") for r in rows)


def test_the_html_page_is_self_contained(report):
    """index.html inlines every image: it can be mailed or opened anywhere."""
    page = (report / "index.html").read_text()
    sources = re.findall(r'src="([^"]+)"', page)
    assert sources and all(s.startswith("data:image/") for s in sources)
    assert "<h2>Verdict</h2>" in page and "<table>" in page


@needs(
    "no headless Chromium here (Debian: apt install chromium-headless-shell)"
    if CHROMIUM is None
    else None
)
def test_a_browser_shows_the_page(report, tmp_path):
    """Headless Chromium renders the page and decodes every image."""
    probe = tmp_path / "probe.html"
    script = (
        "<script>addEventListener('load',()=>{document.body.dataset.images="
        "[...document.images].map(i=>i.naturalWidth>0?1:0).join('')})</script>"
    )
    probe.write_text((report / "index.html").read_text().replace("</body>", script))
    proc = subprocess.run(
        [CHROMIUM, "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000"]
        + ["--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = re.search(r'data-images="([01]*)"', proc.stdout)
    assert loaded and loaded.group(1) and set(loaded.group(1)) == {"1"}
    assert "<h2>Verdict</h2>" in proc.stdout
