"""`plan()`: the five steps of a plan in order (the package's docstring), each a named function
over the modules that own it, and the `Plan` they add up to."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipeline.common.progress import Progress
from pipeline.engines.backends import EMBEDDED, check_backend, effective_engine_options
from pipeline.ingest.outcomes import Selected
from pipeline.ingest.sources import STREAM_SHARD_MAX_BYTES, expand_inputs
from pipeline.mine.config import MineConfig
from pipeline.mine.occurrences import Occurrence
from pipeline.mine.plan.count import count_sources
from pipeline.mine.plan.estimate import CountFigures, count_figures, mean_interval
from pipeline.mine.plan.measure import COMMIT_PROBE_POSITIONS, time_commit, time_positions
from pipeline.mine.plan.records import Figure, Plan, PlanError, PlanSample, Scaling, SourceCount, TimedPosition
from pipeline.mine.plan.sample import (
    SAMPLE_BLOCK_GAMES,
    SampledGames,
    choose_blocks,
    draw_units,
    read_sample,
    selected_games,
    unit_of,
)
from pipeline.mine.plan.walltime import (
    DRIVER_SECONDS_PER_SHARD,
    RAY_START_SECONDS,
    SCALING_WORKERS,
    ShardCut,
    WallModel,
    count_shards,
    driver_seconds,
    scale_to,
    worker_count,
)
from pipeline.mine.rows import PositionResult

# Games the sample reads by default (a few seconds of parsing).
SAMPLE_GAMES = 2000
# Positions the analysis sample times by default, in whole games' units (a native or Stockfish
# position costs 0.01-1 s here).
SAMPLE_POSITIONS = 100


@dataclass(frozen=True)
class _Input:
    """Steps 1-2: what the job reads, and the sample of it."""

    counts: list[SourceCount]
    sample: SampledGames
    counted_games: int
    """Games the inputs hold for the job (counted or estimated)."""
    read: float
    """Games the job reads (`counted_games`, or --assume-games)."""
    read_how: str
    whole_job: bool


@dataclass(frozen=True)
class _Timings:
    """Step 4: the timed positions and what the workers measured."""

    games: dict[int, Selected]
    """The timed games, read again in full, by kept-game index."""
    units: int
    """Units (games) timed."""
    processes: int
    """Processes that timed them at once."""
    timed: list[TimedPosition]
    results: dict[tuple[str, int], PositionResult]
    warmup: float
    worker_start: float


@dataclass(frozen=True)
class _Rates:
    """Step 4's seconds per analysed position, on the clock where the job runs."""

    here: bool
    """The job runs on this machine: its wall clock, else a core per worker."""
    threads: int
    """The engine's threads."""
    per_position: Figure
    """Engine seconds per analysed position."""
    cpu_per_position: Figure
    """CPU seconds per analysed position."""
    worker_per_position: float
    """A worker's seconds per analysed position (replaying the game too)."""
    cpu_mean: float
    """CPU seconds per analysed position, and its 90 % interval (None: too few timed games)."""
    cpu_low: float | None
    cpu_high: float | None


def _times(value: float | None, factor: float) -> float | None:
    """An interval's end scaled, or None where there is no interval."""
    return None if value is None else value * factor


def _check_sizes(sample_games: int, sample_positions: int, assume_games: int | None) -> None:
    for name, value in (
        ("--sample-games", sample_games),
        ("--sample-positions", sample_positions),
        ("--assume-games", assume_games),
    ):
        if value is None and name == "--assume-games":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PlanError(f"invalid {name} {value!r}: must be a whole number >= 1")


