"""Expanding one node of a repertoire tree, as plain functions (no Ray): tests call them directly,
and the workers of `pipeline.repertoire.worker` run them on their engine and table.

- A **player node** (the player to move): the player's moves ranked by the shallow pass, the
  `candidates` best of them (and the engine's own best) valued by the full search, and those
  within the safety margin of the best kept as candidates (`expand_player`).
- An **opponent node** (the human to move): the human evidence of every reply at the opponents'
  rating (`search.expectimax.reply_probabilities`: with `corpus_prior`, the corpus's counts in the
  band shrunk toward the model's; without, the corpus where it has enough games, else the model),
  the replies whose line humans reach from the start with at least the floor
  (`search.expectimax.explored_replies`), and the practical judge's
  analysis with those replies valued too (`pipeline.judging.Judge.lines` with `also`): each
  explored reply's value and drop, the traps and their punishment lines (`expand_opponent`).

Every engine answer goes through a `TableLines` over the worker's table, so a position reached by
several lines (or several repertoires' moves) is searched once, and an answer depends on the
position alone (`pipeline.mine.table`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final, Literal

import chess

from pipeline.human.corpus import Corpus
from pipeline.human.models import MoveModel
from pipeline.judging import Judge
from pipeline.mine.occurrences import MAX_HISTORY
from pipeline.mine.table import TableLines, analysis_key
from pipeline.repertoire.settings import RepertoireSettings
from schemas.dataset import to_signed64
from search.backend import Level
from search.chessgame import zobrist
from search.expectimax import (
    Source,
    explored_replies,
    probability_source,
    reply_drop,
    reply_probabilities,
    score,
    within_margin,
)
from search.judges import NodeEvidence, ReplyEvidence
from search.values import MATE_BOUND, Value

NodeKind = Literal["player", "opponent"]


@dataclass(frozen=True)
class NodeRequest:
    """A node to expand: where it is (UCI moves from the start) and how likely humans reach it."""

    node: int
    kind: NodeKind
    path: tuple[str, ...]
    reach: float
    """The product of the opponent's reply probabilities from the start to here."""


@dataclass(frozen=True)
class Cost:
    """What expanding a node cost its worker."""

    seconds: float = 0.0
    engine_calls: int = 0
    """Searches asked of the engine (0 when the table held every answer)."""
    reused: bool = False
    """Whether the worker's table held the position's entry already."""


@dataclass(frozen=True)
class PlayerResult:
    """A player node: the moves valued and the candidates among them."""

    node: int
    values: dict[str, Value]
    """Each valued move's value (the player's view, at `level`)."""
    best: str
    best_value: Value
    candidates: tuple[str, ...]
    """The moves within the safety margin of the best, best first (the best alone when it mates)."""
    lines: dict[str, tuple[str, ...]]
    """The principal variation after each valued move."""
    level: Level
    cost: Cost = Cost()
    error: str | None = None


@dataclass(frozen=True)
class OpponentResult:
    """An opponent node: the human evidence, the explored replies' values and drops, the traps."""

    node: int
    best: str
    best_value: Value
    source: Source
    corpus_games: int | None
    probabilities: dict[str, float]
    """Every reply's human probability (corpus share, else the model's)."""
    model_p: dict[str, float]
    corpus_counts: dict[str, int]
    explored: tuple[str, ...]
    """The replies above the floor, most likely first."""
    values: dict[str, Value]
    """The value of each reply a search valued (the player's view)."""
    drops: dict[str, float]
    """The score each valued reply gives up against the best reply (`search.expectimax.reply_drop`)."""
    traps: tuple[str, ...]
    """The practical judge's candidates."""
    lines: dict[str, tuple[str, ...]]
    """The principal variation after each valued reply (a trap's punishment)."""
    cost: Cost = Cost()
    error: str | None = None


def board_analysis_key(board: chess.Board) -> int:
    """The analysis key of a board with its move stack (`pipeline.mine.table.analysis_key`): its
    Polyglot key, halfmove clock and the positions since the last irreversible move."""
    history: list[int] = []
    earlier = board.copy()
    while earlier.move_stack and len(history) < MAX_HISTORY:
        move = earlier.pop()
        if earlier.is_zeroing(move):
            break
        history.append(to_signed64(zobrist(earlier)))
    history.reverse()
    return analysis_key(to_signed64(zobrist(board)), board.halfmove_clock, history)


