"""A shallow engine that scores every legal move at once, for the human-move model's engine features.

One Stockfish process (Threads 1, a small hash) through the project's one engine-process module
(`pipeline.engines.process`: resolution, start, timeouts, crash restart, no orphans), asked
`go depth D` with MultiPV over all moves. Every query starts with `ucinewgame`, so the answer
depends on the position, its history and the depth alone: the same in every process, whatever
was asked before (which is what makes training on several workers reproducible).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, TypeAlias

import chess
import chess.engine

from pipeline.engines.options import EngineOptions
from pipeline.engines.process import EngineError, UciEngine
from pipeline.human.features import MATE_CP

__all__ = ["FEATURE_ENGINE", "FeatureEngine", "ShallowEngine", "engine_from_record", "engine_record"]

# Stockfish's largest MultiPV: more lines than any position has legal moves.
MAX_MULTIPV: Final = 500
# Centipawns a mate-in-n score is reduced by, per move to the mate.
MATE_STEP: Final = 10


# How the model's engine features are computed: depth 1 per query (with quiescence, so captures
# are resolved) and a 1 MiB table (cleared before every query, so small is fast). The project's one
# engine-settings record; the model file records the depth and hash it was trained with.
FEATURE_ENGINE: Final = EngineOptions(threads=1, hash_mb=1, depth=1)

# The engine behind a model's engine features: a name (looked up on PATH and in /usr/games) or a
# path, and how it is run.
FeatureEngine: TypeAlias = tuple[str, EngineOptions]


def engine_record(engine: FeatureEngine) -> dict[str, Any]:
    """The feature engine as a model file records it (its format since the first model)."""
    name, options = engine
    return {"engine": name, "depth": options.depth, "hash_mb": options.hash_mb}


def engine_from_record(record: Mapping[str, Any]) -> FeatureEngine:
    """A model file's feature engine; ValueError naming what is wrong with the record."""
    if set(record) != {"engine", "depth", "hash_mb"}:
        raise ValueError(f"its engine record has the keys {sorted(record)}, not engine, depth and hash_mb")
    name, depth, hash_mb = record["engine"], record["depth"], record["hash_mb"]
    if not isinstance(name, str) or not all(type(value) is int and value >= 1 for value in (depth, hash_mb)):
        raise ValueError(f"its engine record {dict(record)} is not a name and two whole numbers >= 1")
    return name, EngineOptions(threads=1, hash_mb=hash_mb, depth=depth)


def score_cp(score: chess.engine.Score) -> int:
    """A score from the mover's view in cp; a mate as +-(MATE_CP - MATE_STEP * moves)."""
    mate = score.mate()
    if mate is None:
        cp = score.score()
        assert cp is not None
        return cp
    if score == chess.engine.MateGiven or mate == 0:
        return -MATE_CP
    return MATE_CP - MATE_STEP * mate if mate > 0 else -(MATE_CP + MATE_STEP * mate)


class ShallowEngine:
    """A Stockfish process that scores all legal moves of a position; started on first use,
    ended by `close()` (also a context manager)."""

    def __init__(
        self,
        engine: str = "stockfish",
        options: EngineOptions = FEATURE_ENGINE,
        *,
        lines: int = MAX_MULTIPV,
        nodes: int | None = None,
    ):
        """`engine` run at `options`' depth and hash, one thread; `lines` (MultiPV) and `nodes` (a
        node limit instead of the depth) serve the engine baselines of the evaluation; the model's
        features use the defaults."""
        depth = 1 if options.depth is None else options.depth
        if nodes is None and depth < 1:
            raise EngineError(f"engine depth must be at least 1, not {depth}")
        self.engine = engine
        self.hash_mb = options.hash_mb or 1
        self.lines = lines
        self.limit = chess.engine.Limit(nodes=nodes) if nodes is not None else chess.engine.Limit(depth=depth)
        self._engine: UciEngine | None = None
        self.name = ""

    def _start(self) -> UciEngine:
        engine = UciEngine.open(self.engine, {"Threads": 1, "Hash": self.hash_mb})
        self.name = engine.name
        self._engine = engine
        return engine

    def scores(self, board: chess.Board) -> dict[str, int]:
        """Every legal move of `board` (UCI; the best `lines` of them) -> its score in cp from the
        mover's view, at the set depth or node limit, in the engine's order (best first). Empty
        for a position without legal moves."""
        count = board.legal_moves.count()
        if not count:
            return {}
        engine = self._engine or self._start()
        # The history since the last irreversible move: all a repetition can depend on.
        recent = board.copy(stack=min(board.halfmove_clock, len(board.move_stack)))
        found = engine.search(recent, min(self.lines, count), self.limit, game=object())
        return {info["pv"][0].uci(): score_cp(info["score"].relative) for info in found.infos}

    def close(self) -> None:
        """End the engine process (a no-op if it never started)."""
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()

    def __enter__(self) -> ShallowEngine:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
