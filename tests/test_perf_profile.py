"""perf_profile: the model's LKP-style shares and the host's parsed `perf report`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BAD_INPUT_LINE, needs
from pcplab import engine, summary
from pcplab.host import procfs, profile, runner
from pcplab.host.cli import compare_rows
from test_sim import raw_run, sim_spec

SPIN = "native_queued_spin_lock_slowpath"
CONTENDED = {  # Huang Ying's 2023 setup: zone->lock and lru_lock contended
    "workload": "page_fault1",
    "tasks": 8,
    "kernel": "6.6",
    "batch": 63,
    "high": 126,
    "no_free_scaling": True,
    "duration_s": 0.1,
    "warmup_s": 0.05,
}


@pytest.fixture(scope="module")
def contended() -> dict:
    """Run the contended sapphire-rapids spec once for the module."""
    return json.loads(raw_run(sim_spec("sapphire-rapids", **CONTENDED)))


def test_sim_shares_sum_to_at_most_100(contended):
    """Self shares are of the measured CPU time: together at most 100%."""
    profile = contended["perf_profile"]
    total = sum(profile["self"].values())
    assert 99.0 < total <= 100.0
    assert total + profile["unattributed_pct"] == pytest.approx(100.0)
    for share in profile["children"].values():
        assert 0 < share <= 100.0


def test_sim_spinlock_share_is_the_zone_and_lru_contention(contended):
    """The slow path's cycles are the zone->lock and lru_lock waits of `contention`.

    Both divide the same waits by the same CPU time, the span the CPUs'
    statistics windows covered (cpu_time_s).
    """
    profile, c = contended["perf_profile"], contended["contention"]
    assert c["zone_lock_pct"] > 0 and c["lru_lock_pct"] > 0
    spin = profile["self"][SPIN]
    assert spin == pytest.approx(c["zone_lock_pct"] + c["lru_lock_pct"], rel=1e-9)


def test_sim_children_hold_their_callees(contended):
    """The fault's children hold the allocator's; the allocator its spins and buddy."""
    profile = contended["perf_profile"]
    self_, children = profile["self"], profile["children"]
    assert children["handle_mm_fault"] > children["get_page_from_freelist"]
    assert children["get_page_from_freelist"] > self_["rmqueue_bulk"]
    assert children["handle_mm_fault"] >= (
        self_["handle_mm_fault"] + self_["clear_page_erms"] + self_["lru_add_fn"]
    )
    assert "free_unref_page_list" in children  # the 6.6 kernel's free of munmap


def test_sim_anonymous_clear_is_under_the_allocator(contended):
    """page_fault1's clear_page is the allocator's (__GFP_ZERO), a COW's copy is not.

    The kernel clears an anonymous fault's page in post_alloc_hook(), under
    get_page_from_freelist; page_fault2 copies the file page in the fault.
    """
    self_, children = (contended["perf_profile"][k] for k in ("self", "children"))
    allocator = ("clear_page_erms", "__rmqueue_pcplist", "rmqueue_bulk")
    assert children["get_page_from_freelist"] >= sum(self_[f] for f in allocator)
    cow = json.loads(
        raw_run(
            sim_spec("haswell-desktop", workload="page_fault2", tasks=1, duration_s=0.1)
        )
    )["perf_profile"]
    assert cow["children"]["get_page_from_freelist"] < cow["self"]["copy_page"]


def test_sim_a_page_written_after_its_clear_is_cache_hot():
    """mmap_fill writes each page the fault just cleared: L1/L2 stores, no DRAM.

    The write costs 4096 / hot_write_bytes_per_cycle cycles, an eighth of
    the clear's 4096 / clear_bytes_per_cycle; written cold it would cost
    a clear again.
    """
    spec = sim_spec("haswell-desktop", workload="mmap_fill", tasks=1, duration_s=0.1)
    self_ = json.loads(raw_run(spec))["perf_profile"]["self"]
    assert 0 < self_["user"] < self_["clear_page_erms"] / 4


def test_sim_one_task_clears_more_than_it_does_anything_else():
    """page_fault1, 1 task: clear_page_erms leads every function but the fault's own.

    handle_mm_fault's self share is the model's whole per-fault base (the
    trap, the page-table walk, the pte install), which LKP spreads over the
    entry code and the fault path; every other function is behind clearing.
    """
    result = json.loads(
        raw_run(
            sim_spec(
                "haswell-desktop",
                workload="page_fault1",
                tasks=1,
                duration_s=0.1,
                warmup_s=0.05,
            )
        )
    )
    self_ = dict(result["perf_profile"]["self"])
    self_.pop("handle_mm_fault")
    assert max(self_, key=self_.get) == "clear_page_erms"
    assert SPIN not in self_  # one task waits for nobody


def test_native_engine_has_no_profile():
    """The native engine charges no cost terms: null, with the reason."""
    proc = subprocess.run(
        [engine.engine_binary("native"), "run"],
        input=json.dumps(
            {
                "workload": "page_fault1",
                "tasks": 1,
                "duration_s": 0.05,
                "warmup_s": 0,
                "size_mib": 4,
                "memory_mib": 256,
            }
        ).encode(),
        capture_output=True,
        timeout=120,
        check=True,
    )
    result = json.loads(proc.stdout)
    assert result["perf_profile"] is None
    assert "real time" in result["unavailable"]["perf_profile"]


DATA = Path(__file__).parent / "data" / "host"


def test_host_report_parsing_self_and_children():
    """`perf report --sort symbol -g none`: event, self and children per function.

    The fixtures are this VM's page_fault1 (cpu-clock: no hardware PMU);
    user-space rows are summed into `user`.
    """
    own = profile.parse_report((DATA / "perf-report-self.txt").read_text())
    assert own["event"] == "cpu-clock:pppH"
    assert own["self"]["clear_page_erms"] == 5.29
    assert own["self"]["exc_page_fault"] == 9.37
    assert own["self"]["user"] >= 7.07 + 2.89
    assert own["children"] == {}
    assert sum(own["self"].values()) <= 100.0
    calls = profile.parse_report((DATA / "perf-report-children.txt").read_text())
    assert calls["children"]["handle_mm_fault"] == 24.10
    assert calls["self"]["handle_mm_fault"] == 0.35
    assert "user" not in calls["children"]
    with pytest.raises(ValueError, match="Samples"):
        profile.parse_report("nothing here\n")


def _host_like() -> dict:
    """Return a host result whose perf_profile is the fixtures' parsed reports."""
    own = profile.parse_report((DATA / "perf-report-self.txt").read_text())
    calls = profile.parse_report((DATA / "perf-report-children.txt").read_text())
    return {"perf_profile": {**own, "children": calls["children"]}}


