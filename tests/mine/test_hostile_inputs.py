"""Issue 29: no single bad value stops a mining job, and a job that cannot be held is refused before
it starts. Each test names what main (571d7ff) did with the same input; each runs the real
`diffimax mine` with the material engine (no search: the pipeline around an engine).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from pipeline.mine.driver import WORKER_GRACE_SECONDS
from tests.conftest import GAMES, one_error_line, run_cli
from tests.mining_helpers import assert_counts_add_up

pytestmark = pytest.mark.cluster

QUICK = ["--engine", "material", "--workers", "1", "--human-model", "none", "--plies", "0-6"]
# One game whose every number is absurd: evals and mates beyond int32, clocks of 3.6e14 s, 99:99:99
# and a negative one, an eleven-digit rating and time control, the 99th month.
ABSURD = """[Event "Rated Blitz game"]
[GameId "absurd01"]
[Date "9999.99.99"]
[WhiteElo "99999999999"]
[BlackElo "1500"]
[TimeControl "99999999999+0"]

1. e4 { [%eval 30000000] [%clk 99999999999:00:00] } 1... e5 { [%eval #2147483648] [%clk -0:00:01] }
2. Nf3 { [%eval 0.3] [%clk 0:02:59] } 2... Nc6 { [%clk 99:99:99] } 3. Bb5 a6 4. Ba4 1-0

"""


def first_games(count: int) -> bytes:
    text = (GAMES / "lichess_100.pgn").read_bytes()
    starts = [index for index in range(len(text)) if text.startswith(b"[Event ", index)]
    return text[: starts[count]]


def test_one_game_of_absurd_values_costs_nothing_but_its_values(tmp_path: Path) -> None:
    """main: exit 70 (ArrowInvalid: the int32 columns), and the job's output removed."""
    source = tmp_path / "games.pgn"
    source.write_bytes(first_games(3) + ABSURD.encode())
    out = tmp_path / "out"
    result = run_cli("mine", str(source), "--out", str(out), *QUICK)
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["games_written"] == 4 and manifest["games_error"] == 0
    assert manifest["values_dropped"] == {"clock": 3, "date": 1, "eval": 2, "rating": 1, "time_control": 1}
    assert "values dropped" in result.stdout and "3 clock" in result.stdout
    assert_counts_add_up(manifest, out)
    rows = run_cli(
        "query",
        "--data",
        str(out),
        "--format",
        "json",
        "select g.date, g.white_elo, g.base_seconds, p.ply, p.eval_cp, p.eval_mate, p.clock_seconds "
        "from positions p join games g using (game_id) where game_id = 'absurd01' order by ply",
        check=True,
    )
    stored = json.loads(rows.stdout)
    assert {(row["date"], row["white_elo"], row["base_seconds"]) for row in stored} == {(None, None, None)}
    assert [(row["eval_cp"], row["eval_mate"]) for row in stored[:4]] == [(None, None)] * 3 + [(30, None)]
    assert [row["clock_seconds"] for row in stored[2:5]] == [None, None, 179.0]


def test_a_setting_the_dataset_cannot_hold_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """main: every position analysed, then exit 70 (ArrowInvalid: the depth column is int16)."""
    source = tmp_path / "games.pgn"
    source.write_bytes(first_games(2))
    out = tmp_path / "out"
    line = one_error_line(run_cli("mine", str(source), "--out", str(out), *QUICK, "--depth", "100000"))
    assert "--depth 100000" in line and "32,767" in line, line
    assert not out.exists()


# -- duplicate games --------------------------------------------------------------------------


def chesscom_games(count: int) -> bytes:
    """chess.com games: no GameId, no URL Site, a Link (what identifies them is the Link)."""
    text = (GAMES / "chesscom_mixed_1187.pgn").read_bytes()
    starts = [index for index in range(len(text)) if text.startswith(b"[Event ", index)]
    return text[: starts[count]]


def bare(games: bytes) -> bytes:
    """The games without their Link tags: what identifies them is their tags and moves."""
    return b"".join(line for line in games.splitlines(keepends=True) if not line.startswith(b"[Link "))


def test_a_game_read_twice_is_mined_once_and_the_views_join_one_to_one(tmp_path: Path) -> None:
    """main: the same game in two inputs (or twice in one) was mined twice, and `outcomes` had four
    rows for each of its positions (1,095 rows for 435 positions in the issue's run)."""
    lichess = first_games(12)
    chesscom = chesscom_games(6)
    inputs = {
        "first.pgn": lichess + chesscom + bare(chesscom_games(3)),
        "copy.pgn": lichess,  # every Lichess game again: the same GameId / Site
        "overlap.pgn": first_games(16)[len(first_games(8)) :] + chesscom,  # 4 again, 4 new; chess.com again: Link
        "repeated.pgn": bare(chesscom) + bare(chesscom),  # the same tags and moves twice in one input
    }
    for name, data in inputs.items():
        (tmp_path / name).write_bytes(data)
    out = tmp_path / "out"
    sources = [str(tmp_path / name) for name in inputs]
    result = run_cli("mine", *sources, "--out", str(out), *QUICK, "--shard-mb", "0.01")
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    # first.pgn: 12 + 6 kept (the bare half of its chess.com games are new: no Link, other tags);
    # copy.pgn: 12 again; overlap.pgn: 4 again, 4 new, 6 chess.com again; repeated.pgn: the 6 bare
    # chess.com games, 3 of them as first.pgn has them, and all 6 again.
    duplicates = 12 + 4 + 6 + 3 + 6
    assert manifest["games_filtered_by"].get("duplicate") == duplicates, manifest["games_filtered_by"]
    assert manifest["games_written"] == manifest["games_read"] - duplicates - manifest["games_error"]
    assert_counts_add_up(manifest, out)
    counts = json.loads(
        run_cli(
            "query",
            "--data",
            str(out),
            "--format",
            "json",
            "select (select count(*) from outcomes) as outcomes, (select count(*) from responses) as responses, "
            "(select count(distinct (game_id, ply)) from responses) as judged, "
            "(select count(*) from judge_outcomes) as verdicts, "
            "(select count(distinct (judge, game_id, ply)) from judge_outcomes) as distinct_verdicts, "
            "(select count(*) - count(distinct game_id) from games) as repeated_ids",
            check=True,
        ).stdout
    )[0]
    assert counts["outcomes"] == counts["responses"] == counts["judged"] > 0, counts
    assert counts["verdicts"] == counts["distinct_verdicts"] and counts["repeated_ids"] == 0, counts
    # A resumed run knows what the committed shards kept: the same rows after the last shards are lost.
    shards = sorted(path for path in (out / "shards").iterdir())
    kept = run_cli("query", "--data", str(out), "--format", "csv", "select game_id from games order by 1", check=True)
    for shard in shards[len(shards) // 3 :]:
        shutil.rmtree(shard)
    resumed = run_cli("mine", *sources, "--out", str(out), *QUICK, "--shard-mb", "0.01", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    again = run_cli("query", "--data", str(out), "--format", "csv", "select game_id from games order by 1", check=True)
    assert again.stdout == kept.stdout
    assert json.loads((out / "manifest.json").read_text())["games_filtered_by"]["duplicate"] == duplicates


def test_games_sharing_one_link_are_one_only_when_their_moves_agree(tmp_path: Path) -> None:
    """c24ffed: nine different chess.com games under one Link tag were mined as one, 8 dropped as
    duplicates. A Link joins two games only when their moves agree too (issue 42)."""
    text = (GAMES / "chesscom_mixed_1187.pgn").read_text()
    games = ["[Event " + part for part in text.split("[Event ")[1:10]]
    shared = [
        "\n".join(
            '[Link "https://www.chess.com/game/live/1"]' if line.startswith("[Link ") else line
            for line in game.splitlines()
        )
        for game in games
    ]
    assert all('[Link "https://www.chess.com/game/live/1"]' in game for game in shared)
    source = tmp_path / "games.pgn"
    source.write_text("\n\n".join([*shared, shared[0]]) + "\n\n")  # ... and one true copy of the first
    out = tmp_path / "out"
    mined = run_cli("mine", str(source), "--out", str(out), *QUICK)
    assert mined.returncode == 0, mined.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["games_read"] == 10 and manifest["games_filtered_by"] == {"duplicate": 1}, manifest
    assert manifest["games_written"] + manifest["games_error"] == 9


# -- placement --------------------------------------------------------------------------------


def test_more_workers_than_the_cluster_has_cpus_start_with_a_line_and_never_hang(tmp_path: Path) -> None:
    """main: `--workers 3` on a 2-CPU machine hung at "analysed 6/15 positions" with no message (the
    third worker waited for a CPU that never came); at 1ded040, a silent wait of 120 s for it."""
    source = tmp_path / "games.pgn"
    source.write_bytes(first_games(3))
    out = tmp_path / "out"
    cpus = os.cpu_count() or 1
    options = [option if option != "1" else str(cpus + 1) for option in QUICK]
    started = time.monotonic()
    result = run_cli("mine", str(source), "--out", str(out), *options)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{cpus + 1} workers asked, the cluster has {cpus} CPUs: mining starts with {cpus}" in result.stderr
    assert time.monotonic() - started < WORKER_GRACE_SECONDS  # the job did not wait out the grace
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["games_written"] == 3
    assert_counts_add_up(manifest, out)
