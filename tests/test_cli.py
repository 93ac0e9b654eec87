"""The pcplab command: bad input, pagesets, a real native run and its summary."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from pcplab.summary import format_summary

RUN = ("run", "--workload", "page_fault1", "--tasks", "2")
# Long enough that a run which wrongly starts would hit the test's timeout.
NEVER_FINISHES = ("--duration", "3600")
RESULT_KEYS = {
    "engine",
    "spec",
    "machine",
    "pagesets",
    "duration_s",
    "tasks",
    "throughput",
    "contention",
    "latency_ns",
    "lock_hold_ns",
    "pcp",
    "vmstat",
    "samples",
    "invariants",
    "unavailable",
}
STAT_KEYS = {"count", "avg", "p50", "p99", "max", "log2_hist"}


def test_help_lists_the_commands(pcplab):
    """`pcplab --help` and a bare `pcplab` list the commands, exit 0."""
    for args in (("--help",), ()):
        proc = pcplab(*args)
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"^\s+pagesets\s", proc.stdout, re.M)
        assert re.search(r"^\s+run\s", proc.stdout, re.M)


def _readme_synopsis() -> dict[str, str]:
    """Return the README's "## Commands" block, split by command."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = readme.split("## Commands", 1)[1].split("```", 2)[1]
    out: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        found = re.match(r"pcplab (\S+)", line)
        name = found.group(1) if found else name
        if name:
            out[name] = out.get(name, "") + line + "\n"
    return out


def test_the_readme_synopsis_names_every_option_and_experiment():
    """What a user reads under "Commands" is what each command takes."""
    import click

    from pcplab import cli, experiments, fidelity

    synopsis = _readme_synopsis()
    for name, command in cli.cli.commands.items():
        assert name in synopsis, name
        if isinstance(command, click.Group):
            assert all(sub in synopsis[name] for sub in command.commands), name
            continue
        for param in command.params:
            longs = [o for o in param.opts + param.secondary_opts if o[:2] == "--"]
            if isinstance(param, click.Option) and "--help" not in longs:
                assert any(o in synopsis[name] for o in longs), (name, longs)
    for name in experiments.names():
        assert name in synopsis["reproduce"], name
    for name in fidelity.runners():
        assert name in synopsis["fidelity"], name


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("--scale-max", "7"), r"scale.max"),
        (("--high-fraction", "7"), r"high.fraction"),
        (("--workload", "nosuch"), r"nosuch|workload"),
    ],
)
def test_engine_rejects_bad_knobs_with_one_line(bad_input, args, names):
    """Knob range checks live in the engine; pcplab relays its one line, exit 2."""
    started = time.monotonic()
    line = bad_input(*RUN, *NEVER_FINISHES, *args, timeout=60)
    assert re.search(names, line), line
    assert time.monotonic() - started < 60  # nothing was run


def test_engine_rejects_zero_tasks(bad_input):
    """--tasks 0 is refused by the engine: one line naming tasks, exit 2."""
    line = bad_input(
        "run", "--workload", "page_fault1", "--tasks", "0", *NEVER_FINISHES
    )
    assert "tasks" in line


@pytest.mark.parametrize(
    ("args", "names"),
    [
        ((*RUN, "--bogus"), "--bogus"),
        (("run", "--workload", "page_fault1", "--tasks", "two"), "two"),
        (("run", "--tasks", "2"), "--workload"),
        ((*RUN, "--high", "512", "--high-fraction", "8"), "--high-fraction"),
        (("nosuchcommand",), "nosuchcommand"),
        (("pagesets", "--managed-pages", "1000"), "--low-wmark"),
        (("pagesets", "--host", "--cpus", "2"), "--cpus"),
        ((*RUN, *NEVER_FINISHES, "--output", "/nonexistent/dir/r.json"), "--output"),
    ],
)
def test_front_end_bad_input_is_one_line(bad_input, args, names):
    """Usage errors become one `pcplab: error:` line naming the culprit, exit 2."""
    line = bad_input(*args)
    assert line.startswith("pcplab: error: ")
    assert names in line


def test_unknown_engine(bad_input):
    """An engine name outside the design is refused, naming the engines."""
    line = bad_input(*RUN, "--engine", "bogus")
    assert "'bogus' is not one of 'native', 'sim', 'host'" in line