def _read_input(
    config: MineConfig,
    sources: Sequence[str],
    sample_games: int,
    assume_games: int | None,
    seed: int,
    progress: Progress,
) -> _Input:
    """Steps 1-2: count the sources, read the sample; PlanError if no sampled position is in the job."""
    say = progress.say
    counts = count_sources(sources, config.max_games, progress)
    counted_games = sum(count.games_read for count in counts)
    chosen = choose_blocks(counts, sample_games, seed)
    sample = read_sample(config, counts, chosen)
    all_blocks = sum(math.ceil(count.sampleable / SAMPLE_BLOCK_GAMES) for count in counts)
    whole_job = (
        assume_games is None
        and all(count.counted for count in counts)
        and config.game_filter.sample_rate == 1
        and sum(len(blocks) for blocks in chosen.values()) == all_blocks
    )
    kept_n = len(sample.kept)
    say(
        f"plan: sample of {sample.games_read:,} games read ({len(sample.blocks)} blocks), {kept_n:,} kept, "
        f"{len(sample.key_of):,} positions"
    )
    if not sample.key_of:
        reasons = ", ".join(f"{n} by {rule}" for rule, n in sorted(sample.filtered.items())) or "none filtered"
        raise PlanError(
            f"nothing to analyse: no position of the {sample.games_read:,} sampled games is in the job "
            f"({kept_n} kept, {sample.errors} unreadable; filtered: {reasons}); widen the filters or the ply window"
        )
    if assume_games is not None:
        read, read_how = float(assume_games), "assumed (--assume-games)"
    elif all(count.counted for count in counts):
        read, read_how = float(counted_games), "counted"
    else:
        read, read_how = float(counted_games), "estimated from the bytes per game of each large source's prefix"
    return _Input(counts, sample, counted_games, read, read_how, whole_job)


def _time_sample(
    config: MineConfig,
    sample: SampledGames,
    figures: CountFigures,
    sample_positions: int,
    processes: int,
    seed: int,
    progress: Progress,
) -> _Timings:
    """Step 4: time whole games' units of the sample's new positions with the job's worker."""
    drawn_units = draw_units(sample, figures.fits, figures.games_kept.value, sample_positions, seed)
    games = selected_games(config, sample, sorted(game for game, _, _ in drawn_units))
    units: list[tuple[tuple[Occurrence, ...], Sequence[float]]] = []
    for game, indices, weights in drawn_units:
        plies = {sample.ply_of[index] for index in indices}
        rows = [row for row in games[game].positions if row["ply"] in plies]
        units.append((unit_of(games[game], rows), weights))
    timings = time_positions(config, units, processes, progress)
    return _Timings(
        games=games,
        units=len(units),
        processes=len(timings),
        timed=[t for timing in timings for t in timing.timed],
        results={(r.game_id, r.ply): r for timing in timings for r in timing.results},
        warmup=max(timing.warmup_seconds for timing in timings),
        worker_start=max(timing.worker_start_seconds for timing in timings),
    )


def _rates(config: MineConfig, timings: _Timings, worker_n: int, engine_options: dict[str, Any]) -> _Rates:
    """Seconds per analysed position. Where the job runs decides which clock plans it: on this
    machine (mine's default), the wall-clock seconds measured here with as many processes at once as
    it has workers, its other load included; on a cluster, the CPU seconds (a core per worker, the
    engine's threads in parallel)."""
    timed = timings.timed
    weights_of = [t.weight for t in timed]
    games_of = [t.game_id for t in timed]
    wall_mean, wall_low, wall_high = mean_interval([t.engine_seconds for t in timed], weights_of, games_of)
    cpu_mean, cpu_low, cpu_high = mean_interval([t.cpu_seconds for t in timed], weights_of, games_of)
    unit_mean, _, _ = mean_interval([t.unit_seconds for t in timed], weights_of, games_of)
    threads = 1 if config.engine in EMBEDDED else int(engine_options.get("threads") or 1)
    drawn = f"{len(timed)} positions of {timings.units} games, weighted by ply"
    here = config.address is None and worker_n <= (os.cpu_count() or 1)
    if here:
        per_position = Figure(
            wall_mean, f"wall-clock mean of {drawn} judged here, {timings.processes} at once", wall_low, wall_high
        )
        worker_per_position = unit_mean
    else:
        per_position = Figure(
            cpu_mean / threads,
            f"CPU mean of {drawn} judged here / {threads} engine thread(s)",
            _times(cpu_low, 1 / threads),
            _times(cpu_high, 1 / threads),
        )
        worker_per_position = cpu_mean / threads + (unit_mean - wall_mean)
    cpu_per_position = Figure(cpu_mean, f"CPU mean of {drawn} (worker and engine processes)", cpu_low, cpu_high)
    return _Rates(here, threads, per_position, cpu_per_position, worker_per_position, cpu_mean, cpu_low, cpu_high)


