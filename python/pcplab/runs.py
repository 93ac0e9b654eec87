"""Grids of engine runs over any spec keys, on local cores or a Dask cluster."""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pcplab import engine, machines, progress, spec_keys
from pcplab.errors import BadInput
from pcplab.inputs import DECIMAL, INTEGER

# A Dask scheduler address: [scheme://]host[:port], or inproc://NAME.
SCHEDULER = re.compile(
    r"(?:(?:tcp|tls|ws|wss|ucx)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)"
    r"(?::(?P<port>[0-9]{1,5}))?/?|inproc://\S+"
)


# The Dask cluster every run_specs of a command goes to when its caller names
# none: `pcplab fit --scheduler` reaches runs many layers below it this way.
_cluster: ContextVar[Any] = ContextVar("cluster", default=None)


@contextmanager
def on_cluster(address: str | None) -> Iterator[None]:
    """Send every run_specs without a scheduler to the cluster at ADDRESS.

    One client for the whole block (a fit makes hundreds of calls); None
    leaves the runs local.
    """
    if address is None:
        yield
        return
    from dask.distributed import Client  # the caller checked ADDRESS (check_scheduler)

    try:
        client = Client(address, timeout=30)
    except (OSError, ValueError) as exc:  # nobody there, or another's inproc
        raise BadInput(f"--scheduler {address}: cannot connect ({exc})") from None
    with client:
        token = _cluster.set(client)
        try:
            yield
        finally:
            _cluster.reset(token)


def _value(text: str) -> Any:
    """Read one grid value: an int, a float, true/false, or a string.

    Only ASCII digits make a number: '４' stays a string, which the engine
    refuses where it wants a number.
    """
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if INTEGER.fullmatch(text):
        return int(text)
    if DECIMAL.fullmatch(text) and math.isfinite(float(text)):
        return float(text)
    return text


def check_scheduler(address: str | None) -> None:
    """Refuse a --scheduler that is no Dask address, or when Dask is missing."""
    if address is None:
        return
    match = SCHEDULER.fullmatch(address)
    port = match and match.group("port")
    if not match or (port and not 1 <= int(port) <= 65535):
        raise BadInput(
            f"--scheduler {address!r} is not a Dask scheduler address; give "
            "[tcp://]HOST[:PORT] with PORT 1..65535, e.g. tcp://10.0.0.1:8786"
        )
    if importlib.util.find_spec("distributed") is None:
        raise BadInput(
            "--scheduler needs dask.distributed; install it with "
            "pip install 'pcplab[dask]', or drop --scheduler"
        )


def check_host_placement(
    specs: Iterable[dict[str, Any]], scheduler: Any, jobs: int = 1
) -> None:
    """Refuse host-engine specs bound for a Dask cluster or run JOBS at once."""
    if not any(s.get("engine") == "host" for s in specs):
        return
    # A cluster's worker would measure its own kernel, not this host's, and
    # set that machine's sysctls: the host engine runs here or not at all.
    if scheduler is not None:
        raise BadInput(
            "--scheduler runs on a Dask cluster's workers, but the host engine "
            "measures this host's kernel; drop --scheduler, or run --engine sim "
            "or native on the cluster"
        )
    # One kernel: two host runs at once would share its zones and sysctls
    # (and the engine's front end handles signals in the main thread only).
    if jobs > 1:
        raise BadInput(
            f"--jobs {jobs} runs points at once, but the host engine measures "
            "this host's one kernel, one run at a time; give --jobs 1 with the "
            "host engine"
        )


def parse_param(text: str) -> tuple[str, list[Any]]:
    """Parse "batch=31,63,127" into ("batch", [31, 63, 127])."""
    key, sep, values = text.partition("=")
    parts = values.split(",")
    if not sep or not key.strip() or not values.strip():
        raise BadInput(
            f"--param {text!r} is not KEY=V1,V2,...; give e.g. batch=31,63,127"
        )
    if not all(part.strip() for part in parts):
        raise BadInput(
            f"--param {text!r} has an empty value between its commas; give "
            "values separated by single commas, e.g. batch=31,63"
        )
    key = key.strip()
    if key in spec_keys.string_keys():  # a kernel "6.6" is no number
        return key, [part.strip() for part in parts]
    return key, [_value(part) for part in parts]


