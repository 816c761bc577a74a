"""Features of every legal move of a position, for the human-move model.

`move_features(board, context)` is a pure function of a python-chess board (with its move stack,
for the last-move features) and the mover's context: one row per legal move, one column per name
in `feature_names(groups)`. Everything is from the mover's point of view: squares and ranks are
mirrored for Black, material is in pawns (P 1, N 3, B 3, R 5, Q 9), positive is good for the mover.
An unknown value (no rating, no clock, no previous move) is NaN, which LightGBM routes on its own.

Three groups of columns:

- ``base``: the move itself and the tactics around it, from bitboards only (no search): piece and
  squares, capture and static exchange (SEE), check, recapture, what the move leaves hanging and
  what it threatens, and the context (rating, clock, time control, ply).
- ``engine``: a shallow engine's score of every move (given as `EngineScores`; the engine runs
  elsewhere, see `pipeline.human.engine`): score, gap to the best move, rank.
- ``book``: how often the training games played this move in this exact position (given as
  `BookCounts`; see `pipeline.human.book`).
- ``pool``: the rating pool of the mover's rating (`MoverContext.pool`): a chess.com 900 is not
  a Lichess 900, and the trees learn what a rating means in each pool.

The static exchange evaluation and the material count are `pipeline.human.exchange`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

import chess
import numpy as np
import numpy.typing as npt

from pipeline.human.context import MoverContext
from pipeline.human.exchange import (
    PIECE_VALUES,
    Pieces,
    attackers_of,
    capture_gain,
    most_winnable,
    pieces_by_side,
    side_material,
)
from search.errors import DiffimaxError
from search.values import win_probability

FeatureGroup = Literal["base", "engine", "book", "pool"]
FEATURE_GROUPS: Final[tuple[FeatureGroup, ...]] = ("base", "engine", "book", "pool")
Matrix = npt.NDArray[np.float32]
# Engine scores of moves, centipawns from the mover's view (a mate is +-MATE_CP less its moves).
EngineScores = Mapping[str, int]

# Engine scores are clipped to this (cp); a mate counts as MATE_CP less ten per move to it.
SCORE_CLIP: Final = 1500
MATE_CP: Final = 2000
# Moves within this many cp of the engine's best count as "as good as the best".
NEAR_BEST_CP: Final = 50


class FeatureError(DiffimaxError, ValueError):
    """A position or context the features cannot describe."""


@dataclass(frozen=True)
class BookCounts:
    """How often the training games reached a position and played each move there."""

    games: int
    """Games that reached the position with this side to move (all moves together)."""
    moves: Mapping[str, int]
    """Times each move (UCI) was played there; a move never played is absent."""


CONTEXT_FEATURES: Final = (
    "rating",
    "clock_seconds",
    "base_seconds",
    "increment_seconds",
    "clock_fraction",
    "ply",
    "legal_moves",
    "material_own",
    "material_opponent",
    "in_check",
    "hanging_before",
    "threat_before",
)
MOVE_FEATURES: Final = (
    "piece",
    "from_square",
    "to_square",
    "from_rank",
    "to_rank",
    "from_file",
    "to_file",
    "rank_advance",
    "distance",
    "is_capture",
    "captured_value",
    "see",
    "is_check",
    "is_mate",
    "promotion",
    "is_castling",
    "is_en_passant",
    "recapture",
    "takes_last_moved",
    "distance_to_last",
    "last_was_capture",
    "last_was_check",
    "same_piece_again",
    "undoes_last",
    "from_attacked",
    "from_hanging",
    "to_attackers",
    "to_defenders",
    "hanging_after",
    "hanging_change",
    "threat_after",
    "threat_change",
    "loses_castling",
    "pawn_double",
)
ENGINE_FEATURES: Final = (
    "engine_cp",
    "engine_gap",
    "engine_rank",
    "engine_win",
    "engine_win_gap",
    "engine_best_cp",
    "engine_near_best",
)
BOOK_FEATURES: Final = ("book_games", "book_share", "book_count")
# The rating pool as a number (a chess.com 900 is not a Lichess 900): 1 chess.com, 0 Lichess.
POOL_FEATURES: Final = ("pool_chesscom",)
POOL_CODES: Final[Mapping[str, float]] = {"lichess": 0.0, "chesscom": 1.0}
GROUP_FEATURES: Final[dict[FeatureGroup, tuple[str, ...]]] = {
    "base": CONTEXT_FEATURES + MOVE_FEATURES,
    "engine": ENGINE_FEATURES,
    "book": BOOK_FEATURES,
    "pool": POOL_FEATURES,
}
# Columns that hold a category code, not a quantity (LightGBM splits them as categories).
CATEGORICAL_FEATURES: Final = frozenset({"piece", "promotion"})


def parse_groups(groups: Sequence[str]) -> tuple[FeatureGroup, ...]:
    """Feature groups in their canonical order; FeatureError for an unknown or missing base."""
    chosen: list[FeatureGroup] = []
    for name in groups:
        if name not in FEATURE_GROUPS:
            raise FeatureError(f"unknown feature group {name!r}: expected some of {', '.join(FEATURE_GROUPS)}")
    for group in FEATURE_GROUPS:
        if group in groups:
            chosen.append(group)
    if "base" not in chosen:
        raise FeatureError("feature groups must include 'base'")
    return tuple(chosen)


def feature_names(groups: Sequence[FeatureGroup] = ("base",)) -> tuple[str, ...]:
    """Column names of the feature matrix for these groups, in order."""
    names: list[str] = []
    for group in parse_groups(groups):
        names.extend(GROUP_FEATURES[group])
    return tuple(names)


_BB = chess.BB_SQUARES


def _relative(square: int, color: bool) -> int:
    """The square as seen from `color`'s side (Black's mirrored, so a1 is always home left)."""
    return square if color else square ^ 56


def clip_score(cp: int) -> int:
    return max(-SCORE_CLIP, min(SCORE_CLIP, cp))


def _nan(value: float | int | None) -> float:
    return math.nan if value is None else float(value)


# -- the feature matrix ------------------------------------------------------------------------


@dataclass(frozen=True)
class MoveMatrix:
    """The legal moves of a position and their features, row i describing moves[i]."""

    moves: tuple[str, ...]
    """Legal moves in UCI, in python-chess's generation order."""
    values: Matrix
    """float32 array of shape (len(moves), len(names))."""
    names: tuple[str, ...]
    """Column names."""


