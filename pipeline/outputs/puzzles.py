"""`diffimax puzzles`: engine-verified puzzles from a mined trap dataset, in the Lichess format.

Two kinds, both written as Lichess puzzle rows (FEN is the position *before* the opponent's
move, `Moves[0]` is that move, then the solver's moves alternate with the forced replies, so the
solver's moves are the odd indices of `Moves`):

- *punish*: a responder fell into a trap in a real game. FEN is the root before the trap move,
  `Moves` = the trap move, then the setter's refutation (mined), trimmed.
- *set*: the setter's trap-setting move. FEN is the position two plies before the root,
  `Moves` = the opponent's move there, the setting move, the trap reply (the one the human played
  if they fell, else the deepest dip), then its refutation, trimmed. The solver finds the setting
  move and, after the trap reply, the punishment.

Every candidate is replayed (legal moves only) and checked by a UCI engine the way Lichess's
generator checks its puzzles: at each solver move, MultiPV 2 at a fixed node count, one thread,
hash cleared per puzzle; the move must be the engine's best and its win chances must beat the
second best's by `margin` (a mate in one also passes when the best non-mate keeps at most
`MATE_IN_ONE_SECOND_MAX`). A failing first solver move (and a failing setting move) drops the
candidate with a counted reason; a failing later solver move, or a defender reply the engine does
not expect, ends the solution at the solver move before it. Repeated puzzles (same position for the
solver, same solution) are verified once and written once, with the games they came from.

The engine is the project's one UCI engine module (`pipeline.engines.process`). Candidates are
verified serially on the driver (`workers=1`) or on a pool of Ray actors, one engine each, in
order-preserving batches; the verdicts are taken back in the serial order and the `limit` cut is
applied to them there, so the output is the same whatever the number of workers.

Everything taken from the PGN headers (names, event, date, opening, site) is untrusted: it is
stripped of control characters, and escaped or quoted for the format it is written into, by
`pipeline.outputs.sanitize` and the HTML builder `pipeline.outputs.html`. The SQL that reads the
candidates is in `schemas/puzzles.sql`.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import math
import os
import re
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import chess
import chess.engine
import chess.pgn
import chess.svg
import ray
import ray.exceptions

from pipeline.dataset.duck import connect
from pipeline.dataset.sql import query
from pipeline.engines.process import DEFAULT_TIMEOUT, EngineError, EngineStartError, UciEngine, check_engine
from pipeline.evaluate.stats import wilson
from pipeline.outputs.html import Html, document, join, tag
from pipeline.outputs.sanitize import clean_text, pgn_value, safe_url, spreadsheet_safe
from search.errors import DiffimaxError

PuzzleKind = Literal["punish", "set"]
KindChoice = Literal["punish", "set", "both"]
OutputFormat = Literal["csv", "pgn", "html"]
# Why a candidate was not written. See `DROP_REASONS` for each one's meaning.
DropReason = Literal["history_missing", "screened", "illegal", "empty_line", "not_best", "not_unique"]

KINDS: tuple[PuzzleKind, ...] = ("punish", "set")
FORMATS: tuple[OutputFormat, ...] = ("csv", "pgn", "html")
DROP_REASONS: dict[DropReason, str] = {
    "history_missing": "set: the two plies before the root are not in the dataset (outside --plies)",
    "screened": "set: the miner itself rated another move within SET_SCREEN_CP of the setting move",
    "illegal": "a move of the line is not legal where it is played",
    "empty_line": "no solver move left (no refutation was mined)",
    "not_best": "the engine prefers another move at the first solver move (or the setting move)",
    "not_unique": "the engine agrees, but the second best is within the margin",
}

WIN_CHANCE_SLOPE = 0.00368208  # lila's logistic: centipawns -> win chances on [-1, 1]
DEFAULT_MARGIN = 0.3  # win chances on [-1, 1] best must beat second best by (lila: a 0.3 drop is a blunder)
DEFAULT_NODES = 500_000  # Stockfish nodes per MultiPV-2 search (~0.5 s, depth ~19 on a 2020s core)
ENGINE_HASH_MB = 16  # UCI Hash per engine; cleared (ucinewgame) before every candidate
MATE_IN_ONE_SECOND_MAX = 0.6  # puzzler: a mate in one is unique if the best non-mate is at most this
SET_SCREEN_CP = 100  # set: the miner's second best at the setting move must be this much worse (cp)
CRUSHING_CP = 600  # Lichess theme thresholds on the final evaluation, solver's view (cook.py)
ADVANTAGE_CP = 200
BOARD_PX = 360  # size of a board image in the HTML book
VERIFY_BATCH = 2  # distinct candidates per call to a verification actor (a call costs ~1 ms; a candidate >= 2 searches)
BATCHES_PER_WORKER = 2  # calls queued per actor, so that none waits for the driver between two calls
WORKER_RESTARTS = 3  # times a verification actor whose process died is restarted (its batch re-verified)

LICHESS_COLUMNS = (
    "PuzzleId",
    "FEN",
    "Moves",
    "Rating",
    "RatingDeviation",
    "Popularity",
    "NbPlays",
    "Themes",
    "GameUrl",
    "OpeningTags",
)


class PuzzleError(DiffimaxError, ValueError):
    """A puzzle setting that cannot be used (kind, format, margin, limit, nodes)."""


class VerificationStopped(DiffimaxError, RuntimeError):
    """A verification worker died more often than it may be restarted."""


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class GameInfo:
    """The source game's headers as mined (untrusted text, unescaped)."""

    game_id: str
    site: str | None = None
    event: str | None = None
    date: str | None = None
    white: str | None = None
    black: str | None = None
    white_elo: int | None = None
    black_elo: int | None = None
    opening: str | None = None
    eco: str | None = None


