"""Step 5 of a plan: the workers it plans for, the shards the job commits, and the wall-time model
(what bounds a job of N workers: the analysis over the workers, the driver's serial submissions,
the shard writers on the driver's node, or a compressed stream's serial reader)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.mine.config import MineConfig
from pipeline.mine.plan.records import PlanError, Scaling, SourceCount

# Seconds to start a local Ray cluster and its actors: measured on this 2-core machine
# (2026-12-01, under the other engineers' load: ray.init 9.0 s, two actors 0.7 s). Planning
# starts no Ray, so this one figure is assumed, not measured per plan; 0 with --address.
RAY_START_SECONDS = 10.0
# The driver's own CPU seconds per shard: three task submissions (read, prepare, write), the
# registry's claim naming at most twice SHARDS_IN_FLIGHT_MAX shards, the results and counts read
# back (benchmarks/bench_submit.py on this loaded machine: 1.6 ms a task, 1.1 ms a claim plus
# 4.8 us per shard it names; 8 ms with the reads, rounded up). It does not grow with the workers:
# the write tasks hand each worker its part (a call of WRITER_SECONDS_PER_WORKER_CALL, 0.8 ms,
# measured there too), on every node, as core-seconds beside the analysis. Planning starts no Ray,
# so these are assumed, not measured per plan.
DRIVER_SECONDS_PER_SHARD = 0.008
WRITER_SECONDS_PER_WORKER_CALL = 0.0008
# Worker counts the scaling table of a plan shows (issue 31: a month at 1,000 to 12,000 cores).
SCALING_WORKERS = (1_000, 10_000, 12_000)
# The share of the analysis's wall the driver's serial seconds may take: the plan picks the
# --shard-games that keeps it under this, so that the driver never bounds the job.
DRIVER_SHARE = 0.10


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
        import ray

        from pipeline.common.cluster import ray_session

        with ray_session(config.address):
            cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        return max(1, cpus), f"the CPUs of the cluster at {config.address}"
    return os.cpu_count() or 1, "this machine's CPUs, as mine starts by default"


def count_shards(config: MineConfig, counts: Sequence[SourceCount], scale: float) -> tuple[int, float]:
    """Shards the job commits, and the games of compressed sources (cut into --shard-games shards)."""
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


def driver_seconds(shards: float) -> float:
    """The driver's serial seconds for `shards` shards, whatever the workers."""
    return shards * DRIVER_SECONDS_PER_SHARD


def call_seconds(shards: float, workers: int) -> float:
    """The write tasks' core-seconds calling each of `workers` workers once per shard."""
    return shards * workers * WRITER_SECONDS_PER_WORKER_CALL


@dataclass(frozen=True)
class WallModel:
    """The wall time of a job on `workers` workers, a core each, from its parts' seconds."""

    startup: float
    """Ray's start-up (none with --address) and the worker's own (engine, model, corpus)."""
    workers: int
    """Analysis workers."""
    ingest: float
    """Core-seconds of the ingest tasks, which share the workers' cores."""
    driver: float
    """The driver's serial seconds."""
    writer: float
    """Core-seconds of the shard writers, which run on any node (the dataset on object storage or a
    filesystem every node sees) and share the workers' cores."""
    reader: float
    """Seconds of the serial reader of compressed streams."""
    last_unit: float
    """The last unit (one game's new positions on one worker), after everything else."""

    def wall(self, worker_seconds: float) -> float:
        """Wall seconds when the analysis takes `worker_seconds` of the workers' time: start-up +
        max(all core-seconds / workers, the driver's, the reader's) + the last unit."""
        busy = worker_seconds + self.ingest + self.writer
        return self.startup + max(busy / self.workers, self.driver, self.reader) + self.last_unit


@dataclass(frozen=True)
class ShardCut:
    """How a job's games fall into shards: the range shards of plain files (fixed by --shard-mb),
    the games of compressed sources (cut by --shard-games), and the most games a stream shard can
    hold (`pipeline.ingest.sources.STREAM_SHARD_MAX_BYTES` of games)."""

    range_shards: int
    compressed_games: float
    shard_games: int
    max_shard_games: int

    def shards(self, shard_games: int | None = None) -> int:
        games = self.shard_games if shard_games is None else shard_games
        return max(1, self.range_shards + math.ceil(self.compressed_games / games))

    def pick(self, budget: float) -> tuple[int, bool]:
        """The --shard-games that keeps the driver's seconds within `budget`: the job's own if it
        does, else the smallest that does, at most `max_shard_games` (True when that cap stopped it
        short)."""
        if driver_seconds(self.shards()) <= budget or self.compressed_games <= 0:
            return self.shard_games, False
        room = math.floor(budget / DRIVER_SECONDS_PER_SHARD) - self.range_shards  # compressed shards it allows
        wanted = math.ceil(self.compressed_games / room) if room > 0 else self.max_shard_games + 1
        if wanted > self.max_shard_games:
            return max(self.shard_games, self.max_shard_games), True
        return max(self.shard_games, wanted), False


def scale_to(
    workers: int,
    core_seconds: float,
    cut: ShardCut,
    writer_seconds: float,
    reader_seconds: float,
    startup: float,
    last_unit: float,
) -> Scaling:
    """The wall time with `workers` workers, a core each: the analysis, the parse and the shard
    writers (their commits, and their calls to every worker) spread over them; the driver's
    submissions and a stream's reader each serial; the largest of these bounds the job. The shards
    are as many as the --shard-games the plan picks (`ShardCut.pick`): the driver within
    DRIVER_SHARE of the analysis's wall."""
    engine = core_seconds / workers
    shard_games, capped = cut.pick(DRIVER_SHARE * (engine + writer_seconds / workers))
    shards = cut.shards(shard_games)
    writers = (writer_seconds + call_seconds(shards, workers)) / workers
    parts = {"engine": engine + writers, "driver": driver_seconds(shards), "reader": reader_seconds}
    bound = max(parts, key=lambda name: parts[name])
    return Scaling(
        workers,
        startup + parts[bound] + last_unit,
        bound,
        engine,
        parts["driver"],
        writers,
        reader_seconds,
        shard_games,
        shards,
        capped,
    )
