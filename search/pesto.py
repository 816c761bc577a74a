"""PeSTO tapered piece-square evaluation (Rofchade tables by Ronald Friederich).

Why this module exists: a search needs a static evaluation that is cheap,
deterministic and well-tuned.  PeSTO ("Piece-Square Tables Only") gets
surprisingly strong play out of nothing but Texel-tuned middlegame and
endgame piece-square tables blended by game phase, so it is a solid
baseline with no I/O and no state.

The tables below are the genuine ones published on the Chess Programming
Wiki page "PeSTO's Evaluation Function".  They are written *visually* from
White's point of view: index 0 is a8, index 7 is h8, index 56 is a1 and
index 63 is h1.  python-chess numbers squares the other way round
(a1 = 0 ... h8 = 63), so:

* a White piece on python-chess square ``sq`` uses published index ``sq ^ 56``
  (flip the rank);
* a Black piece on ``sq`` uses published index ``sq`` directly, because
  flipping the rank twice (board numbering, then colour mirror) cancels out.

Material is folded into the tables once at import time so evaluation is a
handful of table look-ups per piece.
"""

from __future__ import annotations

import chess

__all__ = [
    "EG_TABLE",
    "GAMEPHASE_INC",
    "MAX_PHASE",
    "MG_TABLE",
    "PIECE_VALUES_EG",
    "PIECE_VALUES_MG",
    "evaluate",
    "evaluate_white",
    "game_phase",
]

# ---------------------------------------------------------------------------
# Material values (centipawns); the king gets 0 because it is never traded.
# ---------------------------------------------------------------------------

# Middlegame material per python-chess piece type; also used for MVV-LVA.
PIECE_VALUES_MG: dict[int, int] = {
    chess.PAWN: 82,
    chess.KNIGHT: 337,
    chess.BISHOP: 365,
    chess.ROOK: 477,
    chess.QUEEN: 1025,
    chess.KING: 0,
}

# Endgame material per python-chess piece type.
PIECE_VALUES_EG: dict[int, int] = {
    chess.PAWN: 94,
    chess.KNIGHT: 281,
    chess.BISHOP: 297,
    chess.ROOK: 512,
    chess.QUEEN: 936,
    chess.KING: 0,
}

# Phase weight each piece type contributes (P0 N1 B1 R2 Q4 K0); index 0 unused.
GAMEPHASE_INC: tuple[int, ...] = (0, 0, 1, 1, 2, 4, 0)

# Phase of the full starting material; also the clamp for early promotions.
MAX_PHASE = 24

# ---------------------------------------------------------------------------
# Published piece-square tables, index 0 = a8 ... index 63 = h1 (White's view).
# ---------------------------------------------------------------------------

# Middlegame pawn PST (published layout, a8 first).
MG_PAWN_TABLE: tuple[int, ...] = (
      0,   0,   0,   0,   0,   0,  0,   0,
     98, 134,  61,  95,  68, 126, 34, -11,
     -6,   7,  26,  31,  65,  56, 25, -20,
    -14,  13,   6,  21,  23,  12, 17, -23,
    -27,  -2,  -5,  12,  17,   6, 10, -25,
    -26,  -4,  -4, -10,   3,   3, 33, -12,
    -35,  -1, -20, -23, -15,  24, 38, -22,
      0,   0,   0,   0,   0,   0,  0,   0,
)  # fmt: skip

# Endgame pawn PST (published layout, a8 first).
EG_PAWN_TABLE: tuple[int, ...] = (
      0,   0,   0,   0,   0,   0,   0,   0,
    178, 173, 158, 134, 147, 132, 165, 187,
     94, 100,  85,  67,  56,  53,  82,  84,
     32,  24,  13,   5,  -2,   4,  17,  17,
     13,   9,  -3,  -7,  -7,  -8,   3,  -1,
      4,   7,  -6,   1,   0,  -5,  -1,  -8,
     13,   8,   8,  10,  13,   0,   2,  -7,
      0,   0,   0,   0,   0,   0,   0,   0,
)  # fmt: skip

