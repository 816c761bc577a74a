"""`search.expectimax`: the one expected score against humans, on hand-made evidence whose figures
are worked out from the definitions (Lichess's curve, `search.values.win_drop`)."""

from __future__ import annotations

import pytest

from search.expectimax import (
    HumanReply,
    even_probabilities,
    expect,
    explored_replies,
    human_replies,
    move_gain,
    practical_choice,
    probability_source,
    reply_probabilities,
    score,
    within_margin,
)
from search.judges import JudgeSettings, NodeEvidence, ReplyEvidence
from search.values import MATE, win_chances, win_drop, win_probability


def test_score_is_lichess_win_probability_and_a_mate_is_certain() -> None:
    assert score(0) == pytest.approx(0.5)
    assert score(150) == pytest.approx(win_probability(150))
    assert score(-150) == pytest.approx(1 - win_probability(150))
    assert score(MATE - 3) == 1.0 and score(-(MATE - 3)) == 0.0
    assert score(120) - score(0) == pytest.approx(win_drop(0, 120) / 2)
    assert score(40) == pytest.approx((win_chances(40) + 1) / 2)


def test_expect_sums_the_explored_replies_and_counts_the_rest_as_the_best() -> None:
    replies = [
        HumanReply("a", 0.5, 0.0),  # the best reply: no drop
        HumanReply("b", 0.3, 0.10, gain=0.02),  # a drop, and the line after it gains more
        HumanReply("c", 0.1, None),  # below the floor: unexplored
    ]
    found = expect(replies)
    assert found.gain == pytest.approx(0.3 * (0.10 + 0.02))
    assert found.explored == pytest.approx(0.8) and found.unexplored == pytest.approx(0.2)
    assert expect([]).gain == 0.0 and expect([]).unexplored == 1.0


def _evidence(corpus_games: int | None = None) -> NodeEvidence:
    replies = (
        ReplyEvidence("e7e5", deep_value=0, model_p=0.5, corpus_count=1, shallow_rank=2),
        ReplyEvidence("d7d5", probe_value=150, model_p=0.3, corpus_count=6, shallow_rank=1),
        ReplyEvidence("g7g5", deep_value=400, deeper_value=380, model_p=0.15, corpus_count=3, shallow_rank=3),
        ReplyEvidence("h7h6", model_p=0.05, corpus_count=0, shallow_rank=4),
    )
    return NodeEvidence(replies, best="e7e5", best_value=0, corpus_games=corpus_games, probe_best_value=10)


def test_probabilities_come_from_the_corpus_where_it_has_enough_games_else_the_model() -> None:
    settings = JudgeSettings()  # corpus_min_games 5
    assert probability_source(_evidence(), settings) == "model"
    assert reply_probabilities(_evidence(), settings) == {"e7e5": 0.5, "d7d5": 0.3, "g7g5": 0.15, "h7h6": 0.05}
    assert probability_source(_evidence(10), settings) == "corpus"
    assert reply_probabilities(_evidence(10), settings)["d7d5"] == pytest.approx(0.6)
    assert probability_source(_evidence(4), settings) == "model"


def test_human_replies_drop_at_the_level_each_was_valued_and_deeper_where_searched_deeper() -> None:
    evidence = _evidence()
    replies = {r.move: r for r in human_replies(evidence, reply_probabilities(evidence, JudgeSettings()))}
    assert replies["e7e5"].drop == 0.0
    assert replies["d7d5"].drop == pytest.approx(win_drop(10, 150) / 2)  # the probe against the probe's best
    assert replies["g7g5"].drop == pytest.approx(win_drop(0, 380) / 2)  # the deeper value
    assert replies["h7h6"].drop is None  # never valued: unexplored
    # A reply whose own search finds better than the node's search is the best known: no drop, and
    # the others are measured against it.
    better = NodeEvidence((ReplyEvidence("a", deep_value=30), ReplyEvidence("b", deep_value=-20)), "a", 30)
    found = {r.move: r.drop for r in human_replies(better, {"a": 0.5, "b": 0.5})}
    assert found == {"a": pytest.approx(score(30) - score(-20)), "b": 0.0}
    chosen = human_replies(evidence, {"d7d5": 0.3, "g7g5": 0.15}, explore=["g7g5"], gains={"g7g5": 0.1})
    assert [(r.move, r.drop is None, r.gain) for r in chosen] == [("d7d5", True, 0.0), ("g7g5", False, 0.1)]


def test_even_probabilities_spread_over_the_shallow_best() -> None:
    assert even_probabilities(_evidence(), 2) == {"d7d5": 0.5, "e7e5": 0.5}


def test_explored_replies_keep_the_lines_humans_reach_above_the_floor() -> None:
    probabilities = {"a": 0.5, "b": 0.3, "c": 0.15, "d": 0.05, "e": 0.0}
    assert explored_replies(probabilities, 1.0, 0.1) == ["a", "b", "c"]
    assert explored_replies(probabilities, 0.2, 0.05) == ["a", "b"]  # 0.2 * 0.15 = 0.03 < 0.05
    assert explored_replies(probabilities, 1.0, 0.0) == ["a", "b", "c", "d"]  # never a reply of probability 0


def test_a_move_pays_its_own_loss_out_of_the_gain_it_sets_up() -> None:
    assert move_gain(100, 100, 0.0) == 0.0
    assert move_gain(100, 60, 0.05) == pytest.approx(score(60) - score(100) + 0.05)
    candidates = {"best": (100, 0.0), "trap": (60, 0.05), "small": (80, 0.005)}
    assert practical_choice(candidates) == "trap"
    assert practical_choice({"best": (100, 0.0), "small": (80, 0.005)}) == "best"
    assert practical_choice({"b": (10, 0.0), "a": (10, 0.0)}) == "a"
    with pytest.raises(ValueError, match="no candidate"):
        practical_choice({})


def test_within_margin_orders_best_first() -> None:
    assert within_margin({"a": 10, "b": 60, "c": 40}, 30) == ["b", "c"]
    assert within_margin({}, 30) == []
