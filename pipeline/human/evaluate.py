"""Measuring a human-move model against the moves people played, beside simple baselines.

    diffimax human eval --human-model MODEL GAMES...

Positions are taken from the games of one split (`held_out` by default: the figures to publish),
sampled by a hash of (seed, game id, ply); forced positions (one legal move) are left out. At each
position every predictor ranks the legal moves and is scored on the move played:

- ``model``: the model, through its public API (`MoveModel.batch_probabilities`, a game's sampled
  positions at a time);
- ``uniform``: every legal move alike (top-1 = 1/n exactly, no tie-breaking by chance);
- ``corpus``: the move most often played at this exact position in the corpus games (a `Book` of
  training games, any count), where the corpus has the position;
- ``sf_nodes``, ``sf_depth_*``: Stockfish's best moves at a node limit (MultiPV 3, so top-3 is
  defined) or at fixed depths (MultiPV over all moves), on a sub-sample of the positions.

Ties are broken by UCI string (the corpus) or the engine's order, never by chance. Log-loss is
reported for predictors that give a distribution over every legal move (model, uniform).
Calibration: every legal move of every position is a prediction (its probability) and an outcome
(played or not); per decile of predicted probability, the mean prediction against the observed
frequency.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pipeline.common.cluster import Tick, fan_out
from pipeline.common.progress import Progress
from pipeline.common.splits import Split
from pipeline.common.stats import wilson
from pipeline.engines.options import EngineOptions
from pipeline.human.book import Book, BookBuilder
from pipeline.human.context import Pool
from pipeline.human.data import GameRecord, GameSample, read_inputs
from pipeline.human.engine import FEATURE_ENGINE, ShallowEngine
from pipeline.human.examples import context_of, position_value, sampled_positions
from pipeline.human.models import MoveModel, resolve_model
from search.errors import DiffimaxError

# Rating bands (lower bounds; the last is open), for the tables.
BAND_EDGES: Final = (0, 1200, 1400, 1600, 1800, 2000, 2200, 2500, 2800)
# Calibration bins of predicted probability.
CALIBRATION_BINS: Final = 10
# Predictors that give a full distribution (have a log-loss). `reference` is a second model
# measured on the same positions (today's bundled model beside a new one).
DISTRIBUTIONS: Final = frozenset({"model", "reference", "uniform"})
# Seed offset of the engine-baseline sub-sample (independent of the position sample).
BASELINE_SEED_OFFSET: Final = 1_000_003
# A played move outside a predictor's ranked list gets this rank (beyond any top-k).
UNRANKED: Final = 999


class EvalError(DiffimaxError, ValueError):
    """Evaluation settings or data that cannot give a figure."""


@dataclass(frozen=True)
class EvalConfig:
    """Which positions are measured, and against which baselines."""

    split: Split | None = "held_out"
    """Games of this split only; None: every game."""
    sample_rate: float = 1.0
    """Share of the split's positions measured."""
    seed: int = 0
    """Seed of the position sample."""
    corpus: tuple[str, ...] = ()
    """Inputs whose training-split games make the corpus baseline (none: no corpus baseline)."""
    engine: str = "stockfish"
    """The engine of the engine baselines."""
    engine_nodes: int | None = None
    """Node limit of the `sf_nodes` baseline (None: not run)."""
    engine_depths: tuple[int, ...] = ()
    """Depths of the `sf_depth_*` baselines."""
    baseline_rate: float = 1.0
    """Share of the measured positions on which the engine baselines run too."""
    workers: int = 1
    """Processes (Ray when more than one)."""
    max_positions: int | None = None
    """Stop after this many positions per part (a quick look)."""
    engine_override: str | None = None
    """Engine for the model's own engine features (None: the one recorded in the model)."""
    reference_model: str | None = None
    """A second model (a `--human-model` spec) measured on the same positions as predictor `reference`."""
    source_rates: tuple[tuple[str, float], ...] = ()
    """(file name, share) pairs that replace `sample_rate` for that file's positions."""
    pool: Pool | None = None
    """The rating pool of every game (None: each game's Site tag says)."""
    games: GameSample | None = None
    """The share of each file's games read at all (None: every game)."""

    def __post_init__(self) -> None:
        for name in ("sample_rate", "baseline_rate"):
            value = getattr(self, name)
            if not (0.0 < value <= 1.0):
                raise EvalError(f"{name} must be in (0, 1], not {value!r}")
        for source, rate in self.source_rates:
            if not (0.0 < rate <= 1.0):
                raise EvalError(f"the sample rate of {source!r} must be in (0, 1], not {rate!r}")

    def rate_of(self, source: str) -> float:
        """The share of the positions of `source` (a file name) that is measured."""
        return dict(self.source_rates).get(source, self.sample_rate)
        if self.workers < 1:
            raise EvalError(f"workers must be at least 1, not {self.workers}")


