"""Which human-move model a command uses: `--human-model SPEC` resolved, loaded, and named.

    choice = resolve_model("default")     # Maia-3 where it is installed, else the bundled model
    model = choice.load()                 # a MoveModel
    choice.name, choice.identity()        # what outputs call it; what a job's identity pins

Specs:
- ``default``: Maia-3 when its files are installed (`diffimax human fetch maia3`), else the bundled
  LightGBM model (`pipeline/samples/human_model.json`);
- ``maia3``: Maia-3, and an error naming the fetch command where it is not installed;
- ``bundled``: the bundled LightGBM model;
- a path: a model file of `diffimax human train`;
- ``maia3*PATH`` (or ``A*B`` of any two): the product of two models' probabilities, renormalised
  over the legal moves (a product of experts: Maia-3 times a model of the user's own players);
- ``none``: no model.

Every model has one API (`MoveModel`): `move_probabilities(board, context)`, the batched
`batch_probabilities(items)`, and `close()`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, Protocol

import chess

from pipeline.common.files import file_sha256
from pipeline.human import maia3_files
from pipeline.human.context import MoverContext
from pipeline.human.model import DEFAULT_MODEL, HumanMoveModel
from pipeline.human.ratings import default_rating_map
from search.errors import DiffimaxError

ModelKind = Literal["maia3", "file", "product"]
# The spec separator of a product of two models.
PRODUCT: Final = "*"
MAIA3_SPEC: Final = "maia3"
# What every `--human-model` / `--model` flag says it takes.
MODEL_HELP: Final = (
    "default (Maia-3 where installed, else the bundled model), maia3, bundled, none, a model file of "
    "`diffimax human train`, or A*B (the product of two, e.g. maia3*mine.json)"
)


class MoveModel(Protocol):
    """A human-move model: the probability of each legal move (UCI) of the side to move."""

    def move_probabilities(self, board: chess.Board, context: MoverContext) -> dict[str, float]: ...

    def batch_probabilities(self, items: Sequence[tuple[chess.Board, MoverContext | None]]) -> list[dict[str, float]]:
        """`move_probabilities` of several positions (one network call per batch, where batching pays)."""

    def close(self) -> None:
        """End what the model started (an engine process); it may be used again after."""


class ModelSpecError(DiffimaxError, ValueError):
    """A `--human-model` that names no model."""


@dataclass(frozen=True)
class ModelChoice:
    """A resolved `--human-model`: what to load, and what to call it."""

    kind: ModelKind
    path: str
    """The model file, or Maia-3's directory."""
    parts: tuple[ModelChoice, ...] = ()
    """The two models of a product."""

    @property
    def name(self) -> str:
        """What outputs call the model: `maia3-5m`, a file's name, or `A*B`."""
        if self.kind == "maia3":
            return maia3_files.MODEL_NAME
        if self.kind == "product":
            return PRODUCT.join(part.name for part in self.parts)
        return "bundled" if Path(self.path) == DEFAULT_MODEL else Path(self.path).name

    def identity(self) -> str:
        """What a job's identity pins: Maia-3's checked digests and its rating map, a file's
        SHA-256, or both parts'."""
        if self.kind == "maia3":
            return maia3_files.verify(Path(self.path)).identity + default_rating_map().identity()
        if self.kind == "product":
            return PRODUCT.join(part.identity() for part in self.parts)
        return file_sha256(self.path)

    def payload(self) -> tuple[bytes, str] | None:
        """Maia-3's graph, checked and built for shipping to processes without its files
        (`Maia3Model.from_payload`); None for a model each process loads from its file."""
        if self.kind != "maia3":
            return None
        from pipeline.human.maia3 import payload

        return payload(maia3_files.verify(Path(self.path)))

    def load(self, *, engine: str | None = None, threads: int = 1) -> MoveModel:
        """The model, checked (Maia3Missing / ModelError in one line). `engine` overrides the engine
        a model file's engine features use; `threads` is Maia-3's share of cores."""
        if self.kind == "maia3":
            from pipeline.human.maia3 import Maia3Model  # onnxruntime, loaded where it is used

            return Maia3Model.load(Path(self.path), threads=threads)
        if self.kind == "product":
            first, second = (part.load(engine=engine, threads=threads) for part in self.parts)
            return ProductModel(first, second)
        return HumanMoveModel.load(self.path, engine=engine)


