"""The allocator model: property tests and each generation's PCP behaviour.

Property tests run random operation sequences under the invariant checker;
short native runs show the refill and drain sizes each kernel generation uses.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from pcplab import engine

KERNELS = ("4.18", "6.6", "6.18", "6.19")


def proptest(*args: object) -> subprocess.CompletedProcess:
    """Run the engine's property test with ARGS; return the finished process."""
    return subprocess.run(
        [str(engine.engine_binary("native")), "proptest", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.parametrize("kernel", KERNELS)
def test_random_operations_conserve_every_page(kernel):
    """Random operations on a zone that runs dry conserve every page.

    Two million allocs, frees, drains, decays and knob changes; the checker
    finds every page in exactly one place.
    """
    for seed in (1, 2):
        proc = proptest(
            "--kernel", kernel, "--seed", seed, "--ops", 1_000_000, "--cpus", 6
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        summary = json.loads(proc.stdout)
        assert summary["violations"] == 0
        assert summary["checks"] >= 50
        # the zone really ran dry and allocations really happened
        assert summary["alloc_failures"] > 0
        assert summary["allocs"] > 400_000


@pytest.mark.parametrize("fault", ["leak", "count"])
def test_checker_catches_a_broken_model(fault):
    """A forgotten block or an off-by-one pcp->count fails the run loudly."""
    proc = proptest("--seed", 3, "--ops", 200_000, "--inject", fault)
    assert proc.returncode != 0
    if proc.returncode == 3:
        assert json.loads(proc.stdout)["violations"] > 0
    else:
        assert "model bug" in proc.stderr


def native(**spec: object) -> dict:
    """Run a short native page_fault1 run with SPEC overrides; return the result."""
    request = {
        "workload": "page_fault1",
        "tasks": 2,
        "duration_s": 1,
        "warmup_s": 0,
        "memory_mib": 1024,
    }
    request.update(spec)
    result = engine.run(request)
    assert result["invariants"]["pages_conserved"], result["invariants"]
    return result


def per_call(result: dict, pages: str, calls: str) -> float:
    """Return the average number of pages per pcp refill or drain."""
    pcp = result["pcp"]
    assert pcp[calls] > 0
    return pcp[pages] / pcp[calls]


def test_v418_refills_and_drains_exactly_batch():
    """4.18: rmqueue_bulk takes batch pages, free_pcppages_bulk frees batch."""
    result = native(kernel="4.18", batch=31)
    assert result["pagesets"][0]["high"] == 6 * 31
    assert result["pcp"]["pages_refilled"] == 31 * result["pcp"]["refills"]
    assert result["pcp"]["pages_drained"] == 31 * result["pcp"]["drains"]


def test_scale_max_bounds_refill_size():
    """pcp_batch_scale_max 0 keeps every refill within batch; 5 lets it grow."""
    small = native(scale_max=0)
    large = native(scale_max=5)
    assert per_call(small, "pages_refilled", "refills") <= 63
    assert per_call(large, "pages_refilled", "refills") > 63


def test_no_alloc_scaling_refills_exactly_batch():
    """no_alloc_scaling (the kernel before c0a242394cb9) refills batch; 6.18 more."""
    plain = native(batch=63, high=2000, no_alloc_scaling=True)
    assert plain["pcp"]["pages_refilled"] == 63 * plain["pcp"]["refills"]
    scaled = native(batch=63, high=2000)
    assert per_call(scaled, "pages_refilled", "refills") > 63


def test_scale_max_changes_while_running():
    """A scale-max schedule is applied mid-run and the run stays consistent."""
    result = native(scale_max=5, scale_max_schedule=[[0.2, 0], [0.6, 6]])
    assert result["spec"]["scale_max_schedule"] == [[0.2, 0], [0.6, 6]]
    assert result["invariants"]["pages_conserved"], result["invariants"]
    steps = result["scale_max_steps"]
    assert [(s["t_s"], s["scale_max"]) for s in steps] == [(0, 5), (0.2, 0), (0.6, 6)]
    # the steps split the run's calls between them
    calls = {"rmqueue_bulk": "refills", "free_pcppages_bulk": "drains"}
    for name, total in calls.items():
        assert sum(s[name]["count"] for s in steps) == result["pcp"][total], name
    # refills of batch pages while the knob is 0, of up to batch << 5 and
    # << 6 around it: the same faults call rmqueue_bulk far more often then
    # (calls are counted, not timed: native timing swings under load)
    ends = [s["t_s"] for s in steps[1:]] + [result["spec"]["duration_s"]]
    rate = [
        s["rmqueue_bulk"]["count"] / (end - s["t_s"])
        for s, end in zip(steps, ends, strict=True)
    ]
    assert rate[1] > 3 * max(rate[0], rate[2]), steps


def test_scale_max_schedule_counts_from_the_measured_phase(schedule_5_to_0_check):
    """Native: 5 -> 0 at 0.3 s into measuring; rmqueue_bulk gets faster then."""
    result = native(
        scale_max=5, warmup_s=0.5, duration_s=0.8, scale_max_schedule=[[0.3, 0]]
    )
    schedule_5_to_0_check(result)


def test_v619_frees_in_batch_chunks():
    """6.19 (batched relinquish): no free_pcppages_bulk call exceeds batch."""
    result = native(kernel="6.19", batch=15)
    assert result["spec"]["relinquish"] == "batched"
    # every call frees at most batch pages, so the average can't exceed it
    assert per_call(result, "pages_drained", "drains") <= 15
    unbatched = native(kernel="6.18", batch=15)
    assert per_call(unbatched, "pages_drained", "drains") > 15


def test_no_free_scaling_drains_exactly_batch():
    """The 2023 debug kernel (high = 2 x batch, no free scaling) drains batch."""
    result = native(high=126, batch=63, no_free_scaling=True)
    assert result["pagesets"][0]["high_min"] == 126
    assert per_call(result, "pages_drained", "drains") == 63


def test_histograms_account_for_every_call():
    """Each latency's log2 histogram holds exactly its count of samples."""
    result = native()
    for section in ("latency_ns", "lock_hold_ns"):
        for name, stats in result[section].items():
            assert sum(row[2] for row in stats["log2_hist"]) == stats["count"], name
            if stats["count"]:
                assert stats["p50"] <= stats["p99"] <= stats["max"], name
    assert result["latency_ns"]["fault"]["count"] == result["vmstat"]["pgalloc"]


def test_more_tasks_than_cpus_keep_running():
    """Oversubscribed native runs yield while waiting instead of convoying.

    A FIFO queue behind a preempted thread stalls every CPU (the MCS lock
    once gave 1000x fewer pages with three tasks on two CPUs); the engine
    says which wait it used, and the extra task costs at most its share.
    """
    cpus = len(os.sched_getaffinity(0))
    fitting = native(workload="mmap_fill", size_mib=32, tasks=cpus)
    over = native(workload="mmap_fill", size_mib=32, tasks=cpus + 1)
    assert fitting["machine"]["lock_wait"] == "mcs"
    assert over["machine"]["lock_wait"] == "spin-yield"
    assert over["throughput"]["ops_per_s"] > 0.25 * fitting["throughput"]["ops_per_s"]