# The player's own moves that humans of the player's rating play most join the shallow pass's
# candidates (issue 45: its six best left 1...e5 out of black's tree against 1.e4, the move most
# 1200 players choose): up to this many, each chosen by at least this share of them. They still
# have to lie within the safety margin of the best to be candidates.
HUMAN_CHOICES: Final = 2
HUMAN_CHOICE_P: Final = 0.15


def human_choices(board: chess.Board, settings: RepertoireSettings, model: MoveModel | None) -> list[str]:
    """The moves a human of the player's rating plays most at `board` (the model's, at the
    player's context): up to HUMAN_CHOICES, each at least HUMAN_CHOICE_P; none without a model."""
    if model is None:
        return []
    chosen = model.move_probabilities(board, settings.player_context())
    ranked = sorted(chosen, key=lambda move: (-chosen[move], move))[:HUMAN_CHOICES]
    return [move for move in ranked if chosen[move] >= HUMAN_CHOICE_P]


def expand_player(
    lines: TableLines, board: chess.Board, settings: RepertoireSettings, node: int, model: MoveModel | None = None
) -> PlayerResult:
    """The player's moves at `board` (the player to move): the shallow pass ranks them, the
    `candidates` best, the engine's best and the moves humans of the player's rating play most
    (`human_choices`, by `model`) are valued by the full search (`diffimax play`'s trap style does
    the same; a probe's values, a quarter of the nodes, put moves a pawn apart that the full search
    puts level), and those within the safety margin of the best are the candidates."""
    level: Level = "deep"
    shallow = lines.shallow()
    legal = {move.uci() for move in board.legal_moves}
    ranked = sorted((m for m in shallow.values if m in legal), key=lambda m: (-shallow.values[m], m))
    ranked += sorted(legal - set(ranked))  # a move the engine left out of its MultiPV ranks last
    best_search = lines.best(level)
    pool = set(ranked[: settings.candidates]) | ({best_search.best} & legal if best_search.best else set())
    pool |= set(human_choices(board, settings, model)) & legal
    found = lines.replies(sorted(pool), level)
    values = dict(found.values)
    best = within_margin(values, None)[0]
    # A forced mate needs no trap (and mate scores, a ply apart, would all lie within the margin).
    within = [best] if values[best] >= MATE_BOUND else within_margin(values, settings.margin_cp)
    return PlayerResult(node, values, best, values[best], tuple(within), dict(found.lines), level)


def human_probabilities(
    board: chess.Board, settings: RepertoireSettings, model: MoveModel | None, corpus: Corpus | None, key: int
) -> tuple[dict[str, float], dict[str, float], dict[str, int], int | None]:
    """The replies' human probabilities at `board` (`search.expectimax.reply_probabilities`, with
    `settings.corpus_prior`), with the model's probabilities and the corpus's counts and games in
    the band behind them."""
    model_p = model.move_probabilities(board, settings.context()) if model is not None else {}
    counts: dict[str, int] = {}
    games = None
    if corpus is not None:
        counted = corpus.counts(key, settings.rating, settings.judges.rating_band)
        counts, games = counted.moves, counted.games
    replies = tuple(
        ReplyEvidence(
            move.uci(),
            model_p=model_p.get(move.uci(), 0.0) if model is not None else None,
            corpus_count=counts.get(move.uci(), 0) if corpus is not None else None,
        )
        for move in board.legal_moves
    )
    evidence = NodeEvidence(replies, best="", best_value=0, corpus_games=games)
    return reply_probabilities(evidence, settings.judges, prior_games=settings.corpus_prior), model_p, counts, games