@dataclass(frozen=True)
class Candidate:
    """One puzzle as mined, before the engine has seen it."""

    kind: PuzzleKind
    game: GameInfo
    ply: int
    """Plies played before `fen` in the source game."""
    fen: str
    """Lichess FEN: the position before the opponent's move `moves[0]`."""
    moves: tuple[str, ...]
    """UCI: the fixed moves (`fixed` of them), then the mined refutation, untrimmed."""
    fixed: int
    """Leading moves that are given, not searched: 1 (punish: the trap) or 3 (set)."""
    dip: int
    """The trap's dip in centipawns, setter's view (mined)."""
    fell: bool = True
    """The human in the source game played the trap move (a punish puzzle always)."""

    def key(self) -> tuple[str, tuple[str, ...]]:
        """What makes two candidates the same puzzle: the solver's first position and the rest."""
        board = chess.Board(self.fen)
        board.push_uci(self.moves[0])
        return board.epd(), self.moves[1:]


@dataclass(frozen=True)
class EngineLine:
    """One MultiPV line: the first move, its score for the side to move, the principal variation."""

    move: chess.Move
    score: chess.engine.Score
    pv: tuple[chess.Move, ...]


# The verifier's only view of an engine: the best two lines at a position, best first.
Analyse = Callable[[chess.Board], Sequence[EngineLine]]


@dataclass(frozen=True)
class SolverCheck:
    """The engine's verdict at one solver move (index into the puzzle's `Moves`)."""

    index: int
    best: chess.engine.Score
    """Score of the solver's move, solver's view (it is the engine's best)."""
    second: chess.engine.Score | None
    """Score of the engine's second best, None when the move was the only legal one."""


@dataclass(frozen=True)
class Checked:
    """A candidate that passed: the trimmed Lichess move list and the verdicts behind it."""

    moves: tuple[str, ...]
    checks: tuple[SolverCheck, ...]
    trimmed: bool
    """The engine cut the mined line short (a later solver move or reply it disagrees with)."""
    mate: bool
    """The line ends in checkmate."""


@dataclass(frozen=True)
class Puzzle:
    """A verified puzzle, ready to write."""

    puzzle_id: str
    kind: PuzzleKind
    fen: str
    moves: tuple[str, ...]
    themes: tuple[str, ...]
    game_url: str
    """The source game's http(s) URL with the ply anchor, or empty."""
    opening_tags: str
    checks: tuple[SolverCheck, ...]
    game_ids: tuple[str, ...]
    """Every game the puzzle was found in (sorted); the first one supplies the headers."""
    game: GameInfo
    ply: int
    dip: int


@dataclass
class PuzzleReport:
    """What `generate_puzzles` did: counts per kind and the files it wrote."""

    candidates: dict[str, int] = field(default_factory=dict)
    """Candidate rows read from the dataset, per kind (one per game and ply)."""
    duplicates_merged: dict[str, int] = field(default_factory=dict)
    """Candidates folded into an identical puzzle from another game or ply, per kind."""
    verified: dict[str, int] = field(default_factory=dict)
    """Distinct puzzles that passed the engine, per kind."""
    trimmed: dict[str, int] = field(default_factory=dict)
    """Verified puzzles whose mined line the engine cut short, per kind."""
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    """Distinct puzzles dropped, per kind and reason (see DROP_REASONS)."""
    not_checked: int = 0
    """Distinct candidates past the `limit` cut: not verified, or verified ahead by a worker of the
    pool and discarded (see `discarded`), as if never verified."""
    discarded: int = 0
    """Of `not_checked`, those a worker of the pool had verified ahead before the limit was known
    to be reached (0 with one worker); their verdicts count nowhere."""
    written: dict[str, Path] = field(default_factory=dict)
    puzzles: list[Puzzle] = field(default_factory=list)
    engine: str = ""
    nodes: int = 0
    margin: float = 0.0
    workers: int = 1
    """Engines that verified: 1 on the driver, else Ray actors."""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "duplicates_merged": self.duplicates_merged,
            "verified": self.verified,
            "trimmed": self.trimmed,
            "dropped": self.dropped,
            "not_checked": self.not_checked,
            "discarded": self.discarded,
            "written": {name: str(path) for name, path in self.written.items()},
            "engine": self.engine,
            "nodes": self.nodes,
            "margin": self.margin,
            "workers": self.workers,
            "seconds": round(self.seconds, 1),
        }

    def summary(self) -> str:
        """A few lines for the command line."""
        lines = []
        for kind in self.candidates:
            dropped = ", ".join(f"{n} {reason}" for reason, n in sorted(self.dropped[kind].items())) or "none"
            lines.append(
                f"{kind}: {self.candidates[kind]:,} candidates, {self.duplicates_merged[kind]:,} repeats merged, "
                f"{self.verified[kind]:,} verified ({self.trimmed[kind]:,} trimmed); dropped: {dropped}"
            )
        if self.not_checked:
            ahead = f" ({self.discarded:,} verified ahead by the pool, discarded)" if self.discarded else ""
            lines.append(f"limit reached: {self.not_checked:,} distinct candidates not checked{ahead}")
        where = "on the driver" if self.workers == 1 else f"on {self.workers} workers"
        lines.append(
            f"engine: {self.engine}, {self.nodes:,} nodes per search, margin {self.margin:g}, {where}; "
            f"{self.seconds:.1f} s"
        )
        lines += [f"wrote {path}" for path in self.written.values()]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Judging a move (pure)


def win_chances(score: chess.engine.Score) -> float:
    """Lichess's win chances on [-1, 1] for the side the score belongs to; a mate is +-1."""
    mate = score.mate()
    if mate is not None:
        return 1.0 if mate > 0 else -1.0
    cp = score.score()
    assert cp is not None
    return 2 / (1 + math.exp(-WIN_CHANCE_SLOPE * cp)) - 1


