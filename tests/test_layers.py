"""The Python layers: no library module reaches up into the command line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "pcplab"


def _imports(path: Path) -> set[str]:
    """Return every pcplab module PATH imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        module = getattr(node, "module", None) or ""
        if isinstance(node, ast.ImportFrom) and module == "pcplab":
            found |= {f"pcplab.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and module.startswith("pcplab."):
            found.add(module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("pcplab")}
    return found


def test_no_library_module_imports_the_cli():
    """pcplab.cli is the top: nothing below it imports it, not even lazily."""
    offenders = {
        str(path.relative_to(PACKAGE)): "pcplab.cli"
        for path in PACKAGE.rglob("*.py")
        if path.name != "cli.py" or path.parent != PACKAGE
        if "pcplab.cli" in _imports(path)
    }
    assert offenders == {}


def test_only_the_cli_imports_the_host_commands():
    """pcplab.host.cli holds click commands: only pcplab.cli imports it."""
    allowed = {PACKAGE / "cli.py", PACKAGE / "host" / "cli.py"}
    offenders = {
        str(path.relative_to(PACKAGE)): "pcplab.host.cli"
        for path in PACKAGE.rglob("*.py")
        if path not in allowed
        if "pcplab.host.cli" in _imports(path)
    }
    assert offenders == {}


def _graph() -> dict[str, set[str]]:
    """Map every pcplab module to the pcplab modules it imports."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("pcplab", *parts)).removesuffix(".__init__")
        graph[name] = _imports(path) - {name}
    return {m: {d for d in deps if d in graph} for m, deps in graph.items()}


def test_the_imports_have_no_cycle():
    """Every module can be read bottom-up: no import cycle, not even lazily."""
    graph, done, path = _graph(), set(), []

    def visit(module: str) -> None:
        if module in path:
            cycle = path[path.index(module) :] + [module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        path.append(module)
        for dep in sorted(graph[module]):
            visit(dep)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
    assert "pcplab.cli" in done


ARCHITECTURE = PACKAGE.parents[1] / "docs" / "architecture.md"


def _documented_layers() -> dict[str, int]:
    """Map each module named in docs/architecture.md's layer table to its row."""
    text = ARCHITECTURE.read_text().split("## The Python layers", 1)[1]
    rows = [r for r in text.split("\n## ", 1)[0].splitlines() if r.startswith("| ")]
    layers = {}
    for level, row in enumerate(rows[1:]):  # the header row names no module
        cell = row.split("|")[2]
        for name in re.findall(r"`([a-z_][a-z_/<>]*)`", cell):  # not `/`
            layers[name.replace("/", ".").rstrip(".")] = level
    return layers


def _layer_of(module: str, layers: dict[str, int]) -> int | None:
    """Return MODULE's documented layer: its own row, else its package's."""
    name = module.removeprefix("pcplab.")
    while name:
        if name in layers:
            return layers[name]
        if f"{name.rpartition('.')[0]}.<name>" in layers:
            return layers[f"{name.rpartition('.')[0]}.<name>"]
        name = name.rpartition(".")[0]
    return None


def test_every_module_imports_only_its_layer_or_below():
    """docs/architecture.md's layer table places every module; none reaches up."""
    layers, graph = _documented_layers(), _graph()
    graph.pop("pcplab", None)  # the package's __init__: its version only
    unplaced = sorted(m for m in graph if _layer_of(m, layers) is None)
    assert unplaced == [], "add these to docs/architecture.md's layer table"
    upward = sorted(
        f"{m} -> {d}"
        for m, deps in graph.items()
        for d in deps
        if d != "pcplab" and _layer_of(d, layers) > _layer_of(m, layers)
    )
    assert upward == []
