"""The per-position work of a mining job, as plain functions (no Ray): tests call them directly,
and the Ray workers in `pipeline.mine.actors` wrap them.

An *occurrence* is one position of one game to judge, with what a search can see of the game (the
moves since its last irreversible move) and who is to move there. A worker judges the
occurrences it owns (`analyse_part`) in order, on its engine and its bounded table of engine
answers (`pipeline.mine.table`): the engine work of a repeated position is served from the table,
the human evidence and the verdicts are the occurrence's own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import chess
import pyarrow as pa

from pipeline.dataset.store import table_of
from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.engines.process import EngineStartError
from pipeline.human.context import MoverContext, Pool, pool_of
from pipeline.human.corpus import Corpus
from pipeline.ingest.games import Selected
from pipeline.judging import Judgement, MoveModel, judge_lines, load_model
from pipeline.mine.table import DEFAULT_TABLE_MB, MIB, AnalysisEntry, AnalysisTable, TableLines, analysis_key
from schemas.dataset import to_signed64
from search.backend import Backend
from search.chessgame import zobrist
from search.errors import DiffimaxError
from search.judges import JUDGES, Judge, JudgeSettings, win_drop
from search.settings import DiffiMaxSettings, SettingsError
from search.values import Value

# Moves of history an occurrence carries at least (the human-move model reads the last two moves),
# and at most (the fifty-move rule: a search sees no further back than 100 plies).
MIN_HISTORY = 2
MAX_HISTORY = 100


# A position's pieces, side to move, castling rights, en passant square and clocks as plain ints:
# python-chess's public board fields, without a move stack. Written and read back in microseconds,
# where a FEN costs a hundred or more each way (most of an occurrence's cost with a cheap engine).
PackedBoard = tuple[int, int, int, int, int, int, int, int, int, bool, int, int | None, int, int]


def pack_board(board: chess.Board) -> PackedBoard:
    return (
        board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings,
        board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK], board.promoted, board.turn,
        board.castling_rights, board.ep_square, board.halfmove_clock, board.fullmove_number,
    )  # fmt: skip


def unpack_board(packed: PackedBoard) -> chess.Board:
    board = chess.Board.empty()
    (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings, white, black,
     board.promoted, board.turn, board.castling_rights, board.ep_square, board.halfmove_clock,
     board.fullmove_number) = packed  # fmt: skip
    board.occupied_co[chess.WHITE] = white
    board.occupied_co[chess.BLACK] = black
    board.occupied = white | black
    return board


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One position of one game to judge, with the player who just moved as setter."""

    seq: int
    """Its place among its shard's positions (rows are written in this order)."""
    game_id: str
    ply: int
    position_key: int
    """Signed Polyglot key of the position."""
    key: int
    """Its analysis key (`pipeline.mine.table.analysis_key`): what the worker's table is keyed by."""
    base: PackedBoard
    """The position `len(moves)` plies earlier (`pack_board`)."""
    moves: tuple[str, ...]
    """The UCI moves from `base_fen` to the position: every move since the last irreversible one
    (which a search needs for repetitions), and at least the last two (the human-move model)."""
    played: str | None
    """The move the human played here."""
    context: MoverContext | None = None
    """The responder (who is to move) and their clock."""
    next_judged: bool = False
    """Whether the position after the played move is judged too (in the same shard): its node's
    value is then the played move's, and no search of the move is needed here."""

    def board(self) -> chess.Board:
        board = unpack_board(self.base)
        for move in self.moves:
            board.push(chess.Move.from_uci(move))
        return board


def occurrences_of(selected: Selected, first_seq: int = 0, pool_override: Pool | None = None) -> Iterator[Occurrence]:
    """The occurrences of a selected game's positions, in ply order (`seq` from `first_seq`); the
    mover's rating pool from the game's Site / Link tags, or `pool_override`."""
    game = selected.game
    base, increment = game["base_seconds"], game["increment_seconds"]
    pool = pool_of({"Site": game["site"], "Link": game["link"]}, pool_override)
    wanted = {
        row["ply"]: (
            MoverContext(row["mover_rating"], row["clock_seconds"], base, increment, pool),
            row["position_key"],
        )
        for row in selected.positions
    }
    return game_occurrences(game["game_id"], selected.moves, wanted, start_fen=selected.start_fen, first_seq=first_seq)