@dataclass(frozen=True)
class _Costs:
    """Step 5: the job's seconds, and its wall time on `workers` workers and at SCALING_WORKERS."""

    engine_seconds: Figure
    core_hours: Figure
    analysis_seconds: Figure
    ingest: Figure
    driver: Figure
    wall_seconds: Figure
    shards: int
    scaling: tuple[Scaling, ...]
    parse_per_game: float
    cut_per_game: float
    probe_positions: int
    probe_seconds: float
    shard_games: int


def _engine_figures(distinct: float, rates: _Rates) -> tuple[Figure, Figure, Figure]:
    """The job's engine seconds, engine core-hours and worker seconds: analysed x per position."""
    engine_mean = rates.per_position.value
    engine_low, engine_high = rates.per_position.low, rates.per_position.high
    engine_seconds = Figure(
        distinct * engine_mean,
        "analysed x seconds per position",
        _times(engine_low, distinct),
        _times(engine_high, distinct),
    )
    core_hours = Figure(
        distinct * rates.cpu_mean / 3600,
        "analysed x CPU seconds per position / 3600",
        _times(rates.cpu_low, distinct / 3600),
        _times(rates.cpu_high, distinct / 3600),
    )
    analysis_seconds = Figure(
        distinct * rates.worker_per_position, "analysed x worker seconds per position (replay too)"
    )
    return engine_seconds, core_hours, analysis_seconds


def _costs(
    config: MineConfig, read: _Input, figures: CountFigures, timings: _Timings, rates: _Rates, worker_n: int
) -> _Costs:
    """Step 5: the pipeline's own work (parse in prepare tasks, the stream reader's cut, the shard
    writers on any node, the driver's submissions), and the wall."""
    sample = read.sample
    distinct = figures.analysed.value
    engine_seconds, core_hours, analysis_seconds = _engine_figures(distinct, rates)
    parse_per_game = sample.parse_seconds_per_game(config.game_filter.sample_rate)
    cut_per_game = sample.cut_seconds / sample.cut_games if sample.cut_games else 0.0
    ingest = Figure(read.read * parse_per_game, "games read x parse seconds per game (measured here)")
    shards, compressed_games = count_shards(config, read.counts, read.read / max(1, read.counted_games))
    cut = ShardCut(
        shards - math.ceil(compressed_games / config.shard_games) if compressed_games else shards,
        compressed_games,
        config.shard_games,
        _max_shard_games(read),
    )
    per_shard = figures.positions.value / shards
    probe_positions, probe_seconds = time_commit(
        timings.games, timings.results, min(COMMIT_PROBE_POSITIONS, max(1, round(per_shard)))
    )
    writer_total = shards * probe_seconds * per_shard / probe_positions if probe_positions else 0.0
    reader_total = compressed_games * cut_per_game  # one source at a time, each read once, in order
    startup = (0.0 if config.address else RAY_START_SECONDS) + timings.worker_start
    replay = rates.worker_per_position - rates.per_position.value  # per position, outside the engine
    cluster_seconds = distinct * (rates.cpu_mean / rates.threads + replay) + ingest.value  # a core per worker
    here = scale_to(worker_n, cluster_seconds, cut, writer_total, reader_total, 0.0, 0.0)
    picked = "" if here.shard_games == config.shard_games else f" (--shard-games {here.shard_games:,}, picked)"
    how = f"{here.shards:,} shards{picked} x {DRIVER_SECONDS_PER_SHARD * 1000:g} ms, measured once on this machine"
    driver = Figure(driver_seconds(here.shards), how)
    # The last unit: one game's new positions, on one worker.
    last_unit = rates.worker_per_position * distinct / max(1.0, figures.games_kept.value)
    writers_here = here.writer_seconds * worker_n  # commits, and the calls to each worker (`scale_to`)
    model = WallModel(startup, worker_n, ingest.value, driver.value, writers_here, reader_total, last_unit)
    wall_seconds = Figure(
        model.wall(analysis_seconds.value),
        f"start-up {startup:.1f} s + max((analysis + parse + shard writers) core-seconds / {worker_n} workers, "
        f"the driver's and the stream reader's seconds) + the last unit {last_unit:.1f} s",
        None if rates.per_position.low is None else model.wall(distinct * (rates.per_position.low + replay)),
        None if rates.per_position.high is None else model.wall(distinct * (rates.per_position.high + replay)),
    )
    # The clusters' rows (a core per worker, from CPU-seconds); the job's own count only when it
    # runs on a cluster too, or the plan would give two walls for one question (issue 44).
    scaling = tuple(
        scale_to(n, cluster_seconds, cut, writer_total, reader_total, startup, last_unit)
        for n in sorted({*SCALING_WORKERS, *(() if rates.here else (worker_n,))})
    )
    return _Costs(
        engine_seconds,
        core_hours,
        analysis_seconds,
        ingest,
        driver,
        wall_seconds,
        here.shards,
        scaling,
        parse_per_game,
        cut_per_game,
        probe_positions,
        probe_seconds,
        here.shard_games,
    )


