"""Seed 000's first prototype: its rules on hand-built trees, the random trees, the comparison
with the revised DiffiMax (against a brute-force count written here), and `diffimax prototype`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from search.diffimax import reference_diffimax
from search.prototype import (
    PrototypeSettings,
    children_at,
    compare,
    comparison_json,
    prototype_search,
    random_tree,
    random_trees,
    revised_settings,
)
from search.settings import SettingsError
from search.tree import Tree, TreeGame, parse_tree
from tests.conftest import ROOT

# Rule settings for hand-built trees: the prototype's own constants; the shape fields are unused.
RULE = PrototypeSettings(root="min")


def ten(v1: float, v2: float, *, best_at: int = 0, second_at: int = 1, children: int = 10) -> str:
    """An opponent node with `children` leaves: v1 and v2 at the given indices, the rest far above."""
    leaves = [5.0 + i for i in range(children)]
    leaves[best_at], leaves[second_at] = v1, v2
    return "(" + ", ".join(f"{x:g}" for x in leaves) + ")"


# -- the rule on one opponent node ----------------------------------------------------------


def test_ten_children_condition_holds_and_second_best_is_substituted():
    # Best reply at index 3 keeps it a draw (+0.50), the second best (index 7) gives +2.50.
    result = prototype_search(parse_tree(ten(0.5, 2.5, best_at=3, second_at=7)), RULE)
    assert (result.value, result.minimax_value) == (250, 50)
    [trap] = result.traps
    assert (trap.path, trap.children, trap.best_move, trap.best_value) == ((), 10, 3, 50)
    assert (trap.second_move, trap.second_value, trap.substituted_value, trap.dip) == (7, 250, 250, 200)
    assert trap.holds_on_minimax
    # At an opponent root the backed-up value assumes the second-best reply: that is its decision.
    assert (result.best_move, result.minimax_move) == (7, 3)
    assert (result.opponent_nodes, result.eligible_nodes, result.leaves, result.changed_nodes) == (1, 1, 10, 1)


def test_nine_children_are_not_considered():
    tree = parse_tree(ten(0.5, 2.5, children=9))
    result = prototype_search(tree, RULE)
    assert (result.traps, result.eligible_nodes, result.value) == ((), 0, 50)
    # The same node is considered when the minimum is lowered to 9.
    assert prototype_search(tree, replace(RULE, min_children=9)).value == 250


@pytest.mark.parametrize(
    ("v1", "v2", "rule", "trap"),
    [
        (1.26, 2.5, "band", False),  # best reply already wins a little: outside the draw band
        (-1.26, 2.5, "band", False),  # best reply loses for the setter: outside the band
        (-1.26, 2.5, "ceiling", True),  # ... which the ceiling rule accepts
        (-6.0, 2.0, "ceiling", True),
        (1.26, 2.5, "ceiling", False),  # the ceiling still bounds v1 from above
        (0.0, 1.99, "band", False),  # second best is no win
        (0.0, 1.99, "ceiling", False),
        (1.25, 2.0, "band", True),  # both boundaries are inclusive
        (-1.25, 2.0, "band", True),
        (1.25, 2.0, "ceiling", True),
    ],
)
def test_thresholds_and_their_boundaries(v1, v2, rule, trap):
    result = prototype_search(parse_tree(ten(v1, v2)), replace(RULE, draw_rule=rule))
    assert bool(result.traps) is trap
    assert result.value == round((v2 if trap else v1) * 100)
    assert result.minimax_value == round(v1 * 100)


def test_other_thresholds_are_honoured():
    tree = parse_tree(ten(0.9, 1.6))
    assert not prototype_search(tree, RULE).traps
    assert prototype_search(tree, replace(RULE, draw_thresh=1.0, win_thresh=1.5)).value == 160


def test_substitution_propagates_to_the_root_through_a_max_node():
    # MAX root: child 0 is a trapped opponent node (+0.50 -> +2.50), child 1 a leaf worth +1.00.
    tree = parse_tree(f"({ten(0.5, 2.5)}, 1.0)")
    result = prototype_search(tree, replace(RULE, root="max"))
    assert (result.minimax_value, result.minimax_move) == (100, 1)
    assert (result.value, result.best_move) == (250, 0)  # the root value and decision change
    assert [t.path for t in result.traps] == [(0,)]
    assert result.changed_nodes == 2  # the trapped node and the root


def test_substituted_values_feed_an_ancestor_opponent_nodes_test():
    # MIN root with 10 children. Child 0 is a MAX node over a trapped node (0.00 -> 2.00), so its
    # minimax value is 0.00 but its prototype value 2.00; child 1 is worth 1.00, the rest 3+.
    # On minimax values the root's best two are 0.00 / 1.00: no trap. On prototype values they
    # are 1.00 / 2.00: a trap, which only the propagated substitution creates.
    inner = ten(0.0, 2.0)
    tree = parse_tree("((" + inner + ",), 1.0, " + ", ".join(str(3 + i) for i in range(8)) + ")")
    result = prototype_search(tree, RULE)
    assert [t.path for t in result.traps] == [(), (0, 0)]
    root = result.traps[0]
    assert (root.best_move, root.best_value, root.second_move, root.second_value) == (1, 100, 0, 200)
    assert not root.holds_on_minimax and result.traps[1].holds_on_minimax
    assert (result.minimax_value, result.value) == (0, 200)


def test_a_setter_node_never_substitutes():
    # The mirror image of a trap, at a MAX node with 10 children: the setter's best keeps it a
    # draw (-0.50), the second best loses (-2.50). The prototype's rule is for opponents only.
    tree = parse_tree("(-0.5, -2.5, -3, -4, -5, -6, -7, -8, -9, -10)")
    result = prototype_search(tree, replace(RULE, root="max"))
    assert (result.value, result.traps, result.opponent_nodes, result.eligible_nodes) == (-50, (), 0, 0)
    # The same values under a MIN node with the best two swapped into a trap do substitute.
    assert prototype_search(parse_tree("(0.5, 2.5, 3, 4, 5, 6, 7, 8, 9, 10)"), RULE).value == 250


# -- the random trees -----------------------------------------------------------------------


def _shape(tree: Tree, depth: int = 0, found: list[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """(depth, children) per internal node and (depth, -1) per leaf."""
    found = [] if found is None else found
    if isinstance(tree, int):
        found.append((depth, -1))
    else:
        found.append((depth, len(tree)))
        for child in tree:
            _shape(child, depth + 1, found)
    return found


def _leaves(tree: Tree) -> list[int]:
    return [tree] if isinstance(tree, int) else [leaf for child in tree for leaf in _leaves(child)]


def test_generator_is_deterministic_under_its_seed():
    settings = PrototypeSettings(depth=3, seed=7)
    assert random_tree(settings, 4) == random_tree(settings, 4)
    assert list(random_trees(settings, 5))[4] == random_tree(settings, 4)  # independent of the count
    assert random_tree(settings, 4) != random_tree(settings, 5)
    assert random_tree(settings, 4) != random_tree(replace(settings, seed=8), 4)
    # A subprocess with another hash seed regenerates the same tree (no hash() in the seeding).
    code = "from search.prototype import *; print(random_tree(PrototypeSettings(depth=3, seed=7), 4))"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    assert out.stdout.strip() == str(random_tree(settings, 4))


@pytest.mark.parametrize("values", ["walk", "uniform"])
def test_generator_respects_its_shape_settings(values):
    settings = PrototypeSettings(depth=3, min_branching=3, max_branching=7, values=values, value_limit=2.5)
    branchings = set()
    for tree in random_trees(settings, 20):
        for depth, children in _shape(tree):
            if children == -1:
                assert depth == 3  # every leaf at the tree depth
            else:
                assert depth < 3 and 3 <= children <= 7
                branchings.add(children)
        leaves = _leaves(tree)
        assert all(isinstance(leaf, int) and -250 <= leaf <= 250 for leaf in leaves)
        assert len(set(leaves)) > 1
    assert branchings == set(range(3, 8))  # the whole range occurs
    fixed = random_tree(replace(settings, min_branching=4, max_branching=4), 0)
    assert {children for _, children in _shape(fixed) if children != -1} == {4}
    assert len(_leaves(fixed)) == 4**3


def test_walk_values_are_correlated_siblings_and_step_zero_is_flat():
    flat = random_tree(PrototypeSettings(depth=3, step=0.0), 0)
    assert set(_leaves(flat)) == {0}
    # Under a walk, leaves under one parent differ by one step; across the tree by three.
    settings = PrototypeSettings(depth=3, step=1.0)
    tree = random_tree(settings, 0)
    assert isinstance(tree, tuple)
    sibling_spread = []
    for child in tree:
        assert isinstance(child, tuple)
        for grandchild in child:
            assert isinstance(grandchild, tuple)
            leaves = _leaves(grandchild)
            sibling_spread.append(max(leaves) - min(leaves))
    assert sum(sibling_spread) / len(sibling_spread) < max(_leaves(tree)) - min(_leaves(tree))


def test_default_shape_makes_ten_children_common_at_opponent_nodes():
    settings = PrototypeSettings()  # branching 6-14: 5 of 9 sizes have >= 10 children
    results = [prototype_search(tree, settings) for tree in random_trees(settings, 3)]
    share = sum(r.eligible_nodes for r in results) / sum(r.opponent_nodes for r in results)
    assert 0.5 < share < 0.62


# -- the comparison against a brute-force count ---------------------------------------------


def _brute_force(tree: Tree, settings: PrototypeSettings, scope_limit: int | None, t_cp: int, r_cp: int):
    """Every opponent node's verdicts by definition, written independently of search/prototype.py."""
    proto_traps, revised_traps, candidates, eligible, opponent = set(), set(), [0], set(), [0]

    def minimax(node: Tree, maximizing: bool) -> int:
        if isinstance(node, int):
            return node
        values = [minimax(child, not maximizing) for child in node]
        return max(values) if maximizing else min(values)

    def proto(node: Tree, maximizing: bool, path: tuple[int, ...]) -> int:
        if isinstance(node, int):
            return node
        values = [proto(child, not maximizing, (*path, i)) for i, child in enumerate(node)]
        if maximizing:
            return max(values)
        ranked = sorted(values)
        if len(node) >= settings.min_children:
            v1, v2 = ranked[0], ranked[1]
            low_ok = v1 >= -settings.draw_cp if settings.draw_rule == "band" else True
            if low_ok and v1 <= settings.draw_cp and v2 >= settings.win_cp:
                proto_traps.add(path)
                return v2
        return ranked[0]

    def revised(node: Tree, maximizing: bool, path: tuple[int, ...]) -> None:
        if isinstance(node, int):
            return
        if not maximizing:
            opponent[0] += 1
            if len(node) >= settings.min_children:
                eligible.add(path)
            ranked = sorted((minimax(child, True), i) for i, child in enumerate(node))
            alternatives = ranked[1:] if scope_limit is None else ranked[1 : 1 + scope_limit]
            hits = [v for v, _ in alternatives if t_cp <= v - ranked[0][0] <= r_cp]
            if hits:
                revised_traps.add(path)
                candidates[0] += len(hits)
        for i, child in enumerate(node):
            revised(child, not maximizing, (*path, i))

    root_max = settings.root == "max"
    value = proto(tree, root_max, ())
    revised(tree, root_max, ())
    return {
        "value_change": value - minimax(tree, root_max),
        "prototype": proto_traps,
        "revised": revised_traps,
        "eligible": eligible,
        "candidates": candidates[0],
        "opponent": opponent[0],
    }


