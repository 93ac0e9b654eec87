"""The report's plots: labelled with units, every published row drawn, legends clear.

Each experiment's plots() draws from real quick-run rows (the host's only as
root with the host engine built, else from rows of the same keys); the SVGs
are read back (their text stays text, and charts.py names labels, titles and
published series by id), and the figures are inspected before they are saved.
"""

from __future__ import annotations

import gc
import math
import os
import re
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pcplab import charts, data, engine, experiments, headers
from pcplab.experiments import hostmodel, load_experiment, reference_rows
from pcplab.experiments._common import heldout_rows, lkp_figure
from pcplab.host.journal import KernelBusy

Rows = list[dict[str, Any]]
SVG = "{http://www.w3.org/2000/svg}"
XLINK_USE = f"{SVG}use"
UNIT = re.compile(r"\(.+\)")
NUMBER = re.compile(r"^[−-]?[\d.]+(e[−-]?\d+)?$")
# Published points each plot draws: (TOML key naming a reference CSV, points per
# row); the CSVs' rows are counted, so a dropped row fails.
PUBLISHED = {
    "aaron2018_throughput": [("reference", 1)],
    "aaron2018_contention": [("reference", 3)],  # zone, LRU and total
    "aaron2018pf2_change": [("heldout", 2)],  # both ends of the range
    "aaron2018prefetch_scores": [("heldout", 2)],  # the score and its ratio
    "aaron2018rfc_contention": [("heldout", 1)],  # one path of one policy a row
    "ying2023_throughput": [("reference", 1)],
    "ying2023_hold_times": [("reference", 4)],  # free and alloc, avg and 99%
    "ying2023zones_contention": [("heldout", 1)],  # one zone and four instances
    "yafang2024_histogram": [("histograms", 1), ("reference", 1)],
    "hahn2025_bogo_ops": [],
    "hahn2025_hold_times": [],
    "hahn2025_delta": [("reference", 1)],  # every metric, not only the compared
    "host": [],
    "hostmodel": [],  # this kernel is the reference: measured, not published
    "policies_throughput": [],  # no thread published the policies
    "policies_holds": [],
    # LKP's reports (pcplab/record/): per-task score base and new, one change a
    # perf-profile row the model has a figure for
    "lkp2023allocscale_change": [("record_scores", 2), ("record_shares", 1)],
    "lkp2023autotune_change": [("record_scores", 2), ("record_shares", 1)],
    "lkp2023cooperlake_change": [("record_scores", 2), ("record_shares", 1)],
    "lkp2024releasepages_change": [("record_scores", 2), ("record_shares", 1)],
    # a mail's table (pcplab/record/): vanilla and the series, every task count
    "mel2022highorder_scaling": [("record_hmean", 1)],
    # LKP's base kernels (pcplab/record/): each row the TOML gives a model figure
    "lkp2025basefaults_base": [("record_base_figures", 1)],
}


def _record(spec: dict[str, Any]) -> Rows:
    """Return the record rows an LKP commit experiment reads: its test and split."""
    rows = data.record_rows(spec["record"], spec["split"])
    return [r for r in rows if r["test"] == spec["test"]]


# Rows each kind of published point is one or more points of, from the TOML.
ROWS: dict[str, Callable[[dict[str, Any]], Rows]] = {
    "reference": lambda spec: reference_rows(spec["reference"]),
    "histograms": lambda spec: reference_rows(spec["histograms"]),
    "heldout": lambda spec: heldout_rows(spec["heldout"]),  # no fit reads them
    "record_scores": lambda spec: [
        r for r in _record(spec) if r["metric"].startswith("will-it-scale.per_")
    ],
    "record_shares": lambda spec: [
        r for r in _record(spec) if lkp_figure(r["metric"]) not in (None, "score")
    ],
    "record_hmean": lambda spec: [
        r
        for r in data.record_rows(spec["record"])
        if r["metric"] == "Hmean"
        and r["kernel_column"] in (spec["kernel_column"], spec["series_column"])
    ],
    "record_base_figures": lambda spec: [
        r for r in data.record_rows(spec["record"]) if r["metric"] in spec["figures"]
    ],
}


def _fake_result(engine_name: str, workload: str, tasks: int, **spec: Any) -> dict:
    """Return what a result of ENGINE_NAME says it ran (no run here)."""
    return {
        "engine": engine_name,
        "spec": {"workload": workload, "tasks": tasks, **spec},
        "machine": {"name": spec.get("machine", "this host")},
        "kernel": {"release": os.uname().release},
    }


