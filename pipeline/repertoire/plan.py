"""`diffimax repertoire --plan`: what growing a repertoire will cost, estimated before it runs, as
`diffimax mine --plan` estimates a mining job: from a sample of its own work, done by its own worker on
this machine.

1. *Sketch the tree.* The same growth (`pipeline.repertoire.tree.Growth`: the same margin, floor,
   width and depth, the same human evidence) on the shallow pass alone (`sketch_player`,
   `sketch_opponent`): its player and opponent nodes, and how many of them are distinct positions
   (a repeated position is served by its worker's table, as in the real run).
2. *Time the work.* A seeded sample of the sketch's nodes, player and opponent nodes in their
   proportions, is expanded for real by the run's own worker (engine, limits, model, corpus), each
   on an empty table as the run meets a new position, after one uncounted node that warms the
   worker up; the wall seconds and the CPU seconds of the worker and its engines (/proc).
3. *Combine.* Distinct nodes x seconds per node, by kind, is the engine time; its 90 % interval is
   the sample's (`pipeline.mine.plan.estimate.mean_interval`, each node one draw). The wall time
   on N workers is Ray's start-up, the workers' own start, the work spread over them, and the
   deepest line's nodes one after the other (a node waits for its parent): the critical path.

The sketch's shallow values are not the full search's, so the real tree differs from it: the
measured run says by how much (docs/results/repertoire.md, "Cost").
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.common.progress import Progress
from pipeline.mine.plan.estimate import mean_interval
from pipeline.mine.plan.measure import cpu_seconds
from pipeline.mine.plan.records import Figure
from pipeline.mine.plan.walltime import RAY_START_SECONDS
from pipeline.repertoire.driver import WorkerSpec, build_repertoire
from pipeline.repertoire.expand import NodeKind, NodeRequest, board_analysis_key
from pipeline.repertoire.settings import RepertoireError
from pipeline.repertoire.tree import Growth

# Nodes of the sketch expanded for real to time them (by default).
PLAN_SAMPLE = 24
# Seed of the sample.
PLAN_SEED = 0


@dataclass(frozen=True)
class KindFigures:
    """The sketch's nodes of one kind, and the sample's seconds per node."""

    nodes: int
    distinct: int
    sampled: int
    seconds: Figure
    cpu_seconds: Figure


@dataclass(frozen=True)
class RepertoirePlan:
    """What a repertoire will cost (see the module docstring)."""

    kinds: dict[NodeKind, KindFigures]
    depth: int
    """The sketch's deepest expanded node (plies below the start)."""
    sketch_seconds: float
    worker_start_seconds: float
    engine_seconds: Figure
    """Seconds of the workers' node work, in all."""
    core_hours: Figure
    """CPU hours of the workers and their engines."""
    walls: dict[int, Figure] = field(default_factory=dict)
    """Wall seconds by the number of workers."""

    def speedup(self, fewer: int, more: int) -> float | None:
        if fewer not in self.walls or more not in self.walls or self.walls[more].value <= 0:
            return None
        return self.walls[fewer].value / self.walls[more].value


def sketch(spec: WorkerSpec) -> tuple[Growth, float]:
    """Step 1: the tree grown on the shallow pass, in this process, and its seconds."""
    started = time.perf_counter()
    growth, _ = build_repertoire(dataclasses.replace(spec, sketch=True), 0)
    return growth, time.perf_counter() - started


def draw_sample(growth: Growth, size: int, seed: int) -> list[NodeRequest]:
    """Step 2's nodes: a seeded sample of the sketch's expanded nodes, by kind in proportion."""
    expanded = [node for node in growth.nodes if node.result is not None and node.result.error is None]
    rng = random.Random(seed)
    chosen: list[NodeRequest] = []
    for kind in ("player", "opponent"):
        pool = [node for node in expanded if node.to_move == kind]
        share = max(1, round(size * len(pool) / max(1, len(expanded)))) if pool else 0
        for node in rng.sample(pool, min(share, len(pool))):
            chosen.append(NodeRequest(node.id, node.to_move, node.path, node.reach))
    return chosen


Timed = list[tuple[NodeRequest, float, float]]


def time_sample(spec: WorkerSpec, sample: Sequence[NodeRequest]) -> tuple[Timed, float]:
    """Step 2: each node expanded for real on an empty table, with its wall and CPU seconds; and the
    worker's start-up seconds."""
    started = time.perf_counter()
    worker = spec.build()
    start_seconds = time.perf_counter() - started
    if worker.backend is None:
        raise RepertoireError(f"cannot start --engine {spec.engine!r}: {worker.startup_error}")
    timed = []
    try:
        worker.expand(sample[0])  # warm-up, uncounted: the engine's and the model's caches
        for request in sample:
            worker.table.clear()
            before_cpu, before = cpu_seconds(), time.perf_counter()
            result = worker.expand(request)
            if result.error is not None:
                raise RepertoireError(f"plan: node {' '.join(request.path) or 'start'} failed: {result.error}")
            timed.append((request, time.perf_counter() - before, cpu_seconds() - before_cpu))
    finally:
        worker.close()
    return timed, start_seconds


