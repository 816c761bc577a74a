"""`diffimax evaluate`: the judge harness (`pipeline.harness.measure.run_harness`)."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli.jobfile import JobFileOpt
from pipeline.cli.options import (
    Depth,
    EngineFlags,
    HumanCorpusOpt,
    HumanModelOpt,
    JsonOut,
    JudgesOpt,
    SeedOpt,
    SplitOpt,
    UsageError,
    WorkersOpt,
    emit,
    with_flags,
    workers_or_cpus,
)
from search.settings import DiffiMaxSettings, default_depth


@with_flags
def evaluate(
    inputs: Annotated[list[str], typer.Argument(metavar="PGN...", help="Games to draw positions from.")],
    split: SplitOpt = "held_out",
    positions: Annotated[int, typer.Option("--positions", help="Positions to sample (at most 2 per game).")] = 300,
    seed: SeedOpt = 0,
    known_traps: Annotated[
        str, typer.Option("--known-traps", help="A known-traps PGN, 'default' (the bundled set) or 'none'.")
    ] = "default",
    trap_rating: Annotated[
        int, typer.Option("--trap-rating", help="The rating a known trap's victim is given (0: none).")
    ] = 1200,
    depth: Depth = None,
    shallow_depths: Annotated[
        str, typer.Option("--shallow-depths", help="Depths of the shallow pass to measure the trappy judge at.")
    ] = "1,2,4,8",
    human_model: HumanModelOpt = "default",
    human_corpus: HumanCorpusOpt = None,
    workers: WorkersOpt = None,
    judges: JudgesOpt = None,
    save: Annotated[str | None, typer.Option("--save", help="Write the gathered evidence to this file.")] = None,
    load: Annotated[str | None, typer.Option("--load", help="Measure saved evidence instead of gathering it.")] = None,
    as_json: JsonOut = False,
    job_file: JobFileOpt = None,  # the [engine-options] table (`pipeline.cli.jobfile`)
    *,
    engine_flags: EngineFlags,
) -> None:
    """The judge harness: trap-node share, candidates, fall rate and lift over chance, and recall on
    known traps, for every trap judge on held-out games, and the fall probability's calibration
    (docs/judges.md). --judges names the judges whose evidence is gathered (default: all; without
    dip, positions are valued as a mining job values them, and faster). --workers 1 gathers in
    this process, without Ray."""
    from pipeline.common.progress import Progress
    from pipeline.harness.calibration import calibration_table
    from pipeline.harness.measure import HarnessRequest, markdown_table, run_harness
    from search.judges import JUDGES, parse_judges

    engine, options = engine_flags.name(), engine_flags.options()  # the shared flags' checks: one line for a bad value
    if workers is not None and workers < 1:
        raise UsageError(f"invalid --workers {workers}: must be a whole number >= 1")
    settings = DiffiMaxSettings(depth=depth if depth is not None else default_depth(engine))
    try:
        depths = [int(token) for token in shallow_depths.split(",") if token.strip()]
    except ValueError:
        raise UsageError(
            f"invalid --shallow-depths {shallow_depths!r}: expected whole numbers, comma-separated"
        ) from None
    with Progress() as progress:
        progress.say(f"evaluate: sampling {positions} positions of the {split} games")
        request = HarnessRequest(
            tuple(inputs),
            engine,
            options,
            settings,
            split=split,
            positions=positions,
            seed=seed,
            known_traps=known_traps,
            trap_rating=trap_rating,
            model=human_model,
            corpus=human_corpus,
            shallow_depths=tuple(depths),
            gathered=frozenset(JUDGES) if judges is None else parse_judges(judges),
        )
        run = run_harness(request, workers=workers_or_cpus(workers), save=save, load=load, progress=progress)
    if as_json:
        emit({"about": run.about, "variants": run.rows, "calibration": run.calibration}, "", True)
    else:
        typer.echo(markdown_table(run.rows))
        typer.echo("")
        typer.echo(calibration_table(run.calibration))