def game_occurrences(
    game_id: str,
    moves: Sequence[str],
    plies: Mapping[int, tuple[MoverContext | None, int | None]] | Sequence[int],
    *,
    start_fen: str | None = None,
    first_seq: int = 0,
) -> Iterator[Occurrence]:
    """The occurrences of a game (its UCI `moves` from `start_fen`, None for the standard start) at
    `plies`, in ply order: a ply's mover context and Polyglot key when known (the key is computed
    otherwise). The move played at a ply is the game's next move (None after the last)."""
    wanted = {ply: (None, None) for ply in plies} if not isinstance(plies, Mapping) else dict(plies)
    board = chess.Board(start_fen) if start_fen else chess.Board()
    # The positions an occurrence may start from: the last two, and the one after the last
    # irreversible move.
    kept: dict[int, PackedBoard] = {}
    zero = 0  # the ply of the position after the last irreversible move
    recent: list[int] = []  # Polyglot keys of the positions since then
    seq = first_seq
    last = max(wanted, default=-1)
    for ply in range(last + 1):
        if board.halfmove_clock == 0:
            zero = ply
        kept[ply] = pack_board(board)
        for old in [old for old in kept if old < ply - 2 and old != zero]:
            del kept[old]
        known = wanted.get(ply)
        position_key = None if known is None else known[1]
        if known is not None:
            context = known[0]
            if position_key is None:
                position_key = to_signed64(zobrist(board))
            history = min(ply, MAX_HISTORY, max(board.halfmove_clock, MIN_HISTORY))
            base = ply - history
            if base not in kept:  # further back than the last irreversible move (a FEN's own clock)
                base = min(kept)
                history = ply - base
            key = analysis_key(position_key, board.halfmove_clock, recent[-MAX_HISTORY:])
            played = moves[ply] if ply < len(moves) else None
            since = tuple(moves[ply - history : ply])
            then = ply + 1 in wanted
            yield Occurrence(seq, game_id, ply, position_key, key, kept[base], since, played, context, then)
            seq += 1
        if ply >= last:
            break
        move = chess.Move.from_uci(moves[ply])
        if board.is_zeroing(move):
            recent.clear()
        else:
            recent.append(to_signed64(zobrist(board)) if position_key is None else position_key)
        board.push(move)


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
    """One judged occurrence: the columns of its rows that do not depend on the game it came from."""

    ply: int
    position_key: int  # signed 64-bit Zobrist
    game_id: str = ""  # the occurrence that was analysed; repeats elsewhere reuse this result
    error: str | None = None
    response: dict[str, Any] = field(default_factory=dict)  # RESPONSES columns common to repeats
    traps: list[dict[str, Any]] = field(default_factory=list)  # TRAPS columns common to repeats
    seconds: float = 0.0
    engine_calls: int = 0  # engine searches this analysis asked for (0: every answer came from the table)


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


def analyse_position(
    backend: Backend,
    board: chess.Board,
    judging: Judging,
    *,
    entry: AnalysisEntry | None = None,
    played: str | None = None,
    value_played: bool = True,
    model: MoveModel | None = None,
    corpus: Corpus | None = None,
    context: MoverContext | None = None,
    key: int | None = None,
) -> PositionResult:
    """Judge `board` (with its move stack) with the player who just moved as setter, on the engine's
    answers kept in `entry` (a fresh one when None; the answers it lacks are added to it). The
    `played` move is valued for the analytics when `value_played` (else a judge values it if it
    needs it). `key` is the position's signed Polyglot key when the caller knows it already. A
    position whose analysis fails is returned with its error."""
    key = to_signed64(zobrist(board)) if key is None else key
    result = PositionResult(ply=board.ply(), position_key=key)
    setter = not board.turn
    settings = judging.settings
    lines = TableLines(entry or AnalysisEntry(), backend, board, setter, settings)
    start = time.perf_counter()
    try:
        if not any(board.generate_legal_moves()):
            raise PositionError("no legal reply: the game is over here")
        judgement = judge_lines(
            lines, board, setter, settings, judging.judges, model=model, corpus=corpus, context=context,
            also=() if played is None or not value_played else (played,), key=key,
        )  # fmt: skip
        common = settings_columns(settings, backend.name)
        result.response = response_columns(judgement, judging, setter) | common | CHOICES_UNKNOWN
        if judging.setter_choices:
            try:
                result.response |= choice_columns(lines, board, settings)
            except EngineStartError:
                raise
            except DiffimaxError as error:
                result.error = f"setter choices: {type(error).__name__}: {error}"
        result.traps = [row | common for row in trap_rows(judgement, board, setter, key)]
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


# The choice columns of a position whose choices were not analysed.
CHOICES_UNKNOWN: dict[str, Any] = {"choice_moves": None, "choice_trap_moves": None}


