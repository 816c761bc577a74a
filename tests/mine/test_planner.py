"""The planner's pure parts (`pipeline/mine/plan/`): the reuse fit (Heaps' law per ply), the choice
of sample blocks, the estimates' intervals, and the wall-time model, on known inputs.

`tests/mine/test_plan.py` checks a whole plan against a real run; these pin the pieces it is built of."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.mine.config import MineConfig
from pipeline.mine.plan import (
    DRIVER_SECONDS_PER_SHARD,
    DRIVER_SHARE,
    MIN_TIMED_GAMES,
    REUSE_MIN_GAMES,
    SAMPLE_BLOCK_GAMES,
    WRITER_SECONDS_PER_WORKER_CALL,
    ReuseFit,
    ShardCut,
    SourceCount,
    WallModel,
    call_seconds,
    choose_blocks,
    count_shards,
    driver_seconds,
    fit_reuse,
    mean_interval,
    scale_to,
    share,
)


def positions(games: int, plies: int, key: object) -> tuple[list[int], list[int], list[int]]:
    """The sample's three parallel lists for `games` games of `plies` plies, key(game, ply) each."""
    game_of, ply_of, key_of = [], [], []
    for game in range(games):
        for ply in range(plies):
            game_of.append(game)
            ply_of.append(ply)
            key_of.append(key(game, ply))  # type: ignore[operator]
    return game_of, ply_of, key_of


# -- the reuse fit -------------------------------------------------------------------------------


def test_a_position_every_game_repeats_has_exponent_0_and_one_distinct_key() -> None:
    fits, overlap = fit_reuse(*positions(64, 3, lambda game, ply: 1000 + ply), 64, seed=0)
    assert [(f.ply, f.games, f.positions, f.distinct, f.exponent) for f in fits] == [
        (0, 64, 64, 1, 0.0), (1, 64, 64, 1, 0.0), (2, 64, 64, 1, 0.0),
    ]  # fmt: skip
    assert overlap == 1.0
    assert fits[0].distinct_at(90_000_000) == 1.0  # extrapolated: still the one position


def test_positions_never_repeated_have_exponent_1_and_grow_with_the_games() -> None:
    fits, overlap = fit_reuse(*positions(64, 2, lambda game, ply: game * 10 + ply), 64, seed=0)
    assert [(f.positions, f.distinct) for f in fits] == [(64, 64), (64, 64)]
    assert all(f.exponent == pytest.approx(1.0) for f in fits)
    assert overlap == 1.0
    assert fits[0].distinct_at(640) == pytest.approx(640.0)


def test_a_key_at_two_plies_is_analysed_once() -> None:
    # The same key at plies 0 and 1 of every game: two (ply, key) pairs, one key job-wide.
    _, overlap = fit_reuse(*positions(16, 2, lambda game, ply: 7), 16, seed=0)
    assert overlap == 0.5


def test_fewer_games_than_the_curve_needs_assume_no_reuse() -> None:
    games = REUSE_MIN_GAMES - 1
    fits, _ = fit_reuse(*positions(games, 1, lambda game, ply: 5), games, seed=0)
    assert fits[0].exponent == 1.0  # one point of the curve: the costlier guess
    assert fits[0].distinct == 1


def test_more_repetition_gives_a_smaller_exponent() -> None:
    # Ply p's key repeats every `period` games: the fewer distinct keys, the flatter the curve.
    periods = [1, 4, 16, 64, 256]
    fits, _ = fit_reuse(*positions(256, len(periods), lambda game, ply: ply * 1000 + game % periods[ply]), 256, 0)
    exponents = [fit.exponent for fit in fits]
    assert exponents == sorted(exponents)
    assert exponents[0] == 0.0 and exponents[-1] == pytest.approx(1.0)
    assert [fit.distinct for fit in fits] == periods


