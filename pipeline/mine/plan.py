"""`diffimax plan`: what a mining job will cost, estimated before it runs from samples of its own
input, read and analysed by the project's own functions on this machine (no Ray).

The method (docs/mining.md, "Planning a job"):

1. *Count.* The games of a source are its `[Event ` lines (`count_games`); a source larger than
   COUNT_EXACT_BYTES on disk is estimated from its first PREFIX_BYTES (games per byte on disk).
   `--max-games` caps the count as it caps the job (games read, in input order).
2. *Sample the games.* Blocks of SAMPLE_BLOCK_GAMES consecutive games at seeded places of what the
   job reads (the whole of a counted source, the prefix of an estimated one) are read through the
   job's `GameReader` and `GameFilter`, as an ingest task reads them: the shares of games kept,
   filtered and failed, the positions per game, each kept game's position keys by ply, and the
   seconds per game of the parse. When the sample is the whole job these figures are counts.
3. *Distinct positions.* A key seen before anywhere in the job is not analysed again. Per ply, the
   distinct keys among n kept games of the sample are counted at n = n_s, n_s/2, n_s/4, ...
   (averaged over REUSE_ORDERS seeded orders of the games) and fitted with Heaps' law,
   D(n) = D(n_s) (n / n_s)^b with b in [0, 1], which is extrapolated to the job's kept games and
   capped at the positions of that ply (positions at low plies repeat most: b near 0; late in the
   game nearly every position is new: b near 1).
4. *Time the analysis.* Kept games of the sample, drawn in a seeded order until they hold
   SAMPLE_POSITIONS new positions, are judged by the job's own `AnalysisWorker` (its engine, limits,
   DiffiMax settings, judges, model and corpus) as the units the driver sends: each game's
   positions not seen before in the sample, in ply order, one unit (so they meet the warm table or
   hash a worker gives consecutive positions of a game). A position's seconds count with the weight
   of its ply among the positions the job will analyse (job distinct / sample distinct at that
   ply: a month analyses few early plies), a ratio estimate whose 90 % interval treats each game as
   one draw. As many processes judge at once as the job has workers on this machine, so the
   machine is as busy as the job makes it. One extra position first warms each worker up (a worker
   pays that once per job) and is not counted.
5. *Combine.* Analysed positions x seconds per position is the engine time; core-hours multiply it
   by the engine's threads. The wall time for N workers adds the pipeline's own work, measured
   here too: the parse of every game (ingest tasks share the workers' cores), the driver's cut of
   compressed streams into shards and its commit of every shard (the real `_commit` into a
   scratch dataset, on a shard of sampled positions): wall = start-up + max(all core-seconds / N,
   the driver's serial seconds) + the last unit (one game's positions on one worker).
"""

from __future__ import annotations

import bz2
import concurrent.futures
import contextlib
import gzip
import math
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, BinaryIO, cast

import numpy as np

from pipeline.common.stats import wilson
from pipeline.engines.backends import EMBEDDED, check_backend, effective_engine_options
from pipeline.ingest.games import Failed, Filtered, GameReader, PositionRow, Selected
from pipeline.ingest.sources import (
    NEWLINE_GAME_START,
    READ_BLOCK,
    Shard,
    ZstdStream,
    _stream_shards,
    compression_of,
    count_games,
    expand_inputs,
    is_url,
)
from pipeline.mine.config import MineConfig
from pipeline.mine.work import AnalysisWorker, Occurrence, PartOutcome, PositionResult, occurrence_rows, occurrences_of
from search.errors import DiffimaxError

# Sources up to this size on disk are counted game by game (about 1 s per 30 MB of .pgn.zst here).
COUNT_EXACT_BYTES = 1 << 30
# Bytes on disk read at the start of a larger source to estimate its games per byte.
PREFIX_BYTES = 64 << 20
# Consecutive games per sample block (blocks at seeded places, so the sample spans the input).
SAMPLE_BLOCK_GAMES = 25
# Games the sample reads by default (a few seconds of parsing).
SAMPLE_GAMES = 2000
# Positions the analysis sample times by default, in whole games' units (a native or Stockfish
# position costs 0.01-1 s here).
SAMPLE_POSITIONS = 100
# Seeded orders of the sample's games that the distinct-key curve is averaged over.
REUSE_ORDERS = 5
# Fewest games at which the distinct-key curve is measured (below it a count is mostly noise).
REUSE_MIN_GAMES = 8
# Positions of the scratch shard whose commit is timed (at most; fewer when shards are smaller).
COMMIT_PROBE_POSITIONS = 2000
# Seconds to start a local Ray cluster and its actors: measured on this 2-core machine
# (2026-12-01, under the other engineers' load: ray.init 9.0 s, two actors 0.7 s). Planning
# starts no Ray, so this one figure is assumed, not measured per plan; 0 with --address.
RAY_START_SECONDS = 10.0
# The normal quantile of a two-sided 90 % interval.
Z90 = 1.645
# The driver's own CPU seconds per shard, and per analysis worker per shard (each shard's pipeline
# is one prepare task, one call to every worker, one write task, one publication): measured on this
# machine (benchmarks/bench_cluster.py and the submit micro-benchmark in docs/mining.md). Planning
# starts no Ray, so these are assumed, not measured per plan.
DRIVER_SECONDS_PER_SHARD = 0.005
DRIVER_SECONDS_PER_WORKER_CALL = 0.0009
# Worker counts the scaling table of a plan shows.
SCALING_WORKERS = (100, 1_000, 10_000)


class PlanError(DiffimaxError, ValueError):
    """A job that cannot be planned: bad planning settings, an input plan cannot read, nothing to analyse."""


@dataclass(frozen=True)
class Figure:
    """One planned figure and how it was obtained."""

    value: float
    """The estimate."""
    how: str
    """How: counted, measured on the sample, or the model that extrapolated it."""
    low: float | None = None
    """Lower end of its 90 % interval where the method gives one (the sampling error only)."""
    high: float | None = None
    """Upper end of that interval."""


