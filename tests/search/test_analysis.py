"""`classify_responses` at its boundaries, checked directly against the spec's steps 1-10.

Both sides of the equivalence tests (reference and optimised DiffiMax) call the same classifier,
so those tests cannot see a classifier bug; these can. Each case names the rule it pins down:
a dip exactly T or exactly R, one centipawn either side, Top-k with ties, exclusions, and nodes
with fewer than two meaningful replies.
"""

from __future__ import annotations

import pytest

from search.analysis import ResponseValue, classify_responses
from search.settings import DiffiMaxSettings

# R = 2.00, T = 1.00 pawns: the seed's defaults.
DEFAULTS = DiffiMaxSettings(depth=1)


def reply(move: str, value: int, *, exact: bool = True, check: bool = False, capture: bool = False) -> ResponseValue:
    return ResponseValue(move, (0, move), value, exact, check, capture)


def classes(values: list[ResponseValue], settings: DiffiMaxSettings = DEFAULTS) -> dict[str, tuple[bool, bool]]:
    """move -> (reasonable, trap)."""
    analysis = classify_responses(values, settings)
    return {r.move: (r.reasonable, r.trap) for r in analysis.responses}


@pytest.mark.parametrize(
    ("dip", "reasonable", "trap"),
    [
        (99, True, False),  # one centipawn below T: plausible, not bad enough
        (100, True, True),  # exactly T: a trap (T <= dip)
        (101, True, True),
        (199, True, True),
        (200, True, True),  # exactly R: still reasonable, still a trap (dip <= R)
        (201, False, False),  # one centipawn beyond R: a blunder, not a trap
    ],
)
def test_a_dip_at_and_around_the_thresholds(dip: int, reasonable: bool, trap: bool) -> None:
    found = classes([reply("a1a2", 0), reply("b1b2", dip)])
    assert found["b1b2"] == (reasonable, trap)
    assert found["a1a2"] == (True, False)  # the best response is never a trap


def test_thresholds_are_relative_to_the_best_value_not_to_zero() -> None:
    found = classes([reply("a1a2", -250), reply("b1b2", -150), reply("c1c2", -50), reply("d1d2", -49)])
    assert found["b1b2"] == (True, True)  # dip 100
    assert found["c1c2"] == (True, True)  # dip 200
    assert found["d1d2"] == (False, False)  # dip 201


def test_t_equal_to_r_leaves_exactly_one_trap_dip() -> None:
    settings = DiffiMaxSettings(depth=1, reasonable_dip=1.5, trap_dip=1.5)
    found = classes([reply("a1a2", 0), reply("b1b2", 149), reply("c1c2", 150), reply("d1d2", 151)], settings)
    assert [move for move, (_, trap) in found.items() if trap] == ["c1c2"]


def test_top_k_keeps_the_strongest_alternatives_with_ties_broken_by_uci() -> None:
    values = [reply("a1a2", 0), reply("h1h2", 120), reply("c1c2", 120), reply("b1b2", 150), reply("d1d2", 110)]
    analysis = classify_responses(values, DiffiMaxSettings(depth=1, scope=3))  # the two strongest alternatives
    scoped = [r.move for r in analysis.responses if r.in_scope]
    assert scoped == ["d1d2", "c1c2"]  # d1d2 (110), then c1c2 before h1h2 at 120 by UCI
    assert [r.move for r in analysis.candidates] == ["d1d2", "c1c2"]
    assert [r.move for r in analysis.responses] == ["a1a2", "d1d2", "c1c2", "h1h2", "b1b2"]
    assert {r.move: r.alternative_rank for r in analysis.responses} == {
        "a1a2": None,
        "d1d2": 1,
        "c1c2": 2,
        "h1h2": 3,
        "b1b2": 4,
    }
    top2 = classify_responses(values, DiffiMaxSettings(depth=1, scope=2))
    assert [r.move for r in top2.candidates] == ["d1d2"]


def test_the_best_of_tied_best_replies_is_the_first_by_uci() -> None:
    analysis = classify_responses([reply("g1f3", 30), reply("b1c3", 30), reply("e2e4", 150)], DEFAULTS)
    assert analysis.best == "b1c3"
    assert {r.move: r.dip for r in analysis.responses} == {"b1c3": 0, "g1f3": 0, "e2e4": 120}
    assert [r.move for r in analysis.candidates] == ["e2e4"]


def test_excluded_replies_count_for_v1_but_are_never_alternatives() -> None:
    values = [reply("a1a2", 0, check=True), reply("b1b2", 150), reply("c1c2", 150, capture=True)]
    analysis = classify_responses(values, DiffiMaxSettings(depth=1, exclude_checks=True, exclude_captures=True))
    assert analysis.best == "a1a2" and analysis.best_value == 0  # v1 over every legal reply
    assert {r.move: r.excluded for r in analysis.responses} == {"a1a2": "check", "b1b2": None, "c1c2": "capture"}
    assert analysis.meaningful == 1
    assert analysis.trap_count == 0  # fewer than two meaningful replies: not a trap node


@pytest.mark.parametrize(
    "values",
    [
        [reply("a1a2", 0)],  # a forced reply
        [reply("a1a2", 0), reply("b1b2", 150, check=True)],  # one meaningful reply left
    ],
)
def test_fewer_than_two_meaningful_replies_make_no_trap_node(values: list[ResponseValue]) -> None:
    analysis = classify_responses(values, DiffiMaxSettings(depth=1, exclude_checks=True))
    assert not analysis.trap_node and analysis.trap_count == 0


def test_two_meaningful_replies_are_enough() -> None:
    analysis = classify_responses([reply("a1a2", 0), reply("b1b2", 150)], DEFAULTS)
    assert analysis.trap_node and analysis.meaningful == 2


def test_counts_and_ratio_over_the_alternatives_in_scope() -> None:
    values = [reply("a1a2", 0), reply("b1b2", 50), reply("c1c2", 130), reply("d1d2", 190), reply("e1e2", 340)]
    analysis = classify_responses(values, DEFAULTS)
    assert (analysis.reasonable_count, analysis.trap_count) == (3, 2)
    assert analysis.trap_ratio == pytest.approx(2 / 3)
    none = classify_responses([reply("a1a2", 0), reply("b1b2", 400)], DEFAULTS)
    assert (none.reasonable_count, none.trap_ratio) == (0, 0.0)


def test_bounds_beyond_r_and_below_t_are_allowed_but_not_inside_the_trap_range() -> None:
    fine = classify_responses(
        [reply("a1a2", 0), reply("b1b2", 40, exact=False), reply("c1c2", 260, exact=False)], DEFAULTS
    )
    assert [r.move for r in fine.candidates] == []
    with pytest.raises(ValueError, match="only a bound inside the trap range"):
        classify_responses([reply("a1a2", 0), reply("b1b2", 150, exact=False)], DEFAULTS)
    with pytest.raises(ValueError, match="the best response a1a2 has only a bound"):
        classify_responses([reply("a1a2", 0, exact=False), reply("b1b2", 150)], DEFAULTS)
