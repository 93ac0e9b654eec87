"""Lock shapes of a batch sweep (pcplab.lockshape).

The shape figures are checked on synthetic curves whose crossings are
known in closed form, and on the published 2018 table.
"""

from __future__ import annotations

import math

import pytest

from pcplab import lockshape
from pcplab.experiments import aaron2018, reference_rows
from pcplab.repeats import combine_rows

# g = the share still to go: 1, 0.75, 0.5, 0.25, 0 at batches doubling from 31
BATCHES = [31, 62, 124, 248, 496]
G = [1.0, 0.75, 0.5, 0.25, 0.0]
B80 = 31 * 2**0.8  # between 31 (1.0) and 62 (0.75): 0.2 of 0.25 of the way
B20 = 248 * 2**0.2  # between 248 (0.25) and 496 (0.0): 0.05 of 0.25


def test_a_fall_is_read_at_half_and_between_80_and_20_percent_in_log_batch():
    """zone->lock falling 40 -> 0 linearly in log2(batch): half at 124, span b20-b80."""
    s = lockshape.shape("zone", BATCHES, [40 * g for g in G])
    assert s.half == pytest.approx(124)
    assert s.span == pytest.approx(B20 - B80)
    assert s.reason is None


def test_a_rise_is_read_on_its_way_from_batch_31_to_its_top():
    """lru_lock rising 10 -> 50: the same crossings as the fall it mirrors."""
    s = lockshape.shape("lru", BATCHES, [10 + 40 * (1 - g) for g in G])
    assert s.half == pytest.approx(124)
    assert s.span == pytest.approx(B20 - B80)


def test_the_first_crossing_counts_and_a_level_never_reached_is_null_with_why():
    """A fall that bounces back keeps its first half; one above 20% has no span."""
    bounce = lockshape.shape("zone", BATCHES, [20, 8, 12, 7, 2])
    first = 2 ** (math.log2(31) + (20 - 10) / (20 - 8))
    assert bounce.half == pytest.approx(first)
    stuck = lockshape.shape("zone", BATCHES, [40, 30, 20, 12, 10])
    assert stuck.half == pytest.approx(124)
    assert stuck.span is None
    assert "never reaches its 20% level" in stuck.reason


def test_a_curve_under_the_floor_is_null_with_its_reason():
    """Sandybridge's 0% everywhere, a 4-point rise: under the 5-point floor."""
    flat = lockshape.shape("zone", BATCHES, [0, 0, 0, 0, 0])
    assert (flat.half, flat.span) == (None, None)
    assert "0.0% at batch 31, under the 5-point floor" in flat.reason
    small = lockshape.shape("lru", BATCHES, [5, 6, 8, 9, 9])
    assert "rises 4.0 points" in small.reason


def test_the_kernel_skylake_ex_zone_lock_halves_at_batch_53():
    """The published sweep: 64% at batch 31, 32% at 53, so its half is 53."""
    rows = [
        r
        for r in reference_rows("aaron2018_page_fault1_batch_sweep")
        if r["machine"] == "Skylake-EX"
    ]
    batches = [int(r["batch"]) for r in rows]
    zone = [float(r["zone_contention_pct"]) for r in rows]
    assert lockshape.shape("zone", batches, zone).half == pytest.approx(53)


def _rows(zone: list[float], machine: str = "M") -> list[dict]:
    """Return one seed's aaron2018-like rows: the model's ZONE, the kernel's G."""
    return [
        {
            "machine": machine,
            "batch": b,
            "zone_contention": z,
            "zone_published": 40 * g,
            "lru_contention": 60.0,
            "lru_published": 60.0,
        }
        for b, z, g in zip(BATCHES, zone, G, strict=True)
    ]


def test_seeds_give_each_figure_a_mean_and_sd_and_say_when_some_missed():
    """Two seeds: half a mean with its sd; a span one seed lacks is n/a (1 of 2)."""
    one, two = _rows([40, 30, 20, 10, 0]), _rows([40, 30, 20, 12, 10])
    for rows in (one, two):
        lockshape.attach(rows, aaron2018.MODEL_LOCKS)
    table = lockshape.table(combine_rows([one, two]), aaron2018.KERNEL_LOCKS)
    zone = next(r for r in table if r["lock"] == "zone->lock")
    assert zone["half_model"] == pytest.approx(124)
    assert zone["half_kernel"] == pytest.approx(124)
    assert zone["span_model"] is None
    assert zone["span_model_seeds"] == 0.5
    text = "\n".join(lockshape.text(table, BATCHES))
    assert "n/a (1 of 2 seeds)" in text
    assert "lru_lock rises 0.0 points" in text


def test_aaron2018_prints_the_shape_table_and_writes_it_apart():
    """Aaron2018's text ends with the shapes; its CSV rows carry none."""
    rows = _rows([40, 30, 20, 10, 0])
    lockshape.attach(rows, aaron2018.MODEL_LOCKS)
    for r in rows:
        r |= {"score": 1.0, "score_published": None, "change_pct": 0.0}
        r |= {"change_published": None, "total_contention": 0.0}
        r |= {"total_published": None}
    text = aaron2018.text(rows, aaron2018.load_experiment("aaron2018"))
    assert "M                    zone->lock" not in text  # one width per column
    assert any(
        line.startswith("M  ") and "zone->lock" in line for line in text.splitlines()
    )
    tables = aaron2018.tables(rows)
    assert not any(k.startswith("shape_") for k in tables["aaron2018"][0])
    assert len(tables["aaron2018_shapes"]) == 2
