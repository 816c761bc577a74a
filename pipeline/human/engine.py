"""A shallow engine that scores every legal move at once, for the human-move model's engine features.

One Stockfish process (Threads 1, a small hash), asked `go depth D` with MultiPV over all moves.
Every query starts with `ucinewgame`, so the answer depends on the position, its history since
the last irreversible move and the depth alone: the same in every process, whatever was asked
before (which is what makes training on several workers reproducible).

The protocol is spoken directly over pipes (not `chess.engine`): a MultiPV answer over 40 moves is
parsed in a fraction of the time, which matters at a few milliseconds per position.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from types import TracebackType
from typing import Final

import chess

from pipeline.human.features import MATE_CP

# Where an engine name is looked for after PATH (Debian installs Stockfish in /usr/games).
EXTRA_ENGINE_DIRS: Final = ("/usr/games",)
# Stockfish's largest MultiPV: more lines than any position has legal moves.
MAX_MULTIPV: Final = 500
# Centipawns a mate-in-n score is reduced by, per move to the mate.
MATE_STEP: Final = 10
# Seconds to wait for the engine to quit before it is killed.
QUIT_TIMEOUT: Final = 2.0


class EngineError(RuntimeError):
    """The engine could not be found, started, or gave an answer that cannot be read."""


@dataclass(frozen=True)
class EngineSettings:
    """How the model's engine is run; recorded in the model file."""

    engine: str = "stockfish"
    """A name looked up on PATH and in /usr/games, or a path."""
    depth: int = 1
    """Search depth per query (with quiescence, so captures are resolved)."""
    hash_mb: int = 1
    """Transposition table in MiB (cleared before every query, so small is fast)."""


def resolve_engine(spec: str) -> str:
    """The executable behind an engine name or path; EngineError naming it if there is none."""
    text = spec.strip()
    if os.sep in text:
        if not (os.path.isfile(text) and os.access(text, os.X_OK)):
            raise EngineError(f"engine not found or not executable: {text!r}")
        return os.path.abspath(text)
    found = shutil.which(text) or shutil.which(text, path=os.pathsep.join(EXTRA_ENGINE_DIRS))
    if not text or found is None:
        raise EngineError(f"engine not found: {text!r} is not on PATH or in {', '.join(EXTRA_ENGINE_DIRS)}")
    return found


def parse_score(tokens: list[str], at: int) -> int:
    """The score after `score` at tokens[at]: cp, or a mate as +-(MATE_CP - MATE_STEP * moves)."""
    kind, amount = tokens[at], int(tokens[at + 1])
    if kind == "cp":
        return amount
    if kind == "mate":
        return MATE_CP - MATE_STEP * amount if amount > 0 else -(MATE_CP + MATE_STEP * amount)
    raise EngineError(f"unreadable engine score {' '.join(tokens[at : at + 2])!r}")


class ShallowEngine:
    """A Stockfish process that scores all legal moves of a position; started on first use,
    ended by `close()` (also a context manager)."""

    def __init__(self, settings: EngineSettings | None = None, *, lines: int = MAX_MULTIPV, nodes: int | None = None):
        """`lines` (MultiPV) and `nodes` (a node limit instead of the depth) serve the engine
        baselines of the evaluation; the model's features use the defaults."""
        self.settings = settings or EngineSettings()
        if self.settings.depth < 1:
            raise EngineError(f"engine depth must be at least 1, not {self.settings.depth}")
        self.lines = lines
        self.go = f"go nodes {nodes}" if nodes is not None else f"go depth {self.settings.depth}"
        self._process: subprocess.Popen[str] | None = None
        self.name = ""

    def _start(self) -> subprocess.Popen[str]:
        path = resolve_engine(self.settings.engine)
        try:
            process = subprocess.Popen(
                [path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                bufsize=1,
            )  # fmt: skip
        except OSError as error:
            raise EngineError(f"cannot start engine {path!r}: {error.strerror}") from error
        self._process = process
        self._send("uci")
        for line in self._until("uciok"):
            if line.startswith("id name "):
                self.name = line[len("id name ") :].strip()
        self._send(f"setoption name Threads value 1\nsetoption name Hash value {self.settings.hash_mb}")
        self._send(f"setoption name MultiPV value {self.lines}\nisready")
        list(self._until("readyok"))
        return process

    def _send(self, text: str) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(text + "\n")
            self._process.stdin.flush()
        except (BrokenPipeError, OSError) as error:
            raise EngineError(f"engine {self.settings.engine!r} stopped: {error}") from error

    def _until(self, word: str) -> list[str]:
        """Lines up to and including the first that starts with `word`."""
        assert self._process is not None and self._process.stdout is not None
        lines: list[str] = []
        for line in self._process.stdout:
            lines.append(line)
            if line.startswith(word):
                return lines
        raise EngineError(f"engine {self.settings.engine!r} ended before answering {word!r}")

    def scores(self, board: chess.Board) -> dict[str, int]:
        """Every legal move of `board` (UCI; the best `lines` of them) -> its score in cp from the
        mover's view, at the set depth or node limit, in the engine's order (best first). Empty
        for a position without legal moves."""
        if not any(board.generate_legal_moves()):
            return {}
        if self._process is None:
            self._start()
        recent = board.copy(stack=min(board.halfmove_clock, len(board.move_stack)))
        moves = " ".join(move.uci() for move in recent.move_stack)
        position = f"position fen {recent.root().fen()}" + (f" moves {moves}" if moves else "")
        self._send(f"ucinewgame\n{position}\n{self.go}")
        found: dict[str, int] = {}
        for line in self._until("bestmove"):
            if not line.startswith("info ") or " multipv " not in line or " pv " not in line:
                continue
            # Each iteration reports its lines as multipv 1, 2, ...: the last full report counts.
            tokens = line.split()
            if tokens[tokens.index("multipv") + 1] == "1":
                found = {}
            found[tokens[tokens.index("pv") + 1]] = parse_score(tokens, tokens.index("score") + 1)
        return found

    def close(self) -> None:
        """End the engine process (a no-op if it never started)."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(EngineError, OSError, ValueError):
            assert process.stdin is not None
            process.stdin.write("quit\n")
            process.stdin.close()
        try:
            process.wait(timeout=QUIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> ShallowEngine:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A forgotten engine must not outlive its owner.
        if self._process is not None:
            with contextlib.suppress(Exception):
                self._process.kill()
