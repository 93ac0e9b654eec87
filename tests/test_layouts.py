"""Each layout beside a sample of the real tool's output (tests/data/layouts/).

LKP's 0-day comparison, mmtests' compare-kernels, stress-ng's metrics and
will-it-scale's runtest.py CSV: the samples are the tools' own output, so a
column that moves, a header line that goes missing or a cell the model
invents fails here.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from pcplab import headers
from pcplab.comparison import METRICS, columns_of, lkp, report
from pcplab.funclatency import format_funclatency
from pcplab.repeats import combine_rows
from pcplab.runtest import runtest_csv
from pcplab.stats import Sample
from pcplab.stressng import metrics_lines

DATA = Path(__file__).parent / "data" / "layouts"
RATE = "throughput.ops_per_s"
ZONE = "contention.zone_lock_pct"
TIME = "latency_ns.rmqueue_bulk.avg"

# lkp-tests lib/compare.rb: %10 value, ` ±%3d%` or 6 blanks, `%+10.1f%% ` or
# `%+10.1f  ` (pcplab: a `*` in the last blank), %10 value, err, 2 blanks, name.
LKP_ROW = re.compile(
    r"^(?P<base>[ \S]{9}\S)(?P<err>( ±[ \d]{3}%| {6}))"
    r"(?P<change>[ \S]{9}\S)(?P<unit>[% ])[* ]"
    r"(?P<new>[ \S]{9}\S)( ±[ \d]{3}%| {6})  (?P<metric>\S+)$"
)


def _result(seed: int, ops: float, zone: float, tasks: int = 8, **spec) -> dict:
    """Return a minimal sim result: what a comparison and its header read."""
    return {
        "engine": "sim",
        "tasks": tasks,
        "duration_s": 0.5,
        "spec": {
            "workload": "page_fault1",
            "kernel": "4.18",
            "machine": "haswell-desktop",
            "mode": "process",
            "tasks": tasks,
            "seed": seed,
            **spec,
        },
        "machine": {
            "name": "haswell-desktop",
            "topology": {"cpus": 8, "sockets": 1, "memory_gb": 16},
        },
        "throughput": {"ops_per_s": ops, "pages_per_s": ops},
        "contention": {"zone_lock_pct": zone, "lru_lock_pct": 1.0},
        "latency_ns": {"rmqueue_bulk": {"count": 3, "avg": 7.0, "p99": 9.0}},
    }


def _groups() -> list[list[dict]]:
    """Two configurations of three seeds: a clear gain, a zone share near 0."""
    base = [_result(s, 100e3 + 1e3 * s, 0.001) for s in (1, 2, 3)]
    new = [_result(s, 150e3 + 4e3 * s, 0.003) for s in (1, 2, 3)]
    return [base, new]


def _table(lines: list[str]) -> list[str]:
    """Return the lines from the label line of an LKP block to its last row."""
    start = next(i for i, line in enumerate(lines) if line.startswith("-" * 16)) - 1
    rows = lines[start:]
    end = next((i for i, line in enumerate(rows) if not line.strip()), len(rows))
    return [line.rstrip() for line in rows[:end]]


def test_lkp_block_has_the_robots_header_and_columns():
    """testcase, test machine, parameters, axes and commits, then LKP's columns."""
    sample = (DATA / "lkp_compare.txt").read_text().splitlines()
    ours = report("lkp", ["batch=31", "batch=63"], _groups()).splitlines()
    head = ["testcase:", "test machine:", "parameters:", "=" * 89, "commit:"]
    for lines in (sample, ours):
        found = [next(i for i, x in enumerate(lines) if x.startswith(h)) for h in head]
        assert found == sorted(found), head
        axes = lines[found[3] + 1]
        values = lines[found[3] + 2]
        assert axes.endswith(":") and values.startswith("  ")
        assert len(axes[:-1].split("/")) == len(values.strip().split("/"))
        params = lines[found[2] + 2 : found[3] - 1]
        assert params and all(re.match(r"^\t[a-z_]+: \S", p) for p in params)
    assert ours[0].startswith("pcplab noticed a +")  # the robot's first line
    ran = dict(p.strip().split(": ") for p in ours if p.startswith("\t"))
    assert {"nr_task", "mode", "test", "engine", "kernel", "instrument"} <= set(ran)
    assert ran["kernel"] == "4.18" and ran["test"] == "page_fault1"
    mine, theirs = _table(ours), _table(sample)
    assert mine[1:4] == theirs[1:4]  # dashes, %stddev, the backslash line
    for line in mine[4:] + theirs[4:]:
        assert LKP_ROW.match(line), line
    assert len(mine) > 4 and len(theirs) > 4


