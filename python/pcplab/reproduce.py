"""`pcplab reproduce`: run the reference experiments and write the report folder.

Each experiment of pcplab.experiments (a module and a TOML each) is run
(on the sim engine, or on this host's kernel where its module says so),
printed in its thread's layout beside the published figures of
pcplab/reference/*.csv (pcplab.data says how to read others), and written
into the report folder (CSV, JSON, PNG, index.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import click

from pcplab import data, experiments, fitted, render, report, runs, verdict
from pcplab.cli_examples import EXAMPLES
from pcplab.cli_options import jobs_option, seeds_option
from pcplab.errors import BadInput
from pcplab.experiments._common import run_seeds
from pcplab.inputs import check_output_dir
from pcplab.repeats import combine_rows


def _use_reference(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
    """Check --reference (or $PCPLAB_REFERENCE) and use it for the command."""
    ctx.with_resource(data.reference_from(value))
    data.experiments_dir()  # a bad $PCPLAB_EXPERIMENTS is refused here too


def reference_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --reference DIR to COMMAND; a DIR without machines.csv is refused."""
    return click.option(
        "--reference",
        metavar="DIR",
        expose_value=False,
        callback=_use_reference,
        help="Read the published figures from DIR (default: $PCPLAB_REFERENCE, "
        "else the package's copy).",
    )(command)


def check_names(names: Sequence[str]) -> list[str]:
    """Expand "all" and refuse unknown experiment names."""
    known = experiments.names()
    if not names or "all" in names:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadInput(
            f"unknown experiment {', '.join(unknown)}; allowed: all, {', '.join(known)}"
        )
    return list(dict.fromkeys(names))


def check_options(chosen: Sequence[str], options: dict[str, Sequence[str]]) -> None:
    """Refuse an experiment's option without the experiment, or a bad value of it."""
    declared = experiments.options()
    for key, values in options.items():
        option, owners = declared[key]
        if values and not set(owners) & set(chosen):
            them = " or ".join(owners)
            raise BadInput(
                f"{option.flag} is an option of {them}; run {them} too (or all), "
                f"or drop {option.flag}"
            )
        if option.check:
            for value in values:
                option.check(value)


