"""Tests of `pipeline.human.engine`: the shallow engine scores every legal move, the same way every
time, and ends its Stockfish process."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline.human.engine import ShallowEngine
from tests.conftest import needs_stockfish
from tests.human.helpers import board_after


@pytest.mark.stockfish
@needs_stockfish
def test_shallow_engine_scores_every_move_and_ends_its_process():
    board = board_after("e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6")
    engine = ShallowEngine()
    scores = engine.scores(board)
    assert set(scores) == {move.uci() for move in board.legal_moves}
    assert max(scores, key=lambda move: scores[move]) == "h5f7" and scores["h5f7"] > 1000  # mate in one
    assert engine.scores(board) == scores  # the same answer every time
    assert engine._engine is not None
    pid = engine._engine.pid
    assert pid is not None and Path(f"/proc/{pid}").exists()
    engine.close()
    assert wait_until_gone(pid)


def wait_until_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False
