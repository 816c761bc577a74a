"""Issue 29, item 3: which games are duplicates, decided the same way whatever order the shards
arrive in, however often a shard is asked, and after a restart that knows only what was committed
(`pipeline.mine.duplicates`), against an exhaustive reference; and what makes two games one
(`pipeline.ingest.headers.identity_keys`). The mining job over duplicated inputs is in
tests/mine/test_hostile_inputs.py."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.ingest.games import read_pgn_bytes
from pipeline.ingest.headers import identity_keys
from pipeline.ingest.outcomes import Selected
from pipeline.mine.duplicates import KeyOrdinals, SeenGames

Shards = list[list[tuple[int, ...]]]


def reference(shards: Shards) -> list[frozenset[int]]:
    """The definition, exhaustively: a game is a duplicate when a kept game before it, in shard
    order then game order, shares one of its keys."""
    kept: set[int] = set()
    answers = []
    for games in shards:
        duplicates = set()
        for index, keys in enumerate(games):
            if kept.intersection(keys):
                duplicates.add(index)
            else:
                kept.update(keys)
        answers.append(frozenset(duplicates))
    return answers


shards_strategy = st.lists(
    st.lists(st.lists(st.integers(-30, 30), min_size=1, max_size=3).map(tuple), max_size=6), min_size=1, max_size=12
)


@settings(max_examples=300, deadline=None)
@given(shards=shards_strategy, seed=st.integers(0, 2**32))
def test_any_order_of_claims_and_any_restart_gives_the_reference_answers(shards: Shards, seed: int) -> None:
    expected = reference(shards)
    chooser = random.Random(seed)
    committed = sorted(chooser.sample(range(len(shards)), chooser.randrange(len(shards) + 1)))
    # A registry that loaded the committed shards (their kept games only), then gets claims in any
    # order, each naming the shards before it (as the driver's claims do): the registry registers
    # those it does not know first.
    seen = SeenGames()
    for ordinal in committed:
        kept = [key for index, keys in enumerate(shards[ordinal]) if index not in expected[ordinal] for key in keys]
        seen.keys.add(np.array(kept, dtype=np.int64), ordinal)
        seen.answers[ordinal] = frozenset()
    asked = [ordinal for ordinal in range(len(shards)) if ordinal not in committed]
    chooser.shuffle(asked)
    for ordinal in asked + asked[: len(asked) // 2]:  # some twice
        for before in range(ordinal):
            if not seen.known(before):
                seen.register(before, shards[before])
        assert seen.register(ordinal, shards[ordinal]) == expected[ordinal]


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20), max_size=40))
def test_the_key_runs_hold_each_keys_first_ordinal(batches: list[list[int]]) -> None:
    held = KeyOrdinals()
    first: dict[int, int] = {}
    order = list(range(len(batches)))
    random.Random(len(batches)).shuffle(order)
    for ordinal in order:
        held.add(np.array(batches[ordinal], dtype=np.int64), ordinal)
        for key in batches[ordinal]:
            first[key] = min(first.get(key, ordinal), ordinal)
    probe = np.array([*first, 12345, -1], dtype=np.int64)
    expected = [first.get(int(key), -1) for key in probe]
    assert held.first(probe).tolist() == expected


def selected(pgn: str, source: str = "a.pgn") -> Selected:
    (game,) = read_pgn_bytes(pgn.encode(), source=source)
    assert isinstance(game, Selected)
    return game


def keys_of(game: Selected) -> tuple[int, ...]:
    return identity_keys(game.game["game_id"], game.game["link"], game.game["digest"], game.game["moves_digest"])


def test_what_makes_two_games_one() -> None:
    lichess = '[Event "x"]\n[Site "https://lichess.org/abcd1234"]\n\n1. e4 e5 *\n\n'
    exported = '[Event "x"]\n[GameId "abcd1234"]\n[Opening "?"]\n\n1. e4 e5 2. Nf3 *\n\n'
    assert set(keys_of(selected(lichess))) & set(keys_of(selected(exported, "b.pgn")))  # one id
    link = '[Event "x"]\n[Site "Chess.com"]\n[Link "https://www.chess.com/game/live/1"]\n\n1. d4 d5 *\n\n'
    other_tags = link.replace('[Event "x"]', '[Event "y"]')
    assert set(keys_of(selected(link))) & set(keys_of(selected(other_tags, "b.pgn")))  # one Link, one game
    # ... but one Link on games whose moves differ joins nothing (c24ffed kept 1 of 9 such games).
    other_moves = link.replace("1. d4 d5", "1. c4 e5")
    assert not set(keys_of(selected(link))) & set(keys_of(selected(other_moves, "b.pgn")))
    from_position = link.replace(
        "[Link", '[SetUp "1"]\n[FEN "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"]\n[Link'
    )
    assert set(keys_of(selected(link))) & set(keys_of(selected(from_position, "b.pgn")))  # the same start
    otb = '[Event "Club"]\n[Round "3"]\n[White "A"]\n[Black "B"]\n\n1. e4 e5 1/2-1/2\n\n'
    assert set(keys_of(selected(otb))) & set(keys_of(selected(otb, "b.pgn")))  # the same tags and moves
    # ... but another round, or another move, is another game; and comments are not the game.
    assert not set(keys_of(selected(otb))) & set(keys_of(selected(otb.replace('"3"', '"7"'), "b.pgn")))
    assert not set(keys_of(selected(otb))) & set(keys_of(selected(otb.replace("e5", "c5"), "b.pgn")))
    commented = otb.replace("1. e4", "1. e4 { [%clk 0:01:00] }")
    assert set(keys_of(selected(otb))) & set(keys_of(selected(commented, "b.pgn")))
