"""Issue 18, item 5: one job per output directory.

On main two `--resume` runs (or a fresh run and a resume) on one `--out` ran side by side until
the loser failed at commit, after all its work, and its `reopen` deleted the `_staging` the live
run was using. Here the second job refuses at once, in one line naming the holder, and changes
nothing; the lock goes with its holder however it ends (SIGKILL included), and a lock file left
by a dead job is no obstacle. `report --out` and `puzzles --out` take the same lock.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.dataset.lock import LOCK_FILE, LockedError, output_lock
from tests.conftest import GAMES, ROOT, run_cli
from tests.processes import assert_session_ends

pytestmark = pytest.mark.cluster

SAMPLE = str(GAMES / "lichess_100.pgn")
# Long enough to still be running while the second job is refused: every game, plies 10-11, in
# shards of 5 KB.
LONG = [
    "--engine",
    "native",
    "--depth",
    "1",
    "--plies",
    "10-11",
    "--shard-mb",
    str(5_000 / (1 << 20)),
    "--workers",
    "1",
    "--judges",
    "dip,trappy",
    "--human-model",
    "none",
]
# Holds OUT's lock until killed, as a job would.
HOLDER = (
    "import sys, time\nfrom pipeline.dataset.lock import output_lock\nwith output_lock(sys.argv[1]):\n"
    "    print('held', flush=True)\n    time.sleep(600)\n"
)


def hold(directory: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def refused_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1 and len(lines) == 1, f"exit {result.returncode}:\n{result.stderr[-3000:]}"
    assert "is in use by another diffimax job" in lines[0], lines[0]
    return lines[0]


def test_a_held_lock_refuses_mine_resume_report_and_puzzles_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    holder = hold(out)
    try:
        commands = {
            "mine": ["mine", SAMPLE, "--out", str(out), *LONG],
            "resume": ["mine", SAMPLE, "--out", str(out), *LONG, "--resume"],
            "report": ["report", "--data", str(tmp_path / "none"), "--out", str(out)],
            "puzzles": ["puzzles", "--data", str(tmp_path / "none"), "--out", str(out), "--human-model", "none"],
        }
        (out / "job.json").write_text("{}")  # so that --resume gets as far as the lock
        for name, args in commands.items():
            started = time.monotonic()
            line = refused_line(run_cli(*args))
            assert f"pid {holder.pid}" in line, f"{name}: {line}"
            assert time.monotonic() - started < 30, f"{name} did not refuse at once"
        assert sorted(path.name for path in out.iterdir()) == [LOCK_FILE, "job.json"]  # nothing changed
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    # The kernel released the lock with its holder; the record it left is stale, and ignored.
    assert json.loads((out / LOCK_FILE).read_text())["pid"] == holder.pid
    # ... and a second holder, even in the same process, is refused.
    with output_lock(out), pytest.raises(LockedError), output_lock(out):
        pass


def test_a_second_job_on_a_running_jobs_out_refuses_and_the_first_finishes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "mine", SAMPLE, "--out", str(out), *LONG],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not (out / "job.json").is_file() and first.poll() is None:
            assert time.monotonic() < deadline, "the first job did not start"
            time.sleep(0.1)
        for args in (["--resume"], []):
            line = refused_line(run_cli("mine", SAMPLE, "--out", str(out), *LONG, *args))
            assert f"pid {first.pid}" in line
        assert first.poll() is None and (out / "_staging").is_dir(), "the refused job disturbed the running one"
        _, stderr = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.communicate(timeout=60)
    assert first.returncode == 0, stderr[-3000:]
    assert_session_ends(first.pid)
    assert json.loads((out / "manifest.json").read_text())["games_read"] == 100


def test_a_released_lock_leaves_no_file_and_a_file_removed_under_a_taker_is_taken_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: every output folder kept an empty `.lock`. The holder now removes it as it
    releases; a job that opened the file just before that removal, and locked it just after,
    holds a file no other job can see, so it checks and opens the name again (the removal is
    injected between its open and its lock)."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "job.json").write_text("{}")
    with output_lock(out) as path:
        assert path.is_file()
    assert sorted(p.name for p in out.iterdir()) == ["job.json"]
    import pipeline.dataset.lock as lock

    real_acquire, removed = lock._acquire, []

    def holder_releases_first(descriptor: int, root: Path) -> None:
        if not removed:  # the previous holder's release: its file goes before this job's lock lands
            (root / LOCK_FILE).unlink()
            removed.append(os.fstat(descriptor).st_ino)
        real_acquire(descriptor, root)

    monkeypatch.setattr(lock, "_acquire", holder_releases_first)
    with output_lock(out) as path:
        assert removed and path.is_file()
        held = path.stat().st_ino
        with pytest.raises(LockedError), output_lock(out):  # the file of that name is the one held
            pass
        assert path.stat().st_ino == held
    assert not (out / LOCK_FILE).exists()
