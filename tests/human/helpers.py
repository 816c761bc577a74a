"""What the human-model tests share: hand-made boards, one move's features, slices of a shared
file, the `diffimax human` command line, and what the one-line error tests of damaged model and
corpus files (test_model, test_schema, test_corpus) share: the position `explain` is given, and
the checks that a model error or a failed command says one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import chess
import pytest

from pipeline.human.context import MoverContext
from pipeline.human.features import move_features
from pipeline.human.model import ModelError
from tests.conftest import GAMES, ROOT

PYTHON = sys.executable

# A position where the responder (Black) is to move: explain judges its replies.
EXPLAIN_FEN = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"


def board_after(*moves: str, fen: str | None = None) -> chess.Board:
    board = chess.Board(fen) if fen else chess.Board()
    for move in moves:
        board.push_san(move)
    return board


def row_of(board: chess.Board, uci: str, context: MoverContext | None = None) -> dict[str, float]:
    matrix = move_features(board, context or MoverContext())
    return dict(zip(matrix.names, matrix.values[matrix.moves.index(uci)].tolist(), strict=True))


def slice_pgn(tmp_path: Path, games: int, name: str = "slice.pgn") -> Path:
    """The first `games` games of lichess_100.pgn, as a file of a user's own (all training games)."""
    text = (GAMES / "lichess_100.pgn").read_text(encoding="utf-8")
    parts = text.split("[Event ")[1 : games + 1]
    path = tmp_path / name
    path.write_text("".join("[Event " + part for part in parts), encoding="utf-8")
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [PYTHON, "-m", "pipeline.cli", "human", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )


def one_line(error: pytest.ExceptionInfo[ModelError]) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def assert_one_line_naming(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    for word in words:
        assert word in lines[0], lines[0]
