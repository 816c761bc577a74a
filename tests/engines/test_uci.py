"""The UCI backend on the real Stockfish binary, and its failure modes on tiny fake engines.

Fakes are used only for faults (crash, hang, not an engine); every value, trap and record here
comes from /usr/games/stockfish. After every test, and after the module, the process table must
hold no engine the test started.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import chess
import chess.engine
import pytest

from pipeline.engines.meter import EngineMeter, process_cpu_ns
from pipeline.engines.options import EngineOptions
from pipeline.engines.process import (
    CALL_FACTOR_MAX,
    DEFAULT_TIMEOUT,
    NODES_MAX,
    SLOWEST_NPS,
    EngineError,
    UciEngine,
    resolve_engine,
    search_timeout,
)
from pipeline.engines.uci import DEFAULT_NODES, UciBackend, call_limit, line_limits, line_value, open_uci_backend
from pipeline.judging import Judge, JudgingKit
from pipeline.mine.occurrences import game_occurrences
from pipeline.mine.table import AnalysisEntry
from pipeline.mine.work import Judging, analyse_position
from search.chessgame import FenError, board_from_fen
from search.judges import JudgeSettings
from search.settings import UCI_DEFAULT_DEPTH, DiffiMaxSettings, SettingsError
from search.values import MATE
from tests.conftest import ROOT, STOCKFISH, needs_stockfish, run_cli

stockfish = [pytest.mark.stockfish, needs_stockfish]

# 1.e4 e5 2.Nf3 Nc6 3.Bc4 Nd4: White to move, Black the setter; 4.Nxe5? Qg5! is the trap.
ND4_MOVES = ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "c6d4")
# The Nd4 fixture runs at the backend's defaults (100k nodes per line): Stockfish 15.1 sees 4...Qg5
# and puts the dip of 4.Nxe5 at 1.24 (1.88 at 200k, 2.00 at depth 16; only 0.39 at 20k and 0.99
# at 50k, where Nxe5 is no trap yet).
ND4_NODES = DEFAULT_NODES
# White to move is in check from the rook and has a single legal reply, Kh2.
ONE_REPLY_FEN = "7k/8/8/8/8/8/5PP1/r5K1 w - - 0 1"
# White to move mates with Re8#.
BACK_RANK_FEN = "6k1/5ppp/8/8/8/8/5PPP/4R1K1 w - - 0 1"
# A pawn ending with few moves on either side: small enough for the exhaustive visit.
PAWN_ENDING_FEN = "8/8/4k3/8/2p5/8/1P3K2/8 b - - 0 1"


# -- process table ------------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # fields after the command name: state, ppid, ...


def running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def children() -> dict[int, str]:
    """Processes whose parent is this test process (engines are started by it), with commands."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == os.getpid():
                try:
                    command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                except OSError:
                    command = "?"
                found[int(entry)] = command
    return found


