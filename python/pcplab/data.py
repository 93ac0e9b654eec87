"""Where the published figures and the experiment specs are read from.

Both ship inside the package (pcplab/reference/*.csv, pcplab/experiments/*.toml),
so an installed pcplab reproduces the threads from any directory. So do the
held-out figures (pcplab/heldout/*.csv): published, like the reference's,
but never fitted on, so that they judge the model on machines it has not seen. The
published figures come from `--reference DIR`, else $PCPLAB_REFERENCE, else
the package's copy; the experiment specs from $PCPLAB_EXPERIMENTS, else the
package's copy.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pcplab.errors import BadInput

PACKAGE = Path(__file__).resolve().parent
REFERENCE = PACKAGE / "reference"
HELDOUT = PACKAGE / "heldout"  # published figures the fit never reads
RECORD = PACKAGE / "record"  # the mined public record (record/README.md)
EXPERIMENTS = PACKAGE / "experiments"
_chosen: list[Path] = []  # the --reference of the running command, if any


def check_reference(path: str | Path, what: str = "--reference") -> Path:
    """Return PATH if it holds machines.csv; refuse it in one line otherwise."""
    directory = Path(path)
    if not (directory / "machines.csv").is_file():
        unset = "" if what == "--reference" else ", or unset it"
        raise BadInput(
            f"{what} {path} has no machines.csv; give a directory of reference "
            f"CSVs like {REFERENCE}{unset}"
        )
    return directory


@contextmanager
def reference_from(path: str | Path | None) -> Iterator[Path]:
    """Read the published figures from PATH inside the block; check them first."""
    if path is None:
        yield reference_dir()  # checks $PCPLAB_REFERENCE
        return
    _chosen.append(check_reference(path))
    try:
        yield _chosen[-1]
    finally:
        _chosen.pop()


def reference_dir() -> Path:
    """Return --reference, else $PCPLAB_REFERENCE (checked), else the package's."""
    if _chosen:
        return _chosen[-1]
    env = os.environ.get("PCPLAB_REFERENCE")
    if env:
        return check_reference(env, "PCPLAB_REFERENCE")
    return REFERENCE


def experiments_dir() -> Path:
    """Return $PCPLAB_EXPERIMENTS (checked), else the package's experiments."""
    env = os.environ.get("PCPLAB_EXPERIMENTS")
    if not env:
        return EXPERIMENTS
    if not Path(env).is_dir():
        raise BadInput(
            f"PCPLAB_EXPERIMENTS {env} is not a directory; give a directory of "
            f"experiment TOMLs like {EXPERIMENTS}, or unset it"
        )
    return Path(env)


def experiment_file(name: str) -> Path:
    """Return the TOML of experiment NAME, or refuse in one line if missing."""
    path = experiments_dir() / f"{name}.toml"
    if not path.is_file():
        raise BadInput(
            f"experiment {name} has no {path}; give PCPLAB_EXPERIMENTS a "
            f"directory holding {name}.toml, or unset it"
        )
    return path


def reference_file(name: str) -> Path:
    """Return the reference CSV NAME.csv, or refuse in one line if missing."""
    path = reference_dir() / f"{name}.csv"
    if not path.is_file():
        raise BadInput(
            f"the reference directory {path.parent} has no {name}.csv; give one "
            f"holding every CSV of {REFERENCE}"
        )
    return path


def record_dir() -> Path:
    """Return the public record: reference_dir()'s record/ if it has one, else ours.

    So a --reference of one's own figures can replace the mined record as
    well as the reference CSVs (the fit reads both).
    """
    mine = reference_dir() / "record"
    return mine if mine.is_dir() else RECORD


def record_file(name: str) -> Path:
    """Return the record CSV NAME.csv (record_dir()), or refuse in one line."""
    where = record_dir()
    path = where / f"{name}.csv"
    if not path.is_file():
        raise BadInput(f"the public record {where} has no {name}.csv")
    return path


def record_rows(name: str, split: str | None = None) -> list[dict[str, str]]:
    """Return the rows of pcplab/record/NAME.csv (of SPLIT only, if given)."""
    with open(record_file(name), newline="") as f:
        rows = list(csv.DictReader(f))
    return rows if split is None else [r for r in rows if r["split"] == split]


def heldout_file(name: str) -> Path:
    """Return the held-out CSV NAME.csv (never fitted on), or refuse in one line."""
    path = HELDOUT / f"{name}.csv"
    if not path.is_file():
        raise BadInput(f"the held-out figures {HELDOUT} have no {name}.csv")
    return path
