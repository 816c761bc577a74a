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
# The driver's own CPU seconds per shard, and per analysis worker per shard (each shard's pipeline
# is one prepare task, one call to every worker, one write task, one publication): measured on this
# machine (benchmarks/bench_cluster.py and the submit micro-benchmark in docs/mining.md). Planning
# starts no Ray, so these are assumed, not measured per plan.
DRIVER_SECONDS_PER_SHARD = 0.005
DRIVER_SECONDS_PER_WORKER_CALL = 0.0009
# Worker counts the scaling table of a plan shows.
SCALING_WORKERS = (100, 1_000, 10_000)


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


def driver_seconds(shards: int, workers: int) -> float:
    """The driver's serial seconds for `shards` shards, each a call to every one of `workers` workers."""
    return shards * (DRIVER_SECONDS_PER_SHARD + DRIVER_SECONDS_PER_WORKER_CALL * workers)


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
    """Seconds of the shard writers, spread over the driver's node's cores."""
    head_cores: int
    """Cores of the driver's node."""
    reader: float
    """Seconds of the serial reader of compressed streams."""
    last_unit: float
    """The last unit (one game's new positions on one worker), after everything else."""

    def wall(self, worker_seconds: float) -> float:
        """Wall seconds when the analysis takes `worker_seconds` of the workers' time:
        start-up + max(all core-seconds / workers, the driver's, the writers', the reader's) + the last unit."""
        busy = worker_seconds + self.ingest
        serial = max(self.driver, self.writer / self.head_cores, self.reader)
        return self.startup + max(busy / self.workers, serial) + self.last_unit


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
    driver = driver_seconds(shards, workers)
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
