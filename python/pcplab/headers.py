"""What ran: the engine, machine, kernel, workload, tasks and instrument of a table.

Every table, LKP block and figure title starts with these six facts, read
from the results themselves (the resolved spec), not from the request: a
figure says what it rests on. A fact the results disagree on (the kernel of
`--base kernel=6.6 --new kernel=6.19`) shows each value, in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

FACTS = ("engine", "machine", "kernel", "workload", "tasks", "instrument")

# The tool whose testcase a workload re-implements (LKP's `testcase:` line).
TESTCASES = {
    "page_fault1": "will-it-scale",
    "page_fault2": "will-it-scale",
    "page_fault3": "will-it-scale",
    "stress_vm": "stress-ng",
}


def _machine(result: Mapping[str, Any]) -> str | None:
    """Return the machine's name: the profile's, or the host's."""
    machine = result.get("machine")
    if isinstance(machine, Mapping):
        return machine.get("name") or machine.get("hostname")
    spec = result.get("spec") or {}
    return machine or spec.get("machine") or None


def _kernel(result: Mapping[str, Any]) -> str | None:
    """Return the kernel: the model's generation, or the host's release."""
    spec = result.get("spec") or {}
    if result.get("engine") != "host" and spec.get("kernel"):
        return str(spec["kernel"])
    kernel = result.get("kernel")
    if isinstance(kernel, Mapping):
        return kernel.get("release")
    return None if kernel is None else str(kernel)


def _instrument(result: Mapping[str, Any]) -> str:
    """Return the instrument the engine charged or used ("none" without one)."""
    instrument = result.get("instrument")
    if isinstance(instrument, Mapping):
        return str(instrument.get("instrument") or "none")
    spec = result.get("spec") or {}
    return str(instrument or spec.get("instrument") or "none")


def facts(result: Mapping[str, Any]) -> dict[str, str]:
    """Return the six FACTS of one result, each a string ("n/a" where absent)."""
    spec = result.get("spec") or {}
    values = {
        "engine": result.get("engine") or spec.get("engine"),
        "machine": _machine(result),
        "kernel": _kernel(result),
        "workload": spec.get("workload"),
        "tasks": result.get("tasks") or spec.get("tasks"),
        "instrument": _instrument(result),
    }
    return {k: "n/a" if v is None else str(v) for k, v in values.items()}


def joined(each: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """Return each fact of the facts EACH: its value, or every value in order."""
    out = {}
    for key in FACTS:
        values = list(dict.fromkeys(f.get(key, "n/a") for f in each))
        out[key] = "|".join(values)
    return out


def common(results: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Return each fact of RESULTS: its value, or every value in order ("6.6|6.19")."""
    return joined([facts(r) for r in results])


def stated(ran: Mapping[str, str]) -> str:
    """Return the facts RAN as "engine sim, machine skylake-ex, kernel 4.18, ..."."""
    return ", ".join(f"{k} {v}" for k, v in ran.items())


def line(results: Sequence[Mapping[str, Any]]) -> str:
    """Return "engine sim, machine skylake-ex, kernel 4.18, ...": what RESULTS ran."""
    return stated(common(results))


# An experiment's row carries under RAN the facts of the results it rests on
# (ran()), and under PUBLISHED_KERNEL the kernel its published figure was
# taken on, where its TOML or record names one.
RAN = "ran"
PUBLISHED_KERNEL = "kernel_published"


def ran(*results: Mapping[str, Any]) -> list[dict[str, str]]:
    """Return the facts of each of RESULTS: what a row built from them rests on."""
    return [facts(r) for r in results]


def of_rows(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Return what an experiment's ROWS ran (None if no row says).

    Read from each row's RAN facts; where rows name the kernel of their
    published figures, the kernel says both: "4.18 (model) / v4.15-rc4
    (published)".
    """
    each = [f for r in rows for f in r.get(RAN) or []]
    if not each:
        return None
    values = joined(each)
    published = [str(r[PUBLISHED_KERNEL]) for r in rows if r.get(PUBLISHED_KERNEL)]
    if published:
        both = "|".join(dict.fromkeys(published))
        values["kernel"] = f"{values['kernel']} (model) / {both} (published)"
    return stated(values)


def testcase(workload: str) -> str:
    """Return LKP's testcase of WORKLOAD: the tool it re-implements, else its name."""
    return TESTCASES.get(workload, workload)


def _uarch(name: str) -> str | None:
    """Return the microarchitecture of machine profile NAME, if it has one."""
    from pcplab import machines
    from pcplab.errors import BadInput

    try:
        return machines.fit_facts(name)["uarch"]
    except (BadInput, OSError, KeyError):
        return None


def machine_line(result: Mapping[str, Any]) -> str:
    """Return LKP's `test machine:` line: threads, sockets, part and memory."""
    machine = result.get("machine")
    if not isinstance(machine, Mapping):
        return "n/a (the result describes no machine)"
    topo = machine.get("topology")
    if isinstance(topo, Mapping):
        spec = result.get("spec") or {}
        part = _uarch(str(spec.get("machine") or machine.get("name")))
        return (
            f"{topo.get('cpus')} threads {topo.get('sockets')} sockets"
            f"{f' ({part})' if part else ''} with {topo.get('memory_gb')}G memory"
            " (a modelled machine)"
        )
    memory = machine.get("memory_mib")
    return (
        f"{machine.get('host_cpus')} threads {machine.get('nodes')} nodes"
        f" ({machine.get('cpu_model')}) with "
        f"{'n/a' if memory is None else f'{int(memory) >> 10}G'} memory (this host)"
    )


LKP_RULE = "=" * 89  # the line above lkp compare's axes


def lkp_head(labels: Sequence[str], groups: Sequence[Sequence[Mapping]]) -> list[str]:
    """Return LKP's header: testcase, machine, parameters, axes and commits.

    The axes line holds the facts every column shares, as `lkp compare`
    prints the axes common to its results; the columns' own keys stand
    where LKP names the two commits.
    """
    results = [r for group in groups for r in group]
    first = results[0]
    ran = common(results)
    spec = first.get("spec") or {}
    mode = str(spec.get("mode") or "n/a")
    params = {
        "nr_task": ran["tasks"],
        "mode": mode,
        "test": ran["workload"],
        "engine": ran["engine"],
        "kernel": ran["kernel"],
        "instrument": ran["instrument"],
    }
    axes = {
        "engine": ran["engine"],
        "instrument": ran["instrument"],
        "kernel": ran["kernel"],
        "mode": mode,
        "nr_task": ran["tasks"],
        "tbox_group": ran["machine"],
        "test": ran["workload"],
        "testcase": testcase(ran["workload"]),
    }
    shared = {k: v for k, v in axes.items() if "|" not in v}
    return [
        f"testcase: {testcase(ran['workload'])}",
        f"test machine: {machine_line(first)}",
        "parameters:",
        "",
        *(f"\t{k}: {v}" for k, v in params.items()),
        "",
        LKP_RULE,
        "/".join(shared) + ":",
        "  " + "/".join(shared.values()),
        "",
        "commit:",
        *(f"  {label}" for label in labels),
        "",
    ]
