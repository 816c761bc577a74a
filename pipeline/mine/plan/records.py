"""What a plan says: the planned figures, the sample they came from, and the plan's error."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from search.errors import DiffimaxError


class PlanError(DiffimaxError, ValueError):
    """A job that cannot be planned: bad planning settings, an input plan cannot read, nothing to analyse."""


@dataclass(frozen=True)
class Figure:
    """One planned figure and how it was obtained."""

    value: float
    """The estimate."""
    how: str
    """How: counted, measured on the sample, or the model that extrapolated it."""
    low: float | None = None
    """Lower end of its 90 % interval where the method gives one (the sampling error only)."""
    high: float | None = None
    """Upper end of that interval."""


@dataclass(frozen=True)
class SourceCount:
    """What the count found in one source."""

    source: str
    """Absolute path of the source."""
    disk_bytes: int
    """Its size on disk."""
    games: int
    """Games (`[Event ` lines) in the source: counted, or estimated from its prefix."""
    counted: bool
    """True if `games` is a count, False if it is an estimate from the first PREFIX_BYTES."""
    games_read: int
    """Games the job reads from it (all, or what `--max-games` leaves after the sources before)."""
    sampleable: int
    """Games at its start the sample may come from: all it reads when counted, the prefix's otherwise."""
    compressed: bool
    """A compressed source: the driver cuts its stream into shards (a range source costs it nothing)."""


@dataclass(frozen=True)
class ReuseFit:
    """Heaps' law for one ply of the sample: distinct keys among n kept games."""

    ply: int
    """Half-moves played before the position."""
    games: int
    """Kept games of the sample."""
    positions: int
    """Positions at this ply in the sample."""
    distinct: int
    """Distinct keys at this ply in the sample."""
    exponent: float
    """b of D(n) = distinct (n / games)^b, fitted on the sample's curve, in [0, 1]."""

    def distinct_at(self, games: float) -> float:
        """Distinct keys at this ply among `games` kept games like the sample's."""
        if self.distinct == 0 or self.games == 0:
            return 0.0
        scale = games / self.games
        return float(min(self.positions * scale, self.distinct * scale**self.exponent))


@dataclass(frozen=True)
class TimedPosition:
    """One position of the analysis sample."""

    game_id: str
    """The game it was drawn from."""
    ply: int
    """Its ply in that game."""
    weight: float
    """Its weight in the mean: the job's distinct positions at its ply per distinct one of the sample."""
    engine_seconds: float
    """`PositionResult.seconds`: the judged analysis (engine, model, corpus), as the manifest sums it
    (wall-clock seconds: on a busy machine they include the waits for a core)."""
    cpu_seconds: float
    """CPU seconds the worker and its engine processes spent on the unit (what a core of its own
    would take, whatever else the machine runs), the position's share by its engine seconds."""
    unit_seconds: float
    """The worker's whole call for the unit (replaying the game included), the position's share."""
    error: str | None
    """The analysis's error, if it failed (as a job records it)."""


@dataclass(frozen=True)
class PlanSample:
    """What planning read and ran."""

    blocks: int
    """Blocks of consecutive games read."""
    games_read: int
    """Games read through the job's reader and filters."""
    games_kept: int
    """Of those, games kept (written by the job)."""
    games_filtered: int
    """Of those, games the filters left out."""
    games_error: int
    """Of those, games that could not be read."""
    filter_reasons: dict[str, int]
    """Filtered games by the rule that left them out."""
    positions: int
    """Positions of the kept games inside the ply window."""
    distinct: int
    """Distinct position keys among them."""
    whole_job: bool
    """True if the sample is every game the job reads (its figures are then counts)."""
    parse_seconds_per_game: float
    """Seconds per game read of `GameReader` on this machine (what ingest tasks spend)."""
    cut_seconds_per_game: float
    """Driver seconds per game to decompress a compressed stream and cut it into shards."""
    reuse: tuple[ReuseFit, ...]
    """The distinct-key fit of every ply with positions."""
    timed: tuple[TimedPosition, ...]
    """The analysis sample."""
    warmup_seconds: float
    """The uncounted first analysis of the worker."""
    worker_start_seconds: float
    """Seconds to build the job's `AnalysisWorker` (engine, model and corpus loaded)."""
    commit_positions: int
    """Positions of the scratch shard whose commit was timed."""
    commit_seconds: float
    """Seconds of that commit (`write_shard`: rows put in order, five Parquet files staged)."""
    seed: int
    """Seed of the block and game draws."""


