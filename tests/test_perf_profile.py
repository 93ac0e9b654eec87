"""perf_profile: the model's LKP-style shares and the host's parsed `perf report`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pcplab import engine
from pcplab.host import profile, runner
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

    Both divide the same waits, `contention` by tasks x duration_s and the
    profile by the CPU time its windows covered (cpu_time_s).
    """
    profile, c = contended["perf_profile"], contended["contention"]
    spin_s = profile["self"][SPIN] * profile["cpu_time_s"]
    waits_s = (c["zone_lock_pct"] + c["lru_lock_pct"]) * CONTENDED["tasks"] * 0.1
    assert c["zone_lock_pct"] > 0 and c["lru_lock_pct"] > 0
    assert spin_s == pytest.approx(waits_s, rel=1e-9)


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


@pytest.mark.skipif(os.geteuid() != 0, reason="perf record -a needs root")
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