def test_memory_guard_refuses_before_running(bad_input):
    """A run touching more than MemAvailable is refused: one line, exit 2."""
    line = bad_input(
        "run",
        "--workload",
        "page_fault1",
        "--tasks",
        "1024",
        "--size-mib",
        "1048576",
        *NEVER_FINISHES,
    )
    assert "MemAvailable" in line


def test_pagesets_json_matches_this_kernel(pcplab):
    """The protocol's example zone gives what kernel 6.18 showed for it.

    This host's /proc/zoneinfo (6.18.44, 2 CPUs in node 0, high fraction 0)
    showed zone Normal: managed 327680, low 6267, batch 63, high_min 3133,
    high_max 20480.
    """
    proc = pcplab(
        "pagesets",
        "--managed-pages",
        "327680",
        "--low-wmark",
        "6267",
        "--cpus",
        "2",
        "--kernel",
        "6.18",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"batch": 63, "high_min": 3133, "high_max": 20480}


def test_pagesets_text_shows_the_values(pcplab):
    """Without --json, pagesets prints a table with the three values."""
    proc = pcplab(
        "pagesets", "--managed-pages", "327680", "--low-wmark", "6267", "--cpus", "2"
    )
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.splitlines()
    assert header.split()[-3:] == ["batch", "high_min", "high_max"]
    assert row.split()[0] == "Normal"


def test_pagesets_host(pcplab):
    """--host models every populated zone and says whether the kernel agrees."""
    from pcplab.procfs_zoneinfo import read_host_zoneinfo

    populated = [(z.node, z.zone) for z in read_host_zoneinfo() if z.managed > 0]
    proc = pcplab("pagesets", "--host", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["node"], r["zone"]) for r in rows] == populated
    for row in rows:
        model, kernel = row["model"], row["kernel"]
        assert model["batch"] >= 1
        assert model["high_min"] <= model["high_max"]
        compared = ["batch", "high_min", "high_max"]
        if kernel["high_min"] is None:  # kernels before 6.7
            compared = ["batch", "high"]
        differ = [k for k in compared if model[k] != kernel[k]]
        assert row["mismatched"] == differ
        assert row["match"] is (not differ)
    text = pcplab("pagesets", "--host")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[1].split() == [
        "node",
        "zone",
        "managed",
        "low",
        "cpus",
        "batch",
        "high_min",
        "high_max",
        "match",
    ]
    assert len(text.stdout.splitlines()) == 2 + len(populated)


def _check_stats(name: str, stats: dict | None, unavailable: dict) -> None:
    """Check one latency entry: its keys, funclatency rows and their total."""
    if stats is None:
        assert any(name in field for field in unavailable), (name, unavailable)
        return
    assert STAT_KEYS <= set(stats)
    rows = stats["log2_hist"]
    for slot, (lo, hi, _) in enumerate(rows, 1):
        assert (lo, hi) == ((0, 1) if slot == 1 else (1 << (slot - 1), (1 << slot) - 1))
    assert sum(count for _, _, count in rows) == stats["count"]


