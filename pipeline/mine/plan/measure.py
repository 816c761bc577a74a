"""Step 4 of a plan, and the commit's share of step 5: the analysis timed by the job's own worker
in child processes set up as Ray's actors are, CPU seconds read from /proc, a shard's write timed."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.common.progress import Progress
from pipeline.ingest.outcomes import Selected
from pipeline.ingest.sources import Shard
from pipeline.mine.config import MineConfig
from pipeline.mine.occurrences import Occurrence
from pipeline.mine.plan.records import PlanError, TimedPosition
from pipeline.mine.rows import PartOutcome, PositionResult, occurrence_rows
from pipeline.mine.work import AnalysisWorker

# Seconds between two looks at the timing processes' count.
LOOK_SECONDS = 0.5
# Positions of the scratch shard whose commit is timed (at most; fewer when shards are smaller).
COMMIT_PROBE_POSITIONS = 2000
# Clock ticks per second of the CPU times in /proc/<pid>/stat.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its live descendants (engine processes:
    the UCI engine, the human-move model's feature engine), read from /proc; this process alone
    where there is no /proc."""
    total = time.process_time()
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return total
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()  # the name may hold spaces and ')'
        except OSError:  # the process ended meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])  # utime + stime
    me = os.getpid()
    descendants: set[int] = set()
    frontier = {me}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - descendants
        descendants |= frontier
    return total + sum(ticks[pid] for pid in descendants) / CLOCK_TICKS


@dataclass(frozen=True)
class Timing:
    """What one timing process returns."""

    timed: list[TimedPosition]
    results: list[PositionResult]
    warmup_seconds: float
    worker_start_seconds: float


# The positions the timing processes have judged, shared with the planner for its progress (set in
# each child by the pool's initializer; None in the planner itself).
_judged: Any = None


def _share_counter(counter: Any) -> None:
    global _judged
    _judged = counter


def _time_share(config: MineConfig, units: Sequence[tuple[tuple[Occurrence, ...], Sequence[float]]]) -> Timing:
    """Build the job's worker (engine, model, corpus), warm it up on the first unit's first
    position (uncounted), then judge each unit, one at a time (counting them in `_judged`)."""
    start = time.perf_counter()
    worker = AnalysisWorker(config.engine, config.engine_options, config.judging(), config.human, evals=config.evals)
    worker_start = time.perf_counter() - start
    if worker.backend is None:
        raise PlanError(f"cannot start --engine {config.engine!r}: {worker.startup_error}")
    timed: list[TimedPosition] = []
    results: list[PositionResult] = []
    try:
        # Uncounted: the first position (engine and model caches warm), then an empty table, so
        # that the timed positions are analysed as the job analyses a position it has not seen.
        warmup = worker.analyse(units[0][0][:1])[0]
        worker.table.clear()
        for unit, weights in units:
            before = cpu_seconds()
            start = time.perf_counter()
            found = worker.analyse(unit)
            unit_seconds = time.perf_counter() - start
            cpu = cpu_seconds() - before
            engine_total = sum(result.seconds for result in found)
            for result, occurrence, weight in zip(found, unit, weights, strict=True):
                share = result.seconds / engine_total if engine_total > 0 else 1 / len(found)
                result.ply = occurrence.ply
                results.append(result)
                timed.append(
                    TimedPosition(
                        occurrence.game_id,
                        occurrence.ply,
                        weight,
                        result.seconds,
                        cpu * share,
                        unit_seconds * share,
                        result.error,
                    )
                )
            if _judged is not None:
                with _judged.get_lock():
                    _judged.value += len(unit)
    finally:
        worker.close()
    return Timing(timed, results, warmup.seconds, worker_start)


def _time_as_a_worker(config: MineConfig, units: Sequence[tuple[tuple[Occurrence, ...], Sequence[float]]]) -> Timing:
    """`_time_share` in a process set up as Ray sets up the job's analysis actor (`num_cpus=1`):
    OMP_NUM_THREADS=1 unless set (the human-move model's LightGBM otherwise runs a thread per
    core, whose spinning threads contend with the other workers). The niceness of Ray's workers
    (15) is not copied: timed at it under the other engineers' load here, the native plan was 13x
    the measured run (docs/mining.md, "Planning a job")."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return _time_share(config, units)


def time_positions(
    config: MineConfig,
    units: Sequence[tuple[tuple[Occurrence, ...], Sequence[float]]],
    processes: int,
    progress: Progress,
) -> list[Timing]:
    """Judge the units in `processes` child processes at once (each with its own worker and its
    share of the units, set up as a Ray actor is), so that the machine is as busy as the job's
    workers would make it; the positions judged are shown on `progress` as they are."""
    processes = max(1, min(processes, len(units)))
    total = sum(len(unit) for unit, _ in units)
    shares = [list(units[index::processes]) for index in range(processes)]
    # fork, not spawn: spawn imports the caller's main module again, which a script that calls
    # `plan` without a `__main__` guard cannot survive. Nothing here holds an engine or a thread yet.
    context = multiprocessing.get_context("fork")
    judged = context.Value("q", 0)
    done: list[Timing] = []
    progress.start("timed", "positions", total)
    with concurrent.futures.ProcessPoolExecutor(
        processes, mp_context=context, initializer=_share_counter, initargs=(judged,)
    ) as pool:
        pending = {pool.submit(_time_as_a_worker, config, share) for share in shares}
        while pending:
            finished, pending = concurrent.futures.wait(pending, timeout=LOOK_SECONDS)
            done += [future.result() for future in finished]
            progress.update(judged.value)
    progress.finish_step()
    return done


def time_commit(
    games: dict[int, Selected], results: dict[tuple[str, int], PositionResult], positions: int
) -> tuple[int, float]:
    """Seconds of the write step (`write_shard`: the workers' rows put in order, five Parquet files
    staged) of one shard of `positions` positions (the timed positions' rows, repeated) into a
    scratch dataset: (positions written, seconds)."""
    from pipeline.dataset.store import DatasetWriter, table_of
    from pipeline.mine.shards import ShardCounts, ShardTables, write_shard

    rows = [row for selected in games.values() for row in selected.positions if (row["game_id"], row["ply"]) in results]
    if not rows or positions < 1:
        return 0, 0.0
    repeated = [rows[index % len(rows)] for index in range(positions)]
    responses, traps, trap_seq = [], [], []
    for seq, row in enumerate(repeated):
        result = results[(row["game_id"], row["ply"])]
        if result.error is not None:
            continue
        response, trap_rows = occurrence_rows(
            result, row["game_id"], row["ply"], row["move_uci"], False, analysis_key=row["position_key"]
        )
        responses.append(response)
        traps.extend(trap_rows)
        trap_seq.extend([seq] * len(trap_rows))
    part = PartOutcome(
        table_of("responses", responses), list(range(len(responses))), table_of("traps", traps), trap_seq
    )
    game_rows = [selected.game for selected in games.values()]
    shard = Shard("plan-probe", "plan", 0, "stream", 0, 0, 0)
    counts = ShardCounts(games_read=len(game_rows), games_written=len(game_rows), positions=len(repeated))
    tables = ShardTables(table_of("games", game_rows), table_of("positions", repeated))
    with tempfile.TemporaryDirectory(prefix="diffimax-plan-") as scratch:
        store = DatasetWriter.create(os.path.join(scratch, "probe"), {"identity": {"plan": True}})
        start = time.perf_counter()
        write_shard(str(store.root), shard, counts, tables, [part])
        seconds = time.perf_counter() - start
    return positions, seconds