@dataclass(frozen=True)
class SourceCount:
    """What the count found in one source."""

    source: str
    """Absolute path of the source."""
    disk_bytes: int
    """Its size on disk."""
    games: int
    """Games (`[Event ` lines) in the source: counted, or estimated from its prefix."""
    counted: bool
    """True if `games` is a count, False if it is an estimate from the first PREFIX_BYTES."""
    games_read: int
    """Games the job reads from it (all, or what `--max-games` leaves after the sources before)."""
    sampleable: int
    """Games at its start the sample may come from: all it reads when counted, the prefix's otherwise."""
    compressed: bool
    """A compressed source: the driver cuts its stream into shards (a range source costs it nothing)."""


@dataclass(frozen=True)
class ReuseFit:
    """Heaps' law for one ply of the sample: distinct keys among n kept games."""

    ply: int
    """Half-moves played before the position."""
    games: int
    """Kept games of the sample."""
    positions: int
    """Positions at this ply in the sample."""
    distinct: int
    """Distinct keys at this ply in the sample."""
    exponent: float
    """b of D(n) = distinct (n / games)^b, fitted on the sample's curve, in [0, 1]."""

    def distinct_at(self, games: float) -> float:
        """Distinct keys at this ply among `games` kept games like the sample's."""
        if self.distinct == 0 or self.games == 0:
            return 0.0
        scale = games / self.games
        return float(min(self.positions * scale, self.distinct * scale**self.exponent))


@dataclass(frozen=True)
class TimedPosition:
    """One position of the analysis sample."""

    game_id: str
    """The game it was drawn from."""
    ply: int
    """Its ply in that game."""
    weight: float
    """Its weight in the mean: the job's distinct positions at its ply per distinct one of the sample."""
    engine_seconds: float
    """`PositionResult.seconds`: the judged analysis (engine, model, corpus), as the manifest sums it
    (wall-clock seconds: on a busy machine they include the waits for a core)."""
    cpu_seconds: float
    """CPU seconds the worker and its engine processes spent on the unit (what a core of its own
    would take, whatever else the machine runs), the position's share by its engine seconds."""
    unit_seconds: float
    """The worker's whole call for the unit (replaying the game included), the position's share."""
    error: str | None
    """The analysis's error, if it failed (as a job records it)."""


@dataclass(frozen=True)
class Sample:
    """What planning read and ran."""

    blocks: int
    """Blocks of consecutive games read."""
    games_read: int
    """Games read through the job's reader and filters."""
    games_kept: int
    """Of those, games kept (written by the job)."""
    games_filtered: int
    """Of those, games the filters left out."""
    games_error: int
    """Of those, games that could not be read."""
    filter_reasons: dict[str, int]
    """Filtered games by the rule that left them out."""
    positions: int
    """Positions of the kept games inside the ply window."""
    distinct: int
    """Distinct position keys among them."""
    whole_job: bool
    """True if the sample is every game the job reads (its figures are then counts)."""
    parse_seconds_per_game: float
    """Seconds per game read of `GameReader` on this machine (what ingest tasks spend)."""
    cut_seconds_per_game: float
    """Driver seconds per game to decompress a compressed stream and cut it into shards."""
    reuse: tuple[ReuseFit, ...]
    """The distinct-key fit of every ply with positions."""
    timed: tuple[TimedPosition, ...]
    """The analysis sample."""
    warmup_seconds: float
    """The uncounted first analysis of the worker."""
    worker_start_seconds: float
    """Seconds to build the job's `AnalysisWorker` (engine, model and corpus loaded)."""
    commit_positions: int
    """Positions of the scratch shard whose commit was timed."""
    commit_seconds: float
    """Seconds of that commit (`_commit`: rows built, five Parquet files written, one rename)."""
    seed: int
    """Seed of the block and game draws."""


@dataclass(frozen=True)
class Scaling:
    """The job's wall time with `workers` workers (a core each), and what bounds it."""

    workers: int
    wall_seconds: float
    bound: str
    """engine (the analysis over the workers), driver (its serial submissions and publications),
    writer (the shard writers on the driver's node) or reader (a stream's serial decompression)."""
    engine_seconds: float
    driver_seconds: float
    writer_seconds: float
    reader_seconds: float
    shard_games_for_driver: int | None
    """Games per shard at which the driver would no longer be the bound (None: it is not)."""


@dataclass(frozen=True)
class Plan:
    """What a mining job will read, analyse and cost, and how each figure was obtained."""

    sources: tuple[SourceCount, ...]
    """The expanded inputs and what the count found in each."""
    engine: str
    """The engine's name and version ("native", "Stockfish 15.1")."""
    engine_options: dict[str, Any]
    """The engine's effective limits (defaults filled in)."""
    settings: dict[str, Any]
    """The DiffiMax settings and judges of the job."""
    workers: int
    """Analysis workers the wall time is planned for."""
    workers_how: str
    """Where `workers` came from (--workers, this machine's CPUs, the cluster's)."""
    games_read: Figure
    """Games the job reads."""
    games_kept: Figure
    """Games that pass the filters and are mined (`games_written` in the manifest)."""
    games_filtered: Figure
    """Games the filters leave out."""
    games_error: Figure
    """Games that cannot be read."""
    positions: Figure
    """Positions of the kept games inside the ply window (`positions`)."""
    positions_analysed: Figure
    """Distinct positions: analysed once each (`positions_analysed` + `positions_error`)."""
    positions_reused: Figure
    """Repeats that reuse an analysis (`positions_reused`)."""
    runs_here: bool
    """True if the job would run on this machine (no --address, no more workers than its CPUs):
    its seconds are then this machine's wall clock, its load included; else a core per worker."""
    seconds_per_position: Figure
    """Engine seconds per analysed position, as the manifest's `engine_seconds` counts them."""
    cpu_seconds_per_position: Figure
    """CPU seconds per analysed position of the worker and its engine processes."""
    engine_seconds: Figure
    """Engine seconds of the job (`engine_seconds`: the judged analyses, summed)."""
    engine_core_hours: Figure
    """Engine core-hours: analysed positions x CPU seconds per position / 3600."""
    analysis_seconds: Figure
    """Worker seconds (`analysis_seconds`: engine seconds plus replaying the games)."""
    ingest_seconds: Figure
    """Core-seconds of the ingest tasks (parse, filter, replay), which share the workers' cores."""
    driver_seconds: Figure
    """The driver's serial seconds: cutting compressed streams, committing shards."""
    wall_seconds: Figure
    """Wall time of the job for `workers` workers."""
    shards: int
    """Shards the job will commit."""
    scaling: tuple[Scaling, ...]
    """The wall time at SCALING_WORKERS workers, each bound named."""
    sample: Sample
    """What planning read and ran."""
    planning_seconds: float
    """How long planning took."""
    assumptions: tuple[str, ...]
    """What the figures assume beyond what was measured."""

    def describe(self) -> dict[str, Any]:
        """The plan as plain JSON values."""
        return asdict(self)


