"""The report's plots: small multiples of the model beside the published figures.

A plot is a `Figure` of `Panel`s (one axes each) of `Series`. The model is
drawn solid with round markers, and with error bars wherever its rows carry
`<field>_std` (the spread over `reproduce --seeds`); the published figures
dashed with crosses. A series' key (a machine, a lock, a policy) gives its
colour, the same in every panel; the legend stands right of the panels.
`draw` writes a PNG and an SVG of the same stem. The SVG keeps its text as
text and names what tests look for by id: each axes' `xlabel-N`, `ylabel-N`
and `title-N`, the figure's `suptitle`, each published series'
`published-N-M` (a marker per published point) and each set of error bars
`errorbars-...` (a segment per bar). Under the title, a smaller line says
what the figure's results ran (pcplab.headers: engine, machine, kernel,
workload, tasks, instrument), id `ran`: the Figure's own, else the one
`stating` gives every figure drawn inside it (an experiment's, for all its
plots).

matplotlib is imported on first use, on the Agg backend (no display needed).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PANEL_SIZE = (4.2, 3.1)  # inches per panel
WIDE_PANEL_SIZE = (6.0, 4.0)  # a figure of one panel with categorical x
RAN_SIZE = 8  # points: the "what ran" line under a figure's title
MODEL_NOTE = "model"
SEEDS_NOTE = "model (bars: ±1 s.d. over seeds)"


def _pyplot() -> Any:
    """Return matplotlib.pyplot on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass
class Series:
    """One line, set of points, bars or log2 histogram of a panel."""

    key: str  # what its colour stands for in the legend
    xs: Sequence[float]  # for "steps": the bucket edges, one more than ys
    ys: Sequence[float | None]  # None: no point there
    published: bool = False  # dashed with crosses, else the model's solid line
    err: Sequence[float | None] | None = None  # error bars, half-height
    style: str = "line"  # "line", "points", "bar" or "steps"
    width: float = 0.8  # a bar's
    lw: float = 1.5  # a line's width (wider under narrower: equal lines show)


@dataclass
class Panel:
    """One axes: its title, its labels with their units, its series and scales."""

    title: str
    xlabel: str
    ylabel: str
    series: list[Series]
    xscale: str = "linear"  # "log2" (batch) or "log" (times over decades)
    yscale: str = "linear"  # or "log"
    xticks: Sequence[tuple[float, str]] = ()  # a categorical axis: where, what
    from_zero: bool = False  # the y axis starts at 0
    zero_line: bool = False  # a line at y = 0 (deltas)


@dataclass
class Figure:
    """A titled grid of panels, written to STEM.png and STEM.svg."""

    stem: Path
    title: str
    panels: list[Panel]
    ncols: int = 3
    published_note: str = "published"  # its legend entry (what its bars are)
    keys: Sequence[str] = ()  # keys coloured first, so figures can agree
    size: tuple[float, float] = PANEL_SIZE  # inches per panel
    notes: list[str] = field(default_factory=list)  # more legend lines
    ran: str | None = None  # what its results ran, else what `stating` says


# What the results of the figures drawn now ran (`stating`).
_RAN: ContextVar[str | None] = ContextVar("figure_ran", default=None)


@contextmanager
def stating(ran: str | None) -> Iterator[None]:
    """Head every figure drawn inside with RAN (pcplab.headers' line)."""
    token = _RAN.set(ran)
    try:
        yield
    finally:
        _RAN.reset(token)


# --- what the rows give --------------------------------------------------------


def number(value: Any) -> float | None:
    """Return VALUE (a number or a CSV cell) as a float, None if empty."""
    return None if value is None or value == "" else float(value)


def values(
    rows: Sequence[dict[str, Any]], key: str, scale: float = 1.0
) -> list[float | None]:
    """Return ROWS' KEY times SCALE (None where a row has none)."""
    out = []
    for r in rows:
        v = number(r.get(key))
        out.append(None if v is None else v * scale)
    return out


