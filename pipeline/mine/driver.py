"""`diffimax mine`: PGN databases in, DiffiMax at every selected position on Ray, Parquet out.

The driver reads the inputs as a stream of shards and keeps a bounded number in flight:

1. *Ingest* (Ray tasks): parse one shard, filter games on their headers, replay the selected
   ones into positions.
2. *Route* (driver, in shard order, so the result never depends on the number of workers): a
   position key seen before job-wide reuses that analysis; a new key is analysed at its first
   occurrence. The new positions of one game form one unit, so they reach one worker in ply order
   with a warm table / engine hash.
3. *Analyse* (a pool of stateful Ray actors, each with its own engine and transposition table for
   the whole job): `pipeline.mine.work.analyse_unit`. Actors restart and retry their unit when a
   worker process or a node dies; a unit starts from a clean engine state, so a retry returns the
   same rows.
4. *Commit* (driver): once every position of a shard has its analysis, the shard's tables are
   written and published atomically (`pipeline.dataset.store`).
"""

from __future__ import annotations

import logging
import os
import platform
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import pyarrow as pa
import pyarrow.compute
import ray

from pipeline.dataset.store import DatasetStore
from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.ingest.games import GameFilter, read_games
from pipeline.ingest.sources import Shard, compression_of, expand_inputs, is_url, iter_shards
from pipeline.mine.work import OCCURRENCE_COLUMNS, AnalysisUnit, PositionResult, analyse_unit, occurrence_rows
from schemas.dataset import SCHEMA_VERSION
from search.settings import DiffiMaxSettings

# Shards being ingested or analysed at once, per analysis worker (bounds driver memory).
SHARDS_IN_FLIGHT_PER_WORKER = 3
# Seconds between two progress lines.
PROGRESS_INTERVAL = 2.0


@dataclass(frozen=True)
class MineConfig:
    inputs: tuple[str, ...]
    """PGN files (.pgn, .pgn.zst, .pgn.gz, .pgn.bz2), directories, globs or http(s) URLs."""
    out: str
    """Output directory of the Parquet dataset."""
    settings: DiffiMaxSettings = field(default_factory=DiffiMaxSettings)
    engine: str = "native"
    """native, stockfish, or a UCI engine's path."""
    engine_options: EngineOptions = field(default_factory=EngineOptions)
    game_filter: GameFilter = field(default_factory=GameFilter)
    max_games: int | None = None
    """Stop after this many games read (in input order)."""
    workers: int | None = None
    """Analysis actors; default: the cluster's CPUs."""
    address: str | None = None
    """An existing Ray cluster; default: start a local one."""
    resume: bool = False
    setter_choices: bool = False
    """Also analyse each position with the side to move as setter: which of its moves would set a
    trap (doubles the engine work; needs depth >= 2)."""
    shard_bytes: int = 16 << 20
    shard_games: int = 500

    def __post_init__(self) -> None:
        if not self.inputs:
            raise ValueError("no input given: name PGN files, directories, globs or URLs")
        if self.max_games is not None and self.max_games < 1:
            raise ValueError(f"invalid --max-games {self.max_games}: must be at least 1")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"invalid --workers {self.workers}: must be at least 1")
        if self.setter_choices and self.settings.depth < 2:
            raise ValueError(f"--setter-choices needs --depth 2 or more, not {self.settings.depth}")
        if self.shard_games < 1 or self.shard_bytes < 1:
            raise ValueError("shard sizes must be positive")


@dataclass
class Counts:
    games_read: int = 0
    games_written: int = 0
    games_filtered: int = 0
    games_error: int = 0
    positions: int = 0
    positions_analysed: int = 0
    positions_reused: int = 0
    positions_error: int = 0
    traps: int = 0
    shards_committed: int = 0
    shards_skipped: int = 0

    def add(self, other: dict[str, int]) -> None:
        for name, value in other.items():
            if hasattr(self, name):
                setattr(self, name, getattr(self, name) + value)


@dataclass
class ShardIngest:
    """What one shard's ingest task returns."""

    shard_id: str
    source: str
    games: list[Any]  # GameRow
    positions: list[Any]  # PositionRow
    errors: list[Any]  # ErrorRow
    moves: dict[str, tuple[str | None, tuple[str, ...]]]  # game id -> (start FEN, UCI moves)
    games_read: int
    games_filtered: int
    bytes_read: int
    seconds: float


