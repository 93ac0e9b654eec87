"""Machine profiles from public facts: the table, resolution, checks, physics."""

from __future__ import annotations

import csv
import functools
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pcplab import data, engine, experiments, machines
from pcplab.errors import BadInput

UARCH_KEYS = {
    "vendor",
    "year",
    "models",
    "interconnect",
    *machines.TABLE_FACTS,
    "cores_per_socket",
    "ghz",
}
TOPOLOGY = """
[topology]
sockets = 2
numa_nodes = 2
cores_per_socket = 8
smt = 2
ghz = 2.2
memory_gb = 64
"""


def _profile(tmp_path, text: str, name: str = "m") -> str:
    """Write a profile and return its path."""
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return str(path)


def _resolve(profile: dict, **spec) -> dict:
    """Resolve a page_fault1 spec on PROFILE; return the engine's machine detail."""
    request = {"engine": "sim", "workload": "page_fault1", "machine": profile, **spec}
    return engine.resolve(request)["machine_detail"]


# The publishers and documents uarch.toml cites by name (its short names,
# such as NV, it declares in its header). A figure from a new one adds it here.
SOURCES = (
    "AnandTech",
    "Chips and Cheese",
    "GamersNexus",
    "Intel Architecture Day",
    "Intel IDF",
    "Intel SDM",
    "Intel optimization manual",
    "AMD Computex",
    "Microway",
    "PC Gamer",
    "PCPer",
    "ServeTheHome",
    "The Tech Report",
    "Tom's Hardware",
    "WikiChip",
    "Wikipedia",
    "/proc/cpuinfo",
    "Arm speculative-processor table",
    "Linux arch/arm64",
    "Intel 'Affected Processors'",
    "NVIDIA Technical Blog",
)
# A figure: a number or a truth of the hardware (not the year, nor a string).
FIGURE = re.compile(r"^(?!year\b)(\w+) = (true|false|[0-9][0-9.]*)\s*(?:#\s*(.*))?$")


@functools.cache
def _uarch_of(part: str) -> str:
    """Return the microarchitecture of a CPU part (each part is cited many times)."""
    return machines.find_uarch(part)[0]


def _not_a_source(key, value, note, uarch, short_names) -> str | None:
    """Say why NOTE is not the source of KEY = VALUE in UARCH's entry (None: it is)."""
    if note is None:
        return "no source"
    if note.startswith("estimate:"):
        return None if len(note.split()) >= 2 else "an estimate of nothing said"
    cited = re.match(r"([A-Z][A-Z0-9]+)(:| )", note)
    if cited and cited.group(1) in short_names:
        return None
    if cited and cited.group(2) == ":":
        return f"{cited.group(1)} is no short name of the header"
    part = re.match(r"(?:Intel ARK|AMD product page) (.+?)(?: \(|$)", note)
    if part:  # a vendor's page of one part: a part of this microarchitecture
        try:
            found = _uarch_of(part.group(1))
        except BadInput:
            return f"{part.group(1)} is no part the table knows"
        return None if found == uarch else f"{part.group(1)} is a {found}"
    if key == "meltdown":  # the vendors' lists of affected parts, stated
        affected = re.search(r"(?<!not )affected", note) is not None
        return None if affected == (value == "true") else "says the opposite"
    if key == "ipc" and float(value) == 1.0:  # the unit: a Skylake core's
        return None if "Skylake" in note or "reference core" in note else "no unit"
    return None if any(s in note for s in SOURCES) else "names no source"