def test_summary_shows_the_largest_shares_by_lkp_name(contended):
    """The text summary lists the 8 largest self shares, then children, LKP-named."""
    text = summary.format_summary(contended)
    section = text.split("perf-profile (", 1)[1].split("\n\n", 1)[0]
    self_rows = [ln.split()[0] for ln in section.splitlines() if ".self." in ln]
    largest = sorted(
        contended["perf_profile"]["self"].items(), key=lambda kv: (-kv[1], kv[0])
    )[: summary.PROFILE_ROWS_SHOWN]
    assert len(contended["perf_profile"]["self"]) > summary.PROFILE_ROWS_SHOWN
    assert self_rows == [summary.lkp_name("self", fn) for fn, _ in largest]
    for fn in contended["perf_profile"]["children"]:
        assert f"perf-profile.children.cycles-pp.{fn} " in section


def test_compare_sets_the_profiles_side_by_side(contended):
    """The compare table: host and model rows of clearing, the spin, two subtrees."""
    rows = {r[0]: r[1:] for r in compare_rows(_host_like(), contended)}
    host, model, _ = rows["perf-profile.self.cycles-pp.clear_page_erms"]
    assert (host, model) == (5.29, contended["perf_profile"]["self"]["clear_page_erms"])
    spin = rows[f"perf-profile.self.cycles-pp.{SPIN}"]
    assert spin[0] == 0.0 and spin[1] > 0  # never sampled on the host: 0
    assert rows["perf-profile.children.cycles-pp.handle_mm_fault"][0] == 24.10
    assert rows["perf-profile.children.cycles-pp.get_page_from_freelist"][1] > 0
    native = compare_rows(_host_like(), {"perf_profile": None})
    assert all(r[2] is None for r in native if r[0].startswith("perf-profile."))


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "--engine", "host"),
        ("host", "run"),
        ("compare",),
    ],
)
def test_profile_perf_that_cannot_run_is_refused(pcplab_command, argv):
    """An explicit --profile perf without perf is one line, exit 2, nothing run."""
    proc = subprocess.run(
        [*pcplab_command, *argv, "--workload", "page_fault1", "--tasks", "1"]
        + ["--duration", "0.1", "--profile", "perf"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": str(Path(pcplab_command[0]).parent)},
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert BAD_INPUT_LINE.match(line)
    assert "--profile perf: no perf binary" in line


def test_init_on_alloc_from_the_command_line_then_the_config(tmp_path, monkeypatch):
    """init_on_alloc= on the command line wins; else the build's default."""
    cmdline = tmp_path / "cmdline"
    monkeypatch.setattr(procfs, "PROC_CMDLINE", cmdline)
    monkeypatch.setattr(procfs, "PROC_CONFIG", tmp_path / "no-config.gz")
    (tmp_path / f"config-{procfs.kernel_release()}").write_text(
        "CONFIG_INIT_ON_ALLOC_DEFAULT_ON=y\n"
    )
    cmdline.write_text("quiet init_on_alloc=0 -- init_on_alloc=1\n")
    assert procfs.init_on_alloc(tmp_path) == {
        "enabled": False,
        "source": str(cmdline),
    }
    cmdline.write_text("quiet\n")
    assert procfs.init_on_alloc(tmp_path)["enabled"] is True
    assert procfs.init_on_alloc(tmp_path / "none")["enabled"] is None


@needs(None if os.geteuid() == 0 else "perf record -a needs root")
def test_host_one_task_page_fault1_clears_pages():
    """Live: perf record of page_fault1, 1 task, gives clear_page_erms a share."""
    result = runner.run(
        {
            "engine": "host",
            "workload": "page_fault1",
            "tasks": 1,
            "duration_s": 0.5,
            "warmup_s": 0.1,
        },
        trace_s=0,
        lock_stats="off",
        profile_with="perf",
    )
    section = result["perf_profile"]
    assert section is not None, result["unavailable"].get("perf_profile")
    assert section["self"].get("clear_page_erms", 0) > 0
    assert section["children"].get("handle_mm_fault", 0) > 0
    assert "perf record -a -g" in section["method"]
