"""The verdict: what each scored figure rests on, and the judgements beyond averages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcplab import basis, experiments, scorers, tolerance, verdict
from pcplab.experiments import host

DATA = Path(__file__).parent / "data"


def _ying2023_rows(scale: dict[str, float], batches=(63, 511, 2047)) -> list[dict]:
    """Return ying2023 rows: the published figures, throughput times SCALE."""
    out = []
    for r in experiments.reference_rows("ying2023_batch_latency"):
        if int(r["batch"]) not in batches:
            continue
        row = {"machine": r["machine"], "batch": int(r["batch"])}
        pub = float(r["throughput_pages_per_s"])
        row.update(throughput=pub * scale[r["machine"]], throughput_published=pub)
        for side in ("free", "alloc"):
            for stat in ("avg", "p99"):
                value = float(r[f"{side}_latency_{stat}_us"])
                row[f"{side}_{stat}_us"] = row[f"{side}_{stat}_published"] = value
        out.append(row)
    return out


SPR, CFL, CSL = "Sapphire Rapids Server", "Coffee Lake Desktop", "Cascade Lake Server"


def _scored(name: str, rows: list[dict], label: str) -> list[scorers.Scored]:
    """Return the figures labelled LABEL that NAME's TOML scores judge in ROWS."""
    found, _ = scorers.score(rows, experiments.get(name).spec(), experiments.kinds())
    return [s for s in found if s.label == label]


def test_a_percentage_is_judged_against_its_own_size():
    """13.01% published, 5.6% modelled: within 10 points, out of 25% of 13.01."""
    zone = experiments.kinds()["heldout_zone"]
    r = zone.residual(5.6, 13.01)
    assert zone.within(r)  # the stated 10 points alone pass it
    assert not zone.within(r, 13.01)
    assert zone.bound(13.01) == "3.3 pts, 25% of 13.01"
    # a large figure keeps its stated points; a small one the floor
    assert zone.points(64.0) == 10 and zone.points(1.1) == tolerance.FLOOR_PTS
    res = []
    tolerance.add(res, {"zone": zone}, "M", "zone", 1, 5.6, 13.01)
    (scored,) = scorers.from_residuals(res, {"zone": zone})
    assert not scored.within and scored.error == "-7.4 pts"


def test_ying2023zones_scores_5_6_against_13_01_as_a_held_out_miss():
    """The zones RFC's row as the experiment returns it: a miss, held out."""
    row = {"machine": "Sapphire Rapids 2S", "zone_instances": 1}
    row.update(zone_contention=5.6, zone_published=13.01)
    (figure,), _ = verdict.figures({"ying2023zones": [row]})
    assert not figure.scored.within
    assert figure.scored.bound == "3.3 pts, 25% of 13.01"
    # the thread's 224-CPU server runs on the 2023 table's fitted profile
    assert figure.basis == basis.Basis(basis.HELD_OUT, "on a fitted machine's profile")
    assert (
        "| ying2023zones | Sapphire Rapids 2S | - | - | 0/1 (on a fitted"
        in "\n".join(verdict.render({"ying2023zones": [row]}))
    )


def test_the_2023_servers_must_keep_their_order():
    """Cascade Lake measured slowest: the model putting it first is a miss."""
    label = "order of the servers by per-task pages/s"
    as_model = _ying2023_rows({SPR: 0.88, CFL: 0.91, CSL: 1.18})
    found = _scored("ying2023", as_model, label)
    assert [s.row for s in found] == ["63", "511", "2047"]
    assert not any(s.within for s in found)
    assert "2 of 2 pairs reversed" in found[0].error
    assert found[0].error.startswith(f"model {CSL} > ")
    # the published order, and Sapphire Rapids and Coffee Lake (0.6% apart,
    # inside 10%) in either order, is a hit
    kept = _scored("ying2023", _ying2023_rows({SPR: 0.9, CFL: 0.95, CSL: 0.9}), label)
    assert kept and all(s.within for s in kept)