def parse_params(texts: Iterable[str], option: str) -> list[tuple[str, list[Any]]]:
    """Parse every KEY=V1,V2 of OPTION; refuse a key given twice."""
    parsed: dict[str, list[Any]] = {}
    for text in texts:
        key, values = parse_param(text)
        if key in parsed:
            raise BadInput(f"{option} sets {key} twice; give each key once")
        parsed[key] = values
    return list(parsed.items())


def grid(params: Sequence[tuple[str, Sequence[Any]]]) -> list[dict[str, Any]]:
    """Return the cartesian product of the params as a list of key dicts."""
    keys = [key for key, _ in params]
    return [
        dict(zip(keys, combo, strict=True))
        for combo in itertools.product(*(values for _, values in params))
    ]


def materialize(spec: dict[str, Any]) -> dict[str, Any]:
    """Return SPEC ready for an engine: a sim machine named by profile is loaded."""
    spec = dict(spec)
    if isinstance(spec.get("machine"), str):
        spec["machine"] = machines.load_profile(spec["machine"])
    return spec


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one spec on its engine (the host engine through its front end)."""
    spec = materialize(spec)
    if spec.get("engine") == "host":
        from pcplab.host.execute import execute_run

        return execute_run(spec)
    return engine.run(spec)


def _run_dask(
    specs: list[dict[str, Any]], scheduler: Any, bar: Any
) -> list[dict[str, Any]]:
    """Run the specs on a Dask cluster at SCHEDULER (an address or a Client)."""
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise BadInput(
            "--scheduler needs dask.distributed; install it with "
            "pip install 'pcplab[dask]', or drop --scheduler"
        ) from None
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = client.map(run_one, specs, pure=False)
        for _ in dask_completed(futures):
            bar.update()
        return client.gather(futures)
    finally:
        if own:
            client.close()


def run_specs(
    specs: Iterable[dict[str, Any]],
    jobs: int = 1,
    *,
    scheduler: Any = None,
    desc: str = "runs",
    ticker: Any = None,
) -> list[dict[str, Any]]:
    """Run every spec, JOBS at a time (or on a Dask cluster); results in order.

    TICKER, when given, counts the runs instead of a bar of their own (a
    search that runs several batches keeps one count and one ETA).
    """
    specs = list(specs)
    if scheduler is None:
        scheduler = _cluster.get()
    check_host_placement(specs, scheduler, jobs)
    bar = ticker or progress.bar(len(specs), desc)
    try:
        if scheduler is not None:
            return _run_dask(specs, scheduler, bar)
        results: list[Any] = [None] * len(specs)
        if jobs <= 1:  # in this thread (the host engine handles signals here)
            for i, spec in enumerate(specs):
                results[i] = run_one(spec)
                bar.update()
            return results
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(run_one, s): i for i, s in enumerate(specs)}
            try:
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update()
            except BaseException:  # the pool must not wait for the engines
                pool.shutdown(wait=False, cancel_futures=True)
                _stop_engines(futures)
                raise
        return results
    finally:
        if ticker is None:
            bar.close()


def _stop_engines(futures: Iterable[Any]) -> None:
    """Kill the engines of FUTURES until every one is done.

    A worker may start its next engine between one stop_all() and the
    pool's cancelling: that engine is killed on the next pass, and the
    command does not wait for a run nobody will read.
    """
    from concurrent.futures import wait

    pending = set(futures)
    while pending:
        engine.stop_all()
        wait(pending, timeout=0.05)
        # done() also counts the futures the pool cancelled, which wait()
        # would wait on forever: no worker will pick them up to say so
        pending = {f for f in pending if not f.done()}