# -- step 1: count -------------------------------------------------------------------------------


class _CountingReader:
    """A binary file that counts the bytes read from it, in reads of at most READ_BLOCK."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        block = self._raw.read(READ_BLOCK if size < 0 else min(size, READ_BLOCK))
        self.consumed += len(block)
        return block

    read1 = read

    def readable(self) -> bool:
        return True


@contextlib.contextmanager
def _decompressed(path: str) -> Iterator[tuple[BinaryIO, _CountingReader]]:
    """The decompressed stream of a local source, and the counter of its bytes on disk."""
    compression = compression_of(path)
    with open(path, "rb") as handle:
        raw = _CountingReader(cast(BinaryIO, handle))
        stream: BinaryIO
        if compression == "zstd":
            stream = cast(BinaryIO, ZstdStream(cast(BinaryIO, raw)))
        elif compression == "gzip":
            stream = cast(BinaryIO, gzip.GzipFile(fileobj=cast(BinaryIO, raw), mode="rb"))
        elif compression == "bz2":
            stream = cast(BinaryIO, bz2.BZ2File(cast(BinaryIO, raw), mode="rb"))
        else:
            stream = cast(BinaryIO, raw)
        yield stream, raw


def prefix_games(path: str, disk_bytes: int = PREFIX_BYTES) -> tuple[int, int]:
    """Games (`[Event ` lines) starting in the first `disk_bytes` bytes on disk of a source, and the
    bytes on disk that were read for them."""
    count = 0
    previous = b"\n"
    tail = len(NEWLINE_GAME_START) - 1
    with _decompressed(path) as (stream, raw):
        while raw.consumed < disk_bytes:
            block = stream.read(READ_BLOCK)
            if not block:
                break
            joined = previous[-tail:] + block
            count += joined.count(NEWLINE_GAME_START)
            previous = joined
        return count, raw.consumed


def count_sources(sources: Sequence[str], max_games: int | None, echo: Callable[[str], None]) -> list[SourceCount]:
    """Count the games of each source (or estimate a large one's), in input order, up to `max_games`."""
    counts: list[SourceCount] = []
    left = max_games
    for source in sources:
        if is_url(source):
            raise PlanError(f"cannot plan {source!r}: plan reads local files (download it, or plan on a local copy)")
        size = os.path.getsize(source)
        compressed = compression_of(source) != "none"
        if left is not None and left <= 0:
            counts.append(SourceCount(source, size, 0, True, 0, 0, compressed))
            continue
        if size <= COUNT_EXACT_BYTES:
            games = count_games(source)
            counted, sampleable = True, games
        else:
            in_prefix, read = prefix_games(source)
            games = round(in_prefix * size / max(1, read))
            counted, sampleable = False, in_prefix
            echo(f"plan: {source}: {size / 1e9:.1f} GB, ~{games:,} games (estimated from its first {read >> 20} MiB)")
        games_read = games if left is None else min(games, left)
        if left is not None:
            left -= games_read
        counts.append(SourceCount(source, size, games, counted, games_read, min(sampleable, games_read), compressed))
    return counts


# -- step 2: the game sample ---------------------------------------------------------------------


@dataclass
class _KeptGame:
    """A kept game of the sample, compactly: where it is, to read it again for its rows."""

    block: int  # index into the sample's blocks
    outcome: int  # index of its outcome within the block


@dataclass
class _GameSample:
    blocks: list[tuple[Shard, int]] = field(default_factory=list)  # block, games of it the job reads
    games_read: int = 0
    filtered: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    kept: list[_KeptGame] = field(default_factory=list)
    # One entry per position of a kept game, in reading order: kept-game index, ply, key.
    game_of: list[int] = field(default_factory=list)
    ply_of: list[int] = field(default_factory=list)
    key_of: list[int] = field(default_factory=list)
    parse_seconds: float = 0.0
    cut_seconds: float = 0.0
    cut_games: int = 0  # games of compressed sources the cut above went through


def choose_blocks(counts: Sequence[SourceCount], sample_games: int, seed: int) -> dict[int, list[int]]:
    """Seeded block indices (of SAMPLE_BLOCK_GAMES games) to read, by source index: every block
    when the sample covers the job."""
    blocks = [(index, block) for index, count in enumerate(counts)
              for block in range(math.ceil(count.sampleable / SAMPLE_BLOCK_GAMES))]  # fmt: skip
    wanted = math.ceil(sample_games / SAMPLE_BLOCK_GAMES)
    if wanted < len(blocks):
        rng = np.random.default_rng(seed)
        picked = sorted(int(i) for i in rng.choice(len(blocks), size=wanted, replace=False))
        blocks = [blocks[i] for i in picked]
    chosen: dict[int, list[int]] = {}
    for index, block in blocks:
        chosen.setdefault(index, []).append(block)
    return chosen


def read_sample(config: MineConfig, counts: Sequence[SourceCount], chosen: dict[int, list[int]]) -> _GameSample:
    """Read the chosen blocks through the job's reader and filters."""
    sample = _GameSample()
    reader = GameReader(config.game_filter)
    for index, wanted in sorted(chosen.items()):
        count = counts[index]
        wanted_set = set(wanted)
        last = max(wanted)
        shards = cast(Generator[Shard, None, None], _stream_shards(count.source, index, SAMPLE_BLOCK_GAMES))
        cut_seconds = 0.0
        start = time.perf_counter()
        for shard in shards:
            if shard.index in wanted_set:
                cut_seconds += time.perf_counter() - start
                limit = min(SAMPLE_BLOCK_GAMES, count.games_read - shard.index * SAMPLE_BLOCK_GAMES)
                _read_block(reader, shard, limit, sample)
                start = time.perf_counter()
            if shard.index >= last:
                break
        shards.close()
        if count.compressed:  # the driver cuts a range source by arithmetic alone
            sample.cut_seconds += cut_seconds + time.perf_counter() - start
            sample.cut_games += (last + 1) * SAMPLE_BLOCK_GAMES
    return sample


def _read_block(reader: GameReader, shard: Shard, limit: int, sample: _GameSample) -> None:
    block = len(sample.blocks)
    sample.blocks.append((shard, limit))
    start = time.perf_counter()
    outcomes = reader.read(shard.data or b"", source=shard.source, shard_id=shard.shard_id, base_offset=shard.start)
    for number, outcome in enumerate(outcomes):
        if number >= limit:
            break
        sample.games_read += 1
        if isinstance(outcome, Selected):  # always with a position: a game without is filtered (ply_window)
            game = len(sample.kept)
            sample.kept.append(_KeptGame(block, number))
            for row in outcome.positions:
                sample.game_of.append(game)
                sample.ply_of.append(row["ply"])
                sample.key_of.append(row["position_key"])
        elif isinstance(outcome, Failed):
            sample.errors += 1
        elif isinstance(outcome, Filtered):
            sample.filtered[outcome.rule] = sample.filtered.get(outcome.rule, 0) + 1
    sample.parse_seconds += time.perf_counter() - start


def selected_games(config: MineConfig, sample: _GameSample, games: Sequence[int]) -> dict[int, Selected]:
    """The kept games of the sample with these indices, read again in full (rows, moves)."""
    reader = GameReader(config.game_filter)
    by_block: dict[int, dict[int, int]] = {}
    for game in games:
        kept = sample.kept[game]
        by_block.setdefault(kept.block, {})[kept.outcome] = game
    found: dict[int, Selected] = {}
    for block, wanted in by_block.items():
        shard, limit = sample.blocks[block]
        outcomes = reader.read(shard.data or b"", source=shard.source, shard_id=shard.shard_id, base_offset=shard.start)
        for number, outcome in enumerate(outcomes):
            if number >= limit or number > max(wanted):
                break
            if number in wanted:
                assert isinstance(outcome, Selected), "the same bytes and filter give the same outcome"
                found[wanted[number]] = outcome
    return found


# -- step 3: distinct positions ------------------------------------------------------------------


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


# -- step 4: timing ------------------------------------------------------------------------------


def draw_units(
    sample: _GameSample, fits: Sequence[ReuseFit], games: float, count: int, seed: int
) -> list[tuple[int, list[int], list[float]]]:
    """Kept games of the sample in a seeded order, until they hold `count` new positions: per game,
    its index, the indices of its positions whose key is new in the sample (what the driver would
    send as its unit) and their weights (the job's distinct positions at that ply per distinct one
    of the sample)."""
    ply_weight = {fit.ply: fit.distinct_at(games) / max(1, fit.distinct) for fit in fits}
    seen: set[int] = set()
    new_of: dict[int, list[int]] = {}
    for index, key in enumerate(sample.key_of):
        if key not in seen:
            seen.add(key)
            new_of.setdefault(sample.game_of[index], []).append(index)
    order = np.random.default_rng(seed + 1).permutation(len(sample.kept)).tolist()
    units: list[tuple[int, list[int], list[float]]] = []
    positions = 0
    for game in order:
        indices = new_of.get(game)
        if not indices:
            continue
        units.append((game, indices, [ply_weight[sample.ply_of[i]] for i in indices]))
        positions += len(indices)
        if positions >= count:
            break
    return units


def unit_of(selected: Selected, rows: Sequence[PositionRow]) -> tuple[Occurrence, ...]:
    """The occurrences of these positions of a game, in ply order (as the job's prepare step builds them)."""
    plies = {row["ply"] for row in rows}
    return tuple(occurrence for occurrence in occurrences_of(selected) if occurrence.ply in plies)


# Clock ticks per second of the CPU times in /proc/<pid>/stat.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its live descendants (engine processes:
    the UCI engine, the human-move model's feature engine), read from /proc; this process alone
    where there is no /proc."""
    total = time.process_time()
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return total
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()  # the name may hold spaces and ')'
        except OSError:  # the process ended meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])  # utime + stime
    me = os.getpid()
    descendants: set[int] = set()
    frontier = {me}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - descendants
        descendants |= frontier
    return total + sum(ticks[pid] for pid in descendants) / CLOCK_TICKS


@dataclass(frozen=True)
class _Timing:
    """What one timing process returns."""

    timed: list[TimedPosition]
    results: list[PositionResult]
    warmup_seconds: float
    worker_start_seconds: float


def _time_share(config: MineConfig, units: Sequence[tuple[tuple[Occurrence, ...], Sequence[float]]]) -> _Timing:
    """Build the job's worker (engine, model, corpus), warm it up on the first unit's first
    position (uncounted), then judge each unit, one at a time."""
    start = time.perf_counter()
    worker = AnalysisWorker(config.engine, config.engine_options, config.judging(), config.human)
    worker_start = time.perf_counter() - start
    if worker.backend is None:
        raise PlanError(f"cannot start --engine {config.engine!r}: {worker.startup_error}")
    timed: list[TimedPosition] = []
    results: list[PositionResult] = []
    try:
        # Uncounted: the first position (engine and model caches warm), then an empty table, so
        # that the timed positions are analysed as the job analyses a position it has not seen.
        warmup = worker.analyse(units[0][0][:1])[0]
        worker.table.clear()
        for unit, weights in units:
            before = cpu_seconds()
            start = time.perf_counter()
            found = worker.analyse(unit)
            unit_seconds = time.perf_counter() - start
            cpu = cpu_seconds() - before
            engine_total = sum(result.seconds for result in found)
            for result, occurrence, weight in zip(found, unit, weights, strict=True):
                share = result.seconds / engine_total if engine_total > 0 else 1 / len(found)
                result.ply = occurrence.ply
                results.append(result)
                timed.append(TimedPosition(occurrence.game_id, occurrence.ply, weight, result.seconds, cpu * share,
                                           unit_seconds * share, result.error))  # fmt: skip
    finally:
        worker.close()
    return _Timing(timed, results, warmup.seconds, worker_start)


def _time_as_a_worker(config: MineConfig, units: Sequence[tuple[tuple[Occurrence, ...], Sequence[float]]]) -> _Timing:
    """`_time_share` in a process set up as Ray sets up the job's analysis actor (`num_cpus=1`):
    OMP_NUM_THREADS=1 unless set (the human-move model's LightGBM otherwise runs a thread per
    core, whose spinning threads contend with the other workers). The niceness of Ray's workers
    (15) is not copied: timed at it under the other engineers' load here, the native plan was 13x
    the measured run (docs/mining.md, "Planning a job")."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return _time_share(config, units)


def time_positions(
    config: MineConfig,
    units: Sequence[tuple[tuple[Occurrence, ...], Sequence[float]]],
    processes: int,
    echo: Callable[[str], None],
) -> list[_Timing]:
    """Judge the units in `processes` child processes at once (each with its own worker and its
    share of the units, set up as a Ray actor is), so that the machine is as busy as the job's
    workers would make it."""
    processes = max(1, min(processes, len(units)))
    total = sum(len(unit) for unit, _ in units)
    shares = [list(units[index::processes]) for index in range(processes)]
    # fork, not spawn: spawn imports the caller's main module again, which a script that calls
    # `plan` without a `__main__` guard cannot survive. Nothing here holds an engine or a thread yet.
    context = multiprocessing.get_context("fork")
    done: list[_Timing] = []
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=context) as pool:
        futures = [pool.submit(_time_as_a_worker, config, share) for share in shares]
        for future in concurrent.futures.as_completed(futures):
            done.append(future.result())
            echo(f"plan: {sum(len(timing.timed) for timing in done)}/{total} positions timed")
    return done


