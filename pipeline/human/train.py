"""Training the human-move model: examples from games, a book from the training split, a fit.

    diffimax human train --games GAMES... --out MODEL.json

1. The games are read (`pipeline.human.data`) and split by `pipeline.common.splits.split_of`:
   the model is fitted on `train` games, early-stopped on `tune` games (a seeded share of the
   training games when the inputs have no tune games, e.g. a user's own files); `held_out` games
   are never read here.
2. With the ``book`` features, a first pass counts the moves of every training position (`Book`).
3. Positions are sampled by a hash of (seed, game id, ply); a forced position (one legal move)
   teaches nothing and is skipped. Every sampled position becomes one row per legal move and a
   label (the move played). Feature extraction is per game, so it runs in parts on Ray workers
   when `workers > 1`; the parts are merged in game order, so the result does not depend on the
   number of workers.
4. LightGBM fits trees to the softmax log-loss within each position (custom objective: gradient
   p - y, Hessian p (1 - p)), with early stopping on the tune log-loss. With one seed, the same
   data and the same thread count, the model file is the same bytes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from pipeline.common.cluster import Tick
from pipeline.common.files import write_atomic
from pipeline.common.progress import Progress
from pipeline.engines.options import EngineOptions
from pipeline.human.book import DEFAULT_MIN_GAMES, Book, BookBuilder
from pipeline.human.context import Pool
from pipeline.human.data import GameSample, ReadCounts, input_digest, read_inputs
from pipeline.human.engine import FEATURE_ENGINE, engine_record
from pipeline.human.examples import (
    CARVE_SEED,
    CARVED_TUNE_SHARE,
    Examples,
    ExtractSpec,
    extract,
    save_examples,
)
from pipeline.human.features import (
    CATEGORICAL_FEATURES,
    FeatureGroup,
    feature_names,
    parse_groups,
)
from pipeline.human.model import (
    INTERACTING,
    MODEL_FORMAT,
    MODEL_VERSION,
    HumanMoveModel,
    LinearScorer,
    ModelKind,
    dumps_model,
    softmax_groups,
)
from search.errors import DiffimaxError
from search.settings import is_whole

# The examples' names stay importable from here (callers, and work Ray pickled by reference).
__all__ = ["TrainConfig", "TrainError", "fit_lightgbm", "fit_linear", "played_ranks", "train_locally"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# Probabilities are floored at this in the log-loss (a played move the model calls impossible).
PROBABILITY_FLOOR: Final = 1e-9


class TrainError(DiffimaxError, ValueError):
    """Training settings or data that cannot give a model."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides the model file's bytes (with the data)."""

    kind: ModelKind = "lightgbm"
    """`lightgbm` (trees on the softmax loss) or `linear` (the comparison model)."""
    groups: tuple[FeatureGroup, ...] = ("base", "engine", "book", "pool")
    """Feature groups (`pipeline.human.features`)."""
    engine: str = "stockfish"
    """The engine behind the ``engine`` features (ignored without them)."""
    engine_options: EngineOptions = FEATURE_ENGINE
    """How it runs (its depth is `--feature-depth`)."""
    sample_rate: float = 0.05
    """Share of training positions used, sampled by a hash of (seed, game id, ply)."""
    tune_sample_rate: float = 0.1
    """Share of tune positions used for early stopping and the recorded metrics."""
    source_rates: tuple[tuple[str, float], ...] = ()
    """(file name, share) pairs: the share of that file's training and tune positions used instead
    of the two above (a small file of a population the others lack, taken whole)."""
    pool: Pool | None = None
    """The rating pool of every input game (None: each game's Site tag says)."""
    game_rate: float = 1.0
    """Share of each file's games read at all (by a hash of the game id, on the headers: a game
    left out is never replayed, which is what makes it cheaper than a lower `sample_rate`)."""
    source_game_rates: tuple[tuple[str, float], ...] = ()
    """(file name, share) pairs that replace `game_rate` for that file."""

    @property
    def games(self) -> GameSample | None:
        """The game sample of `game_rate` and `source_game_rates` (None: every game)."""
        if self.game_rate >= 1.0 and all(rate >= 1.0 for _, rate in self.source_game_rates):
            return None
        return GameSample(self.game_rate, self.source_game_rates)

    seed: int = 0
    """Seed of the position samples and of LightGBM."""
    book_min_games: int = DEFAULT_MIN_GAMES
    """How often the training games must reach a position for it to enter the book."""
    num_leaves: int = 63
    """LightGBM leaves per tree."""
    learning_rate: float = 0.15
    """LightGBM shrinkage."""
    max_rounds: int = 300
    """Most trees."""
    early_stopping: int = 20
    """Stop after this many trees without a better tune log-loss."""
    min_data_in_leaf: int = 200
    """Fewest rows (moves) in a leaf."""
    feature_fraction: float = 0.9
    """Share of features each tree may use."""
    bagging_fraction: float = 0.5
    """Share of rows (moves) each tree is grown on (seeded): halves the cost of a tree."""
    lambda_l2: float = 1.0
    """L2 penalty on leaf values (LightGBM) or on weights (linear, per position)."""
    max_bin: int = 63
    """Histogram bins per feature."""
    threads: int = 1
    """LightGBM threads (a different count can change the last bits of the fit; more than one
    only pays on an idle machine: its threads meet at a barrier hundreds of times per tree)."""
    workers: int = 1
    """Feature-extraction processes: 1 in this process, more on Ray."""
    trainer: Literal["local", "ray"] = "local"
    """`local`: examples gathered into this process and fitted here; `ray`: dump scale, streamed
    over shards and fitted on Ray Train by `workers` LightGBM workers (`pipeline.human.scale`)."""

    def __post_init__(self) -> None:
        if self.kind not in ("lightgbm", "linear"):
            raise TrainError(f"unknown model kind {self.kind!r}: expected lightgbm or linear")
        if self.trainer not in ("local", "ray"):
            raise TrainError(f"unknown trainer {self.trainer!r}: expected local or ray")
        if self.trainer == "ray" and self.kind != "lightgbm":
            raise TrainError("the ray trainer fits lightgbm models only")
        object.__setattr__(self, "groups", parse_groups(self.groups))
        for name in ("sample_rate", "tune_sample_rate"):
            value = getattr(self, name)
            if not (0.0 < value <= 1.0):
                raise TrainError(f"{name} must be in (0, 1], not {value!r}")
        object.__setattr__(self, "source_rates", tuple(sorted((str(n), float(r)) for n, r in self.source_rates)))
        games = tuple(sorted((str(n), float(r)) for n, r in self.source_game_rates))
        object.__setattr__(self, "source_game_rates", games)
        if not (0.0 < self.game_rate <= 1.0):
            raise TrainError(f"game_rate must be in (0, 1], not {self.game_rate!r}")
        for source, rate in (*self.source_rates, *games):
            if not (0.0 < rate <= 1.0):
                raise TrainError(f"the sample rate of {source!r} must be in (0, 1], not {rate!r}")
        for name in ("num_leaves", "max_rounds", "early_stopping", "min_data_in_leaf", "max_bin", "threads", "workers"):
            value = getattr(self, name)
            if not is_whole(value, 1):
                raise TrainError(f"{name} must be a whole number >= 1, not {value!r}")
        for name in ("learning_rate", "feature_fraction", "bagging_fraction"):
            value = getattr(self, name)
            if not (0.0 < value <= 1.0):
                raise TrainError(f"{name} must be in (0, 1], not {value!r}")