@pytest.mark.parametrize("root", ["max", "min"])
def test_comparison_counts_add_up_against_brute_force(root):
    # Small, bushy-enough trees with a lower minimum and a wider walk so that every cell is busy.
    settings = PrototypeSettings(
        depth=4, min_branching=2, max_branching=7, min_children=5, step=1.5, root=root, seed=11
    )
    scopes = ("all", 2, 3)
    revised = revised_settings(settings, scopes, reasonable_dip=2.0, trap_dip=1.0)
    comparison = compare(settings, revised, 25)
    totals = comparison.totals
    expected: dict[object, dict[str, int]] = {
        s: dict.fromkeys(("both", "op", "or", "ore", "rn", "rne", "c"), 0) for s in scopes
    }
    prototype_nodes = changed = 0
    for index, row in enumerate(comparison.trees):
        tree = random_tree(settings, index)
        for scope, overlap in zip(scopes, row.revised, strict=True):
            brute = _brute_force(tree, settings, None if scope == "all" else scope - 1, 100, 200)
            p, r, e = brute["prototype"], brute["revised"], brute["eligible"]
            assert {t.path for t in row.prototype.traps} == p
            assert row.prototype.eligible_nodes == len(e) and row.prototype.opponent_nodes == brute["opponent"]
            assert overlap.analysed_nodes == brute["opponent"]  # every opponent node analysed (S = inf)
            assert row.value_change == brute["value_change"] >= 0  # substitution only ever raises values
            counts = expected[scope]
            counts["both"] += len(p & r)
            counts["op"] += len(p - r)
            counts["or"] += len(r - p)
            counts["ore"] += len((r & e) - p)
            counts["rn"] += len(r)
            counts["rne"] += len(r & e)
            counts["c"] += brute["candidates"]
        prototype_nodes += len(row.prototype.traps)
        changed += row.value_change != 0
    assert totals.prototype_nodes == prototype_nodes > 0
    assert totals.root_value_changed == changed
    for scope, overlap in zip(scopes, totals.revised, strict=True):
        counts = expected[scope]
        assert (overlap.both, overlap.only_prototype, overlap.only_revised) == (
            counts["both"],
            counts["op"],
            counts["or"],
        )
        assert (overlap.trap_nodes, overlap.trap_nodes_eligible) == (counts["rn"], counts["rne"])
        assert (overlap.only_revised_eligible, overlap.candidates) == (counts["ore"], counts["c"])
        assert overlap.both + overlap.only_prototype == totals.prototype_nodes == overlap.prototype_nodes
        assert overlap.both + overlap.only_revised == overlap.trap_nodes
        assert overlap.both > 0 and overlap.only_prototype + overlap.only_revised > 0
        assert overlap.jaccard == pytest.approx(counts["both"] / (counts["both"] + counts["op"] + counts["or"]))
        assert overlap.jaccard_eligible == pytest.approx(
            counts["both"] / (counts["both"] + counts["op"] + counts["ore"])
        )
    # The dip breakdown partitions the prototype's traps.
    dips = totals.prototype_dip_below_t + totals.prototype_dip_in_range + totals.prototype_dip_above_r
    assert dips == totals.prototype_nodes