def kind_figures(growth: Growth, timed: Sequence[tuple[NodeRequest, float, float]], kind: NodeKind) -> KindFigures:
    expanded = [n for n in growth.nodes if n.to_move == kind and n.result is not None and n.result.error is None]
    distinct = {board_analysis_key(growth.start.board(n.path)) for n in expanded}
    mine = [(wall, cpu) for request, wall, cpu in timed if request.kind == kind]
    if not mine:
        zero = Figure(0.0, "no node of this kind")
        return KindFigures(len(expanded), len(distinct), 0, zero, zero)
    figures = []
    for values in ([wall for wall, _ in mine], [cpu for _, cpu in mine]):
        mean, low, high = mean_interval(values, [1.0] * len(values), [str(i) for i in range(len(values))])
        figures.append(Figure(mean, f"mean of {len(values)} timed {kind} nodes", low, high))
    return KindFigures(len(expanded), len(distinct), len(mine), figures[0], figures[1])


def plan_repertoire(
    spec: WorkerSpec,
    workers: Sequence[int] = (1, 2),
    *,
    sample: int = PLAN_SAMPLE,
    seed: int = PLAN_SEED,
    progress: Progress | None = None,
) -> RepertoirePlan:
    """Steps 1-3 (the module docstring) for the repertoire `spec` asks for; `progress` says each step."""
    shown = progress or Progress.quiet()
    if sample < 1:
        raise RepertoireError(f"invalid plan sample {sample!r}: must be a whole number >= 1")
    shown.say("plan: sketching the tree on the shallow pass")
    growth, sketch_seconds = sketch(spec)
    chosen = draw_sample(growth, sample, seed)
    shown.say(f"plan: sketch of {len(growth.nodes)} nodes in {sketch_seconds:.0f} s; timing {len(chosen)} nodes")
    timed, start_seconds = time_sample(spec, chosen)
    kinds: dict[NodeKind, KindFigures] = {kind: kind_figures(growth, timed, kind) for kind in ("player", "opponent")}

    def total(attribute: str) -> Figure:
        parts = [(k.distinct, getattr(k, attribute)) for k in kinds.values()]
        value = sum(n * f.value for n, f in parts)
        low = sum(n * (f.low if f.low is not None else f.value) for n, f in parts)
        high = sum(n * (f.high if f.high is not None else f.value) for n, f in parts)
        return Figure(value, "distinct sketch nodes x seconds per node, by kind", low, high)

    engine = total("seconds")
    cpu = total("cpu_seconds")
    depth = max((n.depth for n in growth.nodes if n.result is not None), default=0)
    per_node = max((k.seconds.value for k in kinds.values()), default=0.0)
    walls = {}
    for count in workers:
        startup = RAY_START_SECONDS + start_seconds
        path = (depth + 1) * per_node
        value = startup + max(engine.value / count, path)
        low = startup + max((engine.low or engine.value) / count, path)
        high = startup + max((engine.high or engine.value) / count, path)
        walls[count] = Figure(value, "Ray and worker start + max(work / workers, critical path)", low, high)
    hours = Figure(cpu.value / 3600, cpu.how, (cpu.low or 0.0) / 3600, (cpu.high or 0.0) / 3600)
    return RepertoirePlan(kinds, depth, sketch_seconds, start_seconds, engine, hours, walls)


def repertoire_plan_text(plan: RepertoirePlan) -> str:
    """The plan as lines of text."""
    lines = [
        f"sketch: {sum(k.nodes for k in plan.kinds.values())} nodes to expand, deepest at ply {plan.depth} "
        f"({plan.sketch_seconds:.0f} s on the shallow pass)"
    ]
    for kind, figures in plan.kinds.items():
        seconds = figures.seconds
        interval = "" if seconds.low is None or seconds.high is None else f" [{seconds.low:.2f}, {seconds.high:.2f}]"
        lines.append(
            f"  {kind} nodes: {figures.nodes} ({figures.distinct} distinct), {seconds.value:.2f} s each{interval}, "
            f"CPU {figures.cpu_seconds.value:.2f} s ({figures.sampled} timed{', no interval' if not interval else ''})"
        )
    engine = plan.engine_seconds
    lines.append(
        f"engine work: {engine.value / 3600:.2f} worker-hours [{(engine.low or 0) / 3600:.2f}, "
        f"{(engine.high or 0) / 3600:.2f}]; CPU {plan.core_hours.value:.2f} core-hours "
        f"[{plan.core_hours.low:.2f}, {plan.core_hours.high:.2f}]"
    )
    for count, wall in sorted(plan.walls.items()):
        lines.append(
            f"wall on {count} worker(s): {wall.value / 60:.1f} min [{(wall.low or 0) / 60:.1f}, "
            f"{(wall.high or 0) / 60:.1f}]"
        )
    speedup = plan.speedup(1, 2)
    if speedup is not None:
        lines.append(f"1 -> 2 workers: {speedup:.2f}x")
    return "\n".join(lines)
