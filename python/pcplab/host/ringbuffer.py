"""Decode a tracefs ring buffer read raw (per_cpu/cpuN/trace_pipe_raw) into events."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass

_FIELD_RE = re.compile(
    r"field:(?P<decl>[^;]*);\s*offset:(?P<off>\d+);\s*size:(?P<size>\d+);"
    r"(?:\s*signed:(?P<signed>\d+);)?"
)
_TYPE_PADDING, _TYPE_TIME_EXTEND, _TYPE_TIME_STAMP = 29, 30, 31
_TS_MASK = (1 << 59) - 1


@dataclass
class EventFormat:
    """The id and field offsets of one trace event, from its format file."""

    name: str
    id: int
    fields: dict[str, tuple[int, int, bool]]  # name: (offset, size, signed)

    def value(self, data: bytes | memoryview, offset: int, name: str) -> int:
        """Read field `name` of the record at `offset` of `data`."""
        off, size, signed = self.fields[name]
        return int.from_bytes(
            data[offset + off : offset + off + size], "little", signed=signed
        )


def parse_format(name: str, text: str) -> EventFormat:
    """Parse an events/<system>/<event>/format file."""
    match = re.search(r"^ID:\s*(\d+)", text, re.M)
    if match is None:
        raise ValueError(f"{name}: format has no ID line")
    fields = {}
    for m in _FIELD_RE.finditer(text):
        decl = m.group("decl").strip()
        field_name = re.sub(r"\[.*\]$", "", decl.split()[-1]).lstrip("*")
        fields[field_name] = (
            int(m.group("off")),
            int(m.group("size")),
            m.group("signed") == "1",
        )
    return EventFormat(name, int(match.group(1)), fields)


def parse_header_page(text: str) -> tuple[int, int, int]:
    """Return (commit offset, commit size, data offset) from events/header_page."""
    found = {}
    for m in _FIELD_RE.finditer(text):
        found[m.group("decl").split()[-1]] = (int(m.group("off")), int(m.group("size")))
    try:
        return found["commit"][0], found["commit"][1], found["data"][0]
    except KeyError:
        raise ValueError("header_page lacks the commit or data field") from None


def iter_page_records(
    page: bytes, header: tuple[int, int, int]
) -> Iterator[tuple[int, memoryview]]:
    """Yield (timestamp_ns, record) of every data event of one ring-buffer page."""
    commit_off, commit_size, data_off = header
    view = memoryview(page)
    ts = int.from_bytes(view[0:8], "little")
    commit = int.from_bytes(view[commit_off : commit_off + commit_size], "little")
    size = commit & ((1 << 27) - 1)  # the high bits carry the missed-events flags
    pos, end = data_off, min(data_off + size, len(page))
    unpack = struct.Struct("<I").unpack_from
    while pos + 4 <= end:
        (head,) = unpack(view, pos)
        type_len, delta = head & 0x1F, head >> 5
        if type_len == _TYPE_PADDING:
            if delta == 0:
                break  # the rest of the page is padding
            ts += delta
            pos += 4 + unpack(view, pos + 4)[0]
        elif type_len == _TYPE_TIME_EXTEND:
            ts += (unpack(view, pos + 4)[0] << 27) | delta
            pos += 8
        elif type_len == _TYPE_TIME_STAMP:
            absolute = (unpack(view, pos + 4)[0] << 27) | delta
            ts = (ts & ~_TS_MASK) | (absolute & _TS_MASK)
            pos += 8
        elif type_len == 0:
            length = unpack(view, pos + 4)[0]
            ts += delta
            yield ts, view[pos + 8 : pos + 4 + length]
            pos += 4 + length
        else:
            ts += delta
            yield ts, view[pos + 4 : pos + 4 + type_len * 4]
            pos += 4 + type_len * 4


def decode_raw(
    pages_by_cpu: dict[int, list[bytes]],
    header: tuple[int, int, int],
    refill: EventFormat,
    drain: EventFormat,
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """Decode raw pages into (cpu, ts, pages) refill and drain events."""
    refills: list[tuple[int, int, int]] = []
    drains: list[tuple[int, int, int]] = []
    for cpu, pages in sorted(pages_by_cpu.items()):
        for page in pages:
            for ts, rec in iter_page_records(page, header):
                kind = int.from_bytes(rec[0:2], "little")
                if kind == refill.id:
                    if refill.value(rec, 0, "percpu_refill") != 1:
                        continue
                    refills.append((cpu, ts, 1 << refill.value(rec, 0, "order")))
                elif kind == drain.id:
                    drains.append((cpu, ts, 1 << drain.value(rec, 0, "order")))
    return refills, drains
