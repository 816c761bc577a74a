"""The repertoire tree's growth and values (`pipeline.repertoire.tree`) on hand-made node results:
which nodes are expanded (margin candidates, the floor, the width, the depth), and every gain worked
out from `search.expectimax`'s definitions. No engine: the results stand for what
`pipeline.repertoire.expand` returns."""

from __future__ import annotations

import random

import chess
import pytest

from pipeline.repertoire.expand import NodeRequest, OpponentResult, PlayerResult
from pipeline.repertoire.settings import RepertoireError, RepertoireSettings, parse_start
from pipeline.repertoire.tree import Growth, back_up
from pipeline.repertoire.worker import NodeResult
from search.expectimax import score

# The start, White to move: the player's candidates e4 (best, +40) and d4 (+30); c4 (+10) lies
# outside a 0.25-pawn margin and is left out by the player node itself (its `candidates`).
PLAYER_VALUES = {"e2e4": 40, "d2d4": 30}


def player(node: int, values: dict[str, int]) -> PlayerResult:
    best = max(values, key=lambda m: (values[m], m))
    ranked = tuple(sorted(values, key=lambda m: (-values[m], m)))
    return PlayerResult(node, values, best, values[best], ranked, {}, "deep")


def opponent(
    node: int,
    probabilities: dict[str, float],
    values: dict[str, int],
    explored: tuple[str, ...],
    traps: tuple[str, ...] = (),
) -> OpponentResult:
    best = min(values, key=lambda m: (values[m], m))
    drops = {m: score(v) - score(values[best]) for m, v in values.items()}
    return OpponentResult(
        node,
        best,
        values[best],
        "model",
        None,
        probabilities,
        probabilities,
        {},
        explored,
        values,
        drops,
        traps,
        {m: ("g1f3",) for m in traps},
    )


# What each node's result is, by path: the opponent's replies to 1.e4 (e5 likely and level, f6 a
# blunder, c5 level) and to 1.d4 (d5 only); the player nodes after them.
REPLIES = {
    ("e2e4",): ({"e7e5": 0.6, "f7f6": 0.3, "c7c5": 0.1}, {"e7e5": 40, "f7f6": 150, "c7c5": 45}),
    ("d2d4",): ({"d7d5": 1.0}, {"d7d5": 30}),
}
SECOND = {
    ("e2e4", "e7e5"): {"g1f3": 40},
    ("e2e4", "f7f6"): {"g1f3": 150, "d2d4": 140},
    ("d2d4", "d7d5"): {"c2c4": 30},
}


def made_up(path: tuple[str, ...], kind: str) -> tuple[dict[str, float], dict[str, int]]:
    """A result for a node the tables above leave out, the same every time for the same path: three
    legal moves, made-up probabilities and values."""
    board = chess.Board()
    for move in path:
        board.push_uci(move)
    rng = random.Random(" ".join(path))
    moves = sorted(rng.sample(sorted(m.uci() for m in board.legal_moves), 3))
    weights = [rng.random() + 0.1 for _ in moves]
    return (
        {m: w / sum(weights) for m, w in zip(moves, weights, strict=True)},
        {m: rng.randrange(-60, 120) for m in moves},
    )


def answer(request: NodeRequest, floor: float) -> NodeResult:
    if request.kind == "player":
        values = PLAYER_VALUES if not request.path else SECOND.get(request.path)
        return player(request.node, values or made_up(request.path, "player")[1])
    probabilities, values = REPLIES.get(request.path) or made_up(request.path, "opponent")
    explored = tuple(
        m for m in sorted(probabilities, key=lambda m: -probabilities[m]) if request.reach * probabilities[m] >= floor
    )
    return opponent(request.node, probabilities, values, explored, traps=("f7f6",) if "f7f6" in values else ())


def grow(settings: RepertoireSettings, seed: int | None = None) -> Growth:
    """Grow the tree on `answer`, the pending nodes answered in submission order or shuffled."""
    growth = Growth(settings, parse_start(None, None))
    pending = growth.first()
    rng = random.Random(seed)
    while pending:
        index = rng.randrange(len(pending)) if seed is not None else 0
        request = pending.pop(index)
        pending.extend(growth.receive(answer(request, settings.floor)))
    back_up(growth)
    return growth


