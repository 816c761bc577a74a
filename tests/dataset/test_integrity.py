"""Issue 18, items 1 and 4: a damaged committed shard, and an input changed before `--resume`.

On main these gave tracebacks (exit 70), or exit 0 with other answers than the dataset's: a
shard cut to half or to 0 bytes, a `_shard.json` that is not JSON, a changed byte, a deleted
shard directory; and a resume over a changed input mixed two inputs. Here each is one line that
names the shard (or the input) and says how to repair, through every reader (`query`, `report`,
`puzzles`, `mine --resume`, `verify`, the human corpus), and `--resume --repair` mines the damaged
shards again into the same rows. One small real mining job (real Ray) is shared by the module;
each test damages a copy of it.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline.dataset.integrity import DamagedDatasetError
from pipeline.dataset.queries import run_query
from pipeline.dataset.verify import verify_dataset
from pipeline.human.corpus import Corpus
from search.errors import DiffimaxError
from tests.conftest import GAMES, cli_in_process, one_error_line, run_cli
from tests.mining_helpers import SERVED, assert_same_rows

pytestmark = pytest.mark.cluster

# The input's games (the first of lichess_100.pgn), one position each, in shards of ~5 KB
# (four shards).
GAMES_MINED = 24
JOB = [
    "--engine",
    "native",
    "--depth",
    "1",
    "--plies",
    "10-10",
    "--workers",
    "1",
    "--judges",
    "dip,trappy",
    "--human-model",
    "none",
    "--shard-mb",
    "0.005",
]
CHECKSUM_SQL = "select count(*), sum(hash(position_key)), sum(hash(fen)), sum(hash(move_uci)) from positions"


def shard_dirs(out: Path) -> list[Path]:
    return sorted(path for path in (out / "shards").iterdir() if path.is_dir())


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the job's input, its finished dataset): the input is a copy that item 4's tests change."""
    base = tmp_path_factory.mktemp("integrity")
    source = base / "games.pgn"
    text = (GAMES / "lichess_100.pgn").read_bytes()
    starts = [index for index in range(len(text)) if text.startswith(b"[Event ", index)]
    source.write_bytes(text[: starts[GAMES_MINED]])
    out = base / "run"
    run_cli("mine", str(source), "--out", str(out), *JOB, check=True)
    assert len(shard_dirs(out)) >= 3
    return source, out