# -- examples -----------------------------------------------------------------------------


def build_book(
    inputs: Sequence[str],
    min_games: int,
    counts: ReadCounts | None = None,
    pool: Pool | None = None,
    sample: GameSample | None = None,
    tick: Tick | None = None,
) -> tuple[Book, int]:
    """The book of the training games (tune and held-out games never enter it), and how many
    training games it was built from; `tick` is told of every game read."""
    builder = BookBuilder()
    games = 0
    for record in read_inputs(inputs, counts=counts, pool=pool, games=sample):
        if tick is not None:
            tick(1)
        if record.split != "train":
            continue
        games += 1
        for position in record.positions:
            builder.add(position.key, position.move)
    return builder.build(min_games), games


# -- metrics ------------------------------------------------------------------------------


def group_metrics(probabilities: FloatArray, examples: Examples) -> dict[str, float]:
    """Top-1 and top-3 move matching and the mean log-loss of the played move."""
    if not examples.positions:
        return {"positions": 0, "top1": math.nan, "top3": math.nan, "log_loss": math.nan}
    ranks = played_ranks(probabilities, examples)
    played = probabilities[examples.offsets + examples.labels]
    return {
        "positions": examples.positions,
        "top1": float(np.mean(ranks == 0)),
        "top3": float(np.mean(ranks < 3)),
        "log_loss": float(-np.mean(np.log(np.maximum(played, PROBABILITY_FLOOR)))),
    }


