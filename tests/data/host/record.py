"""Record the samples of this directory on a live kernel (as root).

    python3 tests/data/host/record.py tests/data/host

Runs pcplab-host page_fault1 (2 tasks) at vm.percpu_pagelist_high_fraction
1000, traces kmem:mm_page_alloc_zone_locked (percpu_refill == 1) and
kmem:mm_page_pcpu_drain for 0.2 s in a private tracefs instance, and saves
the raw ring buffer of each CPU beside the kernel's own text rendering of the
same buffer, /proc/vmstat before and after the run, /proc/zoneinfo during it,
and the event formats. The sysctl is restored at the end.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pcplab

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = ("mm_page_alloc_zone_locked", "mm_page_pcpu_drain")
HIGH_FRACTION = Path("/proc/sys/vm/percpu_pagelist_high_fraction")


def _raw_pages(path: Path) -> bytes:
    """Read a CPU's trace_pipe_raw until it is empty."""
    chunks = []
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def record(out: Path) -> None:
    """Run, trace and save every sample into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    inst = TRACEFS / "instances" / "pcplab-record"
    engine = Path(pcplab.__file__).parent / "_bin" / "pcplab-host"
    original = HIGH_FRACTION.read_text()
    HIGH_FRACTION.write_text("1000")
    try:
        inst.mkdir()
        for rel, value in (
            ("tracing_on", "0"),
            ("buffer_size_kb", "256"),
            ("options/overwrite", "1"),
            ("trace_clock", "local"),
            ("events/kmem/mm_page_alloc_zone_locked/filter", "percpu_refill == 1"),
            ("events/kmem/mm_page_alloc_zone_locked/enable", "1"),
            ("events/kmem/mm_page_pcpu_drain/enable", "1"),
        ):
            (inst / rel).write_text(value)
        (out / "vmstat-before.txt").write_text(Path("/proc/vmstat").read_text())
        spec = {"workload": "page_fault1", "tasks": 2, "duration_s": 2, "warmup_s": 0.5}
        proc = subprocess.Popen(
            [str(engine), "run"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(spec))
        proc.stdin.close()
        time.sleep(1.0)
        (inst / "tracing_on").write_text("1")
        time.sleep(0.2)
        (inst / "tracing_on").write_text("0")
        proc.wait()
        (out / "vmstat-after.txt").write_text(Path("/proc/vmstat").read_text())
        (out / "zoneinfo.txt").write_text(Path("/proc/zoneinfo").read_text())
        (out / "header_page").write_text((TRACEFS / "events/header_page").read_text())
        for event in EVENTS:
            fmt = (TRACEFS / "events/kmem" / event / "format").read_text()
            (out / f"{event}.format").write_text(fmt)
        for cpu_dir in sorted((inst / "per_cpu").glob("cpu*")):
            with gzip.open(out / f"{cpu_dir.name}.trace.txt.gz", "wt") as f:
                f.write((cpu_dir / "trace").read_text())
            with gzip.open(out / f"{cpu_dir.name}.raw.gz", "wb") as f:
                f.write(_raw_pages(cpu_dir / "trace_pipe_raw"))
        meta = {
            "kernel": platform.release(),
            "recorded": time.strftime("%Y-%m-%d"),
            "workload": "pcplab-host page_fault1, 2 tasks, "
            "vm.percpu_pagelist_high_fraction 1000",
            "trace": "tracefs instance, buffer_size_kb 256, overwrite 1 (the newest "
            "events), trace_clock local, 0.2 s; cpuN.trace.txt.gz is the kernel's "
            "text rendering of the same buffer as cpuN.raw.gz (trace_pipe_raw pages)",
            "vmstat": "vmstat-before.txt and vmstat-after.txt bracket the same run",
        }
        (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    finally:
        HIGH_FRACTION.write_text(original)
        for rel in ("tracing_on", *(f"events/kmem/{e}/enable" for e in EVENTS)):
            with contextlib.suppress(OSError):
                (inst / rel).write_text("0")
        time.sleep(0.2)
        with contextlib.suppress(OSError):
            inst.rmdir()


if __name__ == "__main__":
    record(Path(sys.argv[1]))