def test_revised_trap_nodes_match_the_exhaustive_reference():
    # The comparison runs the optimised DiffiMaxSearch; on these trees it must flag exactly the
    # nodes the exhaustive reference_diffimax flags.
    settings = PrototypeSettings(depth=3, min_branching=4, max_branching=9, step=1.5, seed=5)
    for scope in ("all", 2):
        [revised] = revised_settings(settings, (scope,))
        rows = compare(settings, (revised,), 4).trees
        for row in rows:
            found = reference_diffimax(TreeGame(random_tree(settings, row.index)), revised)
            flagged = {a.path for a in found.analyses if a.trap_node}
            assert row.revised[0].trap_nodes == len(flagged) and row.revised[0].candidates == len(found.traps)
            assert row.revised[0].both == len(flagged & {tuple(map(str, t.path)) for t in row.prototype.traps})


def test_a_finite_safety_margin_analyses_fewer_nodes():
    settings = PrototypeSettings(depth=4, min_branching=3, max_branching=5)
    row = compare(settings, revised_settings(settings, ("all",), safety_margin=0.5), 1).trees[0]
    assert 0 < row.revised[0].analysed_nodes < row.prototype.opponent_nodes


def test_children_at_follows_paths():
    tree = parse_tree("((1, 2, 3), 4)")
    assert (children_at(tree, ()), children_at(tree, (0,)), children_at(tree, (1,))) == (2, 3, 0)


