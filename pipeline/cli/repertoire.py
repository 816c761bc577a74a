"""`diffimax repertoire` (grow a repertoire, or plan its cost) and `diffimax repertoire-query` (SQL
over repertoires' nodes)."""

from __future__ import annotations

import time
from typing import Annotated

import chess
import typer

from pipeline.cli.jobfile import JobFileOpt
from pipeline.cli.options import (
    RATING_HELP,
    AddressOpt,
    EngineFlags,
    EvidenceFlags,
    FilesOpt,
    FormatOpt,
    FromOpt,
    JudgeThresholds,
    ListOpt,
    MovesOpt,
    OptionalDataOpt,
    PlanOpt,
    PoolOpt,
    SearchFlags,
    TableMbOpt,
    UsageError,
    WorkersOpt,
    build_judges,
    with_flags,
    workers_or_cpus,
)
from pipeline.common.progress import Progress
from pipeline.human.context import parse_pool
from pipeline.judging import HumanEvidence
from pipeline.mine.table import DEFAULT_TABLE_MB
from pipeline.repertoire.settings import (
    DEFAULT_CANDIDATES,
    DEFAULT_FLOOR,
    DEFAULT_PLIES,
    DEFAULT_ROOT_WIDTH,
    DEFAULT_WIDTH,
    REPERTOIRE_JUDGES,
    RepertoireSettings,
    parse_start,
)
from search.settings import default_depth


def parse_color(text: str) -> chess.Color:
    token = text.strip().lower()
    if token not in ("white", "black"):
        raise UsageError(f"invalid --color {text!r}: expected white or black")
    return token == "white"


@with_flags
def repertoire(
    color: Annotated[str, typer.Option("--color", help="The player's colour: white or black.")],
    rating: Annotated[int, typer.Option("--rating", help=RATING_HELP)],
    out: Annotated[
        str | None, typer.Option("--out", help="Directory for nodes.parquet, repertoire.pgn, explorer.html.")
    ] = None,
    player_rating: Annotated[int | None, typer.Option("--player-rating", help="The player's own rating.")] = None,
    pool: PoolOpt = "auto",
    start_fen: FromOpt = None,
    moves: MovesOpt = None,
    line_plies: Annotated[int, typer.Option("--line-plies", help="Lines of at most this many plies.")] = DEFAULT_PLIES,
    floor: Annotated[
        float,
        typer.Option("--floor", help="Explore a reply while humans reach its line with at least this probability."),
    ] = DEFAULT_FLOOR,
    width: Annotated[
        int, typer.Option("--width", help="The player's candidates grown beyond one reply.")
    ] = DEFAULT_WIDTH,
    root_width: Annotated[
        int, typer.Option("--root-width", help="The same for the player's first moves, compared at one depth.")
    ] = DEFAULT_ROOT_WIDTH,
    candidates: Annotated[
        int, typer.Option("--candidates", help="The player's moves valued per node (by the shallow pass).")
    ] = DEFAULT_CANDIDATES,
    data: OptionalDataOpt = None,
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    table_mb: TableMbOpt = DEFAULT_TABLE_MB,
    files: FilesOpt = "all",
    plan: PlanOpt = False,
    plan_sample: Annotated[int, typer.Option("--plan-sample", help="Nodes the plan times for real.")] = 24,
    job_file: JobFileOpt = None,  # read by its callback, before the other flags (`pipeline.cli.jobfile`)
    *,
    search: SearchFlags,
    engine_flags: EngineFlags,
    evidence: EvidenceFlags,
    thresholds: JudgeThresholds,
) -> None:
    """The opening lines that give a player the best practical chances against humans of a rating:
    an expectimax over human replies, written as Parquet, PGN chapters and an offline explorer.
    --workers N grows it on N Ray workers; --workers 0 grows it in this process, without Ray."""
    from pipeline.engines.backends import check_backend
    from pipeline.outputs.repertoire.write import parse_repertoire_files, write_repertoire
    from pipeline.repertoire.driver import WorkerSpec, build_repertoire
    from pipeline.repertoire.plan import plan_repertoire, repertoire_plan_text
    from pipeline.repertoire.records import Labels

    engine = engine_flags.name()
    settings = RepertoireSettings(
        color=parse_color(color),
        rating=rating,
        player_rating=player_rating,
        pool=parse_pool(pool),
        plies=line_plies,
        floor=floor,
        width=width,
        root_width=root_width,
        candidates=candidates,
        diffimax=search.settings(default_depth(engine)),
        judges=build_judges(evidence.judges, REPERTOIRE_JUDGES, thresholds),
    )
    start = parse_start(start_fen, moves)
    formats = parse_repertoire_files(files)
    human_model = None if evidence.human_model.lower() == "none" else evidence.human_model
    human = HumanEvidence(model=human_model, corpus=evidence.human_corpus)
    check_backend(engine)
    spec = WorkerSpec(engine, engine_flags.options(evidence.shallow_depth), settings, start, human, table_mb)
    if plan:
        chosen = workers if workers else None
        counts = sorted({1, 2, *([chosen] if chosen else [])})
        with Progress() as shown:
            found = plan_repertoire(spec, counts, sample=plan_sample, progress=shown)
        typer.echo(repertoire_plan_text(found))
        return
    if out is None:
        raise UsageError("--out DIR is required (or --plan to estimate the cost)")
    count = worker_count_of(workers)
    started = time.perf_counter()
    with Progress() as progress:
        # The tree grows as it is expanded: the total and its ETA are of the nodes known so far.
        progress.start("expanded", "nodes")
        growth, stats = build_repertoire(spec, count, address=address, progress=progress)
    labels = Labels(engine, human)
    report = write_repertoire(growth, stats, labels, out, data=data, formats=formats)
    typer.echo(report.summary())
    typer.echo(
        f"cost: {stats.expanded} nodes expanded ({stats.reused} from the tables) on {stats.workers} worker(s), "
        f"{stats.cpu_seconds / 3600:.3f} core-hours, wall {time.perf_counter() - started:.0f} s"
    )


