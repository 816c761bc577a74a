"""What the human-model tests share: hand-made boards, one move's features, slices of a shared
file, and the `diffimax human` command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import chess

from pipeline.human.context import MoverContext
from pipeline.human.features import move_features
from tests.conftest import GAMES, ROOT

PYTHON = sys.executable


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
