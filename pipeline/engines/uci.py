"""DiffiMax on a UCI engine: `UciBackend` drives Stockfish (or any UCI engine) through
`chess.engine` and produces the same records as the native backend (`search.backend`).

How the engine is asked (docs/uci.md has the reasoning and the measurements):

- A *node query* asks the engine about the moves at one position. A move's value is the engine's
  score of the line that starts with it, searched under the per-line limit (`EngineLimits`).
- Adaptive (the default): the best line first, then the best of the moves not yet seen
  (`go ... searchmoves`), one line per call, until the line just found lies beyond the margin
  (R at an opponent node, S at a setter node). The engine then vouches that no unseen move is
  better for the side to move than that line: for the classification this is a lower bound
  ("> v1 + R"), and it is reported as a bound (`exact=False`), never as a value.
- Naive: one MultiPV search over every legal move at the same per-line limit (the reference that
  the agreement test and the benchmark compare with).
- Every node query starts with `ucinewgame` (empty hash and histories), so its answer depends on
  the position, its move history and the limits alone: with one thread and a node or depth
  limit, reruns agree, and so do searches that reach a node through different work.

The engine runs on a private daemon event-loop thread (a `chess.engine.SimpleEngine` thread is
not a daemon, so a forgotten engine would keep the interpreter alive); on Linux the engine is
also killed by the kernel when that thread ends, so no engine outlives its owner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
import weakref
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, TypeVar

import chess
import chess.engine

from search.alphabeta import SearchStats
from search.analysis import ResponseAnalysis, ResponseValue, TrapRecord, classify_responses, trap_records
from search.backend import Backend
from search.chessgame import FenError, board_from_fen
from search.diffimax import DiffiMaxResult
from search.settings import DiffiMaxSettings, SettingsError
from search.values import MATE, MATE_BOUND, Value

Strategy = Literal["adaptive", "naive"]
STRATEGIES: tuple[Strategy, ...] = ("adaptive", "naive")

# Where `--engine NAME` is looked for after PATH (Debian installs Stockfish in /usr/games).
EXTRA_ENGINE_DIRS = ("/usr/games",)
# Mining default: engine nodes per line (the score of one move); depth 13-16 in the middlegame
# for Stockfish 15.1. 200k classified replies no closer to a 600k-node reference (docs/uci.md).
DEFAULT_NODES = 100_000
# One thread: the only setting under which a node limit gives reproducible results.
DEFAULT_THREADS = 1
# Megabytes of hash; Stockfish's default, ample for a few million nodes per node query.
DEFAULT_HASH_MB = 16
# Seconds one engine call (one `go`, or starting the engine) may take before it counts as hung.
DEFAULT_TIMEOUT = 60.0
# Seconds an engine gets to exit after `quit` before it is killed.
QUIT_GRACE = 2.0
# Seconds to wait for a killed engine to be reaped.
KILL_GRACE = 5.0
# Lines asked for per adaptive call after the first: one, so no line is searched in vain (a call
# for k lines costs k lines whether or not the answer needed them all).
ADAPTIVE_BATCH = 1
# What the engine's info lines are parsed for.
INFO = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE | chess.engine.INFO_PV
# Linux prctl(2) option: the signal the engine gets when the thread that started it ends.
PR_SET_PDEATHSIG = 1

_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
T = TypeVar("T")


class EngineError(RuntimeError):
    """The engine is missing or broken, crashed again after a restart, or hung."""


class _EngineCrashed(Exception):
    """The engine died or broke the protocol during a call (internal: retried once)."""


class _EngineTimedOut(Exception):
    """An engine call did not finish within the timeout (internal: not retried)."""


# -- limits and scores ------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineLimits:
    """How long the engine searches ONE line (the score of one move). A call that asks for k
    lines gets k times the node and time budget; a depth applies to every line as it is. The
    engine stops at whichever limit it reaches first."""

    nodes: int | None = DEFAULT_NODES
    """Engine nodes per line; deterministic with one thread."""
    depth: int | None = None
    """Engine search depth in plies, for every line; deterministic with one thread."""
    movetime: float | None = None
    """Seconds per line; never reproducible."""

    def __post_init__(self) -> None:
        if self.nodes is None and self.depth is None and self.movetime is None:
            raise SettingsError("engine limits: give at least one of nodes, depth, movetime")
        for name, amount in (("nodes", self.nodes), ("depth", self.depth)):
            if amount is not None and (isinstance(amount, bool) or not isinstance(amount, int) or amount < 1):
                raise SettingsError(f"invalid engine {name} {amount!r}: must be a whole number >= 1")
        if self.movetime is not None and not (math.isfinite(self.movetime) and self.movetime > 0):
            raise SettingsError(f"invalid engine movetime {self.movetime!r}: must be > 0 seconds")

    def for_lines(self, lines: int) -> chess.engine.Limit:
        """The limit of one engine call that asks for `lines` lines."""
        return chess.engine.Limit(
            nodes=None if self.nodes is None else self.nodes * lines,
            depth=self.depth,
            time=None if self.movetime is None else self.movetime * lines,
        )

    @property
    def deterministic(self) -> bool:
        return self.movetime is None

    def describe(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "depth": self.depth, "movetime": self.movetime, "per": "line"}


def line_value(score: chess.engine.PovScore, setter: chess.Color, ply: int) -> Value:
    """An engine score of a line at a position `ply` plies below the DiffiMax root, as a setter
    value: centipawns, or `MATE - n` / `-(MATE - n)` with n the plies from the root to the mate.

    The engine counts mates in moves from the analysed position: "mate 3" for the side to move
    is 5 plies away, "mate -3" (the side to move is mated) 6 plies.
    """
    relative = score.relative
    mate = relative.mate()
    if relative is chess.engine.MateGiven:
        value = MATE - ply
    elif mate is None:
        cp = relative.score()
        assert cp is not None
        value = max(-MATE_BOUND + 1, min(MATE_BOUND - 1, cp))  # never mistaken for a mate
    elif mate > 0:
        value = MATE - (ply + 2 * mate - 1)
    else:
        value = -(MATE - (ply - 2 * mate))
    return value if score.turn == setter else -value


@dataclass(frozen=True)
class EngineLine:
    """One line the engine reported: a move at the queried position and its score."""

    move: chess.Move
    value: Value  # setter's view, mates counted from the DiffiMax root
    pv: tuple[str, ...]  # the principal variation after `move`
    depth: int
    bound: bool  # the engine flagged the score as a bound (stopped inside a re-search)


# -- engine resolution and process ------------------------------------------------------------


def resolve_engine(spec: str) -> str:
    """The executable behind `--engine`: a path (anything with a `/`), or a name looked up on
    PATH and then in /usr/games."""
    text = spec.strip()
    if not text:
        raise EngineError("no engine given: expected a name such as 'stockfish' or a path")
    if os.sep in text:
        if not os.path.exists(text):
            raise EngineError(f"engine not found: {text}")
        if not os.path.isfile(text) or not os.access(text, os.X_OK):
            raise EngineError(f"engine {text} is not an executable file")
        return os.path.abspath(text)
    found = shutil.which(text) or shutil.which(text, path=os.pathsep.join(EXTRA_ENGINE_DIRS))
    if found is None:
        raise EngineError(f"engine not found: {text!r} is not on PATH or in {', '.join(EXTRA_ENGINE_DIRS)}")
    return found


def _die_with_parent() -> None:
    """Runs in the engine process before exec: the kernel kills it when the thread that started
    it ends, i.e. when its owner exits, crashes or is killed."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


