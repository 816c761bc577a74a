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

The static exchange evaluation is the textbook swap algorithm: the least valuable attacker
captures next, x-ray attackers behind a capturer join in, pins are ignored, a king may capture
last only (its value, KING_VALUE, makes any recapture of it a loss).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import chess
import numpy as np
import numpy.typing as npt

from pipeline.human.context import MoverContext
from search.errors import DiffimaxError
from search.judges import win_probability

FeatureGroup = Literal["base", "engine", "book", "pool"]
FEATURE_GROUPS: Final[tuple[FeatureGroup, ...]] = ("base", "engine", "book", "pool")
Matrix = npt.NDArray[np.float32]
# Engine scores of moves, centipawns from the mover's view (a mate is +-MATE_CP less its moves).
EngineScores = Mapping[str, int]

# Piece values in pawns, by python-chess piece type (index 0 unused).
PIECE_VALUES: Final = (0, 1, 3, 3, 5, 9, 0)
# A king's value in the exchange: large, so that a king never captures into a defended square.
KING_VALUE: Final = 100
SEE_VALUES: Final = (0, 1, 3, 3, 5, 9, KING_VALUE)
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
    "rating", "clock_seconds", "base_seconds", "increment_seconds", "clock_fraction", "ply", "legal_moves",
    "material_own", "material_opponent", "in_check", "hanging_before", "threat_before",
)  # fmt: skip
MOVE_FEATURES: Final = (
    "piece", "from_square", "to_square", "from_rank", "to_rank", "from_file", "to_file", "rank_advance",
    "distance", "is_capture", "captured_value", "see", "is_check", "is_mate", "promotion", "is_castling",
    "is_en_passant", "recapture", "takes_last_moved", "distance_to_last", "last_was_capture", "last_was_check",
    "same_piece_again", "undoes_last", "from_attacked", "from_hanging", "to_attackers", "to_defenders",
    "hanging_after", "hanging_change", "threat_after", "threat_change", "loses_castling", "pawn_double",
)  # fmt: skip
ENGINE_FEATURES: Final = (
    "engine_cp", "engine_gap", "engine_rank", "engine_win", "engine_win_gap", "engine_best_cp", "engine_near_best",
)  # fmt: skip
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


# -- bitboard helpers --------------------------------------------------------------------------

_BB = chess.BB_SQUARES
_KNIGHT = chess.BB_KNIGHT_ATTACKS
_KING = chess.BB_KING_ATTACKS
_PAWN = chess.BB_PAWN_ATTACKS
_DIAG_MASKS = chess.BB_DIAG_MASKS
_DIAG = chess.BB_DIAG_ATTACKS
_RANK_MASKS = chess.BB_RANK_MASKS
_RANK = chess.BB_RANK_ATTACKS
_FILE_MASKS = chess.BB_FILE_MASKS
_FILE = chess.BB_FILE_ATTACKS

# Pieces of one colour: index = python-chess piece type (0 unused).
Pieces = list[int]


def _attackers(pieces: Pieces, color: bool, square: int, occupied: int) -> int:
    """Squares of `pieces` (of `color`) that attack `square` given `occupied` (x-rays open as
    pieces leave `occupied`)."""
    diagonal = _DIAG[square][_DIAG_MASKS[square] & occupied]
    straight = _RANK[square][_RANK_MASKS[square] & occupied] | _FILE[square][_FILE_MASKS[square] & occupied]
    queens = pieces[chess.QUEEN]
    found = (
        (_PAWN[not color][square] & pieces[chess.PAWN])
        | (_KNIGHT[square] & pieces[chess.KNIGHT])
        | (_KING[square] & pieces[chess.KING])
        | (diagonal & (pieces[chess.BISHOP] | queens))
        | (straight & (pieces[chess.ROOK] | queens))
    )
    return found & occupied


def _least_valuable(pieces: Pieces, attackers: int) -> tuple[int, int]:
    """(piece type, square bitboard) of the least valuable piece among `attackers`."""
    for piece_type in range(1, 7):
        found = attackers & pieces[piece_type]
        if found:
            return piece_type, found & -found
    raise AssertionError("no attacker")  # callers check attackers first


def _swap(
    sides: tuple[Pieces, Pieces], color: bool, square: int, occupied: int, first_gain: int, on_square: int
) -> int:
    """The exchange on `square` after a first capture (already taken out of `occupied`) that won
    `first_gain` and left a piece worth `on_square` there; `color` moves next. Returns the net
    gain of the side that made the first capture, with best play of both sides (either may stop)."""
    gains = [first_gain]
    while True:
        attackers = _attackers(sides[color], color, square, occupied)
        if not attackers:
            break
        piece_type, bit = _least_valuable(sides[color], attackers)
        gains.append(on_square - gains[-1])
        occupied &= ~bit
        on_square = SEE_VALUES[piece_type]
        color = not color
    for index in range(len(gains) - 1, 0, -1):
        gains[index - 1] = -max(-gains[index - 1], gains[index])
    return gains[0]