def played_ranks(probabilities: FloatArray, examples: Examples) -> IntArray:
    """For each position, how many moves score strictly higher than the played one, plus the
    ties listed before it: 0 means the played move is the top choice."""
    offsets = examples.offsets
    owner = np.repeat(np.arange(examples.positions), examples.sizes)
    played = probabilities[offsets + examples.labels]
    better = probabilities > played[owner]
    index = np.arange(len(probabilities)) - offsets[owner]
    tied_before = (probabilities == played[owner]) & (index < examples.labels[owner])
    ranks: IntArray = np.bincount(owner, weights=(better | tied_before), minlength=examples.positions).astype(np.int64)
    return ranks


# -- fitting ------------------------------------------------------------------------------


def _targets(examples: Examples) -> FloatArray:
    y = np.zeros(len(examples.values))
    y[examples.offsets + examples.labels] = 1.0
    return y


def _lightgbm_params(config: TrainConfig, objective: Any, extra_params: dict[str, Any] | None) -> dict[str, Any]:
    """LightGBM's parameters for `fit_lightgbm`: the within-position objective, the config's tree
    shape, deterministic and column-wise (the same trees on every machine)."""
    return {
        "objective": objective,
        "learning_rate": config.learning_rate,
        "num_leaves": config.num_leaves,
        "min_data_in_leaf": config.min_data_in_leaf,
        "min_sum_hessian_in_leaf": 1e-3,
        "feature_fraction": config.feature_fraction,
        "bagging_fraction": config.bagging_fraction,
        "bagging_freq": 1 if config.bagging_fraction < 1.0 else 0,
        "lambda_l2": config.lambda_l2,
        "max_bin": config.max_bin,
        "num_threads": config.threads,
        "deterministic": True,
        "force_col_wise": True,
        "seed": config.seed,
        "verbosity": -1,
        "metric": "None",
        **(extra_params or {}),
    }


def fit_lightgbm(
    train: Examples,
    tune: Examples,
    config: TrainConfig,
    progress: Progress,
    extra_params: dict[str, Any] | None = None,
    names: Sequence[str] | None = None,
) -> tuple[Any, int, list[float]]:
    """Trees on the within-position softmax loss, early-stopped on the tune log-loss. Returns the
    booster, the best number of trees and the tune log-loss after each tree. `extra_params` join
    LightGBM's (the network of a distributed fit); `names` are the columns when they are not those
    of `config.groups` (a benchmark's derived columns)."""
    import lightgbm

    names = list(names if names is not None else feature_names(config.groups))
    sizes = train.sizes
    y = _targets(train)
    tune_sizes = tune.sizes
    tune_offsets = tune.offsets
    tune_labels = tune.labels

    def objective(preds: FloatArray, _: Any) -> tuple[FloatArray, FloatArray]:
        p = softmax_groups(np.asarray(preds, dtype=np.float64), sizes)
        return p - y, np.maximum(p * (1.0 - p), 1e-12)

    def tune_loss(preds: FloatArray, _: Any) -> tuple[str, float, bool]:
        p = softmax_groups(np.asarray(preds, dtype=np.float64), tune_sizes)
        played = np.maximum(p[tune_offsets + tune_labels], PROBABILITY_FLOOR)
        return "group_log_loss", float(-np.mean(np.log(played))), False

    params = _lightgbm_params(config, objective, extra_params)
    categorical = [name for name in names if name in CATEGORICAL_FEATURES]
    train_set = lightgbm.Dataset(
        train.values,
        label=y,
        feature_name=names,
        categorical_feature=categorical,
        free_raw_data=True,
        params={"max_bin": config.max_bin, "verbosity": -1},
    )
    tune_set = lightgbm.Dataset(
        tune.values, label=_targets(tune), feature_name=names, categorical_feature=categorical, reference=train_set
    )
    history: dict[str, dict[str, list[float]]] = {}

    def show_tree(env: Any) -> None:
        progress.update(env.iteration + 1)

    progress.start("fitted", "trees", config.max_rounds, "at most; early-stopped on the tune log-loss")
    booster = lightgbm.train(
        params,
        train_set,
        num_boost_round=config.max_rounds,
        valid_sets=[tune_set],
        valid_names=["tune"],
        feval=tune_loss,
        callbacks=[
            lightgbm.early_stopping(config.early_stopping, verbose=False),
            lightgbm.record_evaluation(history),
            show_tree,
        ],
    )
    progress.finish_step()
    losses = history.get("tune", {}).get("group_log_loss", [])
    best = booster.best_iteration or len(losses)
    progress.say(f"  {best} trees (tune log-loss {losses[best - 1]:.4f})" if losses else f"  {best} trees")
    return booster, best, losses