def _max_shard_games(read: _Input) -> int:
    """The most games a stream shard holds: STREAM_SHARD_MAX_BYTES of games as long as the sample's."""
    games = sum(limit for _, limit in read.sample.blocks)
    size = sum(shard.end - shard.start for shard, _ in read.sample.blocks)
    return max(1, int(STREAM_SHARD_MAX_BYTES / max(1.0, size / max(1, games))))


def _assumptions(
    config: MineConfig, read: _Input, rates: _Rates, worker_n: int, workers_how: str, assume_games: int | None
) -> tuple[str, ...]:
    """What the figures assume beyond what was measured."""
    assumptions = [
        f"{worker_n} workers ({workers_how}), "
        + (
            "on this machine, as loaded now as while the draw was timed"
            if rates.here
            else f"each on a core of its own like this machine's (engine threads: {rates.threads})"
        ),
        f"Ray start-up {RAY_START_SECONDS:g} s (measured once on this machine, not per plan)"
        if not config.address
        else "an existing cluster: no Ray start-up",
    ]
    if not read.whole_job:
        assumptions.append("the rest of the input is shaped like the sample (filters, game lengths, openings)")
    if not all(count.counted for count in read.counts):
        assumptions.append(
            "a large source's games are estimated from the bytes per game of its prefix, "
            "and its sample comes from that prefix"
        )
    if assume_games is not None:
        assumptions.append(f"{assume_games:,} games read, shaped like the {read.counted_games:,} of the inputs")
    if config.evals is not None:
        assumptions.append(
            f"--evals {config.evals} holds the job's positions as it holds the sample's (the timed positions "
            "took their root searches from it where it had them)"
        )
    return tuple(assumptions)


def _settings(config: MineConfig) -> dict[str, Any]:
    """The DiffiMax settings and judges of the job, as the plan reports them."""
    return {
        **config.settings.describe(),
        **config.judges.describe(),
        "primary_judge": config.judging().primary,
        "human_model": config.human.model,
        "human_corpus": config.human.corpus,
        "setter_choices": config.setter_choices,
        "filter": asdict(config.game_filter),
        "max_games": config.max_games,
    }


