"""The fall probability of a node (`search.judges.fall_estimate`), the practical judge's fall rule
and the deeper checks of recall, on hand-made evidence; each figure is recomputed here from the
replies by the definition, not copied from the code under test."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search.fall import calibrate_fall
from search.judges import (
    JudgeSettings,
    NodeEvidence,
    ReplyEvidence,
    fall_carriers,
    fall_estimate,
    judge,
    needs_deep,
    needs_deeper,
)
from search.settings import DiffiMaxSettings, SettingsError
from search.values import win_drop

SEARCH = DiffiMaxSettings(depth=2)
# The falling mass as it is (no calibration), so that the figures below are sums of probabilities.
# The per-reply rule, which the tests below set beside the fall rule.
PRACTICAL = JudgeSettings(
    judges=frozenset({"practical"}), fall_calibration=(("lichess", 1.0, 0.0),), practical_rule="reply"
)


def budapest_like() -> NodeEvidence:
    """Danger spread over several natural replies, none of them probable enough alone: the
    Budapest trap's 5.h3 / f4 / f3 at 9 %, 10 % and 5 % (values in centipawns, the setter's)."""
    replies = (
        ReplyEvidence("best", deep_value=-30, model_p=0.45, shallow_value=-20),
        ReplyEvidence("h3", deep_value=400, model_p=0.09, shallow_value=10),
        ReplyEvidence("f4", deep_value=350, model_p=0.10, shallow_value=0),
        ReplyEvidence("f3", deep_value=500, model_p=0.05, shallow_value=30),
        ReplyEvidence("ok", deep_value=-10, model_p=0.20, shallow_value=-15),
        ReplyEvidence("rare", model_p=0.01, shallow_value=600),  # too rare to search: the shallow pass only
    )
    return NodeEvidence(replies, "best", -30)


def test_the_fall_probability_is_the_mass_of_the_losing_replies_with_the_rest_bounded() -> None:
    evidence = budapest_like()
    estimate = fall_estimate(evidence, PRACTICAL)
    assert estimate is not None
    searched_falls = 0.09 + 0.10 + 0.05  # h3, f4, f3 each lose more than 0.15 win chances
    assert estimate.low == pytest.approx(searched_falls)
    # `rare` was valued only by the shallow pass, where it loses: in the estimate, and in `high` only.
    assert estimate.fall_p == pytest.approx(searched_falls + 0.01)
    assert estimate.high == pytest.approx(searched_falls + 0.01)
    assert estimate.falling == ("f4", "h3", "f3")
    expected_loss = sum(
        (r.model_p or 0) * win_drop(-30, r.deep_value) for r in evidence.replies if r.deep_value is not None
    ) + 0.01 * win_drop(-20, 600)
    assert estimate.expected_loss == pytest.approx(expected_loss)
    assert estimate.searched == pytest.approx(0.89)


def test_the_practical_judge_says_none_today_and_the_fall_rule_names_the_spread_trap() -> None:
    evidence = budapest_like()
    assert judge(evidence, PRACTICAL, SEARCH).candidates["practical"] == frozenset()  # no reply reaches p 0.20
    with_fall = dataclasses.replace(
        PRACTICAL, practical_rule="both", practical_fall_p=0.20, practical_fall_reply_p=0.05
    )
    assert judge(evidence, with_fall, SEARCH).candidates["practical"] == {"h3", "f4", "f3"}
    higher = dataclasses.replace(with_fall, practical_fall_p=0.40)
    assert judge(evidence, higher, SEARCH).candidates["practical"] == frozenset()  # 0.25 < 0.40
    choosy = dataclasses.replace(with_fall, practical_fall_reply_p=0.08)
    assert judge(evidence, choosy, SEARCH).candidates["practical"] == {"h3", "f4"}
    # The fall rule alone (the default rule) names the same here; the reply rule alone, nothing.
    assert judge(evidence, dataclasses.replace(with_fall, practical_rule="fall"), SEARCH).candidates["practical"] == {
        "h3",
        "f4",
        "f3",
    }


def test_the_replies_that_carry_the_mass_are_searched_most_probable_first() -> None:
    evidence = budapest_like()
    settings_90 = dataclasses.replace(PRACTICAL, fall_mass=0.90, fall_min_p=0.02)
    # 0.45 (best) + 0.20 + 0.10 + 0.09 + 0.05 = 0.89 < 0.90, and the next (0.01) is below 0.02.
    assert fall_carriers(evidence, settings_90) == ["ok", "f4", "h3", "f3"]
    assert set(fall_carriers(evidence, settings_90)) <= needs_deep(evidence, settings_90)
    assert fall_carriers(evidence, dataclasses.replace(PRACTICAL, fall_mass=0.6)) == ["ok"]
    assert fall_carriers(evidence, dataclasses.replace(PRACTICAL, fall_min_p=0.15)) == ["ok"]


def test_probable_replies_near_the_threshold_and_majority_candidates_are_searched_deeper() -> None:
    drop = PRACTICAL.practical_drop
    below = next(cp for cp in range(0, 400) if drop - 0.05 <= win_drop(0, cp) < drop)  # within the recall margin
    far_above = 500
    evidence = NodeEvidence(
        (
            ReplyEvidence("best", deep_value=0, model_p=0.1),
            ReplyEvidence("unseen", deep_value=below, model_p=0.25),
            ReplyEvidence("unseen_rare", deep_value=below, model_p=0.05),
            ReplyEvidence("majority", deep_value=far_above, model_p=0.6),
        ),
        "best",
        0,
    )
    assert needs_deeper(evidence, PRACTICAL) == {"unseen", "majority"}
    # Searched deeper, the deeper value decides, both ways.
    found = dataclasses.replace(
        evidence,
        replies=(
            evidence.replies[0],
            dataclasses.replace(evidence.replies[1], deeper_value=300),
            evidence.replies[2],
            dataclasses.replace(evidence.replies[3], deeper_value=5),
        ),
    )
    assert judge(evidence, PRACTICAL, SEARCH).candidates["practical"] == {"majority"}
    assert judge(found, PRACTICAL, SEARCH).candidates["practical"] == {"unseen"}
    estimate = fall_estimate(found, PRACTICAL)
    assert estimate is not None and estimate.falling == ("unseen",)


@settings(max_examples=200, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.floats(0.0, 1.0),
            st.one_of(st.none(), st.integers(-900, 900)),
            st.one_of(st.none(), st.integers(-900, 900)),
        ),
        min_size=2,
        max_size=12,
    )
)
def test_the_bounds_hold_on_any_evidence(rows: list[tuple[float, int | None, int | None]]) -> None:
    """low <= fall_p <= high, each in [0, 1], and the expected loss never negative (200 examples,
    fixed seed)."""
    total = sum(p for p, _, _ in rows) or 1.0
    replies = tuple(
        ReplyEvidence(f"m{i}", deep_value=deep, shallow_value=shallow, model_p=p / total)
        for i, (p, deep, shallow) in enumerate(rows)
    )
    best = next((r for r in replies if r.deep_value is not None), None)
    if best is None:
        return
    values = [r.deep_value for r in replies if r.deep_value is not None]
    best_move = next(r.move for r in replies if r.deep_value == min(values))
    estimate = fall_estimate(NodeEvidence(replies, best_move, min(values)), PRACTICAL)
    assert estimate is not None
    assert 0.0 <= estimate.low <= estimate.fall_p + 1e-9
    assert estimate.fall_p <= estimate.high + 1e-9 <= 1.0 + 2e-9
    assert estimate.expected_loss >= 0.0


def test_no_human_evidence_no_estimate_and_impossible_settings_refused() -> None:
    bare = NodeEvidence((ReplyEvidence("a", deep_value=0), ReplyEvidence("b", deep_value=300)), "a", 0)
    assert fall_estimate(bare, PRACTICAL) is None
    with pytest.raises(SettingsError, match="invalid practical fall p"):
        JudgeSettings(practical_fall_p=0.0)
    with pytest.raises(SettingsError, match="invalid practical rule"):
        JudgeSettings(practical_rule="sometimes")
    with pytest.raises(SettingsError, match="invalid fall mass"):
        JudgeSettings(fall_mass=1.5)


def test_a_value_searched_only_for_the_caller_does_not_move_the_estimate() -> None:
    """The move a human played is valued for the analytics (`also`): the estimate must not know
    it, so a reply no rule would search counts by its shallow value whatever its deep one says."""
    evidence = budapest_like()
    replies = tuple(dataclasses.replace(r, deep_value=900) if r.move == "rare" else r for r in evidence.replies)
    valued = dataclasses.replace(evidence, replies=replies)
    assert fall_estimate(valued, PRACTICAL) == fall_estimate(evidence, PRACTICAL)
    quiet = tuple(dataclasses.replace(r, deep_value=-30) if r.move == "rare" else r for r in replies)
    assert fall_estimate(dataclasses.replace(evidence, replies=quiet), PRACTICAL) == fall_estimate(evidence, PRACTICAL)


def test_a_decided_node_needs_no_search_and_cannot_fall() -> None:
    """The setter already has more than 1 - drop win chances: no reply can lose the drop."""
    winning = 1500  # +15 pawns for the setter
    evidence = NodeEvidence(
        (
            ReplyEvidence("best", deep_value=winning, model_p=0.5, shallow_value=winning),
            ReplyEvidence("worse", model_p=0.5, shallow_value=-200),  # a shallow misjudgement
        ),
        "best",
        winning,
    )
    assert fall_carriers(evidence, PRACTICAL) == []
    estimate = fall_estimate(evidence, PRACTICAL)
    assert estimate is not None and estimate.fall_p == estimate.high == 0.0


def test_the_calibration_is_monotone_keeps_certainty_and_reports_the_mass_beside_it() -> None:
    tuned = JudgeSettings().calibration_of("lichess")
    masses = [i / 100 for i in range(101)]
    calibrated = [calibrate_fall(m, tuned) for m in masses]
    assert calibrated[0] == 0.0 and calibrated[-1] == 1.0
    assert all(a < b for a, b in itertools.pairwise(calibrated))
    assert calibrate_fall(0.3, (1.0, 0.0)) == 0.3
    evidence = budapest_like()
    raw = fall_estimate(evidence, PRACTICAL)
    fitted = fall_estimate(evidence, dataclasses.replace(PRACTICAL, fall_calibration=(("lichess", *tuned),)))
    assert raw is not None and fitted is not None
    assert fitted.mass == raw.fall_p == raw.mass
    assert fitted.fall_p == pytest.approx(calibrate_fall(raw.fall_p, tuned))
    assert fitted.low <= fitted.fall_p <= fitted.high
    with pytest.raises(SettingsError, match="invalid fall calibration"):
        JudgeSettings(fall_calibration=(("lichess", 0.0, 1.0),))
    by_pool = JudgeSettings(fall_calibration=(("lichess", 1.2, 0.6), ("chesscom", 0.9, -0.4)))
    assert by_pool.calibration_of("chesscom") == (0.9, -0.4)
    assert by_pool.calibration_of(None) == by_pool.calibration_of("lichess") == (1.2, 0.6)
    chesscom = dataclasses.replace(budapest_like(), pool="chesscom")
    estimate = fall_estimate(chesscom, dataclasses.replace(PRACTICAL, fall_calibration=by_pool.fall_calibration))
    mass = fall_estimate(budapest_like(), PRACTICAL)
    assert estimate is not None and mass is not None
    assert estimate.fall_p == pytest.approx(calibrate_fall(mass.fall_p, (0.9, -0.4)))
