"""Growing a repertoire on Ray: nodes as tasks on the workers that own their keys.

    driver (Growth: which nodes next) ──► P repertoire workers (actors: engine, model, corpus, table)
       ▲                                      each node to the worker that owns its analysis key
       └──────── results, as each finishes ◄──┘

The driver does no engine work: it routes each node to `partition_of(analysis key, workers)`,
waits for whichever result comes first, and hands the tree's next nodes out at once (no level
waits for another). With one worker, or `workers=0`, the same worker runs in this process
(`LocalExecutor`: tests, plans, and the 1-worker baseline of the speed-up).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.common.progress import Progress
from pipeline.engines.options import EngineOptions
from pipeline.judging import HumanEvidence
from pipeline.mine.table import DEFAULT_TABLE_MB, partition_of
from pipeline.repertoire.expand import NodeRequest, board_analysis_key
from pipeline.repertoire.settings import RepertoireError, RepertoireSettings, Start
from pipeline.repertoire.tree import Growth, back_up
from pipeline.repertoire.worker import NodeResult, RepertoireWorker


class Executor(Protocol):
    """Where nodes are expanded: `submit` a node, `next` returns a finished one (any order)."""

    def submit(self, request: NodeRequest) -> None: ...

    def next(self) -> NodeResult: ...

    def pending(self) -> int: ...

    def table_stats(self) -> list[dict[str, int]]: ...

    def cpu(self) -> float: ...


@dataclass(frozen=True)
class WorkerSpec:
    """How each worker is built (plain values: Ray ships them to the actors)."""

    engine: str
    options: EngineOptions
    settings: RepertoireSettings
    start: Start
    human: HumanEvidence
    table_mb: float = DEFAULT_TABLE_MB
    sketch: bool = False
    """Workers that expand on the shallow pass alone (a plan's sketch of the tree)."""

    def build(self) -> RepertoireWorker:
        return RepertoireWorker(
            self.engine, self.options, self.settings, self.start, self.human, self.table_mb, sketch=self.sketch
        )


class LocalExecutor:
    """One worker in this process; nodes are expanded in the order submitted."""

    def __init__(self, worker: RepertoireWorker) -> None:
        self.worker = worker
        self.queue: deque[NodeRequest] = deque()

    def submit(self, request: NodeRequest) -> None:
        self.queue.append(request)

    def next(self) -> NodeResult:
        return self.worker.expand(self.queue.popleft())

    def pending(self) -> int:
        return len(self.queue)

    def table_stats(self) -> list[dict[str, int]]:
        return [self.worker.table_stats()]

    def cpu(self) -> float:
        return self.worker.cpu()


class RayExecutor:
    """`workers` Ray actors, each owning the nodes whose analysis key falls to it."""

    def __init__(self, spec: WorkerSpec, workers: int) -> None:
        import ray

        actor: Any = ray.remote(num_cpus=1, max_restarts=1, max_task_retries=1)(RepertoireWorker)
        arguments = (spec.engine, spec.options, spec.settings, spec.start, spec.human, spec.table_mb)
        self.actors: list[Any] = [actor.remote(*arguments, sketch=spec.sketch) for _ in range(workers)]
        self.start = spec.start
        self.refs: list[Any] = []

    def submit(self, request: NodeRequest) -> None:
        key = board_analysis_key(self.start.board(request.path))
        owner = self.actors[partition_of(key, len(self.actors))]
        self.refs.append(owner.expand.remote(request))

    def next(self) -> NodeResult:
        import ray

        done, self.refs = ray.wait(self.refs, num_returns=1)
        result: NodeResult = ray.get(done[0])
        return result

    def pending(self) -> int:
        return len(self.refs)

    def table_stats(self) -> list[dict[str, int]]:
        import ray

        stats: list[dict[str, int]] = ray.get([actor.table_stats.remote() for actor in self.actors])
        return stats

    def cpu(self) -> float:
        import ray

        return float(sum(ray.get([actor.cpu.remote() for actor in self.actors])))

    def close(self) -> None:
        import ray

        ray.get([actor.close.remote() for actor in self.actors])


@dataclass
class GrowthStats:
    """What growing the tree cost."""

    wall_seconds: float = 0.0
    expanded: int = 0
    """Nodes expanded (each a task)."""
    engine_seconds: float = 0.0
    """The workers' seconds on the nodes (engine, model, corpus)."""
    engine_calls: int = 0
    reused: int = 0
    """Nodes whose position the worker's table held already."""
    workers: int = 1
    cpu_seconds: float = 0.0
    """CPU seconds of the workers and their engines (/proc), start-up included."""
    tables: list[dict[str, int]] = field(default_factory=list)


def grow(growth: Growth, executor: Executor, progress: Progress | None = None) -> GrowthStats:
    """Expand nodes until the tree is complete; `progress` counts the nodes expanded of those known
    so far (the tree grows as it is expanded, so its total grows too)."""
    stats = GrowthStats()
    started = time.perf_counter()
    submitted = 0
    for request in growth.first():
        executor.submit(request)
        submitted += 1
    while executor.pending():
        result = executor.next()
        stats.expanded += 1
        stats.engine_seconds += result.cost.seconds
        stats.engine_calls += result.cost.engine_calls
        stats.reused += result.cost.reused
        for request in growth.receive(result):
            executor.submit(request)
            submitted += 1
        if progress is not None:
            progress.update(stats.expanded, total=submitted)
    back_up(growth)
    stats.wall_seconds = time.perf_counter() - started
    stats.tables = executor.table_stats()
    stats.cpu_seconds = executor.cpu()
    return stats


def build_repertoire(
    spec: WorkerSpec,
    workers: int,
    *,
    address: str | None = None,
    progress: Progress | None = None,
) -> tuple[Growth, GrowthStats]:
    """The repertoire `spec` asks for, grown on `workers` Ray workers (0: in this process)."""
    if workers < 0:
        raise RepertoireError(f"invalid --workers {workers!r}: must be a whole number >= 0")
    growth = Growth(spec.settings, spec.start)
    if workers == 0:
        worker = spec.build()
        try:
            stats = grow(growth, LocalExecutor(worker), progress)
        finally:
            worker.close()
        stats.workers = 1
        return growth, stats
    from pipeline.common.cluster import project_runtime_env, ray_session

    with ray_session(address, num_cpus=workers if address is None else None, runtime_env=project_runtime_env()):
        executor = RayExecutor(spec, workers)
        try:
            stats = grow(growth, executor, progress)
        finally:
            executor.close()
    stats.workers = workers
    return growth, stats
