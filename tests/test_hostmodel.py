"""hostmodel: this kernel beside the model of this host, on rows of known figures."""

from __future__ import annotations

import pytest

from pcplab import calibrate
from pcplab.experiments import hostmodel, load_experiment

EXP = load_experiment("hostmodel")


def _result(pages: float, self_: dict, children: dict) -> dict:
    """Return a result with throughput and a perf_profile section."""
    return {
        "throughput": {"pages_per_s": pages},
        "perf_profile": {"self": self_, "children": children},
    }


def test_a_leaf_the_sim_names_only_as_self_is_its_children_share():
    """A self-only leaf is its own children share; a profiled miss is 0, not None."""
    res = _result(1.0, {"clear_page_erms": 30.0}, {"handle_mm_fault": 80.0})
    shares = hostmodel._shares(res, EXP)
    assert shares["self.clear_page_erms"] == 30.0
    assert shares["children.handle_mm_fault"] == 80.0
    assert shares["self.native_queued_spin_lock_slowpath"] == 0.0
    # a result that was not profiled has no share at all
    assert set(hostmodel._shares({"throughput": {}}, EXP).values()) == {None}


def test_model_rows_are_means_over_seeds_with_their_spread():
    """Two seeds: the mean and the sample sd; the kernel's one run has no sd."""
    spec = {"workload": "page_fault1", "tasks": 1}
    runs = [_result(p, {"clear_page_erms": c}, {}) for p, c in ((100, 20), (300, 40))]
    row = hostmodel._row(spec, "predicted", runs, EXP)
    assert row["pages_per_s"] == 200 and row["pages_per_s_std"] == pytest.approx(
        141.42, 0.01
    )
    assert row["self.clear_page_erms"] == 30
    one = hostmodel._row(spec, "host", runs[:1], EXP)
    assert "pages_per_s_std" not in one


def test_each_model_is_held_to_the_kernels_figures():
    """A model 20% slow misses the 10% tolerance; 5% is within; shares in points."""
    spec = {"workload": "page_fault1", "tasks": 2}
    host = hostmodel._row(
        spec, "host", [_result(1000, {"clear_page_erms": 40}, {})], EXP
    )
    slow = hostmodel._row(
        spec, "predicted", [_result(800, {"clear_page_erms": 25}, {})], EXP
    )
    near = hostmodel._row(
        spec, "calibrated", [_result(950, {"clear_page_erms": 38}, {})], EXP
    )
    res = {what: r for _, what, r in hostmodel.residuals([host, slow, near])}
    kinds = hostmodel.KINDS
    pages = "hostmodel_throughput@{} page_fault1 x2 pages_per_s"
    share = "hostmodel_share@{} page_fault1 x2 self.clear_page_erms"
    assert not kinds["hostmodel_throughput"].within(res[pages.format("predicted")])
    assert kinds["hostmodel_throughput"].within(res[pages.format("calibrated")])
    assert res[share.format("predicted")] == pytest.approx(-1.5)
    assert kinds["hostmodel_share"].within(res[share.format("calibrated")])
    # the kernel is the reference, never a residual of its own
    assert not any(w.split("@")[1].startswith("host ") for w in res)


def test_the_prediction_drops_the_measured_costs_and_keeps_the_facts():
    """predicted: the hardware facts alone; calibrated: the measured [costs] too."""
    profile = {
        "name": "host",
        "topology": {
            "sockets": 1,
            "cores_per_socket": 2,
            "smt": 1,
            "ghz": 2.5,
            "memory_gb": 8,
            "numa_nodes": 1,
        },
        "hardware": {"uarch": "skylake", "llc_mb": 8.0},
        "costs": {"fault_base_ns": 1234.5},
    }
    loaded = hostmodel._profiles(profile)
    assert "costs" not in loaded["predicted"]
    assert loaded["calibrated"]["costs"]["fault_base_ns"] == 1234.5
    assert loaded["predicted"]["hardware"] == loaded["calibrated"]["hardware"]


def test_calibrating_a_busy_host_says_so(monkeypatch, capsys):
    """More runnable tasks than half the CPUs: a warning naming the load."""
    monkeypatch.setattr(calibrate.os, "getloadavg", lambda: (11.7, 11.6, 10.2))
    monkeypatch.setattr(calibrate.os, "cpu_count", lambda: 2)
    assert calibrate.busy() == "load average 11.7 on 2 CPUs"
    monkeypatch.setattr(calibrate.os, "getloadavg", lambda: (0.9, 0.5, 0.2))
    assert calibrate.busy() is None