def spread(
    rows: Sequence[dict[str, Any]], key: str, scale: float = 1.0
) -> list[float | None] | None:
    """Return ROWS' KEY_std times SCALE (seeds' spread), None if no row has it."""
    if not any(f"{key}_std" in r for r in rows):
        return None
    return values(rows, f"{key}_std", scale)


def model(
    rows: Sequence[dict[str, Any]],
    x: str,
    key: str,
    label: str,
    scale: float = 1.0,
    style: str = "line",
) -> Series:
    """Return the model's KEY against X, with error bars where KEY_std is given."""
    return _series(rows, x, key, label, scale, style, spread(rows, key, scale))


def published(
    rows: Sequence[dict[str, Any]],
    x: str,
    key: str,
    label: str,
    scale: float = 1.0,
    style: str = "line",
    err: str | None = None,
) -> Series:
    """Return a published column KEY against X (CSV rows) as a dashed series.

    ERR names the column of its error bars (a published spread), if any.
    """
    bars = None if err is None else values(rows, err, scale)
    return _series(rows, x, key, label, scale, style, bars, published=True)


def _series(
    rows: Sequence[dict[str, Any]],
    x: str,
    key: str,
    label: str,
    scale: float,
    style: str,
    err: Sequence[float | None] | None,
    published: bool = False,
) -> Series:
    """Return KEY against X of ROWS as a Series with error bars ERR."""
    return Series(
        label,
        values(rows, x),  # type: ignore[arg-type]
        values(rows, key, scale),
        published=published,
        err=err,
        style=style,
    )


def placed(rows: Sequence[dict[str, Any]], xs: Sequence[float]) -> list[dict[str, Any]]:
    """Return ROWS, each with its x from XS (a category's position) as "x"."""
    return [{**r, "x": x} for r, x in zip(rows, xs, strict=True)]


def grouped(
    rows: Sequence[dict[str, Any]], key: str
) -> dict[str, list[dict[str, Any]]]:
    """Group ROWS by KEY's value, in order of first appearance."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(str(r[key]), []).append(r)
    return out


def log2_buckets(
    hist: Sequence[Sequence[float]], scale: float = 1.0, trim: bool = False
) -> tuple[list[float], list[float]]:
    """Return bcc log2 buckets [[lo, hi, count]] as edges (ns / 1000) and counts.

    Bucket k (lo = 2^k; bucket 0 is 0..1) spans 2^k..2^(k+1) ns on the plot;
    buckets missing between the first and the last count 0, and with TRIM
    empty buckets before the first and after the last call are left out.
    Counts are multiplied by SCALE.
    """
    counts = {int(lo).bit_length() - (lo > 0): float(c) for lo, _, c in hist}
    if trim:
        counts = {k: c for k, c in counts.items() if c}
    if not counts:
        return [], []
    ks = range(min(counts), max(counts) + 1)
    edges = [2.0**k / 1000 for k in range(ks.start, ks.stop + 1)]
    return edges, [counts.get(k, 0.0) * scale for k in ks]


def shares(hist: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """Return a log2 histogram's edges (us) and each bucket's % of the calls."""
    total = sum(float(c) for _, _, c in hist)
    return log2_buckets(hist, 100.0 / total if total else 0.0)


def categories(names: Sequence[str]) -> list[tuple[float, str]]:
    """Return the positions 0, 1, ... of a categorical axis with its NAMES."""
    return [(float(i), name) for i, name in enumerate(names)]


def offsets(n: int, width: float = 0.8) -> list[float]:
    """Return N offsets that spread N series over WIDTH around a category."""
    step = width / n
    return [step * (i - (n - 1) / 2) for i in range(n)]


# --- drawing -------------------------------------------------------------------


def _points(s: Series) -> tuple[list[float], list[float]]:
    """Return the (x, y) of a series' points that have a y."""
    pts = [(x, y) for x, y in zip(s.xs, s.ys, strict=False) if y is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def _centres(s: Series) -> list[float]:
    """Return the x of each point: a bucket's geometric centre for steps."""
    if s.style != "steps":
        return list(s.xs)
    return [math.sqrt(a * b) for a, b in itertools.pairwise(s.xs)]


def _error_bars(ax: Any, s: Series, color: str, gid: str) -> None:
    """Draw the series' error bars where it has a point and an error."""
    if s.err is None:
        return
    pts = [
        (x, y, e)
        for x, y, e in zip(_centres(s), s.ys, s.err, strict=False)
        if y is not None and e is not None
    ]
    if not pts:
        return
    xs, ys, es = zip(*pts, strict=True)
    bars = ax.errorbar(xs, ys, yerr=es, fmt="none", ecolor=color, capsize=3, lw=1)
    bars.lines[2][0].set_gid(f"errorbars-{gid}")


def _draw(ax: Any, s: Series, color: str, gid: str) -> None:
    """Draw one series on AX in COLOR; its points carry the SVG id GID."""
    line = "--" if s.published else "-"
    marker = "x" if s.published else "o"
    if s.style == "steps":
        if s.ys:
            ys = [math.nan if y is None else y for y in s.ys]
            ax.stairs(ys, s.xs, color=color, ls=line, lw=s.lw, baseline=None)
            if s.published:
                ax.plot(_centres(s), ys, "x", color=color, ms=4, gid=gid)
    elif s.style == "bar":
        xs, ys = _points(s)
        ax.bar(xs, ys, width=s.width, color=color, alpha=0.85, gid=gid)
    else:
        xs, ys = _points(s)
        style = "none" if s.style == "points" else line
        ax.plot(xs, ys, ls=style, lw=s.lw, marker=marker, color=color, ms=5, gid=gid)
    _error_bars(ax, s, "0.15" if s.style == "bar" else color, gid)  # dark on bars


def _plain(value: float, _pos: Any = None) -> str:
    """Format a tick of a log axis as a short number (0.01, 64, 1000, 1e5)."""
    if value <= 0 or 1e-3 <= value < 1e4:
        return f"{value:g}"
    return f"{value:.0e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")


