"""The planner's pure parts (`pipeline/mine/plan/`): the reuse fit (Heaps' law per ply), the choice
of sample blocks, the estimates' intervals, and the wall-time model, on known inputs; the reuse fit
against the distinct positions of a real file, and the wall-time model against the job run as a
schedule (shards, a serial reader and driver, units and write tasks on N cores).

`tests/mine/test_plan.py` checks a whole plan against a real run; these pin the pieces it is built of."""

from __future__ import annotations

import heapq
import math
import random
import re
from pathlib import Path

import chess
import chess.polyglot
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
    choose_blocks,
    count_shards,
    driver_seconds,
    fit_reuse,
    mean_interval,
    scale_to,
    share,
)
from tests.conftest import GAMES, require_data


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
        (0, 64, 64, 1, 0.0),
        (1, 64, 64, 1, 0.0),
        (2, 64, 64, 1, 0.0),
    ]
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
    # The curve's points below the whole sample average seeded orders of the games: the same seed
    # gives the same fit, another seed other orders and so another (slightly different) exponent.
    sample = positions(100, 3, lambda game, ply: (game * 7919 + ply) % 37)
    fits = {seed: fit_reuse(*sample, 100, seed=seed) for seed in range(4)}
    assert all(fit_reuse(*sample, 100, seed=seed) == fits[seed] for seed in fits)
    exponents = {seed: tuple(fit.exponent for fit in found) for seed, (found, _) in fits.items()}
    assert len(set(exponents.values())) == len(fits), exponents  # every seed its own orders
    assert max(map(max, exponents.values())) - min(map(min, exponents.values())) < 0.1  # noise, no more
    # What the whole sample counts does not depend on the order.
    assert {tuple((f.positions, f.distinct) for f in found) for found, _ in fits.values()} == {((100, 37),) * 3}
    assert {overlap for _, overlap in fits.values()} == {1 / 3}


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


# Moves of a game's movetext: what is not a comment, a variation, a move number, a NAG or a result.
SAN = re.compile(r"\{[^}]*\}|\([^)]*\)|\$\d+|\d+\.(?:\.\.)?|1-0|0-1|1/2-1/2|\*|[^\s{}()]+")


def opening_keys(path: Path, plies: int) -> list[list[int]]:
    """The first `plies` positions of each standard game of a PGN file, as Zobrist keys: read
    here with python-chess alone, not by the project's reader."""
    games = []
    for block in re.split(r"\n\s*\n(?=\[)", path.read_text(encoding="utf-8", errors="replace")):
        lines = block.splitlines()
        if any(line.startswith(("[FEN ", "[Variant ")) and "Standard" not in line for line in lines):
            continue
        board, keys = chess.Board(), []
        for token in SAN.finditer(" ".join(line for line in lines if not line.startswith("["))):
            move = token.group()
            if move[0] in "{($*" or move[0].isdigit():
                continue
            if len(keys) == plies:
                break
            keys.append(chess.polyglot.zobrist_hash(board) & (2**63 - 1))
            board.push_san(move)
        if keys:
            games.append(keys)
    return games


def test_the_reuse_fit_of_a_small_sample_predicts_the_distinct_positions_of_the_whole_file() -> None:
    """The plan's figure against the count itself: Heaps' law fitted on 64 games drawn from the
    1,184 standard games of a real file of many players (chess.com), extrapolated to all of them,
    against the distinct positions those games really have (plies 0-9, where positions repeat
    most; 5,734 of them, the fit's figures 5 % to 24 % above, the unfitted ones 32 % to 41 %). Within
    the 30 % the plan is held to against a real run (tests/mine/test_plan.py), for each of six
    draws of the sample, and nearer than the two guesses without a fit: no reuse beyond the
    sample's (every game as new as the sample's: its distinct positions scaled up) and no new
    position at all (the sample's distinct positions)."""
    source = GAMES / "chesscom_mixed_1187.pgn"
    require_data(source)
    games = opening_keys(source, plies=10)
    assert len(games) > 1000
    actual = len({key for keys in games for key in keys})
    for seed in range(6):
        drawn = random.Random(seed).sample(games, 64)
        sample = (
            [g for g, keys in enumerate(drawn) for _ in keys],
            [p for keys in drawn for p in range(len(keys))],
            [key for keys in drawn for key in keys],
        )
        fits, overlap = fit_reuse(*sample, len(drawn), seed)
        planned = overlap * sum(fit.distinct_at(len(games)) for fit in fits)  # as estimate.count_figures does
        seen = len(set(sample[2]))
        no_reuse, no_new = seen * len(games) / len(drawn), seen
        assert abs(planned / actual - 1) <= 0.30, (seed, planned, actual)
        assert abs(planned - actual) < min(abs(no_reuse - actual), abs(no_new - actual)), (seed, planned, no_reuse)


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


