"""The published figures and experiment specs ship in the package (pcplab.data)."""

from __future__ import annotations

import csv
import shutil
import tomllib
from pathlib import Path

import pytest
import tomli_w

import pcplab
from conftest import require
from pcplab import data, experiments
from pcplab.errors import BadInput
from pcplab.experiments._common import heldout_rows

CHECKOUT = Path(__file__).resolve().parents[1]
SOURCE_REFERENCE = CHECKOUT / "python" / "pcplab" / "reference"
SHARED_REFERENCE = CHECKOUT.parent / "shared" / "reference"


def _unset_data_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove the variables that point pcplab at other data."""
    monkeypatch.delenv("PCPLAB_REFERENCE", raising=False)
    monkeypatch.delenv("PCPLAB_EXPERIMENTS", raising=False)


def _copies() -> list[Path]:
    """Return the package's reference copies: the checkout's and the imported."""
    return list(dict.fromkeys([SOURCE_REFERENCE, data.REFERENCE]))


@pytest.mark.parametrize("copy", _copies(), ids=str)
def test_reference_copy_equals_shared_reference(copy: Path) -> None:
    """The package's CSVs are ../shared/reference's, byte for byte, no more."""
    absent = not SHARED_REFERENCE.is_dir()
    require(
        f"{SHARED_REFERENCE} does not exist: nothing to compare with"
        if absent
        else None
    )
    shared = sorted(p.name for p in SHARED_REFERENCE.glob("*.csv"))
    assert shared
    assert sorted(p.name for p in copy.glob("*.csv")) == shared
    for name in shared:
        assert (copy / name).read_bytes() == (SHARED_REFERENCE / name).read_bytes()


def test_reference_readme_names_every_csv() -> None:
    """README.md beside the CSVs says where each of them comes from."""
    readme = (data.REFERENCE / "README.md").read_text()
    for path in data.REFERENCE.glob("*.csv"):
        assert f"`{path.name}`" in readme, path.name


def test_heldout_readme_names_every_csv_and_no_fit_reads_them() -> None:
    """The held-out CSVs say where they come from; no fitted experiment names one."""
    readme = (data.HELDOUT / "README.md").read_text()
    held = [path.stem for path in data.HELDOUT.glob("*.csv")]
    assert held
    for stem in held:
        assert f"`{stem}.csv`" in readme, stem
    readers = [
        name
        for name in experiments.names()
        if experiments.load_experiment(name).get("heldout") in held
    ]
    assert readers
    assert not set(readers) & set(experiments.fitted())


def test_a_missing_heldout_csv_is_refused() -> None:
    """A held-out name with no CSV gets one line naming the directory."""
    with pytest.raises(BadInput, match=r"held-out figures .* have no nothing\.csv"):
        data.heldout_file("nothing")


def test_the_package_holds_its_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the variables, both directories are inside the imported package."""
    _unset_data_env(monkeypatch)
    assert data.reference_dir() == data.REFERENCE
    assert data.experiments_dir() == data.EXPERIMENTS
    assert data.REFERENCE.parent == Path(pcplab.__file__).resolve().parent
    assert (data.REFERENCE / "machines.csv").is_file()
    for name in experiments.names():
        assert experiments.load_experiment(name)["name"] == name
    for name in experiments.published():  # each with its figures
        exp = experiments.load_experiment(name)
        if "heldout" in exp:  # published, never fitted on
            assert heldout_rows(exp["heldout"])
        elif "record" in exp:  # the mined public record, its fit or held-out split
            assert data.record_rows(exp["record"], exp.get("split"))
        else:
            assert experiments.reference_rows(exp["reference"])


def test_reference_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--reference beats $PCPLAB_REFERENCE, which beats the package's copy."""
    _unset_data_env(monkeypatch)
    env, option = tmp_path / "env", tmp_path / "option"
    shutil.copytree(data.REFERENCE, env)
    shutil.copytree(data.REFERENCE, option)
    monkeypatch.setenv("PCPLAB_REFERENCE", str(env))
    assert data.reference_dir() == env
    with data.reference_from(option) as chosen:
        assert chosen == option
        assert data.reference_dir() == option
    assert data.reference_dir() == env
    with data.reference_from(None) as chosen:
        assert chosen == env
    monkeypatch.delenv("PCPLAB_REFERENCE")
    assert data.reference_dir() == data.REFERENCE


