"""The one progress display (pipeline/common/progress.py): a line when a step starts, every 30 s
and at its end when the stream is not a terminal, a rich bar when it is; then every long command
(`mine`, `plan`, `puzzles`, `tag`, `evaluate`, `human eval`, `human train`) run as a user runs it,
in a pseudo-terminal and with its output piped, showing a count of its work while it works."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline.common.progress import LINE_SECONDS, Progress
from pipeline.ingest.headers import GameFilter
from pipeline.mine.progress import Status
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings
from tests.conftest import GAMES, PUZZLES, ROOT
from tests.mining_helpers import mine
from tests.processes import session_processes

# A failsafe, not a measure: how long a command may go without a first count of its work before the
# test gives up on it. It includes the start of Ray and of the engines, which a loaded machine makes
# slow; it still fails a command silent for as long as the (8-13 min).
FIRST_COUNT_FAILSAFE = 240.0
# A count of work done: `analysed 132/9,155 positions`, `verified 0/12 candidates`, a bar's `3/? rows`.
COUNT = re.compile(r"\b\d[\d,]*(?:/(?:[\d,]+|\?))? (?:positions|candidates|rows|games|trees|puzzles)\b")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
DIFFIMAX = [sys.executable, "-m", "pipeline.cli"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_when_a_step_starts_every_30_seconds_and_at_its_end() -> None:
    clock, lines = Clock(), []
    progress = Progress(echo=lines.append, clock=clock)
    progress.start("verified", "candidates", 10, "0 puzzles")
    assert lines == ["verified 0/10 candidates | candidates/s ? | ETA ? | 0 puzzles"]
    for step in range(1, 10):
        clock.now = step * 5.0
        progress.advance(detail=f"{step} puzzles")
    assert len(lines) == 2 and lines[1].startswith("verified 6/10 candidates | 0.2 candidates/s | ETA 0:20")
    progress.say("a message")
    progress.finish_step()
    assert lines[-2:] == ["a message", "verified 9/10 candidates | 0.2 candidates/s | done | 9 puzzles"]
    progress.start("rated", "puzzles")  # a second step, no total
    assert lines[-1] == "rated 0 puzzles | puzzles/s ? | ETA ?"
    clock.now += LINE_SECONDS
    progress.update(3)
    assert lines[-1].startswith("rated 3 puzzles |")


def test_a_quiet_display_shows_nothing_and_a_terminal_gets_a_bar() -> None:
    quiet = Progress.quiet()
    quiet.start("read", "games", 3)
    quiet.advance()
    quiet.say("nothing")
    quiet.close()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    with Progress(stream=stream) as progress:
        progress.start("tagged", "rows", 4)
        progress.advance(2)
        progress.say("loading")
    text = ANSI.sub("", stream.getvalue())
    assert "tagged" in text and "2/4 rows" in text and "loading" in text


# -- every long command, as a user runs it ---------------------------------------------------------


def _first_count(command: list[str], terminal: bool, cwd: Path) -> tuple[float | None, str]:
    """Run `command` in a session of its own, in a pseudo-terminal or with its output piped, until
    it shows a count of its work (returned: the seconds it took), it ends, or FIRST_COUNT_FAILSAFE
    pass; then end it with its whole session."""
    env = {**os.environ, "COLUMNS": "160", "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)
    started = time.monotonic()
    if terminal:
        main, other = pty.openpty()
        process = subprocess.Popen(
            command, cwd=cwd, stdin=other, stdout=other, stderr=other, env=env, start_new_session=True
        )
        os.close(other)
        reader = main
    else:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        assert process.stdout is not None
        reader = process.stdout.fileno()
    seen = b""
    found = None
    try:
        while time.monotonic() - started < FIRST_COUNT_FAILSAFE:
            ready, _, _ = select.select([reader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(reader, 65536)
                except OSError:  # the terminal closed: the command ended
                    chunk = b""
                if not chunk and process.poll() is not None:
                    break
                seen += chunk
                if COUNT.search(ANSI.sub("", seen.decode("utf-8", "replace"))):
                    found = time.monotonic() - started
                    break
            elif process.poll() is not None:
                break
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        deadline = time.monotonic() + 20
        while session_processes(process.pid) and time.monotonic() < deadline:
            for pid in session_processes(process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        if terminal:
            os.close(reader)
    return found, ANSI.sub("", seen.decode("utf-8", "replace"))


@pytest.fixture(scope="module")
def mined(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small dataset for `puzzles` (6 games: the dip judge at depth 2 names a few candidates, enough for a count)."""
    out = tmp_path_factory.mktemp("progress") / "data"
    mine(
        [str(GAMES / "lichess_100.pgn")],
        out,
        settings=DiffiMaxSettings(depth=2),
        max_games=6,
        workers=2,
        judges=JudgeSettings(judges=frozenset({"dip"})),
        game_filter=GameFilter(ply_from=6, ply_to=20),
    )
    return out


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "mine": lambda data, tmp: [
        *DIFFIMAX,
        "mine",
        str(GAMES / "chesscom_mixed_1187.pgn"),
        "--out",
        str(tmp / "m"),
        "--max-games",
        "40",
    ],
    "plan": lambda data, tmp: [
        *DIFFIMAX,
        "mine",
        "--plan",
        str(GAMES / "chesscom_mixed_1187.pgn"),
        "--max-games",
        "200",
    ],
    "puzzles": lambda data, tmp: [
        *DIFFIMAX,
        "puzzles",
        "--data",
        str(data),
        "--out",
        str(tmp / "book"),
        "--workers",
        "1",
    ],
    "tag": lambda data, tmp: [
        *DIFFIMAX,
        "tag",
        str(PUZZLES / "lichess_puzzles_sample_1499.csv"),
        "--out",
        str(tmp / "tagged.csv"),
    ],
    "evaluate": lambda data, tmp: [
        *DIFFIMAX,
        "evaluate",
        str(GAMES / "lichess_100.pgn"),
        "--positions",
        "40",
        "--workers",
        "1",
        "--known-traps",
        "none",
    ],
    "human eval": lambda data, tmp: [
        *DIFFIMAX,
        "human",
        "eval",
        "--human-model",
        "default",
        str(GAMES / "lichess_100.pgn"),
        "--workers",
        "1",
    ],
    "human train": lambda data, tmp: [
        *DIFFIMAX,
        "human",
        "train",
        "--games",
        str(GAMES / "lichess_player_a_37221.pgn.zst"),
        "--out",
        str(tmp / "model.json"),
        "--workers",
        "1",
    ],
}
IN_A_TERMINAL = frozenset({"mine", "puzzles", "evaluate", "human train"})


