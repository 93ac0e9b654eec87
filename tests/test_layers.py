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
        if isinstance(node, ast.ImportFrom) and module.startswith("pcplab"):
            found.add(module)
            if module == "pcplab":
                found |= {f"pcplab.{alias.name}" for alias in node.names}
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
