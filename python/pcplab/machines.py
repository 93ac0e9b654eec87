"""Machine profiles for the sim engine: find, load and list the TOML files.

A profile describes a machine: its topology, its CPU model, and optionally
hardware facts of its own or measured costs. The microarchitecture table
(machines/uarch.toml) fills the facts a profile leaves out; the global
constants (machines/constants.toml) are the same for every machine. The C
engine derives every cost from facts and constants (docs/machines.md).
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pcplab import engine
from pcplab.errors import BadInput
from pcplab.guards import warn

BUILTIN = Path(__file__).resolve().parent / "machines"
CONSTANTS = BUILTIN / "constants.toml"
UARCH = BUILTIN / "uarch.toml"
CROSSVAL = BUILTIN / "crossval.toml"
DATA_FILES = {CONSTANTS, UARCH, CROSSVAL}
PROFILE_KEYS = {
    "name",
    "description",
    "source",
    "kernel_timing",
    "used_by",
    "cpu_model",
    "topology",
    "hardware",
    "costs",
    "lock",
}
# A profile's name: what `pcplab run --machine NAME` and file names take.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# The facts of [hardware] (docs/machines.md); the engine checks their ranges.
HARDWARE_NUMBERS = (
    "llc_mb",
    "llc_ns",
    "dram_ns",
    "remote_dram_ns",
    "smt_ns",
    "socket_ns",
    "remote_ns",
    "mem_channels",
    "mem_mts",
    "turbo_ghz",
    "all_core_ghz",
    "mem_gbs",
    "ipc",
)
HARDWARE_FLAGS = ("meltdown", "erms", "vm_guest")
# [topology]: the counts are integers; the clock and the memory may be fractions.
TOPOLOGY_INTEGERS = ("sockets", "numa_nodes", "cores_per_socket", "smt")
TOPOLOGY_NUMBERS = ("ghz", "memory_gb")
TOPOLOGY_KEYS = (*TOPOLOGY_INTEGERS, *TOPOLOGY_NUMBERS)
# [costs]: a measured cost in ns replaces the derived one; the engine checks
# their ranges (cost_keys of src/arch/sim/machine.c).
COST_NAMES = (
    "fault_trap_ns",
    "fault_trap_return_ns",
    "fault_base_ns",
    "clear_page_ns",
    "copy_page_ns",
    "pcp_alloc_ns",
    "pcp_free_ns",
    "buddy_alloc_page_ns",
    "buddy_free_page_ns",
    "buddy_free_unmerged_ns",
    "lru_add_page_ns",
    "lru_del_page_ns",
    "unmap_page_ns",
    "mmap_ns",
    "list_add_check_ns",
    "list_del_check_ns",
    "perf_sample_ns",  # an instrument's, not the kernel's: charged only under perf
)
LOCKS = ("queued", "ticket")
# The facts every microarchitecture of uarch.toml gives (mem_gbs is measured);
# an arm64 entry leaves out what no public source gave (the profile gives it).
TABLE_FACTS = (*(k for k in HARDWARE_NUMBERS if k != "mem_gbs"), "meltdown", "erms")
# What a profile writes for each fact the table may lack (the refusal says it).
FACT_MEANING = {
    "llc_mb": "MiB of last-level cache per socket",
    "llc_ns": "LLC hit latency, ns",
    "dram_ns": "idle local DRAM latency, ns",
    "remote_dram_ns": "idle DRAM latency of another socket, ns",
    "smt_ns": "cache line between SMT siblings, ns",
    "socket_ns": "cache line between two cores of a socket, ns",
    "remote_ns": "cache line between two sockets, ns",
    "mem_channels": "DRAM channels per socket",
    "mem_mts": "their rate, MT/s",
    "turbo_ghz": "clock with one core busy",
    "all_core_ghz": "clock with every core busy",
    "ipc": "instructions per clock relative to a Skylake core",
    "meltdown": "true if Linux runs KPTI for Meltdown",
    "erms": "true if clear_page() writes without reading (ERMS, DC ZVA)",
}
# Facts a one-socket, one-node machine never reads: left out, the local ones.
REMOTE_FACTS = {"remote_ns": "socket_ns", "remote_dram_ns": "dram_ns"}
# Facts of a CPU model ([cpu."..."] in uarch.toml) that a profile may also give:
# the part's cache, memory and clocks, and its platform's DRAM latency (an
# E7's memory buffers add to the E5's, on the same die).
PART_FACTS = (
    "llc_mb",
    "mem_channels",
    "mem_mts",
    "turbo_ghz",
    "all_core_ghz",
    "dram_ns",
    "remote_dram_ns",
)


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
                if path not in DATA_FILES:
                    paths[path.stem] = path
    return paths


def read_toml(
    path: Path,
    what: str = "machine profile",
    hint: str = "give a UTF-8 TOML file (docs/machines.md)",
) -> dict[str, Any]:
    """Parse one TOML file, turning its errors into one-line bad input."""
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        if isinstance(exc, OSError) and exc.strerror:
            reason = exc.strerror
        else:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInput(f"cannot read {what} {path}: {reason}; {hint}") from exc


def constants() -> dict[str, Any]:
    """Return the global cost constants (constants.toml, fitted by `pcplab fit`)."""
    return {k: v for k, v in read_toml(CONSTANTS).items() if not isinstance(v, dict)}


def uarch_table() -> dict[str, Any]:
    """Return the microarchitectures and CPU models of uarch.toml."""
    return read_toml(UARCH)


def find_uarch(cpu_model: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Return (uarch name, its facts, the part's facts) for a CPU model string."""
    table = uarch_table()
    parts = table.get("cpu", {})
    uarchs = {k: v for k, v in table.items() if k != "cpu"}
    if cpu_model in parts:
        part = parts[cpu_model]
        return part["uarch"], uarchs[part["uarch"]], part
    found = [
        name
        for name, u in uarchs.items()
        if any(re.search(p, cpu_model, re.IGNORECASE) for p in u.get("models", []))
    ]
    if len(found) != 1:
        what = "matches no" if not found else f"matches {len(found)}"
        raise BadInput(
            f"cpu_model '{cpu_model}' {what} microarchitecture of {UARCH.name}; "
            f"give [hardware] uarch = one of {', '.join(sorted(uarchs))}"
        )
    return found[0], uarchs[found[0]], {}


