"""The --seeds/--repeat options and how a repeated run is printed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pcplab import headers
from pcplab.comparison import columns_of, lkp, statistics
from pcplab.inputs import AsciiIntRange
from pcplab.repeats import MAX_RUNS


def repeat_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --seeds N (sim) and --repeat N (native, host) to COMMAND."""
    command = click.option(
        "--repeat",
        type=AsciiIntRange(2, MAX_RUNS),
        metavar="N",
        help="native, host: run N times; figures become mean and stddev.",
    )(command)
    return click.option(
        "--seeds",
        type=AsciiIntRange(2, MAX_RUNS),
        metavar="N",
        help="sim: run with seeds 1..N; figures become mean and stddev.",
    )(command)


def emit_repeated(
    results: list[dict[str, Any]], as_json: bool, output: str | None
) -> None:
    """Print repeated runs: their statistics in LKP's layout, or all as JSON."""
    column = columns_of([results])[0]
    data = {"runs": results, "statistics": statistics(column)}
    text = json.dumps(data, indent=2) + "\n"
    if output is not None:
        Path(output).write_text(text)
    if as_json:
        click.echo(text, nl=False)
        return
    seeds = sorted({r["spec"].get("seed") for r in results})
    how = f"seeds {seeds[0]}..{seeds[-1]}" if len(seeds) > 1 else "repeats"
    click.echo(
        f"pcplab run: {headers.line(results)}, "
        f"{len(results)} runs ({how}): mean ±%stddev\n"
    )
    click.echo(lkp([f"{results[0]['engine']}"], [column]))
