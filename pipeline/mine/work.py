"""The per-position work of a mining job, as plain functions (no Ray): tests call them directly,
and the Ray workers in `pipeline.mine.driver` wrap them.

A *unit* is one game's positions that need an analysis, in ply order, so consecutive positions
of a game reach the same engine with its table or hash warm. A unit starts from a clean engine
state, which makes every result independent of which worker ran it and what it ran before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import chess

from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.engines.process import EngineStartError
from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.judging import Judgement, MoveModel, judge_position, load_model
from schemas.dataset import to_signed64
from search.backend import Backend
from search.chessgame import zobrist
from search.errors import DiffimaxError
from search.judges import JUDGES, Judge, JudgeSettings, win_drop
from search.settings import DiffiMaxSettings, SettingsError


@dataclass(frozen=True)
class AnalysisUnit:
    game_id: str
    start_fen: str | None  # None: the standard start position
    moves: tuple[str, ...]  # UCI moves of the game, at least up to the last analysed ply
    plies: tuple[int, ...]  # positions to analyse (half-moves played before each), ascending
    contexts: tuple[MoverContext, ...] = ()  # the responder at each of `plies` (empty: unknown)
    keys: tuple[int, ...] = ()  # the signed position key at each of `plies`, from ingest (empty: computed here)


@dataclass(frozen=True)
class HumanEvidence:
    """Where a job's human evidence comes from (paths, so that workers load their own copies)."""

    model: str | None = None
    """A human-move model file, `default` for the bundled one, or None."""
    corpus: str | None = None
    """A mined dataset or corpus file of what humans played where, or None."""


@dataclass(frozen=True)
class Judging:
    """How a job judges its positions: the DiffiMax settings, the judges, the primary judge."""

    settings: DiffiMaxSettings = field(default_factory=DiffiMaxSettings)
    judges: JudgeSettings = field(default_factory=JudgeSettings)
    primary: Judge = "practical"
    """Whose verdict the `outcomes` view shows as `trap_node` / `fell`."""
    setter_choices: bool = False


def primary_judge(judges: JudgeSettings, human_evidence: bool) -> Judge:
    """The judge `outcomes` shows: practical where there is human evidence (a model or a corpus),
    else the first enabled of model, human, trappy, dip."""
    order: tuple[Judge, ...] = ("practical", "model", "human") if human_evidence else ()
    for name in (*order, "trappy", "dip"):
        if name in judges.judges:
            return name
    return sorted(judges.judges)[0]


@dataclass
class PositionResult:
    """One analysed position, independent of the game it came from (so repeats can reuse it)."""

    ply: int
    position_key: int  # signed 64-bit Zobrist
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
    judging: Judging,
    *,
    model: MoveModel | None = None,
    corpus: Corpus | None = None,
    on_position: Callable[[], None] | None = None,
) -> list[PositionResult]:
    """Replay the game and judge each requested position with the player who just moved as
    setter. A position whose analysis fails is returned with its error; the rest go on.
    `on_position` is called after each analysed position (live progress)."""
    reset = getattr(backend, "new_unit", None)
    if reset is not None:
        reset()
    board = chess.Board(unit.start_fen) if unit.start_fen else chess.Board()
    contexts = dict(zip(unit.plies, unit.contexts, strict=True)) if unit.contexts else {}
    keys = dict(zip(unit.plies, unit.keys, strict=True)) if unit.keys else {}
    wanted = set(unit.plies)
    results: list[PositionResult] = []
    last = max(unit.plies, default=-1)
    for ply in range(last + 1):
        if ply in wanted:
            played = unit.moves[ply] if ply < len(unit.moves) else None
            results.append(
                analyse_position(
                    backend,
                    board,
                    judging,
                    played=played,
                    model=model,
                    corpus=corpus,
                    context=contexts.get(ply),
                    key=keys.get(ply),
                )
            )
            if on_position is not None:
                on_position()
        if ply < last:
            board.push(chess.Move.from_uci(unit.moves[ply]))
    for result, ply in zip(results, sorted(wanted), strict=True):
        result.ply = ply
        result.game_id = unit.game_id
    return results