def test_native_run_json(pcplab):
    """A real 1 s native run: schema keys, pages conserved, throughput > 0."""
    proc = pcplab(*RUN, "--duration", "1", "--warmup", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert RESULT_KEYS <= set(result)
    assert result["engine"] == "native"
    assert result["tasks"] == 2
    assert result["spec"]["workload"] == "page_fault1"
    assert result["invariants"]["pages_conserved"] is True
    assert result["invariants"]["violations"] == []
    assert result["throughput"]["ops_per_s"] > 0
    for name in ("rmqueue_bulk", "free_pcppages_bulk", "fault"):
        _check_stats(name, result["latency_ns"][name], result["unavailable"] or {})


def test_native_run_text_and_output_file(pcplab, tmp_path):
    """The text summary shows every section; --output keeps the JSON result."""
    out = tmp_path / "result.json"
    proc = pcplab(*RUN, "--duration", "1", "--warmup", "0", "--output", out)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert RESULT_KEYS <= set(result)
    for section in (
        "throughput:",
        "contention",
        "latency (ns):",
        "pcp:",
        "invariants:",
        "unavailable:",
    ):
        assert section in proc.stdout
    assert "pages conserved yes" in proc.stdout
    if (result["latency_ns"]["rmqueue_bulk"] or {}).get("count"):
        assert "     nsecs               : count     distribution" in proc.stdout
        assert re.search(
            r"^avg = \d+ nsecs, total: \d+ nsecs, count: \d+$", proc.stdout, re.M
        )


def test_summary_names_unavailable_fields_and_formats_histograms():
    """Null fields print n/a with their reason; histograms use bcc's layout."""
    result = {
        "engine": "native",
        "spec": {"workload": "page_fault1", "tasks": 2, "kernel": "6.18"},
        "tasks": 2,
        "duration_s": 1.0,
        "throughput": {
            "ops_per_s": 1234.5,
            "pages_per_s": 1234.5,
            "ops_per_task_per_s": 617.25,
        },
        "latency_ns": {
            "rmqueue_bulk": {
                "count": 3,
                "avg": 5.0,
                "p50": 4,
                "p99": 7,
                "max": 7,
                "log2_hist": [[0, 1, 0], [2, 3, 1], [4, 7, 2]],
            },
            "free_pcppages_bulk": None,
        },
        "lock_hold_ns": {"zone_lock": None},
        "invariants": {"checked": True, "pages_conserved": True, "violations": []},
        "unavailable": {
            "latency_ns.free_pcppages_bulk": "not traced in this test",
            "lock_hold_ns.zone_lock": "no lock timing",
        },
    }
    text = format_summary(result)
    assert "latency_ns.free_pcppages_bulk: not traced in this test" in text
    assert "lock_hold_ns.zone_lock: no lock timing" in text
    assert re.search(r"^\s+free_pcppages_bulk(\s+n/a){5}$", text, re.M)
    assert "         4 -> 7          : 2        |" + "*" * 40 + "|" in text
    assert "avg = 5 nsecs, total: 15 nsecs, count: 3" in text
    assert "pages conserved yes" in text


def test_memory_beyond_the_memory_map_is_refused(bad_input, tmp_path):
    """Past the 8 TiB the 32-bit list links reach: one line with the range."""
    line = bad_input(
        "run",
        "--engine",
        "sim",
        "--machine",
        "skylake-ex",
        "--workload",
        "page_fault1",
        "--memory-mib",
        str(9 << 20),
        *NEVER_FINISHES,
    )
    assert re.search(r"memory_mib \d+ is out of range; allowed 16\.\.\d+", line)
    profile = tmp_path / "huge.toml"
    text = (
        Path(__file__).resolve().parent.parent
        / "python/pcplab/machines/haswell-desktop.toml"
    ).read_text()
    profile.write_text(re.sub(r"memory_gb = [\d.]+", "memory_gb = 10000", text))
    line = bad_input(
        "run",
        "--engine",
        "sim",
        "--machine",
        str(profile),
        "--workload",
        "page_fault1",
        *NEVER_FINISHES,
    )
    assert "'memory_gb' = 10000 is out of range" in line


SCHEDULE_COMMANDS = {
    "run": (*RUN, *NEVER_FINISHES),
    "sweep": (
        "sweep",
        "--engine",
        "native",
        "--workload",
        "page_fault1",
        "--param",
        "tasks=2",
        *NEVER_FINISHES,
    ),
    "compare": ("compare", "--workload", "page_fault1", "--tasks", "2"),
}


@pytest.mark.parametrize("command", sorted(SCHEDULE_COMMANDS))
@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("5:9", "value 9 is out of range"),
        ("x", "'x' is not T:V"),
        ("1:2:3", "'1:2:3' is not T:V"),
        ("-1:0", "time -1 is not 0 or more"),
        ("0:5,", "'' is not T:V"),
        ("0:2.5", "value '2.5' is not an integer"),
        ("x:1", "time 'x' is not a number"),
        ("0.5:0,0.2:6", "time 0.2 comes before 0.5"),
    ],
)
def test_bad_scale_max_schedule_is_one_line(bad_input, command, schedule, problem):
    """run, sweep and compare refuse a bad schedule before anything runs."""
    started = time.monotonic()
    line = bad_input(*SCHEDULE_COMMANDS[command], "--scale-max-schedule", schedule)
    assert line.startswith(f"pcplab: error: --scale-max-schedule {schedule!r}: ")
    assert problem in line
    assert line.endswith("V a pcp_batch_scale_max of 0..6, e.g. 0:5,0.5:0")
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    "args",
    [
        (*RUN, *NEVER_FINISHES, "--kernel", "4.18"),
        (*SCHEDULE_COMMANDS["sweep"], "--param", "kernel=6.18,6.6"),
    ],
)
def test_scale_max_schedule_needs_a_kernel_with_the_knob(bad_input, args):
    """Before v6.7 there is no pcp_batch_scale_max: the engine says so, exit 2."""
    line = bad_input(*args, "--scale-max-schedule", "0:0")
    assert "scale_max_schedule needs kernel 6.18, 6.19" in line


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--engine", "host", "--workload", "page_fault1", "--tasks", "1"),
        ("sweep", "--engine", "host", "--workload", "page_fault1"),
        SCHEDULE_COMMANDS["compare"],
    ],
)
def test_host_engine_refuses_a_scale_max_schedule(bad_input, args):
    """The running kernel has no vm.pcp_batch_scale_max to change: one line."""
    line = bad_input(*args, *NEVER_FINISHES, "--scale-max-schedule", "0:0")
    assert "vm.pcp_batch_scale_max" in line
    assert "--engine native or sim" in line