def _host_rows() -> Rows:
    """Return host rows as the host experiment gives them (no kernel run here)."""
    rows = []
    for workload in ("page_fault1", "mmap_fill"):
        for fraction in (0, 100):
            for engine_name, pages in (("host", 5e5), ("native", 4e6)):
                res = _fake_result(engine_name, workload, 2)
                rows.append(
                    {
                        "workload": workload,
                        "high_fraction": fraction,
                        "engine": engine_name,
                        headers.RAN: headers.ran(res),
                        "pages_per_s": pages * (1 + fraction / 1000),
                        "rmqueue_bulk_avg_ns": 20000.0 + fraction,
                        "rmqueue_bulk_p99_ns": 90000.0,
                        "log2_hist": [[16384, 32767, 10]],
                    }
                )
    return rows


def _hostmodel_rows() -> Rows:
    """Return hostmodel rows as its run gives them (no kernel run here)."""
    exp = load_experiment("hostmodel")
    rows = []
    for case in exp["cases"]:
        spec = {**case, "tasks": case["tasks"] or 2}
        for engine_name, pages in (
            ("host", 5e5),
            ("predicted", 4e5),
            ("calibrated", 5e5),
        ):
            profile = {"self": {"clear_page_erms": 30.0}, "children": {}}
            model = {"kernel": exp["kernel"], "machine": f"host-{engine_name}"}
            ran = _fake_result(
                "host" if engine_name == "host" else "sim",
                spec["workload"],
                spec["tasks"],
                **({} if engine_name == "host" else model),
            )
            res = {
                **ran,
                "throughput": {"pages_per_s": pages},
                "perf_profile": profile,
            }
            rows.append(hostmodel._row(spec, engine_name, [res], exp))
    return rows


FAKE_ROOT_ROWS = {"host": _host_rows, "hostmodel": _hostmodel_rows}


@pytest.fixture(scope="module")
def quick_rows() -> Callable[[str], Rows]:
    """Return each experiment's quick-run rows, run once for the module."""
    cache: dict[str, Rows] = {}

    def rows(name: str) -> Rows:
        if name not in cache:
            real = os.geteuid() == 0 and "host" in engine.built_engines()
            if name in FAKE_ROOT_ROWS and not real:
                cache[name] = FAKE_ROOT_ROWS[name]()
                return cache[name]
            # pcplab.host.runner.run_engine leaves the engine's stdout and
            # stderr pipes to the collector (a ResourceWarning, an error
            # here); the host's runs are not what this module checks.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResourceWarning)
                try:
                    cache[name] = experiments.get(name).run(True, 2)
                except KernelBusy:  # another pcplab sweeps the sysctl now
                    if name not in FAKE_ROOT_ROWS:
                        raise
                    cache[name] = FAKE_ROOT_ROWS[name]()
                gc.collect()
        return cache[name]

    return rows


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[charts.Figure]:
    """Record every Figure drawn; check each legend stays off every axes."""
    drawn: list[charts.Figure] = []
    draw, save = charts.draw, charts.save

    def record(figure: charts.Figure) -> list[Path]:
        drawn.append(figure)
        return draw(figure)

    def checked_save(fig: Any, stem: Path) -> list[Path]:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        assert fig.legends, stem
        for legend in fig.legends:
            box = legend.get_window_extent(renderer)
            for ax in fig.axes:
                assert not box.overlaps(ax.get_tightbbox(renderer)), stem
        return save(fig, stem)

    monkeypatch.setattr(charts, "draw", record)
    monkeypatch.setattr(charts, "save", checked_save)
    return drawn


def _text(element: ET.Element | None) -> str:
    """Return the text inside an SVG element (its <text> children)."""
    if element is None:
        return ""
    return " ".join("".join(t.itertext()) for t in element.iter(f"{SVG}text")).strip()


def _by_id(root: ET.Element, prefix: str) -> list[ET.Element]:
    """Return the SVG groups whose id starts with PREFIX."""
    return [g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith(prefix)]


def _categorical(axes: ET.Element) -> bool:
    """Whether an axes' x ticks name categories rather than numbers."""
    ticks = [_text(t) for t in _by_id(axes, "xtick_")]
    return any(t and not NUMBER.match(t.replace("\u2212", "-")) for t in ticks)


