"""Tests of `pipeline.human.maia3`, Maia-3 behind the human-move model seam: its inputs as the
network reads them, and the real network on real positions."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from pipeline.human.context import MoverContext
from pipeline.human.maia3 import HISTORY, Maia3Model, board_planes, encode, legal_indices, move_index
from tests.conftest import needs_maia3

# A Ruy Lopez: eight plies, so the current position has a full history of seven before it.
RUY = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6"]
ROOK, KING, PAWN = 3, 5, 0  # plane indices: pawn..king = 0..5 for the side to move, +6 for the other


def played(moves: list[str]) -> chess.Board:
    board = chess.Board()
    for move in moves:
        board.push_uci(move)
    return board


# -- the inputs, as the package's own tokenizer makes them (checked against it: docs/human.md) ----


def test_planes_are_seen_from_the_side_to_move() -> None:
    start = board_planes(chess.Board())
    assert start[chess.A1, ROOK] == 1 and start[chess.E1, KING] == 1  # White's own pieces
    assert start[chess.E8, KING + 6] == 1  # Black's king: the other side
    after_e4 = board_planes(played(["e2e4"]))  # Black to move: ranks mirrored, colours swapped
    assert after_e4[chess.E1, KING] == 1  # Black's king, on its own first rank
    assert after_e4[chess.E5, PAWN + 6] == 1  # White's e4 pawn, mirrored to the 5th rank
    assert after_e4.sum() == 32


def test_history_is_eight_positions_oldest_first_padded_with_the_oldest() -> None:
    board = played(["e2e4"])
    tokens = encode(board).reshape(64, HISTORY, 12)
    start, now = board_planes(chess.Board()), board_planes(board)
    for slot in range(HISTORY - 1):
        assert np.array_equal(tokens[:, slot], start)  # the start, repeated in front
    assert np.array_equal(tokens[:, -1], now)
    long = played(RUY)
    history = encode(long).reshape(64, HISTORY, 12)
    assert np.array_equal(history[:, 0], board_planes(played(RUY[:1])))  # seven moves back
    alone = encode(chess.Board(long.fen())).reshape(64, HISTORY, 12)  # a FEN alone: itself eight times
    assert all(np.array_equal(alone[:, slot], board_planes(long)) for slot in range(HISTORY))


def test_vocabulary_indices() -> None:
    assert move_index(chess.Move.from_uci("e2e4"), chess.WHITE) == chess.E2 * 64 + chess.E4
    assert move_index(chess.Move.from_uci("e7e5"), chess.BLACK) == chess.E2 * 64 + chess.E4  # mirrored
    assert move_index(chess.Move.from_uci("e1g1"), chess.WHITE) == chess.E1 * 64 + chess.G1  # castling: king's move
    assert move_index(chess.Move.from_uci("a7a8q"), chess.WHITE) == 4096
    assert move_index(chess.Move.from_uci("b7a8n"), chess.WHITE) == 4096 + 32 + 3
    assert move_index(chess.Move.from_uci("e2e1r"), chess.BLACK) == 4096 + 4 * 32 + 4 * 4 + 1
    board = chess.Board("8/P6k/8/8/8/8/6K1/8 w - - 0 1")
    names, indices = legal_indices(board)
    assert len(set(indices.tolist())) == len(names) and all(0 <= i < 4352 for i in indices)


# -- the real network ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def maia3() -> Maia3Model:
    return Maia3Model.load()


@needs_maia3
def test_probabilities_cover_the_legal_moves_and_batches_equal_single_calls(maia3: Maia3Model) -> None:
    items = [
        (played(RUY), MoverContext(rating=1500, opponent_rating=1500)),
        (chess.Board(), MoverContext(rating=800)),
        (played(["e2e4", "e7e5", "d1h5"]), MoverContext(rating=2200, opponent_rating=2100)),
        (chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"), None),  # stalemate: no move
    ]
    batch = maia3.batch_probabilities(items)
    for (board, context), found in zip(items, batch, strict=True):
        assert set(found) == {move.uci() for move in board.legal_moves}
        if found:
            assert sum(found.values()) == pytest.approx(1.0)
            single = maia3.move_probabilities(board, context)
            assert all(abs(single[move] - p) < 1e-4 for move, p in found.items())
    assert batch[3] == {}
    opening = batch[1]
    assert max(opening, key=opening.__getitem__) in ("e2e4", "d2d4")


@needs_maia3
def test_history_and_ratings_change_the_answer(maia3: Maia3Model) -> None:
    board = played(RUY)
    with_history = maia3.move_probabilities(board, MoverContext(rating=1500))
    fen_alone = maia3.move_probabilities(chess.Board(board.fen()), MoverContext(rating=1500))
    assert max(abs(with_history[m] - fen_alone[m]) for m in with_history) > 1e-3
    # Scholar's mate threat: the weaker player defends less often than the stronger.
    threat = played(["e2e4", "e7e5", "f1c4", "b8c6", "d1h5"])
    weak = maia3.move_probabilities(threat, MoverContext(rating=600, opponent_rating=600))
    strong = maia3.move_probabilities(threat, MoverContext(rating=2200, opponent_rating=2200))
    assert weak["g8f6"] > strong["g8f6"]  # Nf6?? loses to Qxf7#
    loss, draw, win = maia3.outcome(threat, MoverContext(rating=1500))
    assert loss + draw + win == pytest.approx(1.0)