def test_host_refusal_names_a_sysctl_it_has(tmp_path, monkeypatch, capsys):
    """On a kernel with the sysctl the refusal says the host engine cannot."""
    from pcplab.cli import main
    from pcplab.host import sysctl

    (tmp_path / "vm").mkdir()
    (tmp_path / "vm" / "pcp_batch_scale_max").write_text("5\n")
    monkeypatch.setattr(sysctl, "SYSCTL_DIR", tmp_path)
    status = main(
        [*SCHEDULE_COMMANDS["compare"], *NEVER_FINISHES, "--scale-max-schedule", "0:0"]
    )
    line = capsys.readouterr().err.strip()
    assert status == 2
    assert "has vm.pcp_batch_scale_max, but the host engine does not change" in line


def test_sim_run_and_sweep_with_a_scale_max_schedule(pcplab, tmp_path):
    """The schedule reaches the engine: its steps in the JSON, text and sweep."""
    sim = ("--engine", "sim", "--machine", "haswell-desktop")
    timing = ("--duration", "0.4", "--warmup", "0.1")
    out = tmp_path / "r.json"
    args = ("--workload", "page_fault1", *sim, *timing)
    proc = pcplab("run", *args, "--scale-max-schedule", "0:5,0.2:0", "--output", out)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["spec"]["scale_max_schedule"] == [[0, 5], [0.2, 0]]
    assert [s["scale_max"] for s in result["scale_max_steps"]] == [5, 0]
    assert "pcp_batch_scale_max schedule" in proc.stdout
    proc = pcplab(
        "sweep", *args, "--param", "batch=31", "--scale-max-schedule", "0.2:0"
    )
    assert proc.returncode == 0, proc.stderr
    title, header = proc.stdout.splitlines()[0], proc.stdout.splitlines()[1].split()
    assert title.startswith("pcplab sweep: engine sim, machine haswell-desktop")
    assert "scale_max_steps.0.rmqueue_bulk.avg" in header
    assert "scale_max_steps.1.rmqueue_bulk.avg" in header


def test_the_summary_gives_no_average_for_a_function_never_called() -> None:
    """Count 0: the count is shown, its avg/p50/p99/max are n/a, not 0 ns."""
    zero = {"count": 0, "total": 0, "avg": 0, "p50": 0, "p99": 0, "max": 0}
    result = {
        "latency_ns": {"rmqueue_bulk": zero},
        "lock_hold_ns": {"zone_lock": zero},
        "scale_max_steps": [
            {
                "t_s": 0,
                "scale_max": 5,
                "rmqueue_bulk": zero,
                "free_pcppages_bulk": {**zero, "count": 2, "avg": 9},
            }
        ],
    }
    text = format_summary(result)
    assert re.search(r"^\s+rmqueue_bulk\s+0(\s+n/a){4}$", text, re.M)
    assert re.search(r"^\s+zone->lock\s+0(\s+n/a){3}$", text, re.M)
    assert re.search(r"^\s+0\s+5\s+0\s+n/a\s+2\s+9$", text, re.M)
