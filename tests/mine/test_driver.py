"""The mining job on a real local Ray cluster: counts, determinism, reuse, bad input, output."""

from __future__ import annotations

import json

import pytest

from pipeline.dataset.duck import connect
from pipeline.dataset.store import OutputError
from pipeline.engines.options import EngineOptions
from pipeline.ingest.headers import GameFilter
from pipeline.mine.occurrences import game_occurrences
from pipeline.mine.rows import played_class
from pipeline.mine.work import AnalysisWorker, Judging
from search.settings import DiffiMaxSettings
from tests.conftest import GAMES
from tests.mining_helpers import MINING_JUDGES, SERVED, assert_counts_add_up, assert_same_rows, mine, rows

SAMPLE = str(GAMES / "lichess_100.pgn")


pytestmark = pytest.mark.usefixtures("ray_session")
# Four logical CPUs, so that a job can have four analysis workers on this two-core machine.
RAY_CPUS = 4


def test_an_occurrence_is_judged_with_the_player_who_just_moved_as_setter():
    # 1.e4 e5 2.Nf3 Nc6 3.Bc4 Nd4: analyse after 3...Nd4 (ply 6): Black set it, White responds.
    moves = ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "c6d4", "f3e5")
    judging = Judging(DiffiMaxSettings(depth=1), MINING_JUDGES, "dip")
    worker = AnalysisWorker("native", EngineOptions(), judging)
    (result,) = worker.analyse(list(game_occurrences("g", moves, [6])))
    result.ply = 6
    assert result.error is None and result.ply == 6 and result.game_id == "g"
    assert result.response["setter"] == "black" and result.response["responder"] == "white"
    assert result.response["legal"] == 31
    kind, entry = played_class(result.response, "f3e5")
    # One ply deep the native search sees the pawn Nxe5 wins and not 4...Qg5, which comes too late:
    # the trap's bait is its best reply (Stockfish, in test_uci, sees through it).
    assert entry is not None and kind == "best" and result.response["best_move"] == "f3e5"


def test_mine_sample_counts_add_up_and_views_work(tmp_path):
    out = tmp_path / "run"
    manifest = mine([SAMPLE], out, workers=1)
    assert manifest["games_read"] == 100
    assert_counts_add_up(manifest, out)
    for key in (
        "games_read",
        "games_written",
        "games_filtered",
        "games_error",
        "positions_analysed",
        "positions_reused",
        "settings",
        "engine",
        "versions",
        "wall_seconds",
    ):
        assert key in manifest
    saved = json.loads((out / "manifest.json").read_text())
    assert saved["games_written"] == manifest["games_written"]
    connection = connect(out)
    assert connection.execute("select count(*) from outcomes").fetchone()[0] == manifest["positions"]
    (fell,) = connection.execute("select count(*) from outcomes where fell").fetchone()
    (root_fell,) = connection.execute("select count(*) from root_candidates where by_primary and fell").fetchone()
    assert fell == root_fell  # one falling candidate of the primary judge per position where the human fell
    per_judge = dict(connection.execute("select judge, count(*) from judge_outcomes group by judge").fetchall())
    assert per_judge == {"dip": manifest["positions"], "trappy": manifest["positions"]}
    plies = {row[0] for row in connection.execute("select distinct ply from positions").fetchall()}
    assert plies == {10, 11}


def test_rows_identical_for_one_two_and_four_workers_and_small_shards(tmp_path):
    one, two, four = tmp_path / "one", tmp_path / "two", tmp_path / "four"
    first = mine([SAMPLE], one, workers=1, shard_bytes=20_000)
    manifest = mine([SAMPLE], two, workers=2, shard_bytes=20_000)
    last = mine([SAMPLE], four, workers=4, shard_bytes=20_000)
    assert len(list((two / "shards").iterdir())) > 1
    # Each worker owns its keys, and its table never evicts here: it analyses each of them once,
    # whichever shard's part comes first (the write tasks hand the parts out concurrently), so
    # which occurrence of a repeat was served may differ, how many were may not.
    assert_same_rows(one, two, ignore=SERVED)
    assert_same_rows(one, four, ignore=SERVED)
    assert first["positions_reused"] == manifest["positions_reused"] == last["positions_reused"] > 0
    assert_counts_add_up(manifest, two)


