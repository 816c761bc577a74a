"""search.notation: the one place UCI from the rows becomes SAN for people (the views, the
repertoire's lines, explain's variations and a game's numbered moves all call it)."""

from __future__ import annotations

import chess

from search.chessgame import numbered_line
from search.notation import numbered_san, san_at, san_line, san_line_after_at, san_line_at, san_moves

# After 1.e4 e5 2.Nf3 Nc6 3.Bc4: Black to move on move 3.
ITALIAN = "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3"


def test_a_line_from_the_start_is_numbered_before_each_white_move() -> None:
    line = ["e2e4", "e7e5", "g1f3", "b8c6"]
    assert san_line(chess.Board(), line, numbered=True) == "1.e4 e5 2.Nf3 Nc6"
    assert san_line(chess.Board(), line) == "e4 e5 Nf3 Nc6"


def test_a_line_from_black_starts_with_its_number_and_three_dots() -> None:
    board = chess.Board(ITALIAN)
    assert san_line(board, ["g8f6", "f3g5", "d7d5"], numbered=True) == "3...Nf6 4.Ng5 d5"
    assert san_moves(board, ["g8f6", "f3g5"]) == ["Nf6", "Ng5"]


def test_a_damaged_line_is_shown_as_it_is_from_its_first_illegal_move() -> None:
    # e2e4 is not legal twice: the row is damaged there, and nothing after it is dropped.
    assert san_moves(chess.Board(), ["e2e4", "e2e4", "g8f6"]) == ["e4", "e2e4", "g8f6"]
    assert san_line(chess.Board(), ["e2e4", "e2e4"], numbered=True) == "1.e4 e2e4"


def test_the_views_functions_read_a_fen_and_keep_what_they_cannot_read() -> None:
    assert san_at(ITALIAN, "g8f6") == "Nf6"
    assert san_at("not a fen", "g8f6") == "g8f6"
    assert san_line_at(ITALIAN, ["g8f6", "f3g5"]) == "Nf6 Ng5"
    # A refutation follows its trap move: the line is read after it.
    assert san_line_after_at(ITALIAN, "g8f6", ["f3g5", "d7d5"]) == "Ng5 d5"
    assert san_line_after_at(ITALIAN, "a1a8", ["f3g5"]) == "f3g5"


def test_a_move_standing_alone_carries_its_number() -> None:
    board = chess.Board(ITALIAN)
    assert numbered_san(board, chess.Move.from_uci("g8f6")) == "3...Nf6"
    board.push_uci("g8f6")
    assert numbered_san(board, chess.Move.from_uci("f3g5")) == "4.Ng5"


def test_a_games_last_moves_are_numbered_from_where_they_start() -> None:
    board = chess.Board()
    for uci in ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4"):
        board.push_uci(uci)
    assert numbered_line(board) == "1.e4 e5 2.Nf3 Nc6 3.Bc4"
    assert numbered_line(board, last=2) == "... 2...Nc6 3.Bc4"
    assert numbered_line(board, last=0) == "..."
