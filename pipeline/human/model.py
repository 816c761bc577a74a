"""The human-move model: the probability that a human of a given rating and clock plays each legal move.

    from pipeline.human.model import HumanMoveModel, MoverContext, ModelError, DEFAULT_MODEL
    model = HumanMoveModel.load(DEFAULT_MODEL)
    p = model.move_probabilities(board, MoverContext(rating=1600, clock_seconds=42.0, base_seconds=60))
    model.close()

A model scores every legal move with a function of its features (`pipeline.human.features`) and
turns the scores of one position into probabilities with a softmax (a conditional logit: the
choice among the legal moves). Two kinds share the file format:

- ``lightgbm``: gradient-boosted trees fitted on the within-position softmax log-loss (a custom
  LightGBM objective), so the scores are log-odds, not a ranking;
- ``linear``: a linear score on standardised features and a few rating/clock interactions (the
  comparison model).

The model file is one JSON text: format name, version, kind, the feature names, the engine and
book it needs, its training data (files with SHA-256, split, command) and its tuning metrics.
A file of another format version, or whose features this code does not compute, is refused.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import chess
import chess.polyglot
import numpy as np
import numpy.typing as npt

from pipeline.common.files import write_atomic
from pipeline.engines.process import EngineError
from pipeline.human.book import Book, BookError
from pipeline.human.context import MoverContext
from pipeline.human.engine import FeatureEngine, ShallowEngine, engine_from_record, engine_record
from pipeline.human.features import (
    FeatureError,
    FeatureGroup,
    Matrix,
    feature_names,
    move_features,
    parse_groups,
)
from pipeline.human.schema import model_document_problem
from search.errors import DiffimaxError

__all__ = ["DEFAULT_MODEL", "HumanMoveModel", "ModelError", "model_path"]

ModelKind = Literal["lightgbm", "linear"]
# The file format: bump MODEL_VERSION on any change that an older reader would misread.
MODEL_FORMAT: Final = "diffimax-human-move-model"
MODEL_VERSION: Final = 1
# The bundled model, trained on the shared training split (docs/human.md says how).
DEFAULT_MODEL: Final = Path(__file__).resolve().parent.parent / "samples" / "human_model.json"
# Linear model: the context columns that interact with every move column.
INTERACTING: Final = ("rating", "clock_fraction")

FloatArray = npt.NDArray[np.float64]


def model_path(spec: str) -> str:
    """The file behind `--human-model SPEC` (`default`: the bundled model)."""
    return str(DEFAULT_MODEL) if spec.lower() == "default" else spec


class ModelError(DiffimaxError, ValueError):
    """A model file that is missing, unreadable, of another version, or inconsistent."""


def softmax_groups(scores: FloatArray, sizes: npt.NDArray[np.int64]) -> FloatArray:
    """Softmax of `scores` within consecutive groups of the given sizes (one group per position)."""
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    peak = np.maximum.reduceat(scores, starts)
    exp = np.exp(scores - peak[owner])
    total = np.add.reduceat(exp, starts)
    result: FloatArray = exp / total[owner]
    return result


@dataclass(frozen=True)
class LinearScorer:
    """score = weights . transform(x): features standardised (NaN -> 0 after centring, with a
    missing flag per column that can be NaN), one-hot piece type, and every move column times
    each INTERACTING context column."""

    names: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]

    @staticmethod
    def transform_of(values: Matrix, names: tuple[str, ...], means: FloatArray, scales: FloatArray) -> FloatArray:
        x = (values.astype(np.float64) - means) / scales
        missing = np.isnan(x)
        x = np.where(missing, 0.0, x)
        piece = values[:, names.index("piece")]
        onehot = np.stack([(piece == kind).astype(np.float64) for kind in range(1, 7)], axis=1)
        context = [names.index(name) for name in INTERACTING]
        columns = [x, missing.astype(np.float64), onehot]
        for index in context:
            columns.append(x * x[:, index : index + 1])
        return np.concatenate(columns, axis=1)

    def scores(self, values: Matrix) -> FloatArray:
        x = self.transform_of(values, self.names, np.asarray(self.means), np.asarray(self.scales))
        result: FloatArray = x @ np.asarray(self.weights)
        return result

    def to_json(self) -> dict[str, Any]:
        return {"means": list(self.means), "scales": list(self.scales), "weights": list(self.weights)}


class HumanMoveModel:
    """A loaded model. `move_probabilities` is the API; the engine it may need is started on first
    use and ended by `close()`."""

    def __init__(self, document: dict[str, Any], *, engine: str | None = None, source: str = "<memory>") -> None:
        """Build from a parsed model file (see `load`); ModelError if it is inconsistent."""
        problem = model_document_problem(document)
        if problem is not None:
            raise ModelError(f"model {source}: {problem}")
        self.document = document
        self.source = source
        self.kind: ModelKind = _check_kind(document.get("kind"), source)
        try:
            self.groups: tuple[FeatureGroup, ...] = parse_groups(document.get("groups", ()))
        except FeatureError as error:
            raise ModelError(f"model {source}: {error}") from None
        self.names = feature_names(self.groups)
        recorded = tuple(document.get("features", ()))
        if recorded != self.names:
            raise ModelError(
                f"model {source}: its {len(recorded)} features are not the {len(self.names)} this code computes "
                "(a model of another version?)"
            )
        self.feature_engine: FeatureEngine | None = None
        if "engine" in self.groups:
            recorded_engine = document.get("engine")
            if not isinstance(recorded_engine, dict):
                raise ModelError(f"model {source}: uses engine features but records no engine")
            try:
                recorded_name, options = engine_from_record(recorded_engine)
            except ValueError as error:
                raise ModelError(f"model {source}: {error}") from None
            self.feature_engine = (engine or recorded_name, options)
        self.book: Book | None = None
        if "book" in self.groups:
            try:
                self.book = Book.from_json(document.get("book"))
            except BookError as error:
                raise ModelError(f"model {source}: {error}") from None
        self._booster: Any = None
        self._linear: LinearScorer | None = None
        if self.kind == "lightgbm":
            self._booster = _load_booster(document.get("booster"), source)
        else:
            self._linear = _load_linear(document.get("linear"), self.names, source)
        self._engine: ShallowEngine | None = None

    # -- files -----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], engine: str | None = None) -> HumanMoveModel:
        """Read a model file. `engine` overrides the engine name or path recorded in it (used only
        by a model with engine features). ModelError, in one line, for a missing, corrupt or
        other-version file."""
        name = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ModelError(f"no model file at {name!r}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise ModelError(f"cannot read model file {name!r}: {error}") from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ModelError(
                f"model file {name!r} is not valid JSON (line {error.lineno}): corrupt or truncated"
            ) from None
        if not isinstance(document, dict) or document.get("format") != MODEL_FORMAT:
            raise ModelError(f"{name!r} is not a diffimax human-move model file")
        version = document.get("version")
        if version != MODEL_VERSION:
            raise ModelError(
                f"model file {name!r} has format version {version!r}; this code reads version {MODEL_VERSION} "
                "(retrain it with `diffimax human train`)"
            )
        return cls(document, engine=engine, source=name)

    def save(self, path: str | os.PathLike[str]) -> None:
        write_atomic(path, dumps_model(self.document))

    # -- scoring ---------------------------------------------------------------------------

    def features(self, board: chess.Board, context: MoverContext) -> tuple[tuple[str, ...], Matrix]:
        """The legal moves of `board` and this model's feature rows for them."""
        engine_scores = None
        if self.feature_engine is not None:
            if self._engine is None:
                self._engine = ShallowEngine(*self.feature_engine)
            try:
                engine_scores = self._engine.scores(board)
            except EngineError as error:
                raise ModelError(f"model {self.source}: {error}") from None
        book = self.book.counts_at(board) if self.book is not None else None
        matrix = move_features(board, context, groups=self.groups, engine=engine_scores, book=book)
        return matrix.moves, matrix.values

    def raw_scores(self, values: Matrix) -> FloatArray:
        """Unnormalised log-odds of feature rows (any number of positions stacked)."""
        if self._booster is not None:
            result: FloatArray = np.asarray(self._booster.predict(values, raw_score=True), dtype=np.float64)
            return result
        assert self._linear is not None
        return self._linear.scores(values)

    def move_probabilities(self, board: chess.Board, context: MoverContext | None = None) -> dict[str, float]:
        """Every legal move of `board` (UCI) -> the probability that the mover plays it; the values
        sum to 1. An empty dict for a position without legal moves."""
        if not any(board.generate_legal_moves()):
            return {}
        moves, values = self.features(board, context or MoverContext())
        scores = self.raw_scores(values)
        exp = np.exp(scores - scores.max())
        probabilities = exp / exp.sum()
        return {move: float(p) for move, p in zip(moves, probabilities, strict=True)}

    def batch_probabilities(self, items: Sequence[tuple[chess.Board, MoverContext | None]]) -> list[dict[str, float]]:
        """`move_probabilities` of each position (the trees score one position at a time)."""
        return [self.move_probabilities(board, context) for board, context in items]

    # -- description -----------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Version, kind, features, engine, book size, training data summary and metrics."""
        document = self.document
        return {
            "format": MODEL_FORMAT,
            "version": MODEL_VERSION,
            "kind": self.kind,
            "groups": list(self.groups),
            "features": list(self.names),
            "engine": None if self.feature_engine is None else engine_record(self.feature_engine),
            "book_positions": None if self.book is None else len(self.book),
            "training": document.get("training"),
            "metrics": document.get("metrics"),
        }

    def close(self) -> None:
        """End the engine process this model started, if any."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def __enter__(self) -> HumanMoveModel:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def dumps_model(document: Mapping[str, Any]) -> str:
    """The file text: sorted keys, fixed separators, so one model is always the same bytes."""
    return json.dumps(document, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False) + "\n"


def _check_kind(kind: object, source: str) -> ModelKind:
    if kind == "lightgbm":
        return "lightgbm"
    if kind == "linear":
        return "linear"
    raise ModelError(f"model {source}: unknown model kind {kind!r}")


def _load_booster(text: object, source: str) -> Any:
    import lightgbm

    if not isinstance(text, str) or not text.startswith("tree"):
        raise ModelError(f"model {source}: no LightGBM model text in 'booster'")
    try:
        return lightgbm.Booster(model_str=text)
    except lightgbm.basic.LightGBMError as error:
        raise ModelError(f"model {source}: unreadable LightGBM model: {' '.join(str(error).split())}") from None


def _load_linear(data: object, names: tuple[str, ...], source: str) -> LinearScorer:
    if not isinstance(data, dict):
        raise ModelError(f"model {source}: no 'linear' weights")
    try:
        means = tuple(float(v) for v in data["means"])
        scales = tuple(float(v) for v in data["scales"])
        weights = tuple(float(v) for v in data["weights"])
    except (KeyError, TypeError, ValueError):
        raise ModelError(f"model {source}: unreadable 'linear' weights") from None
    width = 2 * len(names) + 6 + len(INTERACTING) * len(names)
    if len(means) != len(names) or len(scales) != len(names) or len(weights) != width:
        raise ModelError(f"model {source}: 'linear' weights do not match its {len(names)} features")
    if not all(math.isfinite(v) for v in (*means, *scales, *weights)):
        raise ModelError(f"model {source}: 'linear' weights are not finite")
    return LinearScorer(names, means, scales, weights)
