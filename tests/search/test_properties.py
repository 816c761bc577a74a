"""Property tests on random trees: the optimised searches agree with the exhaustive ones, and both
DiffiMax searches with DiffiMax written again from the definition (`independent_diffimax`), which
shares no code with them: they share the walk and the result, so agreeing with each other alone
would not see a bug there."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from search.alphabeta import Searcher, minimax_decision
from search.diffimax import DiffiMaxSearch, reference_diffimax
from search.settings import DiffiMaxSettings
from search.tree import Tree, TreeGame, tree_height
from search.ttable import TranspositionTable
from tests.search.independent_diffimax import assert_matches_definition, independent_diffimax
from tests.strategies import settings, trees


@given(
    tree=trees(),
    root_is_max=st.booleans(),
    seed=st.none() | st.integers(0, 1000),
    use_tt=st.booleans(),
    ordering=st.sampled_from(["natural", "heuristic"]),
)
@hsettings(max_examples=300, deadline=None)
def test_alphabeta_equals_minimax(tree, root_is_max, seed, use_tt, ordering):
    depth = tree_height(tree)
    expected, _, minimax_stats = minimax_decision(TreeGame(tree, root_is_max), depth)
    game = TreeGame(tree, root_is_max, shuffle_seed=seed)
    searcher = Searcher(game, tt=TranspositionTable() if use_tt else None, ordering=ordering)
    result = searcher.search(depth)
    assert result.value == expected
    assert searcher.stats.leaves <= minimax_stats.leaves


@given(tree=trees(), root_is_max=st.booleans(), depth_cut=st.integers(0, 2), data=st.data())
@hsettings(max_examples=300, deadline=None)
def test_depth_limited_alphabeta_equals_minimax(tree, root_is_max, depth_cut, data):
    depth = max(0, tree_height(tree) - depth_cut)
    expected = Searcher(TreeGame(tree, root_is_max), ordering="natural").minimax(depth)
    seed = data.draw(st.integers(0, 100))
    searcher = Searcher(TreeGame(tree, root_is_max, shuffle_seed=seed), tt=TranspositionTable())
    assert searcher.search(depth).value == expected


@given(
    tree=trees(),
    root_is_max=st.booleans(),
    seed=st.none() | st.integers(0, 1000),
    use_tt=st.booleans(),
    data=st.data(),
)
@hsettings(max_examples=600, deadline=None)
def test_optimised_diffimax_equals_reference(tree, root_is_max, seed, use_tt, data):
    depth = data.draw(st.integers(0, tree_height(tree)))
    config = data.draw(settings(depth))
    reference = reference_diffimax(TreeGame(tree, root_is_max), config)
    table = TranspositionTable() if use_tt else None
    game = TreeGame(tree, root_is_max, shuffle_seed=seed)
    optimised = DiffiMaxSearch(game, config, tt=table).run()
    expected = independent_diffimax(TreeGame(tree, root_is_max), config)
    assert_matches_definition(optimised, expected, "optimised")
    assert_matches_definition(reference, expected, "reference")
    assert_same_diffimax(optimised, reference)


def assert_same_diffimax(optimised, reference):
    assert optimised.value == reference.value
    assert optimised.best_move == reference.best_move
    assert optimised.trap_identities() == reference.trap_identities()
    assert len(optimised.traps) == len(reference.traps)
    assert [a.path for a in optimised.analyses] == [a.path for a in reference.analyses]
    for mine, theirs in zip(optimised.analyses, reference.analyses, strict=True):
        assert (mine.best, mine.best_value, mine.meaningful) == (
            theirs.best,
            theirs.best_value,
            theirs.meaningful,
        )
        assert (mine.reasonable_count, mine.trap_count) == (theirs.reasonable_count, theirs.trap_count)
        verdicts = {r.move: (r.reasonable, r.trap, r.best, r.excluded) for r in theirs.responses}
        exact = {r.move: (r.value, r.alternative_rank, r.in_scope) for r in theirs.responses}
        for response in mine.responses:
            assert (response.reasonable, response.trap, response.best, response.excluded) == verdicts[response.move]
            if response.exact:  # a bound orders responses only as far as the decision needs
                assert (response.value, response.alternative_rank, response.in_scope) == exact[response.move]
        assert sum(r.in_scope for r in mine.responses) == sum(r.in_scope for r in theirs.responses)


def random_tree(rng: random.Random, depth: int) -> Tree:
    if depth == 0:
        return rng.randint(-300, 300)
    return tuple(random_tree(rng, depth - 1) for _ in range(rng.randint(1, 5)))


def test_optimised_diffimax_equals_reference_on_bushier_trees():
    """Seeded, larger trees than hypothesis tends to draw: ties, bounds and scopes all occur."""
    rng = random.Random(20261130)
    for index in range(700):
        tree = random_tree(rng, rng.randint(2, 4))
        config = DiffiMaxSettings(
            depth=rng.randint(1, 4),
            scope=rng.choice([2, 3, 4, 5, "all"]),
            reasonable_dip=rng.choice([1.0, 2.0]),
            trap_dip=rng.choice([0.0, 0.5, 1.0]),
            safety_margin=rng.choice([0.0, 0.5, None]),
        )
        root_is_max = rng.random() < 0.5
        reference = reference_diffimax(TreeGame(tree, root_is_max), config)
        optimised = DiffiMaxSearch(
            TreeGame(tree, root_is_max, shuffle_seed=index), config, tt=TranspositionTable()
        ).run()
        expected = independent_diffimax(TreeGame(tree, root_is_max), config)
        assert_matches_definition(optimised, expected, f"optimised, tree {index}")
        assert_matches_definition(reference, expected, f"reference, tree {index}")
        assert_same_diffimax(optimised, reference)
