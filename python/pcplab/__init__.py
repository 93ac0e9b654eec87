"""pcplab: a laboratory for the Linux page allocator's per-CPU page lists (PCP)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pcplab")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

from pcplab.api import Result, run, sweep  # noqa: E402  (the Python API)
from pcplab.errors import (  # noqa: E402  (what the API raises)
    BadInput,
    EngineError,
    InvariantViolation,
    PcplabError,
)

__all__ = [
    "BadInput",
    "EngineError",
    "InvariantViolation",
    "PcplabError",
    "Result",
    "run",
    "sweep",
    "__version__",
]