def time_commit(
    games: dict[int, Selected], results: dict[tuple[str, int], PositionResult], positions: int
) -> tuple[int, float]:
    """Seconds of the write step (`write_shard`: the workers' rows put in order, five Parquet files
    staged) of one shard of `positions` positions (the timed positions' rows, repeated) into a
    scratch dataset: (positions written, seconds)."""
    from pipeline.dataset.store import DatasetWriter, table_of
    from pipeline.ingest.sources import Shard
    from pipeline.mine.shards import ShardCounts, ShardTables, write_shard

    rows = [row for selected in games.values() for row in selected.positions if (row["game_id"], row["ply"]) in results]
    if not rows or positions < 1:
        return 0, 0.0
    repeated = [rows[index % len(rows)] for index in range(positions)]
    responses, traps, trap_seq = [], [], []
    for seq, row in enumerate(repeated):
        result = results[(row["game_id"], row["ply"])]
        if result.error is not None:
            continue
        response, trap_rows = occurrence_rows(result, row["game_id"], row["ply"], row["move_uci"], False)
        responses.append(response | {"analysis_key": row["position_key"]})
        traps.extend(trap_rows)
        trap_seq.extend([seq] * len(trap_rows))
    part = PartOutcome(table_of("responses", responses), list(range(len(responses))), table_of("traps", traps),
                       trap_seq)  # fmt: skip
    game_rows = [selected.game for selected in games.values()]
    shard = Shard("plan-probe", "plan", 0, "stream", 0, 0, 0)
    counts = ShardCounts(games_read=len(game_rows), games_written=len(game_rows), positions=len(repeated))
    tables = ShardTables(table_of("games", game_rows), table_of("positions", repeated))
    with tempfile.TemporaryDirectory(prefix="diffimax-plan-") as scratch:
        store = DatasetWriter.create(os.path.join(scratch, "probe"), {"identity": {"plan": True}})
        start = time.perf_counter()
        write_shard(str(store.root), shard, counts, tables, [part])
        seconds = time.perf_counter() - start
    return positions, seconds


