"""Per-worker tables against exact job-wide reuse: how many of the job's repeats the bounded tables
serve, on the games of one shared file read as the job reads them.

  python -m benchmarks.bench_tables [--games 10000] [--workers 2,16,64] [--table-mb 16,64,256] [--json OUT]

*Exact job-wide reuse* is what a job with one unbounded table would serve: every occurrence of
an analysis key after its first (the ceiling of any reuse). A job with W workers gives each key
to one worker (`partition_of`), and each worker keeps at most `--table-mb` of packed entries
(`AnalysisTable`, least recently used out first). The figure is the share of the exact repeats
the W bounded tables serve, replayed in the job's order (shard by shard, a worker's occurrences
in the order its parts arrive).

The entries put in the tables are real: the engine answers of `--sample-positions` positions of
the same games judged by the job's own `AnalysisWorker` at the mining defaults (Stockfish,
judges human, model, practical), packed as a worker packs them; the replay cycles through them,
so the budget holds as many entries as it would hold of the job's own.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from pipeline.cli import mine_config
from pipeline.common.files import MIB
from pipeline.ingest.games import read_games
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.outcomes import Selected
from pipeline.ingest.sources import iter_shards
from pipeline.mine.occurrences import Occurrence, occurrences_of
from pipeline.mine.table import AnalysisEntry, AnalysisTable, partition_of
from pipeline.mine.work import AnalysisWorker

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
SOURCE = DATA / "lichess_player_a_37221.pgn.zst"
SHARD_GAMES = 500  # the job's default stream shard


def job_occurrences(source: Path, games: int) -> list[Occurrence]:
    """The occurrences of the first `games` mined games of `source`, every ply (the job's default
    window), in the job's order."""
    found: list[Occurrence] = []
    mined = 0
    for shard in iter_shards([str(source)], shard_games=SHARD_GAMES):
        for outcome in read_games(shard, GameFilter()):
            if not isinstance(outcome, Selected):
                continue
            found.extend(occurrences_of(outcome, len(found)))
            mined += 1
            if mined >= games:
                return found
    return found


def sample_entries(occurrences: Sequence[Occurrence], count: int, engine: str) -> list[AnalysisEntry]:
    """The entries the job's worker keeps for `count` occurrences spread over the job."""
    config = mine_config("", False, [str(SOURCE)], engine=engine)  # the flags' defaults
    worker = AnalysisWorker(config.engine, config.engine_options, config.judging(), config.human)
    if worker.backend is None:
        raise SystemExit(f"cannot start --engine {engine!r}: {worker.startup_error}")
    step = max(1, len(occurrences) // count)
    chosen = [occurrences[index] for index in range(step // 2, len(occurrences), step)][:count]
    try:
        worker.analyse(chosen)
        return [AnalysisTable.unpack(packed) for packed in worker.table.entries.values()]
    finally:
        worker.close()


def replay(keys: Sequence[int], entries: Sequence[AnalysisEntry], workers: int, table_mb: float) -> dict[str, float]:
    """Serve `keys` (in job order) from `workers` bounded tables; hits and the tables' size."""
    tables = [AnalysisTable(round(table_mb * MIB)) for _ in range(workers)]
    for index, key in enumerate(keys):
        table = tables[partition_of(key, workers)]
        if table.get(key) is None:
            table.put(key, entries[index % len(entries)])
    return {
        "hits": sum(table.hits for table in tables),
        "entries_held": sum(len(table) for table in tables),
        "evictions": sum(table.evictions for table in tables),
        "mib_held": sum(table.bytes for table in tables) / MIB,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--workers", default="2,16,64")
    parser.add_argument("--table-mb", default="16,64,256")
    parser.add_argument("--sample-positions", type=int, default=12)
    parser.add_argument("--engine", default="stockfish")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    occurrences = job_occurrences(SOURCE, args.games)
    keys = [occurrence.key for occurrence in occurrences]
    distinct = len(set(keys))
    exact = len(keys) - distinct
    took = time.perf_counter() - started
    print(
        f"{args.games:,} games of {SOURCE.name}: {len(keys):,} positions, {distinct:,} distinct analysis keys; "
        f"exact job-wide reuse {exact:,} ({exact / len(keys):.1%}) [read in {took:.0f} s]"
    )
    entries = sample_entries(occurrences, args.sample_positions, args.engine)
    sizes = [len(AnalysisTable.pack(entry)) for entry in entries]
    print(
        f"entries: {len(entries)} judged at the defaults ({args.engine}), packed {statistics.mean(sizes):,.0f} "
        f"bytes on average (min {min(sizes):,}, max {max(sizes):,})"
    )
    results = []
    for workers in [int(value) for value in args.workers.split(",")]:
        for table_mb in [float(value) for value in args.table_mb.split(",")]:
            found = replay(keys, entries, workers, table_mb)
            share = found["hits"] / exact if exact else 1.0
            results.append({"workers": workers, "table_mb": table_mb, **found, "share_of_exact": share})
            print(
                f"{workers:>3} workers x {table_mb:>5g} MiB: served {found['hits']:>9,.0f} = {share:6.1%} of exact "
                f"reuse; {found['entries_held']:,.0f} entries held, {found['evictions']:,.0f} evicted"
            )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "games": args.games,
                    "positions": len(keys),
                    "distinct": distinct,
                    "exact_reuse": exact,
                    "entry_bytes_mean": statistics.mean(sizes),
                    "results": results,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