def analyse_position(
    backend: Backend,
    board: chess.Board,
    judging: Judging,
    *,
    played: str | None = None,
    model: MoveModel | None = None,
    corpus: Corpus | None = None,
    context: MoverContext | None = None,
    key: int | None = None,
) -> PositionResult:
    """`key` is the position's signed Polyglot key when the caller knows it already."""
    key = to_signed64(zobrist(board)) if key is None else key
    result = PositionResult(ply=board.ply(), position_key=key)
    setter = not board.turn
    settings = judging.settings
    start = time.perf_counter()
    try:
        if not any(board.generate_legal_moves()):
            raise PositionError("no legal reply: the game is over here")
        judgement = judge_position(
            backend, board, setter, settings, judging.judges, model=model, corpus=corpus, context=context,
            also=() if played is None else (played,), key=key,
        )  # fmt: skip
    except EngineStartError:
        raise  # no position can be analysed any more: the job stops (see AnalysisWorker)
    except DiffimaxError as error:  # an engine that failed twice, an impossible position
        result.error = f"{type(error).__name__}: {error}"
        return result
    finally:
        result.seconds = time.perf_counter() - start
    common = settings_columns(settings, backend.name)
    result.response = response_columns(judgement, judging, setter) | common | CHOICES_UNKNOWN
    if judging.setter_choices:
        try:
            result.response |= choice_columns(backend, board, settings)
        except EngineStartError:
            raise
        except DiffimaxError as error:
            result.error = f"setter choices: {type(error).__name__}: {error}"
    result.traps = [row | common for row in trap_rows(judgement, board, setter, key)]
    return result


class PositionError(DiffimaxError, ValueError):
    """A position that cannot be judged (the game is over there)."""


# The choice columns of a position whose choices were not analysed.
CHOICES_UNKNOWN: dict[str, Any] = {"choice_moves": None, "choice_trap_moves": None}


def choice_columns(backend: Backend, board: chess.Board, settings: DiffiMaxSettings) -> dict[str, Any]:
    """The side to move as a setter: which of its moves are within the safety margin of its best
    (the visited children of a setter root), and which of those lead to a trap node (by the dip
    judge, in the same tree). Needs depth >= 2, so that the nodes after those moves are analysed."""
    if settings.depth < 2:
        raise SettingsError(f"setter choices need depth >= 2, not {settings.depth}")
    found = backend.analyse(board, board.turn, settings)
    children = {a.path[0]: a for a in found.analyses if len(a.path) == 1}
    return {
        "choice_moves": sorted(children),
        "choice_trap_moves": sorted(move for move, analysis in children.items() if analysis.trap_node),
    }