def _check_svg(path: Path) -> ET.Element:
    """Check every axes of an SVG: titled, both axes labelled, units given."""
    root = ET.parse(path).getroot()
    suptitle = _text(next(iter(_by_id(root, "suptitle")), None))
    axes = [
        g for g in root.iter(f"{SVG}g") if re.fullmatch(r"axes_\d+", g.get("id", ""))
    ]
    assert axes, path
    for ax in axes:
        xlabel = _text(next(iter(_by_id(ax, "xlabel-")), None))
        ylabel = _text(next(iter(_by_id(ax, "ylabel-")), None))
        title = _text(next(iter(_by_id(ax, "title-")), None))
        assert title or suptitle, path
        assert UNIT.search(ylabel), (path, ylabel)
        assert xlabel and (UNIT.search(xlabel) or _categorical(ax)), (path, xlabel)
    return root


def _published_points(root: ET.Element) -> int:
    """Count the markers of the published series in an SVG."""
    return sum(len(list(g.iter(XLINK_USE))) for g in _by_id(root, "published-"))


def _ran(root: ET.Element) -> str:
    """Return the line under an SVG figure's title: what its results ran."""
    return _text(next(iter(_by_id(root, "ran")), None))


def _check_ran(name: str, rows: Rows, line: str) -> None:
    """Check a figure's "what ran" line: each row's machine and kernel in it.

    The kernel is also the experiment's TOML's, where it sets one: the
    results ran what was asked.
    """
    assert line == headers.of_rows(rows), name
    for fact in ("engine", "workload", "tasks", "instrument"):
        assert f"{fact} " in line, (name, line)
    for ran in (f for r in rows for f in r[headers.RAN]):
        assert ran["machine"] in line and ran["kernel"] in line, (name, ran, line)
    spec = load_experiment(name)
    asked = spec.get("spec", {}).get("kernel", spec.get("kernel"))
    if asked is not None:
        assert re.search(rf"kernel ([^,]*\|)?{re.escape(asked)}[|, ]", line), line


def _expected_points(name: str, stem: str) -> int:
    """Return how many published points plot STEM must show: every row's."""
    spec = load_experiment(name)
    return sum(len(ROWS[key](spec)) * n for key, n in PUBLISHED[stem])


@pytest.mark.parametrize("name", experiments.names())
def test_every_plot_is_readable(name: str, quick_rows, figures, tmp_path) -> None:
    """PNG and SVG of each plot; labels with units, titles; every published row."""
    rows = quick_rows(name)
    paths = experiments.get(name).plots(rows, tmp_path)
    assert paths and len(paths) == 2 * len(figures)
    stems = {p.stem for p in paths}
    assert sorted(paths) == sorted(
        tmp_path / f"{s}{suffix}" for s in stems for suffix in (".png", ".svg")
    )
    for stem in stems:
        assert (tmp_path / f"{stem}.png").read_bytes().startswith(b"\x89PNG")
        root = _check_svg(tmp_path / f"{stem}.svg")
        assert _published_points(root) == _expected_points(name, stem), stem
        _check_ran(name, rows, _ran(root))


