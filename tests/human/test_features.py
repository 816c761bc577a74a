"""Tests of `pipeline.human.features`: the features of every legal move (hand-made positions any
decent model must agree on: a queen recaptured, a free queen taken), the same for both colours,
bad groups refused, and the rating pool as a feature (and on the game records it comes from)."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest

from pipeline.human.context import MoverContext
from pipeline.human.data import read_inputs
from pipeline.human.features import FeatureError, feature_names, move_features
from tests.conftest import GAMES
from tests.human.helpers import board_after, row_of, slice_pgn


def test_one_row_per_legal_move_and_the_board_is_left_as_given():
    board = board_after("e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6")
    fen, stack = board.fen(), list(board.move_stack)
    matrix = move_features(board, MoverContext(1500, 30.0, 60, 0))
    assert sorted(matrix.moves) == sorted(move.uci() for move in board.legal_moves)
    assert matrix.values.shape == (board.legal_moves.count(), len(feature_names(("base",))))
    assert matrix.values.dtype == np.float32
    assert board.fen() == fen and board.move_stack == stack


def test_recapture_is_flagged_and_other_captures_are_not():
    # 1.e4 e5 2.Nf3 Nc6 3.d4 exd4 4.Nxd4 Nxd4: White's Qxd4 takes back on the square of the capture.
    board = board_after("e4", "e5", "Nf3", "Nc6", "d4", "exd4", "Nxd4", "Nxd4")
    recapture = row_of(board, "d1d4")
    assert recapture["recapture"] == 1.0 and recapture["takes_last_moved"] == 1.0
    assert recapture["see"] == 3.0  # the knight, and the queen on d4 is safe
    assert row_of(board, "b1c3")["recapture"] == 0.0


def test_capturing_a_hanging_piece_has_positive_see():
    board = chess.Board("4k3/8/8/3n4/8/8/8/3RK3 w - - 0 1")
    row = row_of(board, "d1d5")
    assert row["is_capture"] == 1.0 and row["captured_value"] == 3.0 and row["see"] == 3.0
    # Defended by a pawn the knight is no longer free: rook for knight loses two pawns.
    defended = chess.Board("4k3/8/4p3/3n4/8/8/8/3RK3 w - - 0 1")
    assert row_of(defended, "d1d5")["see"] == -2.0
    assert row_of(defended, "d1d5")["hanging_after"] == 5.0


def test_a_move_that_hangs_the_queen_is_flagged():
    # 1.e4 d5: Qg4?? walks into the c8 bishop; Qf3 is safe.
    board = board_after("e4", "d5")
    blunder = row_of(board, "d1g4")
    assert blunder["see"] == -9.0 and blunder["hanging_after"] == 9.0 and blunder["to_attackers"] == 1.0
    safe = row_of(board, "d1f3")
    assert safe["see"] == 0.0 and safe["hanging_after"] < 9.0


def test_moving_a_defender_away_leaves_another_piece_hanging():
    # The rook on d1 guards the knight on d4 from the black rook; Rd1-h1 abandons it.
    board = chess.Board("3rk3/8/8/8/3N4/8/6K1/3R4 w - - 0 1")
    assert row_of(board, "d1h1")["hanging_after"] == 3.0
    assert row_of(board, "d1d2")["hanging_after"] == 0.0
    assert row_of(board, "d1h1")["hanging_change"] == 3.0


def test_check_mate_castling_en_passant_and_promotion_flags():
    scholar = board_after("e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6")
    mate = row_of(scholar, "h5f7")
    assert mate["is_check"] == 1.0 and mate["is_mate"] == 1.0 and mate["see"] == 1.0
    assert row_of(scholar, "h5g6")["is_check"] == 0.0
    castle = board_after("e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5")
    assert row_of(castle, "e1g1")["is_castling"] == 1.0 and row_of(castle, "e1g1")["loses_castling"] == 0.0
    assert row_of(castle, "e1f1")["loses_castling"] == 1.0 and row_of(castle, "h1g1")["loses_castling"] == 1.0
    passant = board_after("e4", "a6", "e5", "d5")
    row = row_of(passant, "e5d6")
    assert row["is_en_passant"] == 1.0 and row["captured_value"] == 1.0 and row["is_capture"] == 1.0
    promote = chess.Board("8/4P1k1/8/8/8/8/8/4K3 w - - 0 1")
    assert row_of(promote, "e7e8q")["promotion"] == chess.QUEEN and row_of(promote, "e7e8q")["see"] == 8.0
    assert row_of(promote, "e7e8n")["promotion"] == chess.KNIGHT


def test_features_are_the_same_for_both_colours():
    # A position and its colour mirror describe the same moves (the last-move features need the
    # move stack, which a mirror does not keep, so both boards start from FEN); only the ply
    # differs (Black's mirror is half a move later).
    board = chess.Board("r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1N2/PPP2PPP/RNBQK2R w KQkq - 1 5")
    mirror = board.mirror()
    context = MoverContext(1700, 12.5, 60, 1)
    left = move_features(board, context)
    right = move_features(mirror, context)
    ply = left.names.index("ply")
    assert right.values[0, ply] == left.values[0, ply] + 1
    left.values[:, ply] = right.values[:, ply] = 0
    for index, uci in enumerate(left.moves):
        move = chess.Move.from_uci(uci)
        flipped = chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square), move.promotion)
        other = right.moves.index(flipped.uci())
        assert np.array_equal(left.values[index], right.values[other], equal_nan=True), uci


def test_unknown_context_is_nan_and_bad_groups_are_refused():
    row = row_of(chess.Board(), "e2e4")
    assert math.isnan(row["rating"]) and math.isnan(row["clock_seconds"]) and math.isnan(row["recapture"])
    with pytest.raises(FeatureError, match="unknown feature group 'eng'"):
        move_features(chess.Board(), MoverContext(), groups=("base", "eng"))  # type: ignore[arg-type]
    with pytest.raises(FeatureError, match="needs engine scores"):
        move_features(chess.Board(), MoverContext(), groups=("base", "engine"))
    with pytest.raises(FeatureError, match="no legal move"):
        move_features(board_after("f3", "e5", "g4", "Qh4"), MoverContext())


def test_the_pool_reaches_the_features_and_the_records(data_dir, tmp_path):
    board = board_after("e4", "e5")
    names = feature_names(("base", "pool"))
    assert names[-1] == "pool_chesscom"
    chesscom = move_features(board, MoverContext(900, pool="chesscom"), groups=("base", "pool")).values[:, -1]
    lichess = move_features(board, MoverContext(900, pool="lichess"), groups=("base", "pool")).values[:, -1]
    unknown = move_features(board, MoverContext(900), groups=("base", "pool")).values[:, -1]
    assert set(chesscom.tolist()) == {1.0} and set(lichess.tolist()) == {0.0} and np.isnan(unknown).all()
    text = (GAMES / "chesscom_mixed_1187.pgn").read_text(encoding="utf-8")
    sample = tmp_path / "mine.pgn"
    sample.write_text("[Event " + "[Event ".join(text.split("[Event ")[1:4]), encoding="utf-8")
    assert {record.pool for record in read_inputs([str(sample)])} == {"chesscom"}
    assert {record.pool for record in read_inputs([str(sample)], pool="lichess")} == {"lichess"}
    assert {record.pool for record in read_inputs([str(slice_pgn(tmp_path, 3))])} == {"lichess"}
