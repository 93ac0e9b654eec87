"""Instruments on the sim engine: each charged where the traced kernel pays it.

function_graph on F alone (set_ftrace_filter) and funclatency probe outside
what they time; function_graph-children (set_graph_function) traces the
calls under F, under zone->lock, and lengthens the hold; perf-profile
samples at its period. Without an instrument the result does not mention one.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from pcplab import engine, machines
from test_sim import raw_run

# Huang Ying's 2023 setup, small and short: pcp->high = 2 x batch.
SPEC = {
    "engine": "sim",
    "workload": "page_fault1",
    "kernel": "6.6",
    "tasks": 8,
    "batch": 63,
    "high": 126,
    "no_free_scaling": True,
    "duration_s": 0.1,
    "warmup_s": 0.05,
}


def run(instrument: str | None = None) -> dict:
    """Run SPEC on sapphire-rapids with INSTRUMENT; return the result."""
    spec = {**SPEC, "machine": machines.load_profile("sapphire-rapids")}
    if instrument is not None:
        spec["instrument"] = instrument
    return json.loads(raw_run(spec))


def test_no_instrument_leaves_no_trace_in_the_result():
    """The default run names no instrument, in the spec or the result."""
    result = run()
    assert "instrument" not in result
    assert "instrument" not in result["spec"]


def test_function_graph_children_lengthens_the_zone_lock_hold_it_times():
    """Nested calls are charged under zone->lock: the hold grows by their cost."""
    plain = run()
    traced = run("function_graph-children:rmqueue_bulk,free_pcppages_bulk")
    instr = traced["instrument"]
    assert traced["spec"]["instrument"] == instr["instrument"]
    assert instr["nested_calls"] > 0
    assert instr["charged_under_zone_lock_ns"] > 0
    holds = sum(
        traced["lock_hold_ns"][side]["count"]
        for side in ("rmqueue_bulk", "free_pcppages_bulk")
    )
    per_hold = instr["charged_under_zone_lock_ns"] / holds
    grown = (
        traced["lock_hold_ns"]["rmqueue_bulk"]["avg"]
        - plain["lock_hold_ns"]["rmqueue_bulk"]["avg"]
    )
    assert grown > per_hold / 2


@pytest.mark.parametrize(
    "instrument",
    [
        "funclatency:rmqueue_bulk",
        "function_graph:rmqueue_bulk",
        "function_graph:rmqueue_bulk,free_pcppages_bulk",
    ],
)
def test_traced_function_alone_is_charged_outside_the_interval(instrument):
    """Two hooks per traced call, nothing nested, the zone->lock hold untouched."""
    plain = run()
    traced = run(instrument)
    instr = traced["instrument"]
    calls = sum(traced["latency_ns"][f]["count"] for f in instr["functions"])
    assert instr["nested_calls"] == 0
    assert instr["charged_under_zone_lock_ns"] == 0
    assert abs(instr["probe_hits"] - 2 * calls) <= 2 * SPEC["tasks"]
    assert instr["charged_ns"] > 0
    for f in instr["functions"]:
        hold = traced["lock_hold_ns"][f]["avg"]
        assert abs(hold / plain["lock_hold_ns"][f]["avg"] - 1) < 0.1


def test_perf_profile_samples_every_cpu_at_its_period():
    """One sample per 1000003 cycles of every task's time, spun or not."""
    traced = run("perf-profile")
    instr = traced["instrument"]
    clock_ghz = traced["machine"]["topology"]["clock_ghz"]
    expected = SPEC["tasks"] * SPEC["duration_s"] * clock_ghz * 1e9 / 1000003
    taken = instr["samples"] + instr["samples_while_spinning"]
    assert abs(taken / expected - 1) < 0.05
    assert instr["charged_ns"] == instr["samples"] * instr["costs_ns"]["sample"]


def test_a_traced_run_is_deterministic():
    """Same spec, seed and instrument: the same result."""
    assert run("perf-profile") == run("perf-profile")


RETURN = "swapgs_restore_regs_and_return_to_usermode"


def run_trapped(instrument: str) -> dict:
    """Run SPEC with INSTRUMENT on sapphire-rapids given a measured trap.

    Its entry 450 ns, its return 150 ns (as calibrate splits it: 3 to 1).
    """
    machine = {**machines.load_profile("sapphire-rapids"), "costs": {}}
    machine["costs"]["fault_trap_ns"] = 450.0
    machine["costs"]["fault_trap_return_ns"] = 150.0
    return json.loads(raw_run({**SPEC, "machine": machine, "instrument": instrument}))


