"""The model's commands: fidelity, fit (least squares) and calibrate."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import click

from pcplab import data, machines, runs
from pcplab.cli_examples import EXAMPLES
from pcplab.cli_options import seeds_option
from pcplab.errors import BadInput
from pcplab.inputs import AsciiIntRange, check_output_dir, check_output_file
from pcplab.reproduce import reference_option


@click.command(
    "fidelity",
    short_help="The model beside every published figure.",
    epilog=EXAMPLES["fidelity"],
)
@click.argument("names", nargs=-1)
@click.option("--quick", is_flag=True, help="Fewer rows, shorter runs.")
@click.option(
    "--jobs", type=AsciiIntRange(1), default=2, show_default=True, help="Parallel runs."
)
@click.option(
    "--left-out/--no-left-out",
    default=True,
    show_default=True,
    help="Also predict each machine with the constants fitted without it.",
)
@click.option(
    "--out",
    metavar="FILE",
    help="Also write the Markdown to FILE, below the prose it has above its summary.",
)
@click.option(
    "--folds",
    "folds_file",
    metavar="FILE",
    help="The left-out constants of FILE, a crossval.toml `pcplab fit` wrote "
    "(default: the package's); machines without a fold there are not left out.",
)
@seeds_option(1, "Run every figure with seeds 1..N: means, and each worst row's range.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.option(
    "--output", "json_out", metavar="FILE", help="Also write the rows as JSON."
)
@reference_option
def fidelity_command(
    names: tuple[str, ...],
    quick: bool,
    jobs: int,
    left_out: bool,
    folds_file: str | None,
    out: str | None,
    seeds: int,
    as_json: bool,
    json_out: str | None,
) -> None:
    """Run the reference experiments on the sim engine; print model vs published."""
    from pcplab import basis, fidelity, fidelity_doc, fit

    runners = fidelity.runners()
    unknown = sorted(set(names) - set(runners))
    if unknown:
        raise BadInput(
            f"unknown experiment {', '.join(unknown)}; known: {', '.join(runners)}"
        )
    for name in names or runners:
        data.experiment_file(name)  # every spec is there before anything runs
    check_output_file(out, "--out")
    check_output_file(json_out, "--output")
    if folds_file and not left_out:
        raise BadInput("--folds gives left-out constants; drop --no-left-out")
    folds_path = Path(folds_file) if folds_file else None
    # the figures name the starts of the folds that ran
    click.get_current_context().with_resource(
        basis.folds_from(folds_path or machines.CROSSVAL)
    )
    fold_constants = fit.crossval_constants(folds_path)
    thread_constants = fit.crossval_constants(folds_path, "left_out_thread")
    chosen = {n: r for n, r in runners.items() if not names or n in names}
    results, seeds_in = fidelity.over_seeds(
        lambda: {name: run_one(quick, jobs) for name, run_one in chosen.items()},
        seeds,
    )
    owner = fidelity.reference_machines()
    folds = {
        m: c
        for m, c in fold_constants.items()
        if left_out and results.keys() & set(owner.get(m, ()))
    }
    cv, seeds_out = fidelity.over_seeds(
        lambda: fidelity.left_out(folds, quick, jobs), seeds
    )
    threads = {
        m: c
        for m, c in fidelity.by_thread(fold_constants, thread_constants).items()
        if left_out and results.keys() & set(owner.get(m, ()))
    }
    by_thread = fidelity.over_seeds(
        lambda: fidelity.left_out(threads, quick, jobs), seeds
    )
    text = fidelity_doc.render_document(
        results, cv, (seeds_in, seeds_out), seeds, by_thread
    )
    doc = {"in_sample": results, "left_out": cv, "left_out_thread": by_thread[0]}
    click.echo(json.dumps(doc, indent=1) if as_json else text)
    if out:
        path = Path(out)
        old = path.read_text() if path.exists() else ""
        path.write_text(fidelity_doc.splice(old, text) + "\n")
    if json_out:
        Path(json_out).write_text(json.dumps(doc, indent=1) + "\n")


def _average_seeds(ctx: click.Context, _param: click.Parameter, value: int) -> None:
    """Make every evaluation of this `pcplab fit` the mean of --seeds N."""
    from pcplab import fit

    ctx.with_resource(fit.mean_of_seeds(value))


@click.command(
    "fit",
    short_help="Fit the global constants on the published figures.",
    epilog=EXAMPLES["fit"],
)
@click.option(
    "--constants",
    "names",
    metavar="A,B",
    help="Fit only these constants of the [fit] table (default: all of it).",
)
@click.option(
    "--max-nfev",
    type=AsciiIntRange(0, 10000),
    default=40,
    show_default=True,
    help="Steps of the least-squares search (pcplab.fit_search: each step runs "
    "every fitted row once; a Jacobian, once per constant, at the start and "
    "where a step stalls); 0 keeps the current constants (to cross-validate them).",
)
@click.option(
    "--cross-validate",
    "folds_nfev",
    type=AsciiIntRange(0, 10000),
    default=0,
    show_default=True,
    metavar="N",
    help="Also refit without each thread's rows (every row of one mail) and "
    "without each machine's, N steps each (pcplab.folds); a thread's fold, "
    "fitted here or in --out's crossval.toml, is a start for its machines', "
    "and with --leave-out a fold on file there is a start for itself.",
)
@click.option(
    "--jacobian",
    is_flag=True,
    help="Also measure how every row moves with each constant (10% steps) and "
    "run the damped Gauss-Newton step it proposes: jacobian.json.",
)
@click.option(
    "--start",
    type=click.Choice(["fitted", "middle", "both", "sample"]),
    default="fitted",
    show_default=True,
    help="Where the searches start: constants.toml (the folds: the full fit), "
    "the geometric middle of each constant's bounds (a fold from there has "
    "learnt nothing from the machine it leaves out), both (each search "
    "from the one of lower cost on the rows it fits), or only the best of "
    "--samples N points.",
)
@click.option(
    "--samples",
    type=AsciiIntRange(0, 1024),
    default=0,
    show_default=True,
    metavar="N",
    help="Also (with --start sample: only) start each search from the best "
    "of N quasi-random points of the bounds (scrambled Sobol, seed 1), "
    "judged on the rows it fits: a start no published figure set.",
)
@click.option(
    "--leave-out",
    metavar="MACHINE",
    multiple=True,
    help="With --cross-validate: only this machine's or thread's fold "
    "(repeatable); folds already in DIR/crossval.toml for others stay.",
)
@seeds_option(
    1,
    "Fit the mean of seeds 1..N of every row (N times the runs).",
    callback=_average_seeds,
    expose_value=False,
)
@click.option("--jobs", type=AsciiIntRange(1, 256), default=2, show_default=True)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Run every trial's runs on the Dask cluster at ADDRESS (the same "
    "figures as --jobs).",
)
@click.option(
    "--out",
    metavar="DIR",
    default="fit",
    show_default=True,
    help="Write constants.toml, crossval.toml and fit.json here.",
)
@reference_option
def fit_command(
    names: str | None,
    max_nfev: int,
    folds_nfev: int,
    jacobian: bool,
    start: str,
    samples: int,
    leave_out: tuple[str, ...],
    jobs: int,
    scheduler: str | None,
    out: str,
) -> None:
    """Fit the [fit] constants by least squares over every reference row.

    Residuals are errors in units of the project's tolerances
    (docs/fidelity.md). Copy the written constants.toml and crossval.toml
    into python/pcplab/machines/ to make them the model's.
    """
    from pcplab import experiments, fidelity, fit, fit_search, folds

    runs.check_scheduler(scheduler)
    if leave_out and not folds_nfev:
        raise BadInput("--leave-out names a fold to refit; give --cross-validate N too")
    if start == "sample" and not samples:
        raise BadInput("--start sample searches from the best of --samples N; give N")
    folds.every_fold(leave_out)  # refuses an unknown fold before any run
    everyone = list(fidelity.reference_machines())
    space = fit.Space.from_file(names.split(",") if names else None)
    directory = check_output_dir(out, "--out")
    # folds run one at a time add up in one crossval.toml, whose thread
    # folds start the folds of their machines (read before any run)
    written = directory / "crossval.toml"
    # (and each fold on file is a start for itself: a stopped search resumes)
    earlier = fit.earlier_folds(written) if leave_out and written.is_file() else {}
    fitted = machines.constants()
    # --max-nfev 0 keeps constants.toml: the folds' base, nothing searched
    main = (
        fit.start_points(space, start, "constants.toml", fitted)
        if max_nfev
        else {"constants.toml": fitted}
    )
    # every trial's runs go to the cluster, if one is named
    with runs.on_cluster(scheduler):
        # one store of runs: the folds read the full fit's points from it
        shared = fit_search.SharedRuns(jobs)
        result = fit_search.best_of(
            space,
            main,
            everyone,
            jobs,
            max_nfev,
            click.echo,
            samples if max_nfev else 0,
            shared,
        )
        day = time.strftime("%Y-%m-%d")
        seeds = fit.seeds_per_evaluation()
        if seeds > 1:
            day += f", means of {seeds} seeds"
        note = f"{result.evaluations} trials, cost {result.cost:.1f} ({day})"
        shutil.copy(machines.CONSTANTS, directory / "constants.toml")
        read = experiments.fitted() if max_nfev else None  # 0: nothing refitted
        fit.write_constants(directory / "constants.toml", result.constants, note, read)
        report: dict[str, Any] = {"fit": asdict(result), "seeds": seeds}
        if folds_nfev:
            # a fold from the full fit starts where its left-out machine led;
            # one from the middle does not
            # each fold is written as it ends (a run stopped midway keeps them)
            found = folds.cross_validate(
                space,
                fit.start_points(space, start, "full fit", result.constants),
                jobs,
                folds_nfev,
                click.echo,
                leave_out,
                samples,
                done=partial(
                    fit.write_crossval, written, day=day, keep_others=bool(leave_out)
                ),
                earlier=earlier,
                runs=shared,
            )
            report["folds"] = {m: asdict(r) for m, r in found.items()}
        (directory / "fit.json").write_text(json.dumps(report, indent=1) + "\n")
        if jacobian:
            _write_jacobian(space, result.constants, everyone, jobs, directory)
        for key, value in result.constants.items():
            click.echo(f"{key} = {value}")
        click.echo(f"wrote {directory}/constants.toml ({note})")


def _write_jacobian(
    space: Any, constants: dict[str, float], only: list[str], jobs: int, out: Path
) -> None:
    """Measure the Jacobian at CONSTANTS, run its step, write jacobian.json."""
    from pcplab import jacobian

    doc = jacobian.report(space, constants, only, jobs)
    (out / "jacobian.json").write_text(json.dumps(doc, indent=1) + "\n")
    step = doc["gauss_newton"]
    click.echo(
        f"jacobian: {len(doc['d'])} constants x {len(doc['rows'])} rows; cost "
        f"{step['cost_now']:.1f}, a damped Gauss-Newton step predicts "
        f"{step['predicted_cost']:.1f} and measures {step['measured_cost']:.1f}"
    )


@click.command(
    "calibrate",
    short_help="Measure this host; write its machine profile.",
    epilog=EXAMPLES["calibrate"],
)
@click.option("--out", metavar="FILE", help="Where to write it (default: user dir).")
@click.option("--name", default="host", show_default=True, help="Profile name.")
def calibrate_command(out: str | None, name: str) -> None:
    """Measure this host with the native engine and write its sim profile."""
    from pcplab.calibrate import calibrate

    if not machines.NAME.fullmatch(name):
        raise BadInput(
            f"--name {name!r} is not a profile name; give letters, digits, "
            "'.', '_' or '-', starting with a letter or digit"
        )
    default = machines.user_dir() / f"{name}.toml"
    check_output_file(out or str(default), "--out", make_parent=True)
    path = calibrate(out, name)
    ref = str(path) if out else name
    click.echo(f"wrote {path}; use it with: pcplab run --engine sim --machine {ref}")