def test_exponents_stay_in_0_1_however_noisy_the_sample() -> None:
    # Sparse plies (a ply only some games reach) make a noisy curve whose slope can leave [0, 1].
    rng = np.random.default_rng(0)
    for seed in range(10):
        games = int(rng.integers(8, 80))
        game_of, ply_of, key_of = [], [], []
        for game in range(games):
            for ply in range(int(rng.integers(1, 12))):
                game_of.append(game)
                ply_of.append(ply)
                key_of.append(int(rng.integers(0, 1 + ply * ply)))
        fits, overlap = fit_reuse(game_of, ply_of, key_of, games, seed)
        assert all(0.0 <= fit.exponent <= 1.0 for fit in fits)
        assert 0.0 < overlap <= 1.0


def test_the_fit_is_seeded() -> None:
    sample = positions(100, 3, lambda game, ply: (game * 7919 + ply) % 37)
    assert fit_reuse(*sample, 100, seed=3) == fit_reuse(*sample, 100, seed=3)


def test_distinct_at_follows_heaps_law_capped_at_the_positions() -> None:
    fit = ReuseFit(ply=4, games=100, positions=100, distinct=50, exponent=0.5)
    assert fit.distinct_at(400) == pytest.approx(100.0)  # 50 x 4^0.5
    assert fit.distinct_at(100) == pytest.approx(50.0)
    steep = ReuseFit(ply=4, games=100, positions=100, distinct=90, exponent=1.0)
    assert steep.distinct_at(1000) == pytest.approx(900.0)
    capped = ReuseFit(ply=4, games=100, positions=60, distinct=60, exponent=1.0)
    assert capped.distinct_at(1_000) == pytest.approx(600.0)  # never more than the positions
    assert ReuseFit(ply=0, games=0, positions=0, distinct=0, exponent=1.0).distinct_at(10) == 0.0
    values = [fit.distinct_at(n) for n in (10, 100, 1_000, 10_000)]
    assert values == sorted(values)


# -- the sample's blocks -------------------------------------------------------------------------


def source(games: int, sampleable: int | None = None) -> SourceCount:
    return SourceCount("x.pgn", 1000, games, True, games, games if sampleable is None else sampleable, False)


def test_a_sample_as_large_as_the_job_reads_every_block() -> None:
    counts = [source(3 * SAMPLE_BLOCK_GAMES - 1), source(2 * SAMPLE_BLOCK_GAMES)]
    assert choose_blocks(counts, 5 * SAMPLE_BLOCK_GAMES, seed=0) == {0: [0, 1, 2], 1: [0, 1]}
    assert choose_blocks(counts, 10**9, seed=0) == {0: [0, 1, 2], 1: [0, 1]}


def test_a_smaller_sample_reads_seeded_distinct_blocks_in_order() -> None:
    counts = [source(100 * SAMPLE_BLOCK_GAMES), source(0), source(50 * SAMPLE_BLOCK_GAMES)]
    chosen = choose_blocks(counts, 20 * SAMPLE_BLOCK_GAMES, seed=1)
    assert sum(len(blocks) for blocks in chosen.values()) == 20
    assert 1 not in chosen  # a source with nothing to sample has no block
    assert chosen[0] == sorted(set(chosen[0])) and all(0 <= b < 100 for b in chosen[0])
    assert all(0 <= b < 50 for b in chosen.get(2, []))
    assert chosen == choose_blocks(counts, 20 * SAMPLE_BLOCK_GAMES, seed=1)
    assert chosen != choose_blocks(counts, 20 * SAMPLE_BLOCK_GAMES, seed=2)


def test_a_partial_block_counts_as_one_and_one_game_asks_for_one_block() -> None:
    assert choose_blocks([source(1)], 1, seed=0) == {0: [0]}
    assert sum(len(b) for b in choose_blocks([source(10 * SAMPLE_BLOCK_GAMES)], 1, seed=0).values()) == 1
    # Only the sampleable games (an estimated source's prefix) are drawn from.
    assert choose_blocks([source(10**6, sampleable=SAMPLE_BLOCK_GAMES + 1)], 10**6, seed=0) == {0: [0, 1]}


