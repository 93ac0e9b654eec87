"""calibrate's clear_page: timed as the kernel's fault clears, not as a first touch."""

from __future__ import annotations

import json
import subprocess

from pcplab import calibrate, engine

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
    monkeypatch.setattr(calibrate, "_kernel_fault", lambda: kernel)
    monkeypatch.setattr(calibrate, "busy", lambda: None)


def test_calibrate_costs_the_kernel_variant_and_says_how(monkeypatch):
    """measure() charges clear_page_ns from the bench's kernel figure, and names it."""
    _fake_benches(monkeypatch)
    profile = calibrate.measure()
    assert profile["costs"]["clear_page_ns"] == 80.0
    assert "rep stosb on mapped, cold large pages, one per 2000 ns" in profile["source"]
    assert "on first touch 1900.0 ns" in profile["source"]


def test_the_trap_is_measured_and_left_out_of_the_fault_base(monkeypatch):
    """fault_trap_ns is the zero-page fault; fault_base_ns the kernel's less it."""
    kernel = {"fault_ns": 2000.0, "page_ns": 2600.0}
    _fake_benches(monkeypatch, kernel, zero_fault_ns=700.0)
    costs = calibrate.measure()["costs"]
    assert costs["fault_trap_ns"] == 700.0
    # 2000 less the trap, the clear (80) and half a pcp pair (15)
    assert costs["fault_base_ns"] == 2000.0 - 700.0 - 80.0 - 15.0
    _fake_benches(monkeypatch, kernel)  # a bench without the figure: no trap
    costs = calibrate.measure()["costs"]
    assert "fault_trap_ns" not in costs
    assert costs["fault_base_ns"] == 2000.0 - 80.0 - 15.0
