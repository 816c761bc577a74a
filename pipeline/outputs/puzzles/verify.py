"""Engine verification: one engine per verifier (`EngineVerifier`), serially on the driver or on a
pool of Ray actors (`VerifyWorker`), verdicts taken back in the serial order (`Collector`), so the
output is the same whatever the number of workers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import chess
import chess.engine
import ray
import ray.exceptions

from pipeline.common.progress import Progress
from pipeline.engines.process import EngineError, EngineStartError, UciEngine, search_timeout
from pipeline.outputs.puzzles.records import Checked, DropReason, MultiPvLine, PracticalCheck, VerificationStopped
from pipeline.outputs.puzzles.rules import check_candidate
from pipeline.outputs.puzzles.standards import CONFIRM_NODES_FACTOR, Standard

ENGINE_HASH_MB = 16  # UCI Hash per engine; cleared (ucinewgame) before every candidate
VERIFY_BATCH = 2  # distinct candidates per call to a verification actor (a call costs ~1 ms; a candidate >= 2 searches)
BATCHES_PER_WORKER = 2  # calls queued per actor, so that none waits for the driver between two calls
WORKER_RESTARTS = 3  # times a verification actor whose process died is restarted (its batch re-verified)
# Candidates in a row (in the verification order) that the engine fails on before the run stops:
# one position an engine hangs or crashes on is dropped (`engine_failed`), an engine that fails
# on every search is broken and stops the run with its own line.
ENGINE_FAILURES_IN_A_ROW = 3
# Two puzzles of one game whose roots are this many plies apart or fewer are one moment of the game
# (the same fork found from the move before it, or the two halves of one combination).
MOMENT_PLIES = 2
# The most puzzles one game gives a collection by default (`--per-game`): a coach's 27 puzzles came
# from 12 games, five from one.
DEFAULT_PER_GAME = 2


class EngineVerifier:
    """Owns one UCI engine (`pipeline.engines.process.UciEngine`: timeouts, one restart after a
    crash, no orphan): MultiPV 2 at `nodes` per search (`deeper`: CONFIRM_NODES_FACTOR times as
    many, its timeout the deeper search's), Threads 1, Hash ENGINE_HASH_MB.

    Call `new_puzzle()` before each candidate: the next search starts with `ucinewgame` (hash
    cleared), so a candidate's verdict depends on nothing verified before it, in this engine or in
    which engine of a pool verifies it. An engine that cannot start raises `EngineStartError`; one
    that crashes twice or hangs during a search, `EngineError` (one line each).
    """

    def __init__(self, engine: str = "stockfish", *, nodes: int = 500_000, timeout: float | None = None) -> None:
        wait = search_timeout(nodes * CONFIRM_NODES_FACTOR) if timeout is None else timeout
        self.engine = UciEngine.open(engine, {"Threads": 1, "Hash": ENGINE_HASH_MB}, timeout=wait)
        self.path = self.engine.path
        self.name = self.engine.name
        self.limit = chess.engine.Limit(nodes=nodes)
        self.deeper_limit = chess.engine.Limit(nodes=nodes * CONFIRM_NODES_FACTOR)
        self._game = object()
        self.searches = 0

    def new_puzzle(self) -> None:
        self._game = object()

    def __call__(
        self, board: chess.Board, lines: int = 2, root_moves: Sequence[chess.Move] | None = None
    ) -> list[MultiPvLine]:
        return self._lines(board, lines, self.limit, root_moves)

    def deeper(
        self, board: chess.Board, lines: int = 2, root_moves: Sequence[chess.Move] | None = None
    ) -> list[MultiPvLine]:
        """The search again at CONFIRM_NODES_FACTOR times the nodes (`Standard.confirm_band`)."""
        return self._lines(board, lines, self.deeper_limit, root_moves)

    def _lines(
        self, board: chess.Board, lines: int, limit: chess.engine.Limit, root_moves: Sequence[chess.Move] | None
    ) -> list[MultiPvLine]:
        result = self.engine.search(board, lines, limit, root_moves=root_moves, game=self._game)
        self.searches += 1
        found = []
        for info in result.infos:
            pv = info.get("pv")
            score = info.get("score")
            if pv and score is not None:
                found.append(MultiPvLine(pv[0], score.relative, tuple(pv)))
        if not found:
            raise EngineError(f"engine {self.path} returned no line on FEN {board.fen()!r}")
        return found

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
    games: tuple[str, ...] = ()
    """The games the candidate was found in (a collection caps the puzzles of one game)."""
    moments: tuple[tuple[str, int], ...] = ()
    """Each game's ply of the candidate's root: two puzzles of one game within MOMENT_PLIES are one
    moment of it."""
    opponent_rating: int | None = None
    """Set puzzles: the rating of the player replying to the setting move (the practical rule)."""
    practical: bool = False
    """Set puzzles: the dataset's screen found the setting move safe with a trap chance of at least
    PRACTICAL_FLOOR, so the practical rule is tried where the only-move rule fails."""
    defence_from: int | None = None
    """Punish candidates when defensive puzzles are asked for: the solver's value before the
    opponent's move (cp), which lets a line that ends level be a defensive puzzle."""
    defence_only: bool = False
    """Only the defensive kind is asked for: a line that wins (+2 or mate) is dropped (`wins`)."""


@dataclass(frozen=True)
class EngineFailed:
    """A candidate the engine crashed twice or hung on (`engine_failed`): its one line, naming the
    position, for the report."""

    message: str


# What the engine made of one task: the verified line, why it was dropped, or the engine's failure.
Verdict = Checked | DropReason | EngineFailed


@dataclass(frozen=True)
class Verification:
    """How to verify: the engine, the standard, and the practical rule's human-move model."""

    engine: str
    standard: Standard
    model: str | None = "default"
    """The human-move model of the practical set rule (`load_move_model`), None: no practical rule."""
    per_game: int | None = None
    """The most puzzles one game gives (None: any number); the lichess standard's is one."""

    def game_cap(self) -> int | None:
        return 1 if self.standard.one_per_game else self.per_game


class Verifier:
    """One engine, and the practical rule's judge when a set task needs it (started on demand)."""

    def __init__(self, how: Verification) -> None:
        self.how = how
        self.engine = EngineVerifier(how.engine, nodes=how.standard.nodes)
        self.setting: Any = None

    def __call__(self, task: VerifyTask) -> Verdict:
        """One candidate from an empty hash (the same on the driver and in an actor). An engine
        that crashes twice or hangs on it fails this candidate only (the next search starts a new
        engine); one that cannot start again raises `EngineStartError`."""
        self.engine.new_puzzle()
        judge = None
        if task.practical and "practical" in self.how.standard.set_rules and self.how.model is not None:
            judge = self._practical(task)
        try:
            verdict = check_candidate(
                task.fen,
                task.moves,
                task.fixed,
                self.engine,
                self.how.standard,
                judge,
                defence_from=task.defence_from,
                confirm=self.engine.deeper,
            )
        except EngineStartError:
            raise
        except EngineError as error:
            return EngineFailed(str(error))
        if task.defence_only and not isinstance(verdict, str) and verdict.outcome != "defence":
            return "wins"
        return verdict

    def _practical(self, task: VerifyTask) -> Any:
        def judge(board: chess.Board, move: chess.Move) -> PracticalCheck | None:
            if self.setting is None:  # started when a line first needs it (the model loads on demand)
                from pipeline.outputs.puzzles.setting_move import SettingJudge

                self.setting = SettingJudge(self.how.engine, model=self.how.model or "default")
            return self.setting(board, move, task.opponent_rating)  # type: ignore[no-any-return]

        return judge

    def close(self) -> None:
        self.engine.close()
        if self.setting is not None:
            self.setting.close()

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Collector:
    """Takes verdicts in task order, and applies to that order (so a pool cuts where the serial run
    cuts) what makes a collection rather than a heap of lines: one puzzle per game moment (a
    puzzle within MOMENT_PLIES of one already kept from the same game, or ending in the position
    one ends in, is `same_moment`), at most `per_game` puzzles of one game (`per_game`), and the
    `limit` of puzzles kept. Shows each verdict on `progress`. ENGINE_FAILURES_IN_A_ROW failed
    candidates in a row stop the run (`EngineError`, the last failure's line)."""

    def __init__(
        self, tasks: Sequence[VerifyTask], limit: int | None, per_game: int | None, progress: Progress | None = None
    ) -> None:
        self.tasks = tasks
        self.limit = limit
        self.per_game = per_game
        self.progress = progress or Progress.quiet()
        self.verdicts: list[Verdict] = []
        self.kept = 0
        self.of_game: dict[str, int] = {}
        self.plies: dict[str, list[int]] = {}
        self.finals: set[str] = set()
        self.failed_in_a_row = 0

    @property
    def full(self) -> bool:
        return self.limit is not None and self.kept >= self.limit

    def take(self, verdict: Verdict) -> None:
        task = self.tasks[len(self.verdicts)]
        if isinstance(verdict, EngineFailed):
            self.failed_in_a_row += 1
            if self.failed_in_a_row >= ENGINE_FAILURES_IN_A_ROW:
                raise EngineError(f"{verdict.message}; the engine failed on {self.failed_in_a_row} candidates in a row")
        else:
            self.failed_in_a_row = 0
        if isinstance(verdict, Checked):
            verdict = self._collected(task, verdict)
        self.verdicts.append(verdict)
        self.kept += isinstance(verdict, Checked)
        self.progress.advance(detail=f"{self.kept:,} puzzles")

    def _collected(self, task: VerifyTask, checked: Checked) -> Verdict:
        """`checked`, or why the collection leaves it out."""
        final = chess.Board(task.fen)
        for move in checked.moves:
            final.push_uci(move)
        near = any(abs(ply - kept) <= MOMENT_PLIES for game, ply in task.moments for kept in self.plies.get(game, ()))
        if near or final.epd() in self.finals:
            return "same_moment"
        if self.per_game is not None and any(self.of_game.get(game, 0) >= self.per_game for game in task.games):
            return "per_game"
        self.finals.add(final.epd())
        for game, ply in task.moments:
            self.plies.setdefault(game, []).append(ply)
        for game in task.games:
            self.of_game[game] = self.of_game.get(game, 0) + 1
        return checked


@dataclass(frozen=True)
class BatchOutcome:
    """What a verification actor returns for one batch: a verdict per task, in order, or the one
    line that stops the job (an engine that cannot start)."""

    verdicts: tuple[Verdict, ...]
    fatal: str | None = None
    """The engine's failure to start (`EngineStartError`), which stops the job."""


class VerifyWorker:
    """The Ray actor: its own `Verifier` for the whole run, verifying a batch per call. An engine
    that cannot start is not an exception here (Ray would answer it by restarting the actor) but a
    fatal outcome of every call; one that fails a search fails that candidate (`EngineFailed`)."""

    def __init__(self, how: Verification) -> None:
        self.verifier: Verifier | None = None
        self.startup_error: str | None = None
        try:
            self.verifier = Verifier(how)
        except EngineStartError as error:
            self.startup_error = str(error)

    def __call__(self, batch: Sequence[VerifyTask]) -> BatchOutcome:
        if self.verifier is None:
            return BatchOutcome((), fatal=self.startup_error)
        try:
            return BatchOutcome(tuple(self.verifier(task) for task in batch))
        except EngineStartError as error:
            return BatchOutcome((), fatal=str(error))


def verify_serial(
    tasks: Sequence[VerifyTask], how: Verification, limit: int | None, progress: Progress | None = None
) -> list[Verdict]:
    """Verify `tasks` in order on one engine here, stopping once `limit` of them are kept."""
    collector = Collector(tasks, limit, how.game_cap(), progress)
    with Verifier(how) as verifier:
        for task in tasks:
            if collector.full:
                break
            collector.take(verifier(task))
    return collector.verdicts


def verify_on_pool(
    tasks: Sequence[VerifyTask], how: Verification, limit: int | None, workers: int, progress: Progress | None = None
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
    actors = [actor_class.remote(how) for _ in range(workers)]
    collector = Collector(tasks, limit, how.game_cap(), progress)
    load = [0] * workers  # calls queued per actor
    in_flight: dict[Any, tuple[int, int]] = {}  # call -> (batch index, actor index)
    finished: dict[int, tuple[Verdict, ...]] = {}  # batch index -> its verdicts, until taken in order
    taken = sent = 0  # batches taken in order; batches sent
    try:
        while True:
            while taken in finished:
                for verdict in finished.pop(taken):
                    if not collector.full:
                        collector.take(verdict)
                taken += 1
            if taken == len(batches) or collector.full:
                computed = sum(len(batch) for batch in batches[:taken]) + sum(map(len, finished.values()))
                return collector.verdicts, computed - len(collector.verdicts)
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
                    raise EngineStartError(outcome.fatal)
                finished[batch_index] = outcome.verdicts
    finally:
        # Calls still queued are not needed: cancelled first, so that Ray does not retry them (and
        # say so) when their actor is killed; the engines end with the actors.
        for ref in in_flight:
            ray.cancel(ref)
        for actor in actors:
            ray.kill(actor, no_restart=True)


def run_verification(
    tasks: Sequence[VerifyTask],
    how: Verification,
    limit: int | None,
    workers: int | None,
    progress: Progress | None = None,
) -> tuple[list[Verdict], int, int]:
    """The verdicts of `tasks` in order, up to the one that makes `limit` puzzles (all without a
    limit); the verdicts computed past that and discarded; the engines that verified.

    `workers` 1 verifies here, serially, without Ray; None means one per CPU of the Ray cluster.
    Ray is used as found, or a local cluster is started for the call (and stopped after it). A
    pool is never larger than the batches to verify, and a single batch is verified here.
    """
    if workers == 1 or len(tasks) <= VERIFY_BATCH:
        return verify_serial(tasks, how, limit, progress), 0, 1
    from pipeline.common.cluster import ray_session  # the miner's quiet local cluster

    with ray_session():  # Ray as found, or a local cluster for the call, stopped (quietly on Ctrl-C) after it
        if workers is None:
            cluster: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
            workers = max(1, int(cluster.get("CPU", 1)))
        workers = min(workers, math.ceil(len(tasks) / VERIFY_BATCH))
        if workers == 1:
            return verify_serial(tasks, how, limit, progress), 0, 1
        verdicts, discarded = verify_on_pool(tasks, how, limit, workers, progress)
        return verdicts, discarded, workers
