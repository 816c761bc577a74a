"""One UCI engine process module: resolution, start, timeouts, restart, no orphans.

Every part of the project that talks to a UCI engine (the DiffiMax backend, the puzzle verifier,
the human-move model's engine features, the mining driver's start-up check) goes through
`UciEngine`:

- `resolve_engine(spec)`: a path (anything with a `/`), or a name looked up on PATH and then in
  /usr/games (Debian installs Stockfish there, off root's PATH).
- The engine runs on a private daemon event-loop thread (a `chess.engine.SimpleEngine` thread is
  not a daemon, so a forgotten engine would keep the interpreter alive); on Linux the engine is
  also killed by the kernel when that thread ends, so no engine outlives its owner.
- Every call has a timeout; a call that times out counts as a hung engine, which is killed.
- `UciEngine.attempt(work)` runs `work` on the live process and, when the engine crashes, starts a
  fresh one and runs `work` once more; a second crash or a hang raises `EngineError` with one line.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import os
import shutil
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import chess
import chess.engine

from search.errors import DiffimaxError

# Where `--engine NAME` is looked for after PATH (Debian installs Stockfish in /usr/games).
EXTRA_ENGINE_DIRS = ("/usr/games",)
# Seconds one engine call (one `go`, or starting the engine) may take before it counts as hung,
# besides what its node or time limit asks for (`search_timeout`).
DEFAULT_TIMEOUT = 60.0
# Nodes per second an engine may fall to under load before a node-limited search counts as hung.
SLOWEST_NPS = 150_000
# Most nodes one line's search may be given (`--nodes`). A call multiplies them by its MultiPV
# lines (at most 218 legal moves) and a deeper pass (a few times more): at SLOWEST_NPS the
# longest call's timeout must still fit the longest wait Python's threads can make
# (threading.TIMEOUT_MAX), and its node count an engine's 64-bit counter. 10^12 nodes is about
# two weeks of one Stockfish thread.
NODES_MAX = 10**12
# The most any call may multiply one line's budget by (MultiPV lines x the deeper passes).
CALL_FACTOR_MAX = 1_000
# Seconds one line's search may be given (`--movetime`): as long as the largest node budget.
MOVETIME_MAX = NODES_MAX // SLOWEST_NPS
# Seconds an engine gets to exit after `quit` before it is killed.
QUIT_GRACE = 2.0
# Seconds to wait for a killed engine to be reaped.
KILL_GRACE = 5.0
# What the engine's info lines are parsed for.
INFO = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE | chess.engine.INFO_PV
# Linux prctl(2) option: the signal the engine gets when the thread that started it ends.
PR_SET_PDEATHSIG = 1

_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
T = TypeVar("T")


class EngineError(DiffimaxError, RuntimeError):
    """The engine is missing or broken, crashed again after a restart, or hung."""


class EngineStartError(EngineError):
    """The engine could not be started (missing, not executable, not a UCI engine, no `uciok`):
    every further position would fail the same way, so a job stops on it."""


class EngineCrashed(Exception):
    """The engine died or broke the protocol during a call (retried once by `UciEngine.attempt`)."""


class EngineTimedOut(Exception):
    """An engine call did not finish within the timeout (never retried); args[0]: its seconds."""


def resolve_engine(spec: str) -> str:
    """The executable behind `--engine`: a path (anything with a `/`), or a name looked up on
    PATH and then in /usr/games."""
    text = spec.strip()
    if not text:
        raise EngineStartError("no engine given: expected a name such as 'stockfish' or a path")
    if os.sep in text:
        if not os.path.exists(text):
            raise EngineStartError(f"engine not found: {text}")
        if not os.path.isfile(text) or not os.access(text, os.X_OK):
            raise EngineStartError(f"engine {text} is not an executable file")
        return os.path.abspath(text)
    found = shutil.which(text) or shutil.which(text, path=os.pathsep.join(EXTRA_ENGINE_DIRS))
    if found is None:
        raise EngineStartError(f"engine not found: {text!r} is not on PATH or in {', '.join(EXTRA_ENGINE_DIRS)}")
    return found


def _die_with_parent() -> None:
    """Runs in the engine process before exec: the kernel kills it when the thread that started
    it ends, i.e. when its owner exits, crashes or is killed."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def search_timeout(nodes: int | None = None, seconds: float | None = None, spare: float = DEFAULT_TIMEOUT) -> float:
    """Seconds a search of `nodes` (at SLOWEST_NPS) or `seconds` may take before the engine counts
    as hung: `spare` more than the limit asks for. A search of a billion nodes is given the hours
    it needs, not killed at a fixed minute; never beyond what a thread can wait."""
    asked = max(nodes / SLOWEST_NPS if nodes else 0.0, seconds or 0.0)
    return min(spare + asked, threading.TIMEOUT_MAX - QUIT_GRACE)


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


