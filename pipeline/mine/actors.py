"""The Ray side of a mining job: the tasks and actors a shard flows through, each a thin wrapper of
a plain function (`pipeline.mine.shards`, `pipeline.mine.work`) that tests call without Ray.

    stream reader ─► read task ─► registry ─► prepare task ─► write task (any node) ⇄ P analysis workers
      (compressed    parse, replay   which games   duplicates out,  hands each worker its      each owns the keys
      files, URLs)                   are copies    split by key     part, rows back in order,  of its partition
                                                                    Parquet committed

Objects flow between tasks and actors by reference; the driver only submits (four calls a shard,
however many workers) and waits for each shard's small `ShardResult` (the writer committed the
shard). The write task, not the driver, calls every worker: that call per worker per shard was the
driver's one cost that grew with the cluster (0.9 ms each: 10 s a shard at 12,000 workers), and in
the writers it is spread over every node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import ray

from pipeline.dataset.lease import Tenure
from pipeline.dataset.store import sees_run
from pipeline.engines.options import EngineOptions
from pipeline.human.context import Pool
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.pinned import FilePin
from pipeline.ingest.sources import Shard, source_shards
from pipeline.judging import HumanEvidence
from pipeline.mine.counts import Counts
from pipeline.mine.duplicates import Ordinal, SeenGames
from pipeline.mine.rows import PartOutcome
from pipeline.mine.shards import ReadShard, ShardCounts, ShardResult, ShardTables, read_shard, split_shard, write_shard
from pipeline.mine.table import DEFAULT_TABLE_MB
from pipeline.mine.work import AnalysisWorker, Judging


class SharedModel:
    """Maia-3's graph as the driver built it (`pipeline.human.maia3.payload`), for the analysis
    workers to fetch when they start and whenever Ray restarts one: a worker on a node without the
    model's files needs none. Not passed to the workers themselves: an actor that Ray restarts must
    not take an argument from the object store (a restart could find it gone, and Ray warns of it
    at every start); this actor is never restarted, and lives as long as the job."""

    def __init__(self, payload: tuple[bytes, str]) -> None:
        self.shipped = payload

    def payload(self) -> tuple[bytes, str]:
        return self.shipped


class MiningWorker(AnalysisWorker):
    """The analysis actor: an `AnalysisWorker` that tells the job's `PositionCounter` (found by name,
    so that the actor's constructor arguments stay plain values Ray can replay on a restart) about
    the positions it finishes."""

    def __init__(
        self,
        engine: str,
        options: EngineOptions,
        judging: Judging,
        human: HumanEvidence,
        counter: str,
        table_mb: float = DEFAULT_TABLE_MB,
        shipped_model: str | None = None,
        evals: str | None = None,
    ) -> None:
        """`shipped_model` names the job's `SharedModel` actor, which holds Maia-3's graph, or is
        None (a name, not a handle: Ray counts a handle among an argument's object references).
        `evals`: the job's evaluation cache (`--evals`)."""
        handle = ray.get_actor(counter)
        model: Any = None if shipped_model is None else ray.get(ray.get_actor(shipped_model).payload.remote())
        super().__init__(
            engine,
            options,
            judging,
            human,
            progress=handle.add.remote,
            table_mb=table_mb,
            shipped_model=model,
            evals=evals,
        )

    def table_stats(self) -> dict[str, int]:
        return self.table.stats()


class PositionCounter:
    """A Ray actor the workers tell about the positions they finish, so that progress moves as
    positions finish rather than as shards are published."""

    def __init__(self) -> None:
        self.done = 0

    def add(self, count: int) -> None:
        self.done += count

    def total(self) -> int:
        return self.done


def read(shard: Shard, data: bytes | None, game_filter: GameFilter, limit: int | None) -> tuple[ReadShard, Any]:
    """`read_shard` as the read task returns it: the shard's games, then their identity keys (a
    small object of its own, for the registry; `num_returns = 2`). A stream shard's bytes come as a
    separate object (`data`), read by the stream reader."""
    if data is not None:
        shard = dataclasses.replace(shard, data=data)
    games = read_shard(shard, game_filter, limit)
    return games, games.identities()


def prepare(read: ReadShard, duplicates: frozenset[int], partitions: int, pool: Pool | None = None) -> tuple[Any, ...]:
    """`split_shard` as the prepare task returns it (`num_returns = 3`): counts (small, read by the
    driver for progress and --max-games), tables, and the list of the workers' parts."""
    return split_shard(read, duplicates, partitions, pool)


class GameRegistry(SeenGames):
    """The job's registry of the games kept (a Ray actor on the driver's node, restarted if it
    dies): which games of a shard are duplicates. It starts from the dataset's committed shards,
    and each claim names the shards before it that are in flight (or just published), so that a
    restarted registry registers them again, in order, before it answers (`SeenGames.register`
    answers every shard the same however often, and in whatever order, it is asked)."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.load(root)

    def claim(
        self, ordinal: Ordinal, identities: list[tuple[int, ...]], earlier: list[tuple[Ordinal, list[Any]]]
    ) -> frozenset[int]:
        """The duplicates among a shard's selected games; `earlier` holds (ordinal, [a reference to
        its identities]) of the shards before it not known to be committed (wrapped in a list, so
        that Ray passes the reference, fetched only if this registry does not know the shard)."""
        for before, (reference,) in sorted(earlier, key=lambda item: item[0]):
            if before < ordinal and not self.known(before):
                self.register(before, ray.get(reference))
        return self.register(ordinal, identities)


def write(
    root: str,
    token: str,
    tenure: Tenure | None,
    shard: Shard,
    counts: ShardCounts,
    tables: ShardTables,
    parts: list[Any],
    workers: list[Any],
) -> ShardResult:
    """The write task, on any node: each of `workers` (the analysis actors up when the shard was
    split, in partition order) judges its part of `parts`, then `write_shard` commits the rows
    (while the job holds `tenure`, its lease on object storage). A node that does not see the run
    `token`'s dataset (a local directory it does not share) asks no worker, writes nothing and says
    so (`ShardResult.misplaced`). A write task that dies is retried whole: its workers' tables
    serve what they already judged."""
    node = ray.get_runtime_context().get_node_id()
    if not sees_run(root, token):
        return ShardResult(shard.shard_id, False, Counts(), misplaced=True, node=node)
    written = write_shard(root, shard, counts, tables, judged(parts, workers), run=token, tenure=tenure)
    return dataclasses.replace(written, node=node)


# Times the write task asks its workers again after a system failure (a worker gone for good, an
# object lost with a node); a worker that dies is restarted and its call retried by Ray itself first.
JUDGE_ATTEMPTS = 3


def judged(parts: list[Any], workers: list[Any]) -> list[PartOutcome]:
    """Each worker's outcome for its part. An error raised in a worker (a bug) ends the shard with
    its traceback; a system failure asks the workers again, up to JUDGE_ATTEMPTS times."""
    attempt = 1
    while True:
        try:
            calls = [worker.analyse_part.remote(part) for worker, part in zip(workers, parts, strict=True)]
            return list(ray.get(calls))
        except ray.exceptions.RayTaskError:
            raise
        except ray.exceptions.RayError:
            if attempt == JUDGE_ATTEMPTS:
                raise
            attempt += 1


def read_stream(
    source: str,
    source_index: int,
    shard_bytes: int,
    shard_games: int,
    max_game_bytes: int,
    url_timeout: float,
    pin: FilePin | dict[str, Any] | None = None,
) -> Iterator[Any]:
    """The stream reader (a Ray generator task): for each shard of a compressed file or a URL, its
    description (without its bytes), then its bytes, as two objects, so that the driver reads the
    small one and passes the other on by reference. A game above `max_game_bytes` is skipped
    (`pipeline.ingest.sources.MAX_GAME_BYTES`): what the reader holds stays bounded. A URL that
    sends nothing for `url_timeout` seconds or closes early is resumed (`HttpBody`). Every byte is
    held to the job's `pin` of the source (`pipeline.ingest.pinned`): a change ends the stream."""
    shards = source_shards(
        source,
        source_index,
        shard_bytes=shard_bytes,
        shard_games=shard_games,
        max_game_bytes=max_game_bytes,
        url_timeout=url_timeout,
        pin=pin,
    )
    for shard in shards:
        yield dataclasses.replace(shard, data=None)
        yield shard.data or b""


__all__ = ["GameRegistry", "MiningWorker", "PositionCounter", "SharedModel", "prepare", "read", "read_stream", "write"]