def test_cpu_clock_samples_interrupts_off_time_where_they_come_back_on():
    """cpu-clock: the lock time in the irqrestore, the trap's return in user space.

    The same run sampled by cycles and by cpu-clock (the event of a guest
    without a PMU) differs in where each term's time lands: the spins and
    the irqsave holds move to _raw_spin_unlock_irqrestore, the trap's
    return (the profile's fault_trap_return_ns) leaves the exception for
    user space, and its entry stays.
    """
    cycles = run_trapped("perf-profile")["perf_profile"]
    clock = run_trapped("perf-profile-cpu-clock")
    instr, self_, ch = (
        clock["instrument"],
        clock["perf_profile"]["self"],
        clock["perf_profile"]["children"],
    )
    assert instr["costs_ns"]["period"] == pytest.approx(1e9 / 4000)
    taken = instr["samples"] + instr["samples_while_spinning"]
    assert taken == pytest.approx(SPEC["tasks"] * SPEC["duration_s"] * 4000, rel=0.05)
    assert cycles["self"]["native_queued_spin_lock_slowpath"] > 1
    for gone in ("native_queued_spin_lock_slowpath", "rmqueue_bulk", "lru_add_fn"):
        assert gone not in self_
    irqsave = ("native_queued_spin_lock_slowpath", "rmqueue_bulk", "free_pcppages_bulk")
    moved = sum(cycles["self"].get(fn, 0) for fn in (*irqsave, "lru_add_fn"))
    moved += cycles["self"].get("release_pages", 0)
    assert self_["_raw_spin_unlock_irqrestore"] == pytest.approx(moved, rel=0.15)
    # cycles: the entry and the return where each runs, 3 to 1 as given
    back = cycles["self"][RETURN]
    assert cycles["self"]["exc_page_fault"] == pytest.approx(3 * back, rel=0.05)
    assert RETURN not in self_
    assert self_["exc_page_fault"] == pytest.approx(3 * back, rel=0.15)
    user = cycles["self"].get("user", 0) + back
    assert self_["user"] == pytest.approx(user, rel=0.15)
    # the exception's children lose its exit, handle_mm_fault none of its work
    lost = cycles["children"]["asm_exc_page_fault"] - ch["asm_exc_page_fault"]
    assert lost == pytest.approx(back, rel=0.2)
    assert ch["handle_mm_fault"] == pytest.approx(
        cycles["children"]["handle_mm_fault"], rel=0.1
    )


def test_the_trap_is_the_exception_outside_handle_mm_fault():
    """A trap, measured or the constants' bare one, is outside handle_mm_fault."""
    profile = run_trapped("perf-profile")["perf_profile"]
    self_, ch = profile["self"], profile["children"]
    assert self_["exc_page_fault"] > 5
    assert ch["asm_exc_page_fault"] == pytest.approx(
        ch["handle_mm_fault"] + self_["exc_page_fault"] + self_[RETURN], rel=1e-6
    )
    # no KPTI, no measured trap: the bare exception of constants.toml alone
    plain = run("perf-profile")["perf_profile"]
    bare, ch = plain["self"], plain["children"]
    assert 0 < bare[RETURN] < bare["exc_page_fault"] < self_["exc_page_fault"]
    assert ch["asm_exc_page_fault"] == pytest.approx(
        ch["handle_mm_fault"] + bare["exc_page_fault"] + bare[RETURN], rel=1e-6
    )