def simulated_wall(
    games: int,
    shard_games: int,
    workers: int,
    game_seconds: float,
    writer_seconds: float,
    reader_seconds: float,
    startup: float,
    driver_per_shard: float = DRIVER_SECONDS_PER_SHARD,
    per_call: float = WRITER_SECONDS_PER_WORKER_CALL,
) -> float:
    """The wall time of a job run as a schedule, not a formula: the games cut into shards of
    `shard_games` (the last one short); a serial reader cutting them in order (`reader_seconds` for
    all the games); a serial driver submitting each shard once it is cut (`driver_per_shard`
    each); each game of a submitted shard a unit of `game_seconds` on the first free one of
    `workers` cores; after a shard's last unit its write task on the first free core (its games'
    share of `writer_seconds`, plus a call of `per_call` to each worker). The end of the last task,
    after the start-up."""
    sizes = [shard_games] * (games // shard_games) + ([games % shard_games] if games % shard_games else [])
    tasks: list[tuple[float, int, int, float]] = []  # (ready at, order, shard or -1 for a write, seconds)
    cut = submitted = 0.0
    for shard, size in enumerate(sizes):
        cut += size * reader_seconds / games
        submitted = max(submitted, cut) + driver_per_shard
        tasks += [(submitted, len(tasks), shard, game_seconds)] * size
    heapq.heapify(tasks)
    cores = [0.0] * workers
    units_left, shard_done, end = list(sizes), [0.0] * len(sizes), 0.0
    while tasks:
        ready, order, shard, seconds = heapq.heappop(tasks)
        finish = max(heapq.heappop(cores), ready) + seconds
        heapq.heappush(cores, finish)
        end = max(end, finish)
        if shard < 0:
            continue
        shard_done[shard] = max(shard_done[shard], finish)
        units_left[shard] -= 1
        if units_left[shard] == 0:
            write = writer_seconds * sizes[shard] / games + workers * per_call
            heapq.heappush(tasks, (shard_done[shard], order, -1, write))
    return startup + end


# (games, --shard-games, most games a shard holds, workers, seconds a game, writer core-seconds,
# reader seconds): a job each part bounds, and one whose driver the pick of --shard-games keeps
# under its share. Each write task is short beside the wall, as a real one is: the model spreads
# the writers' core-seconds over the cores and ends on one unit, so a write task as long as the
# analysis runs past what it says (40 core-seconds a shard beside 10 s of analysis on 100 workers:
# 24 s planned, 60 s run).
SCHEDULES = {
    "engine": (2000, 100, 40_000, 8, 2.0, 40.0, 2.0),
    "reader": (2000, 100, 40_000, 64, 2.0, 40.0, 500.0),
    "driver": (5000, 1, 1, 1000, 1.0, 5.0, 1.0),
    "picked": (5000, 1, 40_000, 1000, 1.0, 5.0, 1.0),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_the_wall_model_agrees_with_the_job_run_as_a_schedule(name: str) -> None:
    games, shard_games, most, workers, game_seconds, writer_seconds, reader_seconds = SCHEDULES[name]
    cut = ShardCut(range_shards=0, compressed_games=float(games), shard_games=shard_games, max_shard_games=most)
    row = scale_to(
        workers, games * game_seconds, cut, writer_seconds, reader_seconds, startup=10.0, last_unit=game_seconds
    )
    assert row.shards == math.ceil(games / row.shard_games)
    assert (row.shard_games > shard_games) == (name == "picked") and row.capped == (name == "driver")
    job = (games, row.shard_games, workers, game_seconds, writer_seconds, reader_seconds, 10.0)
    run = simulated_wall(*job)
    assert row.wall_seconds == pytest.approx(run, rel=0.05), (row, run)
    # The part the plan says bounds the job is the one whose cost, taken away, shortens the run most.
    freed = {
        "engine": simulated_wall(games, row.shard_games, workers, 0.0, 0.0, reader_seconds, 10.0, per_call=0.0),
        "driver": simulated_wall(*job, driver_per_shard=0.0),
        "reader": simulated_wall(games, row.shard_games, workers, game_seconds, writer_seconds, 0.0, 10.0),
    }
    assert min(freed, key=lambda part: freed[part]) == row.bound == (name if name != "picked" else "engine"), freed


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
