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

    def identity(self) -> str:
        """What a job's identity adds for the map (empty for none): a map changes what the model
        answers for another pool's players, so a dataset judged under one is not resumed under
        another."""
        return "".join(f";{pool}={m.offset:g}+{m.slope:g}r" for pool, m in sorted(self.pools.items()))


# Chess.com onto Lichess: lichess = 400 + 0.8 x chess.com (1000 -> 1200, 2000 -> 2000), the best
# of a grid on 1,500 training positions of chesscom_mixed by Maia-3's log-loss; on the tune and the
# held-out split it lowers the log-loss in every band (held out: 1.560 -> 1.502; below 1200:
# 1.634 -> 1.560), so it is kept (docs/human.md, "Rating pools"; benchmarks/bench_maia3.py ratings).
CHESSCOM_TO_LICHESS: Final = LinearMap(offset=400.0, slope=0.8)


def default_rating_map() -> RatingMap:
    """The maps kept after measurement (docs/human.md, "Rating pools")."""
    return RatingMap({"chesscom": CHESSCOM_TO_LICHESS})


__all__ = ["CHESSCOM_TO_LICHESS", "LinearMap", "RatingMap", "default_rating_map"]