def test_lkp_prints_no_zero_stddev_and_no_star_on_an_unchanged_row():
    """± only above 2% as LKP; 0.00 -> 0.00 is no change, however steady."""
    text = report("lkp", ["a", "b"], _groups())
    assert "±  0%" not in text and "±  1%" not in text
    zone = next(line for line in text.splitlines() if line.endswith(ZONE))
    assert zone.split()[:3] == ["0.00", "+0.0", "0.00"]
    assert "*" not in zone
    rate = next(line for line in text.splitlines() if line.endswith(RATE))
    gain = 100 * (158e3 - 102e3) / 102e3  # the means of _groups()
    assert LKP_ROW.match(rate).group("change").strip() == f"{gain:+.1f}"
    assert "%*" in rate  # three seeds a side, far apart: significant


def test_mmtests_layout_has_compare_kernels_spread_rows():
    """Hmean/Amean, then Stddev and CoeffVar rows, in compare-kernels' cells."""
    sample = (DATA / "mmtests_compare.txt").read_text().splitlines()
    text = report("mmtests", ["batch=31", "batch=63"], _groups())
    lines = text.splitlines()
    assert lines[0].startswith("pcplab: engine sim, machine haswell-desktop")
    ours = lines[2 : lines.index("", 2)]
    cell = re.compile(r"^ *(-?[\d.]+|n/a) [(*] *(-?[\d.]+|n/a)%[)*]$")
    stats = []
    for table in (sample, ours):
        prefix = len(table[0]) - 23 * 2  # two columns of 23 characters
        assert table[0][:prefix].strip() == ""
        for row in table[1:]:
            tail = row[prefix:]
            assert len(tail) == 46 and cell.match(tail[:23]) and cell.match(tail[23:])
        stats.append([row.split()[0] for row in table[1:]])
    for names in stats:  # rows grouped by statistic, as compare-kernels prints
        runs = [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]
        assert len(runs) == len(set(runs))
        assert {"Stddev", "CoeffVar"} <= set(names)
    rate = [row for row in ours if row.split()[1] == RATE]
    assert [r.split()[0] for r in rate] == ["Hmean", "Stddev", "CoeffVar"]
    std = Sample.of([100e3 + 1e3 * s for s in (1, 2, 3)]).std
    assert rate[1].split()[2] == f"{std:.2f}"
    assert rate[2].split()[2] == f"{100 * std / 102e3:.2f}"


def test_stress_vm_prints_stress_ngs_metrics_columns():
    """stress-ng's header and units rows; figures end where stress-ng's do."""
    prefix = re.compile(r"^stress-ng: \w+: +\[\d+\] ")
    text = (DATA / "stress_ng_metrics.txt").read_text()
    sample = [prefix.sub("", x) for x in text.splitlines()]
    result = _result(1, 3884.0, 1.0, workload="stress_vm")
    ours = metrics_lines(result)
    for a, b in zip(sample[:2], ours[:2], strict=True):
        assert re.split(r" {2,}", a.strip()) == re.split(r" {2,}", b.strip())

    def ends(row: str) -> list[int]:
        return [m.end() for m in re.finditer(r"\S+", row)][1:]

    assert ends(ours[2]) == ends(sample[2].rstrip())
    cells = ours[2].split()
    assert cells[:3] == ["vm", str(round(3884.0 * 0.5)), "0.50"]
    assert cells[3:] == ["n/a", "n/a", "3884.00", "n/a"]  # usr, sys: not split
    assert any("n/a" in note and "usr" in note for note in ours[3:])


