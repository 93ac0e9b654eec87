"""Where this pcplab came from and where it runs: the report's header facts."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from pcplab import __version__

PACKAGE = Path(__file__).resolve().parent


def commit() -> str:
    """Return the commit the package was built from ("+dirty" if modified).

    The build writes _bin/build_info.json; a source tree without a build
    asks git; anything else is "unknown".
    """
    info = PACKAGE / "_bin" / "build_info.json"
    try:
        data = json.loads(info.read_text())
        if data.get("commit") not in (None, "", "unknown"):
            return data["commit"][:12] + ("+dirty" if data.get("dirty") else "")
    except (OSError, ValueError):
        pass
    try:
        out = subprocess.run(
            ["git", "-C", str(PACKAGE), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
        return out.stdout.strip()[:12]
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cpu_model() -> str:
    """Return /proc/cpuinfo's model name, or the platform's processor."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def header_facts() -> dict[str, str]:
    """Return version, commit, date (UTC), host, kernel and CPU of this run."""
    return {
        "pcplab": __version__,
        "commit": commit(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "host": platform.node(),
        "kernel": platform.release(),
        "cpu": f"{cpu_model()}, {os.cpu_count()} CPUs",
    }