def response_columns(judgement: Judgement, judging: Judging, setter: chess.Color) -> dict[str, Any]:
    """The RESPONSES columns of a judged position that every occurrence shares."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    seed = judgement.seed
    analysis = judgement.root_analysis
    by_move = {} if analysis is None else {r.move: r for r in analysis.responses}
    items = []
    for reply in evidence.replies:
        seeded = by_move.get(reply.move)
        exact_value = reply.deep_value
        value = exact_value if exact_value is not None else (None if seeded is None else seeded.value)
        drop = None if value is None else win_drop(evidence.best_value, value)
        items.append(
            {
                "move": reply.move,
                "value": value,
                "exact": None if value is None else exact_value is not None,
                "dip": None if value is None else value - evidence.best_value,
                "win_drop": drop,
                "deeper_value": reply.deeper_value,
                "shallow_value": reply.shallow_value,
                "shallow_rank": reply.shallow_rank,
                "model_p": reply.model_p,
                "corpus_count": reply.corpus_count,
                "excluded": reply.excluded,
                "rank": None if seeded is None else seeded.rank,
                "in_scope": None if seeded is None else seeded.in_scope,
                "reasonable": None if seeded is None else seeded.reasonable,
                **verdict_columns(verdicts, reply.move),
            }
        )
    items.sort(key=lambda item: (item["value"] is None, item["value"] or 0, item["move"]))
    columns: dict[str, Any] = {
        "setter": color_name(setter),
        "responder": color_name(not setter),
        "value": evidence.best_value,
        "best_move": evidence.best,
        "legal": len(evidence.replies),
        "meaningful": evidence.meaningful(),
        "corpus_games": evidence.corpus_games,
        "judges": sorted(judging.judges.judges),
        "primary_judge": judging.primary,
        "reasonable_count": None if analysis is None else analysis.reasonable_count,
        "trap_ratio": None if analysis is None else analysis.trap_ratio,
        "tree_traps": None if seed is None else len(seed.traps),
        "analysed_nodes": None if seed is None else len(seed.analyses),
        "responses": items,
        "nodes": sum(judgement.nodes.values()),
    }
    for name in JUDGES:
        found = verdicts.get(name)
        columns[f"trap_node_{name}"] = None if found is None else bool(found)
        columns[f"trap_count_{name}"] = None if found is None else len(found)
    return columns


def trap_rows(judgement: Judgement, board: chess.Board, setter: chess.Color, root_key: int) -> list[dict[str, Any]]:
    """The TRAPS rows of a judged position: every root reply some judge names (with each judge's
    verdict), and the dip judge's trap records deeper in its tree."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    seed = judgement.seed
    analysis = judgement.root_analysis
    ranks = {} if analysis is None else {r.move: r.alternative_rank for r in analysis.responses}
    named = set().union(*verdicts.values()) if verdicts else set()
    base = {"root_key": root_key, "setter": color_name(setter), "responder": color_name(not setter)}
    rows = []
    fen = board.fen() if named else ""
    for reply in evidence.replies:
        if reply.move not in named or reply.deep_value is None:
            continue
        rows.append(
            base
            | {
                "path": [],
                "node_fen": fen,
                "node_ply": 0,
                "best_move": evidence.best,
                "best_value": evidence.best_value,
                "move": reply.move,
                "value": reply.deep_value,
                "dip": reply.deep_value - evidence.best_value,
                "win_drop": win_drop(evidence.best_value, reply.deep_value),
                "rank": ranks.get(reply.move),
                "refutation": list(judgement.lines.get(reply.move, ())),
                "model_p": reply.model_p,
                "shallow_rank": reply.shallow_rank,
                "corpus_count": reply.corpus_count,
                **verdict_columns(verdicts, reply.move),
            }
        )
    for record in [] if seed is None else seed.traps:
        if not record.path:
            continue  # the root's dip candidates are the rows above
        rows.append(
            base
            | {
                "path": list(record.path),
                "node_fen": record.node,
                "node_ply": len(record.path),
                "best_move": record.best_move,
                "best_value": record.best_value,
                "move": record.move,
                "value": record.value,
                "dip": record.dip,
                "win_drop": win_drop(record.best_value, record.value),
                "rank": record.rank,
                "refutation": list(record.refutation),
                "model_p": None,
                "shallow_rank": None,
                "corpus_count": None,
                **{f"by_{name}": (True if name == "dip" else None) for name in JUDGES},
                "responder": record.responder,
            }
        )
    return rows


def verdict_columns(verdicts: Mapping[Judge, frozenset[str]], move: str) -> dict[str, bool | None]:
    """`by_<judge>`: whether each judge names `move` (None where the judge gave no verdict)."""
    return {f"by_{name}": (move in verdicts[name]) if name in verdicts else None for name in JUDGES}