def fit_linear(train: Examples, config: TrainConfig, progress: Progress) -> LinearScorer:
    """A conditional logit: L-BFGS on the mean softmax log-loss plus lambda_l2 / positions * |w|^2."""
    from scipy.optimize import minimize  # type: ignore[import-untyped]

    names = feature_names(config.groups)
    values = train.values.astype(np.float64)
    means = np.nanmean(np.where(np.isfinite(values), values, np.nan), axis=0)
    means = np.where(np.isnan(means), 0.0, means)
    scales = np.nanstd(values, axis=0)
    scales = np.where(~np.isfinite(scales) | (scales < 1e-9), 1.0, scales)
    x = LinearScorer.transform_of(train.values, names, means, scales)
    y = _targets(train)
    sizes = train.sizes
    penalty = config.lambda_l2 / max(1, train.positions)

    def loss(w: FloatArray) -> tuple[float, FloatArray]:
        p = softmax_groups(x @ w, sizes)
        played = np.maximum(p[y == 1.0], PROBABILITY_FLOOR)
        value = float(-np.mean(np.log(played)) + penalty * float(w @ w))
        gradient = x.T @ (p - y) / train.positions + 2 * penalty * w
        return value, gradient

    result = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 300})
    progress.say(f"  linear: {result.nit} iterations, train loss {result.fun:.4f}")
    return LinearScorer(names, tuple(means.tolist()), tuple(scales.tolist()), tuple(result.x.tolist()))


# -- the whole run ------------------------------------------------------------------------


# TrainConfig fields the training command and the recorded config leave out: the workers change no
# byte of the model, and the feature engine is written on its own (`--engine --feature-depth`, the
# model's `engine` record).
UNRECORDED_FIELDS: Final = frozenset({"workers", "engine", "engine_options"})

# The flag of a TrainConfig field whose name is not the flag's (pipeline/cli/human.py).
FLAG_OF: Final = {
    "kind": "--learner",
    "sample_rate": "--train-rate",
    "tune_sample_rate": "--tune-rate",
}
# LightGBM's own parameters, a job file's `[lightgbm]` table (`pipeline.cli.human.LightGbmFit`):
# TrainConfig field -> key.
LIGHTGBM_KEYS: Final = {
    "num_leaves": "num-leaves",
    "learning_rate": "learning-rate",
    "max_rounds": "max-rounds",
    "min_data_in_leaf": "min-data-in-leaf",
    "threads": "threads",
}
# The job file a recorded command names when LightGBM's parameters are not the defaults.
TRAINING_JOB_FILE: Final = "training.toml"


def training_job_file(config: TrainConfig) -> str | None:
    """The `[lightgbm]` table of the parameters `config` sets apart from the defaults (TOML), or
    None when all are the defaults."""
    default = TrainConfig()
    lines = [
        f"{key} = {getattr(config, name)!r}"
        for name, key in LIGHTGBM_KEYS.items()
        if getattr(config, name) != getattr(default, name)
    ]
    return "\n".join(["[lightgbm]", *lines, ""]) if lines else None


