"""The per-position work of a mining job, as plain functions (no Ray): tests call them directly,
and the Ray workers in `pipeline.mine.driver` wrap them.

A *unit* is one game's positions that need an analysis, in ply order, so consecutive positions
of a game reach the same engine with its table or hash warm. A unit starts from a clean engine
state, which makes every result independent of which worker ran it and what it ran before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import chess

from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.engines.process import EngineStartError
from schemas.dataset import to_signed64
from search.analysis import ResponseAnalysis
from search.backend import Backend
from search.chessgame import zobrist
from search.diffimax import DiffiMaxResult
from search.errors import DiffimaxError
from search.settings import DiffiMaxSettings


@dataclass(frozen=True)
class AnalysisUnit:
    game_id: str
    start_fen: str | None  # None: the standard start position
    moves: tuple[str, ...]  # UCI moves of the game, at least up to the last analysed ply
    plies: tuple[int, ...]  # positions to analyse (half-moves played before each), ascending


@dataclass
class PositionResult:
    """One analysed position, independent of the game it came from (so repeats can reuse it)."""

    ply: int
    position_key: int  # signed 64-bit Zobrist
    fen: str
    game_id: str = ""  # the occurrence that was analysed; repeats elsewhere reuse this result
    error: str | None = None
    response: dict[str, Any] = field(default_factory=dict)  # RESPONSES columns common to repeats
    traps: list[dict[str, Any]] = field(default_factory=list)  # TRAPS columns common to repeats
    seconds: float = 0.0


def color_name(color: chess.Color) -> str:
    return "white" if color == chess.WHITE else "black"


def settings_columns(settings: DiffiMaxSettings, backend_name: str) -> dict[str, Any]:
    return {
        "reasonable_dip": settings.reasonable_dip,
        "trap_dip": settings.trap_dip,
        "scope": str(settings.scope),
        "depth": settings.depth,
        "backend": backend_name,
    }


def analyse_unit(
    backend: Backend,
    unit: AnalysisUnit,
    settings: DiffiMaxSettings,
    *,
    setter_choices: bool = False,
    on_position: Callable[[], None] | None = None,
) -> list[PositionResult]:
    """Replay the game and analyse each requested position with the player who just moved as
    setter. A position whose analysis fails is returned with its error; the rest go on.
    `on_position` is called after each analysed position (live progress)."""
    reset = getattr(backend, "new_unit", None)
    if reset is not None:
        reset()
    board = chess.Board(unit.start_fen) if unit.start_fen else chess.Board()
    wanted = set(unit.plies)
    results: list[PositionResult] = []
    last = max(unit.plies, default=-1)
    for ply in range(last + 1):
        if ply in wanted:
            results.append(analyse_position(backend, board, settings, setter_choices=setter_choices))
            if on_position is not None:
                on_position()
        if ply < last:
            board.push(chess.Move.from_uci(unit.moves[ply]))
    for result, ply in zip(results, sorted(wanted), strict=True):
        result.ply = ply
        result.game_id = unit.game_id
    return results


def analyse_position(
    backend: Backend, board: chess.Board, settings: DiffiMaxSettings, *, setter_choices: bool = False
) -> PositionResult:
    key = to_signed64(zobrist(board))
    result = PositionResult(ply=board.ply(), position_key=key, fen=board.fen())
    setter = not board.turn
    start = time.perf_counter()
    try:
        found = backend.analyse(board, setter, settings)
    except EngineStartError:
        raise  # no position can be analysed any more: the job stops (see AnalysisWorker)
    except DiffimaxError as error:  # an engine that failed twice, an impossible position
        result.error = f"{type(error).__name__}: {error}"
        return result
    finally:
        result.seconds = time.perf_counter() - start
    if found.root_analysis is None:
        result.error = "no response analysis at the root (no legal reply or depth 0)"
        return result
    common = settings_columns(settings, backend.name)
    result.response = response_columns(found, found.root_analysis, setter) | common | CHOICES_UNKNOWN
    if setter_choices:
        try:
            result.response |= choice_columns(backend, board, settings)
        except EngineStartError:
            raise
        except DiffimaxError as error:
            result.error = f"setter choices: {type(error).__name__}: {error}"
    result.traps = [trap_columns(record, setter, key) | common for record in found.traps]
    return result


# The choice columns of a position whose choices were not analysed.
CHOICES_UNKNOWN: dict[str, Any] = {"choice_moves": None, "choice_trap_moves": None}


def choice_columns(backend: Backend, board: chess.Board, settings: DiffiMaxSettings) -> dict[str, Any]:
    """The side to move as a setter: which of its moves are within the safety margin of its best
    (the visited children of a setter root), and which of those lead to a trap node. Needs
    depth >= 2, so that the nodes after those moves are analysed."""
    if settings.depth < 2:
        raise ValueError(f"setter choices need depth >= 2, not {settings.depth}")
    found = backend.analyse(board, board.turn, settings)
    children = {a.path[0]: a for a in found.analyses if len(a.path) == 1}
    return {
        "choice_moves": sorted(children),
        "choice_trap_moves": sorted(move for move, analysis in children.items() if analysis.trap_node),
    }


def response_columns(found: DiffiMaxResult, analysis: ResponseAnalysis, setter: chess.Color) -> dict[str, Any]:
    return {
        "setter": color_name(setter),
        "responder": color_name(not setter),
        "value": analysis.best_value,
        "best_move": analysis.best,
        "legal": len(analysis.responses),
        "meaningful": analysis.meaningful,
        "reasonable_count": analysis.reasonable_count,
        "trap_count": analysis.trap_count,
        "trap_ratio": analysis.trap_ratio,
        "trap_node": analysis.trap_node,
        "responses": [
            {
                "move": r.move,
                "value": r.value,
                "exact": r.exact,
                "dip": r.dip,
                "rank": r.rank,
                "excluded": r.excluded,
                "in_scope": r.in_scope,
                "reasonable": r.reasonable,
                "trap": r.trap,
            }
            for r in analysis.responses
        ],
        "tree_traps": len(found.traps),
        "analysed_nodes": len(found.analyses),
        "nodes": found.stats.nodes + int(found.extra.get("qnodes", 0)),
    }


def trap_columns(record: Any, setter: chess.Color, root_key: int) -> dict[str, Any]:
    return {
        "root_key": root_key,
        "path": list(record.path),
        "node_fen": record.node,
        "node_ply": len(record.path),
        "setter": color_name(setter),
        "responder": record.responder,
        "best_move": record.best_move,
        "best_value": record.best_value,
        "move": record.move,
        "value": record.value,
        "dip": record.dip,
        "rank": record.rank,
        "refutation": list(record.refutation),
    }


def played_class(response: dict[str, Any], move_played: str) -> tuple[str, dict[str, Any] | None]:
    """What the human's move was at this root: best, trap (fell), reasonable, unreasonable,
    excluded or out_of_scope; and its response entry."""
    entry = next((r for r in response["responses"] if r["move"] == move_played), None)
    if entry is None:
        return "unreasonable", None  # cannot happen for a legal move; kept total for safety
    if move_played == response["best_move"]:
        return "best", entry
    if entry["excluded"]:
        return "excluded", entry
    if entry["trap"]:
        return "trap", entry
    if not entry["reasonable"]:
        return "unreasonable", entry
    if not entry["in_scope"]:
        return "out_of_scope", entry
    return "reasonable", entry


# Columns of a RESPONSES / TRAPS row that belong to one occurrence, not to the position.
OCCURRENCE_COLUMNS = frozenset(
    {
        "chose_trap_move",
        "game_id",
        "ply",
        "move_played",
        "played_class",
        "played_value",
        "played_dip",
        "played_exact",
        "fell",
        "reused",
    }
)


def occurrence_rows(
    result: PositionResult, game_id: str, ply: int, move_played: str, reused: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The RESPONSES row and TRAPS rows of one occurrence of an analysed position."""
    kind, entry = played_class(result.response, move_played)
    choices = result.response.get("choice_moves")
    row = {
        "chose_trap_move": None if choices is None else move_played in result.response["choice_trap_moves"],
        "game_id": game_id,
        "ply": ply,
        "position_key": result.position_key,
        "move_played": move_played,
        "played_class": kind,
        "played_value": entry["value"] if entry else None,
        "played_dip": entry["dip"] if entry else None,
        "played_exact": entry["exact"] if entry else None,
        "reused": reused,
        **result.response,
    }
    traps = []
    for trap in result.traps:
        at_root = not trap["path"]
        traps.append(
            {
                "game_id": game_id,
                "ply": ply,
                **trap,
                "move_played": move_played if at_root else None,
                "fell": (trap["move"] == move_played) if at_root else None,
                "reused": reused,
            }
        )
    return row, traps


