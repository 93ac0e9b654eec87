"""Format log2 latency histograms exactly as bcc's funclatency prints them."""

from __future__ import annotations

from collections.abc import Sequence

STARS_MAX = 40  # bcc's stars_max: the widest bar
WIDE_SLOT = 32  # a slot above this switches bcc to its wide layout


def _stars(count: int, max_count: int, width: int) -> str:
    """Return the bar of `count`: floor(width * count / max_count) stars."""
    return "*" * (width * count // max_count)


def format_log2_hist(rows: Sequence[Sequence[int]], label: str = "nsecs") -> list[str]:
    """Return the lines bcc's print_log2_hist prints for [[lo, hi, count], ...]."""
    counts = [round(row[2]) for row in rows]  # a mean over seeds: to the call
    last = max((i for i, count in enumerate(counts) if count > 0), default=-1)
    if last < 0:
        return []  # bcc prints nothing, not even the header, for an empty histogram
    rows = rows[: last + 1]
    max_count = max(counts)
    # Slot i holds 2^(i-1) .. 2^i - 1, so its upper bound has i bits.
    if int(rows[-1][1]).bit_length() <= WIDE_SLOT:
        lines = [f"     {label:<19} : count     distribution"]
        num_width, bar_width = 10, STARS_MAX
    else:
        lines = [f"               {label:<29} : count     distribution"]
        num_width, bar_width = 20, STARS_MAX // 2
    for lo, hi, count in rows:
        bar = _stars(round(count), max_count, bar_width)
        lines.append(
            f"{int(lo):>{num_width}} -> {int(hi):<{num_width}} : {round(count):<8} "
            f"|{bar:<{bar_width}}|"
        )
    return lines


def format_funclatency(
    rows: Sequence[Sequence[int]],
    *,
    total: int | None = None,
    count: int | None = None,
    label: str = "nsecs",
) -> str:
    """Return a funclatency summary: histogram, blank line, avg/total/count line."""
    lines = format_log2_hist(rows, label)
    if count and total is not None:
        # bcc prints integers; a mean over seeds is rounded to them, and its
        # count is the sum of the bars as printed (each bucket's mean rounded)
        counts = [row[2] for row in rows]
        if counts and any(c != int(c) for c in counts):
            count = sum(round(c) for c in counts)
        total, count = round(total), round(count)
        lines += [
            "",
            f"avg = {total // count} {label}, total: {total} {label}, count: {count}",
        ]
    return "\n".join(lines)