def move_features(
    board: chess.Board,
    context: MoverContext,
    *,
    groups: Sequence[FeatureGroup] = ("base",),
    engine: EngineScores | None = None,
    book: BookCounts | None = None,
) -> MoveMatrix:
    """One row of features per legal move of `board` (which is left as it was).

    `engine` (for the ``engine`` group) scores moves in cp from the mover's view; a move it lacks
    gets NaN. `book` (for the ``book`` group) may be None (the position is not in the book: zero
    games). FeatureError if the position has no legal move or a needed input is missing.

    Each row is built by name (a dict from feature name to value); the matrix takes its columns in
    the order of `feature_names`, which is the order a model was trained on."""
    chosen = parse_groups(groups)
    if "engine" in chosen and engine is None:
        raise FeatureError("the engine feature group needs engine scores")
    legal = list(board.legal_moves)
    if not legal:
        raise FeatureError(f"no legal move in {board.fen()!r}")
    position = _position(board)
    shared = _context_values(position, context, len(legal))
    rows = [shared | _move_values(position, move) for move in legal]
    if "engine" in chosen:
        assert engine is not None
        for row, columns in zip(rows, _engine_values(legal, engine), strict=True):
            row.update(columns)
    if "book" in chosen:
        for row, columns in zip(rows, _book_values(legal, book), strict=True):
            row.update(columns)
    if "pool" in chosen:
        code = math.nan if context.pool is None else POOL_CODES[context.pool]
        for row in rows:
            row["pool_chesscom"] = code
    names = feature_names(chosen)
    assert len(rows[0]) == len(names), sorted(set(rows[0]) ^ set(names))
    values = np.asarray([[row[name] for name in names] for row in rows], dtype=np.float32)
    assert values.shape == (len(legal), len(names)), (values.shape, len(names))
    return MoveMatrix(tuple(move.uci() for move in legal), values, names)