def is_only_move(best: chess.engine.Score, second: chess.engine.Score | None, margin: float) -> bool:
    """Lichess puzzler's `is_valid_attack`: the best move is the only good one.

    Exact rules: no second move; or win chances of best minus second > `margin`; or the best is a
    mate in one, the second is not, and the second's win chances are at most MATE_IN_ONE_SECOND_MAX.
    Two mates in one, or two mates of any length, are not unique.
    """
    if second is None:
        return True
    if best.mate() == 1 and second.mate() != 1 and win_chances(second) <= MATE_IN_ONE_SECOND_MAX:
        return True
    return win_chances(best) - win_chances(second) > margin


def material(board: chess.Board, color: chess.Color) -> int:
    """Material balance for `color` in pawns (1, 3, 3, 5, 9)."""
    values = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
    return sum(
        (len(board.pieces(piece, color)) - len(board.pieces(piece, not color))) * value
        for piece, value in values.items()
    )


class IllegalLineError(ValueError):
    """A move of a puzzle line is not legal where it is played."""


def trim_line(board: chess.Board, line: Sequence[chess.Move]) -> tuple[chess.Move, ...]:
    """The solver's part of a refutation, ending where the solver's advantage is established.

    `board` has the solver to move; the solver plays line[0], line[2], ... The line stops after
    the first solver move that mates, or that captures (or promotes) when the line's next move is no
    capture and the solver is then ahead in material compared with `board`; else at the line's end.
    It always ends on a solver move (a trailing reply is dropped). Raises IllegalLineError.
    """
    solver = board.turn
    replay = board.copy(stack=False)
    start = material(replay, solver)
    kept: list[chess.Move] = []
    for index, move in enumerate(line):
        if not replay.is_legal(move):
            raise IllegalLineError(f"illegal move {move.uci()} in {replay.fen()!r}")
        solver_move = index % 2 == 0
        wins_material = replay.is_capture(move) or move.promotion is not None
        replay.push(move)
        kept.append(move)
        if replay.is_game_over():
            break
        if solver_move and wins_material and material(replay, solver) > start:
            following = line[index + 1] if index + 1 < len(line) else None
            if following is None or not replay.is_capture(following):
                break
    if len(kept) % 2 == 0:
        kept = kept[:-1]
    return tuple(kept)


def check_candidate(
    fen: str, moves: Sequence[str], fixed: int, analyse: Analyse, margin: float
) -> Checked | DropReason:
    """Replay and verify one candidate; the trimmed, verified line or why it was dropped.

    Solver moves are the odd indices of the Lichess move list. Those at indices <= `fixed` (the
    first refutation move, and for set puzzles the setting move) must pass or the candidate is
    dropped; a later one that fails ends the line at the solver move before it. So does a reply
    the engine does not expect (its PV's second move), since the solver's next move answers it.
    """
    try:
        parsed = [chess.Move.from_uci(move) for move in moves]
    except chess.InvalidMoveError:
        return "illegal"
    board = chess.Board(fen)
    for move in parsed[:fixed]:
        if not board.is_legal(move):
            return "illegal"
        board.push(move)
    try:
        line = trim_line(board, parsed[fixed:])
    except IllegalLineError:
        return "illegal"
    if not line:
        return "empty_line"
    full = [*parsed[:fixed], *line]
    replay = chess.Board(fen)
    checks: list[SolverCheck] = []
    trimmed = False
    index = 0
    while index < len(full):
        move = full[index]
        if index % 2 == 1:
            lines = analyse(replay)
            best, second = lines[0], (lines[1] if len(lines) > 1 else None)
            passed = best.move == move and is_only_move(best.score, second.score if second else None, margin)
            if not passed:
                if index <= fixed:
                    return "not_best" if best.move != move else "not_unique"
                full, trimmed = full[: index - 1], True
                break
            checks.append(SolverCheck(index, best.score, second.score if second else None))
            reply = index + 1
            if reply < len(full) and reply > fixed and len(best.pv) > 1 and best.pv[1] != full[reply]:
                full, trimmed = full[:reply], True
                break
        replay.push(move)
        index += 1
    final = chess.Board(fen)
    for move in full:
        final.push(move)
    return Checked(tuple(m.uci() for m in full), tuple(checks), trimmed, final.is_checkmate())


# ---------------------------------------------------------------------------------------------
# The engine