# -- step 5: combine -----------------------------------------------------------------------------


def worker_count(config: MineConfig, workers: int | None) -> tuple[int, str]:
    """The workers to plan for: `workers`, the job's --workers, the CPUs of the cluster at
    --address, or this machine's CPUs (what `diffimax mine` starts by default)."""
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise PlanError(f"invalid --workers {workers!r}: must be a whole number >= 1")
        return workers, "--workers"
    if config.workers is not None:
        return config.workers, "--workers"
    if config.address is not None:
        import logging

        import ray

        ray.init(address=config.address, logging_level=logging.ERROR, log_to_driver=False, configure_logging=False)
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        finally:
            ray.shutdown()
        return max(1, cpus), f"the CPUs of the cluster at {config.address}"
    return os.cpu_count() or 1, "this machine's CPUs, as mine starts by default"


def _share(k: int, n: int, total: float, how: str, exact: bool) -> Figure:
    """`total` x k / n, with the Wilson 90 % interval of the share unless the sample is the job."""
    if exact:
        return Figure(float(k), how)
    low, high = wilson(k, n, Z90)
    return Figure(total * k / n if n else 0.0, how, total * low, total * high)


def _mean_interval(
    values: Sequence[float], weights: Sequence[float], clusters: Sequence[str]
) -> tuple[float, float, float]:
    """The weighted mean sum(w v) / sum(w) and its 90 % interval (normal, from the ratio
    estimator's standard error with each cluster, a timed game, as one draw: the positions of a
    game are not independent)."""
    value = np.asarray(values, dtype=float)
    weight = np.asarray(weights, dtype=float)
    names, cluster = np.unique(np.asarray(clusters), return_inverse=True)
    mean = float((weight * value).sum() / weight.sum())
    n = len(names)
    if n < 2:
        return mean, 0.0, 2 * mean  # one game: no spread to measure, say so by a wide interval
    totals = np.bincount(cluster, weights=weight * (value - mean), minlength=n)
    error = math.sqrt(n / (n - 1) * float((totals**2).sum())) / float(weight.sum())
    return mean, max(0.0, mean - Z90 * error), mean + Z90 * error


