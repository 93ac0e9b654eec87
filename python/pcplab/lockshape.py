"""Lock shapes: where a lock's contention lets go over a batch sweep, and how fast.

Issue 33's shape figures, per machine and lock, over a sweep of pcp->batch
(Aaron Lu's 2018 table, batch 31..511):

- zone->lock contention falls as batch grows. Its *half batch* is the
  batch where it first falls to half its batch-31 value; its *80->20
  span* the batches between the first falls to 80% and to 20% of it
  (b20 - b80, in pages).
- lru_lock contention rises as zone->lock lets go. The same figures of its
  rise: the batch where it first has made half of its rise from its
  batch-31 value to its highest value of the sweep, and the batches
  between 20% and 80% of that rise.

Both are read on g(b), the share still to go: c(b) / c(31) for a fall to
zero, (top - c(b)) / (top - c(31)) for a rise to the top. A level is met
where g first steps from above it to at or below it, interpolated linearly
in log2(batch) between the two batches around it: the sweep's batches are
spaced by ratio, as pcp->batch is tuned.

A figure is null, with the reason, where a curve cannot give it: a fall
from under FLOOR points at batch 31, or a rise of under FLOOR points (the
published percentages are integers, so a 20% level of under 5 points is
below their resolution), or a level the sweep never reaches.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FLOOR = 5.0  # points of contention a curve must move for its levels to resolve
LOCKS = {"zone": ("zone->lock", "falls"), "lru": ("lru_lock", "rises")}


@dataclass(frozen=True)
class Shape:
    """The two shape figures of one curve (pages of batch), or why not."""

    half: float | None
    span: float | None
    reason: str | None = None  # why a figure is None


def crossing(
    batches: Sequence[float], g: Sequence[float], level: float
) -> float | None:
    """Return the batch where G first steps to LEVEL or below (log2-interpolated)."""
    for (b0, g0), (b1, g1) in itertools.pairwise(zip(batches, g, strict=True)):
        if g0 > level >= g1:
            t = (g0 - level) / (g0 - g1)
            return 2 ** (math.log2(b0) + t * (math.log2(b1) - math.log2(b0)))
    return None


def _read(batches: Sequence[float], g: Sequence[float], what: str) -> Shape:
    """Return the half batch and the 80->20 span of the share still to go G."""
    half = crossing(batches, g, 0.5)
    b80, b20 = crossing(batches, g, 0.8), crossing(batches, g, 0.2)
    span = None if b80 is None or b20 is None else b20 - b80
    missing = [name for name, b in (("half", half), ("20%", b20)) if b is None]
    reason = (
        f"{what} never reaches its {' or '.join(missing)} level" if missing else None
    )
    return Shape(half, span, reason)


def falling(batches: Sequence[float], values: Sequence[float], name: str) -> Shape:
    """Return the shape of contention VALUES falling from its first batch to zero."""
    start = values[0]
    if start < FLOOR:
        return Shape(
            None,
            None,
            f"{name} is {start:.1f}% at batch {batches[0]:g}, "
            f"under the {FLOOR:g}-point floor",
        )
    return _read(batches, [v / start for v in values], name)


def rising(batches: Sequence[float], values: Sequence[float], name: str) -> Shape:
    """Return the shape of contention VALUES rising from its first batch to its top."""
    start, top = values[0], max(values)
    if top - start < FLOOR:
        return Shape(
            None,
            None,
            f"{name} rises {top - start:.1f} points over the "
            f"sweep, under the {FLOOR:g}-point floor",
        )
    return _read(batches, [(top - v) / (top - start) for v in values], name)


def shape(lock: str, batches: Sequence[float], values: Sequence[float]) -> Shape:
    """Return LOCK's ("zone" or "lru") shape over the sorted BATCHES."""
    name, how = LOCKS[lock]
    return (falling if how == "falls" else rising)(batches, values, name)


