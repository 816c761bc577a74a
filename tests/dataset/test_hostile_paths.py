"""Issue 29, item 1: nothing outside the dataset is touched.

On main (571d7ff) `OUT/.lock` a symbolic link to a file made `mine`, `report --out` and `puzzles`
truncate that file (the lock was opened without `O_NOFOLLOW`), and a dangling link as `--out` was
"[Errno 17] File exists". Here each is refused in one line that names the link, and the file it
points to is untouched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GAMES, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

# The first games of lichess_100.pgn, one position each, in shards of ~5 KB (several shards).
GAMES_MINED = 8
JOB = ["--engine", "material", "--plies", "10-10", "--workers", "1", "--human-model", "none",
       "--shard-mb", "0.005"]  # fmt: skip
COUNT_SQL = "select count(*) from positions"


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the job's input, its finished dataset)."""
    base = tmp_path_factory.mktemp("hostile")
    source = base / "games.pgn"
    text = (GAMES / "lichess_100.pgn").read_bytes()
    starts = [index for index in range(len(text)) if text.startswith(b"[Event ", index)]
    source.write_bytes(text[: starts[GAMES_MINED]])
    out = base / "run"
    run_cli("mine", str(source), "--out", str(out), *JOB, check=True)
    assert len(shard_dirs(out)) >= 2
    return source, out


def shard_dirs(out: Path) -> list[Path]:
    return sorted(path for path in (out / "shards").iterdir() if path.is_dir())


@pytest.fixture
def scratch(mined: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """(a copy of the dataset, a directory outside it holding another copy: the victim)."""
    data = tmp_path / "data"
    shutil.copytree(mined[1], data)
    outside = tmp_path / "outside"
    shutil.copytree(mined[1], outside / "victim")
    (outside / "photos").mkdir()
    (outside / "photos" / "a.jpg").write_bytes(b"\xff\xd8 a photo")
    (outside / "secret.txt").write_text("keep me\n")
    return data, outside


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` (links as links) and what it holds."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_symlink():
            found[relative] = "-> " + os.readlink(path)
        elif path.is_file():
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[relative] = "dir"
    return found


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1 and len(lines) == 1, f"exit {result.returncode}:\n{result.stderr[-3000:]}"
    assert lines[0].startswith("diffimax: error: ") and "Traceback" not in result.stderr, lines[0]
    return lines[0]


@pytest.mark.parametrize("command", ["mine", "report", "puzzles"])
def test_a_linked_lock_file_is_refused_and_its_target_untouched(
    mined: tuple[Path, Path], scratch: tuple[Path, Path], tmp_path: Path, command: str
) -> None:
    source, _ = mined
    data, outside = scratch
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").symlink_to(outside / "secret.txt")
    args = {
        "mine": ["mine", str(source), "--out", str(out), *JOB],
        "report": ["report", "--data", str(data), "--out", str(out)],
        "puzzles": ["puzzles", "--data", str(data), "--out", str(out), "--workers", "1", "--human-model", "none"],
    }[command]
    line = one_error_line(run_cli(*args))
    assert ".lock" in line and "symbolic link" in line, line
    assert (outside / "secret.txt").read_text() == "keep me\n"


def test_a_dangling_link_as_out_is_one_line_saying_so(mined: tuple[Path, Path], tmp_path: Path) -> None:
    source, data = mined
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "nowhere")
    for args in (["mine", str(source), "--out", str(out), *JOB], ["report", "--data", str(data), "--out", str(out)]):
        line = one_error_line(run_cli(*args))
        assert "symbolic link" in line and "does not exist" in line, line
    assert not (tmp_path / "nowhere").exists()