@dataclass
class Outcome:
    """One measured position: who moved, and the rank each predictor gave the played move."""

    source: str
    game_id: str
    ply: int
    rating: int | None
    mover: str | None
    legal: int
    ranks: dict[str, int]
    """Predictor -> rank of the played move (0 = its first choice); absent where it gave none."""
    played_probability: dict[str, float]
    """Distribution predictors -> probability of the played move."""
    model_top: float = 0.0
    """The model's highest probability at the position (its confidence)."""
    in_baseline: bool = False
    """Whether the engine baselines ran here."""
    clock: float | None = None
    """The mover's clock in seconds, where the game records it."""
    pool: Pool | None = None
    """The rating pool of the mover's rating."""


@dataclass
class PartResult:
    outcomes: list[Outcome] = field(default_factory=list)
    calibration: list[list[float]] = field(default_factory=lambda: [[0.0, 0.0, 0.0] for _ in range(CALIBRATION_BINS)])
    """Per bin: [moves, sum of predicted probability, moves played]."""
    training_names: dict[str, set[str]] = field(default_factory=dict)
    """Source -> the player names of its training games (to tell unseen opponents)."""
    model_seconds: float = 0.0
    model_positions: int = 0
    reference_seconds: float = 0.0


def rank_by_scores(scores: dict[str, float], played: str, tie_order: Sequence[str] | None = None) -> int:
    """Rank of `played` when moves are sorted by score (descending), ties by `tie_order` (else UCI)."""
    if played not in scores:
        return UNRANKED
    position = {move: index for index, move in enumerate(tie_order or sorted(scores))}
    mine = scores[played]
    return sum(
        1
        for move, score in scores.items()
        if score > mine or (score == mine and position.get(move, 0) < position.get(played, 0))
    )


def corpus_book(inputs: Sequence[str]) -> Book:
    """All (position, move) counts of the training-split games of `inputs` (min count 1)."""
    builder = BookBuilder()
    for record in read_inputs(inputs):
        if record.split == "train":
            for position in record.positions:
                builder.add(position.key, position.move)
    return builder.build(1)


def load_for_eval(spec: str, config: EvalConfig) -> MoveModel:
    """The model of `spec` (`--human-model`'s words), with the engine override of its features."""
    choice = resolve_model(spec)
    if choice is None:
        raise EvalError("no model to measure: give a model, not none")
    return choice.load(engine=config.engine_override)


