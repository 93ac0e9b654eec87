"""Sysctls of the page allocator: read, record and write them.

pcplab writes a sysctl only through its host owner (`owner.Owner`), which
journals the original value first and writes it back however the command
ends (`journal`, `owner`).
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from pcplab import spec_keys
from pcplab.errors import BadInput, PcplabError

SYSCTL_DIR = Path("/proc/sys")
HIGH_FRACTION = "vm.percpu_pagelist_high_fraction"
# The sysctls that shape the page allocator's PCP and watermarks; each one
# this kernel has is recorded in every result.
RECORDED = (
    HIGH_FRACTION,
    "vm.pcp_batch_scale_max",  # only on kernels carrying that 2024 patch
    "vm.min_free_kbytes",
    "vm.watermark_scale_factor",
    "vm.watermark_boost_factor",
    "vm.lowmem_reserve_ratio",
    "vm.defrag_mode",
    "vm.stat_interval",
    "vm.zone_reclaim_mode",
    "vm.numa_zonelist_order",
    "vm.overcommit_memory",
    "vm.swappiness",
)
# The sysctls pcplab ever writes, with the kernel's default value: the value
# to put back when a damaged journal no longer says what was there before.
WRITTEN = {HIGH_FRACTION: "0"}  # mm/page_alloc.c: percpu_pagelist_high_fraction


def sysctl_path(name: str) -> Path:
    """Return the /proc/sys file of a dotted sysctl name."""
    return SYSCTL_DIR / name.replace(".", "/")


def read_sysctl(name: str) -> str:
    """Read one sysctl, whitespace collapsed (e.g. "256 256 32 0")."""
    return " ".join(sysctl_path(name).read_text().split())


def read_recorded() -> dict[str, str]:
    """Read every recorded sysctl this kernel has."""
    values = {}
    for name in RECORDED:
        with contextlib.suppress(OSError):
            values[name] = read_sysctl(name)
    return values


def write_sysctl(name: str, value: str | int) -> None:
    """Write one sysctl; a refused value raises BadInput naming the kernel's reason."""
    try:
        sysctl_path(name).write_text(f"{value}\n")
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            allowed = spec_keys.key("high_fraction").range_words()
            raise BadInput(
                f"the kernel refused {name} = {value} (EINVAL); {allowed}"
            ) from exc
        raise PcplabError(f"cannot write {name} = {value}: {exc.strerror}") from exc


def require_root(what: str, alternative: str = "") -> None:
    """Refuse, before anything runs, a command that writes sysctls without root."""
    if os.geteuid() != 0:
        raise BadInput(
            f"{what} writes {HIGH_FRACTION} and needs root; "
            f"run it as root (sudo){alternative}"
        )
