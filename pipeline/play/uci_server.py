"""The UCI server of `diffimax play` (the engine side of the protocol; the client that drives
engines is `pipeline.engines.uci`): commands on stdin, answers on stdout.

The main thread reads commands; each `go` starts a worker thread that runs `Player.choose`, so
`isready`, `stop` and `quit` are answered at once while it works. The move is sent exactly once
per `go`, by whichever comes first: the worker finishing (unless `go infinite` / `go ponder`, which
wait for `stop`), `stop`, or the hard deadline of the time plan (`pipeline.play.clock`), when the
best choice offered so far is sent — and before any search finished, `instant_move`. Every
`bestmove` is checked against the position's legal moves; a position without one gets
`bestmove (none)`.

Bad input never ends the loop: an unknown command or option (`pipeline.play.uci_options`), a bad
value, an illegal move in `position` or a bad `go` parameter each get one `info string error: ...`
line naming what and where.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Final, TextIO

import chess

from pipeline.engines.options import EngineOptions
from pipeline.human.context import MoverContext
from pipeline.human.models import MoveModel
from pipeline.judging import open_kit
from pipeline.play.choice import Choice, Control, Situation
from pipeline.play.clock import Go, TimePlan, parse_go, plan_time
from pipeline.play.player import Player, instant_move
from pipeline.play.uci_options import OPTIONS, Config, EngineSetup, set_option
from search.errors import DiffimaxError
from search.values import MATE, is_mate_score

ENGINE_NAME: Final = "diffimax play 0.1.0"
ENGINE_AUTHOR: Final = "the diffimax authors"
# Seconds a closing player waits for a search's last engine call before closing the engine anyway.
CLOSE_WAIT: Final = 5.0


def uci_score(value: int) -> str:
    """`cp N` or `mate N` from the side to move's value (mates in plies from the position)."""
    if is_mate_score(value):
        plies = MATE - abs(value)
        return f"mate {(plies + 1) // 2}" if value > 0 else f"mate -{plies // 2}"
    return f"cp {value}"


class Search:
    """One `go`: its worker, its deadline, and the single `bestmove` it sends."""

    def __init__(self, session: Session, board: chess.Board, go: Go, situation: Situation, plan: TimePlan) -> None:
        self.session = session
        self.board = board
        self.go = go
        self.situation = situation
        self.started = time.monotonic()
        self.control = Control(
            soft_deadline=None if plan.soft is None else self.started + plan.soft,
            hard_deadline=None if plan.hard is None else self.started + plan.hard,
            hurry=plan.hurry,
        )
        self.plan = plan
        self.waits_for_stop = go.infinite or go.ponder
        self.lock = threading.Lock()
        self.latest: Choice | None = None
        self.sent = False
        self.done = threading.Event()
        self.failure: str | None = None
        self.worker = threading.Thread(target=self._work, name="diffimax-play search", daemon=True)
        self.watcher = threading.Thread(target=self._watch, name="diffimax-play clock", daemon=True)

    def start(self) -> None:
        self.worker.start()
        if self.control.hard_deadline is not None:
            self.watcher.start()

    def start_clock(self, plan: TimePlan) -> None:
        """`ponderhit`: the time plan starts now, and the move goes out when the work is done."""
        now = time.monotonic()
        self.control.soft_deadline = None if plan.soft is None else now + plan.soft
        self.control.hard_deadline = None if plan.hard is None else now + plan.hard
        self.control.hurry = plan.hurry
        self.waits_for_stop = False
        if self.done.is_set():
            self.send()
        elif self.control.hard_deadline is not None:
            self.watcher.start()

    def offer(self, choice: Choice) -> None:
        with self.lock:
            self.latest = choice

    def _work(self) -> None:
        player = self.session.player
        try:
            if player is None:
                self.failure = self.session.unavailable or "no engine"
            else:
                player.choose(self.board, self.situation, self.control, self.offer)
        except DiffimaxError as error:  # an engine that failed twice, a broken model
            self.failure = f"{type(error).__name__}: {error}"
            self.session.broken = True
        except Exception as error:  # a bug: keep the traceback, still answer with a legal move
            traceback.print_exc(file=sys.stderr)
            self.failure = f"internal error {type(error).__name__}: {error}"
            self.session.broken = True
        finally:
            self.done.set()
        if not self.waits_for_stop:
            self.send()

    def _watch(self) -> None:
        deadline = self.control.hard_deadline
        assert deadline is not None
        self.done.wait(max(0.0, deadline - time.monotonic()))
        if not self.done.is_set() and not self.waits_for_stop:
            self.send()

    def stop(self) -> None:
        """`stop`, `quit`, or a new command that needs the search over: the move now."""
        self.send()

    def send(self) -> None:
        """Send `bestmove` once: the latest offer if it is legal, else the instant move."""
        with self.lock:
            if self.sent:
                return
            self.sent = True
            self.control.stop.set()
            choice = self.latest
        board = self.board
        lines: list[str] = []
        if self.failure:
            lines.append(f"info string error: {self.failure}")
        elapsed = time.monotonic() - self.started
        if not any(board.generate_legal_moves()):
            lines.append("info string no legal move: the game is over")
            self.session.write(*lines, "bestmove (none)")
            return
        legal = {move.uci() for move in board.legal_moves}
        if choice is not None and choice.move in legal:
            move = choice.move
            if not choice.complete:
                lines.append(f"info string stopped after {elapsed:.2f} s, before the style's last stage")
            score = choice.value if choice.value is not None else choice.shallow_value
            # Every move says its time from the `go` (the engine's share of the clock; the pipe's
            # share is the GUI's Move Overhead), with the score when a search gave one.
            shown = "" if score is None else f"score {uci_score(score)} "
            lines.append(f"info {shown}nodes {choice.nodes} time {round(elapsed * 1000)} pv {move}")
            lines.append(f"info string {choice.reason}")
        else:
            move = instant_move(board)
            choice = None
            lines.append(f"info time {round(elapsed * 1000)} pv {move}")
            lines.append(f"info string no search finished in {elapsed:.2f} s: {move}, the instant move")
        if self.session.player is not None:
            self.session.player.commit(board, move, choice)
        self.session.write(*lines, f"bestmove {move}")