class EngineVerifier:
    """Owns one UCI engine (`pipeline.engines.process.UciEngine`: timeouts, one restart after a
    crash, no orphan): MultiPV 2 at `nodes` per search, Threads 1, Hash ENGINE_HASH_MB.

    Call `new_puzzle()` before each candidate: the next search starts with `ucinewgame` (hash
    cleared), so a candidate's verdict depends on nothing verified before it, in this engine or in
    which engine of a pool verifies it. An engine that cannot start raises `EngineStartError`; one
    that crashes twice or hangs during a search, `EngineError` (one line each).
    """

    def __init__(
        self, engine: str = "stockfish", *, nodes: int = DEFAULT_NODES, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.engine = UciEngine.open(engine, {"Threads": 1, "Hash": ENGINE_HASH_MB}, timeout=timeout)
        self.path = self.engine.path
        self.name = self.engine.name
        self.limit = chess.engine.Limit(nodes=nodes)
        self._game = object()
        self.searches = 0

    def new_puzzle(self) -> None:
        self._game = object()

    def __call__(self, board: chess.Board) -> list[EngineLine]:
        result = self.engine.search(board, 2, self.limit, game=self._game)
        self.searches += 1
        lines = []
        for info in result.infos:
            pv = info.get("pv")
            score = info.get("score")
            if pv and score is not None:
                lines.append(EngineLine(pv[0], score.relative, tuple(pv)))
        if not lines:
            raise EngineError(f"engine {self.path} returned no line on FEN {board.fen()!r}")
        return lines

    def close(self) -> None:
        """Stop the engine process (also after it died or hung)."""
        self.engine.close()

    def __enter__(self) -> EngineVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class VerifyTask:
    """One distinct candidate to verify (its group's representative): what `check_candidate` needs."""

    fen: str
    moves: tuple[str, ...]
    fixed: int


# What the engine made of one task: the verified line, or why it was dropped.
Verdict = Checked | DropReason


def verify(verifier: EngineVerifier, task: VerifyTask, margin: float) -> Verdict:
    """One candidate from an empty hash (the per-item work, the same on the driver and in an actor)."""
    verifier.new_puzzle()
    return check_candidate(task.fen, task.moves, task.fixed, verifier, margin)


@dataclass(frozen=True)
class BatchOutcome:
    """What a verification actor returns for one batch: a verdict per task, in order, or the one
    line that stops the job (an engine that cannot start, or crashed twice, or hung)."""

    verdicts: tuple[Verdict, ...]
    fatal: str | None = None
    start_failed: bool = False
    """`fatal` is the engine failing to start (`EngineStartError`), not failing a search."""


class VerifyWorker:
    """The Ray actor: its own `EngineVerifier` for the whole run, verifying a batch per call. An
    engine that cannot start is not an exception here (Ray would answer it by restarting the actor)
    but a fatal outcome of every call."""

    def __init__(self, engine: str, nodes: int, margin: float) -> None:
        self.margin = margin
        self.verifier: EngineVerifier | None = None
        self.startup_error: str | None = None
        try:
            self.verifier = EngineVerifier(engine, nodes=nodes)
        except EngineStartError as error:
            self.startup_error = str(error)

    def __call__(self, batch: Sequence[VerifyTask]) -> BatchOutcome:
        if self.verifier is None:
            return BatchOutcome((), fatal=self.startup_error, start_failed=True)
        try:
            return BatchOutcome(tuple(verify(self.verifier, task, self.margin) for task in batch))
        except EngineError as error:
            return BatchOutcome((), fatal=str(error), start_failed=isinstance(error, EngineStartError))


def verify_serial(
    tasks: Sequence[VerifyTask], engine: str, nodes: int, margin: float, limit: int | None
) -> list[Verdict]:
    """Verify `tasks` in order on one engine here, stopping once `limit` of them passed."""
    verdicts: list[Verdict] = []
    passed = 0
    with EngineVerifier(engine, nodes=nodes) as verifier:
        for task in tasks:
            if limit is not None and passed >= limit:
                break
            verdict = verify(verifier, task, margin)
            verdicts.append(verdict)
            passed += not isinstance(verdict, str)
    return verdicts


def verify_on_pool(
    tasks: Sequence[VerifyTask], engine: str, nodes: int, margin: float, limit: int | None, workers: int
) -> tuple[list[Verdict], int]:
    """Verify `tasks` on `workers` Ray actors (one engine each) in batches of VERIFY_BATCH; the
    verdicts of the same prefix of `tasks` that `verify_serial` verifies, in order, and how many
    verdicts past that prefix were computed and discarded.

    Verdicts are taken in task order, so the limit cut falls where it falls serially. With a
    limit, no batch is sent more than BATCHES_PER_WORKER * workers batches ahead of the first
    unfinished one, so at most VERIFY_BATCH * BATCHES_PER_WORKER * workers - 1 tasks past the cut
    are verified in vain. Ray must be initialised.
    """
    batches = [tuple(tasks[start : start + VERIFY_BATCH]) for start in range(0, len(tasks), VERIFY_BATCH)]
    window = BATCHES_PER_WORKER * workers
    actor_class: Any = ray.remote(num_cpus=1, max_restarts=WORKER_RESTARTS, max_task_retries=WORKER_RESTARTS)(
        VerifyWorker
    )
    actors = [actor_class.remote(engine, nodes, margin) for _ in range(workers)]
    load = [0] * workers  # calls queued per actor
    in_flight: dict[Any, tuple[int, int]] = {}  # call -> (batch index, actor index)
    finished: dict[int, tuple[Verdict, ...]] = {}  # batch index -> its verdicts, until taken in order
    verdicts: list[Verdict] = []
    passed = taken = sent = 0  # passes among `verdicts`; batches taken in order; batches sent
    try:
        while True:
            while taken in finished:
                for verdict in finished.pop(taken):
                    if limit is not None and passed >= limit:
                        break
                    verdicts.append(verdict)
                    passed += not isinstance(verdict, str)
                taken += 1
            if taken == len(batches) or (limit is not None and passed >= limit):
                computed = sum(len(batch) for batch in batches[:taken]) + sum(map(len, finished.values()))
                return verdicts, computed - len(verdicts)
            while sent < len(batches) and len(in_flight) < window and (limit is None or sent < taken + window):
                index = min(range(workers), key=lambda i: load[i])
                load[index] += 1
                in_flight[actors[index].__call__.remote(batches[sent])] = (sent, index)
                sent += 1
            done, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in done:
                batch_index, actor_index = in_flight.pop(ref)
                load[actor_index] -= 1
                try:
                    outcome: BatchOutcome = ray.get(ref)
                except ray.exceptions.RayActorError as error:
                    raise VerificationStopped(
                        f"a verification worker died {WORKER_RESTARTS + 1} times: {' '.join(str(error).split())[:300]}"
                    ) from None
                if outcome.fatal is not None:
                    raise (EngineStartError if outcome.start_failed else EngineError)(outcome.fatal)
                finished[batch_index] = outcome.verdicts
    finally:
        # Calls still queued are not needed: cancelled first, so that Ray does not retry them (and
        # say so) when their actor is killed; the engines end with the actors.
        for ref in in_flight:
            ray.cancel(ref)
        for actor in actors:
            ray.kill(actor, no_restart=True)


# ---------------------------------------------------------------------------------------------
# Candidates from the dataset


def _rows(connection: Any, sql: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    cursor = connection.execute(sql, params)
    columns = [column[0] for column in cursor.description]
    for row in cursor.fetchall():
        yield dict(zip(columns, row, strict=True))


def _game(row: dict[str, Any]) -> GameInfo:
    return GameInfo(
        game_id=row["game_id"],
        site=row["site"],
        event=row["event"],
        date=row["date"],
        white=row["white"],
        black=row["black"],
        white_elo=row["white_elo"],
        black_elo=row["black_elo"],
        opening=row["opening"],
        eco=row["eco"],
    )


def evidence_order(members: Sequence[Candidate], identity: str) -> tuple[int, float, int, int, str]:
    """Puzzles first where humans fell most: falls, then the Wilson lower bound of the fall rate
    over the games that met the position, then those games, then the deepest dip, then the id."""
    games = {c.game.game_id for c in members}
    falls = {c.game.game_id for c in members if c.fell}
    low, _ = wilson(len(falls), len(games))
    return (-len(falls), -low, -len(games), -max(c.dip for c in members), identity)


def load_candidates(
    data: str | Path, kinds: Sequence[PuzzleKind], min_dip_cp: int
) -> tuple[list[Candidate], dict[str, dict[str, int]]]:
    """Candidates of the given kinds, and the set candidates dropped before the engine, by reason."""
    connection = connect(data)
    candidates: list[Candidate] = []
    early: dict[str, dict[str, int]] = {kind: {} for kind in kinds}
    params = {"min_dip_cp": min_dip_cp}
    if "punish" in kinds:
        for row in _rows(connection, query("puzzles", "punish-candidates"), params):
            moves = (row["move"], *row["refutation"])
            candidates.append(Candidate("punish", _game(row), row["ply"], row["fen"], moves, 1, row["dip"]))
    if "set" in kinds:
        for row in _rows(connection, query("puzzles", "set-candidates"), params):
            reason: DropReason | None = None
            if row["fen"] is None or row["setting_move"] is None:
                reason = "history_missing"
            elif not row["setting_best"] or (row["second_dip"] is not None and row["second_dip"] < SET_SCREEN_CP):
                # the setter's move must have been its best, clearly (where the other replies were valued)
                reason = "screened"
            if reason is not None:
                early["set"][reason] = early["set"].get(reason, 0) + 1
                continue
            moves = (row["prior_move"], row["setting_move"], row["move"], *row["refutation"])
            candidates.append(
                Candidate("set", _game(row), row["ply"] - 2, row["fen"], moves, 3, row["dip"], bool(row["fell"]))
            )
    return candidates, early


# ---------------------------------------------------------------------------------------------
# Untrusted text (made safe by pipeline.outputs.sanitize)

_LICHESS_GAME = re.compile(r"https://lichess\.org/[A-Za-z0-9]{8}")


def game_url(site: str | None, fen: str, ply: int) -> str:
    """The Lichess GameUrl: a lichess.org game gets `/black` when Black moves first and `#ply`."""
    url = safe_url(site)
    if _LICHESS_GAME.fullmatch(url):
        side = "/black" if chess.Board(fen).turn == chess.BLACK else ""
        return f"{url}{side}#{ply}"
    return url


def opening_key(name: str) -> str:
    """Lichess's opening key: accents and punctuation dropped, words joined by underscores."""
    folded = unicodedata.normalize("NFKD", name)
    kept = "".join(c for c in folded if c.isalnum() or c in " -" if not unicodedata.combining(c))
    kept = "".join(c if c.isascii() else "" for c in kept)
    return re.sub(r"[\s_]+", "_", kept.strip()).strip("_-")


def opening_tags(opening: str | None) -> str:
    """`Family Family_Variation` as in the Lichess puzzle CSV, from an Opening header."""
    name = clean_text(opening)
    if not name or name == "?":
        return ""
    family, colon, rest = name.partition(":")
    tags = [opening_key(family)]
    if colon:
        variation = rest.split(",")[0]
        tags.append(opening_key(f"{family} {variation}"))
    return " ".join(dict.fromkeys(tag for tag in tags if tag))


# ---------------------------------------------------------------------------------------------
# Puzzles


def puzzle_id(key: tuple[str, tuple[str, ...]]) -> str:
    """A short deterministic id: the solver's position and the solution, whichever game it came from."""
    epd, rest = key
    return hashlib.sha256(f"{epd}|{' '.join(rest)}".encode()).hexdigest()[:10]


def themes_for(kind: PuzzleKind, checked: Checked) -> tuple[str, ...]:
    """`diffimaxPunish` / `diffimaxSet`, Lichess's result theme and length theme, sorted."""
    themes = ["diffimaxPunish" if kind == "punish" else "diffimaxSet"]
    solver_moves = len(checked.moves) // 2
    if checked.mate:
        themes += ["mate", f"mateIn{solver_moves}"]
    else:
        final = checked.checks[-1].best
        cp = final.score(mate_score=100_000)
        assert cp is not None
        themes.append("crushing" if cp > CRUSHING_CP else "advantage" if cp > ADVANTAGE_CP else "equality")
    length = len(checked.moves)
    themes.append("oneMove" if length == 2 else "short" if length == 4 else "veryLong" if length >= 8 else "long")
    return tuple(sorted(themes))


def _count(table: dict[str, int], key: str, amount: int = 1) -> None:
    table[key] = table.get(key, 0) + amount


def generate_puzzles(
    data: str | Path,
    out: str | Path,
    *,
    kind: KindChoice = "both",
    min_dip: float = 1.0,
    limit: int | None = None,
    formats: Sequence[str] = FORMATS,
    engine: str = "stockfish",
    nodes: int = DEFAULT_NODES,
    margin: float = DEFAULT_MARGIN,
    title: str = "diffimax puzzles",
    workers: int | None = None,
) -> PuzzleReport:
    """Verified puzzles from the dataset `data`, written to `out` as puzzles.csv / .pgn / .html.

    `min_dip` is in pawns (setter's view); `limit` caps the puzzles written (candidates are
    verified in order of the evidence that humans fall (`evidence_order`), and verification stops
    at the limit); `margin` is in win chances on [-1, 1]; `nodes` per engine search. `workers`
    engines verify (see `run_verification`); the output is the same whatever their number.
    """
    started = time.monotonic()
    if kind not in ("punish", "set", "both"):
        raise PuzzleError(f"invalid kind {kind!r}: expected punish, set or both")
    kinds: tuple[PuzzleKind, ...] = KINDS if kind == "both" else (kind,)
    chosen = parse_formats(formats)
    if not 0 < margin < 2:
        raise PuzzleError(f"invalid margin {margin!r}: expected win chances in (0, 2)")
    if limit is not None and limit < 1:
        raise PuzzleError(f"invalid limit {limit!r}: expected at least 1")
    if nodes < 1:
        raise PuzzleError(f"invalid nodes {nodes!r}: expected at least 1")
    if min_dip < 0 or not math.isfinite(min_dip):
        raise PuzzleError(f"invalid min dip {min_dip!r}: expected pawns >= 0")
    if workers is not None and workers < 1:
        raise PuzzleError(f"invalid workers {workers!r}: expected at least 1")
    engine_name = check_engine(engine)  # an unusable engine is one line before the dataset is read
    out_dir = Path(out)

    candidates, early = load_candidates(data, kinds, round(min_dip * 100))
    report = PuzzleReport(engine=engine_name, nodes=nodes, margin=margin)
    for name in kinds:
        report.candidates[name] = sum(early[name].values())
        report.dropped[name] = dict(early[name])
        report.duplicates_merged[name] = 0
        report.verified[name] = 0
        report.trimmed[name] = 0
    groups: dict[tuple[PuzzleKind, tuple[str, tuple[str, ...]]], list[Candidate]] = {}
    for candidate in candidates:
        _count(report.candidates, candidate.kind)
        groups.setdefault((candidate.kind, candidate.key()), []).append(candidate)
    for (puzzle_kind, _), members in groups.items():
        _count(report.duplicates_merged, puzzle_kind, len(members) - 1)
    ordered = sorted(groups.items(), key=lambda item: evidence_order(item[1], puzzle_id(item[0][1])))
    for _, members in ordered:
        members.sort(key=lambda c: (c.game.game_id, c.ply))  # the representative: the smallest game id
    tasks = [VerifyTask(members[0].fen, members[0].moves, members[0].fixed) for _, members in ordered]
    verdicts, report.discarded, report.workers = run_verification(tasks, engine, nodes, margin, limit, workers)
    report.not_checked = len(ordered) - len(verdicts)
    for ((puzzle_kind, key), members), result in zip(ordered, verdicts, strict=False):
        if isinstance(result, str):
            _count(report.dropped[puzzle_kind], result)
            continue
        _count(report.verified, puzzle_kind)
        if result.trimmed:
            _count(report.trimmed, puzzle_kind)
        first = members[0]
        report.puzzles.append(
            Puzzle(
                puzzle_id=puzzle_id(key),
                kind=puzzle_kind,
                fen=first.fen,
                moves=result.moves,
                themes=themes_for(puzzle_kind, result),
                game_url=game_url(first.game.site, first.fen, first.ply),
                opening_tags=opening_tags(first.game.opening),
                checks=result.checks,
                game_ids=tuple(sorted({c.game.game_id for c in members})),
                game=first.game,
                ply=first.ply,
                dip=first.dip,
            )
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    writers: dict[OutputFormat, tuple[str, Callable[[Sequence[Puzzle]], str]]] = {
        "csv": ("puzzles.csv", render_csv),
        "pgn": ("puzzles.pgn", render_pgn),
        "html": ("puzzles.html", lambda puzzles: render_html(puzzles, title=title)),
    }
    for fmt in chosen:
        filename, render = writers[fmt]
        report.written[fmt] = write_atomic(out_dir / filename, render(report.puzzles))
    report.seconds = time.monotonic() - started
    return report


def run_verification(
    tasks: Sequence[VerifyTask], engine: str, nodes: int, margin: float, limit: int | None, workers: int | None
) -> tuple[list[Verdict], int, int]:
    """The verdicts of `tasks` in order, up to the one that makes `limit` passes (all without a
    limit); the verdicts computed past that and discarded; the engines that verified.

    `workers` 1 verifies here, serially, without Ray; None means one per CPU of the Ray cluster.
    Ray is used as found, or a local cluster is started for the call (and stopped after it). A
    pool is never larger than the batches to verify, and a single batch is verified here.
    """
    if workers == 1 or len(tasks) <= VERIFY_BATCH:
        return verify_serial(tasks, engine, nodes, margin, limit), 0, 1
    from pipeline.common.cluster import start_ray, stderr_aside  # the miner's quiet local cluster

    owns_ray = not ray.is_initialized()
    try:
        if owns_ray:
            start_ray(None)
        if workers is None:
            cluster: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
            workers = max(1, int(cluster.get("CPU", 1)))
        workers = min(workers, math.ceil(len(tasks) / VERIFY_BATCH))
        if workers == 1:
            return verify_serial(tasks, engine, nodes, margin, limit), 0, 1
        verdicts, discarded = verify_on_pool(tasks, engine, nodes, margin, limit, workers)
        return verdicts, discarded, workers
    except KeyboardInterrupt:
        if owns_ray:  # Ray's dying workers say so at length: not in the user's terminal
            with stderr_aside():
                ray.shutdown()
        raise
    finally:
        if owns_ray and ray.is_initialized():
            ray.shutdown()


def parse_kind(text: str) -> KindChoice:
    """`punish`, `set` or `both` (any case); raises PuzzleError otherwise."""
    choices: dict[str, KindChoice] = {"punish": "punish", "set": "set", "both": "both"}
    kind = choices.get(text.strip().lower())
    if kind is not None:
        return kind
    raise PuzzleError(f"invalid kind {text!r}: expected punish, set or both")


def parse_formats(formats: str | Sequence[str]) -> tuple[OutputFormat, ...]:
    """`csv,pgn` or ["csv", "pgn"] -> ("csv", "pgn"); raises PuzzleError on an unknown name."""
    names = formats.split(",") if isinstance(formats, str) else list(formats)
    chosen: list[OutputFormat] = []
    for raw in names:
        name = raw.strip().lower()
        if name not in FORMATS:
            raise PuzzleError(f"invalid format {raw!r}: expected csv, pgn or html")
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise PuzzleError("no output format: expected csv, pgn and/or html")
    return tuple(chosen)


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file and a rename (never half a file)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


# ---------------------------------------------------------------------------------------------
# Output: CSV, PGN, HTML


def render_csv(puzzles: Sequence[Puzzle]) -> str:
    """Lichess puzzle CSV. Rating, RatingDeviation, Popularity and NbPlays are left empty (unknown)."""
    stream = io.StringIO()
    writer = csv.writer(stream, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(LICHESS_COLUMNS)
    for p in puzzles:
        row = [p.puzzle_id, p.fen, " ".join(p.moves), "", "", "", "", " ".join(p.themes), p.game_url, p.opening_tags]
        writer.writerow([spreadsheet_safe(cell) for cell in row])
    return stream.getvalue()


def format_score(score: chess.engine.Score | None) -> str:
    """`+1.25` (pawns) or `#3` / `#-2`, from the score's side."""
    if score is None:
        return "none"
    mate = score.mate()
    if mate is not None:
        return f"#{mate}"
    cp = score.score()
    assert cp is not None
    return f"{cp / 100:+.2f}"


def _verdict(check: SolverCheck) -> str:
    if check.second is None:
        return f"only legal move, {format_score(check.best)}"
    return f"only move: {format_score(check.best)}, next best {format_score(check.second)}"


def _role(p: Puzzle, index: int) -> str:
    """What move `index` of the puzzle is, in words (our own text: no untrusted input)."""
    if index == 0:
        return "the trap" if p.kind == "punish" else "the opponent's move"
    if p.kind == "set" and index == 2:
        return f"the trap reply (dip {p.dip / 100:.2f} mined)"
    check = next((c for c in p.checks if c.index == index), None)
    return _verdict(check) if check else "reply"


def _names(p: Puzzle) -> tuple[str, str]:
    """(opponent, solver) colour names: the opponent moves first in the Lichess format."""
    board = chess.Board(p.fen)
    colour = {chess.WHITE: "White", chess.BLACK: "Black"}
    return colour[board.turn], colour[not board.turn]


def render_pgn(puzzles: Sequence[Puzzle]) -> str:
    """One game per puzzle, starting at the Lichess FEN (SetUp/FEN), our comments on the moves."""
    chunks = []
    for p in puzzles:
        g = p.game
        tags = [
            ("Event", pgn_value(g.event)),
            ("Site", pgn_value(safe_url(g.site))),
            ("Date", pgn_value(g.date, "????.??.??")),
            ("Round", "-"),
            ("White", pgn_value(g.white)),
            ("Black", pgn_value(g.black)),
            ("Result", "*"),
        ]
        if g.white_elo is not None:
            tags.append(("WhiteElo", str(int(g.white_elo))))
        if g.black_elo is not None:
            tags.append(("BlackElo", str(int(g.black_elo))))
        if g.eco:
            tags.append(("ECO", pgn_value(g.eco)))
        if g.opening:
            tags.append(("Opening", pgn_value(g.opening)))
        tags += [
            ("SetUp", "1"),
            ("FEN", p.fen),
            ("PuzzleId", p.puzzle_id),
            ("PuzzleKind", p.kind),
            ("Themes", " ".join(p.themes)),
            ("Games", str(len(p.game_ids))),
            ("Annotator", "diffimax"),
        ]
        if p.game_url:
            tags.insert(-2, ("GameUrl", pgn_value(p.game_url)))
        game = chess.pgn.Game()
        game.setup(chess.Board(p.fen))
        node: chess.pgn.GameNode = game
        for index, uci in enumerate(p.moves):
            node = node.add_variation(chess.Move.from_uci(uci))
            node.comment = _role(p, index).replace("{", "(").replace("}", ")")
        exporter = chess.pgn.StringExporter(headers=False, variations=False, comments=True)
        movetext = game.accept(exporter)
        header = "\n".join(f'[{name} "{value}"]' for name, value in tags)
        chunks.append(f"{header}\n\n{movetext}\n")
    return "\n".join(chunks)


def _board_image(board: chess.Board, last: chess.Move | None, orientation: chess.Color) -> str:
    svg = chess.svg.board(board, size=BOARD_PX, lastmove=last, orientation=orientation, coordinates=True)
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")


# Opens the step named in the URL fragment, `#<puzzle id>/<step>`, and scrolls to it if off screen.
_SCRIPT = (
    "(function(){var m=/^#([0-9a-f]+)\\/([0-9]+)$/.exec(location.hash);if(!m)return;"
    'var e=document.getElementById(m[1]+"-"+m[2]);if(!e||e.type!=="radio")return;e.checked=true;'
    'var r=e.closest("section").getBoundingClientRect();'
    'if(r.top<0||r.top>innerHeight)e.closest("section").scrollIntoView();})();'
)

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:70em;color:#222;background:#fafafa}
h1{font-size:1.6em} h2{font-size:1.2em;margin:.2em 0}
.puzzle{position:relative;background:#fff;border:1px solid #ddd;border-radius:6px;padding:1em;margin:1.5em 0}
.meta{color:#555;font-size:.9em;margin:.2em 0 .8em}
.puzzle>input{position:absolute;top:0;left:0;opacity:0;pointer-events:none}
.steps{display:flex;flex-wrap:wrap;gap:.3em;margin:.5em 0}
.steps label{border:1px solid #888;border-radius:4px;padding:.25em .7em;cursor:pointer;background:#f0f0f0}
.board{display:none;margin:0}
.board img{display:block;width:BOARDPXpx;height:BOARDPXpx}
.board figcaption{margin-top:.4em;min-height:2.6em;max-width:BOARDPXpx}
details{margin-top:.6em} ol{margin:.3em 0}
""".replace("BOARDPX", str(BOARD_PX))


def _step_css(max_steps: int) -> str:
    rules = []
    for k in range(max_steps):
        rules.append(f".s{k}:checked~.boards .b{k}{{display:block}}")
        rules.append(f".s{k}:checked~.steps .l{k}{{background:#333;color:#fff}}")
        rules.append(f".s{k}:focus-visible~.steps .l{k}{{outline:2px solid #36c}}")
    return "\n".join(rules)


def render_html(puzzles: Sequence[Puzzle], *, title: str = "diffimax puzzles") -> str:
    """A self-contained puzzle book: a board image (chess.svg, data URI) per step, stepped with
    radio buttons and CSS (works without JavaScript); a tiny inline script only opens the step named
    in the URL fragment (#<puzzle id>/<step>). A Content-Security-Policy allows no network access."""
    script_hash = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode("ascii")
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{script_hash}'; base-uri 'none'; form-action 'none'"
    )
    max_steps = max((len(p.moves) + 1 for p in puzzles), default=1)
    heading = clean_text(title)
    intro = tag(
        "p",
        f"{len(puzzles)} puzzle{'' if len(puzzles) == 1 else 's'}. Pick a step to move through the line; ",
        tag("em", "Solution"),
        " lists it.",
    )
    body = join(
        [tag("h1", heading), intro, *(_puzzle_html(n, p) for n, p in enumerate(puzzles, start=1))],
        Html("\n"),
    )
    return document(
        heading,
        [Html("\n"), body, Html("\n"), tag("script", Html(_SCRIPT)), Html("\n")],
        csp=csp,
        style=Html(_STYLE + _step_css(max_steps)),
        meta=[tag("meta", name="referrer", content="no-referrer")],
    )


def _puzzle_html(number: int, p: Puzzle) -> Html:
    opponent, solver = _names(p)
    orientation = chess.WHITE if solver == "White" else chess.BLACK
    board = chess.Board(p.fen)
    sans: list[str] = []
    images = [_board_image(board, None, orientation)]
    for uci in p.moves:
        move = chess.Move.from_uci(uci)
        number_prefix = f"{board.fullmove_number}." if board.turn == chess.WHITE else f"{board.fullmove_number}..."
        sans.append(number_prefix + board.san(move))
        board.push(move)
        images.append(_board_image(board, move, orientation))
    task = "punish the trap" if p.kind == "punish" else "set a trap"
    g = p.game
    meta: list[Html | str] = [f"{clean_text(g.white) or '?'} vs {clean_text(g.black) or '?'}"]
    meta += [clean_text(value) for value in (g.event, g.date, g.opening) if value]
    if p.game_url:
        meta.append(tag("a", "game", href=p.game_url, rel="noopener noreferrer nofollow"))
    meta.append(f"found in {len(p.game_ids)} game{'s' if len(p.game_ids) != 1 else ''}")
    meta.append(" ".join(p.themes))
    pid = p.puzzle_id
    inputs, labels, boards = [], [], []
    for k, image in enumerate(images):
        inputs.append(tag("input", type="radio", name=pid, id=f"{pid}-{k}", class_=f"s{k}", checked=k == 1))
        label = "Start" if k == 0 else ("Puzzle" if k == 1 else str(k - 1))
        labels.append(tag("label", label, for_=f"{pid}-{k}", class_=f"l{k}"))
        caption: list[Html | str]
        if k == 0:
            caption = [f"{opponent} to move."]
        elif k == 1:
            caption = [f"{opponent} played {sans[0]}. ", tag("strong", f"{solver} to move: {task}.")]
        else:
            caption = [f"{sans[k - 1]} — {_role(p, k - 1)}"]
        alt = f"Board after step {k}" if k else "Board at the start"
        boards.append(
            tag(
                "figure",
                tag("img", src=image, alt=alt, width=BOARD_PX, height=BOARD_PX),
                tag("figcaption", caption),
                class_=f"board b{k}",
            )
        )
    solution = [tag("li", f"{san} — {_role(p, i)}") for i, san in enumerate(sans)]
    parts = [
        tag("h2", f"{number}. {solver} to move: {task} ", tag("small", f"({pid})")),
        tag("p", join(meta, " · "), class_="meta"),
        *inputs,
        tag("div", labels, class_="steps"),
        tag("div", boards, class_="boards"),
        tag("details", tag("summary", "Solution"), tag("ol", solution)),
    ]
    return tag("section", Html("\n"), join(parts, Html("\n")), Html("\n"), class_="puzzle", id=pid)