def test_a_table_too_small_to_serve_changes_no_value(tmp_path):
    # Plies 0-3, where openings repeat: with tables that hold nothing every repeat is searched
    # again, with the same answers.
    window = GameFilter(ply_from=0, ply_to=3)
    served, searched = tmp_path / "served", tmp_path / "searched"
    kept = mine([SAMPLE], served, workers=2, game_filter=window)
    none = mine([SAMPLE], searched, workers=2, game_filter=window, table_mb=0)
    assert kept["positions_reused"] > 0 and none["positions_reused"] == 0
    assert none["engine_calls"] > kept["engine_calls"]
    assert_same_rows(served, searched, ignore=SERVED)


def test_repeated_positions_share_their_engine_work(tmp_path):
    out = tmp_path / "run"
    # Early plies repeat across games (openings): each repeat meets its worker's table, which serves
    # the engine's answers the first occurrence got; what the occurrence asks beyond them (the move
    # its human played) is searched and kept.
    manifest = mine([SAMPLE], out, workers=2, game_filter=GameFilter(ply_from=0, ply_to=3))
    assert manifest["positions_reused"] > 0
    assert manifest["positions_analysed"] < manifest["positions"]
    assert manifest["engine_calls"] < 3 * manifest["positions"]
    assert sum(worker["hits"] for worker in manifest["tables"]["workers"]) == manifest["positions_reused"]
    data = rows(out)
    by_key: dict[int, list[dict]] = {}
    for row in data["responses"]:
        by_key.setdefault(row["position_key"], []).append(row)
    repeated = [group for group in by_key.values() if len(group) > 1]
    assert repeated
    for group in repeated:
        assert sum(not row["reused"] for row in group) <= 1  # history can make a transposition its own key
        first = group[0]
        for row in group[1:]:
            assert (row["best_move"], row["value"]) == (first["best_move"], first["value"])
            theirs = {item["move"]: item for item in first["responses"]}
            for item in row["responses"]:
                other = theirs[item["move"]]
                assert item["shallow_value"] == other["shallow_value"]
                if item["exact"] and other["exact"]:
                    assert item["value"] == other["value"]
            # The played move is valued exactly (searched at this node, or taken from the search of
            # the game's next position), or it is the best move, or it keeps the seed's bound (the
            # dip judge's analysis of every reply: its played class rests on that value).
            played = next(item for item in row["responses"] if item["move"] == row["move_played"])
            assert (
                row["played_exact"]
                or row["move_played"] == row["best_move"]
                or ("dip" in row["judges"] and not played["exact"] and row["played_value"] == played["value"])
            )


def test_output_directory_is_not_overwritten_without_resume(tmp_path):
    out = tmp_path / "run"
    mine([SAMPLE], out, workers=1, max_games=5)
    with pytest.raises(OutputError, match="not empty"):
        mine([SAMPLE], out, workers=1, max_games=5)
    before = rows(out)
    mine([SAMPLE], out, workers=1, max_games=5, resume=True)  # everything committed: no new rows
    assert rows(out) == before


def test_max_games_counts_games_read(tmp_path):
    out = tmp_path / "run"
    manifest = mine([SAMPLE], out, workers=1, max_games=7, shard_bytes=4_000)
    assert manifest["games_read"] == 7
    assert_counts_add_up(manifest, out)


BAD_GAMES = {
    "illegal SAN": '[Event "Bad"]\n[Site "https://lichess.org/illegal1"]\n\n1. e4 e5 2. Qxh9 Nc6 1-0\n\n',
    "ambiguous SAN": (
        '[Event "Bad"]\n[Site "https://lichess.org/ambig001"]\n\n'
        "1. e4 e5 2. Nc3 Nc6 3. Ne2 Nf6 1-0\n\n"  # knights on c3 and g1 both reach e2
    ),
    "unterminated comment": '[Event "Bad"]\n[Site "https://lichess.org/comment1"]\n\n1. e4 { never closed e5 1-0\n\n',
}
GOOD_GAME = (
    '[Event "Good {n}"]\n[Site "https://lichess.org/good{n:04d}"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Nd4 4. Nxe5 Qg5 0-1\n\n'
)