def by_path(growth: Growth) -> dict[tuple[str, ...], object]:
    return {node.path: node for node in growth.nodes}


def test_the_gains_are_the_expectimax_over_the_explored_replies() -> None:
    settings = RepertoireSettings(color=chess.WHITE, rating=1200, plies=3, floor=0.2, width=2)
    nodes = by_path(grow(settings))
    e4, d4 = nodes[("e2e4",)], nodes[("d2d4",)]
    # Every valued reply counts: e5 (the best, no drop), f6 (a trap: White's best after it is
    # g1f3, +150) and c5, below the floor (0.1) but valued: a leaf whose drop counts.
    f6_drop, c5_drop = score(150) - score(40), score(45) - score(40)
    assert e4.gain == pytest.approx(0.3 * f6_drop + 0.1 * c5_drop)  # type: ignore[attr-defined]
    assert e4.unexplored == pytest.approx(0.0)  # type: ignore[attr-defined]
    assert d4.gain == 0.0  # type: ignore[attr-defined]
    # The player pays 1.d4's loss out of nothing: 1.e4 is recommended, and the start's gain is its.
    assert e4.recommended and not d4.recommended  # type: ignore[attr-defined]
    assert e4.move_gain == pytest.approx(e4.gain)  # type: ignore[attr-defined]
    assert d4.move_gain == pytest.approx(score(30) - score(40))  # type: ignore[attr-defined]
    start = nodes[()]
    assert start.gain == pytest.approx(e4.move_gain)  # type: ignore[attr-defined]
    assert start.expected == pytest.approx(score(40) + e4.gain)  # type: ignore[attr-defined]
    # At depth 2 White's candidates after 1.e4 f6 are leaves of the depth (plies 3): the best is
    # recommended, the other pays its loss.
    nf3, other = nodes[("e2e4", "f7f6", "g1f3")], nodes[("e2e4", "f7f6", "d2d4")]
    assert nf3.recommended and nf3.leaf == "depth"  # type: ignore[attr-defined]
    assert other.move_gain == pytest.approx(score(140) - score(150))  # type: ignore[attr-defined]
    # The floor is on the line's reach: c5 (reach 0.1) does not grow; nor does f6 at floor 0.5.
    assert nodes[("e2e4", "c7c5")].leaf == "floor"  # type: ignore[attr-defined]
    high = by_path(grow(RepertoireSettings(color=chess.WHITE, rating=1200, plies=3, floor=0.5, width=2)))
    assert high[("e2e4", "f7f6")].leaf == "floor"  # type: ignore[attr-defined]
    assert ("e2e4", "f7f6", "g1f3") not in high
    assert high[("e2e4",)].gain == pytest.approx(0.3 * f6_drop + 0.1 * c5_drop)  # type: ignore[attr-defined]


def test_the_width_grows_only_the_best_candidates_after_one_reply() -> None:
    settings = RepertoireSettings(color=chess.WHITE, rating=1200, plies=3, floor=0.2, width=1, root_width=1)
    nodes = by_path(grow(settings))
    # 1.e4's one-reply expectation beats 1.d4's: only 1.e4's replies grow; 1.d4 d5 is a leaf of the width.
    assert nodes[("e2e4", "e7e5")].leaf is None  # type: ignore[attr-defined]
    assert nodes[("d2d4", "d7d5")].leaf == "width"  # type: ignore[attr-defined]
    assert ("d2d4", "d7d5", "c2c4") not in nodes
    assert nodes[("d2d4",)].deepened is False and nodes[("e2e4",)].deepened is True  # type: ignore[attr-defined]