def test_every_uarch_entry_has_every_fact_with_its_source():
    """Each figure of uarch.toml stands with a source comment (or an estimate)."""
    table = machines.uarch_table()
    uarchs = {k: v for k, v in table.items() if k != "cpu"}
    assert {"skylake-sp", "broadwell-ep", "sapphire-rapids", "zen5"} <= set(uarchs)
    for name, entry in uarchs.items():
        if entry.get("hybrid"):  # refused: its models and what it is
            assert {"vendor", "models", "meltdown"} <= set(entry), name
            continue
        # an arm64 entry leaves out what no source gave; an x86 one gives all
        want = UARCH_KEYS - (set(machines.FACT_MEANING) if "arch" in entry else set())
        assert want <= set(entry), f"{name} lacks {want - set(entry)}"
    lines = machines.UARCH.read_text().splitlines()
    short_names = {
        m.group(1)
        for m in (re.match(r"#\s+([A-Z][A-Z0-9]+)\s+= ", x) for x in lines)
        if m
    }
    assert {"NV", "ATS", "IPG"} <= short_names
    uarch, figures, previous = None, 0, ""
    for line in lines:
        section = re.match(r'\[(?:cpu\."(.+)"|([\w-]+))\]$', line)
        if section:  # a CPU model's figures are those of its microarchitecture
            model, uarch = section.groups()
            uarch = uarch or table["cpu"][model]["uarch"]
        figure = FIGURE.match(line)
        if figure and uarch:
            key, value, note = figure.groups()
            if note is None and previous.startswith("#"):  # on the line before
                note = previous.lstrip("# ")
            why = _not_a_source(key, value, note, uarch, short_names)
            assert why is None, f"{why}: {line}"
            figures += 1
        previous = line
    assert figures > 10 * len(uarchs)


def test_every_cpu_model_resolves_to_its_own_uarch_only():
    """A CPU model string matches the patterns of its own microarchitecture."""
    table = machines.uarch_table()
    for model, part in table["cpu"].items():
        name, _, _ = machines.find_uarch(model)
        assert name == part["uarch"]
        stripped = model + " "  # the same string, not the table's key
        assert machines.find_uarch(stripped)[0] == part["uarch"]


def test_a_topology_and_a_cpu_model_are_enough(tmp_path):
    """The CPU model fills every fact; the run goes."""
    path = _profile(tmp_path, 'cpu_model = "Intel Xeon E5-2699 v4"\n' + TOPOLOGY)
    profile = machines.load_profile(path)
    part = machines.uarch_table()["cpu"]["Intel Xeon E5-2699 v4"]
    assert profile["hardware"]["llc_mb"] == part["llc_mb"]
    assert profile["hardware"]["meltdown"] is True
    result = engine.run(
        {
            "engine": "sim",
            "machine": profile,
            "workload": "page_fault1",
            "tasks": 4,
            "duration_s": 0.05,
            "warmup_s": 0.02,
        }
    )
    assert result["throughput"]["ops_per_s"] > 0
    assert result["machine"]["hardware"]["socket_ns"] == pytest.approx(
        machines.uarch_table()["broadwell-ep"]["socket_ns"]
    )


def test_a_topology_alone_gets_the_generic_facts(tmp_path):
    """No CPU model: the generic entry, its LLC scaled to the cores."""
    profile = machines.load_profile(_profile(tmp_path, TOPOLOGY))
    generic = machines.uarch_table()["generic"]
    assert profile["hardware"]["dram_ns"] == generic["dram_ns"]
    assert profile["hardware"]["llc_mb"] == pytest.approx(
        generic["llc_mb"] * 8 / generic["cores_per_socket"]
    )


def test_a_profile_fact_overrides_the_table(tmp_path):
    """[hardware] keys win over the CPU model's."""
    text = (
        'cpu_model = "Intel Xeon Platinum 8160"\n'
        + TOPOLOGY
        + ("\n[hardware]\ndram_ns = 123.0\n")
    )
    profile = machines.load_profile(_profile(tmp_path, text))
    assert profile["hardware"]["dram_ns"] == 123.0
    assert _resolve(profile)["hardware"]["dram_ns"] == 123.0