def training_command(data: Sequence[str], config: TrainConfig, out_name: str) -> str:
    """The command that reproduces the model (the output's file name only, so the same run into
    two directories records the same text), with `--config training.toml` when LightGBM's
    parameters are not the defaults: that file's text is `training_job_file`'s."""
    default = TrainConfig()
    parts = ["diffimax human train", *(f"--games {item}" for item in data)]
    for name, value in asdict(config).items():
        if name in UNRECORDED_FIELDS or name in LIGHTGBM_KEYS:
            continue
        if name in ("source_rates", "source_game_rates"):
            option = "--source-rate" if name == "source_rates" else "--source-game-rate"
            parts.extend(f"{option} {source}={rate:g}" for source, rate in value)
        elif name == "pool":
            parts.extend([f"--pool {value}"] if value is not None else [])
        elif value != getattr(default, name):
            text = ",".join(value) if isinstance(value, tuple) else str(value)
            parts.append(f"{FLAG_OF.get(name, '--' + name.replace('_', '-'))} {text}")
    if "engine" in config.groups and (config.engine, config.engine_options) != (default.engine, default.engine_options):
        parts.append(f"--engine {config.engine} --feature-depth {config.engine_options.depth}")
    if training_job_file(config) is not None:  # its text is recorded beside the command
        parts.append(f"--config {TRAINING_JOB_FILE}")
    parts.append(f"--out {out_name}")
    return " ".join(parts)


def train_locally(
    data: Sequence[str],
    out: str,
    config: TrainConfig,
    shown: Progress,
    dump: str | None = None,
) -> dict[str, Any]:
    """Train a model on the `train` games of `data` in this process, write it to `out`; returns
    its description. `dump` names a directory to save the extracted examples in (train.npz,
    tune.npz and their .json), for comparing other models on the same data
    (`benchmarks.bench_human --variants`). `pipeline.human.trainer.train` chooses the trainer."""
    say = shown.say
    started = time.monotonic()
    counts = ReadCounts()
    book: Book | None = None
    book_games = 0
    if "book" in config.groups:
        say("counting the book of the training games")
        shown.start("read", "games")
        book, book_games = build_book(data, config.book_min_games, counts, config.pool, config.games, shown.advance)
        shown.finish_step()
        say(f"  {len(book)} positions reached at least {config.book_min_games} times in {book_games} games")
    train_spec, tune_spec = extraction_specs(config)
    say(f"features of {config.tune_sample_rate:g} of the tune positions ({config.workers} worker(s))")
    tune = extract(data, tune_spec, book, config.workers, shown)
    tune_source = TUNE_SPLIT
    if not tune.positions:
        # No tune games (a user's own files): early-stop on a seeded share of the training games.
        # They are in the book, so they see it without their own occurrences, like training games.
        tune_source = CARVED_TUNE
        train_spec = replace(train_spec, carve="train")
        tune = extract(data, carved_tune_spec(tune_spec), book, config.workers, shown)
    say(f"features of {config.sample_rate:g} of the training positions")
    examples = extract(data, train_spec, book, config.workers, shown)
    check_enough(examples.positions, tune.positions, data)
    extracted = time.monotonic()
    if dump is not None:
        save_examples(examples, Path(dump) / "train.npz")
        save_examples(tune, Path(dump) / "tune.npz")
    say(f"  {examples.positions} training positions ({len(examples.values)} moves), {tune.positions} tune")
    document = base_document(config, book)
    say(f"fitting ({config.kind})")
    if config.kind == "lightgbm":
        booster, best, losses = fit_lightgbm(examples, tune, config, shown)
        document["booster"] = booster.model_to_string(num_iteration=best)
        fit: dict[str, Any] = {"trees": best, "tune_log_loss_by_tree": [round(v, 5) for v in losses[:best]]}
    else:
        scorer = fit_linear(examples, config, shown)
        document["linear"] = scorer.to_json()
        fit = {"interacting": list(INTERACTING)}
    record = TrainingRecord(examples.positions, len(examples.values), book_games, counts, tune_source, fit)
    return write_model(document, out, data, config, tune, record, (started, extracted))