def wait_until(condition: object, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return bool(condition())  # type: ignore[operator]


@pytest.fixture(autouse=True)
def no_leftover_engine():
    """Every engine a test starts is gone (reaped, not a zombie) when the test ends."""
    before = set(children())
    yield
    leftover: dict[int, str] = {}

    def clean() -> bool:
        leftover.clear()
        leftover.update({pid: cmd for pid, cmd in children().items() if pid not in before})
        return not leftover

    assert wait_until(clean), f"engine processes left behind: {leftover}"


# -- fake engines (faults only) -----------------------------------------------------------------

FAKE_PRELUDE = """
import os, sys, time
PID_FILE = {pid_file!r}
with open(PID_FILE, "a") as handle:
    handle.write(f"{{os.getpid()}}\\n")

def say(line):
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()

def serve(on_go, die_on=None):
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == die_on:
            crash()
        if words[0] == "uci":
            say("id name FakeFish")
            say("option name Threads type spin default 1 min 1 max 64")
            say("option name Hash type spin default 16 min 1 max 1024")
            say("option name MultiPV type spin default 1 min 1 max 500")
            say("uciok")
        elif words[0] == "isready":
            say("readyok")
        elif words[0] == "go":
            with open(PID_FILE + ".go", "a") as handle:  # the test waits for this, not a fixed time
                handle.write("go\\n")
            on_go()
        elif words[0] == "quit":
            return

def crash():
    os._exit(3)

def answer():
    say("info depth 1 multipv 1 score cp 10 nodes 10 pv e2e4")
    say("bestmove e2e4")

def answer_then_die():
    answer()
    crash()

def hang():
    while True:  # ignores stop, quit and the end of its input
        time.sleep(60)
"""


@dataclasses.dataclass
class Fake:
    path: Path
    pid_file: Path

    def pids(self) -> list[int]:
        if not self.pid_file.exists():
            return []
        return [int(line) for line in self.pid_file.read_text().split()]

    def searching(self) -> bool:
        """Whether a `go` has reached the engine."""
        return Path(f"{self.pid_file}.go").exists()


def fake_engine(tmp_path: Path, name: str, body: str) -> Fake:
    """An executable Python script standing in for an engine; it logs the pid of every start."""
    pid_file = tmp_path / f"{name}.pids"
    script = tmp_path / name
    prelude = FAKE_PRELUDE.format(pid_file=str(pid_file))
    script.write_text(f"#!{sys.executable}\n{prelude}\n{textwrap.dedent(body)}\n")
    script.chmod(0o755)
    return Fake(script, pid_file)


def nd4_board() -> chess.Board:
    board = chess.Board()
    for move in ND4_MOVES:
        board.push_uci(move)
    return board


# -- pure parts ---------------------------------------------------------------------------------


def test_engine_mate_counts_become_plies_from_the_root():
    white, black = chess.WHITE, chess.BLACK
    # "mate 3" for the side to move: 5 plies from the analysed position, here 2 plies deep.
    assert line_value(chess.engine.PovScore(chess.engine.Mate(3), white), white, 2) == MATE - 7
    assert line_value(chess.engine.PovScore(chess.engine.Mate(3), white), black, 2) == -(MATE - 7)
    # "mate -2": the side to move is mated in 4 plies.
    assert line_value(chess.engine.PovScore(chess.engine.Mate(-2), black), white, 1) == MATE - 5
    assert line_value(chess.engine.PovScore(chess.engine.Mate(-2), black), black, 1) == -(MATE - 5)
    assert line_value(chess.engine.PovScore(chess.engine.Cp(35), black), white, 0) == -35
    # An enormous evaluation is still an evaluation, never a mate score.
    assert line_value(chess.engine.PovScore(chess.engine.Cp(95_000), white), white, 0) < MATE - 10_000


def test_limits_are_per_line_and_validated():
    limit = call_limit(line_limits(EngineOptions(nodes=1_000, depth=9, movetime=0.5)), 4)
    assert (limit.nodes, limit.depth, limit.time) == (4_000, 9, 2.0)
    assert line_limits().nodes == line_limits(EngineOptions(threads=2)).nodes == DEFAULT_NODES
    with pytest.raises(SettingsError, match=r"^invalid engine nodes 0: must be a whole number >= 1$"):
        line_limits(EngineOptions(nodes=0))
    with pytest.raises(SettingsError, match=r"^invalid engine probe divisor -1: must be a whole number >= 0$"):
        line_limits(EngineOptions(probe_divisor=-1))
    with pytest.raises(SettingsError, match=r"^invalid engine threads 0: must be a whole number >= 1$"):
        open_uci_backend(str(STOCKFISH), threads=0)


def test_missing_or_unusable_engine_paths(tmp_path):
    missing = tmp_path / "no" / "such-engine"
    with pytest.raises(EngineError) as error:
        open_uci_backend(str(missing))
    assert str(error.value) == f"engine not found: {missing}"
    with pytest.raises(EngineError, match=r"^engine not found: 'no-such-engine-xyz' is not on PATH or in /usr/games$"):
        resolve_engine("no-such-engine-xyz")
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n")
    with pytest.raises(EngineError) as error:
        open_uci_backend(str(text))
    assert str(error.value) == f"engine {text} is not an executable file"
    with pytest.raises(EngineError, match=r"is not an executable file$"):
        open_uci_backend(str(tmp_path))


def test_a_program_that_is_not_an_engine(tmp_path):
    fake = fake_engine(tmp_path, "greeter", 'say("hello, I am not a chess engine")\nsys.exit(1)')
    with pytest.raises(EngineError) as error:
        open_uci_backend(str(fake.path), timeout=10)
    message = str(error.value)
    assert message.startswith(f"engine {fake.path} did not start as a UCI engine: ")
    assert "\n" not in message
    assert len(fake.pids()) == 1 and not running(fake.pids()[0])


def test_an_engine_that_never_answers_uci(tmp_path):
    fake = fake_engine(tmp_path, "mute", "hang()")
    started = time.monotonic()
    # 3 s: the fake engine is a Python script, which a loaded machine can take over a second to
    # start (its pid file was then not written yet when the wait ended).
    with pytest.raises(EngineError) as error:
        open_uci_backend(str(fake.path), timeout=3.0)
    assert str(error.value) == f"engine {fake.path} did not start as a UCI engine: no 'uciok' within 3 s"
    assert time.monotonic() - started < 15
    assert all(wait_until(lambda pid=pid: not running(pid)) for pid in fake.pids())


def test_an_engine_that_dies_mid_search_is_restarted_once_then_reported(tmp_path):
    fake = fake_engine(tmp_path, "crasher", "serve(crash)")
    board = board_from_fen("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    with open_uci_backend(str(fake.path), nodes=1_000, timeout=10) as backend:
        with pytest.raises(EngineError) as error:
            backend.analyse(board, chess.BLACK, DiffiMaxSettings(depth=1))
        message = str(error.value)
        assert message.startswith(f"engine {fake.path} crashed twice on FEN '{board.fen()}': ")
        assert "\n" not in message
        assert len(fake.pids()) == 2  # the first engine, and the one restarted for the retry
        assert backend.pid is None  # the next analysis starts a fresh engine
    assert not any(running(pid) for pid in fake.pids())


# The engines below die on reading a command python-chess sends before its `go` (`ucinewgame` when
# the game changes, `setoption` when MultiPV does), or right after they answered a search.
@pytest.mark.parametrize("word", ["ucinewgame", "setoption"])
def test_an_engine_that_dies_between_two_commands_is_a_crash_at_once_not_a_timeout(tmp_path, word):
    """python-chess misses a death between the commands of one search: it waited out the whole
    timeout (60 s by default; about 1 Stockfish SIGKILL in 100 mid-search), and the position
    became an error where a crash is restarted. The soak run of issue 18 lost a position so."""
    fake = fake_engine(tmp_path, f"dies-on-{word}", f"serve(answer, die_on={word!r})")
    engine = UciEngine(str(fake.path), timeout=30)  # far above a Python fake's restart on a loaded machine
    try:
        started = time.monotonic()
        with pytest.raises(EngineError, match="crashed twice"):
            engine.search(chess.Board(), 2, chess.engine.Limit(nodes=100), game=object())
        assert time.monotonic() - started < 20  # the crash, not the 30-s timeout
        assert len(fake.pids()) == 2  # restarted once, as for a death mid-search
    finally:
        engine.close()


def test_an_engine_that_dies_after_answering_is_restarted_for_the_next_search(tmp_path):
    fake = fake_engine(tmp_path, "dies-after-bestmove", "serve(answer_then_die)")
    engine = UciEngine(str(fake.path), timeout=30)  # far above a Python fake's restart on a loaded machine
    try:
        for _ in range(3):
            started = time.monotonic()
            found = engine.search(chess.Board(), 1, chess.engine.Limit(nodes=100), game=object())
            assert found.infos[0]["pv"][0] == chess.Move.from_uci("e2e4") and time.monotonic() - started < 20
    finally:
        engine.close()
    assert len(fake.pids()) == 3


def test_a_hung_engine_times_out_and_is_killed(tmp_path):
    fake = fake_engine(tmp_path, "sleeper", "serve(hang)")
    board = nd4_board()
    with open_uci_backend(str(fake.path), nodes=1_000, timeout=3.0) as backend:
        started = time.monotonic()
        with pytest.raises(EngineError) as error:
            backend.analyse(board, chess.BLACK, DiffiMaxSettings(depth=1))
        assert time.monotonic() - started < 20
    assert str(error.value) == f"engine {fake.path} timed out (no answer within 3 s) on FEN '{board.fen()}'"
    assert len(fake.pids()) == 1
    assert wait_until(lambda: not running(fake.pids()[0]))


def test_a_timed_out_search_leaves_no_traceback_behind(tmp_path):
    """One line, and nothing after it: on 64e93b5 the search task cut by the timeout ended when
    the engine was killed, and asyncio printed 'Task exception was never retrieved' and its
    10-line traceback when the program ended (issue 42, `explain --nodes 1000000000`)."""
    fake = fake_engine(tmp_path, "sleeper", "serve(hang)")
    program = textwrap.dedent(
        f"""
        from pipeline.engines.process import EngineError
        from pipeline.engines.uci import open_uci_backend
        from search.chessgame import board_from_fen
        from search.settings import DiffiMaxSettings
        with open_uci_backend({str(fake.path)!r}, nodes=1_000, timeout=2.0) as backend:
            try:
                backend.analyse(board_from_fen({nd4_board().fen()!r}), False, DiffiMaxSettings(depth=1))
            except EngineError as error:
                print(error)
        """
    )
    ended = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "timed out" in ended.stdout, ended.stdout + ended.stderr
    assert ended.returncode == 0 and "never retrieved" not in ended.stderr, ended.stderr


def test_a_node_limited_search_is_given_the_time_its_nodes_need():
    """explain --nodes 1000000000 was killed at a fixed 60 s (64e93b5): the timeout grows with
    the nodes (at the slowest rate an engine keeps under load), and never passes what a thread
    can wait (puzzles --nodes 1e20: OverflowError)."""
    assert search_timeout(None) == DEFAULT_TIMEOUT
    assert search_timeout(10**9) > 10**9 / 1_000_000 * 5  # five times Stockfish's speed on one core
    assert search_timeout(nodes=None, seconds=100.0) == DEFAULT_TIMEOUT + 100
    assert search_timeout(10**30) < threading.TIMEOUT_MAX
    # The largest --nodes fits unclamped, even multiplied by a call's lines and deeper passes.
    assert DEFAULT_TIMEOUT + NODES_MAX * CALL_FACTOR_MAX / SLOWEST_NPS < threading.TIMEOUT_MAX


def test_the_engine_dies_with_its_owner(tmp_path):
    """SIGKILL the process that owns a backend in the middle of a search: the engine (a fake that
    ignores stop, quit and the end of its input) must not outlive it."""
    fake = fake_engine(tmp_path, "orphan", "serve(hang)")
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import chess; from pipeline.engines.uci import open_uci_backend; from search.settings import DiffiMaxSettings\n"
            f"backend = open_uci_backend({str(fake.path)!r}, nodes=1000, timeout=600)\n"
            "backend.analyse(chess.Board(), chess.WHITE, DiffiMaxSettings(depth=1))\n",
        ],
        cwd=ROOT,
    )
    try:
        assert wait_until(fake.searching, 20), "the owner's engine never reached `go`"
        engine = fake.pids()[0]
        assert running(engine)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        assert wait_until(lambda: not running(engine)), "the engine outlived its owner"
    finally:
        owner.kill()
        owner.wait(10)


