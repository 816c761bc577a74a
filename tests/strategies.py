"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from search.settings import DiffiMaxSettings
from search.tree import Tree

# Leaf utilities in centipawns: a narrow range makes ties and threshold hits common.
LEAF = st.integers(min_value=-400, max_value=400)


@st.composite
def trees(draw: st.DrawFn, max_depth: int = 4, max_branching: int = 4) -> Tree:
    """Random trees of varied depth and branching (leaves may sit at any level)."""
    depth = draw(st.integers(min_value=1, max_value=max_depth))

    def build(level: int) -> Tree:
        if level == depth or (level > 0 and draw(st.integers(0, 9)) == 0):
            return draw(LEAF)
        width = draw(st.integers(min_value=1, max_value=max_branching))
        return tuple(build(level + 1) for _ in range(width))

    return build(0)


@st.composite
def settings(draw: st.DrawFn, depth: int) -> DiffiMaxSettings:
    reasonable = draw(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]))
    trap = draw(st.sampled_from([t for t in (0.0, 0.25, 0.5, 1.0, 2.0) if t <= reasonable]))
    return DiffiMaxSettings(
        depth=depth,
        scope=draw(st.sampled_from([2, 3, 4, 5, "all"])),
        reasonable_dip=reasonable,
        trap_dip=trap,
        safety_margin=draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, None])),
    )
