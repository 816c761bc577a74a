"""A shard's way through a mining job, as plain functions (no Ray): `read_shard` reads its games,
`split_shard` takes out the duplicates (which the job's registry names, `pipeline.mine.duplicates`)
and makes the rest into tables and into the occurrences each worker owns (`prepare_shard` does
both, for one shard on its own), `write_shard` puts the workers' rows back in the input order and
commits the shard's Parquet files. The Ray tasks in `pipeline.mine.actors` wrap them;
the driver only passes their results along by reference.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.dataset.lease import LeaseLostError, Tenure
from pipeline.dataset.store import commit_shard, table_of
from pipeline.human.context import Pool
from pipeline.ingest.games import read_games
from pipeline.ingest.headers import GameFilter, identity_keys
from pipeline.ingest.outcomes import Failed, Selected
from pipeline.ingest.rows import GameRow, PositionRow
from pipeline.ingest.sources import Shard
from pipeline.mine.counts import Counts, Effort
from pipeline.mine.duplicates import SeenGames, ordinal_of
from pipeline.mine.occurrences import Occurrence, occurrences_of
from pipeline.mine.rows import PartOutcome, played_from_next
from pipeline.mine.table import partition_of


@dataclass(frozen=True)
class ShardCounts:
    """What reading one shard found (small: the driver may ask for it)."""

    games_read: int = 0
    games_written: int = 0
    games_filtered: int = 0
    games_error: int = 0
    games_latin1: int = 0  # games written whose headers were not UTF-8 (read as Windows-1252)
    positions: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    filtered_by: dict[str, int] = field(default_factory=dict)  # games filtered, by rule
    values_dropped: dict[str, int] = field(default_factory=dict)  # values dropped from written games, by kind


@dataclass(frozen=True)
class ShardTables:
    """The rows of a shard that need no analysis: its games, positions and parse errors."""

    games: pa.Table
    positions: pa.Table
    errors: list[dict[str, Any]] = field(default_factory=list)
    ordinal: int = 0  # the shard's place in the input order, recorded in `_shard.json`


@dataclass(frozen=True)
class ReadShard:
    """A shard's games as read (`read_shard`), before duplicates are taken out (`split_shard`)."""

    shard_id: str
    ordinal: int
    """The shard's place in the job's input order (`pipeline.mine.duplicates.ordinal_of`)."""
    bytes_read: int
    selected: list[Selected]
    errors: list[dict[str, Any]]
    games_read: int
    filtered_by: dict[str, int]
    seconds: float

    def identities(self) -> list[tuple[int, ...]]:
        """Each selected game's identity keys, in order (`pipeline.ingest.headers.identity_keys`)."""
        return [
            identity_keys(game.game["game_id"], game.game["link"], game.game["digest"], game.game["moves_digest"])
            for game in self.selected
        ]


def read_shard(shard: Shard, game_filter: GameFilter, limit: int | None) -> ReadShard:
    """Read one shard's games (`limit` caps the games read), duplicates not yet known."""
    start = time.perf_counter()
    selected: list[Selected] = []
    errors: list[dict[str, Any]] = []
    read = 0
    filtered_by: Counter[str] = Counter()
    for outcome in read_games(shard, game_filter):
        if limit is not None and read >= limit:
            break
        read += 1
        if isinstance(outcome, Selected):
            selected.append(outcome)
        elif isinstance(outcome, Failed):
            errors.append({**outcome.error, "stage": "parse"})
        else:
            filtered_by[outcome.rule] += 1
    return ReadShard(
        shard.shard_id,
        ordinal_of(shard.source_index, shard.index),
        shard.end - shard.start,
        selected,
        errors,
        read,
        dict(filtered_by),
        time.perf_counter() - start,
    )


def split_shard(
    read: ReadShard, duplicates: Collection[int], partitions: int, pool: Pool | None = None
) -> tuple[ShardCounts, ShardTables, list[list[Occurrence]]]:
    """A read shard without its `duplicates` (indices into `read.selected`: filtered, rule
    `duplicate`): what it found, its tables, and its positions as occurrences, split among
    `partitions` workers by analysis key (in input order within each); `pool` overrides the rating
    pool the games' tags name."""
    start = time.perf_counter()
    games: list[GameRow] = []
    positions: list[PositionRow] = []
    parts: list[list[Occurrence]] = [[] for _ in range(partitions)]
    latin1 = 0
    filtered_by = Counter(read.filtered_by)
    dropped: Counter[str] = Counter()
    for index, outcome in enumerate(read.selected):
        if index in duplicates:
            filtered_by["duplicate"] += 1
            continue
        for occurrence in occurrences_of(outcome, len(positions), pool):
            parts[partition_of(occurrence.key, partitions)].append(occurrence)
        games.append(outcome.game)
        positions.extend(outcome.positions)
        dropped.update(outcome.dropped)
        latin1 += outcome.latin1
    counts = ShardCounts(
        games_read=read.games_read,
        games_written=len(games),
        games_filtered=filtered_by.total(),
        games_error=len(read.errors),
        games_latin1=latin1,
        positions=len(positions),
        bytes_read=read.bytes_read,
        seconds=read.seconds + time.perf_counter() - start,
        filtered_by=dict(sorted(filtered_by.items())),
        values_dropped=dict(sorted(dropped.items())),
    )
    tables = ShardTables(table_of("games", games), table_of("positions", positions), read.errors, read.ordinal)
    return counts, tables, parts