@pytest.mark.stockfish
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_long_command_shows_a_count_of_its_work_while_it_works(name: str, mined: Path, tmp_path: Path) -> None:
    # Each command once (a run is a Ray cluster's start): in a pseudo-terminal (rich's bar) or piped
    # (lines), each way for half of them. The condition is the count itself (the command is ended
    # once it is seen); the time it took, Ray's start included, is a failsafe, not a limit.
    terminal = name in IN_A_TERMINAL
    found, output = _first_count(COMMANDS[name](mined, tmp_path), terminal, tmp_path)
    assert found is not None, f"{name}: no count of its work in {FIRST_COUNT_FAILSAFE:.0f} s:\n{output[-3000:]}"


def test_a_mining_jobs_total_counts_on_max_games() -> None:
    # The 150-game run of a 1,089-game file said "analysed 16/93,071 positions, ETA 98 h":
    # the estimate from the bytes routed ignored --max-games.
    status = Status(
        games_read=50,
        analyses_requested=4_000,
        analyses_done=100,
        positions_committed=0,
        traps=0,
        shards_committed=0,
        bytes_routed=40_000,
        total_bytes=1_000_000,
        reading_done=False,
        max_games=150,
    )
    assert status.expected_analyses() == 12_000
    assert replace(status, max_games=None).expected_analyses() == 100_000  # the bytes alone
    assert replace(status, reading_done=True).expected_analyses() == 4_000  # known once reading is done
