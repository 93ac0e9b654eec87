"""Run one host spec safely: the memory guard, the sysctl journal, the refusals."""

from __future__ import annotations

import os
from typing import Any

from pcplab import engine
from pcplab.errors import BadInput, EngineError
from pcplab.host import owner, procfs, runner, sysctl, trace

SCALE_MAX_SYSCTL = "vm.pcp_batch_scale_max"  # the 2024 proposal's sysctl


def guard(specs: list[dict[str, Any]], trace_method: str, trace_s: float) -> None:
    """Resolve every spec (the engine checks it) and apply the memory guard."""
    from pcplab.memguard import check_memory, mem_available_bytes

    needed = 0
    for spec in specs:
        resolved = engine.resolve(spec)
        value = resolved.get("memory_bytes")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise EngineError("the engine's resolve reply has no number memory_bytes")
        needed = max(needed, int(value))
    if trace_method not in ("off",) and trace_s > 0:  # a tracefs ring buffer
        needed += trace.DEFAULT_BUFFER_KB * 1024 * (os.cpu_count() or 1)
    check_memory(needed, mem_available_bytes())


def refuse_host_scale_max_schedule() -> None:
    """Refuse --scale-max-schedule against the running kernel: one line, exit 2."""
    # Kernels without the vm.pcp_batch_scale_max sysctl (mainline, this one)
    # have no runtime knob to change; where a kernel carries it, the host
    # engine does not write it during a run (yet), and says so.
    release = procfs.kernel_release()
    if not sysctl.sysctl_path(SCALE_MAX_SYSCTL).exists():
        raise BadInput(
            f"--scale-max-schedule changes {SCALE_MAX_SYSCTL}, which this kernel "
            f"({release}) does not have; run the schedule on the model with "
            "--engine native or sim"
        )
    raise BadInput(
        f"--scale-max-schedule: this kernel ({release}) has {SCALE_MAX_SYSCTL}, "
        "but the host engine does not change it during a run; run the schedule "
        "on the model with --engine native or sim"
    )


def execute_run(
    spec: dict[str, Any],
    *,
    trace_method: str = "auto",
    trace_s: float = runner.DEFAULT_TRACE_S,
    gap_ns: int = trace.DEFAULT_GAP_NS,
    lock_stats: str | None = None,
    profile_with: str = "off",
) -> dict[str, Any]:
    """Check, guard and run one host spec (setting high_fraction if given)."""
    runner.profile_reason_for(profile_with)  # an explicit perf that cannot run
    spec = dict(spec)
    high_fraction = spec.pop("high_fraction", None)
    if high_fraction is not None:
        sysctl.require_root(
            "--high-fraction with the host engine", ", or drop --high-fraction"
        )
    checked = (
        dict(spec, high_fraction=high_fraction) if high_fraction is not None else spec
    )
    guard([checked], trace_method, trace_s)
    options = {
        "trace_method": trace_method,
        "trace_s": trace_s,
        "gap_ns": gap_ns,
        "lock_stats": lock_stats,
        "profile_with": profile_with,
    }
    with owner.hold("pcplab run --engine host") as own:
        if high_fraction is None:
            return runner.run(spec, **options)
        own.set_sysctl(sysctl.HIGH_FRACTION, high_fraction)
        try:
            return runner.run(checked, **options)
        finally:  # the next run of a tune or a sweep starts from the original
            own.restore_sysctls()
