"""`diffimax tree`, `explain` and `prototype`: DiffiMax on one tree, one position, random trees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

from pipeline import api
from pipeline.cli.jobfile import JobFileOpt
from pipeline.cli.options import (
    EngineFlags,
    EvidenceFlags,
    FlagGroup,
    FromOpt,
    JsonOut,
    JudgeThresholds,
    MovesOpt,
    PoolOpt,
    RatingOpt,
    ReasonableDip,
    RootOpt,
    SearchFlags,
    SeedOpt,
    TrapDip,
    UsageError,
    build_judges,
    emit,
    file_key,
    from_job_file,
    parse_margin,
    with_flags,
)
from pipeline.judging import HumanEvidence
from pipeline.outputs.explain import explain_text, result_json
from pipeline.outputs.explain_input import explain_input
from search.alphabeta import Searcher, minimax_decision
from search.diffimax import DiffiMaxSearch
from search.judges import JUDGES
from search.prototype import PrototypeSettings
from search.settings import default_depth, parse_scope
from search.tree import TreeGame, parse_tree, tree_height
from search.ttable import TranspositionTable
from search.values import cp_to_pawns


@with_flags
def tree(
    tree_literal: Annotated[str, typer.Argument(metavar="TREE", help="e.g. '((3,12,8),(2,4,6),(14,5,2))'")],
    root: RootOpt = "max",
    algorithm: Annotated[str, typer.Option("--algorithm", help="minimax, alphabeta or diffimax.")] = "diffimax",
    *,
    search: SearchFlags,
    as_json: JsonOut = False,
    job_file: JobFileOpt = None,  # the [search] table (`pipeline.cli.jobfile`)
) -> None:
    """Search a nested-tuple game tree (leaves are utilities; moves are child indices)."""
    if root not in ("max", "min"):
        raise UsageError(f"invalid root {root!r}: expected max or min")
    if algorithm not in ("minimax", "alphabeta", "diffimax"):
        raise UsageError(f"invalid algorithm {algorithm!r}: expected minimax, alphabeta or diffimax")
    parsed = parse_tree(tree_literal)
    plies = tree_height(parsed) if search.depth is None else search.depth
    settings = search.settings(plies)
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
    elif algorithm != "diffimax":
        typer.echo(
            f"value {data['value']:g}, move {data['best_move']}, "
            f"{data['leaves']} leaves, {data['nodes']} nodes, {data['cutoffs']} cutoffs"
        )
    else:
        header = [
            f"Tree: {tree_literal.strip()}",
            f"Root: {root.upper()} ({'setter' if root == 'max' else 'responder'})",
        ]
        typer.echo(explain_text(result, header=header, name=str, path_name=".".join))


@with_flags
def explain(
    fen: Annotated[
        str | None, typer.Argument(help="The position, as a FEN (or give --moves, or --pgn with --ply).")
    ] = None,
    setter: Annotated[
        str | None,
        typer.Option("--setter", help="white or black; default: the player who just moved."),
    ] = None,
    moves: MovesOpt = None,
    start_fen: FromOpt = None,
    pgn: Annotated[
        str | None, typer.Option("--pgn", help="A PGN file: explain the position after --ply half-moves of a game.")
    ] = None,
    ply: Annotated[
        int | None, typer.Option("--ply", help="With --pgn: the position after this many half-moves (0: the first).")
    ] = None,
    game: Annotated[int | None, typer.Option("--game", help="With --pgn: which game of the file, from 1.")] = None,
    *,
    search: SearchFlags,
    engine_flags: EngineFlags,
    evidence: EvidenceFlags,
    rating: RatingOpt = None,
    clock: Annotated[
        float | None, typer.Option("--clock", help="The responder's clock in seconds (human evidence).")
    ] = None,
    pool: PoolOpt = "auto",
    thresholds: JudgeThresholds,
    as_json: JsonOut = False,
    job_file: JobFileOpt = None,  # read by its callback, before the other flags (`pipeline.cli.jobfile`)
) -> None:
    """Explain DiffiMax at one position: ranked responses, trap candidates, dips, a bar chart,
    and every trap judge (dip, trappy, human, model, practical) side by side with its evidence,
    and how likely a human of the responder's rating is to fall here.

    The position is a FEN (no history), or --moves from the start (or --from FEN), or the position
    after --ply half-moves of a game of --pgn (--game K: its K-th game). With moves, the human-move
    model reads the moves before the position; from a PGN, the responder's rating, clock, time
    control and pool come from the game unless --rating, --clock or --pool say otherwise."""
    asked = explain_input(fen, moves=moves, start_fen=start_fen, pgn=pgn, ply=ply, game=game)
    engine = engine_flags.name()
    explanation = api.explain(
        asked,
        rating=rating,
        clock=clock,
        pool=pool,
        setter=setter,
        engine=engine,
        engine_options=engine_flags.options(evidence.shallow_depth),
        search=search.settings(default_depth(engine)),
        judges=build_judges(evidence.judges, frozenset(JUDGES), thresholds),
        human=HumanEvidence(evidence.human_model, evidence.human_corpus),
    )
    if as_json:
        emit(explanation.json(), "", True)
    else:
        typer.echo(explanation.text())


@dataclass(frozen=True)
class TreeShape(FlagGroup):
    """The prototype's random trees beyond their count and seed: a job file's `[tree-shape]` table."""

    depth: int = from_job_file("tree-shape", 4, about="Plies from the root to every leaf.")
    branching: str = from_job_file(
        "tree-shape", "6-14", about="Children per internal node, MIN-MAX (uniform) or one number."
    )
    values: str = from_job_file("tree-shape", "walk", about="Leaf values: walk (random walk) or uniform.")
    step: float = from_job_file("tree-shape", 1.0, about="Walk: sd of one ply's change, in pawns.")
    value_limit: float = from_job_file("tree-shape", 10.0, about="Values clipped to +-this many pawns.")

    def check(self) -> None:
        """SettingsError (or UsageError) for a shape no tree takes."""
        prototype_settings(self, PrototypeRule())


@dataclass(frozen=True)
class PrototypeRule(FlagGroup):
    """Seed 000's hard-coded conditions, a job file's `[rule]` table (seed 000's names)."""

    draw_thresh: float = from_job_file("rule", 1.25, about="Prototype drawThresh in pawns.")
    win_thresh: float = from_job_file("rule", 2.0, about="Prototype winThresh in pawns.")
    min_children: int = from_job_file("rule", 10, about="Prototype: opponent nodes need at least this many children.")
    draw_rule: str = from_job_file("rule", "band", about="band: |v1| <= drawThresh; ceiling: v1 <= drawThresh.")

    def check(self) -> None:
        """SettingsError for conditions the prototype does not take."""
        prototype_settings(TreeShape(), self)


def prototype_settings(shape: TreeShape, rule: PrototypeRule, root: str = "max", seed: int = 0) -> PrototypeSettings:
    """The prototype's settings (checked by `PrototypeSettings`) from the job file's tables."""
    low, dash, high = shape.branching.partition("-")
    try:
        min_branching = int(low)
        max_branching = int(high) if dash else min_branching
    except ValueError:
        raise UsageError(
            f"invalid {file_key(TreeShape, 'branching')} {shape.branching!r}: expected MIN-MAX, e.g. 6-14"
        ) from None
    return PrototypeSettings(
        draw_thresh=rule.draw_thresh,
        win_thresh=rule.win_thresh,
        min_children=rule.min_children,
        draw_rule=rule.draw_rule,  # type: ignore[arg-type]  # validated by PrototypeSettings
        depth=shape.depth,
        min_branching=min_branching,
        max_branching=max_branching,
        values=shape.values,  # type: ignore[arg-type]
        step=shape.step,
        value_limit=shape.value_limit,
        root=root,  # type: ignore[arg-type]
        seed=seed,
    )


@with_flags
def prototype(
    trees: Annotated[int, typer.Option("--trees", help="How many seeded random trees to compare on.")] = 100,
    seed: SeedOpt = 0,
    root: RootOpt = "max",
    scopes: Annotated[
        str, typer.Option("--scopes", help="Revised DiffiMax scopes to compare with, comma list of 2-5, all.")
    ] = "all,2",
    reasonable_dip: ReasonableDip = 2.0,
    trap_dip: TrapDip = 1.0,
    revised_margin: Annotated[
        str,
        typer.Option("--revised-margin", help="The revised DiffiMax's safety margin in pawns, or inf (exhaustive)."),
    ] = "inf",
    traps: Annotated[bool, typer.Option("--traps", help="With --json: list each tree's prototype traps.")] = False,
    as_json: JsonOut = False,
    job_file: JobFileOpt = None,  # the [tree-shape] and [rule] tables (`pipeline.cli.jobfile`)
    *,
    shape: TreeShape,
    rule: PrototypeRule,
) -> None:
    """Seed 000's first DiffiMax prototype on seeded random trees (tree i depends on --seed and i
    only), compared with the revised DiffiMax (unbounded safety margin by default, as exhaustive as
    the prototype). The trees' shape and the prototype's conditions are a job file's [tree-shape] and
    [rule] tables (docs/prototype.md)."""
    from search.prototype import compare, comparison_json, comparison_text, revised_settings

    margin = parse_margin(revised_margin)
    settings = prototype_settings(shape, rule, root, seed)
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
