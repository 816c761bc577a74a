"""The per-position work of a mining job, as plain functions (no Ray): tests call them directly,
and the Ray workers in `pipeline.mine.actors` wrap them.

A worker judges the occurrences it owns (`pipeline.mine.occurrences`; `analyse_part`) in order,
on its engine and its bounded table of engine answers (`pipeline.mine.table`): the engine work of
a repeated position is served from the table, the human evidence and the verdicts are the
occurrence's own. The rows a judged position becomes are built in `pipeline.mine.rows`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import chess

from pipeline.common.files import MIB
from pipeline.dataset.store import table_of
from pipeline.engines.options import EngineOptions
from pipeline.engines.process import EngineStartError
from pipeline.engines.uci import UciBackend
from pipeline.evals.cache import EvalCache, level_limits
from pipeline.evals.export import CachedEval
from pipeline.human.context import MoverContext
from pipeline.human.maia3 import Maia3Model
from pipeline.judging import HumanEvidence, Judge, KitWorker
from pipeline.mine.occurrences import Occurrence
from pipeline.mine.progress import ProgressReporter
from pipeline.mine.rows import (
    CHOICES_UNKNOWN,
    PartOutcome,
    PositionResult,
    occurrence_rows,
    response_columns,
    settings_columns,
    trap_rows,
)
from pipeline.mine.table import DEFAULT_TABLE_MB, AnalysisEntry, AnalysisTable, TableLines, serve_cached
from schemas.dataset import to_signed64
from schemas.rows import ChoiceColumns, PositionResponse, ResponseRow, TrapRow
from search.chessgame import zobrist
from search.errors import DiffimaxError
from search.judges import JudgeName, JudgeSettings
from search.settings import DiffiMaxSettings, SettingsError


@dataclass(frozen=True)
class Judging:
    """How a job judges its positions: the DiffiMax settings, the judges, the primary judge."""

    settings: DiffiMaxSettings = field(default_factory=DiffiMaxSettings)
    judges: JudgeSettings = field(default_factory=JudgeSettings)
    primary: JudgeName = "practical"
    """Whose verdict the `outcomes` view shows as `trap_node` / `fell`."""
    setter_choices: bool = False


def primary_judge(judges: JudgeSettings, human_evidence: bool) -> JudgeName:
    """The judge `outcomes` shows: practical where there is human evidence (a model or a corpus),
    else the first enabled of model, human, trappy, dip."""
    order: tuple[JudgeName, ...] = ("practical", "model", "human") if human_evidence else ()
    for name in (*order, "trappy", "dip"):
        if name in judges.judges:
            return name
    return sorted(judges.judges)[0]


def analyse_position(
    judge: Judge,
    board: chess.Board,
    judging: Judging,
    *,
    entry: AnalysisEntry | None = None,
    played: str | None = None,
    value_played: bool = True,
    context: MoverContext | None = None,
    key: int | None = None,
    model_probabilities: Mapping[str, float] | None = None,
) -> PositionResult:
    """Judge `board` (with its move stack) with the player who just moved as setter, by `judge` (the
    worker's kit at `judging`'s settings and judges), on the engine's answers kept in `entry` (a
    fresh one when None; the answers it lacks are added to it). The `played` move is valued for the
    analytics when `value_played` (else a judge values it if it needs it). `key` is the position's
    signed Polyglot key when the caller knows it already, and `model_probabilities` the model's
    answer when it asked for a batch. A position whose analysis fails is returned with its error."""
    key = to_signed64(zobrist(board)) if key is None else key
    result = PositionResult(ply=board.ply(), position_key=key)
    setter = not board.turn
    settings, backend = judging.settings, judge.kit.engine()
    lines = TableLines(entry or AnalysisEntry(), backend, board, setter, settings)
    start = time.perf_counter()
    try:
        if not any(board.generate_legal_moves()):
            raise PositionError("no legal reply: the game is over here")
        judgement = judge.lines(
            lines,
            board,
            setter,
            context=context,
            also=() if played is None or not value_played else (played,),
            key=key,
            model_probabilities=model_probabilities,
        )
        common = settings_columns(settings, backend.name)
        choices = CHOICES_UNKNOWN
        if judging.setter_choices:
            try:
                choices = choice_columns(lines, board, settings)
            except EngineStartError:
                raise
            except DiffimaxError as error:
                result.error = f"setter choices: {type(error).__name__}: {error}"
        result.response = PositionResponse(
            **response_columns(judgement, judging.judges, judging.primary, setter), **common, **choices
        )
        result.traps = trap_rows(judgement, board, setter, key, common)
    except EngineStartError:
        raise  # no position can be analysed any more: the job stops (see AnalysisWorker)
    except DiffimaxError as error:  # an engine that failed twice, an impossible position
        result.error = f"{type(error).__name__}: {error}"
    finally:
        result.seconds = time.perf_counter() - start
        result.engine_calls = lines.asked
    return result


class PositionError(DiffimaxError, ValueError):
    """A position that cannot be judged (the game is over there)."""


def choice_columns(lines: TableLines, board: chess.Board, settings: DiffiMaxSettings) -> ChoiceColumns:
    """The side to move as a setter: which of its moves are within the safety margin of its best
    (the visited children of a setter root), and which of those lead to a trap node (by the dip
    judge, in the same tree). Needs depth >= 2, so that the nodes after those moves are analysed."""
    if settings.depth < 2:
        raise SettingsError(f"setter choices need depth >= 2, not {settings.depth}")
    entry = lines.entry
    if entry.choices is None:
        lines.backend.new_unit()
        lines.asked += 1
        lines.changed = True
        found = lines.backend.analyse(board, board.turn, settings)
        children = {a.path[0]: a for a in found.analyses if len(a.path) == 1}
        entry.choices = ChoiceColumns(
            choice_moves=sorted(children),
            choice_trap_moves=sorted(move for move, analysis in children.items() if analysis.trap_node),
        )
    return entry.choices.copy()


class AnalysisWorker(KitWorker):
    """One engine and its bounded table of engine answers for the whole job, with the job's
    human-move model and corpus (a Ray actor in `pipeline.mine.actors`; a plain object in tests).
    A backend that cannot start is a fatal outcome."""

    def __init__(
        self,
        engine: str,
        options: EngineOptions,
        judging: Judging,
        human: HumanEvidence | None = None,
        progress: Callable[[int], Any] | None = None,
        table_mb: float = DEFAULT_TABLE_MB,
        shipped_model: tuple[bytes, str] | None = None,
        evals: str | None = None,
    ) -> None:
        """`shipped_model`: Maia-3's graph as the driver built it (`pipeline.human.maia3.payload`),
        used in place of loading `human.model` here. `evals`: a converted evaluation export
        (`pipeline.evals`) whose deep enough evals stand in for root searches."""
        self.judging = judging
        self.progress = progress
        self.table = AnalysisTable(round(table_mb * MIB))
        shipped = None if shipped_model is None else Maia3Model.from_payload(shipped_model)
        super().__init__(engine, options, human, model=shipped)
        self.judge = Judge(self.kit, judging.settings, judging.judges)
        self.wants_model = bool(judging.judges.judges & {"model", "practical"})
        self.evals: EvalCache | None = None
        if evals is not None and self.startup_error is None:
            try:
                self.evals = EvalCache(evals)
            except DiffimaxError as error:  # told on every part, as an engine that cannot start
                self.startup_error = str(error)
        self.levels = level_limits(self.backend.limits) if isinstance(self.backend, UciBackend) else {}

    def analyse_part(self, occurrences: Sequence[Occurrence] | None) -> PartOutcome:
        """Judge `occurrences` in order; each is looked up in the table by its analysis key."""
        start = time.perf_counter()
        if self.backend is None or self.startup_error is not None:
            return PartOutcome(fatal=self.startup_error)
        outcome = PartOutcome()
        responses: list[ResponseRow] = []
        traps: list[TrapRow] = []
        reporter = None if self.progress is None else ProgressReporter(self.progress)
        boards = [occurrence.board() for occurrence in occurrences or ()]
        predicted = self.predict(occurrences or (), boards, outcome)
        cached = self.cached(occurrences or (), outcome)
        try:
            for index, occurrence in enumerate(occurrences or ()):
                evals = cached.get(occurrence.position_key)
                self.analyse_one(occurrence, boards[index], predicted[index], outcome, responses, traps, evals)
                if reporter is not None:
                    reporter.position()
        except EngineStartError as error:
            return PartOutcome(seconds=time.perf_counter() - start, fatal=str(error))
        finally:
            if reporter is not None:
                reporter.flush()
        outcome.responses = table_of("responses", responses)
        outcome.traps = table_of("traps", traps)
        outcome.seconds = time.perf_counter() - start
        return outcome

    def predict(
        self, occurrences: Sequence[Occurrence], boards: Sequence[chess.Board], outcome: PartOutcome
    ) -> Sequence[dict[str, float] | None]:
        """The human-move model's answer at every occurrence, asked in one batch (a network runs a
        batch in one call); None at each where no judge reads the model."""
        if self.model is None or not self.wants_model or not occurrences:
            return [None] * len(occurrences)
        start = time.perf_counter()
        found = self.model.batch_probabilities(
            [(board, occurrence.context) for board, occurrence in zip(boards, occurrences, strict=True)]
        )
        outcome.engine_seconds += time.perf_counter() - start
        return found

    def cached(self, occurrences: Sequence[Occurrence], outcome: PartOutcome) -> dict[int, list[CachedEval]]:
        """The cached evals of the part's positions that the table does not hold, by position key,
        looked up in one read of the cache."""
        if self.evals is None or not self.levels:
            return {}
        start = time.perf_counter()
        keys = {o.position_key for o in occurrences if o.key not in self.table.entries}
        found = self.evals.lookup(keys)
        outcome.engine_seconds += time.perf_counter() - start
        return found

    def fresh_entry(self, board: chess.Board, evals: list[CachedEval] | None, outcome: PartOutcome) -> AnalysisEntry:
        """A new table entry for `board`, holding the root searches its cached `evals` stand in for
        (counted in `outcome`)."""
        entry = AnalysisEntry()
        if evals:
            outcome.evals_found += 1
            outcome.evals_served += serve_cached(entry, board, evals, self.levels) > 0
        return entry

    def analyse_one(
        self,
        occurrence: Occurrence,
        board: chess.Board,
        predicted: dict[str, float] | None,
        outcome: PartOutcome,
        responses: list[ResponseRow],
        traps: list[TrapRow],
        evals: list[CachedEval] | None = None,
    ) -> None:
        """Judge one occurrence on its table entry; a fresh entry first takes the root searches
        its cached `evals` stand in for."""
        assert self.backend is not None
        table = self.table
        entry = table.get(occurrence.key)
        reused = entry is not None
        if entry is None:
            entry = self.fresh_entry(board, evals, outcome)
        result = analyse_position(
            self.judge,
            board,
            self.judging,
            entry=entry,
            played=occurrence.played,
            value_played=not occurrence.next_judged,
            context=occurrence.context,
            key=occurrence.position_key,
            model_probabilities=predicted,
        )
        if result.engine_calls or not reused:
            table.put(occurrence.key, entry)
        outcome.engine_calls += result.engine_calls
        outcome.engine_seconds += result.seconds
        if result.error is not None:
            outcome.failures.append((occurrence.seq, occurrence.game_id, occurrence.ply, result.error))
            return
        outcome.reused += reused
        outcome.analysed += not reused
        row, trap_rows = occurrence_rows(
            result, occurrence.game_id, occurrence.ply, occurrence.played or "", reused, occurrence.key
        )
        responses.append(row)
        outcome.response_seq.append(occurrence.seq)
        traps.extend(trap_rows)
        outcome.trap_seq.extend([occurrence.seq] * len(trap_rows))

    def analyse(self, occurrences: Sequence[Occurrence]) -> list[PositionResult]:
        """The judged results of `occurrences` (no rows, no table statistics; the root searches the
        evaluation cache holds taken from it): for tests, tools and the plan."""
        assert self.backend is not None, self.startup_error
        found = []
        counted = PartOutcome()  # the cache's counts, which these results do not carry
        cached = self.cached(occurrences, counted)
        for occurrence in occurrences:
            board = occurrence.board()
            entry = self.table.get(occurrence.key)
            if entry is None:
                entry = self.fresh_entry(board, cached.get(occurrence.position_key), counted)
            result = analyse_position(
                self.judge,
                board,
                self.judging,
                entry=entry,
                played=occurrence.played,
                context=occurrence.context,
                key=occurrence.position_key,
            )
            self.table.put(occurrence.key, entry)
            result.game_id = occurrence.game_id
            found.append(result)
        return found