def test_a_forgotten_backend_does_not_keep_the_interpreter_alive(tmp_path):
    """No close(): the interpreter still exits, and takes the engine with it."""
    fake = fake_engine(tmp_path, "stubborn", "serve(hang)\nhang()")
    owner = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from pipeline.engines.uci import open_uci_backend\nopen_uci_backend({str(fake.path)!r})",
        ],
        cwd=ROOT,
        timeout=30,
        capture_output=True,
        text=True,
    )
    assert owner.returncode == 0, owner.stderr
    assert wait_until(lambda: not running(fake.pids()[0]))


def test_errors_reach_the_cli_as_one_line(tmp_path):
    missing = tmp_path / "nowhere" / "stockfish"
    crasher = fake_engine(tmp_path, "crasher", "serve(crash)")
    fen = nd4_board().fen()
    for engine, expected in (
        (missing, f"engine not found: {missing}"),
        (crasher.path, f"engine {crasher.path} crashed twice on FEN '{fen}': "),
    ):
        result = run_cli("explain", fen, "--engine", str(engine), "--nodes", "1000")
        assert result.returncode == 1
        (line,) = result.stderr.strip().splitlines()
        assert expected in line
    assert len(crasher.pids()) == 2
    assert wait_until(lambda: not any(running(pid) for pid in crasher.pids()))


