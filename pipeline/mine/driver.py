"""`diffimax mine`: PGN databases in, DiffiMax at every selected position on Ray, Parquet out.

Before anything is created or started, the job is checked: its settings, its inputs (expanded
and readable), its output directory, and its engine (started once on the driver). Its identity
is then written to `OUT/job.json`, which `--resume` must match.

The driver coordinates and does no per-position work: it submits each shard's pipeline and
publishes finished shards, passing every position, analysis and row along by reference
(`pipeline.mine.actors`):

1. *Read*: a plain file is cut into byte ranges by arithmetic; a compressed file or a URL is read
   by a stream-reader task, whose shards arrive as objects.
2. *Prepare* (a Ray task per shard): parse, filter games on their headers, replay the selected ones
   into occurrences, and split them by analysis key among the workers.
3. *Analyse* (a pool of stateful Ray actors, one per partition of the keys, each with its engine
   and its bounded table of engine answers for the whole job, `pipeline.mine.table`): every
   repeat of a position reaches the worker that holds its answers. Actors restart and retry their
   part when a worker process or a node dies; every answer depends on the position alone, so a
   retried part, a restarted worker's empty table or another number of workers give the same rows.
4. *Write* (a Ray task per shard, on any node that sees the dataset: every node for object storage
   or a filesystem they share, else the driver's): the workers' rows back in input order, the
   shard's Parquet files written and committed (`pipeline.dataset.store.commit_shard`: one rename on
   disk, a record put last on object storage). The driver's node is not in the write path.
5. *Collect* (driver, in shard order): each shard's small result, its counts added.

An engine that cannot start stops the job with one line. Ctrl-C or SIGTERM stop the job cleanly:
published shards stay, the rest is dropped, and the error says how to `--resume`.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ray
import ray.exceptions
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from pipeline.common.cluster import StderrAside, ray_session
from pipeline.common.progress import Progress
from pipeline.common.storage import redact
from pipeline.dataset.lease import Lease, LeaseLostError, check_free, dataset_lock
from pipeline.dataset.objects import ObjectPath
from pipeline.dataset.store import DatasetWriter, check_output
from pipeline.engines.backends import check_backend
from pipeline.human.models import resolve_model
from pipeline.ingest.pinned import FilePin
from pipeline.ingest.pins import pin_input
from pipeline.ingest.sources import Shard, expand_inputs, is_url, plain_bytes
from pipeline.mine.actors import GameRegistry, MiningWorker, PositionCounter, SharedModel, prepare, read, write
from pipeline.mine.config import MineConfig
from pipeline.mine.counts import Counts, Effort, versions
from pipeline.mine.duplicates import Ordinal, ordinal_of
from pipeline.mine.feed import ShardFeed, resolved
from pipeline.mine.identity import check_resume, human_evidence_digests, job_identity
from pipeline.mine.progress import Status, show_status
from pipeline.mine.shards import ShardCounts, ShardResult
from pipeline.mine.stopping import MiningStopped, Terminated, sigterm_stops, stopped_message
from schemas.dataset import SCHEMA_VERSION
from search.errors import InputChanged

# Shards submitted and not yet published: 2 per worker + 2, at most 32 (each is in every worker's
# queue). The bound keeps the object store's load and the driver's work per shard independent of the
# cluster: each claim names the window's shards (bench_submit.py: 4.8 us each, 49 ms at 10,000).
SHARDS_IN_FLIGHT_PER_WORKER = 2
SHARDS_IN_FLIGHT_BASE = 2
SHARDS_IN_FLIGHT_MAX = 32
# Seconds the job waits at its start for all its analysis actors to be up before it starts with
# those that are (the rest join as their nodes come: an autoscaler adds them); and how often it
# looks for actors that came up since.
WORKER_GRACE_SECONDS = 120.0
READY_CHECK_SECONDS = 5.0
# Times a shard's pipeline is submitted again after a system failure (a node gone with its
# objects) before the job gives up; a worker or task that dies is retried by Ray itself first.
SHARD_ATTEMPTS = 3
# Seconds the driver waits for the oldest shard (or the stream's next one) before it looks again
# (progress, signals).
WAIT_SECONDS = 1.0


def run(
    config: MineConfig,
    progress: Progress | None = None,
    *,
    verbose: bool = False,
    repair: bool = False,
) -> dict[str, Any]:
    """Run a mining job; returns the manifest (also written to OUT/manifest.json). `progress`
    shows the job as it runs (default: a bar on a terminal, else lines on stderr; `Progress.quiet()`
    shows nothing). `verbose` lets a local cluster's own log lines reach the terminal. `repair`
    (with --resume) mines damaged shards again; without it they stop a resumed run in one line."""
    # Everything that can be wrong with the request is found before anything is created.
    sources = expand_inputs(config.inputs)
    check_free(config.out)  # a job running there is the one thing to say about it
    check_output(config.out, resume=config.resume)
    engine_name = check_backend(config.engine)
    # What --resume must find unchanged, and what every shard's reader holds its input to meanwhile.
    pinned = [pin_input(source, config.url_timeout, config.shard_bytes) for source in sources]
    pins = [record for record, _ in pinned]
    identity = job_identity(config, sources, engine_name, human_evidence_digests(config.human), pins)
    fresh = isinstance(DatasetWriter(config.out).root, ObjectPath) or not Path(config.out).exists()
    shown = progress or Progress()
    with dataset_lock(config.out) as lease:  # one job per output, for the whole job
        if lease is not None and not lease.conditional:
            shown.echo(
                f"warning: the store of {redact(config.out)} ignores conditional puts: two jobs started "
                "at once on it could both run; a shard is still committed once"
            )
        if config.resume:
            before = DatasetWriter(config.out).job() or {}
            check_resume(config.out, before.get("identity"), identity)
            store = DatasetWriter.reopen(config.out, repair=repair, lease=lease)
        else:
            store = DatasetWriter.create(config.out, {"identity": identity, "created": time.time()})
            store.created = fresh  # the lock made the directory: a failed first run removes it
        store.lease = lease  # asked before anything another job could own is touched
        read_pins = [read_pin for _, read_pin in pinned]
        return _run_job(config, store, identity, shown, verbose=verbose, lease=lease, pins=read_pins)


def _run_job(
    config: MineConfig,
    store: DatasetWriter,
    identity: dict[str, Any],
    shown: Progress,
    *,
    verbose: bool,
    lease: Lease | None = None,
    pins: list[FilePin | dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The job on Ray, its output directory opened (and locked: `lease` on object storage), its
    inputs held to their `pins` (`pipeline.ingest.pins.pin_input`)."""
    started = time.time()
    aside = StderrAside()
    # The step starts before the cluster and its workers do (tens of seconds on a loaded machine).
    shown.start("analysed", "positions", None, "starting the cluster and its workers")
    try:
        # An interrupt, a changed input or a lost lease stops a cluster started here quietly: Ray's
        # dying workers, and the tasks still failing in flight, say so at length.
        quiet = (KeyboardInterrupt, Terminated, InputChanged, MiningStopped)
        with ray_session(config.address, verbose=verbose, interrupts=quiet) as owns_ray:
            stop = threading.Event()
            with sigterm_stops(stop, aside):  # after ray.init, whose C++ core installs a SIGTERM handler of its own
                job = MiningJob(config, store, identity, shown, started, stop, lease, pins)
                try:
                    manifest = job.run()
                    shown.close()
                    return manifest
                finally:
                    if not owns_ray:  # a cluster that outlives the job keeps no actor of it
                        job.stop_workers()
    except (KeyboardInterrupt, Terminated) as interrupt:
        shown.close()
        code = 130 if isinstance(interrupt, KeyboardInterrupt) else 143
        raise MiningStopped(stopped_message(store, "interrupted"), exit_code=code) from None
    except MiningStopped as stopped:
        shown.close()
        raise MiningStopped(stopped_message(store, str(stopped)), stopped.exit_code) from None
    except InputChanged as changed:  # the shards committed before it were read from the pinned content
        shown.close()
        raise MiningStopped(stopped_message(store, f"stopped: {changed}", resumable=False)) from None
    except BaseException:
        shown.close()
        if not config.resume:
            store.discard()
        raise
    finally:
        aside.end()  # whatever ended the job, its error line reaches the terminal


