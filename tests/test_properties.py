"""Property tests on random trees: the optimised searches agree with the exhaustive ones."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from search.alphabeta import Searcher, minimax_decision
from search.diffimax import DiffiMaxSearch, reference_diffimax
from search.tree import TreeGame, tree_height
from search.ttable import TranspositionTable
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
@hsettings(max_examples=400, deadline=None)
def test_optimised_diffimax_equals_reference(tree, root_is_max, seed, use_tt, data):
    depth = data.draw(st.integers(0, tree_height(tree)))
    config = data.draw(settings(depth))
    reference = reference_diffimax(TreeGame(tree, root_is_max), config)
    table = TranspositionTable() if use_tt else None
    game = TreeGame(tree, root_is_max, shuffle_seed=seed)
    optimised = DiffiMaxSearch(game, config, tt=table).run()
    assert optimised.value == reference.value
    assert optimised.best_move == reference.best_move
    assert optimised.trap_identities() == reference.trap_identities()
    assert len(optimised.traps) == len(reference.traps)
    assert [a.path for a in optimised.analyses] == [a.path for a in reference.analyses]
    for mine, theirs in zip(optimised.analyses, reference.analyses, strict=False):
        # Beyond R only a bound is known, so scope membership is compared where it matters.
        classify = lambda a: {
            (r.move, r.reasonable, r.trap, r.best, r.in_scope and r.reasonable) for r in a.responses
        }
        assert classify(mine) == classify(theirs)
        assert (mine.reasonable_count, mine.trap_count) == (theirs.reasonable_count, theirs.trap_count)