@dataclass
class UnitOutcome:
    """What a worker returns for one unit: the results, or the reason no position can be analysed
    any more (an engine that cannot start), which stops the job."""

    game_id: str
    results: list[PositionResult]
    seconds: float
    fatal: str | None = None


class AnalysisWorker:
    """One engine and its transposition table / hash for the whole job (a Ray actor in
    `pipeline.mine.driver`; a plain object in tests). A backend that cannot start is not an
    exception here, which Ray would answer by restarting the actor forever, but a fatal outcome."""

    def __init__(
        self,
        engine: str,
        options: EngineOptions,
        settings: DiffiMaxSettings,
        setter_choices: bool,
        progress: Callable[[int], Any] | None = None,
    ) -> None:
        self.settings = settings
        self.setter_choices = setter_choices
        self.progress = progress
        self.backend: Backend | None = None
        self.startup_error: str | None = None
        try:
            self.backend = open_backend(engine, options)
        except EngineStartError as error:
            self.startup_error = str(error)

    def analyse(self, unit: AnalysisUnit) -> UnitOutcome:
        start = time.perf_counter()
        if self.backend is None:
            return UnitOutcome(unit.game_id, [], 0.0, fatal=self.startup_error)
        on_position = None if self.progress is None else lambda: self.progress(1)  # type: ignore[misc]
        try:
            results = analyse_unit(
                self.backend, unit, self.settings, setter_choices=self.setter_choices, on_position=on_position
            )
        except EngineStartError as error:
            return UnitOutcome(unit.game_id, [], time.perf_counter() - start, fatal=str(error))
        return UnitOutcome(unit.game_id, results, time.perf_counter() - start)

    def describe(self) -> dict[str, Any]:
        return {} if self.backend is None else self.backend.describe()

    def pid(self) -> int:
        return os.getpid()
