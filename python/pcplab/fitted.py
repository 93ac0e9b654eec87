"""What the fit has seen, and what a run on another machine extrapolates.

The global constants on file were fitted on the rows of the FITTED
experiments their last fit read (pcplab.experiments.read_by_fit), each run
on the profiles its TOML's [machines] names, on its [spec] kernel (else the
engines' default). Those machines' CPU counts, microarchitectures and
kernels are the fit's reach; a run beyond it is an extrapolation, said in
one line and carried as `outside_fit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pcplab import experiments, machines, spec_keys
from pcplab.errors import BadInput
from pcplab.experiments._common import fitted_profiles
from pcplab.guards import warn


@dataclass(frozen=True)
class Fitted:
    """A machine the fit read: its facts and the kernels its rows ran."""

    name: str
    cpus: int
    uarch: str
    kernels: frozenset[str]


def experiment_kernel(spec: dict[str, Any]) -> str:
    """Return the kernel an experiment's TOML SPEC runs (else the default)."""
    return spec.get("spec", {}).get("kernel") or spec_keys.key("kernel").default


def reach() -> dict[str, Fitted]:
    """Return every machine the fitted experiments' rows ran on, by profile name."""
    kernels: dict[str, set[str]] = {}
    facts: dict[str, dict[str, Any]] = {}
    for name in experiments.read_by_fit():
        kernel = experiment_kernel(experiments.load_experiment(name))
        for profile in fitted_profiles([name]):
            f = machines.fit_facts(profile)
            facts[f["name"]] = f
            kernels.setdefault(f["name"], set()).add(kernel)
    return {
        n: Fitted(n, f["cpus"], f["uarch"], frozenset(kernels[n]))
        for n, f in facts.items()
    }


def outside(machine: str, kernel: str) -> list[str]:
    """Return how KERNEL on profile MACHINE goes beyond the fit ([]: it does not)."""
    run = machines.fit_facts(machine)
    seen = reach()
    cpus = sorted({m.cpus for m in seen.values()})
    uarchs = sorted({m.uarch for m in seen.values()})
    reasons = []
    if not cpus[0] <= run["cpus"] <= cpus[-1]:
        reasons.append(
            f"{run['cpus']} CPUs, beyond the fitted machines' {cpus[0]}..{cpus[-1]}"
        )
    if run["uarch"] == "generic":
        reasons.append(
            "a generic part: no microarchitecture of uarch.toml is known for it "
            "(a non-x86 part neither), so it runs as uarch.toml's generic x86 "
            "server, which no fitted machine is"
        )
    elif run["uarch"] not in uarchs:
        reasons.append(
            f"microarchitecture {run['uarch']}, which no fitted machine has "
            f"(fitted: {', '.join(uarchs)})"
        )
    own = seen.get(run["name"])
    if own is not None and (own.cpus, own.uarch) != (run["cpus"], run["uarch"]):
        own = None  # a profile of that name, but not the machine the fit read
    everyone = frozenset().union(*(m.kernels for m in seen.values()))
    kernels = own.kernels if own else everyone
    if kernel not in kernels:
        whose = f"none of {run['name']}'s fitted rows" if own else "no fitted row"
        reasons.append(
            f"kernel {kernel}, which {whose} ran (fitted: "
            f"{', '.join(sorted(kernels, key=_version))})"
        )
    return reasons


def _version(kernel: str) -> tuple[int, ...]:
    """Return a kernel generation as a sortable tuple ("6.18" -> (6, 18))."""
    return tuple(int(p) for p in kernel.split("."))


def warn_outside(machine: str, reasons: list[str]) -> None:
    """Print the one line saying MACHINE's run extrapolates, if REASONS say it does."""
    warn(f"{machine} is outside what the model was fitted on", reasons)


def flag_rows(name: str, rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Set `outside_fit` in experiment NAME's ROWS; return the reasons by machine."""
    spec = experiments.load_experiment(name)
    # [machines] maps a row's label to its profile; a list names profiles
    profiles = spec.get("machines")
    profiles = profiles if isinstance(profiles, dict) else {}
    found: dict[str, list[str]] = {}
    for row in rows:
        label = row.get("machine")
        if not isinstance(label, str):
            continue
        if label not in found:
            try:
                kernel = row.get("kernel") or experiment_kernel(spec)
                profile = profiles.get(label, row.get("profile", label))
                found[label] = outside(profile, str(kernel))
            except BadInput:  # a label that is no profile (this host)
                found[label] = []
        row["outside_fit"] = "; ".join(found[label])
    return {label: reasons for label, reasons in found.items() if reasons}
