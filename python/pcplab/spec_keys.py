"""The engines' spec-key table: every key's type, range, default and help.

The table is the C core's (src/include/pcplab/spec_keys.h): every engine
prints it (`pcplab-<engine> keys`) and the build installs that print as
pcplab/_bin/spec_keys.json, read here once. The command line's options for
spec keys take their types, ranges and help from it, and refuse a value out
of range in the engine's words; nothing here knows a range of its own.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from pcplab import engine
from pcplab.errors import BadInput, EngineError
from pcplab.inputs import DECIMAL, INTEGER, AsciiFloatRange, AsciiIntRange

TABLE_FILE = "spec_keys.json"


@dataclass(frozen=True)
class Key:
    """One row of the table: a spec key as the engines take it."""

    name: str
    type: str  # int, number, bool, choice, string, list, object
    allowed: str  # a range ("1..1024", "0 or 8..INT_MAX"), the choices, or words
    engines: tuple[str, ...]
    help: str
    min: float | None = None
    max: float | None = None
    or_zero: bool = False
    choices: tuple[str, ...] = ()
    default: Any = None
    computed: str | None = None  # the default in words, when the engine computes it
    knob: str | None = None  # the kernel's knob whose range this is
    internal: bool = False  # front end to engine only
    kernels: tuple[str, ...] | None = None  # the generations that take it

    def accepts(self, value: float) -> bool:
        """Say whether VALUE is within the key's range (0 too where allowed)."""
        assert self.min is not None and self.max is not None
        return self.min <= value <= self.max or (self.or_zero and value == 0)

    def range_words(self) -> str:
        """Say what is allowed as the engines do: 'allowed 1..6', '<knob> takes ...'."""
        return (
            f"{self.knob} takes {self.allowed}"
            if self.knob
            else f"allowed {self.allowed}"
        )

    def out_of_range(self, value: float) -> str:
        """Return the engines' line for VALUE out of range."""
        shown = value if isinstance(value, int) else f"{value:g}"
        return f"{self.name} {shown} is out of range; {self.range_words()}"


def _key(row: dict[str, Any]) -> Key:
    """Make a Key of one row of the engines' JSON."""
    fields = {**row, "engines": tuple(row["engines"])}
    fields["choices"] = tuple(row.get("choices", ()))
    if row.get("kernels") is not None:
        fields["kernels"] = tuple(row["kernels"])
    return Key(**fields)


@functools.cache
def table() -> dict[str, Key]:
    """Return every key by name, in the table's order; empty if nothing is built."""
    path = engine.bin_dir() / TABLE_FILE
    try:
        rows = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot read the spec-key table {path}: {exc}") from exc
    return {row["name"]: _key(row) for row in rows}


def key(name: str) -> Key:
    """Return the row of spec key NAME (EngineError if the table lacks it)."""
    try:
        return table()[name]
    except KeyError:
        raise EngineError(
            f"the spec-key table has no key {name!r}; rebuild pcplab (make setup)"
        ) from None


class _SpecNumber:
    """A spec key's number: ASCII digits, refused out of range in the engines' words."""

    key: Key

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Convert VALUE and check it against the key's range."""
        self.check_ascii(value, param, ctx)
        number = self.number_type.convert(self, value, param, ctx)
        self.check_finite(value, number, param, ctx)
        if not self.key.accepts(number):
            self.fail(self.key.out_of_range(number), param, ctx)
        return number

    def _describe_range(self) -> str:
        """Show the range as the table says it (in --help)."""
        return self.key.allowed


class SpecInt(_SpecNumber, AsciiIntRange):
    """An integer spec key, within its row's range."""

    number_type = click.types.IntParamType

    def __init__(self, row: Key) -> None:
        super().__init__(0 if row.or_zero else row.min, row.max)
        self.key = row


class SpecFloat(_SpecNumber, AsciiFloatRange):
    """A number spec key, within its row's range."""

    number_type = click.types.FloatParamType

    def __init__(self, row: Key) -> None:
        super().__init__(0 if row.or_zero else row.min, row.max)
        self.key = row


def click_type(row: Key) -> click.ParamType | None:
    """Return the click type of ROW's values (None: a plain string)."""
    if row.type == "int":
        return SpecInt(row)
    if row.type == "number":
        return SpecFloat(row)
    if row.type == "choice":
        return click.Choice(row.choices)
    return None


