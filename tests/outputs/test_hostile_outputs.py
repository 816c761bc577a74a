"""Issue 29: the outputs bound what strangers wrote, and a damaged value costs its item, not the run.

On main (571d7ff): a 5 MB player name made a 65 MB report (the puzzles cut names at 255
characters, the report did not); `puzzles` on a shard whose `positions.fen` is not a FEN, or whose
trap move is not UCI, ended in a traceback (exit 70); `tag` with a Moves cell over 131,072
characters ended with exit 70 (`field larger than field limit`), and copied a formula cell
(`=cmd|x!A0`) into its output unprefixed. One small real mining job (the native engine, the dip
judge) is shared by the module.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.dataset.integrity import file_record
from pipeline.outputs.puzzles import PuzzleRequest, generate_puzzles
from tests.conftest import GAMES, PUZZLES, needs_stockfish, one_error_line, run_cli

pytestmark = pytest.mark.cluster

GAMES_MINED = 30
JOB = [
    "--engine",
    "native",
    "--depth",
    "1",
    "--plies",
    "8-12",
    "--workers",
    "1",
    "--judges",
    "dip",
    "--human-model",
    "none",
    "--max-game-mb",
    "16",
]
LONG_NAME = "Z" * 5_000_000


def mine_games(base: Path, games: int, extra: bytes = b"") -> Path:
    """A dataset of the first `games` games of lichess_100.pgn, then `extra`."""
    text = (GAMES / "lichess_100.pgn").read_bytes()
    starts = [index for index in range(len(text)) if text.startswith(b"[Event ", index)]
    source = base / "games.pgn"
    source.write_bytes(text[: starts[games]] + extra)
    out = base / "data"
    run_cli("mine", str(source), "--out", str(out), *JOB, check=True)
    return out


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mine_games(tmp_path_factory.mktemp("outputs"), GAMES_MINED)


def test_a_5_mb_player_name_makes_no_65_mb_report(tmp_path: Path) -> None:
    """Four games and a fifth whose White is 5 MB long: the name is among the report's top players."""
    text = (GAMES / "lichess_100.pgn").read_bytes()
    first = text[: text.index(b"[Event ", 1)]
    named = first.replace(b'[White "', f'[White "{LONG_NAME}'.encode(), 1).replace(b"[GameId ", b"[X ", 1)
    named = named.replace(b"[Site ", b"[Y ", 1)  # its own id: not the first game read again
    data = mine_games(tmp_path, 4, named)
    result = run_cli("report", "--data", str(data), "--out", str(tmp_path / "report"))
    assert result.returncode == 0, result.stderr[-3000:]
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert len(page) < 1_000_000, len(page)
    assert "Z" * 255 + "…(+4999750 chars)" in page and "Z" * 256 not in page


def re_signed(data: Path, table: str, column: str, value: object) -> None:
    """Every shard's `table` file with `column` set to `value`, re-signed (its records recomputed
    in `_shard.json` and the manifest, so that every digest and schema check passes)."""
    manifest = json.loads((data / "manifest.json").read_text())
    for shard in sorted((data / "shards").iterdir()):
        path = shard / f"{table}.parquet"
        found = pq.read_table(path)
        field = found.schema.field(column)
        found = found.set_column(
            found.schema.get_field_index(column), field, pa.array([value] * found.num_rows, field.type)
        )
        pq.write_table(found, path, write_page_checksum=True)
        record = file_record(path).describe()
        info = json.loads((shard / "_shard.json").read_text())
        info["files"][path.name] = manifest["shards"][shard.name]["files"][path.name] = record
        (shard / "_shard.json").write_text(json.dumps(info))
    (data / "manifest.json").write_text(json.dumps(manifest))


@needs_stockfish
@pytest.mark.parametrize("damage", ["fen", "refutation", "move"])
def test_puzzles_on_a_damaged_shard_drop_its_candidates_and_go_on(mined: Path, tmp_path: Path, damage: str) -> None:
    data = tmp_path / "data"
    shutil.copytree(mined, data)
    clean = generate_puzzles(
        mined, tmp_path / "clean", PuzzleRequest(kind="punish", nodes=2_000, human_model=None), workers=1
    )
    assert clean.candidates["punish"] > 0, "the dataset has no punish candidate to damage"
    if damage == "fen":
        re_signed(data, "positions", "fen", "not a fen")
    elif damage == "refutation":
        re_signed(data, "traps", "refutation", ["zz99"])
    else:  # a move that is UCI but not legal there (the punish query matches it with the move played)
        re_signed(data, "traps", "move", "a1a1")
        re_signed(data, "positions", "move_uci", "a1a1")
    report = generate_puzzles(
        data, tmp_path / "out", PuzzleRequest(kind="punish", nodes=2_000, human_model=None), workers=1
    )
    dropped = report.dropped["punish"]
    assert dropped.get("unreadable", 0) + dropped.get("illegal", 0) == clean.candidates["punish"], dropped
    result = run_cli(
        "puzzles",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "cli"),
        "--kind",
        "punish",
        "--nodes",
        "2000",
        "--workers",
        "1",
        "--human-model",
        "none",
        "--files",
        "csv",
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]


def test_tag_reads_any_cell_a_game_can_fill_and_prefixes_formulas(tmp_path: Path) -> None:
    rows = list(csv.DictReader(io.StringIO((PUZZLES / "lichess_puzzles_sample_1000.csv").read_text())))[:3]
    columns = list(rows[0])
    rows[0]["Moves"] = " ".join(["g1f3 g8f6 f3g1 f6g8"] * 40_000)  # 759,999 characters of legal moves
    rows[1]["OpeningTags"] = "=cmd|' /C calc'!A0"
    rows[2]["Popularity"] = "-12"
    source = tmp_path / "puzzles.csv"
    with source.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)
    result = run_cli("tag", str(source), "--out", str(tmp_path / "tagged.csv"), "--human-model", "none")
    assert result.returncode == 0, result.stderr[-3000:]
    with (tmp_path / "tagged.csv").open(newline="") as handle:
        csv.field_size_limit(10_000_000)
        tagged = list(csv.DictReader(handle))
    assert len(tagged) == 3 and tagged[0]["Moves"] == rows[0]["Moves"]
    # Not a puzzle but a game pasted into Moves: kept as it came, untagged, its reason recorded
    # (c24ffed replayed all 160,000 plies' tactics, minutes for one row).
    assert tagged[0]["DiffimaxThemes"] == "" and tagged[1]["DiffimaxThemes"]
    with (tmp_path / "tagged.csv.errors.csv").open(newline="") as handle:
        (error,) = list(csv.DictReader(handle))
    assert error["PuzzleId"] == rows[0]["PuzzleId"] and "160,000 moves" in error["reason"], error
    assert tagged[1]["OpeningTags"] == "'=cmd|' /C calc'!A0"
    assert tagged[2]["Popularity"] == "-12" and tagged[2]["DiffimaxThemes"]


def test_tag_refuses_a_linked_out_before_it_tags_anything(tmp_path: Path) -> None:
    victim = tmp_path / "victim.csv"
    victim.write_text("keep me\n")
    out = tmp_path / "tagged.csv"
    out.symlink_to(victim)
    result = run_cli(
        "tag", str(PUZZLES / "lichess_puzzles_sample_1000.csv"), "--out", str(out), "--human-model", "none"
    )
    assert "symbolic link" in one_error_line(result) and "1,000 rows" not in result.stderr  # refused before the work
    assert victim.read_text() == "keep me\n"