def _check_sizes(sample_games: int, sample_positions: int, assume_games: int | None) -> None:
    for name, value in (("--sample-games", sample_games), ("--sample-positions", sample_positions),
                        ("--assume-games", assume_games)):  # fmt: skip
        if value is None and name == "--assume-games":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PlanError(f"invalid {name} {value!r}: must be a whole number >= 1")


@dataclass(frozen=True)
class _Counts:
    """Step 1-3's figures."""

    games_read: Figure
    games_kept: Figure
    games_filtered: Figure
    games_error: Figure
    positions: Figure
    analysed: Figure
    reused: Figure
    fits: list[ReuseFit]


def _count_figures(sample: _GameSample, read: float, read_how: str, whole_job: bool, seed: int) -> _Counts:
    """Games, positions and distinct positions of the job from its sample."""
    read_n, kept_n = sample.games_read, len(sample.kept)
    if whole_job:
        read, read_how = float(read_n), "counted (read through the job's reader)"
    how = "counted (the sample is the whole job)" if whole_job else f"share of the {read_n:,}-game sample x games read"
    kept = _share(kept_n, read_n, read, how, whole_job)
    filtered = _share(sum(sample.filtered.values()), read_n, read, how, whole_job)
    failed = _share(sample.errors, read_n, read, how, whole_job)
    per_game = np.zeros(read_n)
    per_game[:kept_n] = np.bincount(np.asarray(sample.game_of, dtype=np.int64), minlength=kept_n)
    mean = float(per_game.mean())
    if whole_job:
        positions = Figure(float(len(sample.key_of)), "counted")
    else:
        spread = Z90 * float(per_game.std(ddof=1)) / math.sqrt(read_n) if read_n > 1 else mean
        positions = Figure(read * mean, "positions per game read in the sample x games read",
                           read * max(0.0, mean - spread), read * (mean + spread))  # fmt: skip
    fits, overlap = fit_reuse(sample.game_of, sample.ply_of, sample.key_of, kept_n, seed)
    if whole_job:
        analysed = Figure(float(len(set(sample.key_of))), "counted (distinct keys of the job)")
    else:
        analysed = Figure(
            overlap * sum(fit.distinct_at(kept.value) for fit in fits),
            f"Heaps' law per ply fitted on the sample's distinct keys, extrapolated {kept.value / kept_n:,.1f}x",
        )
    reused = Figure(max(0.0, positions.value - analysed.value), "positions - analysed")
    return _Counts(Figure(read, read_how), kept, filtered, failed, positions, analysed, reused, fits)


def _shards(config: MineConfig, counts: Sequence[SourceCount], scale: float) -> tuple[int, float]:
    """Shards the job commits, and the games of compressed sources (cut by the driver)."""
    shards = 0
    compressed = 0.0
    for count in counts:
        if count.games_read == 0:
            continue
        if count.compressed:
            compressed += count.games_read * scale
            shards += math.ceil(count.games_read * scale / config.shard_games)
        else:
            read_bytes = count.disk_bytes * count.games_read / max(1, count.games) * scale
            shards += math.ceil(read_bytes / config.shard_bytes)
    return max(1, shards), compressed


def scale_to(
    workers: int,
    core_seconds: float,
    shards: int,
    games: float,
    writer_seconds: float,
    head_cores: int,
    reader_seconds: float,
    startup: float,
    last_unit: float,
) -> Scaling:
    """The wall time with `workers` workers, a core each: the analysis and the parse spread over
    them; the driver's submissions, the writers on the driver's node and a stream's reader each
    serial; the largest of these bounds the job."""
    driver = shards * (DRIVER_SECONDS_PER_SHARD + DRIVER_SECONDS_PER_WORKER_CALL * workers)
    parts = {
        "engine": core_seconds / workers,
        "driver": driver,
        "writer": writer_seconds / head_cores,
        "reader": reader_seconds,
    }
    bound = max(parts, key=lambda name: parts[name])
    # Shards of g games cost the driver (games / g) x (per shard + per worker call); it stops being
    # the bound when that falls below the analysis's share per worker.
    per_shard = DRIVER_SECONDS_PER_SHARD + DRIVER_SECONDS_PER_WORKER_CALL * workers
    suggested = math.ceil(games * per_shard / parts["engine"]) if bound == "driver" and parts["engine"] > 0 else None
    return Scaling(
        workers, startup + parts[bound] + last_unit, bound, parts["engine"], driver, parts["writer"], reader_seconds,
        suggested,
    )  # fmt: skip


