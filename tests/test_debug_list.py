"""CONFIG_DEBUG_LIST: the build's list checks, charged where the kernel pays them."""

from __future__ import annotations

import json

import pytest

from pcplab import engine, experiments, machines
from pcplab.experiments import _common

# A check this long stands out of every hold it is charged in.
CHECK_NS = 50
# The LKP experiments whose kernels the record says had DEBUG_LIST (2023).
LKP_2023 = {"lkp2023allocscale", "lkp2023autotune", "lkp2023cooperlake"}
CHECKS = ("__list_add_valid_or_report", "__list_del_entry_valid_or_report")


def run(debug_list: bool, kernel: str = "6.18") -> dict:
    """Run page_fault1 on 4 CPUs with checks of CHECK_NS each, or without them."""
    profile = machines.load_profile("small-36cpu")
    profile["costs"] = {"list_add_check_ns": CHECK_NS, "list_del_check_ns": CHECK_NS}
    return engine.run(
        {
            "engine": "sim",
            "machine": profile,
            "workload": "page_fault1",
            "kernel": kernel,
            "tasks": 4,
            "duration_s": 0.1,
            "warmup_s": 0.05,
            "config_debug_list": debug_list,
        }
    )


@pytest.fixture(scope="module")
def pair() -> tuple[dict, dict]:
    """Run the same spec and seed without and with CONFIG_DEBUG_LIST."""
    return run(False), run(True)


def hold_per_page(res: dict, side: str, pages: str) -> float:
    """Return zone->lock held (ns) per page moved by SIDE (rmqueue_bulk, ...)."""
    hold = res["lock_hold_ns"][side]
    return hold["avg"] * hold["count"] / res["pcp"][pages]


@pytest.mark.parametrize(
    "side,pages",
    [("rmqueue_bulk", "pages_refilled"), ("free_pcppages_bulk", "pages_drained")],
)
def test_the_checks_lengthen_each_zone_lock_hold_by_three_a_page(pair, side, pages):
    """Three list operations a page under zone->lock, each with its check.

    A refill takes the page's block off a free list (list_del), puts the
    split halves on (list_add: one a page over a whole block) and the page
    on the pcp list (list_add_tail); a drain takes it off the pcp list,
    each merge takes a buddy off (one a page over a whole block) and the
    merged block goes on. So a hold grows by about 3 checks a page.
    """
    off, on = pair
    grown = hold_per_page(on, side, pages) - hold_per_page(off, side, pages)
    checks = grown / CHECK_NS
    assert 2.5 < checks < 3.5


def test_the_lru_checks_are_charged_under_lru_lock(pair):
    """lruvec_add_folio/lruvec_del_folio: a check a page, 31-32 pages a hold."""
    lru = [res["lock_hold_ns"]["lru_lock"]["avg"] for res in pair]
    grown = lru[1] - lru[0]
    assert 25 * CHECK_NS < grown < 40 * CHECK_NS


def test_the_check_symbols_are_in_the_profile_only_with_the_option(pair):
    """perf-profile.self names the checks only for a build with DEBUG_LIST."""
    off, on = pair
    assert not [f for f in off["perf_profile"]["self"] if "list_" in f]
    for fn in CHECKS:
        assert on["perf_profile"]["self"][fn] > 0
    assert on["spec"]["config_debug_list"] is True
    assert off["spec"]["config_debug_list"] is False


def test_before_v6_6_the_checks_have_their_old_names():
    """v6.6 renamed __list_del_entry_valid to __list_del_entry_valid_or_report."""
    names = run(True, kernel="4.18")["perf_profile"]["self"]
    assert names["__list_del_entry_valid"] > 0
    assert "__list_del_entry_valid_or_report" not in names


def test_a_run_with_the_checks_is_deterministic(pair):
    """Same spec and seed, the same result, byte for byte."""
    assert json.dumps(run(True), sort_keys=True) == json.dumps(pair[1], sort_keys=True)


def test_only_the_2023_lkp_experiments_declare_the_option():
    """The record names DEBUG_LIST for LKP's 2023 builds only; others say not known."""
    for name in experiments.names():
        exp = _common.load_experiment(name)
        on = bool(exp.get("spec", {}).get("config_debug_list"))
        assert on == (name in LKP_2023), name
        line = _common.build_line(exp)
        assert ("CONFIG_DEBUG_LIST=y" in line) == on, line
        assert ("not known" in line) == (not on), line


def test_an_lkp_row_of_the_check_has_no_model_figure_without_the_option(pair):
    """Without DEBUG_LIST the model has no __list_del_entry_valid_or_report share."""
    off, on = pair
    key = "leaf:__list_del_entry_valid_or_report"
    assert key not in _common.lkp_figures(off)
    assert _common.lkp_figures(on)[key] == on["perf_profile"]["self"][CHECKS[1]]


def test_the_host_build_option_is_read_from_the_config(tmp_path, monkeypatch):
    """CONFIG_DEBUG_LIST=y in the build config is on; absent is off; unreadable None."""
    from pcplab.host import procfs

    monkeypatch.setattr(procfs, "PROC_CONFIG", tmp_path / "no-config.gz")
    config = tmp_path / f"config-{procfs.kernel_release()}"
    config.write_text("CONFIG_DEBUG_LIST=y\nCONFIG_LIST_HARDENED=y\n")
    assert procfs.build_option("CONFIG_DEBUG_LIST", tmp_path)["enabled"] is True
    config.write_text("# CONFIG_DEBUG_LIST is not set\nCONFIG_DEBUG_LIST_X=y\n")
    assert procfs.build_option("CONFIG_DEBUG_LIST", tmp_path)["enabled"] is False
    assert (
        procfs.build_option("CONFIG_DEBUG_LIST", tmp_path / "none")["enabled"] is None
    )


def test_hostmodel_models_this_kernel_as_it_was_built(monkeypatch):
    """The model of this host runs with DEBUG_LIST if this kernel has it; says so."""
    from pcplab.experiments import hostmodel

    monkeypatch.setattr(
        hostmodel.procfs,
        "build_option",
        lambda name: {"enabled": True, "source": f"/x ({name})"},
    )
    build = hostmodel._build()
    exp = hostmodel.load_experiment("hostmodel")
    case = {"workload": "page_fault1", "tasks": 1}
    assert (
        hostmodel._model_spec(case, exp, build, "perf-profile")["config_debug_list"]
        is True
    )
    off = {"enabled": None, "source": "none"}
    assert "config_debug_list" not in hostmodel._model_spec(
        case, exp, off, "perf-profile"
    )
    row = {"workload": "page_fault1", "tasks": 1, "engine": "predicted"}
    text = hostmodel.text(
        [{**row, "pages_per_s": 1.0, "build": build}],
        hostmodel.load_experiment("hostmodel"),
    )
    assert "build: CONFIG_DEBUG_LIST=y, charged in both models (/x" in text
