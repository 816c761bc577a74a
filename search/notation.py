"""Moves for people: the rows' UCI in SAN at the row's position.

The dataset keeps moves in UCI for machines (a move is the same string in every position); a
person reads SAN. The views (`schemas/views.sql`, through `pipeline.dataset.duck`) and the report
name moves with these functions. A move that is not legal where the row says (a damaged row) is
shown as it is, never dropped, so a reader still sees what the row holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import chess


def legal_move(board: chess.Board, uci: Any) -> chess.Move | None:
    """`uci` as a legal move of `board`, or None (a damaged row, or not a move at all)."""
    try:
        move = chess.Move.from_uci(str(uci))
    except ValueError:
        return None
    return move if board.is_legal(move) else None


def uci_as_san(board: chess.Board, uci: Any) -> str:
    """A UCI move of the data in SAN on `board` (as it is, when it is no legal move there)."""
    move = legal_move(board, uci)
    return board.san(move) if move is not None else str(uci)


def san_line(board: chess.Board, moves: Sequence[str]) -> str:
    """UCI moves played from `board` in SAN, space-separated; from the first one that is not legal
    there (a damaged row), the rest as they are."""
    played = board.copy(stack=False)
    words: list[str] = []
    for index, uci in enumerate(moves):
        move = legal_move(played, uci)
        if move is None:
            words.extend(str(rest) for rest in moves[index:])
            break
        words.append(played.san(move))
        played.push(move)
    return " ".join(words)


@lru_cache(maxsize=4096)
def _board(fen: str) -> chess.Board | None:
    try:
        return chess.Board(fen)
    except ValueError:
        return None


# The views call these once a row: a dataset repeats its positions (openings, transpositions), so
# the answers are kept (a cache of a few MB; python-chess's SAN is ~20 us a move).
@lru_cache(maxsize=65536)
def san_at(fen: str, uci: str) -> str:
    """`uci` in SAN at the position `fen` (as it is where the FEN or the move is unreadable)."""
    board = _board(fen)
    return uci if board is None else uci_as_san(board, uci)


def san_line_at(fen: str, moves: Sequence[str], *, after: str | None = None) -> str:
    """The UCI line `moves` in SAN from the position `fen`, after `after` where given (a
    refutation follows its trap move). Unreadable parts are shown as they are."""
    board = _board(fen)
    if board is None:
        return " ".join(moves)
    if after is not None:
        first = legal_move(board, after)
        if first is None:
            return " ".join(moves)
        board = board.copy(stack=False)
        board.push(first)
    return san_line(board, moves)
