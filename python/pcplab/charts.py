"""The plots the experiments draw: figures against batch, log2 histograms.

matplotlib is imported on first use, on the Agg backend (no display needed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pcplab.render import by_machine


def _pyplot() -> Any:
    """Return matplotlib.pyplot on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def against_batch(
    path: Path,
    rows: list[dict[str, Any]],
    panels: list[tuple[str, str, str]],
    title: str,
) -> Path:
    """Plot model (solid) and published (dashed) against batch, per machine."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4))
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, (model, published, label) in zip(axes, panels, strict=True):
        for machine, group in by_machine(rows).items():
            xs = [r["batch"] for r in group]
            line = ax.plot(xs, [r[model] for r in group], "o-", label=machine)[0]
            pub = [r.get(published) for r in group]
            if all(p is not None for p in pub):
                ax.plot(xs, pub, "x--", color=line.get_color(), alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("pcp->batch")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8, title="solid: model, dashed: published")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def histograms(
    path: Path, series: list[tuple[str, Any]], title: str, xlabel: str
) -> Path:
    """Plot log2 histograms as bars side by side, normalised to shares."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    slots = max((len(h) for _, h in series), default=0)
    width = 0.8 / max(1, len(series))
    for i, (label, hist) in enumerate(series):
        total = sum(int(c) for _, _, c in hist) or 1
        xs = [k + i * width for k in range(len(hist))]
        ax.bar(xs, [int(c) / total for _, _, c in hist], width=width, label=label)
    ax.set_xticks(range(slots))
    ax.set_xticklabels([f"2^{k}" for k in range(slots)], rotation=90, fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of calls")
    ax.legend(fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