def test_the_calibrated_rows_are_in_sample_and_the_predicted_held_out():
    """A model calibrated on this host is judged on it: not a prediction."""
    from pcplab import basis

    rows = [("this host", "calibrated page_fault1 x1 pages_per_s")]
    assert basis.of("hostmodel", rows, False).kind == basis.IN_SAMPLE
    rows = [("this host", "predicted page_fault1 x1 pages_per_s")]
    assert basis.of("hostmodel", rows, False).kind == basis.HELD_OUT


@pytest.mark.parametrize(
    ("event", "instrument"),
    [("cpu-clock:pppH", "perf-profile-cpu-clock"), ("cycles:P", "perf-profile")],
)
def test_the_models_sample_as_the_kernels_profile_was_sampled(event, instrument):
    """A kernel profiled by cpu-clock (no PMU) gets models profiled by cpu-clock."""
    kernel = _result(1.0, {}, {})
    kernel["perf_profile"]["event"] = event
    chosen = hostmodel._instrument(kernel, EXP)
    assert chosen == instrument
    build = {"enabled": False, "source": "test"}
    spec = hostmodel._model_spec({"workload": "page_fault1"}, EXP, build, chosen)
    assert spec["instrument"] == instrument and spec["engine"] == "sim"
    row = {"engine": "calibrated", "instrument": chosen}
    said = hostmodel._instrument_note([row])
    assert bool(said) == (instrument == "perf-profile-cpu-clock")


def test_the_kernel_runs_kernel_runs_times_and_its_row_has_the_spread(monkeypatch):
    """One kernel run is no figure on a guest whose speed moves: [quick]'s N runs.

    page_fault1's models run their own, longer window (model_duration_s).
    """
    pages = iter([90.0, 110.0, 100.0] * len(EXP["cases"]))
    ran = []

    def kernel(spec, profile_with):
        ran.append(spec["workload"])
        assert spec["duration_s"] == EXP["quick"]["duration_s"]
        return _result(next(pages), {"clear_page_erms": 10.0}, {})

    timing = (
        "host engine page_fault1 (the kernel's own faults), the median of 3 "
        "runs (1, 2, 3 pages/s); perf_sample_ns: x"
    )
    measured = {"source": "pcplab calibrate: bench-hostcost; " + timing}
    monkeypatch.setattr(
        calibrate, "measure", lambda: measured | {"kernel_timing": timing}
    )
    monkeypatch.setattr(
        hostmodel, "_profiles", lambda p: dict.fromkeys(hostmodel.MODELS)
    )
    build = {"enabled": False, "source": "a test"}
    monkeypatch.setattr(hostmodel, "_build", lambda: build)
    monkeypatch.setattr(hostmodel, "execute_run", kernel)
    modelled = []

    def models(specs, *_, **__):
        modelled.extend(specs)
        return [_result(1, {}, {})] * 2

    monkeypatch.setattr(hostmodel.runs, "run_specs", models)
    rows = hostmodel.run(True, 1)
    # page_fault1's sims run long enough that a munmap more or less is no
    # 3-5% step; mmap_fill's first fill outlasts the window on both sides,
    # whose tasks all leave a start barrier together
    window = {s["workload"]: s["duration_s"] for s in modelled}
    assert window == {"page_fault1": 10.0, "mmap_fill": EXP["quick"]["duration_s"]}
    assert {s["task_start"] for s in modelled} == {"in_step"}
    assert all("model_duration_s" not in s for s in modelled)
    runs_per_case = EXP["quick"]["kernel_runs"]
    assert runs_per_case >= 3
    assert len(ran) == runs_per_case * len(EXP["cases"])
    host = [r for r in rows if r["engine"] == "host"]
    assert len(host) == len(EXP["cases"])
    assert host[0]["pages_per_s"] == 100.0
    assert host[0]["pages_per_s_std"] == pytest.approx(10.0)
    # the calibrated rows name the kernel runs their costs rest on
    text = hostmodel.text(rows, EXP)
    assert (
        "calibration: host engine page_fault1 (the kernel's own faults), the "
        "median of 3 runs (1, 2, 3 pages/s); perf_sample_ns: x\n" in text
    )
    assert "bench-hostcost" not in text