# Middlegame knight PST (published layout, a8 first).
MG_KNIGHT_TABLE: tuple[int, ...] = (
    -167, -89, -34, -49,  61, -97, -15, -107,
     -73, -41,  72,  36,  23,  62,   7,  -17,
     -47,  60,  37,  65,  84, 129,  73,   44,
      -9,  17,  19,  53,  37,  69,  18,   22,
     -13,   4,  16,  13,  28,  19,  21,   -8,
     -23,  -9,  12,  10,  19,  17,  25,  -16,
     -29, -53, -12,  -3,  -1,  18, -14,  -19,
    -105, -21, -58, -33, -17, -28, -19,  -23,
)  # fmt: skip

# Endgame knight PST (published layout, a8 first).
EG_KNIGHT_TABLE: tuple[int, ...] = (
    -58, -38, -13, -28, -31, -27, -63, -99,
    -25,  -8, -25,  -2,  -9, -25, -24, -52,
    -24, -20,  10,   9,  -1,  -9, -19, -41,
    -17,   3,  22,  22,  22,  11,   8, -18,
    -18,  -6,  16,  25,  16,  17,   4, -18,
    -23,  -3,  -1,  15,  10,  -3, -20, -22,
    -42, -20, -10,  -5,  -2, -20, -23, -44,
    -29, -51, -23, -15, -22, -18, -50, -64,
)  # fmt: skip

# Middlegame bishop PST (published layout, a8 first).
MG_BISHOP_TABLE: tuple[int, ...] = (
    -29,   4, -82, -37, -25, -42,   7,  -8,
    -26,  16, -18, -13,  30,  59,  18, -47,
    -16,  37,  43,  40,  35,  50,  37,  -2,
     -4,   5,  19,  50,  37,  37,   7,  -2,
     -6,  13,  13,  26,  34,  12,  10,   4,
      0,  15,  15,  15,  14,  27,  18,  10,
      4,  15,  16,   0,   7,  21,  33,   1,
    -33,  -3, -14, -21, -13, -12, -39, -21,
)  # fmt: skip

# Endgame bishop PST (published layout, a8 first).
EG_BISHOP_TABLE: tuple[int, ...] = (
    -14, -21, -11,  -8,  -7,  -9, -17, -24,
     -8,  -4,   7, -12,  -3, -13,  -4, -14,
      2,  -8,   0,  -1,  -2,   6,   0,   4,
     -3,   9,  12,   9,  14,  10,   3,   2,
     -6,   3,  13,  19,   7,  10,  -3,  -9,
    -12,  -3,   8,  10,  13,   3,  -7, -15,
    -14, -18,  -7,  -1,   4,  -9, -15, -27,
    -23,  -9, -23,  -5,  -9, -16,  -5, -17,
)  # fmt: skip

# Middlegame rook PST (published layout, a8 first).
MG_ROOK_TABLE: tuple[int, ...] = (
     32,  42,  32,  51,  63,   9,  31,  43,
     27,  32,  58,  62,  80,  67,  26,  44,
     -5,  19,  26,  36,  17,  45,  61,  16,
    -24, -11,   7,  26,  24,  35,  -8, -20,
    -36, -26, -12,  -1,   9,  -7,   6, -23,
    -45, -25, -16, -17,   3,   0,  -5, -33,
    -44, -16, -20,  -9,  -1,  11,  -6, -71,
    -19, -13,   1,  17,  16,   7, -37, -26,
)  # fmt: skip

# Endgame rook PST (published layout, a8 first).
EG_ROOK_TABLE: tuple[int, ...] = (
     13,  10,  18,  15,  12,  12,   8,   5,
     11,  13,  13,  11,  -3,   3,   8,   3,
      7,   7,   7,   5,   4,  -3,  -5,  -3,
      4,   3,  13,   1,   2,   1,  -1,   2,
      3,   5,   8,   4,  -5,  -6,  -8, -11,
     -4,   0,  -5,  -1,  -7, -12,  -8, -16,
     -6,  -6,   0,   2,  -9,  -9, -11,  -3,
     -9,   2,   3,  -1,  -5, -13,   4, -20,
)  # fmt: skip