def test_experiments_from_the_variable(monkeypatch, tmp_path: Path) -> None:
    """$PCPLAB_EXPERIMENTS replaces the package's specs; a missing one is refused."""
    _unset_data_env(monkeypatch)
    shutil.copy(data.EXPERIMENTS / "host.toml", tmp_path)
    monkeypatch.setenv("PCPLAB_EXPERIMENTS", str(tmp_path))
    assert data.experiments_dir() == tmp_path
    assert experiments.load_experiment("host")["name"] == "host"
    with pytest.raises(BadInput, match="experiment aaron2018 has no"):
        experiments.load_experiment("aaron2018")
    monkeypatch.setenv("PCPLAB_EXPERIMENTS", str(tmp_path / "nonexistent"))
    with pytest.raises(BadInput, match="is not a directory"):
        data.experiments_dir()


def test_reproduce_outside_the_checkout(pcplab, tmp_path: Path, monkeypatch) -> None:
    """The installed pcplab reproduces aaron2018 from a directory with no ../shared."""
    _unset_data_env(monkeypatch)
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    assert not (work.parent / "shared").exists()
    proc = pcplab("reproduce", "aaron2018", "--quick", "--out", work / "r")
    assert proc.returncode == 0, proc.stderr
    batches = experiments.load_experiment("aaron2018")["quick"]["batch"]
    published = [
        r
        for r in experiments.reference_rows("aaron2018_page_fault1_batch_sweep")
        if int(r["batch"]) in batches
    ]
    with open(work / "r" / "aaron2018.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["machine"], r["batch"]) for r in rows] == [
        (r["machine"], r["batch"]) for r in published
    ]
    assert (work / "r" / "index.md").is_file()
    assert (work / "r" / "aaron2018_throughput.png").is_file()


def test_reproduce_reads_the_given_reference(pcplab, tmp_path: Path, monkeypatch):
    """`--reference DIR` is where the published figures of the report come from."""
    _unset_data_env(monkeypatch)
    reference = tmp_path / "reference"
    shutil.copytree(data.REFERENCE, reference)
    sweep = reference / "aaron2018_page_fault1_batch_sweep.csv"
    with open(sweep, newline="") as f:
        rows = list(csv.DictReader(f))
    first = {**rows[0], "score": "12345678"}  # Skylake-EX at batch 31
    with open(sweep, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(first))
        writer.writeheader()
        writer.writerow(first)
    experiments = tmp_path / "experiments"
    shutil.copytree(data.EXPERIMENTS, experiments)
    spec = experiments / "aaron2018.toml"
    doc = tomllib.loads(spec.read_text())
    doc["quick"] = {"duration_s": 0.05, "batch": [int(first["batch"])]}
    spec.write_text(tomli_w.dumps(doc))
    monkeypatch.setenv("PCPLAB_EXPERIMENTS", str(experiments))
    out = tmp_path / "r"
    args = ("reproduce", "aaron2018", "--quick", "--out", out)
    proc = pcplab(*args, "--reference", reference)
    assert proc.returncode == 0, proc.stderr
    with open(out / "aaron2018.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    assert (row["machine"], row["batch"]) == (first["machine"], first["batch"])
    assert float(row["score_published"]) == 12345678


@pytest.mark.parametrize(
    "command",
    [
        ("reproduce", "aaron2018", "--quick"),
        ("fidelity", "aaron2018", "--quick"),
        ("fit", "--max-nfev", "1"),
    ],
    ids=lambda c: c[0],
)
def test_a_reference_without_machines_csv_is_refused(
    bad_input, tmp_path: Path, monkeypatch, command: tuple[str, ...]
) -> None:
    """`--reference DIR` without machines.csv: one line, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    line = bad_input(*command, "--out", tmp_path / "out", "--reference", "empty")
    assert "--reference empty has no machines.csv" in line
    assert not (tmp_path / "out").exists()


def test_a_bad_reference_variable_is_refused(bad_input, tmp_path, monkeypatch):
    """$PCPLAB_REFERENCE without machines.csv: one line, exit 2."""
    monkeypatch.setenv("PCPLAB_REFERENCE", str(tmp_path))
    line = bad_input("reproduce", "aaron2018", "--quick", "--out", tmp_path / "out")
    assert f"PCPLAB_REFERENCE {tmp_path} has no machines.csv" in line


def test_a_missing_experiment_is_refused_first(bad_input, tmp_path, monkeypatch):
    """$PCPLAB_EXPERIMENTS lacking one spec: one line before any experiment runs."""
    shutil.copy(data.EXPERIMENTS / "aaron2018.toml", tmp_path)
    monkeypatch.setenv("PCPLAB_EXPERIMENTS", str(tmp_path))
    out = tmp_path / "out"
    line = bad_input("reproduce", "aaron2018", "ying2023", "--quick", "--out", out)
    assert f"experiment ying2023 has no {tmp_path / 'ying2023.toml'}" in line
    assert not out.exists()
    line = bad_input("fidelity", "aaron2018", "hahn2025", "--quick")
    assert "experiment hahn2025 has no" in line
