"""aaron2018rfc: zone->lock by path on an unseen 2-socket Skylake, merging skipped.

Aaron Lu, linux-mm 2018-03-20 (v3 2018-05, on v4.17-rc4), "Eliminate
zone->lock contention for will-it-scale/page_fault1 and parallel free":
page_fault1 at full load on a 2-socket, 112-CPU Skylake spent 80% of its
time spinning on zone->lock, 35% on the free path; skipping the merge of
order-0 pages (patch 2/4, the policy no-merge) took the free path's to
1.1%. The machine is in no reference CSV and the figures are never fitted
on (pcplab/heldout/): the model predicts both ends from public facts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pcplab import charts
from pcplab.experiments._common import (
    charged,
    heldout_rows,
    instrument_line,
    load_experiment,
    mode_table,
    own_name,
    published_kernel,
    run_specs,
    sim_spec,
    table_section,
    timing,
)
from pcplab.headers import PUBLISHED_KERNEL, RAN, ran
from pcplab.render import line
from pcplab.tolerance import Kind, Residual, add

NAME = own_name(__name__)
ORDER = 2018
KINDS = {
    "heldout_rfc_zone": Kind(False, 10, "zone->lock contention, 2018 RFC (held out)"),
    "heldout_rfc_free": Kind(False, 10, "its free path (held out)"),
}
# the CSV's `path` column -> the row field of the model's figure, its kind
PATHS = {"all": ("zone", "heldout_rfc_zone"), "free": ("zone_free", "heldout_rfc_free")}
# the model's series of the plot: a row field and its label
SERIES = (("zone", "zone->lock"), ("zone_free", "free path"), ("lru", "LRU lock"))


def published(exp: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Return per policy the RFC's zone->lock contention (%) by path."""
    out: dict[str, dict[str, float]] = {}
    for row in heldout_rows(exp["heldout"]):
        out.setdefault(row["policy"], {})[row["path"]] = float(row["zone_lock_pct"])
    return out


def path_contention(res: dict[str, Any], caller: str) -> float:
    """Return the % of CPU time spent waiting for zone->lock in CALLER."""
    lock = res["locks"]["zone_lock"]
    if not lock["wait_ns"]:
        return 0.0
    wait = sum(c["total_wait_ns"] for c in lock["callers"] if c["caller"] == caller)
    return res["contention"]["zone_lock_pct"] * wait / lock["wait_ns"]


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Run page_fault1 at full load on the 2-socket Skylake under each policy."""
    exp = load_experiment(NAME)
    mail = published(exp)
    base = {**exp["spec"], **timing(mode_table(exp, quick))}
    specs = [sim_spec(exp["profile"], **base, policy=p) for p in mail]
    results = run_specs(NAME, specs, workers, scheduler)
    held = heldout_rows(exp["heldout"])
    machine = held[0]["machine"]
    kernels = {p: published_kernel([r for r in held if r["policy"] == p]) for p in mail}
    rows = []
    for policy, res in zip(mail, results, strict=True):
        rows.append(
            {
                "machine": machine,
                "profile": exp["profile"],
                "policy": policy,
                "instrument": charged(res),
                RAN: ran(res),
                PUBLISHED_KERNEL: kernels[policy],
                "score": res["throughput"]["ops_per_s"],
                "zone": res["contention"]["zone_lock_pct"],
                "zone_free": path_contention(res, "free_pcppages_bulk"),
                "zone_alloc": path_contention(res, "rmqueue_bulk"),
                "lru": res["contention"]["lru_lock_pct"],
                **{
                    f"{PATHS[path][0]}_published": pct
                    for path, pct in mail[policy].items()
                },
            }
        )
    return rows


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residuals of every path's contention the RFC gives, per policy."""
    out: list[Residual] = []
    for r in rows:
        for field, kind in PATHS.values():
            model, pub = r.get(field), r.get(f"{field}_published")
            add(out, KINDS, r["machine"], kind, r["policy"], model, pub)
    return out


def _versus(r: dict[str, Any], field: str) -> str:
    """Return a model contention, with the RFC's beside it where it gives one."""
    pub = r.get(f"{field}_published")
    return f"{r[field]:.1f}%" + ("" if pub is None else f" / {pub:.1f}%")


def _cells(r: dict[str, Any]) -> list[str]:
    """Return a policy's cells: zone->lock, its two paths, LRU lock, score."""
    return [
        _versus(r, "zone"),
        _versus(r, "zone_free"),
        f"{r['zone_alloc']:.1f}%",
        f"{r['lru']:.1f}%",
        f"{r['score']:.0f}",
    ]


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return each policy's contention beside the RFC's."""
    out = [
        instrument_line(spec),
        f"{rows[0]['machine']} ({spec['profile']}): % of CPU time waiting",
        spec["layout"],
    ]
    out += [line(spec["layout"], [r["policy"], *_cells(r)], left=1) for r in rows]
    return "\n".join(out) + "\n"


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot each policy's zone->lock, free path and LRU lock beside the RFC's."""
    exp = load_experiment(NAME)
    where = {r["policy"]: float(i) for i, r in enumerate(rows)}
    offs = charts.offsets(2)
    model = charts.placed(rows, [where[r["policy"]] + offs[0] for r in rows])
    mail = [
        {
            "x": where[r["policy"]] + offs[1],
            r["path"]: float(r["zone_lock_pct"]),
        }
        for r in heldout_rows(exp["heldout"])
    ]
    panel = charts.Panel(
        f"{rows[0]['machine']}, page_fault1 at full load, 4.18",
        "policy",
        "lock contention (% of CPU time)",
        [
            *(
                charts.model(model, "x", field, label, style="points")
                for field, label in SERIES
            ),
            *(
                charts.published(
                    [m for m in mail if path in m], "x", path, label, style="points"
                )
                for path, label in (("all", "zone->lock"), ("free", "free path"))
            ),
        ],
        xticks=charts.categories([r["policy"] for r in rows]),
        from_zero=True,
    )
    return charts.draw_panel(
        out / f"{NAME}_contention",
        f"{NAME}: zone->lock by path, order-0 merging skipped",
        panel,
    )


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md table: each policy beside the RFC's figures."""
    exp = load_experiment(NAME)
    return table_section(
        NAME,
        "Held out: figures no fit reads (pcplab/heldout/), on a machine in no "
        f"reference CSV ({exp['profile']}). Contention in % of all CPU time, "
        "model / published; a path is the wait in free_pcppages_bulk or "
        "rmqueue_bulk. `no-merge` is the RFC's patch 2/4 (src/mm/policies/"
        "no_merge.c); the RFC's other patches are not modelled.",
        ["policy", "zone->lock", "free path", "alloc path", "LRU lock", "pages/s"],
        [[r["policy"], *_cells(r)] for r in rows],
    )
