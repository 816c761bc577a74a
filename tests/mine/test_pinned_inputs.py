"""Inputs pinned while they are read (issue 42, item 1): an input replaced while `mine` runs ends
the job in one line naming it, commits no game of the new content, and `--resume` then refuses,
as it does for any changed input. Real jobs (`python -m pipeline.cli mine` on a local Ray cluster of
its own, the native engine), real files, and a real S3 endpoint (moto's server, tests/objectstore.py).

Each input holds 500 games of one file and its replacement the next 500 (told apart by their `Site`
tags). The change is made once the dataset holds two committed shards (a condition, polled, not a
wait), while the job runs with most of its shards unread; on c24ffed each of these jobs exits 0
with games of both contents in its dataset.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline.dataset.integrity import committed_ids
from pipeline.dataset.store import DatasetReader
from tests.conftest import GAMES, ROOT, one_error_line, run_cli
from tests.objectstore import S3Server, s3_server

PLAYER_B = GAMES / "lichess_player_b_1089.pgn"
GAMES_PER_FILE = 500
# The job of tests/mine/test_object_storage.py, in shards of 20 KB (about 22 of each file).
JOB = [
    "--engine",
    "native",
    "--depth",
    "1",
    "--plies",
    "10-11",
    "--workers",
    "2",
    "--shard-mb",
    "0.02",
    "--judges",
    "dip,trappy",
    "--human-model",
    "none",
]
# Shards the dataset must hold before the input is replaced; and a failsafe for a job that hangs.
COMMITTED_BEFORE_THE_CHANGE = 2
FAILSAFE_SECONDS = 600.0


def games_of(data: bytes) -> list[bytes]:
    starts = [0] + [at + 1 for at in range(len(data)) if data.startswith(b"\n[Event ", at)]
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


@pytest.fixture(scope="module")
def contents() -> tuple[bytes, bytes]:
    """The first content of the input and its replacement: two different sets of games."""
    games = games_of(PLAYER_B.read_bytes())
    return b"".join(games[:GAMES_PER_FILE]), b"".join(games[GAMES_PER_FILE : 2 * GAMES_PER_FILE])


def sites(data: bytes) -> set[str]:
    return {line.split(b'"')[1].decode() for line in data.splitlines() if line.startswith(b"[Site ")}


def mine_and_change(source: str, out: Path, change: Callable[[], None]) -> subprocess.CompletedProcess[str]:
    """`mine source --out out`, with `change()` made once `out` holds COMMITTED_BEFORE_THE_CHANGE
    committed shards while the job runs; the finished process."""
    command = [sys.executable, "-m", "pipeline.cli", "mine", source, "--out", str(out), *JOB]
    process = subprocess.Popen(
        command, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + FAILSAFE_SECONDS
    try:
        while len(committed_ids(out / "shards")) < COMMITTED_BEFORE_THE_CHANGE:
            assert process.poll() is None, f"the job ended before {COMMITTED_BEFORE_THE_CHANGE} shards were seen"
            assert time.monotonic() < deadline, f"no {COMMITTED_BEFORE_THE_CHANGE} shards in {FAILSAFE_SECONDS:.0f} s"
            time.sleep(0.02)
        change()
        assert process.poll() is None, "the job ended before its input changed: more games, or smaller shards"
        stdout, stderr = process.communicate(timeout=FAILSAFE_SECONDS)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=60)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def assert_stopped_without_mixing(
    result: subprocess.CompletedProcess[str], shown: str, out: Path, first: bytes, second: bytes
) -> None:
    """One line naming the input, exit 1; the dataset holds only games of the first content."""
    line = one_error_line(result)
    print(line)  # what docs/mining.md quotes (-rP)
    assert f"input {shown!r} changed while the job read it" in line, line
    assert "nothing more is committed from it" in line and "start a new job" in line, line
    mined = set(DatasetReader(out).read_table("games").column("site").to_pylist())
    assert mined, "no game was committed before the change"
    assert not mined & sites(second), f"{len(mined & sites(second))} games of the new content were committed"
    assert mined <= sites(first)
    assert len(mined) < len(sites(first)), "every game of the first content was committed"


def assert_resume_refuses(source: str, out: Path) -> None:
    line = one_error_line(run_cli("mine", source, "--out", str(out), *JOB, "--resume"))
    print(line)
    assert "changed since the run started" in line and "mine the new input into a new --out" in line, line


@pytest.mark.parametrize("how", ["moved over", "rewritten in place"])
def test_a_local_input_changed_mid_job_ends_it_in_one_line_and_nothing_is_mixed(
    contents: tuple[bytes, bytes], tmp_path: Path, how: str
) -> None:
    first, second = contents
    source = tmp_path / "games.pgn"
    source.write_bytes(first)
    replacement = tmp_path / "replacement.pgn"
    replacement.write_bytes(second)

    def change() -> None:
        if how == "moved over":
            os.replace(replacement, source)
        else:  # the same inode, truncated and written again
            source.write_bytes(second)

    out = tmp_path / "out"
    result = mine_and_change(str(source), out, change)
    assert_stopped_without_mixing(result, str(source), out, first, second)
    assert_resume_refuses(str(source), out)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:  # before any job starts: its Ray workers inherit the endpoint
        yield server


def test_an_s3_input_replaced_mid_job_ends_it_in_one_line_and_nothing_is_mixed(
    s3: S3Server, contents: tuple[bytes, bytes], tmp_path: Path
) -> None:
    first, second = contents
    bucket = s3.bucket()
    client = s3.client()
    client.put_object(Bucket=bucket, Key="month/games.pgn", Body=first)  # type: ignore[attr-defined]
    source = f"s3://{bucket}/month/games.pgn"

    def change() -> None:  # a new upload under the same key
        client.put_object(Bucket=bucket, Key="month/games.pgn", Body=second)  # type: ignore[attr-defined]

    out = tmp_path / "out"
    result = mine_and_change(source, out, change)
    assert_stopped_without_mixing(result, source, out, first, second)
    assert_resume_refuses(source, out)