# -- the real engine ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nd4_result():
    """Default DiffiMax settings at the Nd4 position."""
    with open_uci_backend("stockfish") as backend:
        return backend.analyse(nd4_board(), chess.BLACK, DiffiMaxSettings(depth=UCI_DEFAULT_DEPTH)), backend.describe()


@pytest.mark.stockfish
@needs_stockfish
def test_nxe5_is_a_trap_candidate_after_nd4(nd4_result):
    result, described = nd4_result
    analysis = result.root_analysis
    assert analysis is not None and analysis.path == () and analysis.responder == "white"
    assert analysis.node == nd4_board().fen()
    responses = {r.move: r for r in analysis.responses}
    assert len(responses) == 31
    assert result.value == analysis.best_value and result.best_move == analysis.best
    nxe5 = responses["f3e5"]
    assert nxe5.trap and nxe5.exact and 100 <= nxe5.dip <= 200
    (record,) = [t for t in result.traps if t.move == "f3e5"]
    assert record.path == () and record.best_move == analysis.best and record.dip == nxe5.dip
    assert record.rank == nxe5.alternative_rank
    assert record.refutation[:1] == ("d8g5",)  # 4...Qg5!, hitting e5 and g2
    # Inside [v1, v1 + R] every value is exact; beyond it the adaptive analysis keeps bounds.
    for r in analysis.responses:
        assert r.exact or r.dip > 200
    assert any(not r.exact for r in analysis.responses)
    # Default depth 2 from an opponent root: the root is the only analysed node.
    assert result.analyses == [analysis]
    extra = result.extra
    assert result.stats.nodes == extra["engine_nodes"] > 0
    assert extra["engine"] == described["engine"] == "Stockfish 15.1"
    assert extra["engine_calls"] == extra["engine_lines"] == sum(r.exact for r in analysis.responses)
    assert extra["limits"] == {
        "nodes": ND4_NODES,
        "depth": None,
        "movetime": None,
        "per": "line",
        "deeper_factor": 2,
        "probe_divisor": 4,
    }
    assert 0 < extra["engine_seconds"] <= extra["wall_seconds"]
    assert extra["restarts"] == 0
    assert described["path"] == str(STOCKFISH) and described["version"] == "15.1"
    assert described["options"] == {"Threads": 1, "Hash": 16} and described["deterministic"]