@dataclass
class _Handles:
    """What the finalizer of an `EngineProcess` needs (it must not reference the object)."""

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
        # Cancel what still runs on the loop (a start that timed out leaves its task waiting): a
        # task destroyed pending on a closed loop is logged from a finalizer whenever the garbage
        # collector runs, which on CPython 3.11.7 breaks the next `ast.parse` (a SystemError).
        async def drain() -> None:
            pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(drain(), loop).result(KILL_GRACE)
        loop.call_soon_threadsafe(loop.stop)
        handles.thread.join(KILL_GRACE)
        if not handles.thread.is_alive():
            loop.close()


def is_bound(info: chess.engine.InfoDict) -> bool:
    return bool(info.get("lowerbound") or info.get("upperbound"))


@dataclass(frozen=True)
class CallResult:
    infos: list[chess.engine.InfoDict]  # the final info per MultiPV index, in index order
    nodes: int


class EngineProcess:
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
            raise EngineCrashed("engine is not running")
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
            raise EngineTimedOut(timeout) from None

    def search(
        self,
        board: chess.Board,
        lines: int,
        limit: chess.engine.Limit,
        root_moves: Sequence[chess.Move] | None,
        game: object,
        timeout: float,
    ) -> CallResult:
        """One `go`: the engine's final line for each of `lines` MultiPV indices."""
        try:
            return self._run(self._unless_it_dies(self._search(board, lines, limit, root_moves, game)), timeout)
        except (chess.engine.EngineError, OSError) as error:  # EngineTerminatedError included
            raise EngineCrashed(one_line(error)) from None

    async def _unless_it_dies(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """`coroutine`'s result, or EngineTerminatedError as soon as the process exits. python-chess
        loses the news of a death that falls between two of its commands (about 1 kill in 100
        mid-search, measured with SIGKILL at random moments): the search then waits out the whole
        timeout and a position is recorded as an error, where a crash would be restarted."""
        exited = self.protocol.returncode
        work = asyncio.ensure_future(coroutine)
        either: list[asyncio.Future[Any]] = [work, exited]
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # Cancelled by the call's timeout, the work is cancelled too: left running, it ends
            # when the hung engine is killed, and asyncio prints its unretrieved error.
            if not work.done():
                work.cancel()
                work.add_done_callback(lambda task: task.cancelled() or task.exception())  # nothing left unretrieved
        if work.done() and not work.cancelled():
            return work.result()
        raise chess.engine.EngineTerminatedError(f"engine process died unexpectedly (exit code: {exited.result()})")

    async def _search(
        self,
        board: chess.Board,
        lines: int,
        limit: chess.engine.Limit,
        root_moves: Sequence[chess.Move] | None,
        game: object,
    ) -> CallResult:
        analysis = await self.protocol.analysis(
            board, limit, multipv=lines if lines > 1 else None, game=game, info=INFO, root_moves=root_moves
        )
        final: dict[int, chess.engine.InfoDict] = {}  # the last line per MultiPV index
        exact: dict[chess.Move, chess.engine.InfoDict] = {}  # the last unflagged line per move
        nodes = 0
        with analysis:
            try:
                async for info in analysis:
                    nodes = max(nodes, info.get("nodes", 0))
                    pv = info.get("pv")
                    if "score" in info and pv:
                        # Replace, never merge: a bound flag must not outlive the line it was on.
                        final[info.get("multipv", 1)] = info
                        if not is_bound(info):
                            exact[pv[0]] = info
            except asyncio.CancelledError:
                # Cut by the call's timeout: the engine is killed next, and the analysis ends with
                # its death. That end is awaited here, or asyncio prints it as never retrieved.
                ending = asyncio.ensure_future(analysis.wait())
                ending.add_done_callback(lambda task: task.cancelled() or task.exception())
                raise
        # A search stopped by its node or time limit inside an aspiration re-search ends on a
        # bound (with a cut PV): take that move's score from its last completed iteration.
        ordered = [final[index] for index in sorted(final)]
        return CallResult([exact.get(info["pv"][0], info) if is_bound(info) else info for info in ordered], nodes)

    def engine_id(self) -> dict[str, str]:
        return dict(self.protocol.id)

    def close(self, graceful: bool = True) -> None:
        if self._finalizer.alive:
            self._finalizer.detach()
            _shutdown(self._handles, graceful)


class UciEngine:
    """A UCI engine by path: one live process at a time, started now (so a broken engine fails
    fast with one line), restarted after a crash, ended by `close()` or by its owner's exit.
    Not thread-safe: give each worker its own."""

    def __init__(self, path: str, options: dict[str, int] | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout
        self.requested_options = dict(options or {})
        self._process: EngineProcess | None = None
        self._closed = False
        self.restarts = 0  # restarts the last `attempt` needed
        process = self._start()
        self.id = process.engine_id()
        self.options = dict(process.options)

    @classmethod
    def open(cls, spec: str, options: dict[str, int] | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> UciEngine:
        """Resolve `--engine SPEC` and start it."""
        return cls(resolve_engine(spec), options, timeout=timeout)

    @property
    def name(self) -> str:
        """The engine's UCI name (`id name`), e.g. "Stockfish 15.1"."""
        return self.id.get("name", "") or os.path.basename(self.path)

    @property
    def pid(self) -> int | None:
        """The live process's id (None between a failure and the next call)."""
        return None if self._process is None else self._process.pid

    def _start(self) -> EngineProcess:
        try:
            self._process = EngineProcess(self.path, self.requested_options, self.timeout)
        except EngineTimedOut:
            raise EngineStartError(
                f"engine {self.path} did not start as a UCI engine: no 'uciok' within {self.timeout:g} s"
            ) from None
        except (chess.engine.EngineError, OSError) as error:
            raise EngineStartError(f"engine {self.path} did not start as a UCI engine: {one_line(error)}") from None
        return self._process

    def _discard(self, graceful: bool) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.close(graceful)

    def attempt(self, work: Callable[[EngineProcess], T], where: str) -> T:
        """`work(process)` on the live engine. A crash is retried once on a fresh engine; a second
        crash or a hang raises `EngineError` naming `where` (e.g. "on FEN '...'"), and the next call
        starts a new engine. `restarts` then says how many restarts it took."""
        if self._closed:
            raise EngineError(f"engine {self.path}: the backend is closed")
        self.restarts = 0
        while True:
            process = self._process or self._start()
            try:
                return work(process)
            except EngineCrashed as crash:
                self._discard(graceful=False)
                if self.restarts:
                    raise EngineError(f"engine {self.path} crashed twice {where}: {crash}") from None
                self.restarts += 1
            except EngineTimedOut as hung:
                self._discard(graceful=False)
                waited = hung.args[0] if hung.args else self.timeout  # the call's: a long search waits longer
                raise EngineError(f"engine {self.path} timed out (no answer within {waited:,.0f} s) {where}") from None

    def search(
        self,
        board: chess.Board,
        lines: int,
        limit: chess.engine.Limit,
        *,
        root_moves: Sequence[chess.Move] | None = None,
        game: object = None,
    ) -> CallResult:
        """One `go` with crash-restart (see `attempt`): the final line of each MultiPV index."""
        timeout = self.timeout + (limit.time or 0.0)
        return self.attempt(
            lambda process: process.search(board, lines, limit, root_moves, game, timeout), f"on FEN {board.fen()!r}"
        )

    def close(self) -> None:
        self._closed = True
        self._discard(graceful=True)

    def __enter__(self) -> UciEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_engine(spec: str, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Start the engine behind `--engine SPEC` once and stop it: its UCI name, or `EngineError`
    with one line. The mining driver calls it before any worker starts."""
    with UciEngine.open(spec, timeout=timeout) as engine:
        return engine.name
