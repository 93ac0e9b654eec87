"""A spec key is one row of one table: the engines, the options and the docs agree.

Every engine takes each of its rows' keys at the row's bounds and refuses
them one past, in one line naming the key and its range; every engine
refuses the rows of the others by name; every option of the command line
that gives a spec key's value has the row's range; the documentation's key
table is the engines' table.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest

from pcplab import engine, machines, spec_keys
from pcplab.cli import cli

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("native", "sim", "host")
# A spec each engine takes, to which one key at a time is added.
BASE: dict[str, dict[str, Any]] = {
    "native": {"workload": "page_fault1", "tasks": 2},
    "sim": {"workload": "page_fault1", "tasks": 2},
    "host": {"workload": "page_fault1", "tasks": 1},
}


def _resolve(name: str, spec: dict[str, Any]) -> subprocess.CompletedProcess:
    """Run `pcplab-NAME resolve` on SPEC (the sim's with a machine)."""
    if name == "sim":
        spec = {"machine": machines.load_profile("skylake-ex"), **spec}
    return subprocess.run(
        [str(engine.engine_binary(name)), "resolve"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _refused(name: str, spec: dict[str, Any]) -> str:
    """Return the one stderr line of a spec the engine refuses (exit 2)."""
    proc = _resolve(name, spec)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, (name, spec, proc.stderr)
    assert proc.stdout == "" and len(lines) == 1, (name, spec, proc.stderr)
    assert lines[0].startswith("pcplab: error: ") and "; " in lines[0]
    return lines[0]


def _accepted(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Return the resolved spec of a spec the engine takes."""
    proc = _resolve(name, spec)
    assert proc.returncode == 0, (name, spec, proc.stderr)
    return json.loads(proc.stdout)


def _rows(name: str, *types: str) -> list[spec_keys.Key]:
    """Return the rows engine NAME takes, of the given types."""
    return [
        row
        for row in spec_keys.table().values()
        if name in row.engines and row.type in types
    ]


def _bounds(name: str, row: spec_keys.Key) -> tuple[float, float]:
    """Return the row's bounds as engine NAME applies them."""
    assert row.min is not None and row.max is not None
    if name == "sim" and row.name == "tasks":  # the machine's CPUs, at most
        return row.min, _accepted("sim", {"workload": "page_fault1"})["tasks"]
    return row.min, row.max


def _range_words(row: spec_keys.Key, low: float, high: float) -> str:
    """Return the engines' words for ROW's range from LOW to HIGH."""
    shown = [f"{int(v)}" if row.type == "int" else f"{v:g}" for v in (low, high)]
    zero = "0 or " if row.or_zero else ""
    prefix = f"{row.knob} takes" if row.knob else "allowed"
    return f"{prefix} {zero}{shown[0]}..{shown[1]}"


def _past(row: spec_keys.Key, value: float, direction: float) -> float:
    """Return the next value past VALUE towards DIRECTION that JSON can tell apart."""
    past = math.nextafter(value, direction * math.inf)
    if row.type != "int":
        return past
    return int(value + direction if abs(value) < 2**53 else past)  # 2^53 + 1 is 2^53


def test_every_engine_prints_the_installed_table():
    """`pcplab-<engine> keys` of every engine is the table the package reads."""
    installed = json.loads((engine.bin_dir() / spec_keys.TABLE_FILE).read_text())
    for name in ENGINES:
        proc = subprocess.run(
            [str(engine.engine_binary(name)), "keys"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert json.loads(proc.stdout) == installed, name
    assert list(spec_keys.table()) == [row["name"] for row in installed]


@pytest.mark.parametrize("name", ENGINES)
def test_every_number_key_is_taken_at_its_bounds_and_refused_past_them(name):
    """Each int and number row: lo and hi taken, one past refused with its range."""
    for row in _rows(name, "int", "number"):
        low, high = _bounds(name, row)
        extra = {"sync_fd": 3} if row.name == "trace_s" else {}
        for value in (low, high, *((0,) if row.or_zero else ())):
            if row.name == "cross_free_ratio":  # a group: VALUE allocate, 1 frees
                extra = {"cross_free": True, "tasks": int(value) + 1}
            resolved = _accepted(name, {**BASE[name], **extra, row.name: value})
            if not row.internal:  # cJSON prints 15 digits: seed 2^53 is near
                assert math.isclose(resolved[row.name], value, rel_tol=1e-14)
        below = _past(row, 0 if row.or_zero else low, -1)
        gap = (_past(row, low, -1),) if row.or_zero and _past(row, low, -1) > 0 else ()
        for value in (below, *gap, _past(row, high, 1)):
            line = _refused(name, {**BASE[name], **extra, row.name: value})
            assert f"{row.name} " in line and "out of range" in line, line
            assert line.endswith(_range_words(row, low, high)), line
        line = _refused(name, {**BASE[name], row.name: "1"})
        assert f"{row.name} must be" in line, line


@pytest.mark.parametrize("name", ENGINES)
def test_every_choice_and_bool_key_takes_its_values_only(name):
    """Each choice row takes every choice and refuses another; each bool row too."""
    for row in _rows(name, "choice", "bool"):
        values = row.choices if row.type == "choice" else (True, False)
        for value in values:
            assert _accepted(name, {**BASE[name], row.name: value})[row.name] == value
        line = _refused(name, {**BASE[name], row.name: "bogus"})
        assert row.name in line and ", ".join(map(str, values)).lower() in line, line


@pytest.mark.parametrize("name", ENGINES)
def test_every_engine_refuses_the_other_engines_keys_by_name(name):
    """A row the engine does not take is refused, naming the key; null is let be."""
    others = [r for r in spec_keys.table().values() if name not in r.engines]
    assert others, name
    for row in others:
        line = _refused(name, {**BASE[name], row.name: 1})
        assert line.startswith(f"pcplab: error: {row.name} is "), line
        _accepted(name, {**BASE[name], row.name: None})
    line = _refused(name, {**BASE[name], "bogus": 1})
    assert "unknown spec key 'bogus'" in line
    taken = [r.name for r in spec_keys.table().values() if name in r.engines]
    assert line.endswith(", ".join(taken)), line


def _commands(command: click.Command) -> list[click.Command]:
    """Return every command of the tree under COMMAND."""
    found = [command]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            found += _commands(sub)
    return found


def _options() -> list[tuple[click.Command, click.Option]]:
    """Return every option of every command."""
    return [
        (command, param)
        for command in _commands(cli)
        for param in command.get_params(click.Context(command))
        if isinstance(param, click.Option)
    ]


def _key_of(option: click.Option) -> spec_keys.Key | None:
    """Return the spec key an option's flag names (--size-mib, --duration), if any."""
    flag = max(option.opts, key=len).removeprefix("--").replace("-", "_")
    table = spec_keys.table()
    if flag in table:
        return table[flag]
    numeric = click.types.IntParamType | click.types.FloatParamType
    if not isinstance(option.type, numeric):  # --trace is a method, not trace_s
        return None
    return table.get(f"{flag}_s") or table.get(flag.replace("_seconds", "_s"))


def test_every_spec_key_option_has_the_tables_range():
    """Options giving a key's value take the row's type, range and refusal."""
    covered = set()
    for command, option in _options():
        row = _key_of(option)
        if row is None or option.is_flag or row.type not in ("int", "number"):
            continue
        if "," in (option.metavar or ""):  # a list of values, each the engine's
            continue
        assert isinstance(option.type, spec_keys.SpecInt | spec_keys.SpecFloat), (
            command.name,
            option.opts,
        )
        assert option.type.key == row
        low, high = row.min, row.max
        for value in (low, high, *((0,) if row.or_zero else ())):
            assert option.type.convert(str(value), option, None) == value
        for value in (
            _past(row, low if not row.or_zero else 0, -1),
            _past(row, high, 1),
        ):
            with pytest.raises(click.BadParameter, match=f"{row.name} .*out of range"):
                option.type.convert(repr(value), option, None)
        covered.add(row.name)
    numbers = {
        r.name
        for r in spec_keys.table().values()
        if r.type in ("int", "number") and not r.internal
    }
    # every number key the command line gives has its range there
    assert covered <= numbers
    assert {"tasks", "duration_s", "warmup_s", "high_fraction", "trace_s"} <= covered


def test_every_choice_option_has_the_tables_choices():
    """Options giving a choice key take exactly the row's choices."""
    for command, option in _options():
        row = _key_of(option)
        if row is not None and row.type == "choice":
            assert isinstance(option.type, click.Choice), (command.name, option.opts)
            assert tuple(option.type.choices) == row.choices


def test_the_protocol_doc_lists_the_table():
    """docs/engine-protocol.md's key table is the engines' (make-spec-keys-doc)."""
    text = (ROOT / "docs" / "engine-protocol.md").read_text()
    assert spec_keys.replace_doc_block(text) == text, (
        "the spec-key table of docs/engine-protocol.md is stale: "
        "run scripts/make-spec-keys-doc"
    )


def test_no_spec_key_range_is_kept_in_python():
    """The package's sources hold no range of a spec key but the table's."""
    literals = ("0..6", "32767", "2147483647", "1048576", "8323072", "86400")
    offenders = [
        (path.name, literal)
        for path in (ROOT / "python" / "pcplab").rglob("*.py")
        for literal in literals
        if literal in path.read_text()
    ]
    assert offenders == []


def test_the_kernel_choices_are_the_generations():
    """The table's kernel choices are the model's generations, in order."""
    row = spec_keys.table()["kernel"]
    line = _refused("sim", {**BASE["sim"], "kernel": "2.6"})
    assert line.endswith(f"known: {', '.join(row.choices)}"), line
    for kernel in row.choices:
        assert _accepted("sim", {**BASE["sim"], "kernel": kernel})["kernel"] == kernel


def test_a_row_of_some_generations_is_refused_on_the_others():
    """A row's kernels say which generations take it; the others refuse it."""
    rows = [r for r in spec_keys.table().values() if r.kernels]
    assert rows
    kernels = spec_keys.table()["kernel"].choices
    for row in rows:
        value = {"list": [[0, 1]], "bool": True}.get(row.type, 1)
        for kernel in kernels:
            spec = {**BASE["sim"], "kernel": kernel, row.name: value}
            if kernel in row.kernels:
                _accepted("sim", spec)
            else:
                line = _refused("sim", spec)
                assert f"{row.name} needs kernel {', '.join(row.kernels)}" in line
