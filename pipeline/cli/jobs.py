"""`diffimax mine`: one mining job's flags (`JobFlags` and the shared groups), run, or estimated with --plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from pipeline.cli.jobfile import JobFileOpt
from pipeline.cli.options import (
    AddressOpt,
    EngineFlags,
    EvidenceFlags,
    FlagGroup,
    GameRateOpt,
    JsonOut,
    JudgeThresholds,
    PlanOpt,
    PoolOpt,
    SearchFlags,
    SeedOpt,
    TableMbOpt,
    UsageError,
    WorkersOpt,
    build_judges,
    emit,
    with_flags,
)
from pipeline.common.files import MIB
from pipeline.common.sanitize import shell_word, terminal_visible
from pipeline.human.context import parse_pool
from pipeline.human.maia3_files import FETCH_COMMAND
from pipeline.ingest.sources import MAX_GAME_BYTES
from pipeline.ingest.streams import URL_TIMEOUT
from pipeline.mine.config import MineConfig
from pipeline.mine.plan import SAMPLE_GAMES, SAMPLE_POSITIONS
from pipeline.mine.table import DEFAULT_TABLE_MB
from search.judges import JudgeSettings
from search.settings import default_depth


@dataclass(frozen=True)
class JobFlags(FlagGroup):
    """What a mining job reads and how it runs, beyond the search, the engine and the evidence."""

    min_elo: Annotated[int | None, typer.Option("--min-elo", help="Both players rated at least this.")] = None
    max_elo: Annotated[int | None, typer.Option("--max-elo", help="Both players rated at most this.")] = None
    time_control: Annotated[
        str | None,
        typer.Option("--time-control", help="Comma list: bullet, blitz, rapid, classical, correspondence."),
    ] = None
    rated_only: Annotated[bool, typer.Option("--rated-only/--any-rated", help="Rated games only.")] = False
    plies: Annotated[str | None, typer.Option("--plies", help="Ply window FROM-TO of analysed positions.")] = None
    game_rate: GameRateOpt = 1.0
    seed: SeedOpt = 0
    max_games: Annotated[int | None, typer.Option("--max-games", help="Stop after this many games read.")] = None
    workers: WorkersOpt = None
    address: AddressOpt = None
    setter_choices: Annotated[
        bool,
        typer.Option("--setter-choices", help="Also record which moves of the side to move would set a trap."),
    ] = False
    shard_games: Annotated[int, typer.Option("--shard-games", help="Games per shard of a compressed stream.")] = 500
    shard_mb: Annotated[float, typer.Option("--shard-mb", help="MiB per shard of an uncompressed file.")] = 16.0
    max_game_mb: Annotated[
        float,
        typer.Option("--max-game-mb", help="Largest game (headers and movetext); a larger one is an error row."),
    ] = MAX_GAME_BYTES / MIB
    url_timeout: Annotated[
        float,
        typer.Option("--url-timeout", help="Seconds a URL may send nothing before it is resumed (HTTP Range)."),
    ] = URL_TIMEOUT
    table_mb: TableMbOpt = DEFAULT_TABLE_MB
    pool: PoolOpt = "auto"
    evals: Annotated[
        str | None,
        typer.Option(
            "--evals",
            help="Cached evals (diffimax evals' Parquet, a path or s3://): each stands in for the "
            "root searches it is as deep as.",
        ),
    ] = None


def job_config(
    out: str,
    resume: bool,
    inputs: Sequence[str],
    job: JobFlags,
    search: SearchFlags,
    engine_flags: EngineFlags,
    evidence: EvidenceFlags,
    thresholds: JudgeThresholds,
) -> MineConfig:
    """The mining job the flag groups describe (`mine` runs it, `mine --plan` estimates it)."""
    from pipeline.ingest.headers import GameFilter
    from pipeline.judging import HumanEvidence
    from pipeline.mine.config import mib_to_bytes

    plies_from, plies_to = parse_plies(job.plies)
    engine = engine_flags.name()
    settings = search.settings(default_depth(engine))
    game_filter = GameFilter(
        min_elo=job.min_elo,
        max_elo=job.max_elo,
        time_controls=frozenset(t.strip().lower() for t in job.time_control.split(",")) if job.time_control else None,
        rated_only=job.rated_only,
        standard_only=True,  # the engines play standard chess (From Position games included)
        ply_from=plies_from,
        ply_to=plies_to,
        sample_rate=job.game_rate,
        seed=job.seed,
    )
    human_model = evidence.human_model
    return MineConfig(
        inputs=tuple(inputs),
        out=out,
        settings=settings,
        judges=build_judges(evidence.judges, JudgeSettings.judges, thresholds),
        human=HumanEvidence(model=None if human_model.lower() == "none" else human_model, corpus=evidence.human_corpus),
        engine=engine,
        engine_options=engine_flags.options(evidence.shallow_depth),
        game_filter=game_filter,
        max_games=job.max_games,
        workers=job.workers,
        address=job.address,
        resume=resume,
        setter_choices=job.setter_choices,
        shard_games=job.shard_games,
        shard_bytes=mib_to_bytes(job.shard_mb),
        max_game_bytes=mib_to_bytes(job.max_game_mb, "--max-game-mb"),
        url_timeout=job.url_timeout,
        table_mb=job.table_mb,
        pool=parse_pool(job.pool),
        evals=job.evals,
    )


@with_flags
def mine_config(
    out: str,
    resume: bool,
    /,
    inputs: Sequence[str],
    *,
    job: JobFlags,
    search: SearchFlags,
    engine_flags: EngineFlags,
    evidence: EvidenceFlags,
    thresholds: JudgeThresholds,
) -> MineConfig:
    """`job_config` by flag name, as `mine` gets them (`mine_config("out", False, ["a.pgn"],
    max_games=5)`): for tests and benchmarks that want a job as the command line makes it."""
    return job_config(out, resume, inputs, job, search, engine_flags, evidence, thresholds)


PLANNED = "(planned, not written)"  # the output directory of a job --plan estimates
PLAN_ONLY = ("sample_games", "sample_positions", "assume_games", "plan_seed", "as_json")  # `mine`'s flags of --plan


@with_flags
def mine(
    ctx: typer.Context,
    inputs: Annotated[list[str], typer.Argument(metavar="INPUT...", help="PGN files, directories, globs, URLs.")],
    out: Annotated[
        str | None, typer.Option("--out", help="Output directory of the Parquet dataset (not needed with --plan).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue a run: skip committed shards.")] = False,
    repair: Annotated[
        bool, typer.Option("--repair", help="With --resume: remove damaged shards and mine them again.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="Show Ray's own log lines too.")] = False,
    plan: PlanOpt = False,
    sample_games: Annotated[
        int, typer.Option("--sample-games", help="--plan: games of the input read through the filters.")
    ] = SAMPLE_GAMES,
    sample_positions: Annotated[
        int, typer.Option("--sample-positions", help="--plan: positions judged to time the analysis here.")
    ] = SAMPLE_POSITIONS,
    assume_games: Annotated[
        int | None,
        typer.Option("--assume-games", help="--plan: for this many games read, shaped like the inputs'."),
    ] = None,
    plan_seed: Annotated[int, typer.Option("--plan-seed", help="--plan: seed of the game and position samples.")] = 0,
    as_json: JsonOut = False,
    job_file: JobFileOpt = None,  # read by its callback, before the other flags (`pipeline.cli.jobfile`)
    *,
    job: JobFlags,
    search: SearchFlags,
    engine_flags: EngineFlags,
    evidence: EvidenceFlags,
    thresholds: JudgeThresholds,
) -> None:
    """Mine PGN databases for traps: DiffiMax at every selected position on Ray, Parquet out.

    Inputs are PGN files (.pgn, .pgn.zst, .pgn.gz, .pgn.bz2), directories, globs, http(s) URLs or
    s3:// and gs:// objects; --out is a directory, s3:// or gs://. --workers N starts N Ray
    workers (1 is one worker, still on Ray); --address joins a running cluster instead.

    --plan estimates the job before running it: games and positions after the filters, distinct
    positions after reuse, engine core-hours and wall time for --workers, from samples of its input
    read and judged here with its engine and settings; it writes nothing."""
    if plan:
        if resume or repair:
            raise UsageError("--plan estimates a job: it takes no --resume or --repair")
        config = job_config(out or PLANNED, False, inputs, job, search, engine_flags, evidence, thresholds)
        _plan(config, sample_games, sample_positions, assume_games, plan_seed, as_json)
        return
    # A job file may hold the plan's settings beside the job's (one file for both); flags may not.
    given = [name for name in PLAN_ONLY if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"]
    if given:
        raise UsageError(f"--{given[0].replace('_', '-')} goes with --plan".replace("--as-json", "--json"))
    if out is None:
        raise UsageError("mine needs --out (the dataset's directory), or --plan to estimate the job")
    if repair and not resume:
        raise UsageError("--repair continues a run: give it with --resume")
    from pipeline import api

    config = job_config(out, resume, inputs, job, search, engine_flags, evidence, thresholds)
    manifest = api.mine(config, verbose=verbose, repair=repair)
    typer.echo(summary_text(manifest, out))


def evals(
    export: Annotated[
        str,
        typer.Argument(metavar="EXPORT", help="Lichess's evaluation export: .jsonl or .jsonl.zst, a path or s3://."),
    ],
    out: Annotated[str, typer.Option("--out", help="The Parquet file to write (local).")],
    as_json: JsonOut = False,
) -> None:
    """Convert Lichess's evaluation export to the Parquet file `mine --evals` reads.

    The export is lichess_db_eval.jsonl.zst from https://database.lichess.org/#evals (about 330 M
    positions). Each eval becomes a row keyed by the position's Polyglot key; a line or an eval that
    cannot be read is counted, and written with its reason beside --out (OUT.rejected.jsonl)."""
    from pipeline.common.progress import Progress
    from pipeline.evals.export import convert, convert_text

    with Progress() as progress:  # on stderr, beside --json's stdout
        progress.start("converting", "lines")
        report = convert(export, out, progress=progress.update)
    emit(report.describe(), convert_text(report), as_json)


def _plan(
    config: MineConfig, sample_games: int, sample_positions: int, assume_games: int | None, seed: int, as_json: bool
) -> None:
    from pipeline.common.progress import Progress
    from pipeline.mine.plan import plan as plan_job
    from pipeline.mine.plan import plan_text

    with Progress() as progress:  # on stderr, beside --json's stdout
        planned = plan_job(
            config,
            sample_games=sample_games,
            sample_positions=sample_positions,
            assume_games=assume_games,
            seed=seed,
            progress=progress,
        )
    emit(planned.describe(), plan_text(planned), as_json)


def parse_plies(text: str | None) -> tuple[int, int | None]:
    """`10-40` -> (10, 40); `10-` -> (10, None); `12` -> (12, 12)."""
    if text is None:
        return 0, None
    low, dash, high = text.partition("-")
    try:
        start = int(low) if low.strip() else 0
        end = (int(high) if high.strip() else None) if dash else start
    except ValueError:
        raise UsageError(f"invalid --plies {text!r}: expected FROM-TO, e.g. 10-40") from None
    if start < 0 or (end is not None and end < start):
        raise UsageError(f"invalid --plies {text!r}: need 0 <= FROM <= TO")
    return start, end


def _by_key(counts: dict[str, int] | None) -> str:
    """` (3 duplicate, 2 variant)` for counts by rule or kind; nothing when there are none."""
    return f" ({', '.join(f'{n:,} {key}' for key, n in sorted(counts.items()))})" if counts else ""


def summary_text(manifest: dict[str, Any], out: str) -> str:
    m = manifest
    notes = []
    if m.get("values_dropped"):
        dropped = _by_key(m["values_dropped"])[2:-1]
        notes.append(f"values dropped (unreadable or out of range, stored as null): {dropped}")
    if m.get("evals"):
        notes.append(
            f"--evals: {m.get('evals_found', 0):,} of the positions analysed were in the cache, "
            f"{m.get('evals_served', 0):,} deep enough to stand in for a root search"
        )
    if m.get("games_latin1"):
        notes.append(f"games whose headers were not UTF-8, read as Windows-1252: {m['games_latin1']:,}")
    shown = terminal_visible(out)
    asked, up = m["workers"], m.get("workers_up", m["workers"])
    workers = f"{up} (of {asked} asked)" if up != asked else f"{asked}"
    return "\n".join(
        [
            f"Dataset written to {shown} (manifest: {shown}/manifest.json)",
            f"games: {m['games_read']:,} read = {m['games_written']:,} mined + {m['games_filtered']:,} filtered"
            f"{_by_key(m.get('games_filtered_by'))} + {m['games_error']:,} with errors",
            *notes,
            f"positions: {m['positions']:,} ({m['positions_analysed']:,} analysed, {m['positions_reused']:,} reused "
            f"from repeats, {m['positions_error']:,} failed)",
            f"trap records: {m['traps']:,}; engine: {m['engine'].get('engine') or m['engine'].get('name', '?')}; "
            f"human-move model: {model_line(m.get('human', {}).get('model_name'))}; workers: {workers}; "
            f"{m['wall_seconds']:.1f} s",
            f'query it: diffimax query --data {shell_word(out)} "select * from traps limit 10"',
        ]
    )


def model_line(name: str | None) -> str:
    """The human-move model a job used, and how to get Maia-3 where the bundled model stood in."""
    if name is None:
        return "none"
    if name == "bundled":
        return f"bundled (Maia-3 is not installed: {FETCH_COMMAND})"
    return name
