"""ying2023zones: zone->lock contention of page_fault1 at v6.3's defaults, held out.

Huang Ying, linux-mm 2023-05, "[RFC 0/6] mm: improve page allocator
scalability via splitting zones": will-it-scale page_fault1 with 16
processes on a 2-socket, 224-CPU Intel server spent 13.01% of its cycles
spinning on zone->lock with one zone a node (0.56% with four). No fitted
row measures contention at the kernel's default pcp->high on a 6.x
kernel; the figure is never fitted on (pcplab/heldout/).
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
ORDER = 2023
KINDS = {"heldout_zone": Kind(False, 10, "zone->lock contention (held out)")}


def run(quick: bool, workers: int, *, scheduler: Any = None) -> list[dict[str, Any]]:
    """Run page_fault1 with 16 tasks at 6.3's defaults on the 224-CPU server."""
    exp = load_experiment(NAME)
    spec = sim_spec(exp["profile"], **exp["spec"], **timing(mode_table(exp, quick)))
    (res,) = run_specs(NAME, [spec], workers, scheduler)
    mail = heldout_rows(exp["heldout"])
    published = {
        int(r["zone_instances"]): float(r["zone_lock_cycles_pct"]) for r in mail
    }
    return [
        {
            "machine": mail[0]["machine"],
            "profile": exp["profile"],
            "zone_instances": 1,
            "instrument": charged(res),
            RAN: ran(res),
            PUBLISHED_KERNEL: published_kernel(mail),
            "score": res["throughput"]["ops_per_s"],
            "zone_contention": res["contention"]["zone_lock_pct"],
            "lru_contention": res["contention"]["lru_lock_pct"],
            "zone_published": published[1],
            "zone_published_split": published.get(4),
        }
    ]


def residuals(rows: list[dict[str, Any]]) -> list[Residual]:
    """Residual of the zone->lock contention with one zone a node."""
    out: list[Residual] = []
    for r in rows:
        add(
            out,
            KINDS,
            r["machine"],
            "heldout_zone",
            r["zone_instances"],
            r["zone_contention"],
            r["zone_published"],
        )
    return out


def _cells(r: dict[str, Any]) -> list[str]:
    """Return a row's cells: the zone->lock pair, the model's LRU lock and score."""
    return [
        f"{r['zone_contention']:.1f}% / {r['zone_published']:.2f}%",
        f"{r['lru_contention']:.1f}%",
        f"{r['score']:.0f}",
    ]


def text(rows: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """Return the model beside the mail's figure, one zone a node."""
    out = [
        instrument_line(spec),
        f"{rows[0]['machine']}: contention in % of busy cycles",
        spec["layout"],
    ]
    out += [line(spec["layout"], [str(r["zone_instances"]), *_cells(r)]) for r in rows]
    return "\n".join(out) + "\n"


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Plot the model's zone->lock and LRU contention beside the mail's two."""
    exp = load_experiment(NAME)
    published = [
        {
            "x": float(r["zone_instances"] != "1"),
            "zone": float(r["zone_lock_cycles_pct"]),
        }
        for r in heldout_rows(exp["heldout"])
    ]
    model = charts.placed(rows, [0.0] * len(rows))
    panel = charts.Panel(
        f"{rows[0]['machine']}, page_fault1, 16 tasks, 6.3 defaults",
        "a node's ZONE_NORMAL",
        "lock contention (% of cycles)",
        [
            charts.model(model, "x", "zone_contention", "zone->lock", style="points"),
            charts.model(model, "x", "lru_contention", "LRU lock", style="points"),
            charts.published(published, "x", "zone", "zone->lock", style="points"),
        ],
        xticks=charts.categories(["one zone", "four instances (not modelled)"]),
        from_zero=True,
    )
    return charts.draw_panel(
        out / f"{NAME}_contention",
        f"{NAME}: zone->lock contention at the kernel's defaults",
        panel,
    )


def section(rows: list[dict[str, Any]], cv: list[dict[str, Any]]) -> list[str]:
    """Return the docs/fidelity.md table: the model beside the mail's contention."""
    exp = load_experiment(NAME)
    return table_section(
        NAME,
        "Held out: a figure no fit reads (pcplab/heldout/). Contention in % of "
        "the busy CPUs' cycles, model / published; the model's LRU lock and "
        f"score beside. The mail's machine is {exp['profile']}'s (2 x 56 cores), "
        f"with {exp['spec']['memory_mib'] // 1024} GiB inferred from its four "
        "zone instances of about 256 GB a node; with them the contention fell "
        "to 0.56% and the score rose up to 18.2% (the model has no zone "
        "instances).",
        ["zone instances", "zone->lock", "LRU lock (model)", "pages/s (model)"],
        [[str(r["zone_instances"]), *_cells(r)] for r in rows],
    )