def played_class(response: dict[str, Any], move_played: str) -> tuple[str | None, dict[str, Any] | None]:
    """What the human's move was at this root by the dip judge's classes (best, trap, reasonable,
    unreasonable, excluded, out_of_scope; None without the dip judge), and its response entry."""
    entry = next((r for r in response["responses"] if r["move"] == move_played), None)
    if "dip" not in response["judges"] or entry is None:
        return None, entry
    if move_played == response["best_move"]:
        return "best", entry
    if entry["excluded"]:
        return "excluded", entry
    if entry["by_dip"]:
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
        "played_win_drop",
        "played_model_p",
        "played_excluded",
        *(f"fell_{name}" for name in JUDGES),
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
        "played_value": None if entry is None else entry["value"],
        "played_dip": None if entry is None else entry["dip"],
        "played_exact": None if entry is None else entry["exact"],
        "played_win_drop": None if entry is None else entry["win_drop"],
        "played_model_p": None if entry is None else entry["model_p"],
        "played_excluded": None if entry is None else entry["excluded"],
        **{f"fell_{name}": None if entry is None else entry[f"by_{name}"] for name in JUDGES},
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


# How often a worker tells the job's progress about finished positions: a call per position (a Ray
# actor call, ~0.5 ms) cost as much as the material backend's whole analysis of one; an engine
# that takes longer than this per position is still reported position by position.
PROGRESS_INTERVAL = 0.25


class ProgressReporter:
    """Counts finished positions and tells `progress` at most every `PROGRESS_INTERVAL` seconds,
    and what is left when the unit ends (`flush`)."""

    def __init__(self, progress: Callable[[int], Any]) -> None:
        self.progress = progress
        self.pending = 0
        self.last = time.monotonic()

    def position(self) -> None:
        self.pending += 1
        now = time.monotonic()
        if now - self.last >= PROGRESS_INTERVAL:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        if self.pending:
            self.progress(self.pending)
            self.pending = 0
        self.last = time.monotonic() if now is None else now


@dataclass
class UnitOutcome:
    """What a worker returns for one unit: the results, or the reason no position can be analysed
    any more (an engine that cannot start), which stops the job."""

    game_id: str
    results: list[PositionResult]
    seconds: float
    fatal: str | None = None


class AnalysisWorker:
    """One engine and its transposition table / hash for the whole job, with the job's human-move
    model and corpus (a Ray actor in `pipeline.mine.driver`; a plain object in tests). A backend
    that cannot start is not an exception here, which Ray would answer by restarting the actor
    forever, but a fatal outcome."""

    def __init__(
        self,
        engine: str,
        options: EngineOptions,
        judging: Judging,
        human: HumanEvidence | None = None,
        progress: Callable[[int], Any] | None = None,
    ) -> None:
        self.judging = judging
        self.progress = progress
        self.backend: Backend | None = None
        self.startup_error: str | None = None
        human = human or HumanEvidence()
        self.model = load_model(human.model)
        self.corpus = Corpus.load(human.corpus) if human.corpus else None
        try:
            self.backend = open_backend(engine, options)
        except EngineStartError as error:
            self.startup_error = str(error)

    def analyse(self, unit: AnalysisUnit) -> UnitOutcome:
        start = time.perf_counter()
        if self.backend is None:
            return UnitOutcome(unit.game_id, [], 0.0, fatal=self.startup_error)
        reporter = None if self.progress is None else ProgressReporter(self.progress)
        try:
            results = analyse_unit(
                self.backend, unit, self.judging, model=self.model, corpus=self.corpus,
                on_position=None if reporter is None else reporter.position,
            )  # fmt: skip
        except EngineStartError as error:
            return UnitOutcome(unit.game_id, [], time.perf_counter() - start, fatal=str(error))
        finally:
            if reporter is not None:
                reporter.flush()
        return UnitOutcome(unit.game_id, results, time.perf_counter() - start)

    def describe(self) -> dict[str, Any]:
        return {} if self.backend is None else self.backend.describe()

    def pid(self) -> int:
        return os.getpid()