def test_cpu_clock_is_refused_where_the_model_has_no_map_of_interrupts():
    """4.18's interrupt-disabled sections are not mapped: one line, exit 2."""
    spec = {**SPEC, "kernel": "4.18", "instrument": "perf-profile-cpu-clock"}
    spec["machine"] = machines.load_profile("sapphire-rapids")
    proc = subprocess.run(
        [engine.engine_binary("sim"), "run"],
        input=json.dumps(spec).encode(),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode != 0 and not proc.stdout
    err = proc.stderr.decode().strip()
    assert len(err.splitlines()) == 1 and "not on 4.18" in err


def test_a_measured_perf_sample_is_charged_instead_of_the_estimate():
    """[costs] perf_sample_ns (calibrate's) is each sample's cost, and only under perf.

    A guest's cpu-clock sample cost this host 30 us: the traced run slows by
    what its samples were charged, and an untraced run ignores the cost.
    """
    machine = {**machines.load_profile("sapphire-rapids"), "costs": {}}
    machine["costs"]["perf_sample_ns"] = 30000.0

    def on(machine, instrument=None):
        extra = {"instrument": instrument} if instrument else {}
        return json.loads(raw_run({**SPEC, "machine": machine, **extra}))

    plain = {**machines.load_profile("sapphire-rapids")}
    estimate = on(plain, "perf-profile-cpu-clock")["instrument"]
    measured = on(machine, "perf-profile-cpu-clock")
    instr = measured["instrument"]
    assert instr["costs_ns"]["sample"] == 30000.0
    assert instr["costs_ns"]["sample_source"].startswith("measured")
    assert estimate["costs_ns"]["sample"] < 30000.0
    assert estimate["costs_ns"]["sample_source"] == "estimate"
    assert instr["charged_ns"] == instr["samples"] * 30000.0
    # 4000 samples a second of 30 us: about 12% of every CPU's time
    assert 10 < instr["charged_pct_of_cpu_time"] < 13
    untraced = [on(m)["throughput"]["ops_per_s"] for m in (machine, plain)]
    assert untraced[0] == untraced[1]
    assert measured["throughput"]["ops_per_s"] < 0.92 * untraced[0]


def test_perf_shares_leave_out_the_samples_own_cost():
    """A share is of the time perf can sample: its own samples are in no share.

    perf report's percentages are of the samples taken, and no sample lands
    in the handler taking one. One task on a guest whose cpu-clock sample
    costs 30 us (12% of its time): the run slows, its shares do not thin.
    """
    machine = {**machines.load_profile("sapphire-rapids"), "costs": {}}
    machine["costs"]["perf_sample_ns"] = 30000.0
    spec = {**SPEC, "tasks": 1, "machine": machine, "duration_s": 0.3}
    plain = json.loads(raw_run(spec))
    traced = json.loads(raw_run({**spec, "instrument": "perf-profile-cpu-clock"}))
    assert traced["instrument"]["charged_pct_of_cpu_time"] > 10
    for kind in ("self", "children"):
        shares = plain["perf_profile"][kind], traced["perf_profile"][kind]
        for fn in ("clear_page_erms", "handle_mm_fault"):
            if fn in shares[0]:
                assert shares[1][fn] == pytest.approx(shares[0][fn], abs=1.0)
    profile = traced["perf_profile"]
    assert sum(profile["self"].values()) + profile["unattributed_pct"] == (
        pytest.approx(100.0)
    )


def run_bare_trap(trap: float, back: float) -> dict:
    """Run one page_fault1 task on skylake-ex (KPTI) with this bare trap."""
    machine = machines.load_profile("skylake-ex")
    machine["constants"] = {
        **machine["constants"],
        "fault_trap_cycles": trap,
        "fault_trap_return_cycles": back,
    }
    spec = {**SPEC, "tasks": 1, "kernel": "4.18", "machine": machine}
    for key in ("high", "no_free_scaling"):
        spec.pop(key)
    return json.loads(raw_run({**spec, "instrument": "perf-profile"}))


def test_the_bare_trap_says_where_a_fault_goes_not_how_long():
    """The exception's cycles come out of handle_mm_fault's, into its own names.

    constants.toml's fault_trap_cycles and fault_trap_return_cycles are part
    of the fitted fault: the run is as fast with them as without, and the
    profile moves them from handle_mm_fault to do_page_fault (4.18) and the
    return path, beside KPTI's CR3 switches (skylake-ex is Meltdown-affected).
    """
    none, bare = run_bare_trap(0, 0), run_bare_trap(440, 270)
    clock = bare["machine"]["topology"]["clock_ghz"]
    was, now = none["machine"]["costs"], bare["machine"]["costs"]
    assert now["fault_trap_ns"] - was["fault_trap_ns"] == pytest.approx(
        440 / clock, abs=1e-3
    )
    assert now["fault_trap_return_ns"] - was["fault_trap_return_ns"] == pytest.approx(
        270 / clock, abs=1e-3
    )
    assert was["fault_base_ns"] - now["fault_base_ns"] == pytest.approx(
        710 / clock, abs=2e-3
    )
    pages = bare["throughput"]["pages_per_s"] / none["throughput"]["pages_per_s"]
    assert pages == pytest.approx(1, abs=5e-4)
    before, after = none["perf_profile"], bare["perf_profile"]
    moved = after["self"]["do_page_fault"] - before["self"]["do_page_fault"]
    assert moved > 1
    assert after["self"][RETURN] > before["self"][RETURN]
    lost = before["children"]["handle_mm_fault"] - after["children"]["handle_mm_fault"]
    gained = moved + after["self"][RETURN] - before["self"][RETURN]
    assert lost == pytest.approx(gained, abs=0.2)
