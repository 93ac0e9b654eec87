"""One workload contract: every engine lists the same workloads, found, not listed."""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import needs
from pcplab import engine, machines
from pcplab.errors import BadInput

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD_DIRS = ROOT / "src" / "workloads"
MODEL_ENGINES = ("native", "sim")
ALL_ENGINES = (*MODEL_ENGINES, "host")
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
in_source_tree = needs(
    None if WORKLOAD_DIRS.is_dir() else "needs the source tree (../src)"
)


def _listing(engine_name: str) -> list[dict]:
    """Run `pcplab-ENGINE workloads`; it exits 0 only if its halves match."""
    proc = subprocess.run(
        [engine.engine_binary(engine_name), "workloads"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


def test_every_engine_lists_the_same_workloads():
    """The model engines and the host engine link the same descriptors.

    Each also checks that it has a half for exactly the workloads whose
    descriptor names it (or exits 1), so equal lists mean the model and
    host registries agree.
    """
    lists = {name: _listing(name) for name in ALL_ENGINES}
    assert lists["native"] == lists["sim"] == lists["host"]
    names = [w["name"] for w in lists["host"]]
    assert names == sorted(names) and len(set(names)) == len(names)
    for workload in lists["host"]:
        assert set(workload) == {
            "name",
            "description",
            "default_size_mib",
            "default_tasks",
            "placement",
            "ops",
            "engines",
        }
        assert workload["placement"] in ("pinned", "spread")
        assert workload["ops"] in ("pages", "bogo_ops", "lock_acquisitions")
        assert workload["default_size_mib"] >= 1 and workload["description"]
        # a model half runs on both model engines; the host may lack one
        assert set(MODEL_ENGINES) <= set(workload["engines"]) <= set(ALL_ENGINES)
    # the list the build wrote beside the engines, which --workload chooses from
    assert engine.list_workloads() == tuple(lists["host"])


@in_source_tree
def test_the_registry_is_the_workload_directories():
    """Adding a workload is adding src/workloads/<name>/, nothing else.

    The engines list exactly the directories holding a workload.c, and
    run a workload on the model (the host) exactly when its directory has
    a model.c (a host.c).
    """
    found = {d.name: d for d in WORKLOAD_DIRS.iterdir() if d.is_dir()}
    listed = {w["name"]: set(w["engines"]) for w in engine.list_workloads()}
    assert sorted(found) == sorted(listed)
    for name, directory in found.items():
        assert (directory / "workload.c").is_file(), name
        assert (set(MODEL_ENGINES) <= listed[name]) == (directory / "model.c").is_file()
        assert ("host" in listed[name]) == (directory / "host.c").is_file()


def _python_code_strings(path: Path) -> list[str]:
    """Return PATH's string constants and displays, docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, DOCUMENTED)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                found.append(node.value)
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            found.append(" ".join(ast.unparse(e) for e in node.elts))
    return found


def _c_code_lines(path: Path) -> list[str]:
    """Return PATH's lines with C (or CMake) comments taken out."""
    text = path.read_text()
    if path.name == "CMakeLists.txt":
        return [line.split("#", 1)[0] for line in text.splitlines()]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return [line.split("//", 1)[0] for line in text.splitlines()]


@in_source_tree
def test_nothing_keeps_a_list_of_workloads():
    """Nothing but the registry lists the workloads (comments may name them).

    No code of the build or the C engines outside src/workloads/<name>/
    names a workload, and no string or list of the Python package names
    two (it may single one out, as reproduce does mmap_fill).
    """
    names = engine.workload_names()
    # names, also inside identifiers such as page_fault1_workload
    word = re.compile(rf"(?<![a-z0-9])({'|'.join(names)})(?![a-z0-9])", re.I)
    workload_dirs = {WORKLOAD_DIRS / name for name in names}
    offenders = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in [ROOT / "CMakeLists.txt", *(ROOT / "src").rglob("*.[ch]")]
        if path.parent not in workload_dirs
        for line in _c_code_lines(path)
        if word.search(line)
    ]
    offenders += [
        f"{path.relative_to(ROOT)}: {text.strip()}"
        for path in (ROOT / "python").rglob("*.py")
        for text in _python_code_strings(path)
        if len(set(word.findall(text))) >= 2
        and "Examples:" not in text  # a command's example transcript
    ]
    assert offenders == []


def _spec(engine_name: str, workload: str) -> dict:
    """Return a minimal spec of WORKLOAD for ENGINE_NAME."""
    spec = {"engine": engine_name, "workload": workload, "tasks": 1}
    if engine_name == "sim":
        spec["machine"] = machines.load_profile("small-36cpu")
    return spec


@pytest.mark.parametrize("engine_name", ALL_ENGINES)
def test_a_spec_without_tasks_runs_as_the_workload_says(engine_name, tmp_path):
    """No tasks or placement: the workload's own, capped at the CPUs.

    A thread's reproducer runs as the thread ran it; a given value wins.
    """
    board = tmp_path / "board.toml"
    board.write_text(
        "[topology]\nsockets = 1\nnuma_nodes = 1\ncores_per_socket = 1\n"
        "smt = 1\nghz = 1.1\nmemory_gb = 1\n"
    )
    small = machines.load_profile(str(board))
    for workload in engine.list_workloads():
        if engine_name not in workload["engines"] or not workload["default_tasks"]:
            continue
        spec = _spec(engine_name, workload["name"])
        del spec["tasks"]
        spec["size_mib"] = 1
        resolved = engine.resolve(spec)
        assert resolved["tasks"] == workload["default_tasks"] > 1
        assert resolved["placement"] == workload["placement"]
        pinned = engine.resolve({**spec, "tasks": 2, "placement": "pinned"})
        assert (pinned["tasks"], pinned["placement"]) == (2, "pinned")
        if engine_name == "sim":
            assert engine.resolve({**spec, "machine": small})["tasks"] == 1
    assert [w["name"] for w in engine.list_workloads() if w["default_tasks"]] == [
        "mmap_fill"
    ]


@pytest.mark.parametrize("engine_name", ALL_ENGINES)
def test_each_engine_runs_its_workloads_and_refuses_the_others(engine_name):
    """An engine takes its workloads and refuses the others in one line.

    It takes the descriptor's default size; the refusal says where the
    workload runs and what this engine runs.
    """
    for workload in engine.list_workloads():
        spec = _spec(engine_name, workload["name"])
        if engine_name in workload["engines"]:
            resolved = engine.resolve(spec)
            assert resolved["workload"] == workload["name"]
            assert resolved["size_mib"] == workload["default_size_mib"]
            continue
        with pytest.raises(BadInput) as refused:
            engine.resolve(spec)
        where = ", ".join(workload["engines"])
        here = "host" if engine_name == "host" else "model"
        assert refused.value.line == (
            f"pcplab: error: workload '{workload['name']}' runs on {where} only; "
            f"{here} workloads: {', '.join(engine.workload_names(engine_name))}"
        )


def test_the_workload_help_comes_from_the_engines(pcplab):
    """The --workload help names the workloads the engines list.

    Those that run on only some of the command's engines say which; the
    host commands name only the host's.
    """
    every = engine.workload_names()
    host = engine.workload_names("host")
    only_some = {
        w["name"]: f"{w['name']} ({', '.join(w['engines'])} only)"
        for w in engine.list_workloads()
        if "host" not in w["engines"]
    }
    for command, names in (
        (("run",), every),
        (("sweep",), every),
        (("compare",), every),
        (("host", "run"), host),
    ):
        proc = pcplab(*command, "--help")
        assert proc.returncode == 0, proc.stderr
        text = " ".join(proc.stdout.split())
        help_line = text[text.index("--workload W") :].split(" --", 1)[0]
        assert [n for n in every if re.search(rf"\b{n}\b", help_line)] == names
        for name in set(names) & set(only_some):
            assert only_some[name] in help_line
        own = [w for w in engine.list_workloads() if w["default_tasks"]]
        for w in own:  # the tasks a thread's reproducer brings
            unpinned = " unpinned" if w["placement"] == "spread" else ""
            assert f"{w['name']} runs {w['default_tasks']}{unpinned} tasks" in text
