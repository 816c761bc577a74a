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


def san_moves(board: chess.Board, moves: Sequence[str]) -> list[str]:
    """Each of the UCI moves played from `board` in SAN; from the first one that is not legal there
    (a damaged row), the rest as they are."""
    played = board.copy(stack=False)
    words: list[str] = []
    for index, uci in enumerate(moves):
        move = legal_move(played, uci)
        if move is None:
            words.extend(str(rest) for rest in moves[index:])
            break
        words.append(played.san(move))
        played.push(move)
    return words


def san_line(board: chess.Board, moves: Sequence[str], *, numbered: bool = False) -> str:
    """UCI moves played from `board` in SAN, space-separated (`san_moves`); `numbered`, with the
    move numbers a line is read with (`with_numbers`)."""
    words = san_moves(board, moves)
    return with_numbers(board, words) if numbered else " ".join(words)


def with_numbers(board: chess.Board, words: Sequence[str]) -> str:
    """Moves played from `board`, already in SAN, with their numbers: "1.e4 e5 2.Nf3", and
    "3...Nc6 4.Bc4" from Black's move."""
    white_first = board.turn == chess.WHITE
    numbered_words = []
    for index, word in enumerate(words):
        white = white_first == (index % 2 == 0)
        number = board.fullmove_number + (index + (0 if white_first else 1)) // 2
        if white:
            numbered_words.append(f"{number}.{word}")
        else:
            numbered_words.append(f"{number}...{word}" if index == 0 else word)
    return " ".join(numbered_words)


def numbered_san(board: chess.Board, move: chess.Move) -> str:
    """`move` in SAN with its move number, as it stands alone: "17.Qh5" or "17...Rd8"."""
    dots = "." if board.turn == chess.WHITE else "..."
    return f"{board.fullmove_number}{dots}{board.san(move)}"


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


def san_line_at(fen: str, moves: Sequence[str]) -> str:
    """The UCI line `moves` in SAN from the position `fen` (unreadable parts as they are)."""
    return san_line_after_at(fen, None, moves)


def san_line_after_at(fen: str, after: str | None, moves: Sequence[str]) -> str:
    """The UCI line `moves` in SAN from the position `fen` after its move `after` (a refutation
    follows its trap move; the arguments in the order of the views' `san_line_after`). Unreadable
    parts are shown as they are."""
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
