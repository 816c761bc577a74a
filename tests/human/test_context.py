"""Tests of `pipeline.human.context`: a game's rating pool, from its `Site` or `Link` header or an
override."""

from __future__ import annotations

import pytest


def test_the_pool_comes_from_site_or_link_and_an_override_wins():
    from pipeline.human.context import PoolError, parse_pool, pool_of

    assert pool_of({"Site": "https://lichess.org/abcd1234"}) == "lichess"
    assert pool_of({"Site": "Chess.com"}) == "chesscom"
    assert pool_of({"Site": "?", "Link": "https://www.chess.com/game/live/1"}) == "chesscom"
    assert pool_of({"Site": "https://notlichess.org.example/x"}) is None  # a suffix, not a substring
    assert pool_of({"Site": "Berlin GER"}) is None
    assert pool_of({"Site": "Chess.com"}, "lichess") == "lichess"
    assert parse_pool("chess.com") == "chesscom" and parse_pool("auto") is None and parse_pool(None) is None
    with pytest.raises(PoolError, match="unknown rating pool 'fide'"):
        parse_pool("fide")