BAD_FACTS = [
    ("llc_mb", "0.0", "llc_mb"),
    ("llc_ns", "500.0", "llc_ns"),
    ("dram_ns", "5.0", "dram_ns"),
    ("remote_dram_ns", "1e6", "remote_dram_ns"),
    ("smt_ns", "-1.0", "smt_ns"),
    ("socket_ns", "5000.0", "socket_ns"),
    ("remote_ns", "-3.0", "remote_ns"),
    ("mem_channels", "0", "mem_channels"),
    ("mem_mts", "50", "mem_mts"),
    ("turbo_ghz", "99.0", "turbo_ghz"),
    ("all_core_ghz", "0.5", "all_core_ghz"),
    ("all_core_ghz", "11.0", "all_core_ghz"),
    ("mem_gbs", "-1.0", "mem_gbs"),
    ("ipc", "0.1", "ipc"),
    ("ipc", "9.0", "ipc"),
    ("dram_ns", '"fast"', "dram_ns"),
    ("meltdown", "1", "meltdown"),
    ("vm_guest", '"yes"', "vm_guest"),
    ("uarch", '"pentium"', "pentium"),
    ("cache_mb", "3.0", "cache_mb"),
]


@pytest.mark.parametrize(("key", "value", "named"), BAD_FACTS)
def test_a_bad_fact_is_one_line_naming_it(tmp_path, key, value, named):
    """Every [hardware] key refuses a bad value with its name, exit 2."""
    text = TOPOLOGY + f"\n[hardware]\n{key} = {value}\n"
    path = _profile(tmp_path, text)
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pcplab.cli",
            "run",
            "--engine",
            "sim",
            "--machine",
            path,
            "--workload",
            "page_fault1",
            "--duration",
            "0.01",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], lines
    if key in machines.HARDWARE_NUMBERS and value[0].isdigit():
        assert "allowed" in lines[0]
    assert not out.exists()


def test_unknown_cpu_model_and_own_constants_are_refused(tmp_path):
    """A CPU model no table entry matches, and a per-machine constant."""
    with pytest.raises(BadInput, match="matches no microarchitecture"):
        z80 = _profile(tmp_path, 'cpu_model = "Zilog Z80"\n' + TOPOLOGY)
        machines.load_profile(z80)
    text = TOPOLOGY + "\n[constants]\nsmt_factor = 1.2\n"
    with pytest.raises(BadInput, match="unknown keys constants"):
        machines.load_profile(_profile(tmp_path, text, "c"))


def test_the_clock_turbos_with_few_busy_cores():
    """One busy core runs at the maximum turbo, a full socket at all-core turbo."""
    profile = machines.load_profile("skylake-ex")
    one = _resolve(profile, tasks=1)["topology"]["clock_ghz"]
    full = _resolve(profile)["topology"]["clock_ghz"]
    assert one == pytest.approx(profile["hardware"]["turbo_ghz"], rel=0.02)
    assert full == pytest.approx(profile["hardware"]["all_core_ghz"])
    assert profile["topology"]["ghz"] < full < one


def test_a_wider_core_does_the_kernel_work_in_fewer_cycles(tmp_path):
    """The IPC divides the work outside the locks and the buddy's, not the LRU's."""
    constants = machines.constants()
    weight = constants["ipc_weight"]
    costs = {}
    for ipc in (1.0, 2.0):
        text = TOPOLOGY + f'\n[hardware]\nuarch = "skylake-sp"\nipc = {ipc}\n'
        costs[ipc] = _resolve(machines.load_profile(_profile(tmp_path, text)))["costs"]
    gain = 2.0**weight
    for kind in ("pcp_alloc_ns", "pcp_free_ns", "unmap_page_ns", "mmap_ns"):
        assert costs[2.0][kind] == pytest.approx(costs[1.0][kind] / gain, rel=1e-3)
    # the whole fault, its exception included (the bare trap is a share of
    # the fitted fault, not more), also misses lines, which the IPC leaves
    trap = ("fault_base_ns", "fault_trap_ns", "fault_trap_return_ns")
    whole = {ipc: sum(c[k] for k in trap) for ipc, c in costs.items()}
    assert whole[1.0] / gain < whole[2.0] < whole[1.0]
    # the buddy's cycles have a weight of their own; its cold lines stay
    misses = constants["zone_page_misses"] * costs[1.0]["cold_line_ns"]
    zone_gain = 2.0 ** constants["zone_ipc_weight"]
    assert zone_gain != gain
    for kind in ("buddy_alloc_page_ns", "buddy_free_page_ns"):
        work = costs[1.0][kind] - misses
        assert costs[2.0][kind] - misses == pytest.approx(work / zone_gain, rel=1e-3)
    # clear_page's stores and the LRU's dependent loads run at the clock
    for kind in ("clear_page_ns", "lru_add_page_ns", "lru_del_page_ns"):
        assert costs[2.0][kind] == costs[1.0][kind]