def _sample_record(read: _Input, figures: CountFigures, timings: _Timings, costs: _Costs, seed: int) -> PlanSample:
    """What planning read and ran."""
    sample = read.sample
    return PlanSample(
        blocks=len(sample.blocks),
        games_read=sample.games_read,
        games_kept=len(sample.kept),
        games_filtered=sum(sample.filtered.values()),
        games_error=sample.errors,
        filter_reasons=dict(sorted(sample.filtered.items())),
        positions=len(sample.key_of),
        distinct=len(set(sample.key_of)),
        whole_job=read.whole_job,
        parse_seconds_per_game=costs.parse_per_game,
        cut_seconds_per_game=costs.cut_per_game,
        reuse=tuple(figures.fits),
        timed=tuple(timings.timed),
        warmup_seconds=timings.warmup,
        worker_start_seconds=timings.worker_start,
        commit_positions=costs.probe_positions,
        commit_seconds=costs.probe_seconds,
        seed=seed,
    )


def plan(
    config: MineConfig,
    *,
    sample_games: int = SAMPLE_GAMES,
    sample_positions: int = SAMPLE_POSITIONS,
    workers: int | None = None,
    assume_games: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> Plan:
    """Plan `config`'s job: read a sample of its games through its filters, time a sample of its
    positions with its engine and judges on this machine, and extrapolate (the package's docstring).
    `workers` overrides the job's --workers for the wall time; `assume_games` plans as if the
    inputs held that many games read, shaped like theirs (a stand-in for an input not at hand).
    `progress` shows the steps and the positions timed."""
    shown = progress or Progress.quiet()
    say = shown.say
    began = time.perf_counter()
    _check_sizes(sample_games, sample_positions, assume_games)
    sources = expand_inputs(config.inputs)
    engine_name = check_backend(config.engine)
    worker_n, workers_how = worker_count(config, workers)
    read = _read_input(config, sources, sample_games, assume_games, seed, shown)  # 1-2: count, and read the sample
    rate = config.game_filter.sample_rate
    figures = count_figures(read.sample, read.read, read.read_how, read.whole_job, seed, rate)  # 3: distinct positions
    say(
        f"plan: {figures.positions.value:,.0f} positions, {figures.analysed.value:,.0f} distinct; timing "
        f"{sample_positions} with {engine_name}"
    )
    processes = min(worker_n, os.cpu_count() or 1)
    timings = _time_sample(config, read.sample, figures, sample_positions, processes, seed, shown)  # 4
    engine_options = effective_engine_options(config.engine, config.engine_options)
    rates = _rates(config, timings, worker_n, engine_options)
    costs = _costs(config, read, figures, timings, rates, worker_n)  # 5
    return Plan(
        sources=tuple(read.counts),
        engine=engine_name,
        engine_options=engine_options,
        settings=_settings(config),
        workers=worker_n,
        workers_how=workers_how,
        games_read=figures.games_read,
        games_kept=figures.games_kept,
        games_filtered=figures.games_filtered,
        games_error=figures.games_error,
        positions=figures.positions,
        positions_analysed=figures.analysed,
        positions_reused=figures.reused,
        seconds_per_position=rates.per_position,
        cpu_seconds_per_position=rates.cpu_per_position,
        runs_here=rates.here,
        engine_seconds=costs.engine_seconds,
        engine_core_hours=costs.core_hours,
        analysis_seconds=costs.analysis_seconds,
        ingest_seconds=costs.ingest,
        driver_seconds=costs.driver,
        wall_seconds=costs.wall_seconds,
        shards=costs.shards,
        shard_games=costs.shard_games,
        scaling=costs.scaling,
        sample=_sample_record(read, figures, timings, costs, seed),
        planning_seconds=time.perf_counter() - began,
        assumptions=_assumptions(config, read, rates, worker_n, workers_how, assume_games),
    )