def resolve_model(spec: str | None) -> ModelChoice | None:
    """`--human-model SPEC` (see the module docstring); None for `none` or no spec. A path that is
    not a file is refused here, in one line."""
    if spec is None or spec.strip().lower() == "none":
        return None
    text = spec.strip()
    if PRODUCT in text:
        names = text.split(PRODUCT)
        if len(names) != 2 or not all(name.strip() for name in names):
            raise ModelSpecError(f"invalid model product {spec!r}: expected two models, e.g. maia3{PRODUCT}mine.json")
        parts = [resolve_model(name) for name in names]
        if any(part is None for part in parts):
            raise ModelSpecError(f"invalid model product {spec!r}: expected two models, e.g. maia3{PRODUCT}mine.json")
        return ModelChoice("product", text, tuple(part for part in parts if part is not None))
    lowered = text.lower()
    if lowered == "default":
        if maia3_files.present():
            return ModelChoice("maia3", str(maia3_files.model_dir()))
        return ModelChoice("file", str(DEFAULT_MODEL))
    if lowered == MAIA3_SPEC:
        return ModelChoice("maia3", str(maia3_files.model_dir()))
    if lowered == "bundled":
        return ModelChoice("file", str(DEFAULT_MODEL))
    if not Path(text).is_file():
        raise ModelSpecError(f"no model file at {spec!r}: a human-move model is default, maia3, bundled, none, a file")
    return ModelChoice("file", text)


def load_move_model(spec: str | None, *, engine: str | None = None, threads: int = 1) -> MoveModel | None:
    """The model of `--human-model SPEC`, loaded (None for no model)."""
    choice = resolve_model(spec)
    return None if choice is None else choice.load(engine=engine, threads=threads)


class ProductModel:
    """Two models' probabilities multiplied move by move and renormalised: a move both find likely
    stays likely, one either finds unlikely does not (a product of experts)."""

    def __init__(self, first: MoveModel, second: MoveModel) -> None:
        self.first = first
        self.second = second

    def move_probabilities(self, board: chess.Board, context: MoverContext | None = None) -> dict[str, float]:
        return self.batch_probabilities([(board, context)])[0]

    def batch_probabilities(self, items: Sequence[tuple[chess.Board, MoverContext | None]]) -> list[dict[str, float]]:
        return [
            combine(one, two)
            for one, two in zip(
                self.first.batch_probabilities(items), self.second.batch_probabilities(items), strict=True
            )
        ]

    def close(self) -> None:
        self.first.close()
        self.second.close()


# A probability floor in the product, so that a move one model gives exactly 0 (a model that
# leaves a move out) is not ruled out by it alone.
PRODUCT_FLOOR: Final = 1e-6


def combine(first: dict[str, float], second: dict[str, float]) -> dict[str, float]:
    """The normalised product of two distributions over the same legal moves."""
    logs = {
        move: math.log(max(p, PRODUCT_FLOOR)) + math.log(max(second.get(move, 0.0), PRODUCT_FLOOR))
        for move, p in first.items()
    }
    if not logs:
        return {}
    peak = max(logs.values())
    weights = {move: math.exp(value - peak) for move, value in logs.items()}
    total = sum(weights.values())
    return {move: weight / total for move, weight in weights.items()}


__all__ = [
    "MODEL_HELP", "ModelChoice", "ModelSpecError", "MoveModel", "ProductModel", "load_move_model", "resolve_model",
]  # fmt: skip
