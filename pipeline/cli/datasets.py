"""`diffimax query`, `verify`, `report`, `puzzles` and `tag`: reading a mined dataset (or a puzzle CSV)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Annotated

import typer

from pipeline.cli.options import (
    AllowPartialOpt,
    DataOpt,
    EngineOpt,
    FilesOpt,
    FormatOpt,
    HumanModelOpt,
    ListOpt,
    NodesOpt,
    OptionalDataOpt,
    UsageError,
    WorkersOpt,
    uci_engine,
)
from search.values import win_drop_of_points


def query(
    sql: Annotated[
        str | None, typer.Argument(help="SQL over the views games, positions, responses, traps, errors, outcomes.")
    ] = None,
    data: OptionalDataOpt = None,
    saved: Annotated[str | None, typer.Option("--saved", help="Run a saved query by name.")] = None,
    list_saved: ListOpt = False,
    fmt: FormatOpt = "table",
    allow_partial: AllowPartialOpt = False,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Touch nothing outside the dataset: no COPY TO, ATTACH, INSTALL."),
    ] = False,
    script: Annotated[
        bool, typer.Option("--script", help="Run every statement of the SQL, showing the last one's result.")
    ] = False,
) -> None:
    """Query a trap dataset with SQL (DuckDB), or run a saved query."""
    from pipeline.dataset.duck import open_dataset
    from pipeline.dataset.queries import QueryOptions, render, render_stream, run_saved, saved_queries, stream_query

    if list_saved:
        for item in saved_queries().values():
            typer.echo(f"{item.name:<26} {item.description}")
        return
    if data is None:
        raise UsageError("--data DIR is required (the output directory of diffimax mine)")
    if (sql is None) == (saved is None):
        raise UsageError("give either SQL or --saved NAME")
    state = open_dataset(data, allow_partial=allow_partial)
    if state.partial:
        typer.echo(f"diffimax: warning: {state.note()}", err=True)
    if saved:
        typer.echo(render(run_saved(state, saved), fmt))
        return
    render_stream([], [], fmt)  # an unknown format is one line before the query runs
    with stream_query(state, sql or "", QueryOptions(read_only=read_only, script=script)) as (columns, batches):
        write_out(render_stream(columns, batches, fmt))


def write_out(pieces: Iterator[str]) -> None:
    """Each piece to stdout as it comes (a large result streams through bounded memory); a reader
    that stops reading (`| head`) ends the command quietly."""
    try:
        for piece in pieces:
            sys.stdout.write(piece)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit


def verify(data: DataOpt) -> None:
    """Check every file of a dataset: its SHA-256 against the manifest, every page checksum, and
    every shard record's counts."""
    from pipeline.dataset.integrity import REPAIR, DamagedDatasetError
    from pipeline.dataset.store import DatasetReader
    from pipeline.dataset.verify import verify_dataset
    from pipeline.mine.counts import count_problems

    found = verify_dataset(data)
    with contextlib.suppress(DamagedDatasetError):  # an unreadable record: verify_dataset named it
        found.problems += count_problems(DatasetReader(data).shard_info())
    for problem in found.problems:
        typer.echo(problem)
    if found.problems:
        raise DamagedDatasetError(f"{data}: {found.summary()}; " + REPAIR.format(path="each damaged shard"))
    typer.echo(found.summary())


def local_out(out: str) -> str:
    """The --out of a report or puzzles: a local directory (a dataset may be on object storage,
    what is written from it is a few files to open here)."""
    from pipeline.common.storage import is_object_url, redact

    if is_object_url(out):
        raise UsageError(f"--out {redact(out)!r}: write to a local directory, and copy it to object storage after")
    return out


def report(
    data: DataOpt,
    out: Annotated[str, typer.Option("--out", help="Output directory; the page is OUT/report.html.")],
    allow_partial: AllowPartialOpt = False,
) -> None:
    """Write a self-contained HTML report (plots, boards, tables) of a trap dataset."""
    from pipeline.dataset.lock import output_lock
    from pipeline.outputs.report import write_report

    with output_lock(local_out(out)):
        typer.echo(f"Report written to {write_report(data, out, allow_partial=allow_partial)}")


def puzzles(
    data: DataOpt,
    out: Annotated[str, typer.Option("--out", help="Directory for puzzles.csv, puzzles.pgn, puzzles.html.")],
    kind: Annotated[
        str, typer.Option("--kind", help="Comma list of punish, set, defend; both (punish,set) or all.")
    ] = "both",
    min_dip: Annotated[float, typer.Option("--min-dip", help="Smallest trap dip, in pawns.")] = 1.0,
    limit: Annotated[int | None, typer.Option("--limit", help="Write at most this many puzzles.")] = None,
    files: FilesOpt = "all",
    engine: EngineOpt = None,
    standard: Annotated[
        str,
        typer.Option(
            "--standard", help="default (margin 15 points of Win%, 500k nodes) or lichess (lichess-puzzler's rules)."
        ),
    ] = "default",
    nodes: NodesOpt = None,
    margin: Annotated[
        float | None,
        typer.Option(
            "--margin",
            help="Points of Lichess's Win% (0-100) the best must beat the second by (default: the standard's).",
        ),
    ] = None,
    workers: WorkersOpt = None,
    human_model: HumanModelOpt = "default",
    per_game: Annotated[
        int,
        typer.Option("--per-game", help="The most puzzles one game gives (the lichess standard keeps one)."),
    ] = 2,  # pipeline.outputs.puzzles.verify.DEFAULT_PER_GAME (not imported here: it starts Ray's import)
) -> None:
    """Engine-verified puzzles from a dataset's traps: Lichess CSV, PGN and an interactive HTML
    puzzle book (--files: csv, pgn, html). --nodes per verification search defaults to the
    standard's; --workers verifying engines on Ray (1: serially, no Ray). One puzzle per moment of
    a game (two within two plies of each other, or ending in one position, are one)."""
    from pipeline.common.progress import Progress
    from pipeline.dataset.lock import output_lock
    from pipeline.outputs.puzzles import PuzzleRequest, generate_puzzles, parse_formats, parse_kind

    with output_lock(local_out(out)), Progress() as progress:
        report = generate_puzzles(
            data,
            out,
            PuzzleRequest(
                kind=parse_kind(kind),
                min_dip=min_dip,
                limit=limit,
                formats=parse_formats(files),
                engine=uci_engine(engine, "puzzles"),
                standard=standard,
                nodes=nodes,
                margin=None if margin is None else win_drop_of_points(margin),
                human_model=None if human_model.lower() == "none" else human_model,
                per_game=per_game,
            ),
            workers=workers,
            progress=progress,
        )
    typer.echo(report.summary())


def tag(
    puzzles_csv: Annotated[str, typer.Argument(metavar="PUZZLES.csv", help="A Lichess puzzle CSV (FEN, Moves, ...).")],
    out: Annotated[
        str, typer.Option("--out", help="The CSV written: every row, plus DiffimaxThemes and DiffimaxRating.")
    ],
    human_model: HumanModelOpt = "default",
) -> None:
    """Our theme tagger and difficulty rating on any Lichess puzzle CSV, beside Lichess's own columns."""
    from pipeline.common.progress import Progress
    from pipeline.outputs.puzzles import tag_csv

    with Progress() as progress:
        model = None if human_model.lower() == "none" else human_model
        report = tag_csv(puzzles_csv, out, human_model=model, progress=progress)
    typer.echo(report.summary())
