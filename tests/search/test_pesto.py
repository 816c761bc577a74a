"""Tests for the PeSTO evaluation: symmetry, square mapping, tapering, published values.

The expected numbers in the spot checks are worked out by hand from the tables
as published on the Chess Programming Wiki ("PeSTO's Evaluation Function"),
so a transcription or orientation error in search/pesto.py shows up here.
"""

from __future__ import annotations

import random

import chess
import pytest

from search import pesto
from search.pesto import (
    EG_TABLE,
    MG_TABLE,
    PIECE_VALUES_MG,
    evaluate,
    evaluate_white,
    game_phase,
)

# Mixed bag of openings, middlegames and endgames, both sides to move.
SAMPLE_FENS = [
    chess.STARTING_FEN,
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
    "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP2BPPP/R2QKB1R w KQ - 0 8",
    "6nr/p5pk/p3p2p/5P2/3BQ2q/5P1N/6KP/1R6 b - - 0 28",
    "Q5nr/p4pp1/p3pk1p/2B5/6Pq/5P1N/6KP/1b5R w - - 0 25",
    "8/4k3/8/8/8/8/4P3/4K3 w - - 0 1",
    "4k3/8/8/8/8/8/8/R3K3 b - - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
]


def _flip_turn(board: chess.Board) -> chess.Board:
    """Return a copy of ``board`` with only the side to move changed."""
    flipped = board.copy(stack=False)
    flipped.turn = not flipped.turn
    flipped.ep_square = None
    return flipped