def ingest_shard(shard: Shard, game_filter: GameFilter, limit: int | None) -> ShardIngest:
    """Parse one shard (plain function; the Ray task wraps it). `limit` caps the games read."""
    from pipeline.ingest.games import Failed, Filtered, Selected

    start = time.perf_counter()
    games: list[Any] = []
    positions: list[Any] = []
    errors: list[Any] = []
    moves: dict[str, tuple[str | None, tuple[str, ...]]] = {}
    read = filtered = 0
    for outcome in read_games(shard, game_filter):
        if limit is not None and read >= limit:
            break
        read += 1
        if isinstance(outcome, Selected):
            games.append(outcome.game)
            positions.extend(outcome.positions)
            moves[outcome.game["game_id"]] = (outcome.start_fen, tuple(outcome.moves))
        elif isinstance(outcome, Filtered):
            filtered += 1
        elif isinstance(outcome, Failed):
            errors.append({**outcome.error, "stage": "parse"})
    return ShardIngest(
        shard.shard_id, shard.source, games, positions, errors, moves, read, filtered,
        shard.end - shard.start, time.perf_counter() - start,
    )  # fmt: skip


class AnalysisWorker:
    """A Ray actor: one engine and its transposition table / hash for the whole job."""

    def __init__(self, engine: str, options: EngineOptions, settings: DiffiMaxSettings, setter_choices: bool) -> None:
        self.backend = open_backend(engine, options)
        self.settings = settings
        self.setter_choices = setter_choices

    def analyse(self, unit: AnalysisUnit) -> tuple[str, list[PositionResult], float]:
        start = time.perf_counter()
        results = analyse_unit(self.backend, unit, self.settings, setter_choices=self.setter_choices)
        return unit.game_id, results, time.perf_counter() - start

    def describe(self) -> dict[str, Any]:
        return self.backend.describe()

    def pid(self) -> int:
        return os.getpid()


@dataclass
class PendingShard:
    ingest: ShardIngest
    waiting: set[int]  # position keys without a result yet