def test_the_funclatency_tail_must_reach_the_published_one():
    """A model histogram that stops at 2 ms misses the 33 ms tail; the thread's hits."""
    exp = experiments.get("yafang2024").spec()
    published = experiments.get("yafang2024").module.published_histograms(exp)[5]
    short = [[lo, hi, c] for lo, hi, c in published if hi < 2 << 20]
    row = {"machine": "EPYC", "scale_max": 5, "log2_hist_published": published}
    label = "rmqueue_bulk funclatency p99.9"
    (miss,) = _scored("yafang2024", [{**row, "log2_hist": short}], label)
    (hit,) = _scored("yafang2024", [{**row, "log2_hist": published}], label)
    assert not miss.within and hit.within
    assert miss.error == "model 1.05 ms to 2.1 ms, published 4.19 ms to 8.39 ms (0.25x)"
    # its p99, 2 to 4 ms, is one bucket above the short one's: within 2x
    (p99,) = _scored("yafang2024", [{**row, "log2_hist": short}], label[:-2])
    assert p99.within and p99.error.endswith("(0.5x)")
    # too few calls to place p99.9: not scored rather than guessed
    few = [[lo, hi, min(c, 1)] for lo, hi, c in published]
    assert _scored("yafang2024", [{**row, "log2_hist": few}], label) == []


def test_the_sign_of_a_change():
    """The change from batch 31: a wrong sign misses; under 2 points is not judged."""
    rows = [
        {"machine": "M", "batch": 63, "change_pct": -3.0, "change_published": 17.2},
        {"machine": "M", "batch": 127, "change_pct": 15.0, "change_published": 17.5},
        {"machine": "N", "batch": 63, "change_pct": -5.0, "change_published": 0.4},
    ]
    found = _scored("aaron2018", rows, "sign of the change from batch 31")
    assert [(s.machine, s.row, s.within) for s in found] == [
        ("M", "63", False),
        ("M", "127", True),
    ]


def test_what_each_figure_rests_on():
    """In-sample: a row the fit reads; held out otherwise; left out: its fold."""
    assert basis.of("aaron2018", [("Skylake-EX", "63")], False).kind == basis.IN_SAMPLE
    # aaron2018's fit reads batch 53 but not 95, ying2023's 255 but not 511
    assert basis.of("aaron2018", [("Skylake-EX", "95")], False) == basis.Basis(
        basis.HELD_OUT, "on a fitted machine's profile"
    )
    assert basis.of("ying2023", [(CSL, "511")], False).kind == basis.HELD_OUT
    # a fitted experiment without a batch list: every row
    assert basis.of("yafang2024", [("x", "5/0")], False).kind == basis.HELD_OUT
    epyc = "AMD EPYC 7W83 64-Core, single NUMA node, KVM"
    assert basis.of("yafang2024", [(epyc, "5/0")], False).kind == basis.IN_SAMPLE
    # a held-out machine on a profile no fit ran
    assert basis.of("aaron2018prefetch", [("Skylake(2S)", "31")], False) == basis.Basis(
        basis.HELD_OUT
    )
    assert basis.of("aaron2018prefetch", [("Skylake(4S)", "31")], False).note
    # an order of machines the fit read any of is in-sample
    both = [(CSL, "511"), (CSL, "63")]
    assert basis.of("ying2023", both, False).kind == basis.IN_SAMPLE
    fold = basis.of("ying2023", [(CSL, "511")], True)
    start = basis.fold_starts()[CSL]
    assert fold == basis.Basis(basis.LEFT_OUT, f"fold without {CSL}, start: {start}")