def test_dram_bandwidth_caps_the_clearing_of_pages(tmp_path):
    """Narrow DRAM channels, not the cores, set the pace of page_fault1."""
    text = 'cpu_model = "Intel Xeon E5-2699 v4"\n' + TOPOLOGY
    rates = {}
    for mts in (2400, 200):
        path = _profile(
            tmp_path, text + f"\n[hardware]\nmem_channels = 1\nmem_mts = {mts}\n"
        )
        result = engine.run(
            {
                "engine": "sim",
                "machine": machines.load_profile(path),
                "workload": "page_fault1",
                "tasks": 16,
                "duration_s": 0.2,
                "warmup_s": 0.05,
                "nodes": [0],
            }
        )
        rates[mts] = result["throughput"]["pages_per_s"]
        bandwidth = result["machine"]["costs"]["dram_page_ns"]
        cap = 1e9 / bandwidth  # pages per second one node's channels carry
    assert rates[200] < 0.5 * rates[2400]
    # the 2-socket machine's node 0 has one socket's channels: 1.6 GB/s * 0.7
    assert rates[200] <= cap * 1.05


def test_spread_placement_uses_both_nodes_and_a_cpuset_confines_it():
    """Unpinned mmap_fill tasks spread over nodes; confined, they contend more."""
    profile = machines.load_profile("broadwell-ep")
    base = {
        "engine": "sim",
        "machine": profile,
        "workload": "mmap_fill",
        "tasks": 10,
        "size_mib": 1024,
        "duration_s": 0.5,
        "warmup_s": 0.1,
        "placement": "spread",
    }
    spread = engine.run(base)
    pinned = engine.run({**base, "placement": "pinned"})
    confined = engine.run({**base, "nodes": [0]})
    assert spread["spec"]["placement"] == "spread"
    # pinned fills node 0 first (10 tasks on one node's zone), as the cpuset
    # does; the kernel's average grew 1.5x confined (docs/fidelity.md)
    for one in (pinned, confined):
        assert (
            one["latency_ns"]["rmqueue_bulk"]["avg"]
            > 1.2 * spread["latency_ns"]["rmqueue_bulk"]["avg"]
        )


def test_unknown_placement_is_refused():
    """A placement is pinned or spread."""
    with pytest.raises(BadInput, match="unknown placement 'loose'"):
        engine.resolve(
            {
                "engine": "sim",
                "machine": machines.load_profile("haswell-desktop"),
                "workload": "page_fault1",
                "placement": "loose",
            }
        )


def test_builtin_profiles_name_their_cpu_where_the_reference_does():
    """Each reference machine's profile names the CPU model machines.csv gives it."""
    mapped = set()  # (reference machine, profile), as the experiments map them
    for name in experiments.names():
        table = experiments.load_experiment(name).get("machines")
        mapped |= set(table.items()) if isinstance(table, dict) else set()
    with open(data.reference_dir() / "machines.csv", newline="") as f:
        named = [r for r in csv.DictReader(f) if r["cpu_model"]]
    assert len(named) >= 5
    for row in named:
        # the yafang2024 mail's machine is spelt with a comma in its TOML
        key = re.sub(r"\W", "", row["machine"])
        profiles = {p for m, p in mapped if re.sub(r"\W", "", m) == key}
        assert profiles, row["machine"]
        for profile in profiles:
            text = machines.profile_paths()[profile].read_text()
            assert tomllib.loads(text).get("cpu_model") == row["cpu_model"], profile