def _curves(
    rows: Sequence[dict[str, Any]], key: str
) -> dict[str, tuple[list[float], list[float]]]:
    """Return each machine's (batches, KEY values) of ROWS, by batch; skip gaps."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for r in sorted(rows, key=lambda r: r["batch"]):
        if r.get(key) is not None:
            batches, values = out.setdefault(r["machine"], ([], []))
            batches.append(r["batch"])
            values.append(r[key])
    return out


def attach(rows: list[dict[str, Any]], columns: dict[str, str]) -> None:
    """Add each machine's model shapes to every row of it (one seed's rows).

    COLUMNS maps "zone" and "lru" to the rows' model contention keys. Each
    row gets `shape_<lock>_half` and `shape_<lock>_span` (None where the
    curve cannot give it, with `shape_<lock>_why`), and `..._half_n`,
    `..._span_n`: 1 where given, else 0. Over seeds
    (pcplab.repeats.combine_rows) a figure becomes its mean and `_std`, and
    `_n` the share of the seeds that gave it.
    """
    for lock, key in columns.items():
        shapes = {m: shape(lock, *c) for m, c in _curves(rows, key).items()}
        for r in rows:
            s = shapes.get(r["machine"], Shape(None, None, "no curve"))
            for fig in ("half", "span"):
                r[f"shape_{lock}_{fig}"] = getattr(s, fig)
                r[f"shape_{lock}_{fig}_n"] = float(getattr(s, fig) is not None)
            r[f"shape_{lock}_why"] = s.reason


def table(
    rows: list[dict[str, Any]], published: dict[str, str]
) -> list[dict[str, Any]]:
    """Return a row per machine and lock: the model's shapes beside the kernel's.

    ROWS went through attach() (and maybe combine_rows); PUBLISHED maps each
    lock to the rows' published contention key, read on the same batches.
    """
    kernel = {
        lock: {m: shape(lock, *c) for m, c in _curves(rows, key).items()}
        for lock, key in published.items()
    }
    first = {}
    for r in rows:
        first.setdefault(r["machine"], r)
    out = []
    for machine, r in first.items():
        for lock in published:
            k = kernel[lock].get(machine, Shape(None, None, "no published figure"))
            row = {
                "machine": machine,
                "lock": LOCKS[lock][0],
                "seeds": r.get("seeds", 1),
            }
            for fig in ("half", "span"):
                p = f"shape_{lock}_{fig}"
                row[f"{fig}_model"] = r[p] if r[f"{p}_n"] == 1 else None
                row[f"{fig}_model_std"] = (
                    r.get(f"{p}_std", 0.0) if r[f"{p}_n"] == 1 else None
                )
                row[f"{fig}_model_seeds"] = r[f"{p}_n"]
                row[f"{fig}_kernel"] = getattr(k, fig)
            row["model_why"] = r[f"shape_{lock}_why"]
            row["kernel_why"] = k.reason
            out.append(row)
    return out


def _cell(row: dict[str, Any], fig: str) -> str:
    """Format one figure: model ± sd / kernel, and the ratio model/kernel."""
    m, k = row[f"{fig}_model"], row[f"{fig}_kernel"]
    if m is None:
        share = row[f"{fig}_model_seeds"]
        model = (
            f"n/a ({share * row['seeds']:.0f} of {row['seeds']} seeds)"
            if share
            else "n/a"
        )
    else:
        sd = row[f"{fig}_model_std"]
        model = f"{m:.1f}" + (f" ± {sd:.1f}" if row["seeds"] > 1 else "")
    kernel = "n/a" if k is None else f"{k:.1f}"
    ratio = f"{m / k:.2f}x" if m is not None and k else "-"
    return f"{model} / {kernel}  {ratio}"


def text(shapes: list[dict[str, Any]], grid: Sequence[int]) -> list[str]:
    """Return the shape table, model beside kernel, and the reasons for n/a."""
    head = (
        "lock shapes (pages of pcp->batch), model mean ± sd over seeds / kernel, "
        "and model/kernel:\n"
        "  half: zone->lock falls to half its batch-31 contention; lru_lock has "
        "made half its rise to its top\n"
        "  80->20: the batches from 80% to 20% of it (lru_lock: 20% to 80% of the "
        f"rise), log2-interpolated on batch {', '.join(map(str, grid))}"
    )
    header = ("machine", "lock", "half", "80->20 span")
    cells = [
        (r["machine"], r["lock"], _cell(r, "half"), _cell(r, "span")) for r in shapes
    ]
    lines = [head, *_aligned([header, *cells])]
    for r in shapes:
        for who in ("model", "kernel"):
            if r[f"{who}_why"]:
                lines.append(
                    f"  n/a {r['machine']} {r['lock']} {who}: {r[f'{who}_why']}"
                )
    return lines


def _aligned(cells: list[tuple[str, ...]]) -> list[str]:
    """Return CELLS as lines of left-aligned columns."""
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    return [
        "  ".join(f"{x:<{w}}" for x, w in zip(c, widths, strict=True)).rstrip()
        for c in cells
    ]
