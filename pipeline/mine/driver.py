"""`diffimax mine`: PGN databases in, DiffiMax at every selected position on Ray, Parquet out.

Before anything is created or started, the job is checked: its settings, its inputs (expanded
and readable), its output directory, and its engine (started once on the driver). Its identity
is then written to `OUT/job.json`, which `--resume` must match. The driver then repeats four
named steps, keeping a bounded number of shards in flight:

1. *Fill* (Ray tasks): parse shards, filter games on their headers, replay the selected ones
   into positions.
2. *Route* (driver, in shard order, so the result never depends on the number of workers): a
   position key seen before job-wide reuses that analysis; a new key is analysed at its first
   occurrence. The new positions of one game form one unit, so they reach one worker in ply order
   with a warm table / engine hash.
3. *Collect* (a pool of stateful Ray actors, each with its own engine and transposition table for
   the whole job): `pipeline.mine.work.AnalysisWorker`. Actors restart and retry their unit when a
   worker process or a node dies; a unit starts from a clean engine state, so a retry returns the
   same rows. An engine that cannot start stops the job with one line.
4. *Commit* (driver): once every position of a shard has its analysis, the shard's tables are
   written and published atomically (`pipeline.dataset.store`).

Ctrl-C or SIGTERM stop the job cleanly: committed shards stay, the rest is dropped, and the
error says how to `--resume`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import platform
import signal
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute
import ray
import ray.exceptions
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from pipeline.common.cluster import StderrAside, start_ray
from pipeline.dataset.store import DatasetWriter, check_output, table_of
from pipeline.engines.backends import EngineOptions, check_backend
from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.ingest.games import ErrorRow, Failed, GameFilter, GameRow, PositionRow, Selected, read_games
from pipeline.ingest.sources import Shard, compression_of, expand_inputs, is_url, iter_shards
from pipeline.judging import load_model, model_path
from pipeline.mine.config import MineConfig, check_resume, job_identity
from pipeline.mine.progress import Progress, Status
from pipeline.mine.work import (
    OCCURRENCE_COLUMNS,
    AnalysisUnit,
    AnalysisWorker,
    HumanEvidence,
    Judging,
    PositionResult,
    occurrence_rows,
)
from schemas.dataset import SCHEMA_VERSION
from search.errors import DiffimaxError

# Shards being ingested or analysed at once, per analysis worker (bounds driver memory).
SHARDS_IN_FLIGHT_PER_WORKER = 3
# Seconds the driver waits for any work to finish before it looks again.
POLL_SECONDS = 0.05


class MiningStopped(DiffimaxError, RuntimeError):
    """The job stopped before the end (an interrupt, an engine that cannot start); committed
    shards are kept. `exit_code` is what the command line exits with."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _Terminated(BaseException):
    """SIGTERM, raised by the driver loop (like KeyboardInterrupt for SIGINT)."""


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
    games: list[GameRow]
    positions: list[PositionRow]
    errors: list[ErrorRow]
    moves: dict[str, tuple[str | None, tuple[str, ...]]]  # game id -> (start FEN, UCI moves)
    games_read: int
    games_filtered: int
    bytes_read: int
    seconds: float


def ingest_shard(shard: Shard, game_filter: GameFilter, limit: int | None) -> ShardIngest:
    """Parse one shard (plain function; the Ray task wraps it). `limit` caps the games read."""
    start = time.perf_counter()
    games: list[GameRow] = []
    positions: list[PositionRow] = []
    errors: list[ErrorRow] = []
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
        elif isinstance(outcome, Failed):
            errors.append(outcome.error)
        else:
            filtered += 1
    return ShardIngest(
        shard.shard_id, shard.source, games, positions, errors, moves, read, filtered,
        shard.end - shard.start, time.perf_counter() - start,
    )  # fmt: skip


@dataclass
class PendingShard:
    ingest: ShardIngest
    waiting: set[int]  # position keys without a result yet
    results: dict[int, bytes] = field(default_factory=dict)  # its positions' analyses so far, packed


