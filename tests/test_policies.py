"""The PCP policy contract: each policy a file, conserving pages, doing its job."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pcplab import engine, machines

ROOT = Path(__file__).resolve().parent.parent
POLICY_DIR = ROOT / "src" / "mm" / "policies"
NAMES = [p["name"] for p in engine.list_policies()]


def sim(machine: str, **spec: object) -> dict:
    """Run the sim engine on MACHINE with SPEC; return the result."""
    return engine.run(
        {"engine": "sim", "machine": machines.load_profile(machine), **spec}
    )


def test_the_policies_are_the_files():
    """Every file of src/mm/policies/ but the registry is a listed policy."""
    files = {p.stem.replace("_", "-") for p in POLICY_DIR.glob("*.c")} - {"registry"}
    assert set(NAMES) == files
    for policy in engine.list_policies():
        assert policy["summary"], policy["name"]
    # --policy chooses from the list the build wrote; the engine prints the same
    printed = subprocess.run(
        [engine.engine_binary("sim"), "policies"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert list(engine.list_policies()) == json.loads(printed.stdout)


@pytest.mark.parametrize("policy", NAMES)
@pytest.mark.parametrize("kernel", ["4.18", "6.6", "6.18", "6.19"])
def test_the_property_test_holds_for_every_policy(policy, kernel):
    """Random operations on every generation conserve pages under each policy."""
    needs = next(p["needs"] for p in engine.list_policies() if p["name"] == policy)
    proc = subprocess.run(
        [str(engine.engine_binary("native")), "proptest", "--kernel", kernel]
        + ["--policy", policy, "--ops", "100000", "--cpus", "6"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if needs and kernel in ("4.18", "6.6"):
        assert proc.returncode == 2 and "policy" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["policy"] == policy and report["violations"] == 0


@pytest.mark.parametrize("policy", NAMES)
def test_every_policy_is_deterministic_and_conserves_pages(policy):
    """The same spec and seed give the same result; no page is lost."""
    spec = {"workload": "page_fault1", "tasks": 8, "cross_free": True}
    first = sim("haswell-desktop", **spec, duration_s=0.1, policy=policy)
    again = sim("haswell-desktop", **spec, duration_s=0.1, policy=policy)
    assert first == again
    assert first["spec"]["policy"] == policy
    assert first["invariants"]["pages_conserved"]
    native = engine.run(
        {
            "engine": "native",
            "workload": "page_fault1",
            "tasks": 2,
            "cross_free": True,
            "duration_s": 0.3,
            "memory_mib": 1024,
            "policy": policy,
        }
    )
    assert native["invariants"]["pages_conserved"]


CROSS_FREE = {"workload": "page_fault1", "tasks": 64, "cross_free": True}


@pytest.fixture(scope="module")
def purge_threads() -> dict[str, dict]:
    """Allocator purge threads on meta-316cpu, per policy."""
    return {
        policy: sim("meta-316cpu", **CROSS_FREE, duration_s=0.5, policy=policy)
        for policy in ("default", "pcp-buddy", "event-driven")
    }


def test_pcp_buddy_cuts_zone_lock_contention_of_purge_threads(purge_threads):
    """Frees go to the owner, which reuses them: zone->lock is seldom taken."""
    base, buddy = purge_threads["default"], purge_threads["pcp-buddy"]
    assert (
        buddy["contention"]["zone_lock_pct"] < 0.5 * base["contention"]["zone_lock_pct"]
    )
    assert (
        buddy["locks"]["zone_lock"]["acquisitions"]
        < 0.5 * base["locks"]["zone_lock"]["acquisitions"]
    )
    assert buddy["locks"]["pcp_remote_lock"]["acquisitions"] > 0
    assert base["locks"]["pcp_remote_lock"]["acquisitions"] == 0


def test_event_driven_drains_in_smaller_steps(purge_threads):
    """A drain event lowers high by batch: more, smaller drains than 6.18's."""

    def per_drain(result: dict) -> float:
        return result["pcp"]["pages_drained"] / result["pcp"]["drains"]

    base, event = purge_threads["default"], purge_threads["event-driven"]
    assert event["pcp"]["drains"] > base["pcp"]["drains"]
    assert per_drain(event) < per_drain(base)


def test_uma_lockfail_grows_the_batch_under_contention():
    """4.18 refills exactly batch; with lock failures the batch grows past it."""
    spec = {"workload": "page_fault1", "kernel": "4.18", "batch": 31}
    base = sim("skylake-ex", **spec, duration_s=0.2)
    uma = sim("skylake-ex", **spec, duration_s=0.2, policy="uma-lockfail")
    assert base["pcp"]["pages_refilled"] == 31 * base["pcp"]["refills"]
    assert base["locks"]["zone_lock"]["contended"] > 0
    assert uma["pcp"]["pages_refilled"] > 31 * uma["pcp"]["refills"]


def test_reproduce_policies_sets_every_policy_beside_the_default(pcplab, tmp_path):
    """`reproduce policies`: every machine, case and policy, with seeds."""
    out = tmp_path / "report"
    proc = pcplab("reproduce", "policies", "--quick", "--seeds", "2", "--out", out)
    assert proc.returncode == 0, proc.stderr
    import csv

    with open(out / "policies.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    seen = {(r["machine"], r["case"], r["policy"]) for r in rows}
    machines_, cases = {r["machine"] for r in rows}, {r["case"] for r in rows}
    assert len(seen) == len(rows) == len(machines_) * len(cases) * len(NAMES)
    assert {r["seeds"] for r in rows} == {"2"}
    for machine in machines_:
        cell = {
            r["policy"]: float(r["zone_lock_pct"])
            for r in rows
            if r["machine"] == machine and r["case"] == "cross_free"
        }
        assert cell["pcp-buddy"] < cell["default"], machine


def test_purge_threads_serve_several_allocating_tasks():
    """cross_free_ratio 3: one freeing task per three allocating ones."""
    spec = {"workload": "page_fault1", "cross_free": True, "duration_s": 0.1}
    result = sim("haswell-desktop", **spec, tasks=8, cross_free_ratio=3)
    assert result["spec"]["cross_free_ratio"] == 3
    assert result["invariants"]["pages_conserved"]
    assert result["locks"]["xfree_lock"]["acquisitions"] > 0
    with pytest.raises(Exception, match="multiple of 4 tasks, not 6"):
        sim("haswell-desktop", **spec, tasks=6, cross_free_ratio=3)


@pytest.mark.parametrize("engine_name", ["sim", "native", "host"])
def test_mass_exit_runs_on_every_engine(engine_name):
    """Every task unmaps at the same tick; pages come back on every engine."""
    assert engine_name in engine.built_engines()  # make setup builds all three
    spec = {"workload": "mass_exit", "tasks": 2, "duration_s": 0.2, "size_mib": 8}
    if engine_name == "sim":
        result = sim("haswell-desktop", **spec, args={"period_ms": 5})
    else:
        extra = {"memory_mib": 1024} if engine_name == "native" else {}
        result = engine.run({"engine": engine_name, **spec, **extra})
    assert result["throughput"]["pages_per_s"] > 0
    if engine_name != "host":
        assert result["invariants"]["pages_conserved"]