@dataclass(frozen=True)
class Scaling:
    """The job's wall time with `workers` workers (a core each), each part's seconds, and what bounds it."""

    workers: int
    wall_seconds: float
    bound: str
    """engine (the analysis and the shard writers, spread over the workers), driver (its serial
    submissions) or reader (a compressed stream's serial decompression)."""
    engine_seconds: float
    driver_seconds: float
    writer_seconds: float
    """The shard writers' share: their core-seconds spread over the workers' cores."""
    reader_seconds: float
    shard_games: int
    """The --shard-games planned for: the job's own, or the one that keeps the driver within
    `DRIVER_SHARE` of the wall (`pipeline.mine.plan.walltime.ShardCut.pick`)."""
    shards: int
    capped: bool
    """The pick needed more games per shard than a stream shard can hold: the driver's share is over."""

    def shares(self) -> dict[str, float]:
        """Each part's seconds as a share of the wall."""
        wall = max(self.wall_seconds, 1e-9)
        return {
            "engine": self.engine_seconds / wall,
            "writers": self.writer_seconds / wall,
            "driver": self.driver_seconds / wall,
            "reader": self.reader_seconds / wall,
        }


@dataclass(frozen=True)
class Plan:
    """What a mining job will read, analyse and cost, and how each figure was obtained."""

    sources: tuple[SourceCount, ...]
    """The expanded inputs and what the count found in each."""
    engine: str
    """The engine's name and version ("native", "Stockfish 15.1")."""
    engine_options: dict[str, Any]
    """The engine's effective limits (defaults filled in)."""
    settings: dict[str, Any]
    """The DiffiMax settings and judges of the job."""
    workers: int
    """Analysis workers the wall time is planned for."""
    workers_how: str
    """Where `workers` came from (--workers, this machine's CPUs, the cluster's)."""
    games_read: Figure
    """Games the job reads."""
    games_kept: Figure
    """Games that pass the filters and are mined (`games_written` in the manifest)."""
    games_filtered: Figure
    """Games the filters leave out."""
    games_error: Figure
    """Games that cannot be read."""
    positions: Figure
    """Positions of the kept games inside the ply window (`positions`)."""
    positions_analysed: Figure
    """Distinct positions: analysed once each (`positions_analysed` + `positions_error`)."""
    positions_reused: Figure
    """Repeats that reuse an analysis (`positions_reused`)."""
    runs_here: bool
    """True if the job would run on this machine (no --address, no more workers than its CPUs):
    its seconds are then this machine's wall clock, its load included; else a core per worker."""
    seconds_per_position: Figure
    """Engine seconds per analysed position, as the manifest's `engine_seconds` counts them."""
    cpu_seconds_per_position: Figure
    """CPU seconds per analysed position of the worker and its engine processes."""
    engine_seconds: Figure
    """Engine seconds of the job (`engine_seconds`: the judged analyses, summed)."""
    engine_core_hours: Figure
    """Engine core-hours: analysed positions x CPU seconds per position / 3600."""
    analysis_seconds: Figure
    """Worker seconds (`analysis_seconds`: engine seconds plus replaying the games)."""
    ingest_seconds: Figure
    """Core-seconds of the ingest tasks (parse, filter, replay), which share the workers' cores."""
    driver_seconds: Figure
    """The driver's serial seconds: cutting compressed streams, committing shards."""
    wall_seconds: Figure
    """Wall time of the job for `workers` workers."""
    shards: int
    shard_games: int
    """The --shard-games planned for: the job's, or the one picked so that the driver does not bound it."""
    """Shards the job will commit."""
    scaling: tuple[Scaling, ...]
    """The wall time at SCALING_WORKERS workers, each bound named."""
    sample: PlanSample
    """What planning read and ran."""
    planning_seconds: float
    """How long planning took."""
    assumptions: tuple[str, ...]
    """What the figures assume beyond what was measured."""

    def describe(self) -> dict[str, Any]:
        """The plan as plain JSON values."""
        return asdict(self)