def run_experiments(
    names: Sequence[str],
    *,
    quick: bool,
    jobs: int,
    scheduler: Any = None,
    seeds: int = 1,
    **options: Sequence[str],
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Run the named experiments; return their rows and notes on skipped ones.

    OPTIONS are the experiments' own (OPTIONS of their modules): each goes,
    when given, to the experiments that take it. With SEEDS > 1 every sim
    experiment runs once per seed and its rows are merged: mean figures,
    `<field>_std` their spread (pcplab.repeats.combine_rows).
    """
    results: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, str] = {}
    for name in check_names(names):
        experiment = experiments.get(name)
        skip = experiment.skip_reason()
        if skip:
            notes[name] = skip
            continue
        mine = {k: v for k, v in options.items() if v and k in experiment.options}
        runs = run_seeds(
            partial(experiment.run, quick, jobs, scheduler=scheduler, **mine), seeds
        )
        results[name] = runs[0] if len(runs) == 1 else combine_rows(runs, name)
        for machine, reasons in fitted.flag_rows(name, results[name]).items():
            fitted.warn_outside(f"{name} on {machine}", reasons)
    return results, notes


def left_out_rows(
    results: dict[str, list[dict[str, Any]]], *, quick: bool, jobs: int, seeds: int
) -> dict[str, list[dict[str, Any]]]:
    """Run the fitted experiments' machines of RESULTS with their folds on file.

    Each reference machine runs with the constants fitted without it
    (machines/crossval.toml), over the same rows and seeds as RESULTS: the
    model's left-out figures. A machine with no fold on file runs nothing.
    """
    # here, not at the top: fit needs numpy, and the CLI starts on click alone
    from pcplab import fidelity, fit

    owner = fidelity.reference_machines()
    ran = {r.get("machine") for rows in results.values() for r in rows}
    folds = {
        m: constants
        for m, constants in fit.crossval_constants().items()
        if m in ran and results.keys() & set(owner.get(m, ()))
    }
    if not folds:
        return {}
    runs = run_seeds(partial(fidelity.left_out, folds, quick, jobs), seeds)
    if len(runs) == 1:
        return runs[0]
    return {name: combine_rows([r[name] for r in runs], name) for name in runs[0]}


def outside_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Return a line per machine of ROWS outside the fit (their `outside_fit`)."""
    flagged = {r["machine"]: r["outside_fit"] for r in rows if r.get("outside_fit")}
    return [
        f"{machine}: outside what the model was fitted on (extrapolated): {why}"
        for machine, why in flagged.items()
    ]


def write(
    out: Path,
    results: dict[str, list[dict[str, Any]]],
    notes: dict[str, str],
    header: str,
    cv: dict[str, list[dict[str, Any]]] | None = None,
) -> tuple[dict[str, str], Path]:
    """Write the report folder OUT; return the printed texts and index.md.

    CV: the left-out rows of the fitted experiments (left_out_rows).
    """
    out.mkdir(parents=True, exist_ok=True)
    texts, files = {}, {}
    for name, rows in results.items():
        experiment = experiments.get(name)
        spec = experiment.spec()
        text = render.align(experiment.text(rows, spec), spec.get("layout"))
        texts[name] = "\n".join([text, *outside_lines(rows)])
        files[name] = report.write_experiment(name, rows, texts[name], out)
    index = report.write_index(out, results, texts, files, notes, header, cv)
    return texts, index


def experiment_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the options the experiments take (OPTIONS of their modules) to COMMAND."""
    for key, (option, _) in reversed(experiments.options().items()):
        command = click.option(
            option.flag, key, multiple=True, metavar=option.metavar, help=option.help
        )(command)
    return command


@click.command(
    "reproduce",
    short_help="Run the reference experiments; write a report.",
    help="Run NAMES (or all) of the reference experiments; print and write the "
    f"report.\n\nNAMES: all, {', '.join(experiments.names())}.",
    epilog=EXAMPLES["reproduce"],
)
@click.argument("names", nargs=-1)
@click.option("--quick", is_flag=True, help="Fewer rows, shorter runs.")
@click.option(
    "--out",
    default="report",
    show_default=True,
    metavar="DIR",
    help="The report folder.",
)
@jobs_option()
@click.option(
    "--scheduler", metavar="ADDRESS", help="Run on the Dask cluster at ADDRESS."
)
@seeds_option(3, "Run each sim experiment with seeds 1..N: mean figures, stddev bars.")
@experiment_options
@reference_option
def reproduce_command(
    names: tuple[str, ...],
    quick: bool,
    out: str,
    jobs: int,
    scheduler: str | None,
    seeds: int,
    **options: tuple[str, ...],
) -> None:
    """Run NAMES (or all) of the reference experiments; print and write the report."""
    chosen = check_names(names)
    for name in chosen:
        data.experiment_file(name)  # every spec is there before anything runs
    check_options(chosen, options)
    runs.check_scheduler(scheduler)
    target = check_output_dir(out, "--out")
    start = time.monotonic()
    results, notes = run_experiments(
        names, quick=quick, jobs=jobs, scheduler=scheduler, seeds=seeds, **options
    )
    cv = left_out_rows(results, quick=quick, jobs=jobs, seeds=seeds)
    header = (
        f"Generated by `pcplab reproduce {' '.join(names) or 'all'}"
        f"{' --quick' if quick else ''} --seeds {seeds}` in "
        f"{time.monotonic() - start:.0f} s "
        f"({'Dask at ' + scheduler if scheduler else f'{jobs} local jobs'}); "
        f"model figures are means over {seeds} seed{'s' * (seeds > 1)}."
    )
    texts, index = write(target, results, notes, header, cv)
    for name in texts:
        click.echo(texts[name])
    for name, note in notes.items():
        click.echo(f"== {name}: {note}\n")
    click.echo("== verdict\n\n" + "\n".join(verdict.render(results, cv, notes)) + "\n")
    click.echo(f"report: {index}")
