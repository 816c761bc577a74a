"""Step 3 of a plan: distinct positions, from Heaps' law fitted per ply on the sample's keys."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.mine.plan.records import ReuseFit

# Seeded orders of the sample's games that the distinct-key curve is averaged over.
REUSE_ORDERS = 5
# Fewest games at which the distinct-key curve is measured (below it a count is mostly noise).
REUSE_MIN_GAMES = 8


def fit_reuse(
    game_of: Sequence[int], ply_of: Sequence[int], key_of: Sequence[int], games: int, seed: int
) -> tuple[list[ReuseFit], float]:
    """Heaps' law per ply over the sample's kept games, and the share of distinct (ply, key) pairs
    that are distinct keys job-wide (a key seen at two plies is analysed once)."""
    game = np.asarray(game_of, dtype=np.int64)
    ply = np.asarray(ply_of, dtype=np.int64)
    key = np.asarray(key_of, dtype=np.int64)
    pairs = np.stack([ply, key], axis=1)
    unique_pairs, group = np.unique(pairs, axis=0, return_inverse=True)
    group = group.reshape(-1)
    group_ply = unique_pairs[:, 0]
    distinct_keys = len(np.unique(key))
    overlap = distinct_keys / max(1, len(unique_pairs))
    plies = np.unique(ply)
    sizes: list[int] = []
    size = games
    while size >= REUSE_MIN_GAMES:
        sizes.append(size)
        size //= 2
    sizes = sizes or [games]
    curves = np.zeros((len(sizes), len(plies)))
    ply_index = np.searchsorted(plies, group_ply)
    rng = np.random.default_rng(seed)
    for _ in range(REUSE_ORDERS):
        rank = rng.permutation(games)[game]  # each position's game's place in this order
        first = np.full(len(unique_pairs), games, dtype=np.int64)
        np.minimum.at(first, group, rank)
        for row, n in enumerate(sizes):
            curves[row] += np.bincount(ply_index[first < n], minlength=len(plies))
    curves /= REUSE_ORDERS
    positions = np.bincount(np.searchsorted(plies, ply), minlength=len(plies))
    fits = []
    logs = np.log(np.asarray(sizes, dtype=float))
    for column, ply_value in enumerate(plies):
        points = curves[:, column] > 0
        exponent = 1.0  # too few points to see reuse: assume none beyond the sample's (the costlier guess)
        if points.sum() >= 2:
            slope = np.polyfit(logs[points], np.log(curves[points, column]), 1)[0]
            exponent = float(min(1.0, max(0.0, slope)))
        distinct = round(float(curves[0, column]))
        fits.append(ReuseFit(int(ply_value), games, int(positions[column]), distinct, exponent))
    return fits, overlap