@pytest.mark.stockfish
@needs_stockfish
def test_exclusions_remove_checking_and_capturing_alternatives():
    board = nd4_board()
    plain = DiffiMaxSettings(depth=1)
    runs = {}
    with open_uci_backend("stockfish", nodes=20_000) as backend:
        for name, settings in (
            ("plain", plain),
            ("checks", dataclasses.replace(plain, exclude_checks=True)),
            ("captures", dataclasses.replace(plain, exclude_captures=True)),
        ):
            runs[name] = backend.analyse(board, chess.BLACK, settings)
    responses = {name: {r.move: r for r in run.root_analysis.responses} for name, run in runs.items()}
    # The same engine values (the node query is deterministic), classified differently.
    values = [{m: (r.value, r.exact) for m, r in by_move.items()} for by_move in responses.values()]
    assert values[0] == values[1] == values[2]
    for name, label, test in (("checks", "check", board.gives_check), ("captures", "capture", board.is_capture)):
        for move, r in responses[name].items():
            assert r.excluded == (label if test(chess.Move.from_uci(move)) else None)
            if r.excluded:
                assert not r.trap and r.alternative_rank is None
        analysis = runs[name].root_analysis
        assert analysis.meaningful == sum(1 for r in analysis.responses if r.excluded is None)
    # 4.Bxf7+ (a capture that checks) is a trap candidate until either exclusion removes it.
    assert responses["plain"]["c4f7"].trap
    assert responses["checks"]["c4f7"].excluded == "check"
    assert responses["captures"]["c4f7"].excluded == "capture"
    assert responses["captures"]["f3e5"].excluded == "capture" and responses["checks"]["f3e5"].excluded is None
    traps = {name: {t.move for t in run.traps} for name, run in runs.items()}
    assert traps["checks"] == traps["plain"] - {"c4f7"}
    assert traps["captures"] == traps["plain"] - {m for m in traps["plain"] if board.is_capture(chess.Move.from_uci(m))}


@pytest.mark.stockfish
@needs_stockfish
def test_a_single_legal_reply_is_not_a_trap_node_and_the_search_goes_on():
    board = board_from_fen(ONE_REPLY_FEN)
    with open_uci_backend("stockfish", nodes=5_000) as backend:
        result = backend.analyse(board, chess.BLACK, DiffiMaxSettings(depth=3))
    root = result.root_analysis
    assert root is not None and [r.move for r in root.responses] == ["g1h2"]
    assert root.best == "g1h2" and root.meaningful == 1 and not root.trap_node
    assert not [t for t in result.traps if t.path == ()]
    assert any(a.path[:1] == ("g1h2",) and a.ply == 2 for a in result.analyses)


