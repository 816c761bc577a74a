"""The plan as a readable report (`diffimax mine --plan` without --json)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pipeline.common.words import quantity
from pipeline.mine.plan.estimate import MIN_TIMED_GAMES
from pipeline.mine.plan.records import Figure, Plan, Scaling


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _range(figure: Figure, form: Callable[[float], str], missing: str = "") -> str:
    """The figure and its 90 % interval; where it has none, `missing` says why."""
    if figure.low is None or figure.high is None:
        return form(figure.value) + (f" ({missing})" if missing else "")
    return f"{form(figure.value)} (90 %: {form(figure.low)} - {form(figure.high)})"


def _seconds(value: float) -> str:
    return f"{value:.3f} s"


def _count(value: float) -> str:
    return f"{value:,.0f}"


def _hours(value: float) -> str:
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def _scaling_line(row: Scaling) -> str:
    """One worker count's wall, what bounds it, and every part with its share of the wall."""
    shares = row.shares()
    parts = ", ".join(
        f"{name} {_duration(seconds)} ({100 * shares[name]:.1f} %)"
        for name, seconds in (
            ("engine", row.engine_seconds),
            ("writers", row.writer_seconds),
            ("driver", row.driver_seconds),
            ("reader", row.reader_seconds),
        )
    )
    cap = "; more games per shard than a stream shard holds would be needed" if row.capped else ""
    return (
        f"  {quantity(row.workers, 'worker'):>14}: {_duration(row.wall_seconds)}, bound by the {row.bound}, "
        f"--shard-games {row.shard_games:,} ({quantity(row.shards, 'shard')}): {parts}{cap}"
    )


def plan_text(plan: Plan) -> str:
    """The plan as a readable report."""
    size = sum(source.disk_bytes for source in plan.sources)
    sample = plan.sample
    wall = [t.engine_seconds for t in sample.timed]
    cpu = [t.cpu_seconds for t in sample.timed]
    step = max(1, len(sample.reuse) // 8)
    reuse = ", ".join(f"{fit.ply}: {fit.exponent:.2f}" for fit in sample.reuse[::step])
    where = "on this machine" if plan.runs_here else "a core per worker"
    timed_games = len({t.game_id for t in sample.timed})
    few = (
        f"no interval: {quantity(timed_games, 'game')} timed, an interval needs at least "
        f"{MIN_TIMED_GAMES} (--sample-positions, more games)"
        if timed_games < MIN_TIMED_GAMES
        else ""
    )
    lines = [
        f"Plan for {quantity(len(plan.sources), 'input')} ({size / 1e6:,.1f} MB on disk), "
        f"engine {plan.engine}, {quantity(plan.workers, 'worker')} ({plan.workers_how}, "
        f"{where})",
        f"games read:          {_count(plan.games_read.value)} ({plan.games_read.how})",
        f"games mined:         {_range(plan.games_kept, _count)}",
        f"games filtered:      {_count(plan.games_filtered.value)}; unreadable: {_range(plan.games_error, _count)}, "
        f"from {sample.games_error:,} of the {sample.games_read:,} games sampled",
        f"positions:           {_range(plan.positions, _count)}",
        f"analysed (distinct): {_count(plan.positions_analysed.value)} ({plan.positions_analysed.how}); "
        f"reused: {_count(plan.positions_reused.value)}",
        f"engine per position: {_range(plan.seconds_per_position, _seconds, few)} ({plan.seconds_per_position.how})",
        f"  timed spread:      wall {min(wall):.3f}-{max(wall):.3f} s (median {float(np.median(wall)):.3f}); CPU "
        f"{min(cpu):.3f}-{max(cpu):.3f} s (mean {plan.cpu_seconds_per_position.value:.3f})",
        f"engine time:         {_range(plan.engine_seconds, _duration, few)}",
        f"engine core-hours:   {_range(plan.engine_core_hours, _hours, few)}",
        f"pipeline:            ingest {_duration(plan.ingest_seconds.value)} of cores, driver "
        f"{_duration(plan.driver_seconds.value)} serial ({quantity(plan.shards, 'shard')} "
        f"of --shard-games {plan.shard_games:,})",
        f"wall time:           {_range(plan.wall_seconds, _duration, few)} with {quantity(plan.workers, 'worker')}",
        "on clusters:         a core per worker, from the CPU-seconds per position (read from /proc: the "
        "worker's process and its engine's, as benchmarks/bench_position_cost reads them)",
        *(_scaling_line(row) for row in plan.scaling),
        f"sample:              {sample.games_read:,} games in {sample.blocks} blocks"
        f"{' (the whole job)' if sample.whole_job else ''}, {sample.positions:,} positions, {sample.distinct:,} "
        f"distinct; warm-up {sample.warmup_seconds:.2f} s, worker start {sample.worker_start_seconds:.2f} s",
        f"reuse (Heaps b):     by ply {reuse}",
        "assumes:             " + "; ".join(plan.assumptions),
        f"planned in {plan.planning_seconds:.1f} s",
    ]
    return "\n".join(lines)