def prepare_shard(
    shard: Shard, game_filter: GameFilter, limit: int | None, partitions: int, pool: Pool | None = None
) -> tuple[ShardCounts, ShardTables, list[list[Occurrence]]]:
    """`read_shard` then `split_shard`, without the duplicates within the shard (a job also takes
    out those of earlier shards: `pipeline.mine.duplicates.SeenGames`, in the job's registry)."""
    read = read_shard(shard, game_filter, limit)
    return split_shard(read, SeenGames().register(read.ordinal, read.identities()), partitions, pool)


@dataclass(frozen=True)
class ShardResult:
    """What the writer of one shard returns to the driver: whether this attempt committed it (else
    another did, with the same rows), its counts (as `_shard.json` records them), and what its
    analysis cost."""

    shard_id: str
    committed: bool
    counts: Counts
    effort: Effort = field(default_factory=Effort)
    """What its analysis cost (`Effort`)."""
    fatal: str | None = None
    misplaced: bool = False
    """The writer's node does not see the dataset: nothing written (`pipeline.mine.actors.write`)."""
    node: str = ""
    """The node that wrote it."""


def effort_of(parts: Sequence[PartOutcome]) -> Effort:
    """What the workers' parts of one shard cost, together."""
    return Effort(
        analysis_seconds=sum(part.seconds for part in parts),
        engine_seconds=sum(part.engine_seconds for part in parts),
        engine_calls=sum(part.engine_calls for part in parts),
        evals_found=sum(part.evals_found for part in parts),
        evals_served=sum(part.evals_served for part in parts),
    )


def write_shard(
    root: str,
    shard: Shard,
    counts: ShardCounts,
    tables: ShardTables,
    parts: Sequence[PartOutcome],
    *,
    run: str | None = None,
    tenure: Tenure | None = None,
) -> ShardResult:
    """Put the workers' rows of one shard back in input order and commit its Parquet files to the
    dataset at `root` (`commit_shard`: a path or an object URL, as an attempt of run `run` while
    the job's lease `tenure` is held); nothing is written if a worker could not analyse at all, or
    the job has lost its lease (`fatal`: the job stops)."""
    fatal = next((part.fatal for part in parts if part.fatal is not None), None)
    effort = effort_of(parts)
    if fatal is not None:
        return ShardResult(shard.shard_id, False, Counts(), effort, fatal)
    responses = played_from_next(in_order([(part.responses, part.response_seq) for part in parts], "responses"))
    traps = in_order([(part.traps, part.trap_seq) for part in parts], "traps")
    failures = sorted(failure for part in parts for failure in part.failures)
    errors = [
        *tables.errors,
        *(
            {
                "source": shard.source,
                "shard_id": shard.shard_id,
                "game_index": None,
                "byte_offset": None,
                "game_id": game_id,
                "ply": ply,
                "stage": "analyse",
                "reason": reason,
            }
            for _, game_id, ply, reason in failures
        ),
    ]
    shard_counts = Counts(
        games_read=counts.games_read,
        games_written=counts.games_written,
        games_filtered=counts.games_filtered,
        games_error=counts.games_error,
        games_latin1=counts.games_latin1,
        games_filtered_by=counts.filtered_by,
        values_dropped=counts.values_dropped,
        positions=counts.positions,
        positions_analysed=sum(part.analysed for part in parts),
        positions_reused=sum(part.reused for part in parts),
        positions_error=len(failures),
        traps=traps.num_rows,
    )
    try:
        committed = commit_shard(
            root,
            shard.shard_id,
            {
                "games": [tables.games],
                "positions": [tables.positions],
                "responses": [responses],
                "traps": [traps],
                "errors": errors,
            },
            {
                "shard_id": shard.shard_id,
                "source": shard.source,
                "ordinal": tables.ordinal,
                "counts": shard_counts.shard_record(),
                "effort": asdict(effort),
            },
            run=run,
            tenure=tenure,
        )
    except LeaseLostError as lost:
        return ShardResult(shard.shard_id, False, Counts(), effort, str(lost))
    return ShardResult(shard.shard_id, committed, shard_counts, effort)


def in_order(parts: Sequence[tuple[pa.Table | None, list[int]]], name: str) -> pa.Table:
    """The rows of `parts` (tables with each row's `seq`) as one table in `seq` order (stable: the
    rows of one occurrence keep their order)."""
    tables = [table for table, _ in parts if table is not None and table.num_rows]
    if not tables:
        return table_of(name, [])
    seq = pa.array([s for table, order in parts if table is not None and table.num_rows for s in order], pa.int64())
    combined = pa.concat_tables(tables)
    return combined.take(pc.sort_indices(seq))


__all__ = [
    "ReadShard",
    "ShardCounts",
    "ShardResult",
    "ShardTables",
    "prepare_shard",
    "read_shard",
    "split_shard",
    "write_shard",
]