class Session:
    """The UCI loop's state: the options, the position, the player and the search in progress."""

    def __init__(self, out: TextIO, config: Config | None = None) -> None:
        self.out = out
        self.config = config or Config()
        self.write_lock = threading.Lock()
        self.board: chess.Board | None = chess.Board()
        self.player: Player | None = None
        self.opened: EngineSetup | None = None  # what the player's resources were opened with
        self.unavailable: str | None = None  # why there is no player
        self.broken = False  # the backend failed: re-open it before the next search
        self.search: Search | None = None
        self.base_seconds: int | None = None
        self.model: MoveModel | None = None

    # -- output --------------------------------------------------------------------------------

    def write(self, *lines: str) -> None:
        with self.write_lock:
            try:
                for line in lines:
                    self.out.write(line + "\n")
                self.out.flush()
            except (BrokenPipeError, ValueError):  # the GUI has gone (closed pipe or file): nobody to tell
                pass

    def error(self, message: str) -> None:
        self.write(f"info string error: {' '.join(message.split())}")

    # -- resources -----------------------------------------------------------------------------

    def ensure_player(self) -> None:
        """Open the backend, model and corpus of the current setup, unless already open."""
        setup = self.config.setup
        if self.player is not None and self.opened == setup and not self.broken:
            self.player.settings = self.config.play
            return
        self.close_player()
        self.opened, self.broken = setup, False
        self.unavailable = None
        kit = open_kit(setup.engine, setup.options, setup.human, without=self.play_without)
        model = kit.model
        if model is not None:
            try:  # start the model's own engine now, not during the first move
                model.move_probabilities(chess.Board(), MoverContext())
            except DiffimaxError as error:
                self.play_without("model", error)
                model.close()
                model = None
        self.model = model
        if kit.backend is not None:
            self.player = Player(kit.backend, self.config.play, model=model, corpus=kit.corpus)

    def play_without(self, part: str, error: DiffimaxError) -> None:
        """A part of the setup that did not open: said once, and play goes on without it."""
        if part == "model":
            self.error(f"human model {self.config.setup.human.model!r} not loaded, playing without it: {error}")
        elif part == "corpus":
            self.error(f"corpus not loaded, playing without it: {error}")
        else:
            self.unavailable = f"engine {self.config.setup.engine!r} unavailable: {error}"
            self.error(self.unavailable + " (playing instant moves)")

    def close_player(self) -> None:
        player, self.player = self.player, None
        if player is not None:
            # A search may still be finishing its last engine call: let it, within reason.
            locked = player.lock.acquire(timeout=CLOSE_WAIT)
            try:
                player.backend.close()
            finally:
                if locked:
                    player.lock.release()
        model, self.model = self.model, None
        if model is not None:
            model.close()

    # -- commands ------------------------------------------------------------------------------

    def finish_search(self) -> None:
        search, self.search = self.search, None
        if search is not None:
            search.stop()

    def handle(self, line: str) -> bool:
        """Run one command; False after `quit`."""
        tokens = line.split()
        if not tokens:
            return True
        command, args = tokens[0].lower(), tokens[1:]
        handler: Callable[[list[str], str], None] | None = {
            "uci": self.cmd_uci,
            "isready": self.cmd_isready,
            "setoption": self.cmd_setoption,
            "ucinewgame": self.cmd_ucinewgame,
            "position": self.cmd_position,
            "go": self.cmd_go,
            "stop": self.cmd_stop,
            "ponderhit": self.cmd_ponderhit,
            "debug": lambda args, line: None,
            "register": lambda args, line: self.write("registration ok"),
        }.get(command)
        if command == "quit":
            self.finish_search()
            self.close_player()
            return False
        if handler is None:
            self.error(f"unknown command {tokens[0]!r}")
            return True
        handler(args, line)
        return True

    def cmd_uci(self, args: list[str], line: str) -> None:
        self.write(
            f"id name {ENGINE_NAME}",
            f"id author {ENGINE_AUTHOR}",
            *(spec.announce(self.config) for spec in OPTIONS),
            "uciok",
        )

    def cmd_isready(self, args: list[str], line: str) -> None:
        if self.search is None or self.search.done.is_set():
            self.ensure_player()
        self.write("readyok")

    def cmd_setoption(self, args: list[str], line: str) -> None:
        text = line.strip()[len("setoption") :].strip()
        if not text.lower().startswith("name "):
            self.error(f"setoption needs 'name <option> [value <value>]', got {line.strip()!r}")
            return
        body = text[5:]
        lowered = body.lower()
        at = lowered.find(" value ")
        name, value = (body[:at], body[at + 7 :]) if at >= 0 else (body.removesuffix(" value"), "")
        try:
            self.config = set_option(self.config, name, value)
        except DiffimaxError as error:
            self.error(str(error))
            return
        if self.player is not None and self.opened == self.config.setup:
            self.player.settings = self.config.play

    def cmd_ucinewgame(self, args: list[str], line: str) -> None:
        self.finish_search()
        self.base_seconds = None
        if self.player is not None:
            with self.player.lock:
                self.player.settings = self.config.play
                self.player.new_game()

    def cmd_position(self, args: list[str], line: str) -> None:
        self.board = None
        if not args:
            self.error("position needs startpos or fen <FEN>")
            return
        lowered = [token.lower() for token in args]
        moves_at = lowered.index("moves") if "moves" in lowered else len(args)
        if lowered[0] == "startpos":
            board = chess.Board()
        elif lowered[0] == "fen":
            fen = " ".join(args[1:moves_at])
            try:
                board = chess.Board(fen)
            except ValueError as error:
                self.error(f"invalid FEN {fen!r} in position: {error}")
                return
            if board.status() != chess.STATUS_VALID:
                self.error(f"impossible position in FEN {fen!r}")
                return
        else:
            self.error(f"position needs startpos or fen, got {args[0]!r}")
            return
        for number, text in enumerate(args[moves_at + 1 :], start=1):
            try:
                move = board.parse_uci(text.lower())
            except ValueError:
                self.error(f"illegal move {text!r} (move {number} of the position command) in FEN {board.fen()!r}")
                return
            board.push(move)
        self.board = board

    def cmd_go(self, args: list[str], line: str) -> None:
        self.finish_search()
        go, problems = parse_go(args)
        for problem in problems:
            self.error(problem)
        board = self.board
        if board is None:
            self.error("no valid position: send position startpos|fen ... first")
            self.write("bestmove (none)")
            return
        self.ensure_player()
        if self.player is not None:
            self.player.settings = self.config.play
        turn = board.turn
        ours = go.wtime if turn == chess.WHITE else go.btime
        theirs = go.btime if turn == chess.WHITE else go.wtime
        if self.base_seconds is None and ours is not None:  # the first move of the game: clocks at base
            self.base_seconds = round(max(ours, theirs or 0) / 1000)
        increment = go.winc if turn == chess.WHITE else go.binc
        searchmoves = None
        if go.searchmoves is not None:
            legal = {move.uci() for move in board.legal_moves}
            searchmoves = frozenset(m for m in go.searchmoves if m in legal)
            unknown = sorted(set(go.searchmoves) - legal)
            if unknown:
                self.error(f"go searchmoves: {', '.join(unknown)} not legal here, ignored")
            if not searchmoves:
                searchmoves = None
        if go.mate is not None:
            self.error("go mate is not supported: searching as usual")
        situation = Situation(
            our_clock=None if ours is None else ours / 1000,
            their_clock=None if theirs is None else theirs / 1000,
            base_seconds=self.base_seconds,
            increment_seconds=None if increment is None else round(increment / 1000),
            searchmoves=searchmoves,
            limits=None if go.nodes is None and go.depth is None else EngineOptions(nodes=go.nodes, depth=go.depth),
        )
        plan = plan_time(go, turn, self.config.time)
        self.search = Search(self, board.copy(), go, situation, plan)
        self.search.start()

    def cmd_stop(self, args: list[str], line: str) -> None:
        self.finish_search()

    def cmd_ponderhit(self, args: list[str], line: str) -> None:
        """We never ask to ponder (no Ponder option), but a `go ponder` the GUI sends anyway becomes
        a normal move at `ponderhit`: its clock starts now."""
        search = self.search
        if search is not None and search.go.ponder:
            search.start_clock(
                plan_time(dataclasses.replace(search.go, ponder=False), search.board.turn, self.config.time)
            )

    def run(self, lines: Iterable[str]) -> int:
        try:
            for line in lines:
                if not self.handle(line):
                    return 0
        finally:
            self.finish_search()
            self.close_player()
        return 0


def run_uci(stdin: TextIO, stdout: TextIO, config: Config | None = None) -> int:
    """The UCI loop until `quit` or the end of input; the exit code."""
    return Session(stdout, config).run(iter(stdin.readline, ""))