# A feature row by name: feature name -> value (NaN when unknown).
FeatureRow = dict[str, float]


class _Position(NamedTuple):
    """What every move's features need of the position before it (computed once per position)."""

    board: chess.Board
    sides: tuple[Pieces, Pieces]
    us: bool
    occupied: int
    king_square: int | None
    """The opponent's king, for checks."""
    hanging_before: int
    """What the opponent could win now (`most_winnable`), in pawns."""
    threat_before: int
    """What the mover could win now, in pawns."""
    last: chess.Move | None
    """The opponent's last move."""
    ours_last: chess.Move | None
    """The mover's own last move."""
    last_capture: float
    """Whether the opponent's last move captured (NaN without a last move)."""
    last_check: float
    """Whether the opponent's last move gave check (NaN without a last move)."""


def _position(board: chess.Board) -> _Position:
    us = board.turn
    sides = pieces_by_side(board)
    occupied = board.occupied
    last: chess.Move | None = board.move_stack[-1] if board.move_stack else None
    ours_last: chess.Move | None = board.move_stack[-2] if len(board.move_stack) >= 2 else None
    last_capture = last_check = math.nan
    if last is not None:
        previous = board.pop()  # replayed right away: the board is left as it was given
        try:
            last_capture = float(board.is_capture(previous))
        finally:
            board.push(previous)
        last_check = float(board.is_check())
    return _Position(
        board,
        sides,
        us,
        occupied,
        board.king(not us),
        most_winnable(sides, not us, occupied),
        most_winnable(sides, us, occupied),
        last,
        ours_last,
        last_capture,
        last_check,
    )


def _context_values(position: _Position, context: MoverContext, legal_moves: int) -> FeatureRow:
    """The ``base`` group's columns that every move of the position shares (CONTEXT_FEATURES)."""
    board, us = position.board, position.us
    base = context.base_seconds
    clock = context.clock_seconds
    fraction = clock / base if clock is not None and base else None
    return {
        "rating": _nan(context.rating),
        "clock_seconds": _nan(clock),
        "base_seconds": _nan(base),
        "increment_seconds": _nan(context.increment_seconds),
        "clock_fraction": _nan(fraction),
        "ply": float(board.ply()),
        "legal_moves": float(legal_moves),
        "material_own": float(side_material(position.sides[us])),
        "material_opponent": float(side_material(position.sides[not us])),
        "in_check": float(board.is_check()),
        "hanging_before": float(position.hanging_before),
        "threat_before": float(position.threat_before),
    }


class _AfterMove(NamedTuple):
    """A move and the position after it, as bitboards."""

    piece_type: int
    target: int
    """Where the moving piece lands (the king's square for castling)."""
    captured_type: int | None
    landed_type: int
    """The piece on `target` after the move (the promotion piece for a promotion)."""
    castling: bool
    en_passant: bool
    own: Pieces
    theirs: Pieces
    occupied: int
    sides: tuple[Pieces, Pieces]
    """(Black's, White's) pieces after the move, indexable by a python-chess colour."""