def test_the_first_moves_grow_to_the_root_width_and_the_width_holds_below_them() -> None:
    """Issue 45: the first moves a reader compares are valued to one depth (1.d4 is no one-reply
    estimate beside a grown 1.e4); below them `width` holds."""
    settings = RepertoireSettings(color=chess.WHITE, rating=1200, plies=4, floor=0.05, width=1, root_width=2)
    growth = grow(settings)
    nodes = by_path(growth)
    assert nodes[("e2e4",)].deepened and nodes[("d2d4",)].deepened  # type: ignore[attr-defined]
    assert nodes[("d2d4", "d7d5")].leaf is None and ("d2d4", "d7d5", "c2c4") in nodes  # type: ignore[attr-defined]
    # Two plies down, a player node with two candidates grows one of them: the width.
    after_f6 = [nodes[("e2e4", "f7f6", move)] for move in ("g1f3", "d2d4")]
    assert sorted(bool(node.deepened) for node in after_f6) == [False, True]  # type: ignore[attr-defined]
    narrow = by_path(
        grow(RepertoireSettings(color=chess.WHITE, rating=1200, plies=4, floor=0.05, width=1, root_width=1))
    )
    assert not narrow[("d2d4",)].deepened and narrow[("d2d4", "d7d5")].leaf == "width"  # type: ignore[attr-defined]
    assert len(growth.nodes) > len(narrow)
    # From an opponent start the player's first moves are one ply down.
    assert settings.width_at(0) == settings.width_at(1) == 2 and settings.width_at(2) == 1


def test_the_tree_does_not_depend_on_the_order_results_come_in() -> None:
    settings = RepertoireSettings(color=chess.WHITE, rating=1200, plies=4, floor=0.05, width=1)
    reference = grow(settings)
    shape = sorted((n.path, n.leaf, round(n.gain, 12), n.recommended) for n in reference.nodes)
    for seed in range(5):
        again = grow(settings, seed)
        assert sorted((n.path, n.leaf, round(n.gain, 12), n.recommended) for n in again.nodes) == shape


def test_a_failed_node_is_a_counted_leaf_and_the_rest_goes_on() -> None:
    settings = RepertoireSettings(color=chess.WHITE, rating=1200, plies=3, floor=0.2, width=2)
    growth = Growth(settings, parse_start(None, None))
    pending = growth.first()
    while pending:
        request = pending.pop(0)
        if request.path == ("d2d4",):
            result: NodeResult = OpponentResult(
                request.node,
                "",
                0,
                "none",
                None,
                {},
                {},
                {},
                (),
                {},
                {},
                (),
                {},
                error="EngineError: engine died twice",
            )
        else:
            result = answer(request, settings.floor)
        pending.extend(growth.receive(result))
    back_up(growth)
    nodes = by_path(growth)
    assert growth.failures == [(nodes[("d2d4",)].id, "EngineError: engine died twice")]  # type: ignore[attr-defined]
    assert nodes[("d2d4",)].leaf == "error" and nodes[("e2e4",)].recommended  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fen", "moves", "message"),
    [
        (None, "e4 e5 Ke3", r"^invalid --moves: move 3, 'Ke3', is illegal after 1\.e4 e5 \(FEN "),
        ("not a fen", None, r"^invalid --from FEN 'not a fen': "),
        ("7k/5QQ1/8/8/8/8/8/K7 b - - 0 1", None, r"^the game is over at the start"),
    ],
)
def test_a_bad_start_is_one_line_naming_it(fen: str | None, moves: str | None, message: str) -> None:
    with pytest.raises(RepertoireError, match=message):
        parse_start(fen, moves)


def test_moves_are_read_as_san_or_uci_with_move_numbers() -> None:
    assert parse_start(None, "1. e4 e5 2.Nf3 b8c6").moves == ("e2e4", "e7e5", "g1f3", "b8c6")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"floor": 1.0}, r"^invalid floor 1.0: must be a probability in \[0, 1\)$"),
        ({"plies": 0}, r"^invalid plies 0: must be a whole number >= 1$"),
        ({"width": 0}, r"^invalid width 0: must be a whole number >= 1$"),
        ({"root_width": 0}, r"^invalid root width 0: must be a whole number >= 1$"),
        ({"rating": -5}, r"^invalid rating -5: must be a whole number >= 0$"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(fields: dict[str, object], message: str) -> None:
    with pytest.raises(RepertoireError, match=message):
        RepertoireSettings(**({"color": chess.WHITE, "rating": 1200} | fields))  # type: ignore[arg-type]