def test_calibrate_writes_a_profile_of_this_host_that_runs(pcplab, tmp_path):
    """`pcplab calibrate` measures the facts of the schema; the sim runs them."""
    out = tmp_path / "myhost.toml"
    proc = pcplab("calibrate", "--out", out, "--name", "myhost", timeout=900)
    assert proc.returncode == 0, proc.stderr
    profile = machines.load_profile(str(out))
    hardware, topology = profile["hardware"], profile["topology"]
    for fact in ("llc_ns", "dram_ns", "socket_ns", "mem_gbs"):
        assert hardware[fact] > 0, fact
    assert hardware["llc_ns"] < hardware["dram_ns"]
    # the clock the adds measured: a busy socket never above one busy core
    assert 0 < topology["ghz"] <= hardware["all_core_ghz"] <= hardware["turbo_ghz"]
    spec = {"workload": "page_fault1", "tasks": 2, "duration_s": 0.05}
    result = engine.run({"engine": "sim", "machine": profile, **spec})
    assert result["throughput"]["ops_per_s"] > 0


ALTRA = """
[topology]
sockets = 1
numa_nodes = 1
cores_per_socket = 80
smt = 1
ghz = 3.0
memory_gb = 256
"""


def _pcplab_run(path: str, *extra: str) -> subprocess.CompletedProcess:
    """Run a short page_fault1 on the profile at PATH through the CLI."""
    return subprocess.run(
        [sys.executable, "-m", "pcplab.cli", "run", "--engine", "sim"]
        + ["--machine", path, "--workload", "page_fault1", "--tasks", "2"]
        + ["--duration", "0.02", "--warmup", "0.01", *extra],
        capture_output=True,
        text=True,
        check=False,
    )


def test_arm_servers_are_in_the_table_without_smt_or_meltdown():
    """Altra, Graviton2/3 and Grace resolve to arm64 Neoverse cores, one thread each."""
    parts = {
        "Ampere Altra Q80-30": "neoverse-n1",
        "AWS Graviton2": "neoverse-n1",
        "AWS Graviton3": "neoverse-v1",
        "NVIDIA Grace": "neoverse-v2",
    }
    table = machines.uarch_table()
    for part, uarch in parts.items():
        assert machines.find_uarch(part)[0] == uarch
        entry = table[uarch]
        assert entry["arch"] == "arm64" and entry["smt"] == 1
        assert entry["meltdown"] is False
    # an arm64 part runs one fixed clock
    altra = table["cpu"]["Ampere Altra Q80-30"]
    assert altra["turbo_ghz"] == altra["all_core_ghz"] == 3.0


def test_an_altra_by_its_uarch_gets_its_own_clock_not_a_generic_turbo(tmp_path):
    """`uarch = "neoverse-n1"` at 3.0 GHz runs 3.0 GHz (the generic x86 gave 4.1)."""
    text = ALTRA + '\n[hardware]\nuarch = "neoverse-n1"\nllc_ns = 30.0\nipc = 1.0\n'
    profile = machines.load_profile(_profile(tmp_path, text))
    hardware = profile["hardware"]
    assert hardware["turbo_ghz"] == pytest.approx(3.0)
    assert hardware["all_core_ghz"] == pytest.approx(3.0)
    assert hardware["arm64"] is True and hardware["meltdown"] is False
    # no second socket, no sibling: the facts it never reads are its own
    assert hardware["remote_ns"] == hardware["socket_ns"]
    assert _resolve(profile, tasks=1)["topology"]["clock_ghz"] == pytest.approx(3.0)


def test_an_arm_part_lacking_a_published_fact_is_refused_saying_what_to_write(
    tmp_path,
):
    """No source gave Grace's latencies: the profile must, and is told which."""
    path = _profile(
        tmp_path,
        'cpu_model = "NVIDIA Grace"\n' + TOPOLOGY.replace("smt = 2", "smt = 1"),
    )
    with pytest.raises(BadInput) as refused:
        machines.load_profile(path)
    line = str(refused.value)
    for fact in ("llc_ns", "dram_ns", "socket_ns", "remote_ns", "all_core_ghz", "ipc"):
        assert f"{fact} = " in line, fact
    assert "\n" not in line and path in line
    # SMT on a core that runs one thread is refused too
    smt2 = _profile(tmp_path, 'cpu_model = "AWS Graviton2"\n' + TOPOLOGY, "s")
    with pytest.raises(BadInput, match="run 1 thread per core"):
        machines.load_profile(smt2)