def evaluate_part(
    model_spec: str,
    inputs: Sequence[str],
    part: int,
    parts: int,
    config: EvalConfig,
    corpus: Book | None,
    tick: Tick | None = None,
) -> PartResult:
    """The outcomes of part `part` of `parts` of the inputs (a plain function: Ray runs it
    remotely); `tick` is told of each game measured, with its positions."""
    result = PartResult()
    model = load_for_eval(model_spec, config)
    reference = None if config.reference_model is None else load_for_eval(config.reference_model, config)
    engines: dict[str, ShallowEngine] = {}
    if config.engine_nodes is not None:
        engines["sf_nodes"] = ShallowEngine(config.engine, FEATURE_ENGINE, lines=3, nodes=config.engine_nodes)
    for depth in config.engine_depths:
        engines[f"sf_depth_{depth}"] = ShallowEngine(config.engine, EngineOptions(threads=1, hash_mb=16, depth=depth))
    try:
        for record in read_inputs(inputs, part=part, parts=parts, pool=config.pool, games=config.games):
            split = record.split
            if split == "train":
                names = result.training_names.setdefault(record.source, set())
                names.update(name for name in (record.white, record.black) if name)
            if config.split is not None and split != config.split:
                continue
            before = len(result.outcomes)
            _measure_game(record, (model, reference), engines, config, corpus, result)
            if tick is not None:
                tick(len(result.outcomes) - before)
            if config.max_positions is not None and len(result.outcomes) >= config.max_positions:
                break
    finally:
        model.close()
        if reference is not None:
            reference.close()
        for engine in engines.values():
            engine.close()
    return result


# Moves of history a sampled position keeps (Maia-3 reads the last eight positions).
HISTORY_KEPT: Final = 7


def _measure_game(
    record: GameRecord,
    models: tuple[MoveModel, MoveModel | None],
    engines: dict[str, ShallowEngine],
    config: EvalConfig,
    corpus: Book | None,
    result: PartResult,
) -> None:
    model, reference = models
    sampled = [
        (position, board.copy(stack=HISTORY_KEPT), moves)
        for position, board, moves in sampled_positions(record, config.seed, config.rate_of(record.source))
    ]
    if config.max_positions is not None:
        sampled = sampled[: max(0, config.max_positions - len(result.outcomes))]
    items = [(board, context_of(record, position)) for position, board, _ in sampled]
    started = time.perf_counter()
    predicted = model.batch_probabilities(items)
    result.model_seconds += time.perf_counter() - started
    result.model_positions += len(items)
    others: list[dict[str, float]] = []
    if reference is not None:
        started = time.perf_counter()
        others = reference.batch_probabilities(items)
        result.reference_seconds += time.perf_counter() - started
    for index, (position, board, moves) in enumerate(sampled):
        legal = [move.uci() for move in moves]
        played = position.move
        probabilities = predicted[index]
        ranks = {"model": rank_by_scores(probabilities, played, legal)}
        played_probability = {"model": probabilities[played], "uniform": 1.0 / len(legal)}
        if reference is not None:
            ranks["reference"] = rank_by_scores(others[index], played, legal)
            played_probability["reference"] = others[index][played]
        for move, p in probabilities.items():
            bin_index = min(CALIBRATION_BINS - 1, int(p * CALIBRATION_BINS))
            cell = result.calibration[bin_index]
            cell[0] += 1
            cell[1] += p
            cell[2] += move == played
        if corpus is not None:
            counts = corpus.lookup(position.key)
            if counts is not None:
                scores = {move: float(counts.moves.get(move, 0)) for move in legal}
                ranks["corpus"] = rank_by_scores(scores, played)
        in_baseline = bool(engines) and (
            position_value(config.seed + BASELINE_SEED_OFFSET, record.game_id, position.ply) < config.baseline_rate
        )
        if in_baseline:
            for name, engine in engines.items():
                lines = engine.scores(board)
                order = list(lines)  # the engine's own order, best first
                ranks[name] = order.index(played) if played in lines else UNRANKED
        result.outcomes.append(
            Outcome(
                record.source,
                record.game_id,
                position.ply,
                position.rating,
                record.mover_name(position.ply),
                len(legal),
                ranks,
                played_probability,
                max(probabilities.values()),
                in_baseline,
                position.clock_seconds,
                record.pool,
            )
        )


