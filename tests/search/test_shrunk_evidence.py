"""`search.expectimax.shrunk_share` and `reply_probabilities(prior_games=k)`: the corpus's counts
shrunk toward the model's probabilities by k games (issue 45, item 2), on hand-made evidence whose
figures are worked out from (count + k p) / (games + k)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from search.expectimax import probability_source, reply_probabilities, shrunk_share
from search.judges import JudgeSettings, NodeEvidence, ReplyEvidence

SETTINGS = JudgeSettings()  # corpus_min_games 5
MODEL = {"e7e5": 0.5, "d7d5": 0.3, "g7g5": 0.15, "h7h6": 0.05, "a7a6": 0.0}
COUNTS = {"e7e5": 1, "d7d5": 6, "g7g5": 3, "h7h6": 0, "a7a6": 0}


def node(
    games: int | None, counts: dict[str, int] | None = None, model: dict[str, float] | None = None
) -> NodeEvidence:
    """Evidence at one node: every move of `MODEL`, with the corpus's counts where it has games."""
    counts = COUNTS if counts is None else counts
    replies = tuple(
        ReplyEvidence(
            move,
            model_p=None if model is None else model[move],
            corpus_count=None if games is None else counts[move],
        )
        for move in MODEL
    )
    return NodeEvidence(replies, best="e7e5", best_value=0, corpus_games=games)


def test_the_shrunk_share_is_the_counts_with_k_games_of_the_model_added() -> None:
    # (6 + 5 * 0.3) / (10 + 5) = 0.5
    assert shrunk_share(6, 10, 0.3, 5.0) == pytest.approx(0.5)
    found = reply_probabilities(node(10, model=MODEL), SETTINGS, prior_games=5.0)
    assert found == pytest.approx({"e7e5": 3.5 / 15, "d7d5": 0.5, "g7g5": 3.75 / 15, "h7h6": 0.25 / 15, "a7a6": 0.0})


def test_no_games_in_the_band_is_the_model_alone() -> None:
    assert reply_probabilities(node(0, dict.fromkeys(MODEL, 0), MODEL), SETTINGS, prior_games=5.0) == MODEL
    assert reply_probabilities(node(None, model=MODEL), SETTINGS, prior_games=5.0) == MODEL  # no corpus at all
    assert probability_source(node(0, dict.fromkeys(MODEL, 0), MODEL), SETTINGS, prior_games=5.0) == "model"
    assert probability_source(node(10, model=MODEL), SETTINGS, prior_games=5.0) == "shrunk"


def test_k_zero_is_the_corpus_share_and_a_large_k_the_model() -> None:
    shares = reply_probabilities(node(10, model=MODEL), SETTINGS, prior_games=0.0)
    assert shares == pytest.approx({move: count / 10 for move, count in COUNTS.items()})
    strong = reply_probabilities(node(10, model=MODEL), SETTINGS, prior_games=1e9)
    assert strong == pytest.approx(MODEL, abs=1e-7)
    assert strong != MODEL  # the corpus still moves it, by little


def test_a_few_games_count_where_the_rule_without_a_prior_ignores_them() -> None:
    few = {"e7e5": 0, "d7d5": 3, "g7g5": 1, "h7h6": 0, "a7a6": 0}  # 4 games: below corpus_min_games
    assert reply_probabilities(node(4, few, MODEL), SETTINGS) == MODEL
    shrunk = reply_probabilities(node(4, few, MODEL), SETTINGS, prior_games=4.0)
    assert shrunk["d7d5"] == pytest.approx((3 + 4 * 0.3) / 8)
    assert shrunk["e7e5"] == pytest.approx(4 * 0.5 / 8)


def test_a_move_neither_source_knows_stays_at_zero() -> None:
    for prior in (0.0, 1.0, 20.0, 1e6):
        assert reply_probabilities(node(10, model=MODEL), SETTINGS, prior_games=prior)["a7a6"] == 0.0


def test_without_a_model_the_prior_has_nothing_to_shrink_toward() -> None:
    assert reply_probabilities(node(10), SETTINGS, prior_games=5.0) == reply_probabilities(node(10), SETTINGS)
    assert reply_probabilities(node(4), SETTINGS, prior_games=5.0) == {}  # too few games, no model: no evidence
    assert probability_source(node(10), SETTINGS, prior_games=5.0) == "corpus"


@given(
    st.lists(st.tuples(st.integers(0, 50), st.floats(0.0, 1.0)), min_size=1, max_size=12),
    st.floats(0.0, 1000.0),
)
def test_the_shrunk_probabilities_sum_to_one(pairs: list[tuple[int, float]], prior: float) -> None:
    weights = [w for _, w in pairs]
    if sum(weights) == 0.0:
        weights = [1.0] * len(pairs)
    model = [w / sum(weights) for w in weights]
    counts = [c for c, _ in pairs]
    replies = tuple(
        ReplyEvidence(f"m{i}", model_p=p, corpus_count=c) for i, (c, p) in enumerate(zip(counts, model, strict=True))
    )
    evidence = NodeEvidence(replies, best="m0", best_value=0, corpus_games=sum(counts))
    found = reply_probabilities(evidence, SETTINGS, prior_games=prior)
    assert math.fsum(found.values()) == pytest.approx(1.0)
    assert all(0.0 <= p <= 1.0 + 1e-12 for p in found.values())