def _capture_gain(sides: tuple[Pieces, Pieces], color: bool, square: int, occupied: int, victim: int) -> int:
    """What `color` wins by capturing the piece (type `victim`) on `square` with its least valuable
    attacker, then exchanging on; 0 when it has no attacker or the capture does not pay."""
    attackers = _attackers(sides[color], color, square, occupied)
    if not attackers:
        return 0
    piece_type, bit = _least_valuable(sides[color], attackers)
    return max(0, _swap(sides, not color, square, occupied & ~bit, SEE_VALUES[victim], SEE_VALUES[piece_type]))


def _most_winnable(sides: tuple[Pieces, Pieces], attacker: bool, occupied: int) -> int:
    """The most material `attacker` could win with one capture sequence against the other side's
    pieces (kings excluded): what is hanging, in pawns."""
    victims = sides[not attacker]
    best = 0
    for piece_type in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT, chess.PAWN):
        if SEE_VALUES[piece_type] <= best:
            break  # no capture of a cheaper piece can win more than it is worth
        mask = victims[piece_type]
        while mask:
            bit = mask & -mask
            mask ^= bit
            gain = _capture_gain(sides, attacker, bit.bit_length() - 1, occupied, piece_type)
            if gain > best:
                best = gain
    return best


def _material(pieces: Pieces) -> int:
    return sum(PIECE_VALUES[piece_type] * chess.popcount(pieces[piece_type]) for piece_type in range(1, 6))


