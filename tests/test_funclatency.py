"""funclatency formatting: bcc's layout, widths, star counts and the avg line."""

from __future__ import annotations

import re

from pcplab.funclatency import format_funclatency, format_log2_hist

HEADER = "     nsecs               : count     distribution"
WIDE_HEADER = "               nsecs                         : count     distribution"
ROW = re.compile(r"^ *(\d+) -> (\d+) +: (\d+) +\|(\**)( *)\|$")

# Yafang Shao, "[PATCH v2 3/3] mm/page_alloc: Introduce a new sysctl knob
# vm.pcp_batch_scale_max" (linux-mm, 2024): funclatency -T -i 600 rmqueue_bulk,
# 10 parallel 6 GiB mmap fills, pcp_batch_scale_max 5 (python/pcplab/reference/
# yafang2024_rmqueue_bulk_*.csv). Slots 1..26 in order.
YAFANG_COUNTS = [
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    12,
    9116,
    2004,
    2497,
    2127,
    2483,
    10102,
    212730,
    314692,
    430058,
    224032,
    73567,
    17079,
    3900,
    750,
    88,
    2,
]
YAFANG_TOTAL = 587066511229
YAFANG_COUNT = 1305242
YAFANG_AVG_LINE = "avg = 449775 nsecs, total: 587066511229 nsecs, count: 1305242"

# Written by hand from bcc's rules: stars = floor(40 * count / 4).
SMALL_EXPECTED = """\
     nsecs               : count     distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 1        |**********                              |
         4 -> 7          : 4        |****************************************|
         8 -> 15         : 2        |********************                    |

avg = 7 nsecs, total: 50 nsecs, count: 7"""

USECS_EXPECTED = """\
     usecs               : count     distribution
         0 -> 1          : 2        |****************************************|"""


def log2_rows(counts: list[int]) -> list[list[int]]:
    """Build protocol rows: row 1 is 0..1, row i is 2^(i-1)..2^i-1."""
    rows = [[0, 1, counts[0]]]
    for i, count in enumerate(counts[1:], start=2):
        rows.append([1 << (i - 1), (1 << i) - 1, count])
    return rows


def test_small_histogram_matches_bcc_text_exactly():
    """A hand-made histogram prints exactly as bcc prints it, trailing zeros cut."""
    text = format_funclatency(log2_rows([0, 1, 4, 2, 0, 0]), total=50, count=7)
    assert text == SMALL_EXPECTED


def test_yafang_histogram_line_by_line():
    """The published 2024 histogram: widths, stars = floor(40*count/max), avg."""
    lines = format_funclatency(
        log2_rows(YAFANG_COUNTS), total=YAFANG_TOTAL, count=YAFANG_COUNT
    ).splitlines()
    assert lines[0] == HEADER
    assert lines[-2:] == ["", YAFANG_AVG_LINE]
    rows = lines[1:-2]
    assert len(rows) == 26  # slots 1..26, leading empty slots kept
    peak = max(YAFANG_COUNTS)
    for slot, (line, count) in enumerate(zip(rows, YAFANG_COUNTS, strict=True), 1):
        m = ROW.match(line)
        assert m, line
        lo, hi = (0, 1) if slot == 1 else (1 << (slot - 1), (1 << slot) - 1)
        assert (int(m[1]), int(m[2]), int(m[3])) == (lo, hi, count)
        assert line.index(" -> ") == 10  # %10d
        assert line.index(" : ") == 24  # %-10d
        assert line.index("|") == 36  # %-8d fits every count here
        assert len(m[4]) == 40 * count // peak
        assert len(m[4]) + len(m[5]) == 40
    # Rows worked out by hand from the rule (430058 is the peak).
    assert rows[18] == (
        "    262144 -> 524287     : 430058   |****************************************|"
    )
    assert rows[17] == (  # 40 * 314692 / 430058 = 29.27
        "    131072 -> 262143     : 314692   |*****************************           |"
    )
    assert rows[19] == (  # 20.84
        "    524288 -> 1048575    : 224032   |********************                    |"
    )
    assert rows[21] == (  # 1.59
        "   2097152 -> 4194303    : 17079    |*                                       |"
    )
    assert rows[10] == (  # 0.85: no star
        "      1024 -> 2047       : 9116     |                                        |"
    )
    assert rows[25] == (
        "  33554432 -> 67108863   : 2        |                                        |"
    )


def test_wide_form_above_slot_32():
    """A slot above 32 switches to the wide layout: %20d columns, 20-star bars."""
    counts = [0] * 33 + [3, 6]  # slots 34 and 35: 8.6 s .. 34 s
    lines = format_log2_hist(log2_rows(counts))
    assert lines[0] == WIDE_HEADER
    assert len(lines) == 1 + 35
    assert lines[1] == (
        "                   0 -> 1                    : 0        |                    |"
    )
    assert lines[34] == (
        "          8589934592 -> 17179869183          : 3        |**********          |"
    )
    assert lines[35] == (
        "         17179869184 -> 34359738367          : 6        |********************|"
    )


def test_slot_32_keeps_the_narrow_form():
    """Slot 32 (2^31 .. 2^32-1) is still printed in the 10-wide layout."""
    lines = format_log2_hist(log2_rows([0] * 31 + [5]))
    assert lines[0] == HEADER
    assert lines[-1] == (
        "2147483648 -> 4294967295 : 5        |****************************************|"
    )


def test_empty_histogram_prints_nothing():
    """Like bcc, an all-zero histogram prints neither header nor rows."""
    assert format_log2_hist(log2_rows([0, 0, 0])) == []
    assert format_funclatency([], total=0, count=0) == ""


def test_other_unit_label_and_no_avg_without_count():
    """The label fills the header's 19 columns; no avg line without a count."""
    lines = format_funclatency(log2_rows([2]), label="usecs").splitlines()
    assert lines == USECS_EXPECTED.splitlines()


def test_count_wider_than_eight_digits_widens_the_row():
    """%-8d pads to eight columns but never truncates a larger count."""
    (line,) = format_log2_hist([[0, 1, 123456789]])[1:]
    assert line.startswith("         0 -> 1          : 123456789 |")