@dataclass
class ShardRun:
    """One shard's pipeline in flight: the references the driver holds, nothing more."""

    shard: Shard
    data: Any  # its bytes (stream shards), by reference
    counts: Any = None  # ShardCounts, by reference (small: read for progress and --max-games)
    result: Any = None  # ShardResult, by reference
    attempts: int = 0
    counted: bool = False  # its counts were read for progress
    write_inputs: tuple[Any, ...] = ()  # the write task's arguments after the root (a write submitted again)


class MiningJob:
    """One run of the driver loop: read, submit each shard's pipeline, publish in order."""

    def __init__(
        self,
        config: MineConfig,
        store: DatasetWriter,
        identity: dict[str, Any],
        progress: Progress,
        started: float,
        stop: threading.Event | None = None,
        lease: Lease | None = None,
        pins: list[FilePin | dict[str, Any]] | None = None,
    ) -> None:
        self.config = config
        self.stop = stop or threading.Event()
        self.lease = lease
        self.store = store
        self.identity = identity
        self.progress = progress
        self.started = started
        self.counts = Counts()
        self.committed = store.committed()
        # A resumed run counts what the committed shards hold, and what they cost; under --max-games
        # each counts where it lies in the input order, as the feed passes it (committed shards
        # need not be a prefix: writers commit in any order).
        self.games_committed: dict[str, int] = {}
        self.effort = Effort()
        for shard_id, info in store.shard_info().items():
            named = f"shard {shard_id!r} in {str(store.root)!r}"
            recorded = Counts.from_record(info.get("counts") or {}, named)
            self.counts.add(recorded)
            self.effort.add(Effort.from_record(info.get("effort") or {}, named))
            self.games_committed[shard_id] = recorded.games_read
        self.counts.shards_skipped = len(self.committed)
        self.limit_left = config.max_games if config.max_games else None
        self.writer_nodes: dict[str, int] = {}  # shards committed per node that wrote them
        self.feed = ShardFeed(config, pins)
        self.runs: deque[ShardRun] = deque()
        # Each unpublished shard's identity keys (by reference), and those of the last published
        # ones (`window` of them: a registry restarted just before a publication has not seen it on
        # disk, and the next claims name it), by ordinal: every claim names those before it.
        self.identities: dict[Ordinal, Any] = {}
        self.published: deque[Ordinal] = deque()
        self.broken: str | None = None  # why a URL's stream broke off (the job then ends non-zero)
        self.bytes_read = 0
        self.positions_sent = 0  # positions of the shards prepared in this run
        self.games_seen = 0  # games read by the shards prepared in this run
        self.total_bytes = plain_bytes(config.inputs)  # the ETA's
        self.model = resolve_model(config.human.model)
        self.start_workers()

    # -- workers ---------------------------------------------------------------------------------

    def start_workers(self) -> None:
        config = self.config
        cluster_cpus: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        cpus = int(cluster_cpus.get("CPU", 0))
        self.workers = config.workers or max(1, cpus)
        # A worker takes a CPU: the job starts with those placed now; the rest join as nodes come.
        self.placeable = max(1, min(self.workers, cpus))
        if self.workers > cpus:
            start = f"mining starts with {cpus}" if cpus else "mining starts when the first is placed"
            join = "the others join when a node with room comes (an autoscaler adds nodes)"
            self.progress.echo(f"{self.workers} workers asked, the cluster has {cpus} CPUs: {start}; {join}")
        # The counter lives on the driver's node: it goes only when the whole job goes. The writers
        # run anywhere until one finds it does not see the dataset (a local directory the nodes do
        # not share): from then on on the driver's node (`pin_writers`).
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.here = here
        counter_name = f"diffimax-positions-{uuid.uuid4().hex}"
        counter_class: Any = ray.remote(num_cpus=0)(PositionCounter)
        self.counter = counter_class.options(name=counter_name, scheduling_strategy=here).remote()
        actor_class: Any = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(MiningWorker)
        # Maia-3's graph goes to the workers from one actor that holds it, built and checked once here,
        # so that a worker on a node without the model's files needs none.
        payload = None if self.model is None else self.model.payload()
        model_class: Any = ray.remote(num_cpus=0)(SharedModel)
        model_name = None if payload is None else f"diffimax-model-{uuid.uuid4().hex}"
        self.shared_model = (
            None if payload is None else model_class.options(name=model_name, scheduling_strategy=here).remote(payload)
        )
        self.actors = [
            actor_class.remote(
                config.engine,
                config.engine_options,
                config.judging(),
                config.human,
                counter_name,
                config.table_mb,
                model_name,
                config.evals,
            )
            for _ in range(self.workers)
        ]
        # The job takes the workers as they come up: an actor without room waits for a node (and
        # asks the autoscaler for one); each shard is split among the actors up at its submission.
        self.starting: dict[Any, Any] = {actor.describe.remote(): actor for actor in self.actors}
        self.ready: list[Any] = []
        self.handles: Any = None  # `ready` by reference, for the write tasks (whatever the cluster's size)
        self.engine_info: dict[str, Any] = {}
        self.checked = 0.0
        self.take_ready(WORKER_GRACE_SECONDS)
        registry_class: Any = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)(GameRegistry)
        self.registry = registry_class.options(scheduling_strategy=here).remote(self.root_text())
        self.read_task: Any = ray.remote(num_cpus=0, max_retries=3)(read)
        self.prepare_task: Any = ray.remote(num_cpus=0, max_retries=3)(prepare)
        self.write_task: Any = ray.remote(num_cpus=0, max_retries=3)(write)
        self.pinned = False

    def take_ready(self, wait: float = 0.0) -> None:
        """Move the actors that are up into `ready` (at most every READY_CHECK_SECONDS): first those
        the cluster can place now, or `wait` seconds, whichever comes first, and at least one; an
        engine that cannot start stops the job here, in one line."""
        if not self.starting or (not wait and time.monotonic() - self.checked < READY_CHECK_SECONDS):
            return
        self.checked = time.monotonic()
        pending = list(self.starting)
        wanted = len(pending) if self.ready else min(len(pending), self.placeable)
        done, _ = ray.wait(pending, num_returns=wanted, timeout=wait)
        if not done and not self.ready:
            done, _ = ray.wait(pending, num_returns=1)
        for ref in done:
            info = resolved(ref)
            self.engine_info = self.engine_info or info
            self.ready.append(self.starting.pop(ref))
        if done:
            self.handles = ray.put(list(self.ready))
        self.window = min(SHARDS_IN_FLIGHT_MAX, SHARDS_IN_FLIGHT_BASE + SHARDS_IN_FLIGHT_PER_WORKER * len(self.ready))

    def stop_workers(self) -> None:
        """End the actors now (their engines with them), so nothing keeps running after the job."""
        for actor in [*getattr(self, "actors", []), getattr(self, "counter", None), getattr(self, "registry", None)]:
            if actor is not None:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)

    def submit(self, run: ShardRun) -> None:
        """The shard's whole pipeline at once: read, the registry's claim (the duplicates), prepare,
        the write (it hands each worker its part, then commits); Ray starts each when it can."""
        partitions = len(self.ready)
        games, identities = self.read_task.options(num_returns=2).remote(
            run.shard, run.data, self.config.game_filter, self.limit_left
        )
        ordinal = ordinal_of(run.shard.source_index, run.shard.index)
        earlier = [(before, [ref]) for before, ref in self.identities.items() if before < ordinal]
        self.identities[ordinal] = identities
        duplicates = self.registry.claim.remote(ordinal, identities, earlier)
        counts, tables, parts = self.prepare_task.options(num_returns=3).remote(
            games, duplicates, partitions, self.config.pool
        )
        run.counts = counts
        run.write_inputs = (run.shard, counts, tables, parts, self.handles)
        self.submit_write(run)
        run.attempts += 1

    def submit_write(self, run: ShardRun) -> None:
        """The shard's write task: anywhere, or on the driver's node once a writer elsewhere did not
        see the dataset (`pin_writers`)."""
        # SPREAD: a write task asks for no CPU, so Ray would otherwise keep them all on the driver's node.
        task = self.write_task.options(scheduling_strategy=self.here if self.pinned else "SPREAD")
        tenure = self.lease.tenure if self.lease is not None else None  # each commit checks it (object storage)
        run.result = task.remote(self.root_text(), self.store.token, tenure, *run.write_inputs)

    def root_text(self) -> str:
        """The dataset's root as the writers take it (a path, or the object URL with no credentials)."""
        root = self.store.root
        return root.url.url() if isinstance(root, ObjectPath) else str(root)

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        while True:
            if self.stop.is_set():
                raise Terminated
            if self.lease is not None and self.lease.lost is not None:
                raise MiningStopped(f"stopped: {self.lease.lost}")
            self.take_ready()
            self.fill()
            self.count()
            self.collect()
            self.show()
            if self.finished():
                if self.broken is not None:
                    raise MiningStopped(self.broken)
                break
            # Wait for the oldest shard, or for the stream's next shard when there is room for it
            # (a ready shard that cannot be taken yet must not wake the loop: it would spin).
            waiting = [run.result for run in list(self.runs)[:1]]
            waiting += [run.counts for run in self.runs if not run.counted][:1]  # --max-games, progress
            if self.can_take():
                waiting += self.feed.waiting_on()
            if waiting:
                ray.wait(waiting, num_returns=1, timeout=WAIT_SECONDS)
        self.show(final=True)
        try:
            return self.write_manifest()
        except LeaseLostError as lost:  # paused past its lease: the manifest is the other job's to write
            raise MiningStopped(f"stopped: {lost}") from None

    def reading_done(self) -> bool:
        return self.feed.exhausted or (self.limit_left is not None and self.limit_left <= 0)

    def finished(self) -> bool:
        return self.reading_done() and not self.runs

    def can_take(self) -> bool:
        """Whether the window has room for another shard now. Under --max-games one shard is
        prepared at a time: how many games a shard holds is known only once it is read."""
        if len(self.runs) >= self.window or self.reading_done():
            return False
        return self.limit_left is None or all(run.counted for run in self.runs)

    def fill(self) -> None:
        """Keep the window of shards in flight full, in input order."""
        while self.can_take():
            found = self.feed.next()
            if found is None:
                return
            shard, data = found
            if shard.stream_error is not None and is_url(shard.source):
                # A URL cut short: its last shard is never committed; the job ends non-zero once the
                # shards in flight are published, and --resume reads the URL again.
                self.broken = f"stopped: {shard.source!r} broke off after byte {shard.end:,} ({shard.stream_error})"
                self.feed.exhausted = True
                return
            if shard.shard_id in self.committed:
                if self.limit_left is not None:
                    self.limit_left -= self.games_committed.get(shard.shard_id, 0)
                continue
            run = ShardRun(shard, data)
            self.submit(run)
            self.runs.append(run)

    def count(self) -> None:
        """Read the counts of the shards prepared so far (small objects): progress, --max-games."""
        for run in self.runs:
            if run.counted:
                continue
            ready, _ = ray.wait([run.counts], timeout=0)
            if not ready:
                return  # in order: --max-games counts games in input order
            counts: ShardCounts = self.resolve(run, run.counts)
            run.counted = True
            self.positions_sent += counts.positions
            self.games_seen += counts.games_read
            self.bytes_read += counts.bytes_read
            if self.limit_left is not None:
                self.limit_left -= counts.games_read

    def collect(self) -> None:
        """Take the results of the finished shards, in input order: each writer committed its own."""
        while self.runs:
            run = self.runs[0]
            ready, _ = ray.wait([run.result], timeout=0)
            if not ready:
                return
            result: ShardResult | None = self.resolve(run, run.result)
            if result is None:
                return  # resubmitted
            if result.fatal is not None:
                raise MiningStopped(f"stopped: {result.fatal}")
            if result.misplaced:  # that node does not see the dataset: writers on the driver's node
                self.pinned = True
                self.submit_write(run)
                return
            self.writer_nodes[result.node] = self.writer_nodes.get(result.node, 0) + 1
            self.runs.popleft()
            self.published.append(ordinal_of(run.shard.source_index, run.shard.index))
            while len(self.published) > self.window:
                self.identities.pop(self.published.popleft(), None)
            self.counts.add(result.counts)
            self.counts.shards_committed += 1
            self.effort.add(result.effort)

    def resolve(self, run: ShardRun, ref: Any) -> Any:
        """`ray.get` of one of the shard's results; after a system failure (objects lost with a
        node, a task that could not be retried), the shard's pipeline is submitted again and None
        returned. A user's error is one line; a bug keeps its traceback."""
        try:
            return resolved(ref)
        except ray.exceptions.RayTaskError:
            raise
        except ray.exceptions.RayError:
            if run.attempts >= SHARD_ATTEMPTS:
                raise
            self.submit(run)
            return None

    def show(self, final: bool = False) -> None:
        if not final and not self.progress.due():
            return
        counts = self.counts
        try:
            done = ray.get(self.counter.total.remote(), timeout=5)
        except (ray.exceptions.RayError, TimeoutError):  # progress is worth less than the job
            done = counts.positions
        show_status(
            self.progress,
            Status(
                games_read=self.games_seen + self.games_before(),
                analyses_requested=self.positions_sent,
                analyses_done=self.positions_sent if final else min(done, self.positions_sent),
                positions_committed=counts.positions,
                traps=counts.traps,
                shards_committed=counts.shards_committed,
                bytes_routed=self.bytes_read,
                total_bytes=self.total_bytes,
                reading_done=self.reading_done() and all(run.counted for run in self.runs),
                finished=final,
                max_games=self.config.max_games,
            ),
        )

    def games_before(self) -> int:
        """Games read by the shards a resumed run found published (their typed counts)."""
        return sum(self.games_committed.get(shard, 0) for shard in self.committed)

    def table_stats(self) -> list[dict[str, int]]:
        """Each worker's table: entries, bytes, hits, misses, evictions (since its last start)."""
        try:
            return list(ray.get([actor.table_stats.remote() for actor in self.ready], timeout=30))
        except (ray.exceptions.RayError, TimeoutError):
            return []

    def writers(self) -> dict[str, Any]:
        """Where the shards of this run were written: how many nodes, the shards each committed."""
        nodes = dict(sorted(self.writer_nodes.items()))
        return {"nodes": len(nodes), "shards_by_node": nodes, "pinned_to_driver": self.pinned}

    def write_manifest(self) -> dict[str, Any]:
        config = self.config
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "identity": self.identity,
            "inputs": list(config.inputs),
            "settings": config.settings.describe(),
            "judges": config.judges.describe(),
            "primary_judge": config.judging().primary,
            "human": {
                "model": config.human.model,
                "model_name": None if self.model is None else self.model.name,
                "corpus": config.human.corpus,
            },
            "filter": asdict(config.game_filter),
            "max_games": config.max_games,
            "engine": self.engine_info,
            "engine_options": asdict(config.engine_options),
            "workers": self.workers,
            "workers_up": len(self.ready),
            "tables": {"table_mb": config.table_mb, "workers": self.table_stats()},
            "evals": config.evals,
            "writers": self.writers(),
            "versions": versions(),
            "started": self.started,
            "finished": time.time(),
            "wall_seconds": time.time() - self.started,
            **asdict(self.effort),  # analysis_seconds, engine_seconds, engine_calls, evals_*: every committed shard's
            "resumed": config.resume,
            **asdict(self.counts),
        }
        self.store.write_manifest(manifest)
        return manifest


__all__ = ["MineConfig", "MiningStopped", "run"]