def test_the_verdict_counts_the_three_apart():
    """Quick ying2023 rows, in-sample and from the folds: each counted apart."""
    # Cascade Lake 15% fast: its throughput misses, the order holds
    rows = _ying2023_rows({SPR: 1.0, CFL: 1.0, CSL: 1.15})
    found, _ = verdict.figures({"ying2023": rows}, {"ying2023": rows})
    counts = verdict.counts(found)
    # per machine and batch five figures and an order per batch; at 511
    # (not in [fit]) held out; a sign per machine whose throughput rises by
    # 2% or more from 63 to 2047 (Coffee Lake's, +1.9%, is not judged)
    assert counts[basis.HELD_OUT] == (14 + 1, 15 + 1)
    assert counts[basis.IN_SAMPLE] == (28 + 2 + 2, 30 + 2 + 2)
    # the folds ran the same rows: every figure again, left out
    assert counts[basis.LEFT_OUT] == (15 + 32, 16 + 34)
    lines = verdict.render({"ying2023": rows}, {"ying2023": rows})
    assert lines[0] == (
        "**in-sample 32/34 · left out 47/50 · held out 15/16** "
        "(within tolerance / scored)"
    )
    assert f"| ying2023 | {CSL} | 9/11 | 13/16 (fold without {CSL}, start: " in (
        "\n".join(lines)
    )
    assert any("| ying2023 | the 3 machines | 2/2 |" in line for line in lines)


def test_a_machine_without_a_fold_on_file_is_named(monkeypatch):
    """No fold, no left-out figure: the verdict says so instead of inventing one."""
    monkeypatch.setattr(basis, "fold_starts", lambda: {SPR: "full fit"})
    rows = _ying2023_rows({SPR: 1.0, CFL: 1.0, CSL: 1.0}, batches=(63,))
    found, _ = verdict.figures({"ying2023": rows})
    assert verdict.no_fold(found) == [CSL, CFL]  # sorted
    assert verdict.render({"ying2023": rows})[2] == (
        f"No fold on file leaves out {CSL}, {CFL}: no left-out figure."
    )


def _host_rows(model_engine: str, pages: float) -> list[dict]:
    """Return the host experiment's rows: the fake kernel result, then the model."""
    kernel = json.loads((DATA / "host_result.json").read_text())
    model = {**kernel, "engine": model_engine}
    model["throughput"] = {**kernel["throughput"], "pages_per_s": pages}
    return [
        host.row("page_fault1", 0, "host", kernel),
        host.row("page_fault1", 0, model_engine, model),
    ]


def test_the_host_is_scored_against_its_calibrated_model():
    """This kernel beside the calibrated sim within 10%; unscored without one."""
    spec = experiments.get("host").spec()
    kinds = experiments.kinds()
    (near,), _ = scorers.score(_host_rows("sim", 1.08e6), spec, kinds)
    (far,), _ = scorers.score(_host_rows("sim", 1.2e6), spec, kinds)
    assert near.within and not far.within and far.error == "+20.0%"
    assert basis.of("host", near.rests_on, False) == basis.Basis(basis.HELD_OUT)
    found, unscored = scorers.score(_host_rows("native", 1.0e6), spec, kinds)
    assert found == []
    assert unscored == [
        "pages/s, calibrated model against this kernel: not scored: no "
        "calibration on file (run pcplab calibrate)"
    ]
    lines = verdict.render({"host": _host_rows("native", 1.0e6)})
    assert "| host | - | - | - | - | pages/s, calibrated model" in lines[-1]


def test_the_host_model_is_the_calibrated_profile_when_on_file(tmp_path, monkeypatch):
    """`pcplab calibrate`'s host.toml in the user's dir: the model is the sim on it."""
    monkeypatch.setenv("PCPLAB_MACHINES", str(tmp_path))
    exp = experiments.get("host").spec()
    spec = {"workload": "page_fault1", "tasks": 2}
    assert host.model_spec(exp, spec)["engine"] == "native"
    (tmp_path / "host.toml").write_text(
        (DATA / "machines" / "desktop-32g.toml").read_text()
    )
    assert host.model_spec(exp, spec) == {**spec, "engine": "sim", "machine": "host"}


@pytest.mark.parametrize("bad", [{"label": "x"}, {"scorer": "nosuch", "label": "x"}])
def test_a_score_without_a_known_scorer_is_refused(bad):
    """A TOML's [[scores]] table must name a scorer and a label."""
    with pytest.raises(TypeError, match="needs a label and a scorer"):
        scorers.score([], {"name": "x", "scores": [bad]}, {})