@pytest.mark.stockfish
@needs_stockfish
def test_mate_scores_count_plies_from_the_root():
    board = board_from_fen(BACK_RANK_FEN)
    with open_uci_backend("stockfish", nodes=20_000) as backend:
        mating = backend.analyse(board, chess.WHITE, DiffiMaxSettings(depth=1))
        mated = backend.analyse(board, chess.BLACK, DiffiMaxSettings(depth=1))
    assert (mating.value, mating.best_move) == (MATE - 1, "e1e8")
    assert mated.root_analysis is not None and mated.root_analysis.best == "e1e8"
    assert mated.value == mated.root_analysis.best_value == -(MATE - 1)
    # 1.f3 e5 2.g4?? Qh4#: a reply that allows mate two plies from the root, exact for explain.
    fools = chess.Board()
    for move in ("f2f3", "e7e5"):
        fools.push_uci(move)
    with UciBackend(str(STOCKFISH), limits=EngineOptions(nodes=20_000), exact_root=True) as backend:
        result = backend.analyse(fools, chess.BLACK, DiffiMaxSettings(depth=1))
    g4 = {r.move: r for r in result.root_analysis.responses}["g2g4"]
    assert (g4.value, g4.exact, g4.reasonable) == (MATE - 2, True, False)
    assert all(r.exact for r in result.root_analysis.responses)


@pytest.mark.stockfish
@needs_stockfish
def test_results_depend_on_the_node_alone():
    """Reruns agree, and the exhaustive visit (S unbounded) records at every node that the
    bounded visit analyses exactly what the bounded visit records there."""
    board = board_from_fen(PAWN_ENDING_FEN)
    bounded = DiffiMaxSettings(depth=3)
    exhaustive = dataclasses.replace(bounded, safety_margin=None)
    with open_uci_backend("stockfish", nodes=3_000) as backend:
        first = backend.analyse(board, chess.WHITE, bounded)
        again = backend.analyse(board, chess.WHITE, bounded)
        everything = backend.analyse(board, chess.WHITE, exhaustive)
    assert (first.value, first.analyses, first.traps) == (again.value, again.analyses, again.traps)
    assert first.stats.nodes == again.stats.nodes
    by_path = {a.path: a for a in everything.analyses}
    assert len(by_path) > len(first.analyses) > 1
    for analysis in first.analyses:
        assert by_path[analysis.path] == analysis
    assert set(first.traps) <= set(everything.traps)
    assert first.value == everything.value


@pytest.mark.stockfish
@needs_stockfish
def test_an_engine_that_crashes_once_is_retried_with_the_same_result(tmp_path):
    marker = tmp_path / "crashed-once"
    fake = fake_engine(
        tmp_path,
        "flaky",
        f"""
        if os.path.exists({str(marker)!r}):
            os.execv({str(STOCKFISH)!r}, [{str(STOCKFISH)!r}])
        open({str(marker)!r}, "w").close()
        serve(crash)
        """,
    )
    board = nd4_board()
    settings = DiffiMaxSettings(depth=1)
    with open_uci_backend(str(fake.path), nodes=5_000) as flaky:
        recovered = flaky.analyse(board, chess.BLACK, settings)
    with open_uci_backend("stockfish", nodes=5_000) as steady:
        expected = steady.analyse(board, chess.BLACK, settings)
    assert recovered.extra["restarts"] == 1
    assert (recovered.analyses, recovered.traps) == (expected.analyses, expected.traps)


@pytest.mark.stockfish
@needs_stockfish
def test_an_impossible_position_never_reaches_the_engine():
    with pytest.raises(FenError, match=r"^invalid FEN 'not a fen': "):
        board_from_fen("not a fen")
    impossible = chess.Board("k7/8/8/8/8/8/8/K6Q w - - 0 1")  # Black is in check, White to move
    with open_uci_backend("stockfish", nodes=2_000) as backend:
        pid = backend.pid
        with pytest.raises(FenError) as error:
            backend.analyse(impossible, chess.BLACK, DiffiMaxSettings(depth=1))
        assert str(error.value) == f"impossible position in FEN {impossible.fen()!r}: opposite check"
        assert backend.analyse(chess.Board(), chess.BLACK, DiffiMaxSettings(depth=1)).root_analysis is not None
        assert backend.pid == pid