def evaluate(
    model_spec: str, inputs: Sequence[str], config: EvalConfig, progress: Progress | None = None
) -> PartResult:
    """Every part's outcomes merged (in part order), on Ray when `config.workers > 1`; the
    positions measured shown on `progress` as they are. `model_spec` and `config.reference_model`
    are `--human-model` specs (`pipeline.human.models`)."""
    shown = progress or Progress.quiet()
    say = shown.say
    load_for_eval(model_spec, config).close()  # refuse a bad model early
    if config.reference_model is not None:
        load_for_eval(config.reference_model, config).close()
    say(f"measuring {model_spec} on the {config.split or 'all'} games of {', '.join(inputs)}")
    corpus = None
    if config.corpus:
        say("counting the corpus of training games")
        corpus = corpus_book(config.corpus)
        say(f"  {len(corpus)} positions")
    calls = [(model_spec, list(inputs), part, config.workers, config) for part in range(config.workers)]
    shown.start("measured", "positions", config.max_positions)
    parts = fan_out(evaluate_part, calls, workers=config.workers, shared=(corpus,), progress=shown)
    shown.finish_step()
    merged = PartResult()
    for part_result in parts:
        merged.outcomes.extend(part_result.outcomes)
        for cell, other in zip(merged.calibration, part_result.calibration, strict=True):
            for index in range(3):
                cell[index] += other[index]
        for source, names in part_result.training_names.items():
            merged.training_names.setdefault(source, set()).update(names)
        merged.model_seconds += part_result.model_seconds
        merged.model_positions += part_result.model_positions
        merged.reference_seconds += part_result.reference_seconds
    merged.outcomes.sort(key=lambda o: (o.source, o.game_id, o.ply))
    return merged


# -- tables -------------------------------------------------------------------------------


def band_of(rating: int | None) -> str:
    if rating is None:
        return "unrated"
    lower = max(edge for edge in BAND_EDGES if rating >= edge)
    index = BAND_EDGES.index(lower)
    if index + 1 < len(BAND_EDGES):
        return f"{lower}-{BAND_EDGES[index + 1] - 1}" if lower else f"<{BAND_EDGES[1]}"
    return f"{lower}+"


def band_order(band: str) -> int:
    if band == "unrated":
        return 10**6
    digits = "".join(ch for ch in band.split("-")[0] if ch.isdigit())
    return int(digits) if not band.startswith("<") else -1


def summarise(outcomes: Sequence[Outcome], predictor: str) -> dict[str, Any]:
    """n, top-1 and top-3 (with Wilson intervals) and log-loss of one predictor over outcomes;
    `uniform` in expectation (1/n and min(3, n)/n per position)."""
    if predictor == "uniform":
        n = len(outcomes)
        top1 = sum(1.0 / o.legal for o in outcomes)
        top3 = sum(min(3, o.legal) / o.legal for o in outcomes)
        log_loss = sum(math.log(o.legal) for o in outcomes) / n if n else math.nan
    else:
        ranked = [o.ranks[predictor] for o in outcomes if predictor in o.ranks]
        n = len(ranked)
        top1 = sum(1 for r in ranked if r == 0)
        top3 = sum(1 for r in ranked if r < 3)
        log_loss = math.nan
        if predictor in DISTRIBUTIONS and n:
            log_loss = -sum(math.log(max(o.played_probability[predictor], 1e-9)) for o in outcomes) / n
    low1, high1 = wilson(top1, n)
    low3, high3 = wilson(top3, n)
    return {
        "n": n,
        "top1": top1 / n if n else math.nan,
        "top1_low": low1,
        "top1_high": high1,
        "top3": top3 / n if n else math.nan,
        "top3_low": low3,
        "top3_high": high3,
        "log_loss": log_loss,
    }


def by_band(outcomes: Sequence[Outcome], predictors: Sequence[str]) -> list[dict[str, Any]]:
    """One row per rating band (and one for all), each predictor's summary."""
    bands: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        bands.setdefault(band_of(outcome.rating), []).append(outcome)
    rows = []
    for band in [*sorted(bands, key=band_order), "all"]:
        chosen = outcomes if band == "all" else bands[band]
        rows.append({"band": band, **{name: summarise(chosen, name) for name in predictors}})
    return rows


def main_players(outcomes: Sequence[Outcome]) -> dict[str, str]:
    """Source -> the player who moves most often in its measured positions (the file's owner)."""
    movers: dict[str, Counter[str]] = {}
    for outcome in outcomes:
        if outcome.mover:
            movers.setdefault(outcome.source, Counter())[outcome.mover] += 1
    return {source: counter.most_common(1)[0][0] for source, counter in movers.items()}