# -- the estimates -------------------------------------------------------------------------------


def test_a_share_is_exact_for_the_whole_job_and_an_interval_otherwise() -> None:
    assert share(30, 100, 1000.0, "counted", exact=True).value == 30.0
    figure = share(30, 100, 1000.0, "sampled", exact=False)
    assert figure.value == pytest.approx(300.0)
    assert figure.low is not None and figure.high is not None
    assert 0 < figure.low < 300.0 < figure.high < 1000.0
    wider = share(3, 10, 1000.0, "sampled", exact=False)
    assert wider.low is not None and wider.high is not None
    assert wider.high - wider.low > figure.high - figure.low  # fewer draws, a wider interval


def test_the_weighted_mean_and_its_interval() -> None:
    games = [chr(ord("a") + n) for n in range(MIN_TIMED_GAMES)]
    values = [float(n) for n in range(1, MIN_TIMED_GAMES + 1)]
    mean, low, high = mean_interval(values, [1.0] * MIN_TIMED_GAMES, games)
    assert mean == pytest.approx(sum(values) / len(values))
    assert low is not None and high is not None and low < mean < high
    same, low, high = mean_interval([2.0] * 2 * MIN_TIMED_GAMES, [1.0, 2.0] * MIN_TIMED_GAMES, games * 2)
    assert (same, low, high) == pytest.approx((2.0, 2.0, 2.0))
    # Fewer timed games than an interval needs: the mean, and no interval (the one game
    # gave "0.0 s - 7749 days").
    assert mean_interval([1.0, 2.0], [1.0, 1.0], ["a", "a"]) == (1.5, None, None)
    assert mean_interval([1.0, 3.0], [1.0, 3.0], games[: MIN_TIMED_GAMES - 1][:2]) == (2.5, None, None)


# -- the wall-time model -------------------------------------------------------------------------


def test_the_wall_is_start_up_plus_the_larger_of_the_shared_and_the_serial_work_plus_the_last_unit() -> None:
    model = WallModel(startup=10.0, workers=4, ingest=40.0, driver=1.0, writer=8.0, reader=3.0, last_unit=0.5)
    assert model.wall(352.0) == pytest.approx(10.0 + 400.0 / 4 + 0.5)  # the writers share the workers' cores
    assert model.wall(0.0) == pytest.approx(10.0 + 12.0 + 0.5)  # the shared work (ingest, writers) still bounds it
    serial = WallModel(10.0, 4, 0.0, 1.0, 8.0, 30.0, 0.5)
    assert serial.wall(0.0) == pytest.approx(10.0 + 30.0 + 0.5)  # the stream's reader
    walls = [model.wall(seconds) for seconds in (0.0, 10.0, 100.0, 1000.0)]
    assert walls == sorted(walls)
    more = [WallModel(10.0, n, 40.0, 1.0, 8.0, 3.0, 0.5).wall(1000.0) for n in (1, 2, 8, 64, 1024)]
    assert more == sorted(more, reverse=True)
    assert more[-1] == pytest.approx(10.0 + 3.0 + 0.5)  # many workers: the serial work is the floor


def test_the_driver_costs_a_fixed_part_per_shard_and_the_writers_a_call_per_worker() -> None:
    assert driver_seconds(10) == pytest.approx(10 * DRIVER_SECONDS_PER_SHARD)
    assert call_seconds(10, 100) == pytest.approx(10 * 100 * WRITER_SECONDS_PER_WORKER_CALL)


def test_few_workers_are_bound_by_the_engine_at_the_jobs_own_shard_size() -> None:
    cut = ShardCut(range_shards=0, compressed_games=5000.0, shard_games=500, max_shard_games=40_000)
    row = scale_to(100, 1000.0, cut, 400.0, 1.0, startup=10.0, last_unit=0.5)
    assert row.bound == "engine"
    assert (row.shard_games, row.shards, row.capped) == (500, 10, False)
    assert row.engine_seconds == pytest.approx(10.0)
    calls = call_seconds(10, 100) / 100
    assert row.writer_seconds == pytest.approx(4.0 + calls)  # spread over the workers, like the engine
    assert row.driver_seconds == pytest.approx(driver_seconds(10))
    assert row.reader_seconds == 1.0
    assert row.wall_seconds == pytest.approx(10.0 + 14.0 + calls + 0.5)
    assert sum(row.shares().values()) == pytest.approx((14.0 + calls + row.driver_seconds + 1.0) / row.wall_seconds)


