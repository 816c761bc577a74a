"""Ratings of one pool on another pool's scale: what a model trained on Lichess ratings is given
for a chess.com player.

A chess.com 900 is not a Lichess 900 (`pipeline.human.context`). Maia-3 learned Lichess ratings
only, so a chess.com rating may be mapped onto Lichess's scale first: `lichess = offset + slope *
rating`, per pool, fitted on the training split's games by the model's own log-likelihood of the
moves played (`benchmarks/bench_maia3.py ratings`). A map is kept only where it improved log-loss on
games it was not fitted on (docs/human.md, "Rating pools").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from pipeline.human.context import Pool

# Ratings are clamped to this range after mapping (the network clamps to [0, 5000] itself).
LOWEST: Final = 100
HIGHEST: Final = 3500


@dataclass(frozen=True)
class LinearMap:
    """lichess = offset + slope * rating."""

    offset: float = 0.0
    slope: float = 1.0

    def __call__(self, rating: int) -> int:
        return round(min(HIGHEST, max(LOWEST, self.offset + self.slope * rating)))


@dataclass(frozen=True)
class RatingMap:
    """A map per pool onto Lichess's scale; a pool without one (Lichess itself, an unknown pool)
    is taken as it is."""

    pools: Mapping[Pool, LinearMap] = field(default_factory=dict)

    def to_lichess(self, rating: int, pool: Pool | None) -> int:
        found = self.pools.get(pool) if pool is not None else None
        return rating if found is None else found(rating)

    def describe(self) -> dict[str, dict[str, float]]:
        return {pool: {"offset": m.offset, "slope": m.slope} for pool, m in sorted(self.pools.items())}


def default_rating_map() -> RatingMap:
    """The maps kept after measurement (docs/human.md, "Rating pools")."""
    return RatingMap()


__all__ = ["LinearMap", "RatingMap", "default_rating_map"]