def choice_columns(lines: TableLines, board: chess.Board, settings: DiffiMaxSettings) -> dict[str, Any]:
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
        entry.choices = {
            "choice_moves": sorted(children),
            "choice_trap_moves": sorted(move for move, analysis in children.items() if analysis.trap_node),
        }
    return dict(entry.choices)


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
        measured = evidence.measured(reply)  # (value, the node's value at the same level)
        value: Value | None = None if seeded is None else seeded.value
        base = evidence.best_value
        if measured is not None:
            value, base = measured
        items.append(
            {
                "move": reply.move,
                "value": value,
                "exact": None if value is None else measured is not None,
                "dip": None if value is None else value - base,
                "win_drop": None if value is None else win_drop(base, value),
                "probe_value": reply.probe_value,
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
    base_columns = {"root_key": root_key, "setter": color_name(setter), "responder": color_name(not setter)}
    rows = []
    fen = board.fen() if named else ""
    for reply in evidence.replies:
        measured = evidence.measured(reply)
        if reply.move not in named or measured is None:
            continue
        value, base = measured
        rows.append(
            base_columns
            | {
                "path": [],
                "node_fen": fen,
                "node_ply": 0,
                "best_move": evidence.best,
                "best_value": base,
                "move": reply.move,
                "value": value,
                "dip": value - base,
                "win_drop": win_drop(base, value),
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
            base_columns
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
class PartOutcome:
    """What a worker returns for the occurrences of one shard that it owns: their rows as Arrow
    tables (each row with its occurrence's `seq`, so that the shard's writer restores the input
    order), the occurrences whose analysis failed, and what the work cost; or the reason no
    position can be analysed any more (an engine that cannot start), which stops the job."""

    responses: pa.Table | None = None
    response_seq: list[int] = field(default_factory=list)
    traps: pa.Table | None = None
    trap_seq: list[int] = field(default_factory=list)
    failures: list[tuple[int, str, int, str]] = field(default_factory=list)
    """(seq, game id, ply, reason) of each occurrence whose analysis failed."""
    analysed: int = 0
    """Occurrences judged on a fresh table entry (their engine work done here)."""
    reused: int = 0
    """Occurrences whose entry the table held (what they still lacked, if anything, was searched)."""
    engine_calls: int = 0
    seconds: float = 0.0
    engine_seconds: float = 0.0
    """Seconds of the judged analyses (engine, model, corpus), as the manifest sums them."""
    fatal: str | None = None


class AnalysisWorker:
    """One engine and its bounded table of engine answers for the whole job, with the job's
    human-move model and corpus (a Ray actor in `pipeline.mine.actors`; a plain object in tests).
    A backend that cannot start is not an exception here, which Ray would answer by restarting the
    actor forever, but a fatal outcome."""

    def __init__(
        self,
        engine: str,
        options: EngineOptions,
        judging: Judging,
        human: HumanEvidence | None = None,
        progress: Callable[[int], Any] | None = None,
        table_mb: float = DEFAULT_TABLE_MB,
    ) -> None:
        self.judging = judging
        self.progress = progress
        self.backend: Backend | None = None
        self.startup_error: str | None = None
        self.table = AnalysisTable(round(table_mb * MIB))
        human = human or HumanEvidence()
        self.model = load_model(human.model)
        self.corpus = Corpus.load(human.corpus) if human.corpus else None
        try:
            self.backend = open_backend(engine, options)
        except EngineStartError as error:
            self.startup_error = str(error)

    def analyse_part(self, occurrences: Sequence[Occurrence] | None) -> PartOutcome:
        """Judge `occurrences` in order; each is looked up in the table by its analysis key."""
        start = time.perf_counter()
        if self.backend is None:
            return PartOutcome(fatal=self.startup_error)
        outcome = PartOutcome()
        responses: list[dict[str, Any]] = []
        traps: list[dict[str, Any]] = []
        reporter = None if self.progress is None else ProgressReporter(self.progress)
        try:
            for occurrence in occurrences or ():
                self.analyse_one(occurrence, outcome, responses, traps)
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

    def analyse_one(
        self, occurrence: Occurrence, outcome: PartOutcome, responses: list[dict[str, Any]], traps: list[dict[str, Any]]
    ) -> None:
        assert self.backend is not None
        table = self.table
        entry = table.get(occurrence.key)
        reused = entry is not None
        entry = entry or AnalysisEntry()
        result = analyse_position(
            self.backend, occurrence.board(), self.judging, entry=entry, played=occurrence.played,
            value_played=not occurrence.next_judged, model=self.model, corpus=self.corpus, context=occurrence.context,
            key=occurrence.position_key,
        )  # fmt: skip
        if result.engine_calls or not reused:
            table.put(occurrence.key, entry)
        outcome.engine_calls += result.engine_calls
        outcome.engine_seconds += result.seconds
        if result.error is not None:
            outcome.failures.append((occurrence.seq, occurrence.game_id, occurrence.ply, result.error))
            return
        outcome.reused += reused
        outcome.analysed += not reused
        row, trap_rows = occurrence_rows(result, occurrence.game_id, occurrence.ply, occurrence.played or "", reused)
        row["analysis_key"] = occurrence.key
        responses.append(row)
        outcome.response_seq.append(occurrence.seq)
        traps.extend(trap_rows)
        outcome.trap_seq.extend([occurrence.seq] * len(trap_rows))

    def analyse(self, occurrences: Sequence[Occurrence]) -> list[PositionResult]:
        """The judged results of `occurrences` (no rows, no table statistics): for tests and tools."""
        assert self.backend is not None, self.startup_error
        found = []
        for occurrence in occurrences:
            entry = self.table.get(occurrence.key) or AnalysisEntry()
            result = analyse_position(
                self.backend, occurrence.board(), self.judging, entry=entry, played=occurrence.played,
                model=self.model, corpus=self.corpus, context=occurrence.context, key=occurrence.position_key,
            )  # fmt: skip
            self.table.put(occurrence.key, entry)
            result.game_id = occurrence.game_id
            found.append(result)
        return found

    def describe(self) -> dict[str, Any]:
        return {} if self.backend is None else self.backend.describe()

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
        if self.model is not None:
            self.model.close()