def _after_move(position: _Position, move: chess.Move) -> _AfterMove:
    board, us = position.board, position.us
    origin, target = move.from_square, move.to_square
    piece_type = board.piece_type_at(origin)
    assert piece_type is not None
    castling = board.is_castling(move)
    en_passant = board.is_en_passant(move)
    captured_square = target
    captured_type: int | None = None
    if en_passant:
        captured_square = target - 8 if us else target + 8
        captured_type = chess.PAWN
    elif not castling:
        captured_type = board.piece_type_at(target)
    landed_type = move.promotion or piece_type
    own = list(position.sides[us])
    theirs = list(position.sides[not us])
    occupied = position.occupied & ~_BB[origin]
    if castling:
        kingside = chess.square_file(target) > chess.square_file(origin)
        rank = chess.square_rank(origin)
        king_to = chess.square(6 if kingside else 2, rank)
        rook_to = chess.square(5 if kingside else 3, rank)
        rook_from = target if board.chess960 else chess.square(7 if kingside else 0, rank)
        occupied &= ~_BB[rook_from]
        own[chess.KING] = _BB[king_to]
        own[chess.ROOK] = (own[chess.ROOK] & ~_BB[rook_from]) | _BB[rook_to]
        occupied |= _BB[king_to] | _BB[rook_to]
        target = king_to
    else:
        own[piece_type] &= ~_BB[origin]
        own[landed_type] |= _BB[target]
        if captured_type is not None:
            theirs[captured_type] &= ~_BB[captured_square]
            occupied &= ~_BB[captured_square]
        occupied |= _BB[target]
    sides = (theirs, own) if us else (own, theirs)
    return _AfterMove(
        piece_type, target, captured_type, landed_type, castling, en_passant, own, theirs, occupied, sides
    )


def _move_values(position: _Position, move: chess.Move) -> FeatureRow:
    """The ``base`` group's columns of one move (MOVE_FEATURES)."""
    after = _after_move(position, move)
    return (
        _square_values(position, move, after)
        | _exchange_values(position, move, after)
        | _safety_values(position, move, after)
        | _last_move_values(position, move, after)
    )


def _square_values(position: _Position, move: chess.Move, after: _AfterMove) -> FeatureRow:
    """The piece and its squares, from the mover's side of the board; castling and pawn pushes."""
    us, origin, target, piece_type = position.us, move.from_square, after.target, after.piece_type
    castling_rights = position.board.castling_rights
    from_rel = _relative(origin, us)
    to_rel = _relative(target, us)
    return {
        "piece": float(piece_type),
        "from_square": float(from_rel),
        "to_square": float(to_rel),
        "from_rank": float(from_rel >> 3),
        "to_rank": float(to_rel >> 3),
        "from_file": float(from_rel & 7),
        "to_file": float(to_rel & 7),
        "rank_advance": float((to_rel >> 3) - (from_rel >> 3)),
        "distance": float(chess.square_distance(origin, target)),
        "promotion": float(move.promotion or 0),
        "is_castling": float(after.castling),
        "is_en_passant": float(after.en_passant),
        "loses_castling": float(
            not after.castling
            and (piece_type == chess.KING or piece_type == chess.ROOK)
            and bool(castling_rights & (chess.BB_RANK_1 if us else chess.BB_RANK_8))
            and (piece_type == chess.KING or bool(castling_rights & _BB[origin]))
        ),
        "pawn_double": float(piece_type == chess.PAWN and abs(target - origin) == 16),
    }


def _exchange_values(position: _Position, move: chess.Move, after: _AfterMove) -> FeatureRow:
    """What the move captures, its static exchange (SEE), and whether it checks or mates."""
    board, us, them = position.board, position.us, not position.us
    captured_value = PIECE_VALUES[after.captured_type] if after.captured_type is not None else 0
    promotion_gain = PIECE_VALUES[move.promotion] - 1 if move.promotion else 0
    # What the opponent wins back on the target square (0 if it cannot or should not recapture).
    recaptured = capture_gain(after.sides, them, after.target, after.occupied, after.landed_type)
    king_square = position.king_square
    gives_check = king_square is not None and bool(attackers_of(after.own, us, king_square, after.occupied))
    is_mate = False
    if gives_check:
        board.push(move)
        try:
            is_mate = board.is_checkmate()
        finally:
            board.pop()
    return {
        "is_capture": float(after.captured_type is not None),
        "captured_value": float(captured_value),
        "see": float(captured_value + promotion_gain - recaptured),
        "is_check": float(gives_check),
        "is_mate": float(is_mate),
    }


