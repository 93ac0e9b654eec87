"""The Python layers: no library module reaches up into the command line."""

from __future__ import annotations

import ast
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