def plan(
    config: MineConfig,
    *,
    sample_games: int = SAMPLE_GAMES,
    sample_positions: int = SAMPLE_POSITIONS,
    workers: int | None = None,
    assume_games: int | None = None,
    seed: int = 0,
    echo: Callable[[str], None] | None = None,
) -> Plan:
    """Plan `config`'s job: read a sample of its games through its filters, time a sample of its
    positions with its engine and judges on this machine, and extrapolate (module docstring).
    `workers` overrides the job's --workers for the wall time; `assume_games` plans as if the
    inputs held that many games read, shaped like theirs (a stand-in for an input not at hand)."""
    say = echo or (lambda line: None)
    began = time.perf_counter()
    _check_sizes(sample_games, sample_positions, assume_games)
    sources = expand_inputs(config.inputs)
    engine_name = check_backend(config.engine)
    worker_n, workers_how = worker_count(config, workers)
    # 1-2: count, and read the sample.
    counts = count_sources(sources, config.max_games, say)
    counted_games = sum(count.games_read for count in counts)
    chosen = choose_blocks(counts, sample_games, seed)
    sample = read_sample(config, counts, chosen)
    all_blocks = sum(math.ceil(count.sampleable / SAMPLE_BLOCK_GAMES) for count in counts)
    whole_job = (assume_games is None and all(count.counted for count in counts)
                 and sum(len(blocks) for blocks in chosen.values()) == all_blocks)  # fmt: skip
    kept_n = len(sample.kept)
    say(f"plan: sample of {sample.games_read:,} games read ({len(sample.blocks)} blocks), {kept_n:,} kept, "
        f"{len(sample.key_of):,} positions")  # fmt: skip
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
    # 3: distinct positions.
    figures = _count_figures(sample, read, read_how, whole_job, seed)
    distinct = figures.analysed.value
    job_kept = figures.games_kept.value
    say(f"plan: {figures.positions.value:,.0f} positions, {distinct:,.0f} distinct; timing {sample_positions} "
        f"with {engine_name}")  # fmt: skip
    # 4: time whole games' units of the sample's new positions with the job's worker.
    drawn_units = draw_units(sample, figures.fits, job_kept, sample_positions, seed)
    games = selected_games(config, sample, sorted(game for game, _, _ in drawn_units))
    units: list[tuple[tuple[Occurrence, ...], Sequence[float]]] = []
    for game, indices, weights in drawn_units:
        plies = {sample.ply_of[index] for index in indices}
        rows = [row for row in games[game].positions if row["ply"] in plies]
        units.append((unit_of(games[game], rows), weights))
    timings = time_positions(config, units, min(worker_n, os.cpu_count() or 1), say)
    timed = [t for timing in timings for t in timing.timed]
    results = {(r.game_id, r.ply): r for timing in timings for r in timing.results}
    warmup = max(timing.warmup_seconds for timing in timings)
    worker_start = max(timing.worker_start_seconds for timing in timings)
    weights_of = [t.weight for t in timed]
    games_of = [t.game_id for t in timed]
    wall_mean, wall_low, wall_high = _mean_interval([t.engine_seconds for t in timed], weights_of, games_of)
    cpu_mean, cpu_low, cpu_high = _mean_interval([t.cpu_seconds for t in timed], weights_of, games_of)
    unit_mean, _, _ = _mean_interval([t.unit_seconds for t in timed], weights_of, games_of)
    engine_options = effective_engine_options(config.engine, config.engine_options)
    threads = 1 if config.engine in EMBEDDED else int(engine_options.get("threads") or 1)
    drawn = f"{len(timed)} positions of {len(units)} games, weighted by ply"
    # Where the job runs decides which clock plans it: on this machine (mine's default), the
    # wall-clock seconds measured here with as many processes at once as it has workers, its
    # other load included; on a cluster, the CPU seconds (a core per worker, the engine's
    # threads in parallel).
    here = config.address is None and worker_n <= (os.cpu_count() or 1)
    if here:
        per_position = Figure(wall_mean, f"wall-clock mean of {drawn} judged here, {len(timings)} at once",
                              wall_low, wall_high)  # fmt: skip
        worker_per_position = unit_mean
    else:
        per_position = Figure(cpu_mean / threads, f"CPU mean of {drawn} judged here / {threads} engine thread(s)",
                              cpu_low / threads, cpu_high / threads)  # fmt: skip
        worker_per_position = cpu_mean / threads + (unit_mean - wall_mean)
    cpu_per_position = Figure(cpu_mean, f"CPU mean of {drawn} (worker and engine processes)", cpu_low, cpu_high)
    engine_mean, engine_low, engine_high = per_position.value, per_position.low or 0.0, per_position.high or 0.0
    engine_seconds = Figure(distinct * engine_mean, "analysed x seconds per position", distinct * engine_low,
                            distinct * engine_high)  # fmt: skip
    core_hours = Figure(distinct * cpu_mean / 3600, "analysed x CPU seconds per position / 3600",
                        distinct * cpu_low / 3600, distinct * cpu_high / 3600)  # fmt: skip
    analysis_seconds = Figure(distinct * worker_per_position, "analysed x worker seconds per position (replay too)")
    # 5: the pipeline's own work (parse in prepare tasks, the stream reader's cut, the shard writers
    # on the driver's node, the driver's submissions), and the wall.
    parse_per_game = sample.parse_seconds / max(1, sample.games_read)
    cut_per_game = sample.cut_seconds / sample.cut_games if sample.cut_games else 0.0
    ingest = Figure(read * parse_per_game, "games read x parse seconds per game (measured here)")
    shards, compressed_games = _shards(config, counts, read / max(1, counted_games))
    per_shard = figures.positions.value / shards
    probe_positions, probe_seconds = time_commit(games, results, min(COMMIT_PROBE_POSITIONS, max(1, round(per_shard))))
    writer_total = shards * probe_seconds * per_shard / probe_positions if probe_positions else 0.0
    reader_total = compressed_games * cut_per_game  # one source at a time, each read once, in order
    driver = Figure(shards * (DRIVER_SECONDS_PER_SHARD + DRIVER_SECONDS_PER_WORKER_CALL * worker_n),
                    f"shards x ({DRIVER_SECONDS_PER_SHARD * 1000:g} ms + {DRIVER_SECONDS_PER_WORKER_CALL * 1000:g} ms "
                    "per worker), measured once on this machine")  # fmt: skip
    startup = (0.0 if config.address else RAY_START_SECONDS) + worker_start
    last_unit = worker_per_position * distinct / max(1.0, job_kept)  # one game's new positions, on one worker
    head_cores = os.cpu_count() or 1

    def wall_for(worker_seconds: float) -> float:
        busy = worker_seconds + ingest.value
        serial = max(driver.value, writer_total / head_cores, reader_total)
        return startup + max(busy / worker_n, serial) + last_unit

    replay = worker_per_position - engine_mean  # per position, outside the engine
    wall_seconds = Figure(
        wall_for(analysis_seconds.value),
        f"start-up {startup:.1f} s + max(core-seconds / {worker_n} workers, the driver's, the writers' "
        f"({head_cores} cores) and the stream reader's seconds) + the last unit {last_unit:.1f} s",
        wall_for(distinct * (engine_low + replay)),
        wall_for(distinct * (engine_high + replay)),
    )
    games_total = max(1.0, read)
    cluster_seconds = distinct * (cpu_mean / threads + replay) + ingest.value  # a core per worker
    scaling = tuple(
        scale_to(n, cluster_seconds, shards, games_total, writer_total, head_cores, reader_total, startup, last_unit)
        for n in SCALING_WORKERS
    )
    assumptions = [
        f"{worker_n} workers ({workers_how}), "
        + (
            "on this machine, as loaded now as while the draw was timed"
            if here
            else f"each on a core of its own like this machine's (engine threads: {threads})"
        ),
        f"Ray start-up {RAY_START_SECONDS:g} s (measured once on this machine, not per plan)"
        if not config.address
        else "an existing cluster: no Ray start-up",
    ]
    if not whole_job:
        assumptions.append("the rest of the input is shaped like the sample (filters, game lengths, openings)")
    if not all(count.counted for count in counts):
        assumptions.append("a large source's games are estimated from the bytes per game of its prefix, "
                           "and its sample comes from that prefix")  # fmt: skip
    if assume_games is not None:
        assumptions.append(f"{assume_games:,} games read, shaped like the {counted_games:,} of the inputs")
    settings = {**config.settings.describe(), **config.judges.describe(), "primary_judge": config.judging().primary,
                "human_model": config.human.model, "human_corpus": config.human.corpus,
                "setter_choices": config.setter_choices, "filter": asdict(config.game_filter),
                "max_games": config.max_games}  # fmt: skip
    return Plan(
        sources=tuple(counts),
        engine=engine_name,
        engine_options=engine_options,
        settings=settings,
        workers=worker_n,
        workers_how=workers_how,
        games_read=figures.games_read,
        games_kept=figures.games_kept,
        games_filtered=figures.games_filtered,
        games_error=figures.games_error,
        positions=figures.positions,
        positions_analysed=figures.analysed,
        positions_reused=figures.reused,
        seconds_per_position=per_position,
        cpu_seconds_per_position=cpu_per_position,
        runs_here=here,
        engine_seconds=engine_seconds,
        engine_core_hours=core_hours,
        analysis_seconds=analysis_seconds,
        ingest_seconds=ingest,
        driver_seconds=driver,
        wall_seconds=wall_seconds,
        shards=shards,
        scaling=scaling,
        sample=Sample(
            blocks=len(sample.blocks),
            games_read=sample.games_read,
            games_kept=kept_n,
            games_filtered=sum(sample.filtered.values()),
            games_error=sample.errors,
            filter_reasons=dict(sorted(sample.filtered.items())),
            positions=len(sample.key_of),
            distinct=len(set(sample.key_of)),
            whole_job=whole_job,
            parse_seconds_per_game=parse_per_game,
            cut_seconds_per_game=cut_per_game,
            reuse=tuple(figures.fits),
            timed=tuple(timed),
            warmup_seconds=warmup,
            worker_start_seconds=worker_start,
            commit_positions=probe_positions,
            commit_seconds=probe_seconds,
            seed=seed,
        ),
        planning_seconds=time.perf_counter() - began,
        assumptions=tuple(assumptions),
    )