def _safety_values(position: _Position, move: chess.Move, after: _AfterMove) -> FeatureRow:
    """Who attacks and defends the squares the piece leaves and lands on, and what hangs and what
    is threatened after the move, against before it."""
    sides, us, them, occupied = position.sides, position.us, not position.us, position.occupied
    origin, target = move.from_square, after.target
    hanging_after = most_winnable(after.sides, them, after.occupied)
    threat_after = most_winnable(after.sides, us, after.occupied)
    from_attackers = attackers_of(sides[them], them, origin, occupied)
    from_hanging = capture_gain(sides, them, origin, occupied, after.piece_type) if from_attackers else 0
    return {
        "from_attacked": float(from_attackers != 0),
        "from_hanging": float(from_hanging),
        "to_attackers": float(chess.popcount(attackers_of(after.theirs, them, target, after.occupied))),
        "to_defenders": float(chess.popcount(attackers_of(after.own, us, target, after.occupied & ~_BB[target]))),
        "hanging_after": float(hanging_after),
        "hanging_change": float(hanging_after - position.hanging_before),
        "threat_after": float(threat_after),
        "threat_change": float(threat_after - position.threat_before),
    }


def _last_move_values(position: _Position, move: chess.Move, after: _AfterMove) -> FeatureRow:
    """The move against the last two moves: a recapture, the same piece again, a move undone."""
    origin, target, last, ours_last = move.from_square, after.target, position.last, position.ours_last
    recapture = takes_last = distance_last = math.nan
    if last is not None:
        takes_last = float(target == last.to_square and after.captured_type is not None)
        recapture = float(takes_last == 1.0 and position.last_capture == 1.0)
        distance_last = float(chess.square_distance(target, last.to_square))
    same_again = undoes = math.nan
    if ours_last is not None:
        same_again = float(origin == ours_last.to_square)
        undoes = float(origin == ours_last.to_square and target == ours_last.from_square)
    return {
        "recapture": recapture,
        "takes_last_moved": takes_last,
        "distance_to_last": distance_last,
        "last_was_capture": position.last_capture,
        "last_was_check": position.last_check,
        "same_piece_again": same_again,
        "undoes_last": undoes,
    }


def _engine_values(legal: list[chess.Move], engine: EngineScores) -> list[FeatureRow]:
    """The ``engine`` group's columns of each move (ENGINE_FEATURES); NaN for a move not scored."""
    scores = [engine.get(move.uci()) for move in legal]
    known = [clip_score(score) for score in scores if score is not None]
    best = max(known) if known else None
    ranked = sorted(set(known), reverse=True)
    rank_of = {score: index for index, score in enumerate(ranked)}
    near = sum(1 for score in known if best is not None and score >= best - NEAR_BEST_CP)
    best_win = win_probability(best) if best is not None else math.nan
    rows = []
    for raw in scores:
        if raw is None or best is None:
            rows.append(dict.fromkeys(ENGINE_FEATURES, math.nan))
            continue
        score = clip_score(raw)
        win = win_probability(score)
        rows.append(
            {
                "engine_cp": float(score),
                "engine_gap": float(best - score),
                "engine_rank": float(rank_of[score]),
                "engine_win": win,
                "engine_win_gap": best_win - win,
                "engine_best_cp": float(best),
                "engine_near_best": float(near),
            }
        )
    return rows


def _book_values(legal: list[chess.Move], book: BookCounts | None) -> list[FeatureRow]:
    """The ``book`` group's columns of each move (BOOK_FEATURES)."""
    games = book.games if book is not None else 0
    rows = []
    for move in legal:
        count = book.moves.get(move.uci(), 0) if book is not None else 0
        share = count / games if games > 0 else math.nan
        rows.append({"book_games": float(games), "book_share": share, "book_count": float(count)})
    return rows
