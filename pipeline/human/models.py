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
- ``none``: no model.

Every model has one API (`MoveModel`): `move_probabilities(board, context)`, the batched
`batch_probabilities(items)`, and `close()`.
"""

from __future__ import annotations

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

ModelKind = Literal["maia3", "file"]
MAIA3_SPEC: Final = "maia3"
# What every `--human-model` / `--model` flag says it takes.
MODEL_HELP: Final = (
    "default (Maia-3 where installed, else the bundled model), maia3, bundled, none, or a model file of "
    "`diffimax human train`"
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

    @property
    def name(self) -> str:
        """What outputs call the model: `maia3-5m`, `bundled` or a file's name."""
        if self.kind == "maia3":
            return maia3_files.MODEL_NAME
        return "bundled" if Path(self.path) == DEFAULT_MODEL else Path(self.path).name

    def identity(self) -> str:
        """What a job's identity pins: Maia-3's checked digests and its rating map, a file's
        SHA-256."""
        if self.kind == "maia3":
            return maia3_files.verify(Path(self.path)).identity + default_rating_map().identity()
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
        return HumanMoveModel.load(self.path, engine=engine)


def resolve_model(spec: str | None) -> ModelChoice | None:
    """`--human-model SPEC` (see the module docstring); None for `none` or no spec. A path that is
    not a file is refused here, in one line."""
    if spec is None or spec.strip().lower() == "none":
        return None
    text = spec.strip()
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


__all__ = ["MODEL_HELP", "ModelChoice", "ModelSpecError", "MoveModel", "load_move_model", "resolve_model"]