def test_an_arm64_run_names_arm64_functions_pays_no_kpti_and_is_flagged(tmp_path):
    """arm64's kernel names in perf_profile, no KPTI, and the extrapolation line."""
    facts = "\n[hardware]\nllc_ns = 30.0\nipc = 1.0\n"
    arm = _profile(tmp_path, 'cpu_model = "AWS Graviton2"\n' + ALTRA + facts, "g2")
    out = tmp_path / "g2.json"
    proc = _pcplab_run(arm, "--json", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    names = set(result["perf_profile"]["self"])
    assert "clear_page" in names and "queued_spin_lock_slowpath" in names
    assert not {n for n in names if "erms" in n or n.startswith("native_")}
    assert result["machine"]["hardware"]["meltdown"] is False
    assert "neoverse-n1, which no fitted machine has" in proc.stderr
    assert "neoverse-n1" in " ".join(result["outside_fit"])


def test_an_override_that_contradicts_the_part_warns_once_and_runs(tmp_path):
    """A turbo above the part's, meltdown on a fixed part: one stderr line, a run."""
    cases = {
        'cpu_model = "Ampere Altra Q80-30"\n': (
            "turbo_ghz = 4.1",
            "llc_ns = 30.0\nipc = 1.0\n",
        ),
        'cpu_model = "Intel Xeon Platinum 8380"\n': ("meltdown = true", ""),
        'cpu_model = "AMD EPYC 9654"\n': ("meltdown = true", ""),
    }
    for i, (model, (fact, more)) in enumerate(cases.items()):
        topo = ALTRA if "Altra" in model else TOPOLOGY
        text = model + topo + f"\n[hardware]\n{fact}\n{more}"
        proc = _pcplab_run(_profile(tmp_path, text, f"o{i}"))
        assert proc.returncode == 0, proc.stderr
        warned = [x for x in proc.stderr.splitlines() if "contradicts uarch.toml" in x]
        assert len(warned) == 1, proc.stderr
        assert fact.split(" = ")[0] in warned[0]
    # the same facts where the table agrees: no warning
    quiet = _profile(
        tmp_path,
        'cpu_model = "Intel Xeon Platinum 8160"\n'
        + TOPOLOGY
        + "\n[hardware]\nmeltdown = true\nturbo_ghz = 3.7\n",
        "q",
    )
    assert machines.override_warnings(tomllib.loads(Path(quiet).read_text())) == []


def test_a_hybrid_part_is_refused_in_one_line_saying_what_to_write(tmp_path):
    """An i7-12700 (P + E cores) cannot be one core type: refused, with the way out."""
    path = _profile(tmp_path, 'cpu_model = "Intel Core i7-12700"\n' + TOPOLOGY)
    proc = _pcplab_run(path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "hybrid part" in lines[0]
    assert "P-cores alone" in lines[0] and "cores_per_socket" in lines[0]


def test_a_users_profile_is_found_by_name_and_labelled_by_it(tmp_path, monkeypatch):
    """$PCPLAB_MACHINES holds a user's profiles; tables name them, not their path."""
    monkeypatch.setenv("PCPLAB_MACHINES", str(tmp_path))
    path = _profile(
        tmp_path, 'cpu_model = "Intel Xeon E5-2699 v4"\n' + TOPOLOGY, "mybox"
    )
    assert machines.load_profile("mybox")["name"] == "mybox"
    assert machines.label(path) == "mybox"
    named = _profile(tmp_path, 'name = "lab-7"\n' + TOPOLOGY, "other")
    assert machines.label(named) == "lab-7"
    # a copy named like a built-in keeps its path: two machines, two labels
    clash = tmp_path / "sub"
    clash.mkdir()
    copy = _profile(clash, TOPOLOGY, "skylake-ex")
    assert machines.label(copy) == copy
    assert machines.label("skylake-ex") == "skylake-ex"