def expand_opponent(
    lines: TableLines,
    board: chess.Board,
    settings: RepertoireSettings,
    request: NodeRequest,
    judge: Judge,
) -> OpponentResult:
    """The human's replies at `board` (the opponent to move), judged for the player by `judge` (the
    worker's kit, at `settings.diffimax` and `settings.judges`): see the module docstring."""
    key = to_signed64(zobrist(board))
    model = judge.kit.model
    probabilities, model_p, counts, _ = human_probabilities(board, settings, model, judge.kit.corpus, key)
    explore = explored_replies(probabilities, request.reach, settings.floor)
    judgement = judge.lines(
        lines,
        board,
        settings.color,
        context=settings.context(),
        also=explore,
        key=key,
        model_probabilities=None if model is None else model_p,
    )
    evidence = judgement.evidence
    values: dict[str, Value] = {}
    drops: dict[str, float] = {}
    for reply in evidence.replies:
        measured = evidence.measured(reply)
        drop = reply_drop(evidence, reply)
        if measured is not None and drop is not None:
            values[reply.move] = reply.deeper_value if reply.deeper_value is not None else measured[0]
            drops[reply.move] = drop
    traps = tuple(sorted(judgement.candidates("practical") or ()))
    return OpponentResult(
        request.node,
        evidence.best,
        evidence.best_value,
        probability_source(evidence, settings.judges, prior_games=settings.corpus_prior),
        evidence.corpus_games,
        probabilities,
        model_p,
        counts,
        tuple(explore),
        values,
        drops,
        traps,
        {move: tuple(line) for move, line in judgement.lines.items()},
    )


def sketch_player(
    lines: TableLines, board: chess.Board, settings: RepertoireSettings, node: int, depth: int = 2
) -> PlayerResult:
    """`expand_player` on the shallow pass alone (a plan's sketch of the tree: its shape, not its
    values): the moves within the safety margin of the shallow pass's best, and at least the
    `width_at(depth)` best of them. The shallow pass spreads the moves' values further than the full search:
    on the white-1200 tree its margin left one candidate at 28 % of the player nodes (the start
    among them) where the full search left one at 13 %, and the sketch, growing one line where the
    run grows `width`, planned a quarter of the nodes (docs/results/repertoire.md, "Cost")."""
    shallow = lines.shallow()
    legal = {move.uci() for move in board.legal_moves}
    values = {m: v for m, v in shallow.values.items() if m in legal}
    if not values:
        values = dict.fromkeys(sorted(legal), 0)
    ranked = within_margin(values, None)[: settings.candidates]
    kept = {m: values[m] for m in ranked}
    within = within_margin(kept, settings.margin_cp)
    best = within[0]
    within = [best] if values[best] >= MATE_BOUND else ranked[: max(len(within), settings.width_at(depth))]
    return PlayerResult(node, kept, best, values[best], tuple(within), {}, "shallow")


def sketch_opponent(
    lines: TableLines,
    board: chess.Board,
    settings: RepertoireSettings,
    request: NodeRequest,
    judge: Judge,
) -> OpponentResult:
    """`expand_opponent` on the human evidence and the shallow pass alone (a plan's sketch): the
    same replies explored, their drops from the shallow values, no traps (`judge` gives the kit's
    model and corpus; nothing is judged)."""
    key = to_signed64(zobrist(board))
    model = judge.kit.model
    probabilities, model_p, counts, games = human_probabilities(board, settings, model, judge.kit.corpus, key)
    explore = explored_replies(probabilities, request.reach, settings.floor)
    legal = {move.uci() for move in board.legal_moves}
    shallow = {m: v for m, v in lines.shallow().values.items() if m in legal} or dict.fromkeys(sorted(legal), 0)
    best = min(shallow, key=lambda m: (shallow[m], m))
    values = {m: shallow[m] for m in {best, *explore} if m in shallow}  # what a full expansion values, at least
    drops = {m: max(0.0, score(v) - score(values[best])) for m, v in values.items()}
    source = probability_source(
        NodeEvidence(
            tuple(ReplyEvidence(move, model_p=model_p.get(move) if model is not None else None) for move in legal),
            best="",
            best_value=0,
            corpus_games=games,
        ),
        settings.judges,
        prior_games=settings.corpus_prior,
    )
    return OpponentResult(
        request.node,
        best,
        values[best],
        source,
        games,
        probabilities,
        model_p,
        counts,
        tuple(explore),
        values,
        drops,
        (),
        {},
    )


def timed_cost(lines: TableLines, started: float, reused: bool) -> Cost:
    """The cost of a node expanded on `lines` since `started` (`time.perf_counter`)."""
    return Cost(time.perf_counter() - started, lines.asked, reused)