# -- bad settings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"draw_thresh": -0.5}, "invalid draw threshold -0.5: must be a finite number of pawns >= 0"),
        ({"draw_thresh": float("nan")}, "invalid draw threshold nan"),
        ({"win_thresh": float("inf")}, "invalid win threshold inf"),
        ({"win_thresh": 1.25}, "win threshold 1.25 must exceed draw threshold 1.25"),
        ({"min_children": 1}, "invalid min children 1: must be a whole number >= 2"),
        ({"min_children": 2.5}, "invalid min children 2.5"),
        ({"draw_rule": "wide"}, "invalid draw rule 'wide': expected band or ceiling"),
        ({"depth": 0}, "invalid tree depth 0"),
        ({"depth": True}, "invalid tree depth True"),
        ({"min_branching": 0}, "invalid min branching 0"),
        ({"min_branching": 8, "max_branching": 5}, "invalid branching range 8-5: need 1 <= min <= max"),
        ({"depth": 7, "max_branching": 14}, "trees too large: branching up to 14 at depth 7 allows"),
        ({"values": "normal"}, "invalid value model 'normal': expected walk or uniform"),
        ({"step": -1.0}, "invalid walk step -1.0"),
        ({"value_limit": 0.0}, "invalid value limit 0.0"),
        ({"root": "both"}, "invalid root 'both': expected max or min"),
        ({"seed": "x"}, "invalid seed 'x'"),
    ],
)
def test_bad_settings_give_one_clear_line(fields, message):
    with pytest.raises(SettingsError) as caught:
        PrototypeSettings(**fields)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_bad_comparison_arguments_give_one_clear_line():
    settings = PrototypeSettings(depth=2)
    with pytest.raises(SettingsError, match=r"^invalid tree count 0: must be a whole number >= 1$"):
        compare(settings, revised_settings(settings), 0)
    with pytest.raises(SettingsError, match=r"^no revised scope to compare with"):
        revised_settings(settings, ())
    with pytest.raises(SettingsError, match=r"^repeated scope in \['all', 'all'\]$"):
        revised_settings(settings, ("all", "all"))
    with pytest.raises(SettingsError, match=r"^revised search depth 3 differs from the tree depth 2$"):
        compare(settings, revised_settings(replace(settings, depth=3)), 1)
    with pytest.raises(SettingsError, match=r"^trap dip 3.0 exceeds reasonable dip 2.0"):
        revised_settings(settings, trap_dip=3.0)