def _random_positions(seed: int, games: int, max_plies: int) -> list[chess.Board]:
    """Return positions from deterministic random playouts (no flaky tests)."""
    rng = random.Random(seed)
    positions: list[chess.Board] = []
    for _ in range(games):
        board = chess.Board()
        for _ in range(rng.randrange(1, max_plies)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        positions.append(board.copy(stack=False))
    return positions


def test_start_position_is_exactly_zero() -> None:
    """Pure PeSTO has no tempo bonus, so the symmetric start is 0 for both sides."""
    board = chess.Board()
    assert evaluate_white(board) == 0
    assert evaluate(board) == 0
    assert evaluate(_flip_turn(board)) == 0


@pytest.mark.parametrize(
    "fen",
    [
        "4k3/8/2n2n2/8/8/2N2N2/8/4K3 w - - 0 1",
        "r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R b KQkq - 0 1",
        "4k3/pppppppp/8/8/8/8/PPPPPPPP/4K3 w - - 0 1",
    ],
)
def test_colour_symmetric_positions_are_zero(fen: str) -> None:
    """A position equal to its own colour mirror must evaluate to exactly 0."""
    board = chess.Board(fen)
    assert board.mirror().board_fen() == board.board_fen()
    assert evaluate_white(board) == 0
    assert evaluate(board) == 0


@pytest.mark.parametrize("fen", SAMPLE_FENS)
def test_flipping_side_to_move_negates(fen: str) -> None:
    """Same pieces, other side to move: the negamax score is exactly negated."""
    board = chess.Board(fen)
    flipped = _flip_turn(board)
    assert evaluate_white(flipped) == evaluate_white(board)
    assert evaluate(flipped) == -evaluate(board)


@pytest.mark.parametrize("fen", SAMPLE_FENS)
def test_mirror_keeps_side_to_move_value(fen: str) -> None:
    """board.mirror() swaps colours and turn, so the side-to-move score is unchanged."""
    board = chess.Board(fen)
    mirrored = board.mirror()
    assert evaluate(mirrored) == evaluate(board)
    assert evaluate_white(mirrored) == -evaluate_white(board)


def test_mirror_symmetry_on_random_positions() -> None:
    """Exact colour symmetry must hold everywhere, including odd tapered blends."""
    for board in _random_positions(seed=2024, games=150, max_plies=120):
        mirrored = board.mirror()
        assert evaluate(mirrored) == evaluate(board), board.fen()
        assert evaluate(_flip_turn(board)) == -evaluate(board), board.fen()


def test_white_knight_f3_equals_black_knight_f6() -> None:
    """Square mapping: Black's table is the rank-mirror of White's."""
    for table in (MG_TABLE, EG_TABLE):
        assert table[chess.WHITE][chess.KNIGHT][chess.F3] == table[chess.BLACK][chess.KNIGHT][chess.F6]
    board = chess.Board("4k3/8/5n2/8/8/5N2/8/4K3 w - - 0 1")
    assert evaluate_white(board) == 0


def test_every_table_entry_is_rank_mirrored_between_colours() -> None:
    """For every piece and square, White on sq equals Black on the mirrored square."""
    for table in (MG_TABLE, EG_TABLE):
        for piece_type in chess.PIECE_TYPES:
            for sq in chess.SQUARES:
                assert table[chess.WHITE][piece_type][sq] == table[chess.BLACK][piece_type][chess.square_mirror(sq)]


def test_published_table_orientation() -> None:
    """Published index 0 is a8 for White: check corners and a first-rank entry."""
    assert pesto.MG_KNIGHT_TABLE[0] == -167  # a8 in the published layout
    assert pesto.MG_KNIGHT_TABLE[63] == -23  # h1 in the published layout
    # White knight on a8 (python-chess 56) reads published index 0.
    assert MG_TABLE[chess.WHITE][chess.KNIGHT][chess.A8] == 337 - 167
    # White king on g1 reads published index 62 (mg +24: the castled king).
    assert MG_TABLE[chess.WHITE][chess.KING][chess.G1] == 24
    # Black king on g8 is the mirror and gets the same bonus.
    assert MG_TABLE[chess.BLACK][chess.KING][chess.G8] == 24
    # Pawns on the back ranks never happen; their PST rows are zero.
    assert all(v == 0 for v in pesto.MG_PAWN_TABLE[:8] + pesto.MG_PAWN_TABLE[56:])
    assert all(v == 0 for v in pesto.EG_PAWN_TABLE[:8] + pesto.EG_PAWN_TABLE[56:])


def test_published_knight_centre_values() -> None:
    """Spot-check mg/eg knight entries in the e4/d5 region against the CPW tables."""
    # mg_knight_table rank-4 row is -13, 4, 16, 13, 28, 19, 21, -8 -> e4 = 28.
    assert MG_TABLE[chess.WHITE][chess.KNIGHT][chess.E4] == 337 + 28
    # mg_knight_table rank-5 row is -9, 17, 19, 53, 37, 69, 18, 22 -> d5 = 53.
    assert MG_TABLE[chess.WHITE][chess.KNIGHT][chess.D5] == 337 + 53
    # eg_knight_table rank-4 row is -18, -6, 16, 25, 16, 17, 4, -18 -> e4 = 16.
    assert EG_TABLE[chess.WHITE][chess.KNIGHT][chess.E4] == 281 + 16
    # Black's mirror squares: e5 and d4.
    assert MG_TABLE[chess.BLACK][chess.KNIGHT][chess.E5] == 337 + 28
    assert MG_TABLE[chess.BLACK][chess.KNIGHT][chess.D4] == 337 + 53


def test_all_published_tables_have_64_entries() -> None:
    """Guard against a dropped or duplicated number while transcribing."""
    for table in pesto.MG_PUBLISHED[1:] + pesto.EG_PUBLISHED[1:]:
        assert len(table) == 64
    for combined in (MG_TABLE, EG_TABLE):
        for color in (chess.WHITE, chess.BLACK):
            for piece_type in chess.PIECE_TYPES:
                assert len(combined[color][piece_type]) == 64


# (name, plain sum, position-weighted sum) per published table.  Computed from
# the CPW tables (cross-checked against an independent copy of the published
# source), so an accidental edit to any single entry changes a checksum.
TABLE_CHECKSUMS = [
    ("MG_PAWN_TABLE", 759, 8726),
    ("MG_KNIGHT_TABLE", -59, -3614),
    ("MG_BISHOP_TABLE", 341, 13118),
    ("MG_ROOK_TABLE", 505, -8857),
    ("MG_QUEEN_TABLE", 146, -6544),
    ("MG_KING_TABLE", -999, -33058),
    ("EG_PAWN_TABLE", 2043, 33396),
    ("EG_KNIGHT_TABLE", -1018, -30748),
    ("EG_BISHOP_TABLE", -268, -9546),
    ("EG_ROOK_TABLE", 52, -5514),
    ("EG_QUEEN_TABLE", 565, -608),
    ("EG_KING_TABLE", 176, -461),
]


@pytest.mark.parametrize(("name", "plain", "weighted"), TABLE_CHECKSUMS)
def test_published_table_checksums(name: str, plain: int, weighted: int) -> None:
    """Catch single-entry typos or swapped entries that spot checks would miss."""
    table: tuple[int, ...] = getattr(pesto, name)
    assert sum(table) == plain
    assert sum((i + 1) * v for i, v in enumerate(table)) == weighted


def test_piece_values_for_mvv_lva() -> None:
    """The exported middlegame values are PeSTO's and order the victims sensibly."""
    assert PIECE_VALUES_MG == {
        chess.PAWN: 82,
        chess.KNIGHT: 337,
        chess.BISHOP: 365,
        chess.ROOK: 477,
        chess.QUEEN: 1025,
        chess.KING: 0,
    }
    order = [chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN]
    values = [PIECE_VALUES_MG[pt] for pt in order]
    assert values == sorted(values)


def test_white_up_a_queen() -> None:
    """Material dominates: a full extra queen is worth well over 8 pawns."""
    board = chess.Board("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    assert evaluate_white(board) > 800
    assert evaluate(board) > 800
    assert evaluate(_flip_turn(board)) < -800


def test_one_e4_is_pure_middlegame() -> None:
    """At phase 24 only mg tables count: 1.e4 moves a pawn from mg -15 to mg +17."""
    board = chess.Board()
    board.push_san("e4")
    assert game_phase(board) == 24
    assert evaluate_white(board) == 17 - (-15)
    assert evaluate(board) == -32  # Black to move


def test_king_and_pawn_endgame_uses_eg_tables() -> None:
    """Phase 0: the score is the eg sum (mg would give 118 here, eg gives 65)."""
    board = chess.Board("8/4k3/8/8/8/8/4P3/4K3 w - - 0 1")
    assert game_phase(board) == 0
    # White: king e1 eg -28, pawn e2 94 + 13; Black: king e7 eg 14.
    assert evaluate_white(board) == (-28 + 94 + 13) - 14
    assert evaluate(board) == 65
    assert evaluate(_flip_turn(board)) == -65


def test_intermediate_phase_blend_truncates_toward_zero() -> None:
    """Phase 2 (one rook): blend = (458*2 + 503*22) / 24 = 499.25 -> 499 / -499."""
    board = chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 0 1")
    assert game_phase(board) == 2
    # Rook a1: mg 477 - 19, eg 512 - 9; the two kings cancel by symmetry.
    assert evaluate_white(board) == 499
    # Mirrored, the blend is -499.25; it must round to -499, not -500.
    assert evaluate_white(board.mirror()) == -499
    assert evaluate(board.mirror()) == 499


def test_phase_is_clamped_after_promotions() -> None:
    """Seven queens give raw phase 28; clamped to 24 the score is mg only."""
    board = chess.Board("k7/8/8/8/8/8/8/QQQQQQQK b - - 0 1")
    assert game_phase(board) == pesto.MAX_PHASE == 24
    queens_mg = 7 * 1025 + (-1 - 18 - 9 + 10 - 15 - 25 - 31)
    kings_mg = 14 - (-15)  # White king h1 vs Black king a8
    assert evaluate_white(board) == queens_mg + kings_mg
    assert evaluate(board) == -(queens_mg + kings_mg)


def test_game_phase_of_start_position() -> None:
    """Full material is MAX_PHASE (per side: 4 minors x1 + 2 rooks x2 + queen x4 = 12)."""
    assert game_phase(chess.Board()) == 24
    assert game_phase(chess.Board("4k3/8/8/8/8/8/8/4K3 w - - 0 1")) == 0


def test_evaluate_does_not_mutate_board() -> None:
    """The evaluator is pure: the board (and its move stack) is untouched."""
    board = chess.Board()
    for san in ("e4", "c5", "Nf3", "d6"):
        board.push_san(san)
    before_fen = board.fen()
    before_stack = list(board.move_stack)
    evaluate(board)
    evaluate_white(board)
    assert board.fen() == before_fen
    assert board.move_stack == before_stack