def test_many_workers_get_the_shard_size_that_keeps_the_driver_under_its_share() -> None:
    games = 9e7
    cut = ShardCut(range_shards=0, compressed_games=games, shard_games=500, max_shard_games=10**9)
    core_seconds = 1.6e9  # ~450,000 core-hours
    for workers in (1_000, 10_000, 12_000):
        row = scale_to(workers, core_seconds, cut, 0.0, 1.0, startup=0.0, last_unit=0.0)
        assert row.bound == "engine" and not row.capped
        assert row.driver_seconds <= DRIVER_SHARE * row.engine_seconds * (1 + 1e-9)
        assert row.shard_games >= 500
        if row.shard_games > 500:  # the smallest that does: one game fewer would not
            fewer = driver_seconds(cut.shards(row.shard_games - 1))
            assert fewer > DRIVER_SHARE * row.engine_seconds


def test_a_shard_size_past_what_a_stream_shard_holds_is_capped_and_said() -> None:
    cut = ShardCut(range_shards=0, compressed_games=9e7, shard_games=500, max_shard_games=2_000)
    row = scale_to(12_000, 1.6e7, cut, 0.0, 1.0, startup=0.0, last_unit=0.0)  # a cheap analysis: 22 min a worker
    assert row.capped and row.shard_games == 2_000
    assert row.driver_seconds > DRIVER_SHARE * row.engine_seconds


def test_the_serial_reader_can_bound_the_job() -> None:
    cut = ShardCut(0, 5000.0, 500, 40_000)
    row = scale_to(100, 1000.0, cut, 1.0, 1e6, startup=0.0, last_unit=0.0)
    assert row.bound == "reader"
    parts = (row.engine_seconds + row.writer_seconds, row.driver_seconds, row.reader_seconds)
    assert row.wall_seconds == pytest.approx(max(parts))


def test_more_workers_shrink_the_engine_share() -> None:
    cut = ShardCut(0, 50_000.0, 500, 40_000)
    rows = [scale_to(n, 1e6, cut, 10.0, 1.0, 10.0, 0.5) for n in (1, 10, 100, 1_000, 10_000)]
    engine = [row.engine_seconds for row in rows]
    assert engine == sorted(engine, reverse=True)
    assert all(
        row.wall_seconds
        == pytest.approx(10.0 + 0.5 + max(row.engine_seconds + row.writer_seconds, row.driver_seconds, 1.0))
        for row in rows
    )


def test_shards_are_counted_by_games_for_streams_and_by_bytes_for_plain_files() -> None:
    config = MineConfig(inputs=("x.pgn",), out="out", shard_games=500, shard_bytes=1 << 20)
    stream = SourceCount("a.pgn.zst", 10**6, 1000, True, 1000, 1000, True)
    plain = SourceCount("b.pgn", 10 << 20, 1000, True, 500, 500, False)  # half of 10 MiB read
    empty = SourceCount("c.pgn", 10 << 20, 1000, True, 0, 0, False)
    assert count_shards(config, [stream], 1.0) == (2, 1000.0)
    assert count_shards(config, [plain], 1.0) == (5, 0.0)
    assert count_shards(config, [stream, plain, empty], 1.0) == (7, 1000.0)
    assert count_shards(config, [stream, plain], 90.0) == (180 + 450, 90_000.0)  # --assume-games scales both
    assert count_shards(config, [empty], 1.0) == (1, 0.0)  # never fewer than one
    assert math.isclose(count_shards(config, [stream], 0.5)[1], 500.0)
