"""`diffimax mine --plan`: what a mining job will cost, estimated before it runs from samples of its own
input, read and analysed by the project's own functions on this machine (no Ray).

The method (docs/mining.md, "Planning a job"):

1. *Count.* The games of a source are its `[Event ` lines (`count_games`); a source larger than
   COUNT_EXACT_BYTES on disk is estimated from its first PREFIX_BYTES (games per byte on disk).
   `--max-games` caps the count as it caps the job (games read, in input order).
2. *Sample the games.* Blocks of SAMPLE_BLOCK_GAMES consecutive games at seeded places of what the
   job reads (the whole of a counted source, the prefix of an estimated one) are read through the
   job's `GameReader` and `GameFilter`, as an ingest task reads them: the shares of games kept,
   filtered and failed, the positions per game, each kept game's position keys by ply, and the
   seconds per game of the parse. When the sample is the whole job these figures are counts. The
   one filter not applied is --game-rate (`content_reader`): the counts are scaled by it instead.
3. *Distinct positions.* A key seen before anywhere in the job is not analysed again. Per ply, the
   distinct keys among n kept games of the sample are counted at n = n_s, n_s/2, n_s/4, ...
   (averaged over REUSE_ORDERS seeded orders of the games) and fitted with Heaps' law,
   D(n) = D(n_s) (n / n_s)^b with b in [0, 1], which is extrapolated to the job's kept games and
   capped at the positions of that ply (positions at low plies repeat most: b near 0; late in the
   game nearly every position is new: b near 1).
4. *Time the analysis.* Kept games of the sample, drawn in a seeded order until they hold
   SAMPLE_POSITIONS new positions, are judged by the job's own `AnalysisWorker` (its engine, limits,
   DiffiMax settings, judges, model and corpus) as the units the driver sends: each game's
   positions not seen before in the sample, in ply order, one unit (so they meet the warm table or
   hash a worker gives consecutive positions of a game). A position's seconds count with the weight
   of its ply among the positions the job will analyse (job distinct / sample distinct at that
   ply: a month analyses few early plies), a ratio estimate whose 90 % interval treats each game as
   one draw. As many processes judge at once as the job has workers on this machine, so the
   machine is as busy as the job makes it. One extra position first warms each worker up (a worker
   pays that once per job) and is not counted.
5. *Combine.* Analysed positions x seconds per position is the engine time; core-hours multiply it
   by the engine's threads. The wall time for N workers adds the pipeline's own work, measured
   here too: the parse of every game (ingest tasks share the workers' cores), the stream reader's
   cut of compressed streams into shards, the shard writers (the real `write_shard` into a scratch
   dataset, on a shard of sampled positions; they run on any node and share the workers' cores),
   and the driver's submissions: wall = start-up + max(all core-seconds / N, the driver's and the
   reader's serial seconds) + the last unit (one game's positions on one worker). The --shard-games
   planned for is the job's, or, where the driver would take more than `DRIVER_SHARE` of the wall
   on N workers, the smallest that keeps it within (at most what a stream shard can hold).

The modules, one step each: `count` (step 1), `sample` (step 2, and the units step 4 times),
`reuse` (Heaps' law, step 3), `estimate` (steps 1-3's figures and intervals), `measure` (step 4's
timing processes, /proc CPU seconds, the commit probe), `walltime` (step 5's model: shards,
workers, what bounds the wall), `planner` (`plan()`: the steps in order), `render` (the report),
`records` (what a plan says).
"""

from __future__ import annotations

from pipeline.mine.plan.count import COUNT_EXACT_BYTES, PREFIX_BYTES, count_sources, prefix_games
from pipeline.mine.plan.estimate import MIN_TIMED_GAMES, Z90, CountFigures, count_figures, mean_interval, share
from pipeline.mine.plan.measure import COMMIT_PROBE_POSITIONS, cpu_seconds, time_commit, time_positions
from pipeline.mine.plan.planner import SAMPLE_GAMES, SAMPLE_POSITIONS, plan
from pipeline.mine.plan.records import (
    Figure,
    Plan,
    PlanError,
    PlanSample,
    ReuseFit,
    Scaling,
    SourceCount,
    TimedPosition,
)
from pipeline.mine.plan.render import plan_text
from pipeline.mine.plan.reuse import REUSE_MIN_GAMES, REUSE_ORDERS, fit_reuse
from pipeline.mine.plan.sample import SAMPLE_BLOCK_GAMES, choose_blocks, draw_units, read_sample, unit_of
from pipeline.mine.plan.walltime import (
    DRIVER_SECONDS_PER_SHARD,
    DRIVER_SHARE,
    RAY_START_SECONDS,
    SCALING_WORKERS,
    WRITER_SECONDS_PER_WORKER_CALL,
    ShardCut,
    WallModel,
    call_seconds,
    count_shards,
    driver_seconds,
    scale_to,
    worker_count,
)

__all__ = [
    "COMMIT_PROBE_POSITIONS",
    "COUNT_EXACT_BYTES",
    "DRIVER_SECONDS_PER_SHARD",
    "DRIVER_SHARE",
    "MIN_TIMED_GAMES",
    "PREFIX_BYTES",
    "RAY_START_SECONDS",
    "REUSE_MIN_GAMES",
    "REUSE_ORDERS",
    "SAMPLE_BLOCK_GAMES",
    "SAMPLE_GAMES",
    "SAMPLE_POSITIONS",
    "SCALING_WORKERS",
    "WRITER_SECONDS_PER_WORKER_CALL",
    "Z90",
    "CountFigures",
    "Figure",
    "Plan",
    "PlanError",
    "PlanSample",
    "ReuseFit",
    "Scaling",
    "ShardCut",
    "SourceCount",
    "TimedPosition",
    "WallModel",
    "call_seconds",
    "choose_blocks",
    "count_figures",
    "count_shards",
    "count_sources",
    "cpu_seconds",
    "draw_units",
    "driver_seconds",
    "fit_reuse",
    "mean_interval",
    "plan",
    "plan_text",
    "prefix_games",
    "read_sample",
    "scale_to",
    "share",
    "time_commit",
    "time_positions",
    "unit_of",
    "worker_count",
]