def pack(result: PositionResult) -> bytes:
    """An analysis as the reuse cache keeps it: pickled and compressed (a position's analysis is
    ~43 KB as Python objects, ~6.7 KB pickled, ~0.9 KB compressed; measured on player_a)."""
    return zlib.compress(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack(blob: bytes) -> PositionResult:
    result: PositionResult = pickle.loads(zlib.decompress(blob))
    return result


class ReuseCache:
    """A Ray actor holding the analyses of the positions whose key falls in its partition (`key %
    partitions`): the job-wide reuse of repeated positions, kept out of the driver so that its
    memory does not grow with the job, and kept packed (`pack`). `claim` is asked in routing
    order by the driver alone, so which occurrence of a position is analysed never depends on
    timing or workers."""

    def __init__(self) -> None:
        self.claimed: set[int] = set()
        self.results: dict[int, bytes] = {}

    def claim(self, keys: list[int]) -> list[bool]:
        """For each key: True if it was not claimed before (the caller has it analysed)."""
        fresh = []
        for key in keys:
            fresh.append(key not in self.claimed)
            self.claimed.add(key)
        return fresh

    def put(self, packed: list[tuple[int, bytes]]) -> None:
        for key, blob in packed:
            self.claimed.add(key)
            self.results[key] = blob

    def get(self, keys: list[int]) -> list[bytes]:
        return [self.results[key] for key in keys]

    def size(self) -> int:
        return len(self.results)


@dataclass(frozen=True)
class PackedOutcome:
    """A unit's outcome as a mining worker returns it: each analysis packed (`pack`) by the worker,
    so that the driver neither unpickles ~43 KB of objects per position from Ray nor packs them
    itself (both were most of the driver's time per position with a cheap engine)."""

    game_id: str
    packed: list[tuple[int, bytes]]  # (position key, packed analysis), in ply order
    seconds: float
    engine_seconds: float
    fatal: str | None = None


class MiningWorker(AnalysisWorker):
    """The Ray actor: an `AnalysisWorker` that tells the job's `PositionCounter` (found by name, so
    that the actor's constructor arguments stay plain values Ray can replay on a restart) about
    every position it finishes, and returns its analyses packed."""

    def __init__(
        self, engine: str, options: EngineOptions, judging: Judging, human: HumanEvidence, counter: str
    ) -> None:
        handle = ray.get_actor(counter)
        super().__init__(engine, options, judging, human, progress=handle.add.remote)

    def analyse_packed(self, unit: AnalysisUnit) -> PackedOutcome:
        outcome = self.analyse(unit)
        packed = [(result.position_key, pack(result)) for result in outcome.results]
        engine_seconds = sum(result.seconds for result in outcome.results)
        return PackedOutcome(outcome.game_id, packed, outcome.seconds, engine_seconds, outcome.fatal)


class PositionCounter:
    """A Ray actor the workers tell about every analysed position, so progress moves as positions
    finish rather than as shards commit."""

    def __init__(self) -> None:
        self.done = 0

    def add(self, count: int) -> None:
        self.done += count

    def total(self) -> int:
        return self.done


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("diffimax", "chess", "ray", "pyarrow", "duckdb"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "unknown"
    return versions


def run(
    config: MineConfig,
    echo: Callable[[str], None] | None = None,
    progress: Progress | None = None,
    *,
    verbose: bool = False,
) -> dict[str, Any]:
    """Run a mining job; returns the manifest (also written to OUT/manifest.json). `progress`
    shows the job as it runs (default: lines through `echo`, or nothing when `echo` is given and
    swallows them). `verbose` lets a local cluster's own log lines reach the terminal."""
    # Everything that can be wrong with the request is found before anything is created.
    sources = expand_inputs(config.inputs)
    check_output(config.out, resume=config.resume)
    engine_name = check_backend(config.engine)
    identity = job_identity(config, sources, engine_name, check_human_evidence(config.human))
    if config.resume:
        before = DatasetWriter(config.out).job() or {}
        check_resume(config.out, before.get("identity"), identity)
        store = DatasetWriter.reopen(config.out)
    else:
        store = DatasetWriter.create(config.out, {"identity": identity, "created": time.time()})
    shown = progress or Progress(echo=echo)
    started = time.time()
    owns_ray = not ray.is_initialized()
    aside = StderrAside()
    try:
        if owns_ray:
            start_ray(config.address, verbose=verbose)
        stop = threading.Event()
        with _sigterm_stops(stop, aside):  # after ray.init, whose C++ core installs a SIGTERM handler of its own
            job = MiningJob(config, store, identity, shown, started, stop)
            try:
                return job.run()
            finally:
                if not owns_ray:  # a cluster that outlives the job keeps no actor of it
                    job.stop_workers()
    except (KeyboardInterrupt, _Terminated) as interrupt:
        shown.close()
        aside.start()
        try:
            if owns_ray:
                ray.shutdown()
        finally:
            aside.end()
        code = 130 if isinstance(interrupt, KeyboardInterrupt) else 143
        raise MiningStopped(_stopped_message(store, "interrupted"), exit_code=code) from None
    except MiningStopped as stopped:
        shown.close()
        raise MiningStopped(_stopped_message(store, str(stopped)), stopped.exit_code) from None
    except BaseException:
        shown.close()
        if not config.resume:
            store.discard()
        raise
    finally:
        if owns_ray and ray.is_initialized():
            ray.shutdown()
        aside.end()  # whatever ended the job, its error line reaches the terminal


def check_human_evidence(human: HumanEvidence) -> dict[str, str | None]:
    """Load the model and the corpus once on the driver, so that a bad file is one line before
    anything starts; their digests go into the job's identity."""
    model = load_model(human.model)
    if model is not None and hasattr(model, "close"):
        model.close()
    if human.corpus is not None:
        Corpus.load(human.corpus)
    return {
        "human_model": None if human.model is None else file_digest(model_path(human.model)),
        "human_corpus": None if human.corpus is None else file_digest(human.corpus),
    }


def file_digest(path: str) -> str:
    """SHA-256 of a file, or of a dataset directory's committed shard files (names and bytes)."""
    digest = hashlib.sha256()
    target = Path(path)
    files = sorted(target.glob("shards/*/positions.parquet")) if target.is_dir() else [target]
    for file in files:
        digest.update(str(file.relative_to(target) if target.is_dir() else file.name).encode())
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _stopped_message(store: DatasetWriter, why: str) -> str:
    committed = len(store.committed())
    if not committed and store.created:
        store.discard()
        return f"{why}; nothing was committed, {str(store.root)!r} removed"
    return (
        f"{why}; {committed} shard{'s' if committed != 1 else ''} committed in {str(store.root)!r}: "
        "run the same command with --resume to continue"
    )


@contextlib.contextmanager
def _sigterm_stops(stop: threading.Event, aside: StderrAside) -> Iterator[None]:
    """SIGTERM sets `stop`, which the driver loop turns into `_Terminated` between two steps
    (raising inside the handler could land inside Ray's C++ calls), and puts stderr aside at once:
    a SIGTERM to the whole group reaches Ray's own processes too, whose dying words the driver
    would print. Only the main thread can set a handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        stop.set()
        aside.start()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class MiningJob:
    """One run of the driver loop: fill, route, collect, commit."""

    def __init__(
        self,
        config: MineConfig,
        store: DatasetWriter,
        identity: dict[str, Any],
        progress: Progress,
        started: float,
        stop: threading.Event | None = None,
    ) -> None:
        self.config = config
        self.stop = stop or threading.Event()
        self.store = store
        self.identity = identity
        self.progress = progress
        self.started = started
        self.counts = Counts()
        self.committed = store.committed()
        for info in store.shard_info().values():  # a resumed run reuses what committed shards found
            self.counts.add(info.get("counts", {}))
        self.counts.shards_skipped = len(self.committed)
        # Keys sent to the workers whose analysis is not back yet, and the pending shards that wait
        # for each: bounded by the shards in flight (the rest of the job's analyses are in the caches).
        self.inflight: dict[int, list[PendingShard]] = {}
        self.in_flight: deque[tuple[Shard, Any]] = deque()
        self.pending: deque[PendingShard] = deque()
        self.unit_refs: dict[Any, int] = {}  # unit future -> actor index
        self.limit_left = config.max_games - self.counts.games_read if config.max_games else None
        self.shards = iter_shards(config.inputs, shard_bytes=config.shard_bytes, shard_games=config.shard_games)
        self.exhausted = False
        self.engine_seconds = 0.0
        self.analysis_seconds = 0.0
        self.bytes_routed = 0
        self.analyses_requested = 0  # new positions sent to the workers in this run
        self.total_bytes = _total_bytes(config.inputs)
        self.start_workers()
        for shard_id in sorted(self.committed):  # shard by shard, so the driver holds one at a time
            self.remember([(key, pack(result)) for key, result in _results_from(store, [shard_id]).items()])

    # -- workers ---------------------------------------------------------------------------------

    def start_workers(self) -> None:
        config = self.config
        cluster_cpus: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        self.workers = config.workers or max(1, int(cluster_cpus.get("CPU", 1)))
        # The counter lives on the driver's node: it goes only when the whole job goes.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        counter_name = f"diffimax-positions-{uuid.uuid4().hex}"
        counter_class: Any = ray.remote(num_cpus=0)(PositionCounter)
        self.counter = counter_class.options(name=counter_name, scheduling_strategy=here).remote()
        actor_class: Any = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(MiningWorker)
        self.actors = [
            actor_class.remote(config.engine, config.engine_options, config.judging(), config.human, counter_name)
            for _ in range(self.workers)
        ]
        self.actor_load = [0] * self.workers
        self.engine_info: dict[str, Any] = ray.get(self.actors[0].describe.remote())
        self.ingest_task = ray.remote(num_cpus=0, max_retries=3)(ingest_shard)
        self.window = SHARDS_IN_FLIGHT_PER_WORKER * self.workers
        cache_class: Any = ray.remote(num_cpus=0)(ReuseCache)
        self.caches = [cache_class.options(scheduling_strategy=here).remote() for _ in range(max(1, self.workers // 2))]

    def partition(self, keys: Iterable[int]) -> dict[int, list[int]]:
        """Keys by the cache that holds them."""
        parts: dict[int, list[int]] = {}
        for key in keys:
            parts.setdefault(key % len(self.caches), []).append(key)
        return parts

    def claim(self, keys: list[int]) -> set[int]:
        """The keys no occurrence before claimed: they are analysed here."""
        parts = self.partition(dict.fromkeys(keys))
        answers = ray.get([self.caches[index].claim.remote(part) for index, part in parts.items()])
        return {
            key
            for part, fresh in zip(parts.values(), answers, strict=True)
            for key, new in zip(part, fresh, strict=True)
            if new
        }

    def remember(self, packed: Iterable[tuple[int, bytes]]) -> None:
        """Hand packed analyses to their caches (in order: a later `get` from this driver sees them)."""
        parts: dict[int, list[tuple[int, bytes]]] = {}
        for key, blob in packed:
            parts.setdefault(key % len(self.caches), []).append((key, blob))
        for index, part in parts.items():
            self.caches[index].put.remote(part)

    def recall(self, keys: Iterable[int]) -> dict[int, bytes]:
        """The packed analyses of `keys` from their caches."""
        parts = self.partition(keys)
        answers = ray.get([self.caches[index].get.remote(part) for index, part in parts.items()])
        return {
            key: blob
            for part, answer in zip(parts.values(), answers, strict=True)
            for key, blob in zip(part, answer, strict=True)
        }

    def stop_workers(self) -> None:
        """End the actors now (their engines with them), so nothing keeps running after the job."""
        for actor in [*getattr(self, "actors", []), *getattr(self, "caches", []), getattr(self, "counter", None)]:
            if actor is not None:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)

    def submit(self, unit: AnalysisUnit) -> None:
        index = min(range(self.workers), key=lambda i: self.actor_load[i])
        self.actor_load[index] += 1
        self.unit_refs[self.actors[index].analyse_packed.remote(unit)] = index

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        while not self.finished():
            if self.stop.is_set():
                raise _Terminated
            self.fill()
            self.route()
            self.collect()
            self.commit()
            self.show()
            if not self.unit_refs and self.in_flight:
                ray.wait([self.in_flight[0][1]], timeout=0.5)
        self.show(final=True)
        return self.write_manifest()

    def finished(self) -> bool:
        finished_reading = self.exhausted or (self.limit_left is not None and self.limit_left <= 0)
        return finished_reading and not self.in_flight and not self.pending and not self.unit_refs

    def fill(self) -> None:
        """Keep the ingest window full, in input order (so the routing below is deterministic).
        Under --max-games one shard at a time: how many games a shard holds is known only once it
        is parsed."""
        limit_left = self.limit_left
        while (
            not self.exhausted
            and len(self.in_flight) + len(self.pending) < self.window
            and (limit_left is None or (limit_left > 0 and not self.in_flight))
        ):
            shard = next(self.shards, None)
            if shard is None:
                self.exhausted = True
                break
            if shard.shard_id in self.committed:
                continue
            self.in_flight.append((shard, self.ingest_task.remote(shard, self.config.game_filter, limit_left)))

    def route(self) -> None:
        """Route the oldest ingested shards, in order, once their parse is back."""
        while self.in_flight:
            ready, _ = ray.wait([self.in_flight[0][1]], timeout=0)
            if not ready:
                return
            _, ref = self.in_flight.popleft()
            ingest: ShardIngest = ray.get(ref)
            counts = self.counts
            if self.limit_left is not None:
                self.limit_left -= ingest.games_read
            counts.games_read += ingest.games_read
            counts.games_filtered += ingest.games_filtered
            counts.games_error += len(ingest.errors)
            self.bytes_routed += ingest.bytes_read
            keys = [position["position_key"] for position in ingest.positions]
            fresh = self.claim(keys)
            shard_state = PendingShard(ingest, set())
            units: dict[str, list[PositionRow]] = {}
            done_elsewhere: set[int] = set()
            for position in ingest.positions:
                key = position["position_key"]
                if key in fresh:
                    fresh.discard(key)  # the first occurrence is analysed; repeats in this shard wait for it
                    self.inflight[key] = []
                    units.setdefault(position["game_id"], []).append(position)
                if key in self.inflight:
                    if shard_state not in self.inflight[key]:
                        self.inflight[key].append(shard_state)
                    shard_state.waiting.add(key)
                else:
                    done_elsewhere.add(key)
            shard_state.results.update(self.recall(done_elsewhere))
            timing = {game["game_id"]: (game["base_seconds"], game["increment_seconds"]) for game in ingest.games}
            for game_id, rows in units.items():
                start_fen, moves = ingest.moves[game_id]
                base, increment = timing[game_id]
                contexts = tuple(
                    MoverContext(row["mover_rating"], row["clock_seconds"], base, increment) for row in rows
                )
                plies = tuple(row["ply"] for row in rows)
                unit_keys = tuple(row["position_key"] for row in rows)
                self.submit(AnalysisUnit(game_id, start_fen, moves, plies, contexts, unit_keys))
                self.analyses_requested += len(rows)
            self.pending.append(shard_state)

    def collect(self) -> None:
        """Take in the units that finished."""
        if not self.unit_refs:
            return
        done, _ = ray.wait(list(self.unit_refs), num_returns=len(self.unit_refs), timeout=POLL_SECONDS)
        for ref in done:
            self.actor_load[self.unit_refs.pop(ref)] -= 1
            outcome: PackedOutcome = ray.get(ref)
            if outcome.fatal is not None:
                raise MiningStopped(f"stopped: {outcome.fatal}")
            self.analysis_seconds += outcome.seconds
            self.engine_seconds += outcome.engine_seconds
            # Kept packed until their shards commit: a window of shards' analyses as objects
            # was most of the driver's memory (~43 KB per position).
            for key, blob in outcome.packed:
                for shard_state in self.inflight.pop(key, []):
                    shard_state.results[key] = blob
                    shard_state.waiting.discard(key)
            self.remember(outcome.packed)

    def commit(self) -> None:
        """Publish the finished shards, in order."""
        while self.pending and not self.pending[0].waiting:
            shard_state = self.pending.popleft()
            shard_counts = _commit(self.store, shard_state.ingest, shard_state.results)
            for name in ("games_written", "positions", "positions_analysed", "positions_reused", "positions_error",
                         "traps"):  # fmt: skip
                setattr(self.counts, name, getattr(self.counts, name) + shard_counts[name])
            self.counts.shards_committed += 1

    def show(self, final: bool = False) -> None:
        if not final and not self.progress.due():
            return
        counts = self.counts
        try:
            done = ray.get(self.counter.total.remote(), timeout=5)
        except (ray.exceptions.RayError, TimeoutError):  # progress is worth less than the job
            done = counts.positions_analysed
        self.progress.update(
            Status(
                games_read=counts.games_read,
                analyses_requested=self.analyses_requested,
                analyses_done=self.analyses_requested if final else min(done, self.analyses_requested),
                positions_committed=counts.positions,
                traps=counts.traps,
                shards_committed=counts.shards_committed,
                bytes_routed=self.bytes_routed,
                total_bytes=self.total_bytes,
                reading_done=self.exhausted or (self.limit_left is not None and self.limit_left <= 0),
                finished=final,
            )
        )

    def write_manifest(self) -> dict[str, Any]:
        config = self.config
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "identity": self.identity,
            "inputs": list(config.inputs),
            "settings": config.settings.describe(),
            "judges": config.judges.describe(),
            "primary_judge": config.judging().primary,
            "human": {"model": config.human.model, "corpus": config.human.corpus},
            "filter": asdict(config.game_filter),
            "max_games": config.max_games,
            "engine": self.engine_info,
            "engine_options": asdict(config.engine_options),
            "workers": self.workers,
            "versions": _versions(),
            "started": self.started,
            "finished": time.time(),
            "wall_seconds": time.time() - self.started,
            "analysis_seconds": self.analysis_seconds,
            "engine_seconds": self.engine_seconds,
            "resumed": config.resume,
            **asdict(self.counts),
        }
        self.store.write_manifest(manifest)
        return manifest


# Positions of a shard whose rows are built as Python objects at a time before they become Arrow
# tables: a shard's rows as objects at once were most of the driver's memory at a commit.
COMMIT_CHUNK = 2000


def _commit(store: DatasetWriter, ingest: ShardIngest, packed: dict[int, bytes]) -> dict[str, int]:
    """Assemble a shard's rows from the job-wide (packed) results and publish them."""
    chunks: dict[str, list[pa.Table]] = {"responses": [], "traps": []}
    pending: dict[str, list[dict[str, Any]]] = {"responses": [], "traps": []}

    def convert() -> None:
        for name, rows in pending.items():
            if rows:
                chunks[name].append(table_of(name, rows))
                rows.clear()

    errors: list[dict[str, Any]] = [{**error, "stage": "parse"} for error in ingest.errors]
    analysed = reused = failed = 0
    for index, position in enumerate(ingest.positions, start=1):
        result = unpack(packed[position["position_key"]])
        is_reuse = (result.game_id, result.ply) != (position["game_id"], position["ply"])
        if result.error is not None:
            failed += 1
            errors.append({
                "source": ingest.source, "shard_id": ingest.shard_id, "game_index": None,
                "byte_offset": None, "game_id": position["game_id"], "ply": position["ply"], "stage": "analyse",
                "reason": result.error,
            })  # fmt: skip
            continue
        analysed += not is_reuse
        reused += is_reuse
        row, trap_rows = occurrence_rows(result, position["game_id"], position["ply"], position["move_uci"], is_reuse)
        pending["responses"].append(row)
        pending["traps"].extend(trap_rows)
        if index % COMMIT_CHUNK == 0:
            convert()
    convert()
    counts = {
        "games_read": ingest.games_read,
        "games_written": len(ingest.games),
        "games_filtered": ingest.games_filtered,
        "games_error": len(ingest.errors),
        "positions": len(ingest.positions),
        "positions_analysed": analysed,
        "positions_reused": reused,
        "positions_error": failed,
        "traps": sum(chunk.num_rows for chunk in chunks["traps"]),
    }
    tables: dict[str, Any] = {"games": list(ingest.games), "positions": list(ingest.positions), **chunks,
                              "errors": errors}  # fmt: skip
    store.commit(ingest.shard_id, tables, {"shard_id": ingest.shard_id, "source": ingest.source, "counts": counts})
    return counts


def _results_from(store: DatasetWriter, shard_ids: list[str]) -> dict[int, PositionResult]:
    """Rebuild the analyses of committed shards (for --resume): every analysed (not reused)
    occurrence with its trap records, and the positions whose analysis failed."""
    responses = store.read_table("responses", shard_ids).to_pylist()
    traps_by_occurrence: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for trap in store.read_table("traps", shard_ids).to_pylist():
        if not trap["reused"]:
            traps_by_occurrence.setdefault((trap["game_id"], trap["ply"]), []).append(trap)
    results: dict[int, PositionResult] = {}
    for row in responses:
        if row["reused"]:
            continue
        occurrence = (row["game_id"], row["ply"])
        result = PositionResult(ply=row["ply"], position_key=row["position_key"], game_id=row["game_id"])
        result.response = {k: v for k, v in row.items() if k not in OCCURRENCE_COLUMNS and k != "position_key"}
        result.traps = [
            {k: v for k, v in trap.items() if k not in OCCURRENCE_COLUMNS}
            for trap in traps_by_occurrence.get(occurrence, [])
        ]
        results[result.position_key] = result
    errors = store.read_table("errors", shard_ids)
    failures = errors.filter(pa.compute.equal(errors["stage"], "analyse"))
    positions = {
        (p["game_id"], p["ply"]): p["position_key"] for p in store.read_table("positions", shard_ids).to_pylist()
    }
    for error in failures.to_pylist():
        key = positions.get((error["game_id"], error["ply"]))
        if key is not None and key not in results:
            results[key] = PositionResult(
                ply=error["ply"], position_key=key, game_id=error["game_id"], error=error["reason"]
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


__all__ = ["MineConfig", "MiningStopped", "run"]
