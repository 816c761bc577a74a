"""Tests of `pipeline.human.book`: the book's counts of the moves played in a position, with the
game itself left out."""

from __future__ import annotations

import json

from pipeline.human.book import Book, BookBuilder, own_counts


def test_book_counts_leave_the_game_itself_out():
    builder = BookBuilder()
    for move in ("e2e4", "e2e4", "d2d4", "e2e4"):
        builder.add(1, move)
    builder.add(2, "g1f3")
    book = builder.build(min_games=2)
    assert len(book) == 1  # key 2 was reached once
    full = book.lookup(1)
    assert full is not None and full.games == 4 and full.moves == {"e2e4": 3, "d2d4": 1}
    without = book.lookup(1, own_counts([(1, "d2d4")]))
    assert without is not None and without.games == 3 and without.moves == {"e2e4": 3}
    assert book.lookup(1, own_counts([(1, "e2e4"), (1, "e2e4"), (1, "e2e4")])) is None  # 1 < min_games
    assert Book.from_json(json.loads(json.dumps(book.to_json()))) == book
