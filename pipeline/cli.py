"""The `diffimax` command line: thin typer commands over typed core functions.

A domain error (bad tree, bad FEN, impossible setting, missing engine) becomes one line on
stderr and exit code 1, never a traceback.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import chess
import typer

from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.human.commands import human_app
from pipeline.judges import judge_root, judges_json, judges_text
from pipeline.outputs.explain import explain_text, result_json, san_after, san_namer, san_path
from search.alphabeta import Searcher, minimax_decision
from search.chessgame import board_from_fen
from search.diffimax import DiffiMaxSearch
from search.settings import NATIVE_DEFAULT_DEPTH, UCI_DEFAULT_DEPTH, DiffiMaxSettings, parse_scope
from search.tree import TreeGame, parse_tree, tree_height
from search.ttable import TranspositionTable
from search.values import cp_to_pawns

app = typer.Typer(
    name="diffimax",
    help="Find chess traps with DiffiMax: minimax plus analysis of the opponent's plausible mistakes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

app.add_typer(human_app, name="human")

# The DiffiMax settings, the same flags on every command that searches.
Depth = Annotated[int | None, typer.Option("--depth", help="Search Depth in plies below the root.")]
ScopeOpt = Annotated[str, typer.Option("--scope", help="Opponent Responses: 2, 3, 4, 5 or all.")]
ReasonableDip = Annotated[float, typer.Option("--reasonable-dip", help="Reasonable Player Dip R in pawns.")]
TrapDip = Annotated[float, typer.Option("--trap-dip", help="Trap Dip Threshold T in pawns (T <= R).")]
ExcludeChecks = Annotated[bool, typer.Option("--exclude-checks", help="Ignore checking responses as alternatives.")]
ExcludeCaptures = Annotated[
    bool, typer.Option("--exclude-captures", help="Ignore capturing responses as alternatives.")
]
SafetyMargin = Annotated[
    str,
    typer.Option("--safety-margin", help="Pawns the setter may give up for a trap line, or inf (exhaustive)."),
]
JsonOut = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]

# How to run the engine, the same flags on every command that uses one.
EngineOpt = Annotated[str, typer.Option("--engine", help="native, stockfish, or a UCI engine's path.")]
NodesOpt = Annotated[int | None, typer.Option("--nodes", help="Engine node limit per search.")]
EngineDepthOpt = Annotated[int | None, typer.Option("--engine-depth", help="UCI depth limit per search.")]
MovetimeOpt = Annotated[float | None, typer.Option("--movetime", help="UCI time limit per search (s).")]
ThreadsOpt = Annotated[int | None, typer.Option("--threads", help="UCI Threads per engine.")]
HashOpt = Annotated[int | None, typer.Option("--hash", help="UCI Hash in MiB per engine.")]


class UsageError(ValueError):
    """A command-line value that no setting accepts."""


def build_settings(
    depth: int,
    scope: str,
    reasonable_dip: float,
    trap_dip: float,
    exclude_checks: bool,
    exclude_captures: bool,
    safety_margin: str,
) -> DiffiMaxSettings:
    try:
        margin = float(safety_margin)
    except ValueError:
        raise UsageError(f"invalid safety margin {safety_margin!r}: expected pawns or inf") from None
    return DiffiMaxSettings(
        depth=depth,
        scope=parse_scope(scope),
        reasonable_dip=reasonable_dip,
        trap_dip=trap_dip,
        exclude_checks=exclude_checks,
        exclude_captures=exclude_captures,
        safety_margin=margin,
    )


def emit(data: dict[str, Any] | None, text: str, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(text)


@app.command()
def tree(
    tree_literal: Annotated[str, typer.Argument(metavar="TREE", help="e.g. '((3,12,8),(2,4,6),(14,5,2))'")],
    root: Annotated[str, typer.Option("--root", help="Who moves at the root: max or min.")] = "max",
    algorithm: Annotated[str, typer.Option("--algorithm", help="minimax, alphabeta or diffimax.")] = "diffimax",
    depth: Depth = None,
    scope: ScopeOpt = "all",
    reasonable_dip: ReasonableDip = 2.0,
    trap_dip: TrapDip = 1.0,
    exclude_checks: ExcludeChecks = False,
    exclude_captures: ExcludeCaptures = False,
    safety_margin: SafetyMargin = "0.5",
    as_json: JsonOut = False,
) -> None:
    """Search a nested-tuple game tree (leaves are utilities; moves are child indices)."""
    if root not in ("max", "min"):
        raise UsageError(f"invalid root {root!r}: expected max or min")
    if algorithm not in ("minimax", "alphabeta", "diffimax"):
        raise UsageError(f"invalid algorithm {algorithm!r}: expected minimax, alphabeta or diffimax")
    parsed = parse_tree(tree_literal)
    plies = tree_height(parsed) if depth is None else depth
    settings = build_settings(plies, scope, reasonable_dip, trap_dip, exclude_checks, exclude_captures, safety_margin)
    game = TreeGame(parsed, root_is_max=root == "max")
    data: dict[str, Any]
    if algorithm == "minimax":
        value, best_move, stats = minimax_decision(game, plies)
        data = {
            "value": cp_to_pawns(value),
            "best_move": best_move,
            **stats.as_dict(),
            "root_analysis": None,
            "traps": [],
        }
    elif algorithm == "alphabeta":
        searcher = Searcher(game, ordering="natural")  # the textbook: children left to right
        found = searcher.search(plies)
        data = {
            "value": cp_to_pawns(found.value),
            "best_move": found.best_move,
            **searcher.stats.as_dict(),
            "root_analysis": None,
            "traps": [],
        }
    else:
        result = DiffiMaxSearch(game, settings, tt=TranspositionTable(), exact_root=True).run()
        data = result_json(result)
    data["algorithm"] = algorithm
    if as_json:
        emit(data, "", True)
        return
    if algorithm != "diffimax":
        typer.echo(
            f"value {data['value']:g}, move {data['best_move']}, "
            f"{data['leaves']} leaves, {data['nodes']} nodes, {data['cutoffs']} cutoffs"
        )
        return
    header = [
        f"Tree: {tree_literal.strip()}",
        f"Root: {root.upper()} ({'setter' if root == 'max' else 'responder'})",
    ]
    typer.echo(explain_text(result, header=header, name=str, path_name=".".join))


@app.command()
def explain(
    fen: Annotated[str, typer.Argument(help="The position, as a FEN.")],
    setter: Annotated[
        str | None,
        typer.Option("--setter", help="white or black; default: the player who just moved."),
    ] = None,
    depth: Depth = None,
    scope: ScopeOpt = "all",
    reasonable_dip: ReasonableDip = 2.0,
    trap_dip: TrapDip = 1.0,
    exclude_checks: ExcludeChecks = False,
    exclude_captures: ExcludeCaptures = False,
    safety_margin: SafetyMargin = "0.5",
    engine: EngineOpt = "native",
    nodes: NodesOpt = None,
    engine_depth: EngineDepthOpt = None,
    movetime: MovetimeOpt = None,
    threads: ThreadsOpt = None,
    hash_mb: HashOpt = None,
    shallow_depth: Annotated[
        int,
        typer.Option("--shallow-depth", help="The shallow judge's search: plies (native) or engine depth (UCI)."),
    ] = 1,
    human_freq: Annotated[
        str | None, typer.Option("--human-freq", help="A mined dataset: how often humans played each reply here.")
    ] = None,
    rating: Annotated[
        int | None, typer.Option("--rating", help="With --human-freq: only movers within 100 of this rating.")
    ] = None,
    as_json: JsonOut = False,
) -> None:
    """Explain DiffiMax at one position: ranked responses, trap candidates, dips, a bar chart,
    and the plausibility judges (dip, shallow, human) side by side."""
    board = board_from_fen(fen)
    if setter is None:
        setter_color = not board.turn
    elif setter.lower() in ("white", "black"):
        setter_color = setter.lower() == "white"
    else:
        raise UsageError(f"invalid setter {setter!r}: expected white or black")
    plies = depth if depth is not None else (NATIVE_DEFAULT_DEPTH if engine == "native" else UCI_DEFAULT_DEPTH)
    settings = build_settings(plies, scope, reasonable_dip, trap_dip, exclude_checks, exclude_captures, safety_margin)
    options = EngineOptions(threads=threads, hash_mb=hash_mb, nodes=nodes, depth=engine_depth, movetime=movetime)
    backend = open_backend(engine, options, exact_root=True)
    try:
        result = backend.analyse(board, setter_color, settings)
        described = backend.describe()
    finally:
        backend.close()
    judges = None
    if result.root_analysis is not None:
        judges = judge_root(
            board, setter_color, settings, result.root_analysis, engine=engine, options=options,
            shallow_depth=shallow_depth, human_freq=human_freq, rating=rating,
        )  # fmt: skip
    color = {chess.WHITE: "White", chess.BLACK: "Black"}
    data = result_json(
        result,
        fen=board.fen(),
        side_to_move=color[board.turn].lower(),
        setter=color[setter_color].lower(),
        engine=described,
        judges=judges_json(judges) if judges else None,
    )
    if as_json:
        emit(data, "", True)
        return
    header = [
        f"FEN: {board.fen()}",
        f"Side to move: {color[board.turn]}",
        f"Setter: {color[setter_color]}",
        f"Engine: {described.get('engine') or described.get('name', engine)}",
    ]
    text = explain_text(
        result, header=header, name=san_namer(board), path_name=san_path(board), move_name=san_after(board)
    )
    if judges:
        text += "\n\n" + judges_text(judges, san_namer(board))
    typer.echo(text)


@app.command()
def mine(
    inputs: Annotated[list[str], typer.Argument(metavar="INPUT...", help="PGN files, directories, globs, URLs.")],
    out: Annotated[str, typer.Option("--out", help="Output directory of the Parquet dataset.")],
    depth: Depth = None,
    scope: ScopeOpt = "all",
    reasonable_dip: ReasonableDip = 2.0,
    trap_dip: TrapDip = 1.0,
    exclude_checks: ExcludeChecks = False,
    exclude_captures: ExcludeCaptures = False,
    safety_margin: SafetyMargin = "0.5",
    engine: EngineOpt = "native",
    nodes: NodesOpt = None,
    engine_depth: EngineDepthOpt = None,
    movetime: MovetimeOpt = None,
    threads: ThreadsOpt = None,
    hash_mb: HashOpt = None,
    min_elo: Annotated[int | None, typer.Option("--min-elo", help="Both players rated at least this.")] = None,
    max_elo: Annotated[int | None, typer.Option("--max-elo", help="Both players rated at most this.")] = None,
    time_control: Annotated[
        str | None,
        typer.Option("--time-control", help="Comma list: bullet, blitz, rapid, classical, correspondence."),
    ] = None,
    rated_only: Annotated[bool, typer.Option("--rated-only/--any-rated", help="Rated games only.")] = False,
    plies: Annotated[str | None, typer.Option("--plies", help="Ply window FROM-TO of analysed positions.")] = None,
    sample: Annotated[float, typer.Option("--sample", help="Fraction of games to keep (seeded).")] = 1.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --sample.")] = 0,
    max_games: Annotated[int | None, typer.Option("--max-games", help="Stop after this many games read.")] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Analysis workers (default: all CPUs).")] = None,
    address: Annotated[str | None, typer.Option("--address", help="An existing Ray cluster's address.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue a run: skip committed shards.")] = False,
    setter_choices: Annotated[
        bool,
        typer.Option("--setter-choices", help="Also record which moves of the side to move would set a trap."),
    ] = False,
    shard_games: Annotated[int, typer.Option("--shard-games", help="Games per shard of a compressed stream.")] = 500,
    shard_mb: Annotated[float, typer.Option("--shard-mb", help="MiB per shard of an uncompressed file.")] = 16.0,
) -> None:
    """Mine PGN databases for traps: DiffiMax at every selected position on Ray, Parquet out."""
    from pipeline.ingest.games import GameFilter
    from pipeline.mine.driver import MineConfig, run

    plies_from, plies_to = parse_plies(plies)
    plies_default = NATIVE_DEFAULT_DEPTH if engine == "native" else UCI_DEFAULT_DEPTH
    settings = build_settings(
        depth if depth is not None else plies_default,
        scope, reasonable_dip, trap_dip, exclude_checks, exclude_captures, safety_margin,
    )  # fmt: skip
    game_filter = GameFilter(
        min_elo=min_elo,
        max_elo=max_elo,
        time_controls=frozenset(t.strip().lower() for t in time_control.split(",")) if time_control else None,
        rated_only=rated_only,
        standard_only=True,  # the engines play standard chess (From Position games included)
        ply_from=plies_from,
        ply_to=plies_to,
        sample_rate=sample,
        seed=seed,
    )
    config = MineConfig(
        inputs=tuple(inputs),
        out=out,
        settings=settings,
        engine=engine,
        engine_options=EngineOptions(
            threads=threads, hash_mb=hash_mb, nodes=nodes, depth=engine_depth, movetime=movetime
        ),
        game_filter=game_filter,
        max_games=max_games,
        workers=workers,
        address=address,
        resume=resume,
        setter_choices=setter_choices,
        shard_games=shard_games,
        shard_bytes=max(1, int(shard_mb * (1 << 20))),
    )
    manifest = run(config)
    typer.echo(summary_text(manifest, out))


@app.command()
def query(
    sql: Annotated[
        str | None, typer.Argument(help="SQL over the views games, positions, responses, traps, errors, outcomes.")
    ] = None,
    data: Annotated[str | None, typer.Option("--data", help="The dataset directory (diffimax mine --out).")] = None,
    saved: Annotated[str | None, typer.Option("--saved", help="Run a saved query by name.")] = None,
    list_saved: Annotated[bool, typer.Option("--list", help="List the saved queries.")] = False,
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
) -> None:
    """Query a trap dataset with SQL (DuckDB), or run a saved query."""
    from pipeline.dataset.queries import render, run_query, run_saved, saved_queries

    if list_saved:
        for item in saved_queries().values():
            typer.echo(f"{item.name:<26} {item.description}")
        return
    if data is None:
        raise UsageError("--data DIR is required (the output directory of diffimax mine)")
    if (sql is None) == (saved is None):
        raise UsageError("give either SQL or --saved NAME")
    result = run_saved(data, saved) if saved else run_query(data, sql or "")
    typer.echo(render(result, fmt))


@app.command()
def report(
    data: Annotated[str, typer.Option("--data", help="The dataset directory (diffimax mine --out).")],
    out: Annotated[str, typer.Option("--out", help="Output directory; the page is OUT/report.html.")],
) -> None:
    """Write a self-contained HTML report (plots, boards, tables) of a trap dataset."""
    from pipeline.outputs.report import write_report

    typer.echo(f"Report written to {write_report(data, out)}")


@app.command()
def puzzles(
    data: Annotated[str, typer.Option("--data", help="The dataset directory (diffimax mine --out).")],
    out: Annotated[str, typer.Option("--out", help="Directory for puzzles.csv, puzzles.pgn, puzzles.html.")],
    kind: Annotated[str, typer.Option("--kind", help="punish, set or both.")] = "both",
    min_dip: Annotated[float, typer.Option("--min-dip", help="Smallest trap dip, in pawns.")] = 1.0,
    limit: Annotated[int | None, typer.Option("--limit", help="Write at most this many puzzles.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Comma list: csv, pgn, html.")] = "csv,pgn,html",
    engine: Annotated[str, typer.Option("--engine", help="stockfish, or a UCI engine's path.")] = "stockfish",
    nodes: Annotated[int, typer.Option("--nodes", help="Engine nodes per verification search.")] = 500_000,
    margin: Annotated[
        float, typer.Option("--margin", help="Win chances (-1..1) the best move must beat the second best by.")
    ] = 0.3,
) -> None:
    """Engine-verified puzzles from a dataset's traps: Lichess CSV, PGN and an HTML puzzle book."""
    from pipeline.outputs.puzzles import generate_puzzles, parse_formats, parse_kind

    report = generate_puzzles(
        data, out, kind=parse_kind(kind), min_dip=min_dip, limit=limit, formats=parse_formats(fmt),
        engine=engine, nodes=nodes, margin=margin,
    )  # fmt: skip
    typer.echo(report.summary())