def test_bad_input_is_recorded_and_valid_games_survive(tmp_path):
    pgn = tmp_path / "mixed.pgn"
    parts = [GOOD_GAME.format(n=0).encode()]
    for index, text in enumerate(BAD_GAMES.values(), start=1):
        parts.append(text.encode())
        parts.append(GOOD_GAME.format(n=index).encode())
    parts.append(b'[Event "Binary"]\n\n\x00\xff\xfe garbage \x89PNG\r\n 1-0\n\n')
    parts.append('[Event "Caf\xe9"]\n[Site "https://lichess.org/latin001"]\n\n1. d4 d5 1/2-1/2\n\n'.encode("latin-1"))
    parts.append(GOOD_GAME.format(n=9).encode())
    parts.append(b'[Event "Truncated"]\n[Site "https://lichess.org/trunc001"]\n\n1. e4 e5 2. N')
    pgn.write_bytes(b"".join(parts))
    empty = tmp_path / "empty.pgn"
    empty.write_bytes(b"")
    out = tmp_path / "run"
    manifest = mine([str(pgn), str(empty)], out, workers=1, game_filter=GameFilter(ply_from=0, ply_to=2))
    assert_counts_add_up(manifest, out)
    data = rows(out)
    written = {g["game_id"] for g in data["games"]}
    assert {f"good{n:04d}" for n in (0, 1, 2, 3, 9)} <= written
    assert "latin001" in written  # non-UTF-8 bytes in a header do not make a game invalid
    reasons = " | ".join(e["reason"] for e in data["errors"])
    assert manifest["games_error"] >= 4, reasons
    for needle in ("Qxh9", "ambiguous", "comment"):
        assert needle in reasons, reasons


def test_setter_choices_record_trap_setting_moves(tmp_path):
    from pipeline.dataset.queries import run_saved
    from pipeline.mine.config import MineConfig

    out = tmp_path / "run"
    manifest = mine([SAMPLE], out, workers=2, max_games=6, setter_choices=True, settings=DiffiMaxSettings(depth=2))
    assert_counts_add_up(manifest, out)
    data = rows(out)["responses"]
    assert data and all(row["choice_moves"] for row in data)
    for row in data:
        assert set(row["choice_trap_moves"]) <= set(row["choice_moves"])
        assert row["chose_trap_move"] == (row["move_played"] in row["choice_trap_moves"])
    result = run_saved(out, "trap-setting-choice")
    assert result.rows and result.rows[0][0] > 0
    with pytest.raises(ValueError, match="needs --depth 2"):
        MineConfig(inputs=(SAMPLE,), out=str(tmp_path / "x"), setter_choices=True, settings=DiffiMaxSettings(depth=1))


@pytest.mark.parametrize(
    ("move", "entry", "kind"),
    [
        ("e2e4", {"excluded": False, "by_practical": False, "win_drop": 0.0}, "best"),
        ("d2d4", {"excluded": False, "by_practical": True, "win_drop": 0.4}, "trap"),
        ("g2g4", {"excluded": False, "by_practical": False, "win_drop": 0.4}, "unreasonable"),
        ("c2c4", {"excluded": False, "by_practical": False, "win_drop": 0.05}, "reasonable"),
        ("c2c3", {"excluded": False, "by_practical": False, "win_drop": None}, None),
        ("a2a3", {"excluded": True, "by_practical": False, "win_drop": 0.9}, "excluded"),
    ],
)
def test_without_the_dip_judge_the_played_class_is_the_primary_judges(move, entry, kind):
    """Issue 44: mined with the defaults (no dip judge), `played_class` was empty in every row."""
    response = {
        "judges": ["human", "model", "practical"],
        "primary_judge": "practical",
        "best_move": "e2e4",
        "fall_drop": 0.15,
        "responses": [{"move": move, **entry}],
    }
    assert played_class(response, move) == (kind, {"move": move, **entry})
    assert played_class(response, "h2h4") == (None, None)  # a move with no entry