@pytest.mark.stockfish
@needs_stockfish
def test_options_and_limits_reach_the_engine():
    board = nd4_board()
    with open_uci_backend("stockfish", threads=2, hash_mb=32, depth=6) as backend:
        described = backend.describe()
        result = backend.analyse(board, chess.BLACK, DiffiMaxSettings(depth=1))
    assert described["options"] == {"Threads": 2, "Hash": 32} and not described["deterministic"]
    assert described["limits"] == {
        "nodes": None,
        "depth": 6,
        "movetime": None,
        "per": "line",
        "deeper_factor": 2,
        "probe_divisor": None,
    }
    assert result.extra["line_depth_min"] == result.extra["line_depth_max"] == 6
    with open_uci_backend("stockfish", movetime=0.01) as backend:
        timed = backend.analyse(board, chess.BLACK, DiffiMaxSettings(depth=1))
    assert timed.root_analysis is not None and not backend.describe()["deterministic"]


@pytest.mark.stockfish
@needs_stockfish
def test_closing_ends_the_engine_and_the_backend():
    with open_uci_backend("stockfish", nodes=1_000) as backend:
        pid = backend.pid
        assert pid is not None and running(pid)
    assert not running(pid)
    with pytest.raises(EngineError, match=r"the backend is closed$"):
        backend.analyse(chess.Board(), chess.BLACK, DiffiMaxSettings(depth=1))


@pytest.mark.stockfish
@needs_stockfish
def test_mining_units_run_on_the_uci_backend():
    occurrences = list(game_occurrences("nd4", ND4_MOVES, [5, 6]))
    with open_uci_backend("stockfish", nodes=2_000) as backend:
        judging = Judging(
            DiffiMaxSettings(depth=UCI_DEFAULT_DEPTH), JudgeSettings(judges=frozenset({"dip", "trappy"})), "dip"
        )
        judge = Judge(JudgingKit(backend, None, None), judging.settings, judging.judges)
        results = [
            analyse_position(judge, o.board(), judging, entry=AnalysisEntry(), played=o.played) for o in occurrences
        ]
    assert [r.error for r in results] == [None, None]
    assert [r.ply for r in results] == [5, 6]
    assert results[1].response["legal"] == 31 and results[1].response["nodes"] > 0


@pytest.mark.stockfish
@needs_stockfish
def test_a_meter_tallies_every_search_by_kind_with_the_engines_cpu():
    # The cost benchmark's meter: the same searches as without it, each counted once under its
    # kind, the nodes adding up to the position's, and the engine's CPU read from its threads.
    (occurrence,) = game_occurrences("nd4", ND4_MOVES, [6])
    judging = Judging(
        DiffiMaxSettings(depth=UCI_DEFAULT_DEPTH), JudgeSettings(judges=frozenset({"dip", "trappy"})), "dip"
    )
    with open_uci_backend("stockfish", nodes=20_000) as backend:
        judge = Judge(JudgingKit(backend, None, None), judging.settings, judging.judges)
        plain = analyse_position(judge, occurrence.board(), judging, entry=AnalysisEntry())
        backend.meter = EngineMeter()
        started = time.process_time()
        metered = analyse_position(judge, occurrence.board(), judging, entry=AnalysisEntry())
        own_cpu = time.process_time() - started
        assert process_cpu_ns(backend.pid) is not None
    assert metered.response == plain.response and metered.traps == plain.traps
    tallies = backend.meter.kinds
    assert set(tallies) <= {"tree", "shallow", "probe", "deep", "deeper"} and {"tree", "shallow"} <= set(tallies)
    # `engine_calls` counts the backend's calls; the tree (one call) is a search per node it visits.
    assert sum(t.calls for t in tallies.values()) > metered.engine_calls
    assert sum(t.nodes for t in tallies.values()) == metered.response["nodes"]
    engine_cpu = sum(t.engine_cpu_seconds for t in tallies.values())
    wall = sum(t.wall_seconds for t in tallies.values())
    # 20,000-node searches take milliseconds of the engine's CPU each, and no more than their wall.
    assert 0.001 * metered.engine_calls < engine_cpu <= wall * 1.05 + 0.01, (engine_cpu, wall, own_cpu)
    assert process_cpu_ns(None) is None and process_cpu_ns(2**22 + 7) is None  # no such process
