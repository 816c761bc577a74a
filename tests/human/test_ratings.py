"""Tests of `pipeline.human.ratings`: a rating map moves its own pool alone onto Lichess's scale and
is pinned by its identity."""

from __future__ import annotations

from pipeline.human.ratings import LinearMap, RatingMap


def test_a_rating_map_moves_its_pool_alone_and_is_pinned_by_the_identity() -> None:
    mapped = RatingMap({"chesscom": LinearMap(offset=400, slope=0.8)})
    assert mapped.to_lichess(1000, "chesscom") == 1200
    assert mapped.to_lichess(1000, "lichess") == 1000
    assert mapped.to_lichess(1000, None) == 1000
    assert mapped.to_lichess(-9000, "chesscom") == 100  # clamped to the network's range
    assert RatingMap().identity() == ""
    assert mapped.identity() != RatingMap({"chesscom": LinearMap(offset=300, slope=0.8)}).identity()