def _axes(ax: Any, p: Panel, i: int) -> None:
    """Label and scale one panel's axes; the labels carry SVG ids."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_title(p.title, fontsize=10)
    ax.set_xlabel(p.xlabel, fontsize=9)
    ax.set_ylabel(p.ylabel, fontsize=9)
    ax.title.set_gid(f"title-{i}")
    ax.xaxis.label.set_gid(f"xlabel-{i}")
    ax.yaxis.label.set_gid(f"ylabel-{i}")
    ax.tick_params(labelsize=8)
    if p.xscale != "linear":
        ax.set_xscale("log", base=2 if p.xscale == "log2" else 10)
        ax.xaxis.set_major_formatter(FuncFormatter(_plain))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if p.yscale == "log":
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FuncFormatter(_plain))
        ax.yaxis.set_minor_formatter(NullFormatter())
    if p.xticks:
        names = [n for _, n in p.xticks]
        # many long names would run into each other: slant them
        slant = 30 if sum(len(n) for n in names) > 40 else 0
        ax.set_xticks(
            [t for t, _ in p.xticks],
            names,
            rotation=slant,
            ha="right" if slant else "center",
        )
        ax.set_xlim(-0.5, len(p.xticks) - 0.5)
    if p.from_zero:
        ax.set_ylim(bottom=0)
    if p.zero_line:
        ax.axhline(0, color="0.4", lw=0.8)
    ax.grid(True, alpha=0.3)


def _legend(fig: Any, figure: Figure, colours: dict[str, str]) -> None:
    """Put the legend right of the panels: a colour per key, then the styles."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    every = [s for p in figure.panels for s in p.series]
    has_model = any(not s.published for s in every)
    has_published = any(s.published for s in every)
    seeds = any(s.err is not None and not s.published for s in every)
    both = has_model and has_published
    single = len(colours) == 1 and (both or seeds)
    style_colour = next(iter(colours.values())) if single else "0.35"
    handles: list[Any] = []
    if not single:
        handles += [Patch(color=c, label=k) for k, c in colours.items()]
    if both or seeds:
        note = SEEDS_NOTE if seeds else MODEL_NOTE
        handles.append(Line2D([], [], color=style_colour, marker="o", label=note))
    if both:
        handles.append(
            Line2D(
                [],
                [],
                color=style_colour,
                ls="--",
                marker="x",
                label=figure.published_note,
            )
        )
    handles += [Line2D([], [], ls="none", label=n) for n in figure.notes]
    fig.legend(
        handles=handles,
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        fontsize=8,
        frameon=False,
    )