@dataclass
class _Handles:
    """What the finalizer of an `_EngineProcess` needs (it must not reference the object)."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    transport: asyncio.SubprocessTransport | None = None
    protocol: chess.engine.UciProtocol | None = None


def _shutdown(handles: _Handles, graceful: bool = True) -> None:
    """Quit the engine (or kill it), wait until it is reaped, then stop the loop thread."""
    loop, transport, protocol = handles.loop, handles.transport, handles.protocol
    if threading.current_thread() is handles.thread:  # a finalizer run by the loop itself: no waiting
        if transport is not None:
            with contextlib.suppress(OSError):
                os.kill(transport.get_pid(), signal.SIGKILL)
        loop.stop()
        return
    if transport is not None and protocol is not None and not loop.is_closed():

        async def stop() -> None:
            if graceful and not protocol.returncode.done():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(protocol.quit(), QUIT_GRACE)
            transport.close()  # kills the process if it is still running
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(protocol.returncode), KILL_GRACE)

        try:
            asyncio.run_coroutine_threadsafe(stop(), loop).result(QUIT_GRACE + KILL_GRACE + 1)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pid = transport.get_pid()
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    handles.transport = handles.protocol = None
    if not loop.is_closed():
        loop.call_soon_threadsafe(loop.stop)
        handles.thread.join(KILL_GRACE)
        if not handles.thread.is_alive():
            loop.close()


def _is_bound(info: chess.engine.InfoDict) -> bool:
    return bool(info.get("lowerbound") or info.get("upperbound"))


@dataclass(frozen=True)
class _CallResult:
    infos: list[chess.engine.InfoDict]  # the final info per MultiPV index, in index order
    nodes: int


class _EngineProcess:
    """One engine process, driven by `chess.engine`'s asyncio protocol on a private loop thread."""

    def __init__(self, path: str, options: dict[str, int], timeout: float) -> None:
        self.path = path
        self.options: dict[str, int] = {}
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=f"uci-engine {path}", daemon=True)
        thread.start()
        self._handles = _Handles(loop, thread)
        self._finalizer = weakref.finalize(self, _shutdown, self._handles)
        try:
            self._run(self._start(options), timeout)
        except BaseException:
            self.close(graceful=False)
            raise

    async def _start(self, options: dict[str, int]) -> None:
        transport, protocol = await chess.engine.UciProtocol.popen(self.path, setpgrp=True, preexec_fn=_die_with_parent)
        self._handles.transport, self._handles.protocol = transport, protocol
        await protocol.initialize()
        supported = {name: value for name, value in options.items() if name in protocol.options}
        await protocol.configure(supported)
        self.options = supported

    @property
    def protocol(self) -> chess.engine.UciProtocol:
        protocol = self._handles.protocol
        if protocol is None:
            raise _EngineCrashed("engine is not running")
        return protocol

    @property
    def pid(self) -> int | None:
        transport = self._handles.transport
        return None if transport is None else transport.get_pid()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coroutine, timeout), self._handles.loop)
        try:
            return future.result(timeout + QUIT_GRACE)
        except concurrent.futures.TimeoutError:  # = TimeoutError: asyncio's or ours
            future.cancel()
            raise _EngineTimedOut from None

    def search(
        self,
        board: chess.Board,
        lines: int,
        limit: chess.engine.Limit,
        root_moves: Sequence[chess.Move] | None,
        game: object,
        timeout: float,
    ) -> _CallResult:
        """One `go`: the engine's final line for each of `lines` MultiPV indices."""
        try:
            return self._run(self._search(board, lines, limit, root_moves, game), timeout)
        except (chess.engine.EngineError, OSError) as error:  # EngineTerminatedError included
            raise _EngineCrashed(_one_line(error)) from None

    async def _search(
        self,
        board: chess.Board,
        lines: int,
        limit: chess.engine.Limit,
        root_moves: Sequence[chess.Move] | None,
        game: object,
    ) -> _CallResult:
        analysis = await self.protocol.analysis(
            board, limit, multipv=lines if lines > 1 else None, game=game, info=INFO, root_moves=root_moves
        )
        final: dict[int, chess.engine.InfoDict] = {}  # the last line per MultiPV index
        exact: dict[chess.Move, chess.engine.InfoDict] = {}  # the last unflagged line per move
        nodes = 0
        with analysis:
            async for info in analysis:
                nodes = max(nodes, info.get("nodes", 0))
                pv = info.get("pv")
                if "score" in info and pv:
                    # Replace, never merge: a bound flag must not outlive the line it was on.
                    final[info.get("multipv", 1)] = info
                    if not _is_bound(info):
                        exact[pv[0]] = info
        # A search stopped by its node or time limit inside an aspiration re-search ends on a
        # bound (with a cut PV): take that move's score from its last completed iteration.
        ordered = [final[index] for index in sorted(final)]
        return _CallResult([exact.get(info["pv"][0], info) if _is_bound(info) else info for info in ordered], nodes)

    def engine_id(self) -> dict[str, str]:
        return dict(self.protocol.id)

    def close(self, graceful: bool = True) -> None:
        if self._finalizer.alive:
            self._finalizer.detach()
            _shutdown(self._handles, graceful)


