"""Reliability of `diffimax mine` as a user (and an attacker) meets it, on real processes.

Each test names the item of the reliability issue it guards; each failed on the code before the
fix: a resume under other settings, Ctrl-C and SIGTERM, an engine that cannot start, a failed
run's leftovers, and the smaller items. Real Ray, real Stockfish, real signals; after every fault,
nothing the test started may be left running (checked in /proc, by session).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import GAMES, ROOT, needs_stockfish, one_error_line, run_cli
from tests.fake_engines import NOT_AN_ENGINE, ONLY_ON_THE_DRIVER, fake_engine
from tests.mining_helpers import assert_counts_add_up, rows
from tests.processes import ORPHANS_NOTICE_SECONDS, assert_session_ends, end_session

SAMPLE = str(GAMES / "lichess_100.pgn")
# The engine-only judges: what these tests check does not depend on the human-move model, whose
# engine features would double their time.
CHEAP_JUDGES = ["--judges", "dip,trappy", "--human-model", "none"]
# A small job: 20 games, one position each, several shards of ~20 KB.
SMALL = ["--engine", "native", "--depth", "1", "--plies", "10-10", "--max-games", "20", "--workers", "1", *CHEAP_JUDGES]


def job(plies: str, shard_bytes: int) -> list[str]:
    """Every game of SAMPLE on the native engine with two workers, at `plies`, in shards of
    `shard_bytes`."""
    return [
        "--engine",
        "native",
        "--depth",
        "1",
        "--plies",
        plies,
        "--shard-mb",
        str(shard_bytes / (1 << 20)),
        "--workers",
        "2",
        *CHEAP_JUDGES,
    ]


# The progress test's job: ten positions a game in shards of 15 KB, long enough (about a minute on
# a quiet machine) for progress lines before the last.
LONG = job("10-19", 15_000)
# A job stopped at its first commit, in shards of ~4 KB (~19 of 76 KB), so that most of its shards
# are still ahead when the signal comes. In 15-KB shards (5, fewer than the 6 in flight) every shard
# was prepared at once and the commits came together at the end, so under load a signal sent at the
# first commit could fall into the interpreter's exit after a finished job (exit 0). Five positions
# a game: the resume after it mines what was not committed, and what these tests check (the status
# line, the identity, the counts adding up) needs no more (at sixteen a game, each of the four took
# 240-270 s of a 58-minute suite).
INTERRUPTIBLE = job("10-14", 4_000)
DIFFIMAX = [sys.executable, "-m", "pipeline.cli"]


def committed(out: Path) -> int:
    return len(list((out / "shards").glob("*/_shard.json"))) if (out / "shards").is_dir() else 0


def as_a_terminal_starts_it() -> None:
    """In the child before exec: the signal state a shell gives a foreground job (SIGINT and
    SIGTERM at their defaults, nothing blocked), whatever the test process's own has become."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


# The jobs a test started, ended with their sessions after it (a failed test must not leave a
# cluster running under the next ones).
STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def no_job_outlives_its_test() -> Iterator[None]:
    yield
    while STARTED:
        end_session(STARTED.pop())


def start_mine(out: Path, *args: str) -> subprocess.Popen[str]:
    """`diffimax mine` in a session of its own, as a terminal would run it."""
    command = [*DIFFIMAX, "mine", SAMPLE, "--out", str(out), *args]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=as_a_terminal_starts_it,
    )
    STARTED.append(process)
    return process


