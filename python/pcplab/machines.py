"""Machine profiles for the sim engine: find, load and list the TOML files.

A profile describes a machine (topology, optionally cost overrides and
constants of its own); the global constants in machines/constants.toml fill
in the rest. The C engine derives every cost from them (docs/machines.md).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pcplab.errors import BadInput

BUILTIN = Path(__file__).resolve().parent / "machines"
CONSTANTS = BUILTIN / "constants.toml"
PROFILE_KEYS = {
    "name",
    "description",
    "source",
    "used_by",
    "topology",
    "constants",
    "costs",
    "lock",
}


def user_dir() -> Path:
    """Return where `pcplab calibrate` writes profiles ($PCPLAB_MACHINES)."""
    default = Path.home() / ".local" / "share" / "pcplab" / "machines"
    return Path(os.environ.get("PCPLAB_MACHINES", default))


def profile_paths() -> dict[str, Path]:
    """Map every known profile name to its file; the user's shadow built-ins."""
    paths = {}
    for directory in (BUILTIN, user_dir()):
        if directory.is_dir():
            for path in sorted(directory.glob("*.toml")):
                if path != CONSTANTS:
                    paths[path.stem] = path
    return paths


def _read_toml(path: Path) -> dict[str, Any]:
    """Parse one TOML file, turning its errors into one-line bad input."""
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"cannot read machine profile {path}: {exc}") from exc


def constants() -> dict[str, Any]:
    """Return the global cost constants."""
    return _read_toml(CONSTANTS)


def load_profile(name: str) -> dict[str, Any]:
    """Return the machine `name` (or a .toml path) ready for the engine spec."""
    known = profile_paths()
    if name.endswith(".toml") or os.sep in name:
        path = Path(name)
    elif name in known:
        path = known[name]
    else:
        raise BadInput(f"unknown machine '{name}'; known: {', '.join(sorted(known))}")
    profile = _read_toml(path)
    unknown = sorted(set(profile) - PROFILE_KEYS)
    if unknown:
        raise BadInput(
            f"machine profile {path} has unknown keys {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(PROFILE_KEYS))}"
        )
    spec: dict[str, Any] = {
        "name": profile.get("name", path.stem),
        "topology": profile.get("topology", {}),
        "constants": {**constants(), **profile.get("constants", {})},
    }
    for key in ("costs", "lock"):
        if key in profile:
            spec[key] = profile[key]
    return spec


def describe() -> list[dict[str, Any]]:
    """Return one summary row per known profile, sorted by name."""
    rows = []
    for name, path in sorted(profile_paths().items()):
        profile = _read_toml(path)
        topo = profile.get("topology", {})
        cpus = (
            topo.get("sockets", 0)
            * topo.get("cores_per_socket", 0)
            * topo.get("smt", 0)
        )
        rows.append(
            {
                "name": name,
                "cpus": cpus,
                "sockets": topo.get("sockets"),
                "numa_nodes": topo.get("numa_nodes"),
                "ghz": topo.get("ghz"),
                "memory_gb": topo.get("memory_gb"),
                "description": profile.get("description", ""),
                "path": str(path),
            }
        )
    return rows