class Progress:
    def __init__(self, total_bytes: int | None, echo: Callable[[str], None]) -> None:
        self.start = time.monotonic()
        self.last = 0.0
        self.total_bytes = total_bytes
        self.echo = echo

    def update(self, counts: Counts, bytes_done: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_INTERVAL:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = (counts.positions_analysed + counts.positions_reused) / elapsed
        eta = ""
        if self.total_bytes and bytes_done:  # by the bytes of committed shards
            remaining = elapsed * (self.total_bytes - bytes_done) / bytes_done
            eta = f", ETA {remaining:,.0f} s"
        self.echo(
            f"games {counts.games_read:,} read, {counts.games_written:,} mined | positions "
            f"{counts.positions:,} ({counts.positions_analysed:,} analysed, {counts.positions_reused:,} "
            f"reused) | {rate:,.1f} positions/s | traps {counts.traps:,}{eta}"
        )


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("diffimax", "chess", "ray", "pyarrow", "duckdb"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "unknown"
    return versions


def run(config: MineConfig, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run a mining job; returns the manifest (also written to OUT/manifest.json)."""
    say = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    store = DatasetStore(config.out, resume=config.resume)
    committed = store.committed()
    started = time.time()
    owns_ray = not ray.is_initialized()
    if owns_ray:
        ray.init(address=config.address, include_dashboard=False, logging_level=logging.WARNING,
                 log_to_driver=False)  # fmt: skip
    try:
        return _run(config, store, committed, started, say)
    finally:
        if owns_ray:
            ray.shutdown()


def _run(
    config: MineConfig, store: DatasetStore, committed: set[str], started: float, say: Callable[[str], None]
) -> dict[str, Any]:
    cluster_cpus: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    workers = config.workers or max(1, int(cluster_cpus.get("CPU", 1)))
    actor_class: Any = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(AnalysisWorker)
    actors = [
        actor_class.remote(config.engine, config.engine_options, config.settings, config.setter_choices)
        for _ in range(workers)
    ]
    engine_info = ray.get(actors[0].describe.remote())
    ingest_task = ray.remote(num_cpus=0, max_retries=3)(ingest_shard)

    counts = Counts()
    results: dict[int, PositionResult] = {}  # position key -> its analysis, job-wide
    for info in store.shard_info().values():  # a resumed run reuses what committed shards found
        counts.add(info.get("counts", {}))
    if committed:
        results.update(_results_from(store))
        counts.shards_skipped = len(committed)

    total_bytes = _total_bytes(config.inputs)
    progress = Progress(total_bytes, say)
    bytes_done = 0
    limit_left = config.max_games - counts.games_read if config.max_games else None
    shards = iter_shards(config.inputs, shard_bytes=config.shard_bytes, shard_games=config.shard_games)
    in_flight: deque[tuple[Shard, Any]] = deque()
    pending: deque[PendingShard] = deque()
    requested: set[int] = set(results)  # keys analysed or being analysed
    unit_refs: dict[Any, int] = {}  # unit future -> actor index
    actor_load = [0] * workers
    engine_seconds = 0.0
    analysis_seconds = 0.0
    exhausted = False
    window = SHARDS_IN_FLIGHT_PER_WORKER * workers

    def submit(unit: AnalysisUnit) -> None:
        index = min(range(workers), key=lambda i: actor_load[i])
        actor_load[index] += 1
        unit_refs[actors[index].analyse.remote(unit)] = index

    while True:
        # Keep the ingest window full (in input order, so the routing below is deterministic).
        # Under --max-games one shard at a time: how many games a shard holds is known only once
        # it is parsed.
        while (
            not exhausted
            and len(in_flight) + len(pending) < window
            and (limit_left is None or (limit_left > 0 and not in_flight))
        ):
            shard = next(shards, None)
            if shard is None:
                exhausted = True
                break
            if shard.shard_id in committed:
                continue
            in_flight.append((shard, ingest_task.remote(shard, config.game_filter, limit_left)))
        # Route the oldest ingested shard once its parse is back.
        while in_flight:
            ready, _ = ray.wait([in_flight[0][1]], timeout=0)
            if not ready:
                break
            shard, ref = in_flight.popleft()
            ingest: ShardIngest = ray.get(ref)
            if limit_left is not None:
                limit_left -= ingest.games_read
            counts.games_read += ingest.games_read
            counts.games_filtered += ingest.games_filtered
            counts.games_error += len(ingest.errors)
            waiting: set[int] = set()
            units: dict[str, list[int]] = {}
            for position in ingest.positions:
                key = position["position_key"]
                if key not in results:
                    waiting.add(key)
                if key not in requested:
                    requested.add(key)
                    units.setdefault(position["game_id"], []).append(position["ply"])
            for game_id, plies in units.items():
                start_fen, moves = ingest.moves[game_id]
                submit(AnalysisUnit(game_id, start_fen, moves, tuple(plies)))
            pending.append(PendingShard(ingest, waiting))
        # Collect finished units.
        if unit_refs:
            done, _ = ray.wait(list(unit_refs), num_returns=len(unit_refs), timeout=0.05)
            for ref in done:
                actor_load[unit_refs.pop(ref)] -= 1
                _, unit_results, seconds = ray.get(ref)
                analysis_seconds += seconds
                for result in unit_results:
                    results[result.position_key] = result
                    engine_seconds += result.seconds
                for shard_state in pending:
                    shard_state.waiting.difference_update(r.position_key for r in unit_results)
        # Commit finished shards in order.
        while pending and not pending[0].waiting:
            shard_state = pending.popleft()
            shard_counts = _commit(store, shard_state.ingest, results)
            bytes_done += shard_state.ingest.bytes_read
            for name in ("games_written", "positions", "positions_analysed", "positions_reused", "positions_error",
                         "traps"):  # fmt: skip
                setattr(counts, name, getattr(counts, name) + shard_counts[name])
            counts.shards_committed += 1
        progress.update(counts, bytes_done)
        finished_reading = exhausted or (limit_left is not None and limit_left <= 0)
        if finished_reading and not in_flight and not pending and not unit_refs:
            break
        if not unit_refs and in_flight:
            ray.wait([in_flight[0][1]], timeout=0.5)

    progress.update(counts, bytes_done, force=True)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "inputs": list(config.inputs),
        "settings": config.settings.describe(),
        "filter": asdict(config.game_filter),
        "max_games": config.max_games,
        "engine": engine_info,
        "engine_options": asdict(config.engine_options),
        "workers": workers,
        "versions": _versions(),
        "started": started,
        "finished": time.time(),
        "wall_seconds": time.time() - started,
        "analysis_seconds": analysis_seconds,
        "engine_seconds": engine_seconds,
        "resumed": config.resume,
        **asdict(counts),
    }
    store.write_manifest(manifest)
    return manifest


def _commit(store: DatasetStore, ingest: ShardIngest, results: dict[int, PositionResult]) -> dict[str, int]:
    """Assemble a shard's rows from the job-wide results and publish them."""
    responses: list[dict[str, Any]] = []
    traps: list[dict[str, Any]] = []
    errors = list(ingest.errors)
    analysed = reused = failed = 0
    for position in ingest.positions:
        result = results[position["position_key"]]
        is_reuse = (result.game_id, result.ply) != (position["game_id"], position["ply"])
        if result.error is not None:
            failed += 1
            errors.append({
                "source": ingest.source, "shard_id": ingest.shard_id, "game_index": position.get("game_index"),
                "byte_offset": None, "game_id": position["game_id"], "ply": position["ply"], "stage": "analyse",
                "reason": result.error,
            })  # fmt: skip
            continue
        analysed += not is_reuse
        reused += is_reuse
        row, trap_rows = occurrence_rows(result, position["game_id"], position["ply"], position["move_uci"], is_reuse)
        responses.append(row)
        traps.extend(trap_rows)
    counts = {
        "games_read": ingest.games_read,
        "games_written": len(ingest.games),
        "games_filtered": ingest.games_filtered,
        "games_error": len(ingest.errors),
        "positions": len(ingest.positions),
        "positions_analysed": analysed,
        "positions_reused": reused,
        "positions_error": failed,
        "traps": len(traps),
    }
    tables = {"games": ingest.games, "positions": ingest.positions, "responses": responses, "traps": traps,
              "errors": errors}  # fmt: skip
    store.commit(ingest.shard_id, tables, {"shard_id": ingest.shard_id, "source": ingest.source, "counts": counts})
    return counts


def _results_from(store: DatasetStore) -> dict[int, PositionResult]:
    """Rebuild the job-wide results from committed shards (for --resume): every analysed (not
    reused) occurrence with its trap records, and the positions whose analysis failed."""
    responses = store.read_table("responses").to_pylist()
    traps_by_occurrence: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for trap in store.read_table("traps").to_pylist():
        if not trap["reused"]:
            traps_by_occurrence.setdefault((trap["game_id"], trap["ply"]), []).append(trap)
    results: dict[int, PositionResult] = {}
    for row in responses:
        if row["reused"]:
            continue
        occurrence = (row["game_id"], row["ply"])
        result = PositionResult(ply=row["ply"], position_key=row["position_key"], fen="", game_id=row["game_id"])
        result.response = {k: v for k, v in row.items() if k not in OCCURRENCE_COLUMNS and k != "position_key"}
        result.traps = [
            {k: v for k, v in trap.items() if k not in OCCURRENCE_COLUMNS}
            for trap in traps_by_occurrence.get(occurrence, [])
        ]
        results[result.position_key] = result
    failures = store.read_table("errors").filter(pa.compute.equal(store.read_table("errors")["stage"], "analyse"))
    positions = {(p["game_id"], p["ply"]): p["position_key"] for p in store.read_table("positions").to_pylist()}
    for error in failures.to_pylist():
        key = positions.get((error["game_id"], error["ply"]))
        if key is not None and key not in results:
            results[key] = PositionResult(
                ply=error["ply"], position_key=key, fen="", game_id=error["game_id"], error=error["reason"]
            )
    return results


def _total_bytes(inputs: tuple[str, ...]) -> int | None:
    """Bytes to read when every input is a plain local .pgn (the ETA needs them); else None."""
    total = 0
    for item in expand_inputs(inputs):
        if is_url(item) or compression_of(item) != "none":
            return None
        total += os.path.getsize(item)
    return total or None