# -- the report ----------------------------------------------------------------------------------


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _range(figure: Figure, form: Callable[[float], str]) -> str:
    if figure.low is None or figure.high is None:
        return form(figure.value)
    return f"{form(figure.value)} (90 %: {form(figure.low)} - {form(figure.high)})"


def _seconds(value: float) -> str:
    return f"{value:.3f} s"


def _count(value: float) -> str:
    return f"{value:,.0f}"


def _hours(value: float) -> str:
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def plan_text(plan: Plan) -> str:
    """The plan as a readable report."""
    size = sum(source.disk_bytes for source in plan.sources)
    sample = plan.sample
    wall = [t.engine_seconds for t in sample.timed]
    cpu = [t.cpu_seconds for t in sample.timed]
    step = max(1, len(sample.reuse) // 8)
    reuse = ", ".join(f"{fit.ply}: {fit.exponent:.2f}" for fit in sample.reuse[::step])
    where = "on this machine" if plan.runs_here else "a core per worker"
    lines = [
        f"Plan for {len(plan.sources)} input{'s' if len(plan.sources) != 1 else ''} ({size / 1e6:,.1f} MB on disk), "
        f"engine {plan.engine}, {plan.workers} worker{'s' if plan.workers != 1 else ''} ({plan.workers_how}, "
        f"{where})",
        f"games read:          {_count(plan.games_read.value)} ({plan.games_read.how})",
        f"games mined:         {_range(plan.games_kept, _count)}",
        f"games filtered:      {_count(plan.games_filtered.value)}; unreadable: {_count(plan.games_error.value)}",
        f"positions:           {_range(plan.positions, _count)}",
        f"analysed (distinct): {_count(plan.positions_analysed.value)} ({plan.positions_analysed.how}); "
        f"reused: {_count(plan.positions_reused.value)}",
        f"engine per position: {_range(plan.seconds_per_position, _seconds)} ({plan.seconds_per_position.how})",
        f"  timed spread:      wall {min(wall):.3f}-{max(wall):.3f} s (median {float(np.median(wall)):.3f}); CPU "
        f"{min(cpu):.3f}-{max(cpu):.3f} s (mean {plan.cpu_seconds_per_position.value:.3f})",
        f"engine time:         {_range(plan.engine_seconds, _duration)}",
        f"engine core-hours:   {_range(plan.engine_core_hours, _hours)}",
        f"pipeline:            ingest {_duration(plan.ingest_seconds.value)} of cores, driver "
        f"{_duration(plan.driver_seconds.value)} serial ({plan.shards:,} shard{'s' if plan.shards != 1 else ''})",
        f"wall time:           {_range(plan.wall_seconds, _duration)} with {plan.workers} workers",
        *(
            f"  {row.workers:>6,} workers: {_duration(row.wall_seconds)}, bound by the {row.bound} (engine "
            f"{_duration(row.engine_seconds)}, driver {_duration(row.driver_seconds)}, writers "
            f"{_duration(row.writer_seconds)}, reader {_duration(row.reader_seconds)})"
            + (
                f"; the driver stops bounding it at --shard-games {row.shard_games_for_driver:,}"
                if row.shard_games_for_driver
                else ""
            )
            for row in plan.scaling
        ),
        f"sample:              {sample.games_read:,} games in {sample.blocks} blocks"
        f"{' (the whole job)' if sample.whole_job else ''}, {sample.positions:,} positions, {sample.distinct:,} "
        f"distinct; warm-up {sample.warmup_seconds:.2f} s, worker start {sample.worker_start_seconds:.2f} s",
        f"reuse (Heaps b):     by ply {reuse}",
        "assumes:             " + "; ".join(plan.assumptions),
        f"planned in {plan.planning_seconds:.1f} s",
    ]
    return "\n".join(lines)