def signal_state(pid: int) -> str:
    """The driver's signal masks from /proc (blocked, ignored, caught), for a failure message."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "(gone)"
    return " ".join(line.replace("\t", "=") for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


def wait_for(condition, seconds: float = 180) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the job"
        time.sleep(0.1)


def manifest(out: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((out / "manifest.json").read_text())


# -- 1. --resume with other settings ---------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    run_cli("mine", SAMPLE, "--out", str(out), *SMALL, "--shard-mb", "0.02", check=True)
    return out


@pytest.mark.parametrize(
    ("changed", "job_file", "flag"),
    [
        (["--shard-mb", "0.01"], None, "--shard-mb"),  # other shard ids: the rows would be duplicated
        (["--shard-mb", "0.02", "--depth", "3", "--trap-dip", "0.5"], None, "--depth"),
        (["--shard-mb", "0.02", "--plies", "10-12"], None, "--plies"),
        (["--shard-mb", "0.02"], '[search]\nscope = "2"', "the job file's search.scope"),
        (["--shard-mb", "0.02"], "[engine-options]\nshallow-depth = 2", "the job file's engine-options.shallow-depth"),
        (["--shard-mb", "0.02", "--max-games", "30"], None, "--max-games"),
        # every judge setting reaches the job (mine once dropped these two): a job file's tables
        (
            ["--shard-mb", "0.02"],
            "[thresholds]\npractical-shallow-k = 1",
            "the job file's thresholds.practical-shallow-k",
        ),
        (
            ["--shard-mb", "0.02"],
            "[thresholds]\npractical-shallow-p = 0.1",
            "the job file's thresholds.practical-shallow-p",
        ),
        (["--shard-mb", "0.02"], "[thresholds]\ntrappy-k = 3", "the job file's thresholds.trappy-k"),
    ],
)
def test_resume_under_other_settings_is_refused_and_changes_nothing(
    finished_run: Path, tmp_path: Path, changed, job_file, flag
) -> None:
    before_rows, before_manifest = rows(finished_run), manifest(finished_run)
    args = [arg for arg in SMALL if arg not in ("--max-games", "20")] if "--max-games" in changed else SMALL
    if job_file is not None:
        (tmp_path / "job.toml").write_text(f"{job_file}\n", encoding="utf-8")
        changed = [*changed, "--config", str(tmp_path / "job.toml")]
    resumed = run_cli("mine", SAMPLE, "--out", str(finished_run), *args, *changed, "--resume")
    assert resumed.returncode == 1
    line = one_error_line(resumed.stderr)
    assert f"cannot --resume {str(finished_run)!r}: {flag} differs" in line
    assert rows(finished_run) == before_rows
    assert manifest(finished_run) == before_manifest


def test_resume_with_the_same_settings_adds_nothing(finished_run: Path) -> None:
    before, first = rows(finished_run), manifest(finished_run)
    resumed = run_cli("mine", SAMPLE, "--out", str(finished_run), *SMALL, "--shard-mb", "0.02", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert rows(finished_run) == before
    # The cost of the committed shards stays counted (c24ffed's resumed manifest said 0 of each).
    again = manifest(finished_run)
    assert first["engine_calls"] > 0 and first["engine_seconds"] > 0
    for name in ("analysis_seconds", "engine_seconds", "engine_calls"):
        assert again[name] == pytest.approx(first[name]), name


def test_an_interrupted_run_carries_its_identity_and_resumes_only_under_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = start_mine(out, *INTERRUPTIBLE)
    try:
        wait_for(lambda: committed(out) >= 1 or process.poll() is not None)
        assert process.poll() is None, "the job ended before it could be killed"
        os.killpg(process.pid, signal.SIGKILL)  # no chance to write anything more
    finally:
        process.communicate(timeout=60)
    assert_session_ends(process.pid, ORPHANS_NOTICE_SECONDS)
    assert not (out / "manifest.json").exists()
    identity = json.loads((out / "job.json").read_text())["identity"]
    assert identity["inputs"] == [SAMPLE]
    assert (identity["depth"], identity["ply_from"], identity["ply_to"], identity["engine"]) == (1, 10, 14, "native")
    assert identity["shard_bytes"] == 4_000 and identity["schema_version"] >= 1
    refused = run_cli("mine", SAMPLE, "--out", str(out), *INTERRUPTIBLE, "--trap-dip", "0.5", "--resume")
    assert refused.returncode == 1 and "--trap-dip differs" in one_error_line(refused.stderr)
    resumed = run_cli("mine", SAMPLE, "--out", str(out), *INTERRUPTIBLE, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert_counts_add_up(manifest(out), out)
    assert manifest(out)["games_read"] == 100


def test_resume_without_a_run_to_resume_is_refused(tmp_path: Path) -> None:
    result = run_cli("mine", SAMPLE, "--out", str(tmp_path / "none"), *SMALL, "--resume")
    assert result.returncode == 1
    assert "nothing to resume" in one_error_line(result.stderr)
    assert not (tmp_path / "none").exists()


# -- 2. Ctrl-C and SIGTERM --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signum", "to_group", "code"),
    [
        (signal.SIGINT, True, 130),  # Ctrl-C: the terminal signals the whole foreground group
        (signal.SIGTERM, False, 143),  # kill PID
        (signal.SIGTERM, True, 143),  # a supervisor stopping the group
    ],
    ids=["ctrl-c", "sigterm", "sigterm-group"],
)
def test_an_interrupt_ends_with_its_status_one_line_and_nothing_left(tmp_path: Path, signum, to_group, code) -> None:
    out = tmp_path / "run"
    process = start_mine(out, *INTERRUPTIBLE)
    wait_for(lambda: committed(out) >= 1 or process.poll() is not None)
    assert process.poll() is None, "the job ended before it could be interrupted"
    state = signal_state(process.pid)
    (os.killpg if to_group else os.kill)(process.pid, signum)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == code, f"driver's signals when sent: {state}; stderr: {stderr[-2000:]}"
    assert stdout == ""
    line = one_error_line(stderr)  # no Ray chatter, no traceback
    assert "interrupted" in line and "committed" in line and "--resume" in line
    assert_session_ends(process.pid)
    resumed = run_cli("mine", SAMPLE, "--out", str(out), *INTERRUPTIBLE, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert_counts_add_up(manifest(out), out)
    assert manifest(out)["games_read"] == 100


# -- 3. and 4. an engine that cannot start; nothing left behind --------------------------------------


@pytest.mark.parametrize("kind", ["missing", "false", "echo", "directory"])
def test_an_engine_that_cannot_start_is_one_line_before_anything_is_created(tmp_path: Path, kind: str) -> None:
    engine = {
        "missing": "/nonexistent/sf",
        "false": "/bin/false",
        "echo": str(fake_engine(tmp_path, "echo-engine", NOT_AN_ENGINE)),
        "directory": str(tmp_path),
    }[kind]
    out = tmp_path / "run"
    started = time.monotonic()
    result = run_cli("mine", SAMPLE, "--out", str(out), "--engine", engine, "--max-games", "2")
    assert result.returncode == 1
    line = one_error_line(result.stderr)
    assert f"engine {engine}" in line or f"engine not found: {engine}" in line, line
    assert time.monotonic() - started < 60
    assert not out.exists()


def test_an_engine_that_cannot_start_on_the_workers_stops_the_job_in_one_line(tmp_path: Path) -> None:
    engine = fake_engine(tmp_path, "driver-only", ONLY_ON_THE_DRIVER)
    out = tmp_path / "run"
    started = time.monotonic()
    process = start_mine(out, "--engine", str(engine), "--max-games", "3", "--plies", "10-10", "--workers", "2")
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 1
    line = one_error_line(stderr)
    assert "stopped: engine" in line and "did not start" in line, line
    assert time.monotonic() - started < 120  # not retried forever
    assert_session_ends(process.pid)
    assert not out.exists()  # nothing was committed, so nothing is left to refuse the next command


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard-mb", "-1"], "invalid --shard-mb -1.0"),
        (["--shard-mb", "0"], "invalid --shard-mb 0.0"),
        (["--shard-games", "0"], "invalid --shard-games 0"),
        (["--workers", "0"], "invalid --workers 0"),
        (["--trap-dip", "3"], "trap dip 3.0 exceeds reasonable dip 2.0"),
        (["--plies", "9-3"], "invalid --plies '9-3'"),
    ],
)
def test_bad_settings_create_nothing_and_the_corrected_command_runs(tmp_path: Path, args, message) -> None:
    out = tmp_path / "run"
    result = run_cli("mine", SAMPLE, "--out", str(out), *SMALL, *args)
    assert result.returncode == 1
    assert message in one_error_line(result.stderr)
    assert not out.exists()
    if args[0] == "--shard-mb":
        corrected = run_cli("mine", SAMPLE, "--out", str(out), *SMALL, "--shard-mb", "0.05")
        assert corrected.returncode == 0, corrected.stderr


def test_a_missing_input_creates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_cli("mine", str(tmp_path / "missing.pgn"), "--out", str(out), *SMALL)
    assert result.returncode == 1
    assert "no such file" in one_error_line(result.stderr)
    assert not out.exists()


# -- 6. smaller items ---------------------------------------------------------------------------------


def test_tree_says_what_its_counts_count() -> None:
    result = run_cli("tree", "(-0.2, 1.1, 1.7, 3.2, 4.0)", "--root", "min", check=True)
    assert "node visits" in result.stdout and "leaf evaluations" in result.stdout
    assert "each time a search reaches it" in result.stdout


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("(a, 1)", "'a' at column 2 is not a number or a tuple of numbers"),
        ("((1,2),3+x)", "'3+x' at column 8 is not a number or a tuple of numbers"),
        ("(1, print(2))", "'print(2)' at column 5 is not a number or a tuple of numbers"),
        ("((1,2)", "'(' was never closed"),
    ],
)
def test_tree_literal_errors_name_the_token_not_python_internals(literal: str, message: str) -> None:
    result = run_cli("tree", literal)
    assert result.returncode == 1
    line = one_error_line(result.stderr)
    assert message in line and "<ast." not in line and "object at 0x" not in line


def test_an_empty_input_gives_a_dataset_that_query_and_report_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pgn"
    empty.write_bytes(b"")
    out = tmp_path / "run"
    mined = run_cli("mine", str(empty), "--out", str(out), "--engine", "material", "--workers", "1")
    assert mined.returncode == 0, mined.stderr
    assert manifest(out)["games_read"] == 0
    counted = run_cli("query", "--data", str(out), "select count(*) as n from games", "--format", "json", check=True)
    assert json.loads(counted.stdout) == [{"n": 0}]
    reported = run_cli("report", "--data", str(out), "--out", str(tmp_path / "report"))
    assert reported.returncode == 0, reported.stderr
    assert (tmp_path / "report" / "report.html").stat().st_size > 0


def test_progress_counts_positions_as_they_finish_and_says_done_at_the_end(tmp_path: Path) -> None:
    """Lines, not a bar, when stderr is not a terminal: sparse, then a final `done` line; an ETA is
    never absurd (the issue saw 113,360 s mid-run and 344 s after the end)."""
    out = tmp_path / "run"
    started = time.monotonic()
    result = run_cli("mine", SAMPLE, "--out", str(out), *LONG)
    wall = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("analysed ")]
    assert lines and lines[-1].split(" | ")[2] == "done"
    assert len(lines) <= 2 + wall / 30  # one line per 30 s, and the last
    total = manifest(out)["positions"]  # each occurrence is judged on a worker, served from its table or not
    assert lines[-1].startswith(f"analysed {total:,}/{total:,} positions")
    for line in lines[:-1]:
        eta = line.split(" | ")[2]
        if eta != "ETA ?":
            minutes, seconds = eta.removeprefix("ETA ").split(":")[-2:]
            assert int(minutes) * 60 + int(seconds) < 10 * wall


# -- 7. the headline example ----------------------------------------------------------------------------

BLACKBURNE = "r1bqkbnr/pppp1ppp/8/4p3/2BnP3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"


@pytest.mark.stockfish
@needs_stockfish
def test_explain_uses_stockfish_by_default_and_does_not_call_nxe5_best() -> None:
    result = run_cli("explain", BLACKBURNE, "--json", check=True)
    data = json.loads(result.stdout)
    assert data["engine"]["engine"].startswith("Stockfish")
    assert data["root_analysis"]["best"] != "f3e5"  # 4.Nxe5?? Qg5! is the famous losing move
    text = run_cli("explain", BLACKBURNE, "--depth", "1", check=True).stdout
    assert "Engine: Stockfish" in text
    native = run_cli("explain", BLACKBURNE, "--engine", "native", "--depth", "1", check=True).stdout
    assert "Engine: native" in native