# Middlegame queen PST (published layout, a8 first).
MG_QUEEN_TABLE: tuple[int, ...] = (
    -28,   0,  29,  12,  59,  44,  43,  45,
    -24, -39,  -5,   1, -16,  57,  28,  54,
    -13, -17,   7,   8,  29,  56,  47,  57,
    -27, -27, -16, -16,  -1,  17,  -2,   1,
     -9, -26,  -9, -10,  -2,  -4,   3,  -3,
    -14,   2, -11,  -2,  -5,   2,  14,   5,
    -35,  -8,  11,   2,   8,  15,  -3,   1,
     -1, -18,  -9,  10, -15, -25, -31, -50,
)  # fmt: skip

# Endgame queen PST (published layout, a8 first).
EG_QUEEN_TABLE: tuple[int, ...] = (
     -9,  22,  22,  27,  27,  19,  10,  20,
    -17,  20,  32,  41,  58,  25,  30,   0,
    -20,   6,   9,  49,  47,  35,  19,   9,
      3,  22,  24,  45,  57,  40,  57,  36,
    -18,  28,  19,  47,  31,  34,  39,  23,
    -16, -27,  15,   6,   9,  17,  10,   5,
    -22, -23, -30, -16, -16, -23, -36, -32,
    -33, -28, -22, -43,  -5, -32, -20, -41,
)  # fmt: skip

# Middlegame king PST (published layout, a8 first).
MG_KING_TABLE: tuple[int, ...] = (
    -65,  23,  16, -15, -56, -34,   2,  13,
     29,  -1, -20,  -7,  -8,  -4, -38, -29,
     -9,  24,   2, -16, -20,   6,  22, -22,
    -17, -20, -12, -27, -30, -25, -14, -36,
    -49,  -1, -27, -39, -46, -44, -33, -51,
    -14, -14, -22, -46, -44, -30, -15, -27,
      1,   7,  -8, -64, -43, -16,   9,   8,
    -15,  36,  12, -54,   8, -28,  24,  14,
)  # fmt: skip

# Endgame king PST (published layout, a8 first).
EG_KING_TABLE: tuple[int, ...] = (
    -74, -35, -18, -18, -11,  15,   4, -17,
    -12,  17,  14,  17,  17,  38,  23,  11,
     10,  17,  23,  15,  20,  45,  44,  13,
     -8,  22,  24,  27,  26,  33,  26,   3,
    -18,  -4,  21,  24,  27,  23,   9, -11,
    -19,  -3,  11,  21,  23,  16,   7,  -9,
    -27, -11,   4,  13,  14,   4,  -5, -17,
    -53, -34, -21, -11, -28, -14, -24, -43,
)  # fmt: skip

# Published middlegame PSTs indexed by python-chess piece type (index 0 unused).
MG_PUBLISHED: tuple[tuple[int, ...], ...] = (
    (),
    MG_PAWN_TABLE,
    MG_KNIGHT_TABLE,
    MG_BISHOP_TABLE,
    MG_ROOK_TABLE,
    MG_QUEEN_TABLE,
    MG_KING_TABLE,
)

# Published endgame PSTs indexed by python-chess piece type (index 0 unused).
EG_PUBLISHED: tuple[tuple[int, ...], ...] = (
    (),
    EG_PAWN_TABLE,
    EG_KNIGHT_TABLE,
    EG_BISHOP_TABLE,
    EG_ROOK_TABLE,
    EG_QUEEN_TABLE,
    EG_KING_TABLE,
)