def _uarch_named(name: str) -> dict[str, Any]:
    """Return the facts of the microarchitecture NAME."""
    uarchs = {k: v for k, v in uarch_table().items() if k != "cpu"}
    if name not in uarchs:
        raise BadInput(
            f"[hardware] uarch '{name}' is unknown; known: {', '.join(sorted(uarchs))}"
        )
    return uarchs[name]


def _is_number(value: Any) -> bool:
    """Say whether VALUE is a TOML integer or float (a bool is neither)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def _shown(value: Any) -> str:
    """Return VALUE as TOML-ish text short enough for a one-line message."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value)
    else:
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: Any) -> str:
    """Name the TOML type of VALUE for a message."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float" if math.isfinite(value) else "not finite"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "a table"


def _check_topology(path: Path, topology: dict[str, Any]) -> None:
    """Refuse unknown, missing and mistyped [topology] keys."""
    for key, value in topology.items():
        if key not in TOPOLOGY_KEYS:
            raise BadInput(
                f"machine profile {path}: unknown key '{key}' in [topology]; "
                f"allowed: {', '.join(TOPOLOGY_KEYS)}"
            )
        integer = key in TOPOLOGY_INTEGERS
        if not _is_number(value) or (integer and not isinstance(value, int)):
            want = "an integer" if integer else "a number"
            raise BadInput(
                f"machine profile {path}: [topology] {key} = {_shown(value)} is "
                f"{_kind(value)}; {key} must be {want}"
            )
    missing = [k for k in TOPOLOGY_KEYS if k not in topology]
    if missing:
        raise BadInput(
            f"machine profile {path}: [topology] lacks {', '.join(missing)}; "
            f"give every one of {', '.join(TOPOLOGY_KEYS)}"
        )


def _check_costs(path: Path, costs: dict[str, Any]) -> None:
    """Refuse unknown cost names and costs that are no number (ranges: the engine)."""
    for key, value in costs.items():
        if key not in COST_NAMES:
            raise BadInput(
                f"machine profile {path}: unknown cost '{key}' in [costs]; "
                f"allowed: {', '.join(COST_NAMES)}"
            )
        if not _is_number(value):
            raise BadInput(
                f"machine profile {path}: [costs] {key} = {_shown(value)} is not a "
                "cost; allowed a number of ns"
            )


def _check_types(path: Path, profile: dict[str, Any]) -> None:
    """Refuse keys and types the schema does not have (most ranges: the engine)."""
    unknown = sorted(set(profile) - PROFILE_KEYS)
    if unknown:
        raise BadInput(
            f"machine profile {path} has unknown keys {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(PROFILE_KEYS))}"
        )
    for key in ("name", "cpu_model", "description", "source", "kernel_timing", "lock"):
        if key in profile and not isinstance(profile[key], str):
            raise BadInput(
                f"machine profile {path}: {key} = {_shown(profile[key])} is "
                f"{_kind(profile[key])}; '{key}' must be a string"
            )
    if "name" in profile and not NAME.fullmatch(profile["name"]):
        raise BadInput(
            f"machine profile {path}: name '{profile['name']}' is not a profile "
            "name; allowed letters, digits, '.', '_' or '-'"
        )
    if profile.get("lock", LOCKS[0]) not in LOCKS:
        raise BadInput(
            f"machine profile {path}: lock '{profile['lock']}' is unknown; "
            f"allowed: {', '.join(LOCKS)}"
        )
    used_by = profile.get("used_by", [])
    if not isinstance(used_by, list) or not all(isinstance(u, str) for u in used_by):
        raise BadInput(
            f"machine profile {path}: 'used_by' must be a list of strings; "
            'give e.g. used_by = ["aaron2018"]'
        )
    for table in ("topology", "hardware", "costs"):
        if table in profile and not isinstance(profile[table], dict):
            raise BadInput(
                f"machine profile {path}: {table} = {_shown(profile[table])} is "
                f"{_kind(profile[table])}; [{table}] must be a table"
            )
    if "topology" not in profile:
        raise BadInput(
            f"machine profile {path} has no [topology]; give one with "
            f"{', '.join(TOPOLOGY_KEYS)} (docs/machines.md)"
        )
    _check_topology(path, profile["topology"])
    _check_costs(path, profile.get("costs", {}))
    hardware = profile.get("hardware", {})
    allowed = {"uarch", *HARDWARE_NUMBERS, *HARDWARE_FLAGS}
    for key, value in hardware.items():
        if key not in allowed:
            raise BadInput(
                f"machine profile {path}: unknown key '{key}' in [hardware]; "
                f"allowed: {', '.join(sorted(allowed))}"
            )
        want_bool = key in HARDWARE_FLAGS
        ok = (
            isinstance(value, str)
            if key == "uarch"
            else isinstance(value, bool)
            if want_bool
            else _is_number(value)
        )
        if not ok:
            kind = (
                "a string"
                if key == "uarch"
                else "true or false"
                if want_bool
                else "a number"
            )
            raise BadInput(
                f"machine profile {path}: [hardware] {key} = {_shown(value)} is "
                f"{_kind(value)}; {key} must be {kind}"
            )


def _table_entry(profile: dict[str, Any]) -> tuple[str, dict[str, Any], dict]:
    """Return (uarch name, its facts, the part's facts) a profile names."""
    given = profile.get("hardware", {})
    if "uarch" in given:
        return given["uarch"], _uarch_named(given["uarch"]), {}
    if "cpu_model" in profile:
        return find_uarch(profile["cpu_model"])
    return "generic", _uarch_named("generic"), {}


def _refuse_unmodelled(profile: dict[str, Any], name: str, uarch: dict) -> None:
    """Refuse a hybrid part, and SMT on a part whose cores run one thread."""
    what = profile.get("cpu_model") or f"[hardware] uarch {name}"
    if uarch.get("hybrid"):
        raise BadInput(
            f"{what} is a hybrid part ({name}: P-cores and E-cores) and the model "
            "has one core type; profile its P-cores alone: drop cpu_model and "
            "uarch, set [topology] cores_per_socket to the P-core count and "
            "smt = 2, give [hardware] its facts (docs/machines.md, Hybrid parts), "
            "and run the kernel's workload on those cores (a cpuset)"
        )
    smt = profile.get("topology", {}).get("smt")
    if uarch.get("smt") is not None and isinstance(smt, int) and smt > uarch["smt"]:
        raise BadInput(
            f"[topology] smt = {smt}, but {name} cores run {uarch['smt']} thread "
            f"per core (uarch.toml); give smt = {uarch['smt']}"
        )


def _table_facts(profile: dict[str, Any]) -> tuple[str, dict[str, Any], dict]:
    """Return (uarch name, facts of the table for PROFILE, the part's facts).

    When only the uarch is known, the LLC scales with the cores (its size
    per core is what a microarchitecture fixes) and the turbos with the
    base clock.
    """
    name, uarch, part = _table_entry(profile)
    _refuse_unmodelled(profile, name, uarch)
    topo = profile.get("topology", {})
    facts: dict[str, Any] = {k: uarch[k] for k in TABLE_FACTS if k in uarch}
    cores, ghz = topo.get("cores_per_socket"), topo.get("ghz")
    if isinstance(cores, int | float) and "llc_mb" in uarch:
        facts["llc_mb"] = uarch["llc_mb"] * cores / uarch["cores_per_socket"]
    if isinstance(ghz, int | float) and uarch.get("ghz"):
        for clock in ("turbo_ghz", "all_core_ghz"):
            if clock in uarch:
                facts[clock] = uarch[clock] * ghz / uarch["ghz"]
    facts.update({k: part[k] for k in PART_FACTS if k in part})
    return name, facts, part


def _unread(profile: dict[str, Any]) -> dict[str, str]:
    """Map the facts PROFILE's topology never reads to the fact they copy."""
    topo = profile.get("topology", {})
    unread = {}
    if topo.get("sockets") == 1 and topo.get("numa_nodes") == 1:
        unread.update(REMOTE_FACTS)
    if topo.get("smt") == 1:
        unread["smt_ns"] = ""  # no sibling: 0
    return unread


def _missing(profile: dict[str, Any], facts: dict[str, Any]) -> list[str]:
    """Return the facts neither the table nor the profile gives that a run reads."""
    unread = _unread(profile)
    return [k for k in TABLE_FACTS if k not in facts and k not in unread]


def override_warnings(profile: dict[str, Any]) -> list[str]:
    """Return why PROFILE's own facts contradict its part's in uarch.toml."""
    name, table, part = _table_facts(profile)
    if name == "generic":  # estimates of no part: nothing to contradict
        return []
    given = profile.get("hardware", {})
    turbo = table.get("turbo_ghz")
    reasons = []
    for clock in ("turbo_ghz", "all_core_ghz"):
        if turbo and given.get(clock, 0) > turbo * 1.005:
            reasons.append(
                f"[hardware] {clock} = {given[clock]:g} is above the part's "
                f"maximum turbo, {turbo:.4g} GHz in uarch.toml"
            )
    if given.get("meltdown") is True and table.get("meltdown") is False:
        reasons.append(
            f"[hardware] meltdown = true on {name}, which has the hardware fix "
            "(uarch.toml: not affected): every fault pays KPTI's cost"
        )
    cores = profile.get("topology", {}).get("cores_per_socket")
    if part and isinstance(cores, int) and cores > part["cores_per_socket"]:
        reasons.append(
            f"[topology] cores_per_socket = {cores}, more than the "
            f"{part['cores_per_socket']} cores of {profile['cpu_model']}"
        )
    return reasons


def resolve_hardware(profile: dict[str, Any]) -> dict[str, Any]:
    """Return every [hardware] fact: the profile's, its CPU model's, its uarch's.

    A profile with neither cpu_model nor [hardware] uarch gets the table's
    `generic` entry; `arm64` says the uarch is an arm64 core. A fact that
    neither the table nor the profile gives is refused, saying what to write.
    """
    given = profile.get("hardware", {})
    topo = profile.get("topology", {})
    name, table, _ = _table_facts(profile)
    facts = {**table, "vm_guest": False}
    facts["mem_gbs"] = 0  # not measured: from channels x rate (machine.c)
    ghz = topo.get("ghz")
    if isinstance(ghz, int | float) and "all_core_ghz" in facts:
        if "all_core_ghz" not in given:
            # a base clock above the part's all-core turbo: it never runs slower
            facts["all_core_ghz"] = max(facts["all_core_ghz"], ghz)
    facts.update({k: v for k, v in given.items() if k != "uarch"})
    missing = _missing(profile, facts)
    if missing:
        raise BadInput(
            f"uarch.toml has no published {', '.join(missing)} for {name}; give "
            "them in [hardware]: "
            + "; ".join(f"{k} = {FACT_MEANING[k]}" for k in missing)
            + " (docs/machines.md)"
        )
    for fact, copied in _unread(profile).items():
        facts.setdefault(fact, facts[copied] if copied else 0.0)
    facts["arm64"] = _uarch_named(name).get("arch") == "arm64"
    return {"uarch": name, **facts}


def _read_profile(name: str) -> tuple[Path, dict[str, Any]]:
    """Return the path and checked TOML of machine `name` (or a .toml path)."""
    known = profile_paths()
    if name.endswith(".toml") or os.sep in name:
        path = Path(name)
    elif name in known:
        path = known[name]
    else:
        raise BadInput(f"unknown machine '{name}'; known: {', '.join(sorted(known))}")
    profile = read_toml(path)
    _check_types(path, profile)
    return path, profile


def _cpus(topology: dict[str, Any]) -> int:
    """Return the CPUs of a profile's topology: sockets x cores x SMT."""
    return (
        topology.get("sockets", 0)
        * topology.get("cores_per_socket", 0)
        * topology.get("smt", 0)
    )


def _resolved(path: Path, profile: dict[str, Any]) -> dict[str, Any]:
    """Return resolve_hardware(PROFILE), its refusal naming the file PATH."""
    try:
        return resolve_hardware(profile)
    except BadInput as exc:
        raise BadInput(f"machine profile {path}: {exc}") from exc


def fit_facts(name: str) -> dict[str, Any]:
    """Return the facts a fit's reach is judged by: name, CPUs, uarch."""
    path, profile = _read_profile(name)
    return {
        "name": profile.get("name", path.stem),
        "cpus": _cpus(profile["topology"]),
        "uarch": _resolved(path, profile)["uarch"],
    }


def label(name: str) -> str:
    """Return how tables name machine NAME (or a .toml path): its profile's name.

    That is its `name`, else its file's stem; a user's file whose name is
    another known profile's keeps its path, so no two machines share a label.
    """
    path, profile = _read_profile(name)
    own = profile.get("name", path.stem)
    known = profile_paths().get(own)
    return own if known is None or known.resolve() == path.resolve() else str(path)


# Warnings already printed in this process: each says its piece once.
_WARNED: set[tuple[str, str]] = set()


def _warn_overrides(path: Path, profile: dict[str, Any]) -> None:
    """Warn once on stderr where PROFILE's own facts contradict uarch.toml."""
    reasons = [r for r in override_warnings(profile) if (str(path), r) not in _WARNED]
    _WARNED.update((str(path), r) for r in reasons)
    warn(f"machine profile {path} contradicts uarch.toml (it still runs)", reasons)


def load_profile(name: str) -> dict[str, Any]:
    """Return the machine `name` (or a .toml path) ready for the engine spec."""
    path, profile = _read_profile(name)
    return _engine_profile(path, profile)


def profile_of(profile: dict[str, Any], where: str) -> dict[str, Any]:
    """Return a profile held in memory (as a TOML file would read) for the engine.

    WHERE names it in refusals and warnings, as a file's path would.
    """
    _check_types(Path(where), profile)
    return _engine_profile(Path(where), profile)


def _engine_profile(path: Path, profile: dict[str, Any]) -> dict[str, Any]:
    """Return the checked PROFILE read from PATH as the engine spec's machine."""
    hardware = _resolved(path, profile)
    _warn_overrides(path, profile)
    spec: dict[str, Any] = {
        "name": profile.get("name", path.stem),
        "topology": profile.get("topology", {}),
        "hardware": {k: v for k, v in hardware.items() if k != "uarch"},
        "constants": constants(),
    }
    for key in ("costs", "lock"):
        if key in profile:
            spec[key] = profile[key]
    return spec


def check_profile(name: str) -> dict[str, Any]:
    """Return profile NAME once the sim engine has checked it whole, as a run would.

    load_profile checks keys and types; the ranges, the SMT width and how
    the topology splits into nodes are the engine's, which would otherwise
    refuse the profile only when its first run starts.
    """
    profile = load_profile(name)
    engine.resolve({"engine": "sim", "workload": "page_fault1", "machine": profile})
    return profile


def describe() -> list[dict[str, Any]]:
    """Return one summary row per known profile, sorted by name."""
    rows = []
    for name, path in sorted(profile_paths().items()):
        profile = read_toml(path)
        _check_types(path, profile)  # a user's profile may be broken
        topo = profile["topology"]
        rows.append(
            {
                "name": name,
                "cpus": _cpus(topo),
                "cpu_model": profile.get("cpu_model", ""),
                "sockets": topo.get("sockets"),
                "numa_nodes": topo.get("numa_nodes"),
                "ghz": topo.get("ghz"),
                "memory_gb": topo.get("memory_gb"),
                "description": profile.get("description", ""),
                "path": str(path),
            }
        )
    return rows