# -- the backend --------------------------------------------------------------------------------


def _check_position(board: chess.Board) -> None:
    """Reject what an engine must never see (it may crash on an impossible position)."""
    if type(board).uci_variant != "chess":
        raise FenError(f"unsupported variant {type(board).uci_variant!r} in FEN {board.fen()!r}")
    if board.status() != chess.STATUS_VALID:
        board_from_fen(board.fen())  # raises with the list of problems
        raise FenError(f"impossible position in FEN {board.fen()!r}")


def _rules_value(board: chess.Board, setter: chess.Color, ply: int) -> Value | None:
    """The value fixed by the rules, as `search.chessgame.ChessGame` decides it, or None."""
    if ply > 0 and board.is_repetition(2):
        return 0
    if not any(board.generate_legal_moves()):
        if board.is_check():
            return -(MATE - ply) if board.turn == setter else MATE - ply
        return 0
    if board.halfmove_clock >= 100 or board.is_insufficient_material():
        return 0
    return None


class UciBackend:
    """DiffiMax on a UCI engine (a `search.backend.Backend`). One engine process per backend;
    not thread-safe (give each worker its own, like the native backend)."""

    name: str = "uci"

    def __init__(
        self,
        path: str,
        *,
        threads: int = DEFAULT_THREADS,
        hash_mb: int = DEFAULT_HASH_MB,
        limits: EngineLimits | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        strategy: Strategy = "adaptive",
        exact_root: bool = False,
    ) -> None:
        for label, amount in (("threads", threads), ("hash", hash_mb)):
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
                raise SettingsError(f"invalid engine {label} {amount!r}: must be a whole number >= 1")
        if not (math.isfinite(timeout) and timeout > 0):
            raise SettingsError(f"invalid engine timeout {timeout!r}: must be > 0 seconds")
        if strategy not in STRATEGIES:
            raise SettingsError(f"invalid strategy {strategy!r}: expected adaptive or naive")
        self.path = path
        self.limits = limits or EngineLimits()
        self.timeout = timeout
        self.strategy: Strategy = strategy
        # Explain shows the whole response distribution at the root: every root response gets
        # an exact value (one MultiPV search over all of them), not only those within R.
        self.exact_root = exact_root
        self.requested_options = {"Threads": threads, "Hash": hash_mb}
        self._engine: _EngineProcess | None = None
        self._closed = False
        engine = self._start()  # fail fast on a broken engine
        self._id = engine.engine_id()
        self.options = dict(engine.options)

    # -- lifecycle ----------------------------------------------------------------------------

    def _start(self) -> _EngineProcess:
        try:
            self._engine = _EngineProcess(self.path, self.requested_options, self.timeout)
        except _EngineTimedOut:
            raise EngineError(
                f"engine {self.path} did not start as a UCI engine: no 'uciok' within {self.timeout:g} s"
            ) from None
        except (chess.engine.EngineError, OSError) as error:
            raise EngineError(f"engine {self.path} did not start as a UCI engine: {_one_line(error)}") from None
        return self._engine

    def _discard(self, graceful: bool) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close(graceful)

    @property
    def pid(self) -> int | None:
        """The engine's process id (None between a failure and the next analysis)."""
        return None if self._engine is None else self._engine.pid

    def new_unit(self) -> None:
        """Nothing to forget: every node query already starts with `ucinewgame`."""

    def close(self) -> None:
        self._closed = True
        self._discard(graceful=True)

    def __enter__(self) -> UciBackend:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def describe(self) -> dict[str, Any]:
        engine_name = self._id.get("name", "")
        version = re.search(r"\d+(?:\.\d+)*", engine_name)
        return {
            "name": self.name,
            "engine": engine_name,
            "author": self._id.get("author"),
            "version": version.group(0) if version else engine_name,
            "path": self.path,
            "options": dict(self.options),
            "limits": self.limits.describe(),
            "timeout": self.timeout,
            "strategy": self.strategy,
            "deterministic": self.options.get("Threads", 1) == 1 and self.limits.deterministic,
        }

    # -- analysis ------------------------------------------------------------------------------

    def analyse(self, board: chess.Board, setter: chess.Color, settings: DiffiMaxSettings) -> DiffiMaxResult:
        """DiffiMax at `board` (with its move stack, which the engine sees for repetitions) for
        `setter`. A crash is retried once on a fresh engine; a second crash or a hang raises
        `EngineError` (the next call starts a new engine)."""
        if self._closed:
            raise EngineError(f"engine {self.path}: the backend is closed")
        _check_position(board)
        restarts = 0
        while True:
            engine = self._engine or self._start()
            try:
                result = _Run(self, engine, board, setter, settings).result()
            except _EngineCrashed as crash:
                self._discard(graceful=False)
                if restarts:
                    raise EngineError(f"engine {self.path} crashed twice on FEN {board.fen()!r}: {crash}") from None
                restarts += 1
                continue
            except _EngineTimedOut:
                self._discard(graceful=False)
                raise EngineError(
                    f"engine {self.path} timed out (no answer within {self.timeout:g} s) on FEN {board.fen()!r}"
                ) from None
            result.extra["restarts"] = restarts
            return result


