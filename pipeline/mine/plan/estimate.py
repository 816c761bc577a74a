"""Steps 1-3's figures for the job from its sample (games, positions, distinct positions, with
their 90 % intervals), and the weighted mean of the timed positions (step 4)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.common.stats import wilson
from pipeline.mine.plan.records import Figure, ReuseFit
from pipeline.mine.plan.reuse import fit_reuse
from pipeline.mine.plan.sample import SampledGames

# The normal quantile of a two-sided 90 % interval.
Z90 = 1.645
# Fewest timed games (clusters) an interval of a per-position mean is given from: below it the spread
# between games is not measured well enough to bound the mean (one game gave "0.0 s - 7749 days").
MIN_TIMED_GAMES = 5


def share(k: float, n: int, total: float, how: str, exact: bool) -> Figure:
    """`total` x k / n, with the Wilson 90 % interval of the share unless the sample is the job."""
    if exact:
        return Figure(float(k), how)
    low, high = wilson(k, n, Z90)
    return Figure(total * k / n if n else 0.0, how, total * low, total * high)


def mean_interval(
    values: Sequence[float], weights: Sequence[float], clusters: Sequence[str]
) -> tuple[float, float | None, float | None]:
    """The weighted mean sum(w v) / sum(w) and its 90 % interval (normal, from the ratio
    estimator's standard error with each cluster, a timed game, as one draw: the positions of a
    game are not independent); no interval (None, None) from fewer than MIN_TIMED_GAMES games."""
    value = np.asarray(values, dtype=float)
    weight = np.asarray(weights, dtype=float)
    names, cluster = np.unique(np.asarray(clusters), return_inverse=True)
    mean = float((weight * value).sum() / weight.sum())
    n = len(names)
    if n < MIN_TIMED_GAMES:
        return mean, None, None
    totals = np.bincount(cluster, weights=weight * (value - mean), minlength=n)
    error = math.sqrt(n / (n - 1) * float((totals**2).sum())) / float(weight.sum())
    return mean, max(0.0, mean - Z90 * error), mean + Z90 * error


@dataclass(frozen=True)
class CountFigures:
    """Step 1-3's figures."""

    games_read: Figure
    games_kept: Figure
    games_filtered: Figure
    games_error: Figure
    positions: Figure
    analysed: Figure
    reused: Figure
    fits: list[ReuseFit]


def count_figures(
    sample: SampledGames, read: float, read_how: str, whole_job: bool, seed: int, rate: float = 1.0
) -> CountFigures:
    """Games, positions and distinct positions of the job from its sample, read without the job's
    --game-rate (`rate`, which thins the kept games by a hash of their ids: the kept games and
    their positions are scaled by it, the games it leaves out count as filtered). A sample is
    the whole job only at rate 1."""
    read_n, kept_n = sample.games_read, len(sample.kept)
    if whole_job:
        read, read_how = float(read_n), "counted (read through the job's reader)"
    how = "counted (the sample is the whole job)" if whole_job else f"share of the {read_n:,}-game sample x games read"
    thinned = f" x --game-rate {rate:g}" if rate < 1.0 else ""
    kept = share(kept_n, read_n, read * rate, how + thinned, whole_job)
    filtered = share(sum(sample.filtered.values()) + (1.0 - rate) * kept_n, read_n, read, how, whole_job)
    failed = share(sample.errors, read_n, read, how, whole_job)
    per_game = np.zeros(read_n)
    per_game[:kept_n] = np.bincount(np.asarray(sample.game_of, dtype=np.int64), minlength=kept_n)
    mean = float(per_game.mean())
    if whole_job:
        positions = Figure(float(len(sample.key_of)), "counted")
    else:
        spread = Z90 * float(per_game.std(ddof=1)) / math.sqrt(read_n) if read_n > 1 else mean
        positions = Figure(
            read * rate * mean,
            "positions per game read in the sample x games read" + thinned,
            read * rate * max(0.0, mean - spread),
            read * rate * (mean + spread),
        )
    fits, overlap = fit_reuse(sample.game_of, sample.ply_of, sample.key_of, kept_n, seed)
    if whole_job:
        analysed = Figure(float(len(set(sample.key_of))), "counted (distinct keys of the job)")
    else:
        analysed = Figure(
            overlap * sum(fit.distinct_at(kept.value) for fit in fits),
            f"Heaps' law per ply fitted on the sample's distinct keys, extrapolated {kept.value / kept_n:,.1f}x",
        )
    reused = Figure(max(0.0, positions.value - analysed.value), "positions - analysed")
    return CountFigures(Figure(read, read_how), kept, filtered, failed, positions, analysed, reused, fits)