# What the tune examples were, as the model file records it.
TUNE_SPLIT: Final = "tune split"
CARVED_TUNE: Final = f"carved: {CARVED_TUNE_SHARE:g} of the training games (seed {CARVE_SEED})"


def extraction_specs(config: TrainConfig) -> tuple[ExtractSpec, ExtractSpec]:
    """What the training and the tune examples are made of."""
    engine = (config.engine, config.engine_options) if "engine" in config.groups else None
    train_spec = ExtractSpec(
        ("train",),
        config.groups,
        engine,
        config.sample_rate,
        config.seed,
        source_rates=config.source_rates,
        pool=config.pool,
        games=config.games,
    )
    tune_spec = replace(train_spec, splits=("tune",), sample_rate=config.tune_sample_rate, leave_one_out=False)
    return train_spec, tune_spec


def carved_tune_spec(tune_spec: ExtractSpec) -> ExtractSpec:
    """The tune examples of inputs without tune games: the carved share of the training games."""
    return replace(tune_spec, splits=("train",), carve="tune", leave_one_out=True)


def check_enough(train_positions: int, tune_positions: int, data: Sequence[str]) -> None:
    if train_positions < 10 or tune_positions < 1:
        raise TrainError(
            f"too little data: {train_positions} training and {tune_positions} tune positions "
            f"in {', '.join(map(str, data))} (held-out games are never trained on)"
        )


def base_document(config: TrainConfig, book: Book | None) -> dict[str, Any]:
    """The model file before its fit: format, kind, features, engine and book."""
    document: dict[str, Any] = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "kind": config.kind}
    document["groups"] = list(config.groups)
    document["features"] = list(feature_names(config.groups))
    if "engine" in config.groups:
        document["engine"] = engine_record((config.engine, config.engine_options))
    if book is not None:
        document["book"] = book.to_json()
    return document


@dataclass(frozen=True)
class TrainingRecord:
    """What a fit was made of, for the model file's `training` field."""

    train_positions: int
    train_moves: int
    book_games: int
    counts: ReadCounts
    tune_source: str
    fit: dict[str, Any]


def write_model(
    document: dict[str, Any],
    out: str,
    data: Sequence[str],
    config: TrainConfig,
    tune: Examples,
    record: TrainingRecord,
    times: tuple[float, float],
) -> dict[str, Any]:
    """Measure the fitted model on the tune examples, record its training, write the file; the
    summary `train` returns."""
    model = HumanMoveModel(document, source=out)
    probabilities = softmax_groups(model.raw_scores(tune.values), tune.sizes)
    tune_metrics = group_metrics(probabilities, tune)
    document["metrics"] = {"tune": {k: round(v, 5) for k, v in tune_metrics.items()}}
    config_record = {k: v for k, v in asdict(config).items() if k not in UNRECORDED_FIELDS}
    document["training"] = {
        "command": training_command(data, config, out.rsplit("/", 1)[-1]),
        **({"job_file": job_file} if (job_file := training_job_file(config)) is not None else {}),
        "data": input_digest(data),
        "split": "pipeline.common.splits.split_of: fitted on 'train', early-stopped on " + record.tune_source,
        "config": config_record,
        "train_positions": record.train_positions,
        "train_moves": record.train_moves,
        "tune_positions": tune.positions,
        "book_games": record.book_games,
        "games_failed": record.counts.failed,
        "games_filtered": record.counts.filtered,
        "fit": record.fit,
    }
    text = dumps_model(document)
    write_atomic(out, text)  # a model file is read by every later job: never half of one
    started, extracted = times
    finished = time.monotonic()
    return {
        "out": out,
        "bytes": len(text.encode()),
        "tune": tune_metrics,
        "train_positions": record.train_positions,
        "tune_positions": tune.positions,
        "seconds_features": round(extracted - started, 1),
        "seconds_fit": round(finished - extracted, 1),
        "seconds_total": round(finished - started, 1),
    }