def open_uci_backend(
    spec: str,
    *,
    threads: int = DEFAULT_THREADS,
    hash_mb: int = DEFAULT_HASH_MB,
    nodes: int | None = None,
    depth: int | None = None,
    movetime: float | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    exact_root: bool = False,
) -> UciBackend:
    """A started `UciBackend` for `--engine SPEC`. Without any limit the mining default applies
    (`DEFAULT_NODES` per line); limits are per line (`EngineLimits`)."""
    if nodes is None and depth is None and movetime is None:
        limits = EngineLimits()
    else:
        limits = EngineLimits(nodes=nodes, depth=depth, movetime=movetime)
    return UciBackend(
        resolve_engine(spec), threads=threads, hash_mb=hash_mb, limits=limits, timeout=timeout, exact_root=exact_root
    )


class _Run:
    """One `UciBackend.analyse` call: the DiffiMax visit, its engine calls and counters."""

    def __init__(
        self,
        backend: UciBackend,
        engine: _EngineProcess,
        board: chess.Board,
        setter: chess.Color,
        settings: DiffiMaxSettings,
    ) -> None:
        self.backend = backend
        self.engine = engine
        self.board = board.copy()
        self.setter = setter
        self.settings = settings
        self.analyses: list[ResponseAnalysis] = []
        self.traps: list[TrapRecord] = []
        self.calls = 0
        self.nodes = 0
        self.lines = 0
        self.bound_lines = 0
        self.depths: list[int] = []
        self.engine_seconds = 0.0

    def result(self) -> DiffiMaxResult:
        started = time.perf_counter()
        board, settings = self.board, self.settings
        value, best_move = self._root()
        wall = time.perf_counter() - started
        root_is_opponent = board.turn != self.setter
        analyses = self.analyses
        root_analysis = analyses[0] if analyses and root_is_opponent and analyses[0].path == () else None
        backend = self.backend
        extra: dict[str, Any] = {
            "engine": backend.describe()["engine"],
            "limits": backend.limits.describe(),
            "strategy": backend.strategy,
            "engine_calls": self.calls,
            "engine_lines": self.lines,
            "engine_bound_lines": self.bound_lines,
            "engine_nodes": self.nodes,
            "engine_seconds": self.engine_seconds,
            "wall_seconds": wall,
            "line_depth_min": min(self.depths, default=0),
            "line_depth_max": max(self.depths, default=0),
        }
        stats = SearchStats(nodes=self.nodes)
        return DiffiMaxResult(value, best_move, root_analysis, analyses, self.traps, stats, settings, extra)

    # -- the visit (search.diffimax.DiffiMaxSearch._visit, with engine values) -------------------

    def _root(self) -> tuple[Value, str | None]:
        """Visit the root; returns its value and the side to move's best move."""
        board, depth = self.board, self.settings.depth
        terminal = _rules_value(board, self.setter, 0)
        if terminal is not None:
            return terminal, None
        if depth == 0:
            return self._best_line(0).value, None
        if board.turn != self.setter:
            analysis = self._visit_opponent(depth, ())
            return analysis.best_value, analysis.best
        lines = self._visit_setter(depth, ())
        if lines is None:  # nothing needed the root's lines: one call for its value
            best = self._best_line(0)
            return best.value, best.move.uci()
        move = min(lines, key=lambda m: (-lines[m].value, m.uci()))
        return lines[move].value, move.uci()

    def _visit(self, remaining: int, path: tuple[str, ...]) -> None:
        if remaining == 0 or _rules_value(self.board, self.setter, len(path)) is not None:
            return
        if self.board.turn == self.setter:
            self._visit_setter(remaining, path)
        else:
            self._visit_opponent(remaining, path)

    def _visit_setter(self, remaining: int, path: tuple[str, ...]) -> dict[chess.Move, EngineLine] | None:
        """Visit the moves within the safety margin S of the best; returns the lines that decided
        them (None when no engine call was needed: S unbounded, or children that are leaves)."""
        if remaining == 1:
            return None  # every child is a leaf: nothing below it is analysed
        board, safety = self.board, self.settings.safety_cp
        lines = None
        if safety is None:
            explore = list(board.legal_moves)
        else:
            lines, _ = self._lines(len(path), safety)
            best = max(line.value for line in lines.values())
            explore = [move for move, line in lines.items() if line.value >= best - safety]
        self._descend(explore, remaining, path)
        return lines

    def _visit_opponent(self, remaining: int, path: tuple[str, ...]) -> ResponseAnalysis:
        """Analyse the responses, then visit the best one and every trap candidate."""
        analysis = self._analyse_node(path)
        keep = {analysis.best} | {r.move for r in analysis.candidates}
        safety = self.settings.safety_cp
        self._descend([m for m in self.board.legal_moves if safety is None or m.uci() in keep], remaining, path)
        return analysis

    def _descend(self, moves: list[chess.Move], remaining: int, path: tuple[str, ...]) -> None:
        board = self.board
        for move in sorted(moves, key=chess.Move.uci):
            board.push(move)
            self._visit(remaining - 1, (*path, move.uci()))
            board.pop()

    def _analyse_node(self, path: tuple[str, ...]) -> ResponseAnalysis:
        """Steps 1-10 of the spec at the current (opponent) position, with engine values: exact
        inside [v1, v1 + R], a lower bound beyond it."""
        board, ply = self.board, len(path)
        whole = self.backend.exact_root and not path  # explain: the whole distribution
        lines, bound = self._lines(ply, None if whole else self.settings.reasonable_cp)
        measured = []
        for move in board.legal_moves:
            line = lines.get(move)
            if line is not None:
                value, exact, pv = line.value, True, line.pv
            else:
                assert bound is not None, "an unlisted move without a bound"
                value, exact, pv = bound, False, ()
            measured.append(
                ResponseValue(
                    move=move.uci(),
                    tiebreak=(0, move.uci()),
                    value=value,
                    exact=exact,
                    gives_check=board.gives_check(move),
                    is_capture=board.is_capture(move),
                    line=pv,
                )
            )
        analysis = classify_responses(
            measured,
            self.settings,
            path=path,
            node=board.fen(),
            ply=ply,
            responder="white" if board.turn == chess.WHITE else "black",
        )
        self.analyses.append(analysis)
        self.traps.extend(trap_records(analysis, {r.move: r.line for r in measured}))
        return analysis

    # -- node queries ----------------------------------------------------------------------------

    def _lines(self, ply: int, margin: int | None) -> tuple[dict[chess.Move, EngineLine], Value | None]:
        """The lines at the current position: every move whose value is within `margin` of the
        best (side to move's view), and `bound`, the value of the last line found: the engine
        ranked every unlisted move no better for the side to move (None: all moves listed).
        The naive strategy, or `margin` None, lists every legal move."""
        board = self.board
        moves = list(board.legal_moves)
        sign = 1 if board.turn == self.setter else -1  # setter value -> side-to-move value
        game = object()  # a new game per node query: ucinewgame clears hash and histories
        found: dict[chess.Move, EngineLine] = {}
        everything = margin is None or self.backend.strategy == "naive"
        batch = len(moves) if everything else 1
        while True:
            remaining = [move for move in moves if move not in found]
            new = self._call(ply, min(batch, len(remaining)), None if not found else remaining, game)
            for line in new:
                found.setdefault(line.move, line)
            if len(found) == len(moves):
                return found, None
            if margin is not None and not everything:
                best = max(sign * line.value for line in found.values())
                last = new[-1]
                if sign * last.value < best - margin:
                    return found, last.value
            batch = len(moves) if everything else ADAPTIVE_BATCH

    def _best_line(self, ply: int) -> EngineLine:
        return self._call(ply, 1, None, object())[0]

    def _call(self, ply: int, count: int, root_moves: Sequence[chess.Move] | None, game: object) -> list[EngineLine]:
        """One engine call for `count` lines (among `root_moves` when given)."""
        backend = self.backend
        limit = backend.limits.for_lines(count)
        timeout = backend.timeout + (limit.time or 0.0)
        started = time.perf_counter()
        result = self.engine.search(self.board, count, limit, root_moves, game, timeout)
        self.engine_seconds += time.perf_counter() - started
        self.calls += 1
        self.nodes += result.nodes
        allowed = set(root_moves) if root_moves is not None else set(self.board.legal_moves)
        lines: list[EngineLine] = []
        for info in result.infos:
            pv = info["pv"]
            if pv[0] not in allowed or any(line.move == pv[0] for line in lines):
                continue
            bound = _is_bound(info)
            lines.append(
                EngineLine(
                    move=pv[0],
                    value=line_value(info["score"], self.setter, ply),
                    pv=tuple(move.uci() for move in pv[1:]),
                    depth=info.get("depth", 0),
                    bound=bound,
                )
            )
            self.bound_lines += bound
            self.depths.append(info.get("depth", 0))
        if not lines:
            raise _EngineCrashed(f"no principal variation for FEN {self.board.fen()!r}")
        self.lines += len(lines)
        return lines


def _as_backend(backend: UciBackend) -> Backend:
    """Never called: mypy checks here that `UciBackend` satisfies the `Backend` protocol."""
    return backend