def test_runtest_csv_has_will_it_scales_columns():
    """runtest.py's header and first row; linear from the 1-task point."""
    text = (DATA / "will_it_scale_runtest.csv").read_text()
    sample = list(csv.reader(io.StringIO(text)))
    groups = [
        [_result(s, 1000.0 * tasks + s, 0, tasks=tasks, mode=mode) for s in (1, 2)]
        for tasks in (1, 2, 4)
        for mode in ("process", "thread")
    ]
    ours = list(csv.reader(io.StringIO(runtest_csv(groups))))
    assert ours[0] == sample[0]
    assert ours[1][:2] == sample[1][:2] == ["0", "0"]
    for table in (sample, ours):
        rows = [[float(c) if c else None for c in row] for row in table[2:]]
        assert all(len(row) == 6 for row in rows)
        one = rows[0]
        assert one[0] == 1
        for row in rows:
            assert row[5] == row[0] * max(one[1], one[3])
    assert [r[0] for r in ours[2:]] == ["1", "2", "4"]
    assert all(r[2] == "" and r[4] == "" for r in ours[1:])  # idle: not measured
    assert ours[3][1] == str(int(2000 + 1.5))  # the mean over the seeds


def test_runtest_csv_leaves_a_mode_it_did_not_run_empty():
    """A sweep of processes only has no threads column figures, and no zeros."""
    groups = [[_result(1, 500.0 * t, 0, tasks=t)] for t in (2, 4)]
    rows = list(csv.reader(io.StringIO(runtest_csv(groups))))[2:]
    assert [r[3] for r in rows] == ["", ""] and [r[5] for r in rows] == ["", ""]


def test_funclatency_bars_and_count_come_from_the_same_seeds():
    """Seeds' histograms of different lengths average bucket by bucket."""
    runs = [
        [{"count": 6, "total": 60, "hist": [[0, 1, 2], [2, 3, 4]]}],
        [{"count": 3, "total": 30, "hist": [[0, 1, 3]]}],
    ]
    (row,) = combine_rows(runs)
    assert row["hist"] == [[0, 1, 2.5], [2, 3, 2.0]]
    text = format_funclatency(row["hist"], total=row["total"], count=row["count"])
    bars = [int(line.split(":")[1].split()[0]) for line in text.splitlines()[1:3]]
    footer = text.splitlines()[-1]
    assert footer.endswith(f"count: {sum(bars)}")


def test_sweep_rows_carry_every_metric_a_comparison_shows():
    """The sweep's table and CSV rows hold every METRIC the LKP block shows."""
    from pcplab.sweep_cli import _metrics

    row = _metrics(_result(1, 10.0, 1.0))
    assert list(row) == [m.path for m in METRICS]


def test_every_header_names_what_ran():
    """Engine, machine, kernel, workload, tasks and instrument, each once."""
    groups = _groups()
    groups[1] = [{**r, "spec": {**r["spec"], "kernel": "6.19"}} for r in groups[1]]
    line = headers.line([r for g in groups for r in g])
    assert line == (
        "engine sim, machine haswell-desktop, kernel 4.18|6.19, "
        "workload page_fault1, tasks 8, instrument none"
    )
    lkp_text = report("lkp", ["k=4.18", "k=6.19"], groups)
    axes = lkp_text.split("=" * 89 + "\n", 1)[1].splitlines()[0]
    assert "kernel" not in axes  # the columns differ in it: their own lines say
    assert "\tkernel: 4.18|6.19" in lkp_text
    one = lkp(["x"], columns_of([groups[0]]))
    assert "%stddev" in one


def test_a_thread_table_lines_up_under_its_header():
    """Cells wider than their label widen the column, header and all."""
    from pcplab.render import align, line

    layout = "batch   score   change"
    rows = [line(layout, ["31", "15345900/15345900 (+0.0%)", "+0.00%"])]
    rows.append(line(layout, ["63", "17992886/17992886 (+17.2%)", "+17.25%"]))
    text = align("\n".join(["title", layout, *rows, "", "after"]), layout)
    lines = text.splitlines()
    assert lines[0] == "title" and lines[-2:] == ["", "after"]
    ends = [[m.end() for m in re.finditer(r"\S+(?: \S+)*", x)] for x in lines[1:4]]
    assert ends[0] == ends[1] == ends[2]
    assert re.split(r" {3,}", lines[1]) == ["batch", "score", "change"]
