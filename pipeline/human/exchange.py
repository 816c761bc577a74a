"""Static exchange evaluation on python-chess's bitboards, for the human-move model's features
(`pipeline.human.features`): what a capture wins with best play of both sides, and what is hanging.

The textbook swap algorithm: the least valuable attacker captures next, x-ray attackers behind a
capturer join in, pins are ignored, a king may capture last only (its value, KING_VALUE, makes any
recapture of it a loss).
"""

from __future__ import annotations

from typing import Final

import chess

# Piece values in pawns, by python-chess piece type (index 0 unused).
PIECE_VALUES: Final = (0, 1, 3, 3, 5, 9, 0)
# A king's value in the exchange: large, so that a king never captures into a defended square.
KING_VALUE: Final = 100
SEE_VALUES: Final = (0, 1, 3, 3, 5, 9, KING_VALUE)


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


def attackers_of(pieces: Pieces, color: bool, square: int, occupied: int) -> int:
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
        attackers = attackers_of(sides[color], color, square, occupied)
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


def capture_gain(sides: tuple[Pieces, Pieces], color: bool, square: int, occupied: int, victim: int) -> int:
    """What `color` wins by capturing the piece (type `victim`) on `square` with its least valuable
    attacker, then exchanging on; 0 when it has no attacker or the capture does not pay."""
    attackers = attackers_of(sides[color], color, square, occupied)
    if not attackers:
        return 0
    piece_type, bit = _least_valuable(sides[color], attackers)
    return max(0, _swap(sides, not color, square, occupied & ~bit, SEE_VALUES[victim], SEE_VALUES[piece_type]))


def most_winnable(sides: tuple[Pieces, Pieces], attacker: bool, occupied: int) -> int:
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
            gain = capture_gain(sides, attacker, bit.bit_length() - 1, occupied, piece_type)
            if gain > best:
                best = gain
    return best


def side_material(pieces: Pieces) -> int:
    """The material of one side's pieces in pawns (kings excluded)."""
    return sum(PIECE_VALUES[piece_type] * chess.popcount(pieces[piece_type]) for piece_type in range(1, 6))


def pieces_by_side(board: chess.Board) -> tuple[Pieces, Pieces]:
    """Bitboards by piece type: (Black's, White's), indexable by a python-chess colour."""
    black = [0] + [board.pieces_mask(piece_type, chess.BLACK) for piece_type in range(1, 7)]
    white = [0] + [board.pieces_mask(piece_type, chess.WHITE) for piece_type in range(1, 7)]
    return black, white