def _with_spread(rows: Rows) -> Rows:
    """Return ROWS with a <field>_std of 5% beside every numeric field."""
    out = []
    for r in rows:
        extra = {
            f"{k}_std": abs(v) * 0.05
            for k, v in r.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        out.append({**r, **extra})
    return out


def _model_series(figures: list[charts.Figure]) -> list[charts.Series]:
    """Return the model's series of scalar figures (not histograms) drawn."""
    return [
        s
        for f in figures
        for p in f.panels
        for s in p.series
        if not s.published and s.style != "steps" and s.ys
    ]


@pytest.mark.parametrize("name", experiments.names())
def test_spread_over_seeds_draws_error_bars(
    name: str, quick_rows, figures, tmp_path
) -> None:
    """Model figures get error bars exactly where the rows carry <field>_std."""
    rows = quick_rows(name)
    # rows without a spread (an experiment that runs its own seeds has one)
    plain = [{k: v for k, v in r.items() if not k.endswith("_std")} for r in rows]
    (tmp_path / "plain").mkdir()
    experiments.get(name).plots(plain, tmp_path / "plain")
    assert all(s.err is None for s in _model_series(figures))
    figures.clear()
    experiments.get(name).plots(_with_spread(rows), tmp_path)
    series = _model_series(figures)
    assert series
    for s in series:
        assert s.err is not None
        for y, e in zip(s.ys, s.err, strict=True):
            assert (y is None) == (e is None)
            if y is not None:
                assert e == pytest.approx(abs(y) * 0.05)
    # and the SVGs draw them: a bar per point with a spread
    svgs = [tmp_path / f"{f.stem.name}.svg" for f in figures if _model_series([f])]
    assert svgs
    for svg in svgs:
        root = ET.parse(svg).getroot()
        bars = _by_id(root, "errorbars-model-")
        assert bars, svg
        for group in bars:
            gid = group.get("id", "").removeprefix("errorbars-")
            markers = [g for g in _by_id(root, gid) if g.get("id") == gid]
            points = sum(len(list(g.iter(XLINK_USE))) for g in markers)
            segments = len(list(group.iter(f"{SVG}path")))
            assert segments == (points or len(markers)), group.get("id")


def test_charts_draws_error_bars_only_where_given(tmp_path: Path) -> None:
    """A Series' err draws one bar per point with an error, none for None."""
    series = charts.Series("m", [1, 2, 3], [1.0, 2.0, None], err=[0.1, None, 0.3])
    panel = charts.Panel("t", "x (pages)", "y (µs)", [series])
    paths = charts.draw(charts.Figure(tmp_path / "f", "title", [panel]))
    assert [p.name for p in paths] == ["f.png", "f.svg"]
    root = ET.parse(tmp_path / "f.svg").getroot()
    (bars,) = _by_id(root, "errorbars-model-0-0")
    assert len(list(bars.iter(f"{SVG}path"))) == 1
    assert "y (µs)" in _text(root)  # svg.fonttype none: text stays text
    assert _ran(root) == ""  # a figure nothing says the results of: no line


def test_a_figure_says_what_ran_in_lines_that_fit(tmp_path: Path) -> None:
    """The "what ran" line under the title wraps between facts, not inside one."""
    panel = charts.Panel("t", "x (pages)", "y (µs)", [charts.Series("m", [1], [1])])
    ran = (
        "engine sim, machine sapphire-rapids|coffee-lake-desktop|cascade-lake, "
        "kernel 6.6 (model) / v6.3 (published), workload page_fault1, tasks 8, "
        "instrument function_graph:rmqueue_bulk,free_pcppages_bulk"
    )
    with charts.stating("what the context says"):
        charts.draw(charts.Figure(tmp_path / "f", "title", [panel], ran=ran))
        charts.draw(charts.Figure(tmp_path / "g", "title", [panel]))
    root = ET.parse(tmp_path / "f.svg").getroot()
    lines = [_text(t) for t in next(iter(_by_id(root, "ran"))).iter(f"{SVG}text")]
    assert len(lines) > 1 and " ".join(lines) == ran
    assert all(line.endswith(",") for line in lines[:-1])
    assert _ran(ET.parse(tmp_path / "g.svg").getroot()) == "what the context says"


def test_log2_buckets() -> None:
    """Log2 buckets become contiguous edges in µs; gaps count 0; trim drops ends."""
    hist = [[0, 1, 0], [2, 3, 0], [4, 7, 2], [16, 31, 6], [32, 63, 0]]
    edges, counts = charts.log2_buckets(hist)
    assert edges == [2.0**k / 1000 for k in range(0, 7)]
    assert counts == [0, 0, 2, 0, 6, 0]
    edges, counts = charts.log2_buckets(hist, 0.5, trim=True)
    assert edges == [0.004, 0.008, 0.016, 0.032]
    assert counts == [1, 0, 3]
    edges, shares = charts.shares(hist)
    assert sum(shares) == pytest.approx(100)
    assert charts.log2_buckets([]) == ([], [])


def test_yafang2024_calls_per_second(quick_rows, figures, tmp_path) -> None:
    """The model's histograms are calls per second: counts over the run's length."""
    rows = quick_rows("yafang2024")
    experiments.get("yafang2024").plots(rows, tmp_path)
    (figure,) = figures
    calls = figure.panels[0].series
    assert len(calls) == len(rows)
    for r, s in zip(rows, calls, strict=True):
        assert s.style == "steps"
        assert sum(s.ys) * r["duration_s"] == pytest.approx(r["count"])


def test_hahn2025_published_deltas_carry_their_noise(
    quick_rows, figures, tmp_path
) -> None:
    """Each published delta is drawn with the thread's run-to-run variation."""
    experiments.get("hahn2025").plots(quick_rows("hahn2025"), tmp_path)
    (delta,) = [f for f in figures if f.stem.name == "hahn2025_delta"]
    published = [s for s in delta.panels[0].series if s.published]
    drawn = sorted(pair for s in published for pair in zip(s.ys, s.err, strict=True))
    reference = reference_rows(load_experiment("hahn2025")["reference"])
    assert drawn == sorted(
        (float(r["delta_pct"]), float(r["variation_pct"])) for r in reference
    )
    assert not any(math.isnan(y) for y, _ in drawn)