def _sides(board: chess.Board) -> tuple[Pieces, Pieces]:
    """Bitboards by piece type: (Black's, White's), indexable by a python-chess colour."""
    black = [0] + [board.pieces_mask(piece_type, chess.BLACK) for piece_type in range(1, 7)]
    white = [0] + [board.pieces_mask(piece_type, chess.WHITE) for piece_type in range(1, 7)]
    return black, white


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
    games). FeatureError if the position has no legal move or a needed input is missing."""
    chosen = parse_groups(groups)
    if "engine" in chosen and engine is None:
        raise FeatureError("the engine feature group needs engine scores")
    legal = list(board.legal_moves)
    if not legal:
        raise FeatureError(f"no legal move in {board.fen()!r}")
    us = board.turn
    them = not us
    sides = _sides(board)
    own, theirs = sides[us], sides[them]
    occupied = board.occupied
    hanging_before = _most_winnable(sides, them, occupied)
    threat_before = _most_winnable(sides, us, occupied)

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

    base = context.base_seconds
    clock = context.clock_seconds
    fraction = clock / base if clock is not None and base else None
    context_row = [
        _nan(context.rating), _nan(clock), _nan(base), _nan(context.increment_seconds), _nan(fraction),
        float(board.ply()), float(len(legal)), float(_material(own)), float(_material(theirs)),
        float(board.is_check()), float(hanging_before), float(threat_before),
    ]  # fmt: skip

    king_square = board.king(them)
    rows: list[list[float]] = []
    for move in legal:
        rows.append(
            context_row + _move_row(board, move, sides, us, occupied, king_square, last, ours_last,
                                    last_capture, last_check, hanging_before, threat_before)
        )  # fmt: skip

    if "engine" in chosen:
        assert engine is not None
        _append_engine(rows, legal, engine)
    if "book" in chosen:
        _append_book(rows, legal, book)
    if "pool" in chosen:
        code = math.nan if context.pool is None else POOL_CODES[context.pool]
        for row in rows:
            row.append(code)
    names = feature_names(chosen)
    values = np.asarray(rows, dtype=np.float32)
    assert values.shape == (len(legal), len(names)), (values.shape, len(names))
    return MoveMatrix(tuple(move.uci() for move in legal), values, names)


def _move_row(
    board: chess.Board,
    move: chess.Move,
    sides: tuple[Pieces, Pieces],
    us: bool,
    occupied: int,
    king_square: int | None,
    last: chess.Move | None,
    ours_last: chess.Move | None,
    last_capture: float,
    last_check: float,
    hanging_before: int,
    threat_before: int,
) -> list[float]:
    them = not us
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

    # The position after the move, as bitboards.
    after_own = list(sides[us])
    after_theirs = list(sides[them])
    after_occupied = occupied & ~_BB[origin]
    if castling:
        kingside = chess.square_file(target) > chess.square_file(origin)
        rank = chess.square_rank(origin)
        king_to = chess.square(6 if kingside else 2, rank)
        rook_to = chess.square(5 if kingside else 3, rank)
        rook_from = target if board.chess960 else chess.square(7 if kingside else 0, rank)
        after_occupied &= ~_BB[rook_from]
        after_own[chess.KING] = _BB[king_to]
        after_own[chess.ROOK] = (after_own[chess.ROOK] & ~_BB[rook_from]) | _BB[rook_to]
        after_occupied |= _BB[king_to] | _BB[rook_to]
        target = king_to
    else:
        after_own[piece_type] &= ~_BB[origin]
        after_own[landed_type] |= _BB[target]
        if captured_type is not None:
            after_theirs[captured_type] &= ~_BB[captured_square]
            after_occupied &= ~_BB[captured_square]
        after_occupied |= _BB[target]
    after: tuple[Pieces, Pieces] = (after_theirs, after_own) if us else (after_own, after_theirs)

    captured_value = PIECE_VALUES[captured_type] if captured_type is not None else 0
    promotion_gain = PIECE_VALUES[move.promotion] - 1 if move.promotion else 0
    # What the opponent wins back on the target square (0 if it cannot or should not recapture).
    recaptured = _capture_gain(after, them, target, after_occupied, landed_type)
    see = captured_value + promotion_gain - recaptured

    gives_check = king_square is not None and bool(_attackers(after_own, us, king_square, after_occupied))
    is_mate = False
    if gives_check:
        board.push(move)
        try:
            is_mate = board.is_checkmate()
        finally:
            board.pop()
    hanging_after = _most_winnable(after, them, after_occupied)
    threat_after = _most_winnable(after, us, after_occupied)
    from_attackers = _attackers(sides[them], them, origin, occupied)
    from_hanging = _capture_gain(sides, them, origin, occupied, piece_type) if from_attackers else 0
    to_attackers = chess.popcount(_attackers(after_theirs, them, target, after_occupied))
    to_defenders = chess.popcount(_attackers(after_own, us, target, after_occupied & ~_BB[target]))

    from_rel = _relative(origin, us)
    to_rel = _relative(target, us)
    nan = math.nan
    recapture = takes_last = distance_last = nan
    if last is not None:
        takes_last = float(target == last.to_square and captured_type is not None)
        recapture = float(takes_last == 1.0 and last_capture == 1.0)
        distance_last = float(chess.square_distance(target, last.to_square))
    same_again = undoes = nan
    if ours_last is not None:
        same_again = float(origin == ours_last.to_square)
        undoes = float(origin == ours_last.to_square and target == ours_last.from_square)
    loses_castling = float(
        not castling
        and (piece_type == chess.KING or piece_type == chess.ROOK)
        and bool(board.castling_rights & (chess.BB_RANK_1 if us else chess.BB_RANK_8))
        and (piece_type == chess.KING or bool(board.castling_rights & _BB[origin]))
    )
    pawn_double = float(piece_type == chess.PAWN and abs(target - origin) == 16)
    return [
        float(piece_type), float(from_rel), float(to_rel), float(from_rel >> 3), float(to_rel >> 3),
        float(from_rel & 7), float(to_rel & 7), float((to_rel >> 3) - (from_rel >> 3)),
        float(chess.square_distance(origin, target)), float(captured_type is not None), float(captured_value),
        float(see), float(gives_check), float(is_mate), float(move.promotion or 0), float(castling),
        float(en_passant), recapture, takes_last, distance_last, last_capture, last_check, same_again, undoes,
        float(from_attackers != 0), float(from_hanging), float(to_attackers), float(to_defenders),
        float(hanging_after), float(hanging_after - hanging_before), float(threat_after),
        float(threat_after - threat_before), loses_castling, pawn_double,
    ]  # fmt: skip


def _append_engine(rows: list[list[float]], legal: list[chess.Move], engine: EngineScores) -> None:
    scores = [engine.get(move.uci()) for move in legal]
    known = [clip_score(score) for score in scores if score is not None]
    best = max(known) if known else None
    ranked = sorted(set(known), reverse=True)
    rank_of = {score: index for index, score in enumerate(ranked)}
    near = sum(1 for score in known if best is not None and score >= best - NEAR_BEST_CP)
    best_win = win_probability(best) if best is not None else math.nan
    for row, raw in zip(rows, scores, strict=True):
        if raw is None or best is None:
            row.extend([math.nan] * len(ENGINE_FEATURES))
            continue
        score = clip_score(raw)
        win = win_probability(score)
        row.extend([
            float(score), float(best - score), float(rank_of[score]), win, best_win - win, float(best), float(near),
        ])  # fmt: skip


def _append_book(rows: list[list[float]], legal: list[chess.Move], book: BookCounts | None) -> None:
    games = book.games if book is not None else 0
    for row, move in zip(rows, legal, strict=True):
        count = book.moves.get(move.uci(), 0) if book is not None else 0
        share = count / games if games > 0 else math.nan
        row.extend([float(games), share, float(count)])