def _combine(published: tuple[tuple[int, ...], ...], values: dict[int, int]) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Fold material into the PSTs and re-index them by python-chess square.

    Doing this once at import time is why evaluation needs only one look-up
    per piece.  The result is indexed ``[color][piece_type][square]`` with
    ``color`` being ``chess.BLACK`` (0) or ``chess.WHITE`` (1), piece type
    index 0 holding an all-zero placeholder, and ``square`` in python-chess
    numbering (a1 = 0).  White flips the rank (``sq ^ 56``) because the
    published layout starts at a8; Black reads the published index directly,
    which is exactly the colour mirror.
    """
    empty = (0,) * 64
    by_color: list[tuple[tuple[int, ...], ...]] = []
    for color in (chess.BLACK, chess.WHITE):
        flip = 56 if color == chess.WHITE else 0
        per_piece: list[tuple[int, ...]] = [empty]
        for piece_type in chess.PIECE_TYPES:
            table = published[piece_type]
            value = values[piece_type]
            per_piece.append(tuple(value + table[sq ^ flip] for sq in chess.SQUARES))
        by_color.append(tuple(per_piece))
    return tuple(by_color)


# Middlegame material+PST, indexed [color][piece_type][python-chess square].
MG_TABLE: tuple[tuple[tuple[int, ...], ...], ...] = _combine(MG_PUBLISHED, PIECE_VALUES_MG)

# Endgame material+PST, indexed [color][piece_type][python-chess square].
EG_TABLE: tuple[tuple[tuple[int, ...], ...], ...] = _combine(EG_PUBLISHED, PIECE_VALUES_EG)

# Per piece type P..K: (phase inc, White mg, White eg, Black mg, Black eg), so
# the hot loop unpacks one flat tuple instead of doing nested indexing.
_PLAN: tuple[
    tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]],
    ...,
] = tuple(
    (
        GAMEPHASE_INC[pt],
        MG_TABLE[chess.WHITE][pt],
        EG_TABLE[chess.WHITE][pt],
        MG_TABLE[chess.BLACK][pt],
        EG_TABLE[chess.BLACK][pt],
    )
    for pt in chess.PIECE_TYPES
)


def game_phase(board: chess.Board) -> int:
    """Return the clamped game phase: MAX_PHASE = full middlegame, 0 = pure endgame.

    Exposed separately so callers (and tests) can reason about tapering
    without re-deriving the increments; clamping keeps positions with early
    promotions from extrapolating beyond the middlegame tables.
    """
    phase = (
        board.knights.bit_count()
        + board.bishops.bit_count()
        + 2 * board.rooks.bit_count()
        + 4 * board.queens.bit_count()
    )
    return min(phase, MAX_PHASE)


def evaluate_white(board: chess.Board) -> int:
    """Return the tapered PeSTO score in centipawns from White's point of view.

    Computed from White's side once (rather than per side to move) so that
    colour symmetry holds exactly: the tapered blend rounds toward zero, so
    ``evaluate_white(board.mirror()) == -evaluate_white(board)`` with no
    off-by-one from floor division of negative numbers.
    """
    white = board.occupied_co[chess.WHITE]
    black = board.occupied_co[chess.BLACK]
    type_masks = (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
    )
    mg = 0
    eg = 0
    phase = 0
    scan = chess.scan_forward
    for (inc, mg_w, eg_w, mg_b, eg_b), mask in zip(_PLAN, type_masks, strict=False):
        if not mask:
            continue
        if inc:
            phase += inc * mask.bit_count()
        for sq in scan(mask & white):
            mg += mg_w[sq]
            eg += eg_w[sq]
        for sq in scan(mask & black):
            mg -= mg_b[sq]
            eg -= eg_b[sq]
    phase = min(phase, MAX_PHASE)
    blended = mg * phase + eg * (MAX_PHASE - phase)
    # Truncate toward zero (as the C original does) so negation is exact.
    if blended >= 0:
        return blended // MAX_PHASE
    return -(-blended // MAX_PHASE)


def evaluate(board: chess.Board) -> int:
    """Return the PeSTO score in centipawns for the side to move (negamax).

    Negamax search wants "higher is better for whoever is to move", so this
    just signs the White-relative score; there is deliberately no tempo
    bonus, keeping symmetric positions at exactly 0.
    """
    score = evaluate_white(board)
    return score if board.turn == chess.WHITE else -score