# -- the command line -----------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pipeline.cli", "prototype", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


TREE_FIELDS = {
    "index",
    "leaves",
    "opponent_nodes",
    "eligible_nodes",
    "prototype_nodes",
    "changed_nodes",
    "minimax_value",
    "prototype_value",
    "value_change",
    "minimax_move",
    "prototype_move",
    "move_changed",
    "revised",
    "traps",
}
OVERLAP_FIELDS = {
    "scope",
    "analysed_nodes",
    "trap_nodes",
    "trap_nodes_eligible",
    "candidates",
    "prototype_nodes",
    "both",
    "only_prototype",
    "only_revised",
    "only_revised_eligible",
    "jaccard",
    "jaccard_eligible",
    "root_value_changed",
}
TOTAL_FIELDS = {
    "trees",
    "leaves",
    "opponent_nodes",
    "eligible_nodes",
    "prototype_nodes",
    "prototype_holds_on_minimax",
    "prototype_dip_below_t",
    "prototype_dip_in_range",
    "prototype_dip_above_r",
    "changed_nodes",
    "root_value_changed",
    "root_value_change_mean",
    "root_value_change_max",
    "root_value_change_all_mean",
    "root_move_changed",
    "revised",
}
TRAP_FIELDS = {
    "path",
    "children",
    "best_move",
    "best_value",
    "second_move",
    "second_value",
    "substituted_value",
    "dip",
    "minimax_value",
    "holds_on_minimax",
}


def _job_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "trees.toml"
    path.write_text(text)
    return str(path)


def test_cli_prints_json_with_the_documented_fields(tmp_path: Path) -> None:
    shape = _job_file(tmp_path, '[tree-shape]\ndepth = 3\nbranching = "8-12"\nstep = 1.5\n')
    args = ["--trees", "6", "--seed", "3", "--config", shape]
    out = _cli(*args, "--scopes", "all,2", "--json", "--traps")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"settings", "revised_settings", "totals", "trees"}
    assert data["settings"]["branching"] == [8, 12] and data["settings"]["draw_thresh"] == 1.25
    assert [r["scope"] for r in data["revised_settings"]] == ["all", 2]
    assert set(data["totals"]) == TOTAL_FIELDS and len(data["trees"]) == 6
    for row in data["trees"]:
        assert set(row) == TREE_FIELDS
        assert [set(o) for o in row["revised"]] == [OVERLAP_FIELDS, OVERLAP_FIELDS]
        assert all(set(trap) == TRAP_FIELDS for trap in row["traps"])
        assert row["prototype_nodes"] == len(row["traps"])
    # The same numbers as the library on the same settings.
    settings = PrototypeSettings(depth=3, min_branching=8, max_branching=12, seed=3, step=1.5)
    library = comparison_json(compare(settings, revised_settings(settings), 6), traps=True)
    assert data == library
    assert data["totals"]["prototype_nodes"] > 0


def test_cli_text_table_and_bad_input(tmp_path: Path) -> None:
    out = _cli("--trees", "2", "--config", _job_file(tmp_path, "[tree-shape]\ndepth = 2\n"), "--scopes", "2")
    assert out.returncode == 0, out.stderr
    assert "revised Top 2" in out.stdout and "Jaccard, all opponent nodes" in out.stdout
    path = _job_file(tmp_path, '[tree-shape]\nbranching = "6-x"\n')
    bad = _cli("--config", path)
    assert bad.returncode == 1
    assert bad.stderr.strip() == (
        f"diffimax: error: job file {path!r}: [tree-shape]: invalid tree-shape.branching '6-x': expected MIN-MAX, e.g. 6-14"
    )
    path = _job_file(tmp_path, "[rule]\nwin-thresh = 1\n")
    bad = _cli("--config", path)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert f"job file {path!r}: [rule]: " in bad.stderr
    assert "win threshold 1.0 must exceed draw threshold 1.25" in bad.stderr
