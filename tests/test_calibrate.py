"""calibrate's clear_page: timed as the kernel's fault clears, not as a first touch."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from pcplab import calibrate, engine, machines
from pcplab.host import profile as host_profile

BUFFER = 64 << 20  # small enough for a test; cold only where the LLC is smaller


def _clear_bench() -> dict:
    """Run bench-hostcost's clear variants alone; return its JSON."""
    binary = engine.bin_dir() / "bench-hostcost"
    out = subprocess.run(
        [binary, "clear", str(BUFFER)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_clear_page_ns_is_the_mapped_page_clear_not_the_faulting_touch():
    """The figure calibrate reads is the mapped, spaced clear; a fault costs more."""
    bench = _clear_bench()
    variants = bench["clear_page"]["variants_ns"]
    assert bench["clear_page_ns"] == variants["kernel"]
    # a first touch pays the kernel's whole fault (and its own clear) as well:
    # a microsecond or more on any machine, against 0.1 us for a mapped clear
    assert 0 < 2 * variants["kernel"] < variants["faulting"]
    assert bench["clear_page"]["buffer_bytes"] == BUFFER
    assert set(variants) == {
        "kernel",
        "spaced_4k",
        "hot",
        "streaming_memset_4k",
        "streaming_stos_4k",
        "streaming_stos_thp",
        "faulting",
    }


def _fake_benches(monkeypatch, kernel: dict | None = None, **hostcost_extra) -> None:
    """Make measure() read these bench figures and KERNEL's fault, not run them."""
    variants = {
        "kernel": 80.0,
        "spaced_4k": 120.0,
        "hot": 40.0,
        "streaming_memset_4k": 550.0,
        "streaming_stos_4k": 530.0,
        "streaming_stos_thp": 560.0,
        "faulting": 1900.0,
    }
    hostcost = {
        "cpu_model": "test",
        "clear_page_ns": 80.0,
        "clear_page": {"insn": "rep stosb", "gap_ns": 2000, "variants_ns": variants},
        "copy_page_ns": 900.0,
        "line_xfer_ns": 100.0,
        "llc_ns": 20.0,
        "dram_ns": 90.0,
        "store_gbs": 10.0,
        "turbo_ghz": -1,
        "all_core_ghz": -1,
        **hostcost_extra,
    }
    fastpath = {
        "pcp_alloc_free_pair_ns": 30.0,
        "zone_lock_per_page_ns": [
            {"pages": 63, "rmqueue_bulk": 15.0, "free_pcppages_bulk": 20.0}
        ],
    }
    benches = {"bench-hostcost": hostcost, "bench-fastpath": fastpath}
    monkeypatch.setattr(calibrate, "_bench", lambda name, *args: benches[name])
    monkeypatch.setattr(calibrate, "_kernel_fault", lambda profile_with="off": kernel)
    monkeypatch.setattr(calibrate, "busy", lambda: None)
    monkeypatch.setattr(host_profile, "probe", lambda: "no perf in this test")
    monkeypatch.setattr(calibrate, "_zero_loop_profile", lambda: "not in this test")


def test_calibrate_costs_the_kernel_variant_and_says_how(monkeypatch):
    """measure() charges clear_page_ns from the bench's kernel figure, and names it."""
    _fake_benches(monkeypatch)
    profile = calibrate.measure()
    assert profile["costs"]["clear_page_ns"] == 80.0
    assert "rep stosb on mapped, cold large pages, one per 2000 ns" in profile["source"]
    assert "on first touch 1900.0 ns" in profile["source"]


def _derived(profile: dict) -> dict:
    """Return the costs the engine charges PROFILE's page_fault1 with one task."""
    spec = {"engine": "sim", "workload": "page_fault1", "tasks": 1}
    machine = machines.profile_of(profile, "host")
    return engine.resolve({**spec, "machine": machine})["machine_detail"]["costs"]


def _sim_page_fault1(profile: dict) -> tuple[float, float]:
    """Return the fault and the page (ns) of the sim's page_fault1 on PROFILE."""
    machine = machines.profile_of(profile, "host")
    result = engine.run({**calibrate.CLOSURE_RUN, "machine": machine})
    page = 1e9 / result["throughput"]["pages_per_s"]
    return result["latency_ns"]["fault"]["avg"], page


def test_the_calibrated_sim_runs_the_kernels_page_fault1(monkeypatch):
    """The calibrated profile's page_fault1 runs the kernel's fault and page.

    The terms the model charges apart (the trap, the clear, the pcp lists,
    the buddy's page with the run's cold struct pages, the LRU) come out of
    the kernel's fault, and one run of the sim closes what they miss: a run
    whose pages recycle on the pcp lists pays no buddy page at all.
    """
    kernel = {"fault_ns": 3000.0, "page_ns": 4000.0}
    _fake_benches(monkeypatch, kernel, zero_fault_ns=700.0)
    monkeypatch.setattr(calibrate.procfs, "build_option", lambda _: {"enabled": False})
    profile = calibrate.measure()
    costs, derived = profile["costs"], _derived(profile)
    assert costs["fault_trap_ns"] == derived["fault_trap_ns"] == 700.0
    assert derived["buddy_alloc_page_ns"] > costs["buddy_alloc_page_ns"] == 15.0
    fault, page = _sim_page_fault1(profile)
    # closed to the tolerance it steps to, however many runs that took
    within = calibrate.CLOSURE_TOLERANCE * kernel["page_ns"]
    assert fault == pytest.approx(kernel["fault_ns"], abs=within)
    assert page - fault == pytest.approx(1000.0, abs=within)
    assert (
        "closed on the sim: its page_fault1 on the derived costs ran"
        in (profile["kernel_timing"])
    )
    # the terms taken out as if every page met the buddy: the sim runs fast
    apart = ("fault_trap_ns", "clear_page_ns", "pcp_alloc_ns", "buddy_alloc_page_ns")
    apart += ("lru_add_page_ns",)
    derived_only = dict(profile, costs=dict(costs))
    derived_only["costs"]["fault_base_ns"] = kernel["fault_ns"] - sum(
        derived[k] for k in apart
    )
    assert _sim_page_fault1(derived_only)[0] < 0.995 * kernel["fault_ns"]
    _fake_benches(monkeypatch, kernel)  # a bench without the figure: no trap
    assert "fault_trap_ns" not in calibrate.measure()["costs"]


def test_the_trap_is_split_by_the_zero_page_loops_profile():
    """Entry: the exception less its handle_mm_fault; return: what lands in user.

    Shares of the loop's samples as this VM's perf record gave them
    (cpu-clock); the loop's mmap and munmap are outside its timing.
    """
    found = {
        "event": "cpu-clock:pppH",
        "self": {"exc_page_fault": 55.8, "user": 19.7},
        "children": {
            "asm_exc_page_fault": 77.65,
            "handle_mm_fault": 15.39,
            "do_syscall_64": 2.52,
        },
    }
    costs, how = calibrate.trap_split(751.0, found)
    timed = 100 - 2.52
    assert costs["fault_trap_ns"] == pytest.approx(751 * (77.65 - 15.39) / timed, 0.01)
    assert costs["fault_trap_return_ns"] == pytest.approx(751 * 19.7 / timed, 0.01)
    # the zero-page fault's own handle_mm_fault is not the trap's
    assert sum(costs.values()) < 751 * (1 - 15.39 / timed) + 0.2
    assert "entry 62.3%, return 19.7%" in how
    # without a profile: the whole fault as the entry, an upper bound, said so
    costs, how = calibrate.trap_split(751.0, "perf record -a needs root")
    assert costs == {"fault_trap_ns": 751.0, "fault_trap_return_ns": 0.0}
    assert "needs root" in how


def test_calibrate_measures_the_trap_split_with_perf_where_it_runs():
    """Where perf runs, the split comes from a real profile; where not, it says why.

    Both branches assert: a host without perf (or root) gets the reason
    probe() gives and the whole zero-page fault as the entry.
    """
    from pcplab.host import profile

    found = calibrate._zero_loop_profile()
    costs, how = calibrate.trap_split(800.0, found)
    why = profile.probe()
    if why:
        assert found == why
        assert costs == {"fault_trap_ns": 800.0, "fault_trap_return_ns": 0.0}
        assert why in how
        return
    assert isinstance(found, dict), found
    assert 0 < costs["fault_trap_ns"] < 800 and 0 <= costs["fault_trap_return_ns"]
    assert costs["fault_trap_ns"] + costs["fault_trap_return_ns"] < 800
    assert "split by perf record" in how


def test_the_kernels_fault_is_the_median_of_runs_spread_over_the_calibration(
    monkeypatch,
):
    """Three kernel runs, start, middle and end: the median one is costed."""
    runs = iter(
        [
            {"fault_ns": 2000.0, "page_ns": 2500.0},  # 400,000 pages/s
            {"fault_ns": 1500.0, "page_ns": 2000.0},  # the fastest
            {"fault_ns": 2600.0, "page_ns": 3200.0},  # the slowest
        ]
    )
    _fake_benches(monkeypatch)
    monkeypatch.setattr(calibrate, "_kernel_fault", lambda _="off": next(runs))
    profile = calibrate.measure()
    fault, page = _sim_page_fault1(profile)
    assert fault == pytest.approx(2000.0, rel=0.002)  # the median run's
    assert page == pytest.approx(2500.0, rel=0.01)
    assert (
        "median of 3 runs over the calibration (500,000, 400,000, 312,500"
        in profile["kernel_timing"]
    )
    assert calibrate.median_fault([None, None]) == (None, "")


def test_a_perf_sample_is_the_slowdown_under_perf_over_its_samples(monkeypatch):
    """perf_sample_ns: the median pair's slowdown under perf, over 4000 samples/s.

    Plain runs of 2500, 2000 and 3200 ns a page, each followed by one under
    perf record of 2750: +10%, +37.5% and -14%, the median pair 10% slower,
    250 us of CPU a sample's share of it: 25 us a sample. Where perf cannot
    run, no cost and no perf run.
    """
    plain = iter([2500.0, 2000.0, 3200.0])
    ran = []

    def kernel(profile_with="off"):
        ran.append(profile_with)
        page = next(plain) if profile_with == "off" else 2750.0
        return {"fault_ns": page - 500.0, "page_ns": page}

    _fake_benches(monkeypatch)
    monkeypatch.setattr(calibrate, "_kernel_fault", kernel)
    monkeypatch.setattr(host_profile, "probe", lambda: None)
    profile = calibrate.measure()
    assert ran == ["off", "perf"] * 3  # alternated: the drift falls on both
    assert profile["costs"]["perf_sample_ns"] == pytest.approx(25000.0)
    timing = profile["kernel_timing"]
    assert "the median pair +10.0%, at 4000 samples a second" in timing
    assert "(400,000 -> 363,636, 500,000 -> 363,636" in timing
    # said once: in kernel_timing, not again in source
    assert "median pair" not in profile["source"]
    # the kernel runs its costs rest on, apart from the benches' facts, in a
    # key of the profile's schema (hostmodel prints it)
    timed = profile["kernel_timing"].split("; ")
    assert [t.split(" ")[0] for t in timed] == ["host", "closed", "perf_sample_ns:"]
    machines._check_types(Path("host.toml"), profile)
    # perf faster than plain (the guest's drift): no cost, not a negative one
    assert calibrate.perf_sample([{"page_ns": 2.0}], [{"page_ns": 1.9}])[0] == {
        "perf_sample_ns": 0.0
    }
    assert calibrate.perf_sample([None], [{"page_ns": 1.9}]) == ({}, "")
    _fake_benches(monkeypatch)
    assert "perf_sample_ns" not in calibrate.measure()["costs"]


def _profiled_kernel(profile_with="off"):
    """Time a fake kernel: 2000 ns pages, its profiled runs with their shares."""
    timed = {"fault_ns": 1600.0, "page_ns": 2000.0}
    if profile_with == "perf":
        timed["page_ns"] = 2200.0
        timed["perf_profile"] = {
            "self": {"clear_page_erms": 15.0, "exc_page_fault": 11.0},
            "children": {
                "get_page_from_freelist": 22.0,
                "rmqueue_bulk": 1.0,
                "free_unref_folios": 2.0,
                "free_pcppages_bulk": 0.5,
            },
        }
    return timed


def test_the_kernels_clear_and_pcp_paths_come_from_its_own_profile(monkeypatch):
    """With perf, clear and pcp costs are the kernel's shares times its page.

    A page of 2000 ns without perf: the clear 15% of the samples (300 ns);
    the allocator 22% less the refill's 1% and the clear inside it (x86
    and arm64 ask for __GFP_ZERO): 6% (120 ns); the free path 2% less the
    drain's 0.5% (30 ns). The fault's own code is what is left of the
    kernel's fault, so the model's fault still adds up to the kernel's.
    """
    _fake_benches(monkeypatch)
    monkeypatch.setattr(host_profile, "probe", lambda: None)
    monkeypatch.setattr(calibrate, "_kernel_fault", _profiled_kernel)
    monkeypatch.setattr(calibrate.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(calibrate.procfs, "build_option", lambda _: {"enabled": False})
    profile = calibrate.measure()
    costs = profile["costs"]
    assert costs["clear_page_ns"] == pytest.approx(300.0)
    assert costs["pcp_alloc_ns"] == pytest.approx(120.0)
    assert costs["pcp_free_ns"] == pytest.approx(30.0)
    assert _sim_page_fault1(profile)[0] == pytest.approx(1600.0, rel=0.002)
    assert "less rmqueue_bulk and the clear" in profile["kernel_timing"]
    # the buddy comes out of the fault as the kernel's pages paid it (1% of
    # 2000 ns: 20 ns), not as if every page met it; the closure adds the rest
    moved = re.search(r"fault_base_ns ([-+][\d.]+)", profile["kernel_timing"])
    before = costs["fault_base_ns"] - float(moved[1])
    derived = _derived(profile)
    apart = sum(derived[k] for k in ("fault_trap_ns", "fault_trap_return_ns"))
    apart += derived["lru_add_page_ns"] + 300.0 + 120.0 + 20.0
    assert derived["buddy_alloc_page_ns"] != pytest.approx(20.0, abs=1.0)
    assert before == pytest.approx(1600.0 - apart, abs=0.2)
    assert "(not charged: kernel_timing's)" in profile["source"]
    # where the clear runs is not known: the benches' figures stand
    monkeypatch.setattr(calibrate.platform, "machine", lambda: "riscv64")
    unknown = calibrate.measure()
    assert unknown["costs"]["clear_page_ns"] == 80.0
    assert "kernel_timing's" not in unknown["source"]
