"""The `diffimax` command line: thin typer commands over typed core functions.

A domain error (bad tree, bad FEN, impossible setting, missing engine) becomes one line on
stderr and exit code 1, never a traceback.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import sys
import traceback
import typing
from collections.abc import Callable
from typing import Annotated, Any

import chess
import typer

from pipeline.engines.backends import EngineOptions, default_engine, open_backend
from pipeline.human.commands import human_app
from pipeline.human.context import MoverContext, parse_pool
from pipeline.ingest.sources import MAX_GAME_BYTES, URL_TIMEOUT
from pipeline.mine.config import MineConfig
from pipeline.mine.plan import SAMPLE_GAMES, SAMPLE_POSITIONS
from pipeline.mine.table import DEFAULT_TABLE_MB
from pipeline.outputs.explain import (
    explain_text,
    judgement_json,
    judges_text,
    result_json,
    san_after,
    san_namer,
    san_path,
)
from search.alphabeta import Searcher, minimax_decision
from search.chessgame import board_from_fen
from search.diffimax import DiffiMaxSearch
from search.errors import DiffimaxError
from search.judges import JUDGES, Judge, JudgeSettings, parse_judges
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
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="stockfish (the default where installed), native (the embedded engine), or a UCI engine's path.",
    ),
]
NodesOpt = Annotated[int | None, typer.Option("--nodes", help="Engine node limit per search.")]
EngineDepthOpt = Annotated[int | None, typer.Option("--engine-depth", help="UCI depth limit per search.")]
MovetimeOpt = Annotated[float | None, typer.Option("--movetime", help="UCI time limit per search (s).")]
ThreadsOpt = Annotated[int | None, typer.Option("--threads", help="UCI Threads per engine.")]
HashOpt = Annotated[int | None, typer.Option("--hash", help="UCI Hash in MiB per engine.")]


# The trap judges, the same flags on explain and mine.
JudgesOpt = Annotated[
    str | None,
    typer.Option("--judges", help="Comma list of dip, trappy, human, model, practical, or all (default: see --help)."),
]
HumanModelOpt = Annotated[
    str,
    typer.Option("--human-model", help="Human-move model file, 'default' (the bundled one) or 'none'."),
]
HumanCorpusOpt = Annotated[
    str | None,
    typer.Option("--human-corpus", help="A mined dataset or corpus file: what humans played where (human judge)."),
]
ShallowDepthOpt = Annotated[
    int | None,
    typer.Option("--shallow-depth", help="The shallow pass (trappy judge): plies (native) or engine depth (UCI)."),
]
TrappyKOpt = Annotated[int, typer.Option("--trappy-k", help="Trappy judge: among the shallow search's k best.")]
ModelPOpt = Annotated[float, typer.Option("--model-p", help="Model judge: smallest probability of a candidate.")]
PracticalPOpt = Annotated[
    float, typer.Option("--practical-p", help="Practical judge: smallest human probability of a candidate.")
]
PracticalDropOpt = Annotated[
    float, typer.Option("--practical-drop", help="Practical judge: smallest loss of win chances (-1..1 scale).")
]
PracticalShallowKOpt = Annotated[
    int, typer.Option("--practical-shallow-k", help="Practical judge: the shallow pass's k best need less evidence.")
]
PracticalShallowPOpt = Annotated[
    float, typer.Option("--practical-shallow-p", help="Practical judge: human probability enough for those.")
]
CorpusShareOpt = Annotated[float, typer.Option("--corpus-share", help="Human judge: smallest share of games.")]
CorpusGamesOpt = Annotated[
    int, typer.Option("--corpus-min-games", help="Human judge: fewest corpus games for a verdict.")
]


AllowPartialOpt = Annotated[
    bool,
    typer.Option(
        "--allow-partial",
        help="Read a dataset with missing or damaged shards, or an unfinished one: says what is left out.",
    ),
]


def build_judges(
    judges: str | None,
    default: frozenset[Judge],
    trappy_k: int,
    model_p: float,
    practical_p: float,
    practical_drop: float,
    corpus_share: float,
    corpus_min_games: int,
    practical_shallow_k: int,
    practical_shallow_p: float,
) -> JudgeSettings:
    return JudgeSettings(
        judges=default if judges is None else parse_judges(judges),
        trappy_k=trappy_k,
        model_p=model_p,
        practical_p=practical_p,
        practical_drop=practical_drop,
        practical_shallow_k=practical_shallow_k,
        practical_shallow_p=practical_shallow_p,
        corpus_share=corpus_share,
        corpus_min_games=corpus_min_games,
    )


class UsageError(DiffimaxError, ValueError):
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
    engine: EngineOpt = None,
    nodes: NodesOpt = None,
    engine_depth: EngineDepthOpt = None,
    movetime: MovetimeOpt = None,
    threads: ThreadsOpt = None,
    hash_mb: HashOpt = None,
    shallow_depth: ShallowDepthOpt = None,
    judges: JudgesOpt = None,
    human_model: HumanModelOpt = "default",
    human_corpus: HumanCorpusOpt = None,
    rating: Annotated[int | None, typer.Option("--rating", help="The responder's rating (human evidence).")] = None,
    clock: Annotated[
        float | None, typer.Option("--clock", help="The responder's clock in seconds (human evidence).")
    ] = None,
    pool: Annotated[
        str, typer.Option("--pool", help="The rating's pool: lichess, chesscom, or auto (unknown).")
    ] = "auto",
    trappy_k: TrappyKOpt = JudgeSettings.trappy_k,
    model_p: ModelPOpt = JudgeSettings.model_p,
    practical_p: PracticalPOpt = JudgeSettings.practical_p,
    practical_drop: PracticalDropOpt = JudgeSettings.practical_drop,
    practical_shallow_k: PracticalShallowKOpt = JudgeSettings.practical_shallow_k,
    practical_shallow_p: PracticalShallowPOpt = JudgeSettings.practical_shallow_p,
    corpus_share: CorpusShareOpt = JudgeSettings.corpus_share,
    corpus_min_games: CorpusGamesOpt = JudgeSettings.corpus_min_games,
    as_json: JsonOut = False,
) -> None:
    """Explain DiffiMax at one position: ranked responses, trap candidates, dips, a bar chart,
    and every trap judge (dip, trappy, human, model, practical) side by side with its evidence."""
    from pipeline.human.corpus import Corpus
    from pipeline.judging import judge_position, load_model

    board = board_from_fen(fen)
    mover_pool = parse_pool(pool)
    if setter is None:
        setter_color = not board.turn
    elif setter.lower() in ("white", "black"):
        setter_color = setter.lower() == "white"
    else:
        raise UsageError(f"invalid setter {setter!r}: expected white or black")
    engine = engine or default_engine()
    plies = depth if depth is not None else (NATIVE_DEFAULT_DEPTH if engine == "native" else UCI_DEFAULT_DEPTH)
    settings = build_settings(plies, scope, reasonable_dip, trap_dip, exclude_checks, exclude_captures, safety_margin)
    judge_settings = build_judges(
        judges,
        frozenset(JUDGES),
        trappy_k,
        model_p,
        practical_p,
        practical_drop,
        corpus_share,
        corpus_min_games,
        practical_shallow_k,
        practical_shallow_p,
    )
    options = EngineOptions(threads=threads, hash_mb=hash_mb, nodes=nodes, depth=engine_depth, movetime=movetime,
                            shallow_depth=shallow_depth)  # fmt: skip
    model = load_model(human_model)
    corpus = Corpus.load(human_corpus) if human_corpus else None
    backend = open_backend(engine, options, exact_root=True)
    judgement = None
    try:
        if board.turn != setter_color and board.legal_moves.count():
            seed_settings = dataclasses.replace(judge_settings, judges=judge_settings.judges | {"dip"})
            judgement = judge_position(
                backend, board, setter_color, settings, seed_settings, model=model, corpus=corpus,
                context=MoverContext(rating=rating, clock_seconds=clock, pool=mover_pool),
            )  # fmt: skip
            result = judgement.seed
            assert result is not None
        else:  # a setter root or a finished game: the seed's search alone
            result = backend.analyse(board, setter_color, settings)
        described = backend.describe()
    finally:
        backend.close()
        if model is not None:
            model.close()
    color = {chess.WHITE: "White", chess.BLACK: "Black"}
    data = result_json(
        result,
        fen=board.fen(),
        side_to_move=color[board.turn].lower(),
        setter=color[setter_color].lower(),
        engine=described,
        judges=judgement_json(judgement, judge_settings) if judgement else None,
    )
    if as_json:
        emit(data, "", True)
        return
    header = [
        f"FEN: {board.fen()}",
        f"Side to move: {color[board.turn]}",
        f"Setter: {color[setter_color]}",
        f"Engine: {engine_label(described, engine)}",
    ]
    text = explain_text(
        result, header=header, name=san_namer(board), path_name=san_path(board), move_name=san_after(board)
    )
    if judgement:
        text += "\n\n" + judges_text(judgement, judge_settings, san_namer(board))
    typer.echo(text)


def mine_config(
    out: str,
    resume: bool,
    /,
    inputs: Annotated[list[str], typer.Argument(metavar="INPUT...", help="PGN files, directories, globs, URLs.")],
    depth: Depth = None,
    scope: ScopeOpt = "all",
    reasonable_dip: ReasonableDip = 2.0,
    trap_dip: TrapDip = 1.0,
    exclude_checks: ExcludeChecks = False,
    exclude_captures: ExcludeCaptures = False,
    safety_margin: SafetyMargin = "0.5",
    engine: EngineOpt = None,
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
    setter_choices: Annotated[
        bool,
        typer.Option("--setter-choices", help="Also record which moves of the side to move would set a trap."),
    ] = False,
    shard_games: Annotated[int, typer.Option("--shard-games", help="Games per shard of a compressed stream.")] = 500,
    shard_mb: Annotated[float, typer.Option("--shard-mb", help="MiB per shard of an uncompressed file.")] = 16.0,
    max_game_mb: Annotated[
        float,
        typer.Option("--max-game-mb", help="Largest game (headers and movetext); a larger one is an error row."),
    ] = MAX_GAME_BYTES / (1 << 20),
    url_timeout: Annotated[
        float,
        typer.Option("--url-timeout", help="Seconds a URL may send nothing before it is resumed (HTTP Range)."),
    ] = URL_TIMEOUT,
    table_mb: Annotated[
        float,
        typer.Option("--table-mb", help="MiB of each worker's table of engine answers (repeats reuse them; 0: none)."),
    ] = DEFAULT_TABLE_MB,
    pool: Annotated[
        str,
        typer.Option("--pool", help="The games' rating pool: lichess, chesscom, or auto (each game's Site/Link)."),
    ] = "auto",
    shallow_depth: ShallowDepthOpt = None,
    judges: JudgesOpt = None,
    human_model: HumanModelOpt = "default",
    human_corpus: HumanCorpusOpt = None,
    trappy_k: TrappyKOpt = JudgeSettings.trappy_k,
    model_p: ModelPOpt = JudgeSettings.model_p,
    practical_p: PracticalPOpt = JudgeSettings.practical_p,
    practical_drop: PracticalDropOpt = JudgeSettings.practical_drop,
    practical_shallow_k: PracticalShallowKOpt = JudgeSettings.practical_shallow_k,
    practical_shallow_p: PracticalShallowPOpt = JudgeSettings.practical_shallow_p,
    corpus_share: CorpusShareOpt = JudgeSettings.corpus_share,
    corpus_min_games: CorpusGamesOpt = JudgeSettings.corpus_min_games,
) -> MineConfig:
    """The mining job the flags describe: `mine` runs it, `plan` estimates it. The flags after
    the two positional-only parameters are what `job_command` gives both commands."""
    from pipeline.ingest.games import GameFilter
    from pipeline.mine.config import shard_bytes_of
    from pipeline.mine.work import HumanEvidence

    plies_from, plies_to = parse_plies(plies)
    engine = engine or default_engine()
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
    return MineConfig(
        inputs=tuple(inputs),
        out=out,
        settings=settings,
        judges=build_judges(
            judges,
            JudgeSettings.judges,
            trappy_k,
            model_p,
            practical_p,
            practical_drop,
            corpus_share,
            corpus_min_games,
            practical_shallow_k,
            practical_shallow_p,
        ),
        human=HumanEvidence(model=None if human_model.lower() == "none" else human_model, corpus=human_corpus),
        engine=engine,
        engine_options=EngineOptions(
            threads=threads,
            hash_mb=hash_mb,
            nodes=nodes,
            depth=engine_depth,
            movetime=movetime,
            shallow_depth=shallow_depth,
        ),
        game_filter=game_filter,
        max_games=max_games,
        workers=workers,
        address=address,
        resume=resume,
        setter_choices=setter_choices,
        shard_games=shard_games,
        shard_bytes=shard_bytes_of(shard_mb),
        max_game_bytes=shard_bytes_of(max_game_mb, "--max-game-mb"),
        url_timeout=url_timeout,
        table_mb=table_mb,
        pool=parse_pool(pool),
    )


# A job's MineConfig from its output directory and --resume (the rest of the flags already bound).
JobConfig = Callable[[str, bool], MineConfig]
# The job's flags: `mine_config`'s parameters after `out` and `resume` (positional-only).
JOB_FLAGS = [
    parameter
    for parameter in inspect.signature(mine_config, eval_str=True).parameters.values()
    if parameter.kind is not inspect.Parameter.POSITIONAL_ONLY
]


def job_command(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command` the job's flags (one list, `mine_config`'s): typer sees INPUT..., then the
    command's own options, then the job's options; the command receives `job`, which builds the
    MineConfig from the flags given, and its own options."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "job"]
    keyword = inspect.Parameter.KEYWORD_ONLY  # so that options without a default may follow ones with
    flags = [p.replace(kind=keyword) for p in JOB_FLAGS]
    shown = [flags[0], *(p.replace(kind=keyword) for p in own), *flags[1:]]
    names = {p.name for p in JOB_FLAGS}

    @functools.wraps(command)
    def with_job(**values: Any) -> None:
        bound = {name: values.pop(name) for name in names}
        command(job=functools.partial(mine_config, **bound), **values)

    hints = typing.get_type_hints(command, include_extras=True)
    with_job.__signature__ = inspect.Signature(shown, return_annotation=None)  # type: ignore[attr-defined]
    with_job.__annotations__ = {p.name: p.annotation for p in shown}
    with_job.__annotations__["return"] = hints.get("return")
    return with_job


@app.command()
@job_command
def mine(
    job: JobConfig,
    out: Annotated[str, typer.Option("--out", help="Output directory of the Parquet dataset.")],
    resume: Annotated[bool, typer.Option("--resume", help="Continue a run: skip committed shards.")] = False,
    repair: Annotated[
        bool, typer.Option("--repair", help="With --resume: remove damaged shards and mine them again.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="Show Ray's own log lines too.")] = False,
) -> None:
    """Mine PGN databases for traps: DiffiMax at every selected position on Ray, Parquet out."""
    from pipeline.mine.driver import run

    if repair and not resume:
        raise UsageError("--repair continues a run: give it with --resume")
    manifest = run(job(out, resume), verbose=verbose, repair=repair)
    typer.echo(summary_text(manifest, out))


@app.command()
@job_command
def plan(
    job: JobConfig,
    sample_games: Annotated[
        int, typer.Option("--sample-games", help="Games of the input read through the filters (seeded blocks).")
    ] = SAMPLE_GAMES,
    sample_positions: Annotated[
        int, typer.Option("--sample-positions", help="Positions judged to time the analysis on this machine.")
    ] = SAMPLE_POSITIONS,
    assume_games: Annotated[
        int | None,
        typer.Option("--assume-games", help="Plan for this many games read, shaped like the inputs' (a stand-in)."),
    ] = None,
    plan_seed: Annotated[int, typer.Option("--plan-seed", help="Seed of the game and position samples.")] = 0,
    as_json: JsonOut = False,
) -> None:
    """Estimate a mining job before running it: games and positions after the filters, distinct
    positions after reuse, engine core-hours and wall time for --workers, from samples of its input
    read and judged here with its engine and settings (`diffimax mine`'s flags)."""
    from pipeline.mine.plan import plan as plan_job
    from pipeline.mine.plan import plan_text

    # Planning writes nothing: the output directory only completes the job's description.
    config = job("(planned, not written)", False)
    echo = None if as_json else (lambda line: typer.echo(line, err=True))
    planned = plan_job(config, sample_games=sample_games, sample_positions=sample_positions,
                       assume_games=assume_games, seed=plan_seed, echo=echo)  # fmt: skip
    emit(planned.describe(), plan_text(planned), as_json)


@app.command()
def query(
    sql: Annotated[
        str | None, typer.Argument(help="SQL over the views games, positions, responses, traps, errors, outcomes.")
    ] = None,
    data: Annotated[str | None, typer.Option("--data", help="The dataset directory (diffimax mine --out).")] = None,
    saved: Annotated[str | None, typer.Option("--saved", help="Run a saved query by name.")] = None,
    list_saved: Annotated[bool, typer.Option("--list", help="List the saved queries.")] = False,
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    allow_partial: AllowPartialOpt = False,
) -> None:
    """Query a trap dataset with SQL (DuckDB), or run a saved query."""
    from pipeline.dataset.duck import open_dataset
    from pipeline.dataset.queries import render, run_query, run_saved, saved_queries

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
    result = run_saved(state, saved) if saved else run_query(state, sql or "")
    typer.echo(render(result, fmt))


@app.command()
def verify(
    data: Annotated[str, typer.Argument(help="The dataset directory (diffimax mine --out).")],
) -> None:
    """Check every file of a dataset: its SHA-256 against the manifest, and every page checksum."""
    from pipeline.dataset.integrity import REPAIR, DamagedDatasetError, verify_dataset

    found = verify_dataset(data)
    for problem in found.problems:
        typer.echo(problem)
    if found.problems:
        raise DamagedDatasetError(f"{data}: {found.summary()}; " + REPAIR.format(path="each damaged shard"))
    typer.echo(found.summary())


@app.command()
def report(
    data: Annotated[str, typer.Option("--data", help="The dataset directory (diffimax mine --out).")],
    out: Annotated[str, typer.Option("--out", help="Output directory; the page is OUT/report.html.")],
    allow_partial: AllowPartialOpt = False,
) -> None:
    """Write a self-contained HTML report (plots, boards, tables) of a trap dataset."""
    from pipeline.dataset.lock import output_lock
    from pipeline.outputs.report import write_report

    with output_lock(out):
        typer.echo(f"Report written to {write_report(data, out, allow_partial=allow_partial)}")


@app.command()
def puzzles(
    data: Annotated[str, typer.Option("--data", help="The dataset directory (diffimax mine --out).")],
    out: Annotated[str, typer.Option("--out", help="Directory for puzzles.csv, puzzles.pgn, puzzles.html.")],
    kind: Annotated[str, typer.Option("--kind", help="punish, set or both.")] = "both",
    min_dip: Annotated[float, typer.Option("--min-dip", help="Smallest trap dip, in pawns.")] = 1.0,
    limit: Annotated[int | None, typer.Option("--limit", help="Write at most this many puzzles.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Comma list: csv, pgn, html.")] = "csv,pgn,html",
    engine: Annotated[str, typer.Option("--engine", help="stockfish, or a UCI engine's path.")] = "stockfish",
    standard: Annotated[
        str, typer.Option("--standard", help="default (margin 0.3, 500k nodes) or lichess (lichess-puzzler's rules).")
    ] = "default",
    nodes: Annotated[
        int | None, typer.Option("--nodes", help="Engine nodes per verification search (default: the standard's).")
    ] = None,
    margin: Annotated[
        float | None,
        typer.Option(
            "--margin", help="Win chances (-1..1) the best must beat the second by (default: the standard's)."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="Verifying engines, on Ray (default: all CPUs; 1: serially, no Ray)."),
    ] = None,
    human_model: HumanModelOpt = "default",
) -> None:
    """Engine-verified puzzles from a dataset's traps: Lichess CSV, PGN and an interactive HTML puzzle book."""
    from pipeline.dataset.lock import output_lock
    from pipeline.outputs.puzzles import generate_puzzles, parse_formats, parse_kind

    with output_lock(out):
        report = generate_puzzles(
            data, out, kind=parse_kind(kind), min_dip=min_dip, limit=limit, formats=parse_formats(fmt),
            engine=engine, standard=standard, nodes=nodes, margin=margin, workers=workers,
            human_model=None if human_model.lower() == "none" else human_model,
        )  # fmt: skip
    typer.echo(report.summary())


@app.command()
def tag(
    puzzles_csv: Annotated[str, typer.Argument(metavar="PUZZLES.csv", help="A Lichess puzzle CSV (FEN, Moves, ...).")],
    out: Annotated[
        str, typer.Option("--out", help="The CSV written: every row, plus DiffimaxThemes and DiffimaxRating.")
    ],
    human_model: HumanModelOpt = "default",
) -> None:
    """Our theme tagger and difficulty rating on any Lichess puzzle CSV, beside Lichess's own columns."""
    from pipeline.outputs.puzzles import tag_csv

    report = tag_csv(puzzles_csv, out, human_model=None if human_model.lower() == "none" else human_model)
    typer.echo(report.summary())


@app.command()
def evaluate(
    inputs: Annotated[list[str], typer.Argument(metavar="PGN...", help="Games to draw positions from.")],
    split: Annotated[
        str, typer.Option("--split", help="Which games of the shared files: held_out, tune or train (others: train).")
    ] = "held_out",
    positions: Annotated[int, typer.Option("--positions", help="Positions to sample (at most 2 per game).")] = 300,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the position sample.")] = 7,
    known_traps: Annotated[
        str, typer.Option("--known-traps", help="A known-traps PGN, 'default' (the bundled set) or 'none'.")
    ] = "default",
    trap_rating: Annotated[
        int, typer.Option("--trap-rating", help="The rating a known trap's victim is given (0: none).")
    ] = 1200,
    engine: EngineOpt = None,
    nodes: NodesOpt = None,
    engine_depth: EngineDepthOpt = None,
    threads: ThreadsOpt = None,
    hash_mb: HashOpt = None,
    depth: Depth = None,
    shallow_depths: Annotated[
        str, typer.Option("--shallow-depths", help="Depths of the shallow pass to measure the trappy judge at.")
    ] = "1,2,4,8",
    human_model: HumanModelOpt = "default",
    human_corpus: HumanCorpusOpt = None,
    workers: Annotated[int, typer.Option("--workers", help="Parallel workers (Ray).")] = 2,
    save: Annotated[str | None, typer.Option("--save", help="Write the gathered evidence to this file.")] = None,
    load: Annotated[str | None, typer.Option("--load", help="Measure saved evidence instead of gathering it.")] = None,
    as_json: JsonOut = False,
) -> None:
    """The judge harness: trap-node share, candidates, fall rate and lift over chance, and recall on
    known traps, for every trap judge on held-out games (docs/judges.md)."""
    from pipeline.evaluate import harness
    from pipeline.evaluate.known_traps import load_known_traps

    engine = engine or default_engine()
    settings = DiffiMaxSettings(depth=depth if depth is not None else (NATIVE_DEFAULT_DEPTH if engine == "native"
                                                                       else UCI_DEFAULT_DEPTH))  # fmt: skip
    base = JudgeSettings()
    depths = [int(token) for token in shallow_depths.split(",") if token.strip()]
    if load:
        records, about = harness.load_records(load)
    else:
        if split not in ("held_out", "tune", "train"):
            raise UsageError(f"invalid --split {split!r}: expected held_out, tune or train")
        options = EngineOptions(threads=threads, hash_mb=hash_mb, nodes=nodes, depth=engine_depth)
        samples = harness.game_samples(inputs, split, positions, seed=seed)  # type: ignore[arg-type]
        if known_traps != "none":
            samples += harness.trap_samples(
                None if known_traps == "default" else load_known_traps(known_traps), trap_rating or None
            )
        done = [0]

        def tell(count: int) -> None:
            done[0] += count
            typer.echo(f"evaluate: {done[0]}/{len(samples)} positions gathered", err=True)

        records = harness.gather_parallel(
            samples, engine, options, settings, base, model=None if human_model == "none" else human_model,
            corpus=human_corpus, workers=workers, shallow_depths=depths, on_batch=tell,
        )  # fmt: skip
        about = {"inputs": list(inputs), "split": split, "positions": positions, "seed": seed, "engine": engine,
                 "nodes": nodes, "depth": settings.depth, "human_model": human_model,
                 "human_corpus": human_corpus, "trap_rating": trap_rating or None}  # fmt: skip
        if save:
            harness.save_records(records, save, about)
    games = [r for r in records if r.source != "known_traps"]
    traps = [r for r in records if r.source == "known_traps"]
    rows = harness.evaluate_records(games, traps, settings, base, depths)
    if as_json:
        emit({"about": about, "variants": rows}, "", True)
    else:
        typer.echo(harness.table(rows))


@app.command()
def prototype(
    trees: Annotated[int, typer.Option("--trees", help="How many seeded random trees to compare on.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the trees (tree i depends on seed and i only).")] = 0,
    depth: Annotated[int, typer.Option("--depth", help="Plies from the root to every leaf.")] = 4,
    branching: Annotated[
        str, typer.Option("--branching", help="Children per internal node, MIN-MAX (uniform) or one number.")
    ] = "6-14",
    values: Annotated[str, typer.Option("--values", help="Leaf values: walk (random walk) or uniform.")] = "walk",
    step: Annotated[float, typer.Option("--step", help="Walk: sd of one ply's change, in pawns.")] = 1.0,
    value_limit: Annotated[float, typer.Option("--value-limit", help="Values clipped to +-this many pawns.")] = 10.0,
    root: Annotated[str, typer.Option("--root", help="Who moves at the root: max (setter) or min.")] = "max",
    draw_thresh: Annotated[float, typer.Option("--draw-thresh", help="Prototype drawThresh in pawns.")] = 1.25,
    win_thresh: Annotated[float, typer.Option("--win-thresh", help="Prototype winThresh in pawns.")] = 2.0,
    min_children: Annotated[
        int, typer.Option("--min-children", help="Prototype: opponent nodes need at least this many children.")
    ] = 10,
    draw_rule: Annotated[
        str, typer.Option("--draw-rule", help="band: |v1| <= drawThresh; ceiling: v1 <= drawThresh.")
    ] = "band",
    scopes: Annotated[
        str, typer.Option("--scopes", help="Revised DiffiMax scopes to compare with, comma list of 2-5, all.")
    ] = "all,2",
    reasonable_dip: ReasonableDip = 2.0,
    trap_dip: TrapDip = 1.0,
    safety_margin: SafetyMargin = "inf",
    traps: Annotated[bool, typer.Option("--traps", help="With --json: list each tree's prototype traps.")] = False,
    as_json: JsonOut = False,
) -> None:
    """Seed 000's first DiffiMax prototype on seeded random trees, compared with the revised DiffiMax."""
    from search.prototype import PrototypeSettings, compare, comparison_json, comparison_text, revised_settings

    low, dash, high = branching.partition("-")
    try:
        min_branching = int(low)
        max_branching = int(high) if dash else min_branching
    except ValueError:
        raise UsageError(f"invalid --branching {branching!r}: expected MIN-MAX, e.g. 6-14") from None
    try:
        margin = float(safety_margin)
    except ValueError:
        raise UsageError(f"invalid safety margin {safety_margin!r}: expected pawns or inf") from None
    settings = PrototypeSettings(
        draw_thresh=draw_thresh,
        win_thresh=win_thresh,
        min_children=min_children,
        draw_rule=draw_rule,  # type: ignore[arg-type]  # validated by PrototypeSettings
        depth=depth,
        min_branching=min_branching,
        max_branching=max_branching,
        values=values,  # type: ignore[arg-type]
        step=step,
        value_limit=value_limit,
        root=root,  # type: ignore[arg-type]
        seed=seed,
    )
    revised = revised_settings(
        settings,
        [parse_scope(token) for token in scopes.split(",")],
        reasonable_dip=reasonable_dip,
        trap_dip=trap_dip,
        safety_margin=margin,
    )
    comparison = compare(settings, revised, trees)
    if as_json:
        emit(comparison_json(comparison, traps=traps), "", True)
    else:
        typer.echo(comparison_text(comparison))


@app.command()
def play(
    style: Annotated[str | None, typer.Option("--style", help="trap, tutor or best (UCI option Style).")] = None,
    engine: Annotated[
        str | None, typer.Option("--engine", help="stockfish, native, material or a UCI engine's path (Engine).")
    ] = None,
    nodes: Annotated[int | None, typer.Option("--nodes", help="Engine nodes per line; 0: backend default.")] = None,
    engine_depth: Annotated[int | None, typer.Option("--engine-depth", help="Engine depth per line; 0: none.")] = None,
    threads: ThreadsOpt = None,
    hash_mb: HashOpt = None,
    shallow_depth: ShallowDepthOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the tutor's draws (Seed).")] = None,
    human_model: Annotated[
        str | None, typer.Option("--human-model", help="Human-move model file, 'default' or 'none' (Human Model).")
    ] = None,
    human_corpus: Annotated[
        str | None, typer.Option("--human-corpus", help="A mined dataset or corpus file (Human Corpus).")
    ] = None,
    safety_margin: Annotated[
        str | None, typer.Option("--safety-margin", help="Pawns the trap style may give up, or inf (Safety Margin).")
    ] = None,
    opponent_rating: Annotated[
        int | None, typer.Option("--opponent-rating", help="The opponent's rating (Opponent Rating).")
    ] = None,
    tutor_rating: Annotated[
        int | None, typer.Option("--tutor-rating", help="The rating the tutor imitates (Tutor Rating).")
    ] = None,
    epsilon: Annotated[str | None, typer.Option("--epsilon", help="The tutor's starting epsilon (Epsilon).")] = None,
    temperature: Annotated[
        str | None, typer.Option("--temperature", help="The tutor's temperature, centipawns (Temperature).")
    ] = None,
    move_overhead: Annotated[
        int | None, typer.Option("--move-overhead", help="Milliseconds kept back from the clock (Move Overhead).")
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", help="Any UCI option as 'Name=value' (repeatable); --list names them."),
    ] = None,
    list_options: Annotated[bool, typer.Option("--list", help="List the UCI options and exit.")] = False,
) -> None:
    """Run the UCI engine on stdin/stdout: it sets traps (style trap), loses plausibly (tutor) or
    plays the backend's best move (best). Every flag is also a UCI option (docs/play.md)."""
    from pipeline.play.uci import Config, OptionError, configure, option_table, run_uci

    if list_options:
        typer.echo(option_table())
        return
    given: list[tuple[str, str]] = [
        (name, str(value))
        for name, value in (
            ("Style", style),
            ("Engine", engine),
            ("Nodes", nodes),
            ("Engine Depth", engine_depth),
            ("Threads", threads),
            ("Hash", hash_mb),
            ("Shallow Depth", shallow_depth),
            ("Seed", seed),
            ("Human Model", human_model),
            ("Human Corpus", human_corpus),
            ("Safety Margin", safety_margin),
            ("Opponent Rating", opponent_rating),
            ("Tutor Rating", tutor_rating),
            ("Epsilon", epsilon),
            ("Temperature", temperature),
            ("Move Overhead", move_overhead),
        )
        if value is not None
    ]
    for item in option or []:
        name, equals, value = item.partition("=")
        if not equals:
            raise OptionError(f"invalid --option {item!r}: expected Name=value")
        given.append((name.strip(), value.strip()))
    config = configure(Config(), given)
    raise typer.Exit(run_uci(sys.stdin, sys.stdout, config))


def engine_label(described: dict[str, Any], engine: str) -> str:
    """The engine as people name it, with its limits: "Stockfish 15.1 (100,000 nodes per line)"."""
    if engine == "native":
        return "native (the embedded alpha-beta search on PeSTO; --engine stockfish sees much deeper)"
    limits = described.get("limits") or {}
    parts = [f"{limits['nodes']:,} nodes" if limits.get("nodes") else None,
             f"depth {limits['depth']}" if limits.get("depth") else None,
             f"{limits['movetime']:g} s" if limits.get("movetime") else None]  # fmt: skip
    limit_text = ", ".join(part for part in parts if part)
    name = described.get("engine") or described.get("name", engine)
    return f"{name} ({limit_text} per line)" if limit_text else str(name)


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


# Exit codes: 1 for what the user can fix (one line), 2 for a command line the parser rejects,
# 130 / 143 for an interrupt or SIGTERM, and INTERNAL_ERROR (with the traceback) for a bug.
INTERNAL_ERROR = 70


def main() -> None:
    """Console entry point: what a user can cause (`DiffimaxError`, an OS error naming its path)
    is one line on stderr; anything else is a bug and keeps its traceback."""
    try:
        app(standalone_mode=False)
    except DiffimaxError as error:
        typer.echo(f"diffimax: error: {error}", err=True)
        sys.exit(getattr(error, "exit_code", 1))
    except OSError as error:
        typer.echo(f"diffimax: error: {error}", err=True)
        sys.exit(1)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("diffimax: interrupted", err=True)
        sys.exit(130)
    except Exception as error:
        # Usage errors from the command-line parser (typer vendors click, so match by shape).
        format_message = getattr(error, "format_message", None)
        if format_message is None:
            traceback.print_exc()
            typer.echo(f"diffimax: internal error (a bug, please report it): {type(error).__name__}", err=True)
            sys.exit(INTERNAL_ERROR)
        prefix = "" if type(error).__name__.startswith("NoArgsIsHelp") else "diffimax: error: "
        typer.echo(f"{prefix}{format_message()}", err=True)
        sys.exit(getattr(error, "exit_code", 2))


if __name__ == "__main__":
    main()