def parse_plies(text: str | None) -> tuple[int, int | None]:
    """`10-40` -> (10, 40); `10-` -> (10, None); `12` -> (12, 12)."""
    if text is None:
        return 0, None
    low, dash, high = text.partition("-")
    try:
        start = int(low) if low.strip() else 0
        end = (int(high) if high.strip() else None) if dash else start
    except ValueError:
        raise UsageError(f"invalid --plies {text!r}: expected FROM-TO, e.g. 10-40") from None
    if start < 0 or (end is not None and end < start):
        raise UsageError(f"invalid --plies {text!r}: need 0 <= FROM <= TO")
    return start, end


def summary_text(manifest: dict[str, Any], out: str) -> str:
    m = manifest
    return "\n".join([
        f"Dataset written to {out} (manifest: {out}/manifest.json)",
        f"games: {m['games_read']:,} read = {m['games_written']:,} mined + {m['games_filtered']:,} filtered "
        f"+ {m['games_error']:,} with errors",
        f"positions: {m['positions']:,} ({m['positions_analysed']:,} analysed, {m['positions_reused']:,} reused "
        f"from repeats, {m['positions_error']:,} failed)",
        f"trap records: {m['traps']:,}; engine: {m['engine'].get('engine') or m['engine'].get('name', '?')}; "
        f"workers: {m['workers']}; "
        f"{m['wall_seconds']:.1f} s",
        f"query it: diffimax query --data {out} \"select * from traps limit 10\"",
    ])  # fmt: skip


def main() -> None:
    """Console entry point: domain errors become one line on stderr and exit code 1."""
    try:
        app(standalone_mode=False)
    except (ValueError, RuntimeError, OSError) as error:
        typer.echo(f"diffimax: error: {error}", err=True)
        sys.exit(1)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        typer.echo("diffimax: aborted", err=True)
        sys.exit(130)
    except Exception as error:
        # Usage errors from the command-line parser (typer vendors click, so match by shape).
        format_message = getattr(error, "format_message", None)
        if format_message is None:
            raise
        prefix = "" if type(error).__name__.startswith("NoArgsIsHelp") else "diffimax: error: "
        typer.echo(f"{prefix}{format_message()}", err=True)
        sys.exit(getattr(error, "exit_code", 2))


if __name__ == "__main__":
    main()