@pytest.fixture
def copy(mined: tuple[Path, Path], tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(mined[1], target)
    return target


def cut_half(shard: Path) -> None:
    path = shard / "positions.parquet"
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def emptied(shard: Path) -> None:
    (shard / "traps.parquet").write_bytes(b"")


def not_json(shard: Path) -> None:
    (shard / "_shard.json").write_text("not json")


def footer_changed(shard: Path) -> None:
    """A byte of the Parquet footer (schema, offsets, statistics: what page checksums miss)."""
    path = shard / "games.parquet"
    data = bytearray(path.read_bytes())
    data[-20] ^= 0x55
    path.write_bytes(bytes(data))


def deleted(shard: Path) -> None:
    shutil.rmtree(shard)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "cut-to-half": cut_half,
    "emptied": emptied,
    "not-json": not_json,
    "footer-byte": footer_changed,
    "deleted": deleted,
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_shard_is_one_line_naming_it_in_every_reader(
    mined: tuple[Path, Path], copy: Path, tmp_path: Path, damage: str
) -> None:
    source, _ = mined
    shard = shard_dirs(copy)[1]
    DAMAGES[damage](shard)
    readers = {
        "query": ["query", "--data", str(copy), "select count(*) from positions"],
        "report": ["report", "--data", str(copy), "--out", str(tmp_path / "report")],
        "puzzles": [
            *("puzzles", "--data", str(copy), "--out", str(tmp_path / "puzzles")),
            *("--workers", "1", "--human-model", "none", "--files", "csv"),
        ],
    }
    if damage != "deleted":  # a deleted shard is what --resume mines again (test below)
        readers["resume"] = ["mine", str(source), "--out", str(copy), *JOB, "--resume"]
    for name, args in readers.items():
        line = one_error_line(run_cli(*args))
        assert shard.name in line and "--resume --repair" in line, f"{name}: {line}"
    verified = run_cli("verify", "--data", str(copy))
    assert verified.returncode == 1 and shard.name in verified.stdout, verified.stdout + verified.stderr
    assert not (tmp_path / "report" / "report.html").exists() and not (tmp_path / "puzzles" / "puzzles.csv").exists()
    # The human corpus read from a dataset: never a smaller corpus without a word.
    with pytest.raises(DiffimaxError, match=shard.name):
        Corpus.load(copy)


def test_changed_bytes_never_answer_other_data_and_verify_finds_every_one(copy: Path) -> None:
    """On main, 62 of 300 random one-byte changes gave different data with exit 0."""
    expected = run_query(copy, CHECKSUM_SQL).rows
    assert verify_dataset(copy).problems == []
    shard = shard_dirs(copy)[0]
    path = shard / "positions.parquet"
    original = path.read_bytes()
    chooser = random.Random(18)
    refused = 0
    for _ in range(60):
        changed = bytearray(original)
        offset = chooser.randrange(4, len(original) - 8)  # not the magic bytes
        changed[offset] ^= chooser.randrange(1, 256)
        path.write_bytes(bytes(changed))
        try:
            assert run_query(copy, CHECKSUM_SQL).rows == expected, f"byte {offset}: other data, no error"
        except DamagedDatasetError as error:
            assert shard.name in str(error), str(error)
            refused += 1
        problems = verify_dataset(copy).problems
        assert len(problems) == 1 and shard.name in problems[0], (offset, problems)
    path.write_bytes(original)
    assert refused > 0 and verify_dataset(copy).problems == []


def test_resume_refuses_a_damaged_shard_and_repair_mines_it_again_into_the_same_rows(
    mined: tuple[Path, Path], copy: Path
) -> None:
    source, original = mined
    first, second = shard_dirs(copy)[:2]
    cut_half(first)
    deleted(second)
    before = sorted(str(path.relative_to(copy)) for path in copy.rglob("*"))
    line = one_error_line(run_cli("mine", str(source), "--out", str(copy), *JOB, "--resume"))
    assert first.name in line
    assert sorted(str(path.relative_to(copy)) for path in copy.rglob("*")) == before  # nothing changed
    repaired = run_cli("mine", str(source), "--out", str(copy), *JOB, "--resume", "--repair")
    assert repaired.returncode == 0, repaired.stderr
    assert run_cli("verify", "--data", str(copy)).returncode == 0
    assert_same_rows(copy, original, ignore=SERVED)
    assert json.loads((copy / "manifest.json").read_text())["games_read"] == GAMES_MINED


def test_a_partial_read_is_only_on_request_and_says_what_it_leaves_out(copy: Path) -> None:
    whole = run_cli("query", "--data", str(copy), "select count(*) from games", "--format", "csv", check=True)
    shard = shard_dirs(copy)[0]
    deleted(shard)
    partial = run_cli("query", "--data", str(copy), "select count(*) from games", "--format", "csv", "--allow-partial")
    assert partial.returncode == 0, partial.stderr
    assert shard.name in partial.stderr and "partial dataset" in partial.stderr
    assert int(partial.stdout.split()[-1]) < int(whole.stdout.split()[-1])
    (copy / "manifest.json").unlink()  # as a run that was interrupted, or is being resumed
    line = one_error_line(run_cli("query", "--data", str(copy), "select 1"))
    assert "has not finished" in line and "--allow-partial" in line


# -- item 4: the identity pins each input's content ---------------------------------------------


@pytest.fixture
def changed_input(mined: tuple[Path, Path]) -> Iterator[Path]:
    """The job's input, restored after the test changes it."""
    source, _ = mined
    original = source.read_bytes()
    yield source
    source.write_bytes(original)


def three_games() -> bytes:
    text = (GAMES / "lichess_100.pgn").read_bytes()
    starts = [index for index in range(len(text)) if text.startswith(b"[Event ", index)]
    return text[starts[-3] :]


@pytest.mark.parametrize("where", ["appended", "inserted-mid-file"])
def test_resume_refuses_an_input_changed_since_the_run(
    mined: tuple[Path, Path], copy: Path, changed_input: Path, where: str
) -> None:
    data = changed_input.read_bytes()
    if where == "appended":
        changed_input.write_bytes(data + b"\n" + three_games())
    else:
        middle = data.index(b"\n[Event ", len(data) // 2) + 1
        changed_input.write_bytes(data[:middle] + three_games() + b"\n" + data[middle:])
    if where != "appended":
        (copy / "manifest.json").unlink()  # as a run interrupted before the input changed
    line = one_error_line(run_cli("mine", str(changed_input), "--out", str(copy), *JOB, "--resume"))
    assert str(changed_input) in line and "changed since the run started" in line


def test_verify_finds_a_shard_record_whose_counts_are_damaged(copy: Path) -> None:
    """A count of the wrong type in a `_shard.json` (what `--resume` refuses) is a problem `verify`
    names, shard and count, before any job resumes on it."""
    shard = shard_dirs(copy)[0]
    record = json.loads((shard / "_shard.json").read_text())
    record["counts"]["games_read"] = "many"
    (shard / "_shard.json").write_text(json.dumps(record))
    verified = cli_in_process("verify", "--data", str(copy))
    assert verified.returncode == 1, verified.stdout + verified.stderr
    line = next(line for line in verified.stdout.splitlines() if "games_read" in line)
    assert line == f"the record of shard {shard.name} is damaged: its count 'games_read' is 'many', not a whole number"
    assert "1 problem(s)" in verified.stdout + verified.stderr
