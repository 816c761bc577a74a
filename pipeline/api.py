"""The Python API, `import diffimax` (docs/api.md): a mined dataset opened for SQL, one position
explained, a mining job run. The commands call these same functions (`diffimax query --saved`,
`explain`, `mine`): the API is their seam, not a second way in, and its defaults are the
commands' defaults (tests/test_api.py holds the two side by side).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess

from pipeline.common.progress import Progress
from pipeline.dataset.integrity import DatasetState
from pipeline.dataset.queries import Dataset
from pipeline.engines.backends import default_engine
from pipeline.engines.options import EngineOptions
from pipeline.human.context import parse_pool
from pipeline.judging import HumanEvidence
from pipeline.mine.config import MineConfig
from pipeline.outputs.explain import Explanation, explain_position
from pipeline.outputs.explain_input import ExplainInput, ExplainInputError, explain_input
from search.judges import JUDGES, JudgeSettings
from search.settings import DiffiMaxSettings, default_depth

# The human evidence of every command unless told otherwise: Maia-3 once it is fetched, the
# bundled model before (`pipeline.human.models`), and no corpus.
DEFAULT_HUMAN = HumanEvidence(model="default")
# Each engine's own limits unless told otherwise (`EngineOptions`: None leaves the backend's).
DEFAULT_ENGINE_OPTIONS = EngineOptions()


def open(dataset: str | Path | DatasetState, *, allow_partial: bool = False) -> Dataset:
    """A mined dataset (a directory, or an `s3://` / `gs://` prefix) open for SQL, checked first:
    `ds.sql("select * from traps")` and `ds.saved("practical-traps")` are DuckDB relations
    (`.df()` for pandas). A job that has not finished is read only with `allow_partial`."""
    return Dataset.open(dataset, allow_partial=allow_partial)


def explain(
    position: str | ExplainInput,
    *,
    rating: int | None = None,
    clock: float | None = None,
    pool: str | None = None,
    setter: str | None = None,
    engine: str | None = None,
    engine_options: EngineOptions = DEFAULT_ENGINE_OPTIONS,
    search: DiffiMaxSettings | None = None,
    judges: JudgeSettings | None = None,
    human: HumanEvidence = DEFAULT_HUMAN,
) -> Explanation:
    """DiffiMax and every trap judge at one position, as `diffimax explain` shows it.

    `position` is a FEN (no history), or moves from the start in SAN or UCI ("1.e4 e5 2.Nf3"),
    which the human-move model reads as the game's history, or an `ExplainInput` (a PGN's ply).
    `rating`, `clock` (seconds) and `pool` describe the responder; `setter` is "white" or
    "black" (default: the side that just moved). The engine is Stockfish where it is installed,
    at the depth and thresholds `explain` uses; `Explanation.judgement` holds the verdicts and the
    fall estimate, `.json()` and `.text()` what the command prints."""
    asked = position if isinstance(position, ExplainInput) else _position(position)
    given = asked.given(rating=rating, clock=clock, pool=parse_pool(pool))
    engine = engine or default_engine()
    return explain_position(
        given,
        setter_color(given.board, setter),
        engine,
        engine_options,
        search or DiffiMaxSettings(depth=default_depth(engine)),
        judges or JudgeSettings(judges=frozenset(JUDGES)),
        model=human.model,
        corpus=human.corpus,
    )


def _position(text: str) -> ExplainInput:
    # A FEN has its ranks apart by "/", which no move has.
    return explain_input(text) if "/" in text else explain_input(None, moves=text)


def setter_color(board: chess.Board, setter: str | None) -> chess.Color:
    """The setter named "white" or "black", else the side that just moved at `board`."""
    if setter is None:
        return not board.turn
    if setter.strip().lower() not in ("white", "black"):
        raise ExplainInputError(f"invalid setter {setter!r}: expected white or black")
    return setter.strip().lower() == "white"


def job(
    inputs: str | Sequence[str],
    out: str,
    *,
    engine: str | None = None,
    settings: DiffiMaxSettings | None = None,
    human: HumanEvidence = DEFAULT_HUMAN,
    **options: Any,
) -> MineConfig:
    """The mining job `diffimax mine INPUT... --out OUT` runs with no other flag, changed by
    `options` (`MineConfig`'s fields: `max_games`, `workers`, `game_filter`, `judges`, ...):
    Stockfish where it is installed, at its default depth, with every mining judge and Maia-3."""
    engine = engine or default_engine()
    return MineConfig(
        inputs=(inputs,) if isinstance(inputs, str) else tuple(inputs),
        out=out,
        engine=engine,
        settings=settings or DiffiMaxSettings(depth=default_depth(engine)),
        human=human,
        **options,
    )


def mine(
    inputs: str | Sequence[str] | MineConfig,
    out: str | None = None,
    *,
    progress: Progress | None = None,
    repair: bool = False,
    verbose: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Run a mining job on Ray (a local cluster unless `address=` names one) and return its
    manifest (also OUT/manifest.json): `mine(["games.pgn"], "runs/jan", max_games=100)`, or a
    `MineConfig` as `job` builds it. `repair` (with `resume=True`) mines damaged shards again."""
    from pipeline.mine.driver import run

    if isinstance(inputs, MineConfig):
        if out is not None or options:
            raise TypeError("give a MineConfig alone, or inputs, out and options")
        config = inputs
    else:
        if out is None:
            raise TypeError("mine(inputs, out): the output directory is needed")
        config = job(inputs, out, **options)
    return run(config, progress=progress, verbose=verbose, repair=repair)