def player_groups(result: PartResult) -> dict[str, list[Outcome]]:
    """The "by player" views: per source; each source's owner and the owner's opponents; the
    opponents who play no training game of that source."""
    outcomes = result.outcomes
    owners = main_players(outcomes)
    groups: dict[str, list[Outcome]] = {"all": list(outcomes)}
    for source in sorted({o.source for o in outcomes}):
        mine = [o for o in outcomes if o.source == source]
        groups[source] = mine
        owner = owners.get(source)
        if owner is None or len({o.game_id for o in mine}) < 2:
            continue
        seen = result.training_names.get(source, set())
        groups[f"{source}: owner {owner}"] = [o for o in mine if o.mover == owner]
        opponents = [o for o in mine if o.mover != owner]
        groups[f"{source}: opponents"] = opponents
        if seen:
            groups[f"{source}: opponents without training games"] = [o for o in opponents if o.mover not in seen]
    return groups


def calibration_rows(result: PartResult) -> list[dict[str, float]]:
    rows = []
    for index, (moves, predicted, played) in enumerate(result.calibration):
        rows.append(
            {
                "bin": index,
                "low": index / CALIBRATION_BINS,
                "high": (index + 1) / CALIBRATION_BINS,
                "moves": moves,
                "predicted": predicted / moves if moves else math.nan,
                "observed": played / moves if moves else math.nan,
            }
        )
    return rows


def confidence_rows(outcomes: Sequence[Outcome]) -> list[dict[str, float]]:
    """Per decile of the model's highest probability at a position: its mean, and how often the
    most likely move was the one played (top-1 calibration)."""
    cells = [[0, 0.0, 0] for _ in range(CALIBRATION_BINS)]
    for outcome in outcomes:
        cell = cells[min(CALIBRATION_BINS - 1, int(outcome.model_top * CALIBRATION_BINS))]
        cell[0] += 1
        cell[1] += outcome.model_top
        cell[2] += outcome.ranks["model"] == 0
    return [
        {
            "bin": index,
            "low": index / CALIBRATION_BINS,
            "high": (index + 1) / CALIBRATION_BINS,
            "positions": n,
            "predicted": total / n if n else math.nan,
            "observed": hits / n if n else math.nan,
        }
        for index, (n, total, hits) in enumerate(cells)
    ]


def predictors_of(result: PartResult) -> list[str]:
    """Predictors present in any outcome, in table order."""
    names = {name for outcome in result.outcomes for name in outcome.ranks}
    ordered = ["model", "reference", "uniform", "corpus", "sf_nodes"]
    depths = sorted((n for n in names if n.startswith("sf_depth_")), key=lambda n: int(n.rsplit("_", 1)[1]))
    return [n for n in ordered if n in names or n == "uniform"] + depths


def percent_cell(value: float) -> str:
    return "—" if math.isnan(value) else f"{100 * value:.1f}"


def format_table(rows: Sequence[dict[str, Any]], predictors: Sequence[str], key: str = "band") -> str:
    """A Markdown table: per row n and top-1 / top-3 (%, with 95 % interval) per predictor."""
    header = [key, "n"] + [f"{name} top-1 / top-3" for name in predictors] + ["model log-loss"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [str(row[key]), str(row["model"]["n"] if "model" in row else row[predictors[0]]["n"])]
        for name in predictors:
            s = row[name]
            if not s["n"]:
                cells.append("—")
                continue
            n_note = "" if name in DISTRIBUTIONS or s["n"] == row["model"]["n"] else f" (n {s['n']})"
            cells.append(
                f"{percent_cell(s['top1'])} [{percent_cell(s['top1_low'])}-{percent_cell(s['top1_high'])}] / "
                f"{percent_cell(s['top3'])}{n_note}"
            )
        log_loss = row["model"]["log_loss"]
        cells.append("—" if math.isnan(log_loss) else f"{log_loss:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
