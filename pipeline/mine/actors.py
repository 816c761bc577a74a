"""The Ray side of a mining job: the tasks and actors a shard flows through, each a thin wrapper of
a plain function (`pipeline.mine.shards`, `pipeline.mine.work`) that tests call without Ray.

    stream reader (compressed files, URLs) ─► prepare task ─► P analysis workers ─► write task
      generator task, bytes by reference      read, replay,     each owns the keys   rows back in order,
                                              split by key      of its partition      Parquet committed

Objects flow between tasks and actors by reference; the driver only submits and waits for each
shard's small `ShardResult` (the writer committed the shard).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import ray

from pipeline.dataset.store import sees_run
from pipeline.engines.backends import EngineOptions
from pipeline.human.context import Pool
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.sources import Shard, source_shards
from pipeline.mine.shards import ShardCounts, ShardResult, ShardTables, prepare_shard, write_shard
from pipeline.mine.table import DEFAULT_TABLE_MB
from pipeline.mine.work import AnalysisWorker, HumanEvidence, Judging, PartOutcome


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
        shipped_model: tuple[bytes, str] | None = None,
    ) -> None:
        """`shipped_model` comes by reference (one copy in the object store for every worker)."""
        handle = ray.get_actor(counter)
        super().__init__(
            engine, options, judging, human, progress=handle.add.remote, table_mb=table_mb, shipped_model=shipped_model
        )

    def table_stats(self) -> dict[str, int]:
        table = self.table
        return {"entries": len(table), "bytes": table.bytes, "hits": table.hits, "misses": table.misses,
                "evictions": table.evictions}  # fmt: skip


class PositionCounter:
    """A Ray actor the workers tell about the positions they finish, so that progress moves as
    positions finish rather than as shards are published."""

    def __init__(self) -> None:
        self.done = 0

    def add(self, count: int) -> None:
        self.done += count

    def total(self) -> int:
        return self.done


def prepare(
    shard: Shard,
    data: bytes | None,
    game_filter: GameFilter,
    limit: int | None,
    partitions: int,
    pool: Pool | None = None,
) -> tuple[Any, ...]:
    """`prepare_shard` as the prepare task returns it: counts, tables, then one object per worker
    (`num_returns = partitions + 2`), so that each worker fetches only its own occurrences. A stream
    shard's bytes come as a separate object (`data`), read by the stream reader."""
    if data is not None:
        shard = dataclasses.replace(shard, data=data)
    counts, tables, parts = prepare_shard(shard, game_filter, limit, partitions, pool)
    return (counts, tables, *parts)


def write(
    root: str, token: str, shard: Shard, counts: ShardCounts, tables: ShardTables, *parts: PartOutcome
) -> ShardResult:
    """`write_shard` as the write task runs it, on any node (the parts arrive resolved, never
    through the driver): a node that does not see the run `token`'s dataset (a local directory it
    does not share) writes nothing and says so (`ShardResult.misplaced`)."""
    node = ray.get_runtime_context().get_node_id()
    if not sees_run(root, token):
        return ShardResult(shard.shard_id, False, {}, misplaced=True, node=node)
    return dataclasses.replace(write_shard(root, shard, counts, tables, parts), node=node)


def read_stream(
    source: str, source_index: int, shard_bytes: int, shard_games: int, max_game_bytes: int, url_timeout: float
) -> Iterator[Any]:
    """The stream reader (a Ray generator task): for each shard of a compressed file or a URL, its
    description (without its bytes), then its bytes, as two objects, so that the driver reads the
    small one and passes the other on by reference. A game above `max_game_bytes` is skipped
    (`pipeline.ingest.sources.MAX_GAME_BYTES`): what the reader holds stays bounded. A URL that
    sends nothing for `url_timeout` seconds or closes early is resumed (`HttpBody`)."""
    shards = source_shards(
        source, source_index, shard_bytes=shard_bytes, shard_games=shard_games, max_game_bytes=max_game_bytes,
        url_timeout=url_timeout,
    )  # fmt: skip
    for shard in shards:
        yield dataclasses.replace(shard, data=None)
        yield shard.data or b""


__all__ = ["MiningWorker", "PositionCounter", "prepare", "read_stream", "write"]