def _colours(figure: Figure) -> dict[str, str]:
    """Give each key of the figure a colour, in order of first appearance."""
    cycle = _pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    used = {s.key for p in figure.panels for s in p.series}
    keys = dict.fromkeys(
        [*figure.keys, *(s.key for p in figure.panels for s in p.series)]
    )
    return {k: cycle[i % len(cycle)] for i, k in enumerate(keys) if k in used}


def _wrapped(ran: str, width: int) -> str:
    """Return the facts of RAN ("engine sim, machine ...") in lines of WIDTH.

    A line breaks after the comma between two facts, never inside one (a
    machine's name): the lines joined by spaces are RAN again.
    """
    lines: list[str] = []
    for fact in ran.split(", "):
        if lines and len(lines[-1]) + 1 + len(fact) <= width:
            lines[-1] += " " + fact
        else:
            lines.append(fact)
        lines[-1] += ","
    return "\n".join(lines)[:-1]


def title(fig: Any, text: str, ran: str | None = None) -> None:
    """Title FIG above its laid-out axes, with what RAN in a smaller line below.

    Call it after the layout: both lines go above the axes, where
    `bbox_inches="tight"` keeps them, and the line wraps to the figure's width.
    """
    ran = ran if ran is not None else _RAN.get()
    height = fig.get_figheight()
    lift = 0.0
    if ran:
        lines = _wrapped(ran, max(40, int(fig.get_figwidth() * 72 / (RAN_SIZE * 0.6))))
        note = fig.text(
            0.5, 1.0, lines, ha="center", va="bottom", fontsize=RAN_SIZE, color="0.3"
        )
        note.set_gid("ran")
        lift = (lines.count("\n") + 1) * RAN_SIZE * 1.3 / 72 / height
    fig.suptitle(text, fontsize=11, y=1.0 + lift, va="bottom").set_gid("suptitle")


def save(fig: Any, stem: Path) -> list[Path]:
    """Write FIG as STEM.png and STEM.svg (text kept as text); close it."""
    plt = _pyplot()
    png, svg = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": stem.name}):
        fig.savefig(png, dpi=100, bbox_inches="tight")
        fig.savefig(svg, bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return [png, svg]


def draw(figure: Figure) -> list[Path]:
    """Draw FIGURE's panels in a grid; write its PNG and SVG; return both paths."""
    plt = _pyplot()
    n = len(figure.panels)
    ncols = min(figure.ncols, n)
    nrows = math.ceil(n / ncols)
    fig, grid = plt.subplots(
        nrows,
        ncols,
        squeeze=False,
        figsize=(figure.size[0] * ncols, figure.size[1] * nrows + 0.4),
    )
    axes = list(grid.flat)
    for ax in axes[n:]:
        fig.delaxes(ax)
    colours = _colours(figure)
    for i, (ax, panel) in enumerate(zip(axes, figure.panels, strict=False)):
        for j, s in enumerate(panel.series):
            kind = "published" if s.published else "model"
            _draw(ax, s, colours[s.key], f"{kind}-{i}-{j}")
        _axes(ax, panel, i)
    fig.tight_layout()
    title(fig, figure.title, figure.ran)
    _legend(fig, figure, colours)
    return save(fig, figure.stem)


def draw_panel(stem: Path, title: str, panel: Panel) -> list[Path]:
    """Draw a figure of PANEL alone, one wide panel; write STEM.png and STEM.svg."""
    return draw(Figure(stem, title, [panel], size=WIDE_PANEL_SIZE))