def worker_count_of(workers: int | None) -> int:
    """--workers: as given (0: no Ray), else this machine's CPUs."""
    if workers is not None and workers < 0:
        raise UsageError(f"invalid --workers {workers}: must be a whole number >= 0")
    return workers_or_cpus(workers)


def repertoire_query(
    sql: Annotated[str | None, typer.Argument(help="SQL over the view repertoire_nodes.")] = None,
    inputs: Annotated[
        list[str] | None, typer.Option("--in", help="A repertoire's output directory or nodes file (repeatable).")
    ] = None,
    saved: Annotated[str | None, typer.Option("--saved", help="Run a saved query by name.")] = None,
    list_saved: ListOpt = False,
    fmt: FormatOpt = "table",
) -> None:
    """Query repertoires' nodes with SQL (DuckDB), or run a saved query."""
    import duckdb

    from pipeline.dataset.queries import QueryError, QueryResult, render
    from pipeline.dataset.sql import query
    from pipeline.repertoire.records import connect_nodes, saved_repertoire_queries

    if list_saved:
        for name, description in saved_repertoire_queries().items():
            typer.echo(f"{name:<40} {description}")
        return
    if (sql is None) == (saved is None):
        raise UsageError("give either SQL or --saved NAME")
    if saved is not None and saved not in saved_repertoire_queries():
        raise QueryError(f"no saved query {saved!r}: `diffimax repertoire-query --list` shows them")
    connection = connect_nodes(inputs or [])
    try:
        cursor = connection.execute(query("repertoire", saved) if saved else sql or "")
        columns = [column[0] for column in cursor.description or []]
        result = QueryResult(columns, cursor.fetchall())
    except duckdb.Error as error:  # bad SQL is the user's: one line
        raise QueryError(f"query failed: {str(error).splitlines()[0]}") from None
    finally:
        connection.close()
    typer.echo(render(result, fmt))