def option(name: str, *decls: str, **attrs: Any) -> Callable[..., Any]:
    """Return a click option for spec key NAME: the table's type, range and help.

    ATTRS add to it (metavar, required, is_flag) or replace the help where
    the option is not the key's value itself (a flag, a name, a list).
    """
    row = table().get(name)
    if row is not None:
        attrs.setdefault("help", row.help)
        if not attrs.get("is_flag") and "type" not in attrs:
            attrs["type"] = click_type(row)
        shown = default_words(row)
        # a --key/--no-key flag left unset (None) leaves the engine its default
        unset = attrs.get("is_flag") and "default" in attrs and attrs["default"] is None
        if shown and (unset or not {"default", "required", "is_flag"} & attrs.keys()):
            # the engine fills the default (click's own would be sent as a value)
            attrs["help"] = f"{attrs['help'].rstrip()}  Default: {shown}."
    return click.option(*decls, **attrs)


def default_words(row: Key) -> str | None:
    """Return ROW's default as --help shows it (None: nothing to show)."""
    if row.computed and not row.computed.startswith(("required", "none")):
        return row.computed
    if row.default is None or row.default is False:
        return None
    return str(row.default)


def string_keys() -> set[str]:
    """Return the keys whose values are never numbers (kernel "6.6" is a string)."""
    return {
        name
        for name, row in table().items()
        if row.type not in ("int", "number", "bool")
    }


def schedule_help() -> str:
    """Return the help of --scale-max-schedule, with the knob's range."""
    row = table().get("scale_max")
    values = f" ({row.allowed})" if row else ""
    return (
        f"Change pcp_batch_scale_max during the run: to V{values} at T seconds "
        "into the measured phase (0: when measuring starts), e.g. 0:5,0.5:0."
    )


def parse_scale_max_schedule(text: str) -> list[list[float | int]]:
    """Parse --scale-max-schedule "0:5,0.5:0" into [[0.0, 5], [0.5, 0]].

    Anything else is BadInput: one line saying what is wrong and what is
    allowed. The engine checks the kernel generation and the time range.
    """
    knob = key("scale_max")
    allowed = (
        "give T:V[,T:V...] with T seconds into the measured phase (0 or more, in "
        f"time order) and V a pcp_batch_scale_max of {knob.allowed}, e.g. 0:5,0.5:0"
    )
    schedule: list[list[float | int]] = []

    def bad(problem: str) -> BadInput:
        return BadInput(f"--scale-max-schedule {text!r}: {problem}; {allowed}")

    for entry in text.split(","):
        parts = entry.split(":")
        if len(parts) != 2:
            raise bad(f"{entry.strip()!r} is not T:V")
        if not DECIMAL.fullmatch(parts[0].strip()):
            raise bad(f"time {parts[0].strip()!r} is not a number")
        if not INTEGER.fullmatch(parts[1].strip()):
            raise bad(f"value {parts[1].strip()!r} is not an integer")
        at, value = float(parts[0]), int(parts[1])
        if not math.isfinite(at) or at < 0:
            raise bad(f"time {parts[0].strip()} is not 0 or more")
        if not knob.accepts(value):
            raise bad(f"value {value} is out of range")
        if schedule and at < schedule[-1][0]:
            raise bad(f"time {parts[0].strip()} comes before {schedule[-1][0]:g}")
        schedule.append([at, value])
    return schedule


def markdown() -> str:
    """Return the table as the Markdown table of docs/engine-protocol.md."""
    lines = [
        "| key | type | engines | kernels | default | allowed | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table().values():
        default = row.computed or json.dumps(row.default)
        allowed = row.range_words() if row.knob else row.allowed
        kernels = ", ".join(row.kernels) if row.kernels else "all"
        cells = [
            row.name,
            row.type,
            ", ".join(row.engines),
            kernels,
            default,
            allowed,
            row.help,
        ]
        lines.append(
            "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
        )
    return "\n".join(lines)


DOC_BEGIN = (
    "<!-- the spec keys: scripts/make-spec-keys-doc writes them from spec_keys.h -->"
)
DOC_END = "<!-- end of the spec keys -->"


def replace_doc_block(text: str) -> str:
    """Return TEXT with its block between DOC_BEGIN and DOC_END made from the table."""
    head, begin, rest = text.partition(DOC_BEGIN)
    _, end, tail = rest.partition(DOC_END)
    if not begin or not end:
        raise ValueError(f"the document has no block {DOC_BEGIN} ... {DOC_END}")
    return f"{head}{DOC_BEGIN}\n{markdown()}\n{DOC_END}{tail}"
