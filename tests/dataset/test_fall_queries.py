"""Issue 43: the fall probability's saved queries (`calibration`, `trickiest-positions`) and the
`outcomes` view's observed fall (`played_fell`), run by DuckDB over real Parquet and checked
against the same numbers computed here in Python from the files themselves.

The dataset is written by the project's one writer: real games and positions (ratings and clock
times from lichess_eval_clk), and responses rows whose fall estimates and played moves' losses
are drawn here (no engine, no Ray): occurrences without a fall estimate, played moves without a
value, fall_p of exactly 0, 0.5 and 1 and a loss of exactly `fall_drop` among them.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
import zstandard

from pipeline.common.stats import wilson
from pipeline.dataset.queries import RequirementError, run_query, run_saved
from pipeline.dataset.sql import query, sql_text
from pipeline.dataset.store import DatasetWriter
from pipeline.ingest.games import read_pgn_bytes
from pipeline.ingest.outcomes import Selected
from tests.conftest import GAMES
from tests.conftest import cli_in_process as run_cli  # queries need no process of their own

SOURCE = GAMES / "lichess_eval_clk_10024.pgn.zst"  # ratings and %clk on every move
GAMES_USED = 80
PLIES = 8  # the first plies of every game: the early positions repeat from game to game
FALL_DROP = 0.15
SHARD = "clk-00000000-000000"
# The fewest occurrences of a row of trickiest-positions that is not marked few_occurrences.
MIN_OCCURRENCES = 3


def games() -> list[Selected]:
    with SOURCE.open("rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read(1 << 20)
    selected = [game for game in read_pgn_bytes(text[: text.rindex(b"\n[Event ")]) if isinstance(game, Selected)]
    return selected[:GAMES_USED]


def response(position: dict[str, Any], draw: random.Random, judged: bool) -> dict[str, Any]:
    """A responses row for `position`: a fall estimate (or none, as without the practical judge)
    and a played move that fell with that probability (its loss unknown now and then)."""
    mover = position["side_to_move"]
    row: dict[str, Any] = {
        "game_id": position["game_id"],
        "ply": position["ply"],
        "position_key": position["position_key"],
        "setter": "black" if mover == "white" else "white",
        "responder": mover,
        "value": 0,
        "best_move": position["move_uci"],
        "move_played": position["move_uci"],
        "legal": 20,
        "meaningful": 20,
        "judges": ["practical"],
        "primary_judge": "practical",
        "responses": [],
        "nodes": 0,
        "reused": False,
        "analysis_key": position["position_key"],
        "reasonable_dip": 3.0,
        "trap_dip": 1.5,
        "scope": "all",
        "depth": 1,
        "backend": "test",
    }
    if not judged:
        return row | {"played_win_drop": round(draw.random(), 3)}
    special = draw.random()
    fall_p = (0.0, 0.5, 1.0)[draw.randrange(3)] if special < 0.15 else draw.betavariate(0.7, 1.6)
    fell = draw.random() < fall_p
    lost = draw.uniform(FALL_DROP, 2.0) if fell else draw.uniform(0.0, FALL_DROP * 0.99)
    if special > 0.97:
        lost = FALL_DROP  # exactly the threshold: a fall
    low = fall_p * draw.random()
    return row | {
        "fall_p": fall_p,
        "fall_p_low": low,
        "fall_p_high": min(1.0, fall_p + (1 - fall_p) * draw.random()),
        "expected_loss": draw.uniform(0.0, 0.6),
        "fall_drop": FALL_DROP,
        "played_win_drop": None if draw.random() < 0.08 else lost,
    }


def without_some(position: Any, game: int) -> Any:
    """The position, without its clock time in one game of 7 and without its rating in one of 11
    (games without %clk comments or ratings)."""
    if game % 7 == 3:
        position = position | {"clock_seconds": None}
    if game % 11 == 5:
        position = position | {"mover_rating": None}
    return position


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("falls") / "data"
    chosen = games()
    positions = [without_some(row, index) for index, game in enumerate(chosen) for row in game.positions]
    positions = [row for row in positions if row["ply"] < PLIES]
    draw = random.Random(43)
    responses = [response(dict(position), draw, judged=draw.random() > 0.1) for position in positions]
    writer = DatasetWriter.create(out, {"identity": {}})
    rows = {"games": [game.game for game in chosen], "positions": positions, "responses": responses}
    writer.commit(SHARD, rows, {"shard_id": SHARD, "ordinal": 0})
    writer.write_manifest({})
    return out


@pytest.fixture(scope="module")
def without_falls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same games with no fall estimate anywhere (a dataset mined without the practical judge)."""
    out = tmp_path_factory.mktemp("no-falls") / "data"
    chosen = games()[:5]
    positions = [row for game in chosen for row in game.positions if row["ply"] < PLIES]
    draw = random.Random(1)
    responses = [response(dict(position), draw, judged=False) for position in positions]
    writer = DatasetWriter.create(out, {"identity": {}})
    writer.commit(
        SHARD,
        {"games": [g.game for g in chosen], "positions": positions, "responses": responses},
        {"shard_id": SHARD, "ordinal": 0},
    )
    writer.write_manifest({})
    return out


# ---------------------------------------------------------------------------------------------
# The same numbers in Python, from the Parquet files


def win_pct_lost(drop: float | None) -> float | None:
    """schemas/views.sql's `win_pct_lost`: a loss of win chances (0..2) in points of Win%."""
    return None if drop is None else round(drop * 50.0, 2)


def occurrences(dataset: Path) -> list[dict[str, Any]]:
    """Every responses row with its position's rating, clock and FEN, read back from the files
    (float32 values as Python floats, exactly what DuckDB compares)."""
    shard = dataset / "shards" / SHARD
    positions = {(p["game_id"], p["ply"]): p for p in pq.read_table(shard / "positions.parquet").to_pylist()}
    games_ = {g["game_id"]: g for g in pq.read_table(shard / "games.parquet").to_pylist()}
    rows = []
    for response_ in pq.read_table(shard / "responses.parquet").to_pylist():
        position = positions[(response_["game_id"], response_["ply"])]
        drop, threshold = response_["played_win_drop"], response_["fall_drop"]
        rows.append(
            response_
            | {
                "fen": position["fen"],
                "move_san": position["move_san"],
                "rating": position["mover_rating"],
                "clock": position["clock_seconds"],
                "url": games_[response_["game_id"]]["url"],
                "fell": None if drop is None or threshold is None else drop >= threshold,
            }
        )
    return rows


def clock_bucket(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    for limit, name in ((10, "1: <10 s"), (30, "2: 10-30 s"), (60, "3: 30-60 s"), (180, "4: 1-3 min")):
        if seconds < limit:
            return name
    return "5: >3 min"


def band(rating: int | None) -> int | None:
    return None if rating is None else rating // 200 * 200


def expected_calibration(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(grouping, group, bin) -> the row `calibration` should give, computed from the occurrences."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["fall_p"] is None:
            continue
        groups["overall", "all"].append(row)
        if row["rating"] is not None:
            groups["band", str(band(row["rating"]))].append(row)
        if row["clock"] is not None:
            groups["clock", str(clock_bucket(row["clock"]))].append(row)
    expected: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (grouping, group), members in groups.items():
        known = [row for row in members if row["fell"] is not None]
        if not known:
            continue
        bins: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for row in known:
            bins[min(math.floor(row["fall_p"] * 10), 9)].append(row)
        ece = 0.0
        for tenth, inside in bins.items():
            summary = rate_row(inside)
            expected[grouping, group, f"{tenth / 10:.1f}-{(tenth + 1) / 10:.1f}"] = summary
            ece += len(inside) * abs(summary["fall_rate"] - summary["fall_p"])
        total = rate_row(known)
        total["ece"] = ece / len(known)
        total["brier"] = sum((row["fall_p"] - row["fell"]) ** 2 for row in known) / len(known)
        total["played_unvalued"] = len(members) - len(known)
        expected[grouping, group, "all"] = total
    return expected


def rate_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n, k = len(rows), sum(row["fell"] for row in rows)
    low, high = wilson(k, n)
    return {
        "occurrences": n,
        "fell": k,
        "fall_p": sum(row["fall_p"] for row in rows) / n,
        "wilson_low": low,
        "fall_rate": k / n,
        "wilson_high": high,
    }


def records(columns: list[str], rows: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in rows]


def assert_numbers_equal(found: dict[str, Any], expected: dict[str, Any], where: object) -> None:
    for name, value in expected.items():
        if isinstance(value, float):
            assert found[name] == pytest.approx(value, rel=1e-9, abs=1e-12), (where, name, found[name], value)
        else:
            assert found[name] == value, (where, name, found[name], value)


# ---------------------------------------------------------------------------------------------
# The view


def test_outcomes_says_whether_the_human_fell_by_the_estimates_own_threshold(dataset: Path) -> None:
    result = run_query(
        dataset,
        "select game_id, ply, fall_p, fall_p_low, fall_p_high, expected_win_pct_lost, fall_win_pct_lost, played_fell "
        "from outcomes",
    )
    found = {(row["game_id"], row["ply"]): row for row in records(result.columns, result.rows)}
    rows = occurrences(dataset)
    assert len(found) == len(rows)
    for row in rows:
        seen = found[row["game_id"], row["ply"]]
        assert seen["played_fell"] == row["fell"]
        for column in ("fall_p", "fall_p_low", "fall_p_high"):
            assert seen[column] == row[column]
        # Losses for people: points of Win%, one scale, and the 0..2 columns left out of the view.
        assert seen["expected_win_pct_lost"] == win_pct_lost(row["expected_loss"])
        assert seen["fall_win_pct_lost"] == win_pct_lost(row["fall_drop"])
    assert not {"expected_loss", "fall_drop", "played_win_drop"} & set(result.columns)
    # The positions view carries the same estimate (issue 43: a column of positions and of outcomes).
    columns = "game_id, ply, fall_p, fall_p_low, fall_p_high, expected_win_pct_lost"
    positions = run_query(dataset, f"select {columns} from positions")
    assert len(positions.rows) == len(rows)
    for row in records(positions.columns, positions.rows):
        seen = found[row["game_id"], row["ply"]]
        assert all(row[column] == seen[column] for column in columns.split(", ")[2:])
    # The threshold itself is a fall (>=), an unvalued move or no estimate is no answer.
    assert any(row["played_win_drop"] == row["fall_drop"] and row["fell"] for row in rows)
    assert any(row["fall_p"] is not None and row["fell"] is None for row in rows)
    assert any(row["fall_p"] is None and row["fell"] is None for row in rows)


# ---------------------------------------------------------------------------------------------
# calibration


def test_calibration_is_the_python_computation(dataset: Path) -> None:
    result = run_saved(dataset, "calibration")
    assert result.columns[:3] == ["grouping", "group_value", "fall_p_bin"]
    assert result.columns[3:9] == ["occurrences", "fell", "fall_p", "wilson_low", "fall_rate", "wilson_high"]
    assert result.columns[9:] == ["ece", "brier", "played_unvalued"]
    found = {
        (row["grouping"], row["group_value"], row["fall_p_bin"]): row for row in records(result.columns, result.rows)
    }
    expected = expected_calibration(occurrences(dataset))
    assert set(found) == set(expected)
    for key, numbers in expected.items():
        assert_numbers_equal(found[key], numbers, key)
        if key[2] != "all":  # the group's measures are on its 'all' row alone
            assert found[key]["ece"] is None and found[key]["brier"] is None
    # Every kind of group is there, with fall_p of 0 and of 1 in the first and last tenths.
    assert {key[0] for key in found} == {"overall", "band", "clock"}
    assert ("overall", "all", "0.0-0.1") in found and ("overall", "all", "0.9-1.0") in found
    overall = found["overall", "all", "all"]
    assert 0 < overall["ece"] < 1 and 0 < overall["brier"] < 1 and overall["played_unvalued"] > 0


def test_calibration_reads_overall_then_bands_then_clocks_each_total_first(dataset: Path) -> None:
    result = run_saved(dataset, "calibration")
    keys = [(row[0], row[1], row[2]) for row in result.rows]
    order = {"overall": 0, "band": 1, "clock": 2}
    groups = [(order[g], int(v) if g == "band" else 0, v) for g, v, _ in keys]
    assert groups == sorted(groups)
    for index, (grouping, group, fall_p_bin) in enumerate(keys):
        first = index == 0 or keys[index - 1][:2] != (grouping, group)
        assert (fall_p_bin == "all") == first, keys[index - 1 : index + 1]
        if not first and keys[index - 1][2] != "all":
            assert keys[index - 1][2] < fall_p_bin


def test_the_ece_and_brier_of_a_hand_made_case() -> None:
    """The definitions, on numbers small enough to check by hand, in the query itself (over a
    table standing in for `outcomes`, with the views' macros) and in the Python above: 0.05 twice
    (neither fell) and 0.85 twice (both fell), and one more whose played move has no value.
    ECE = (2 x 0.05 + 2 x 0.15) / 4 = 0.1; Brier = (2 x 0.05^2 + 2 x 0.15^2) / 4 = 0.0125."""
    cases = [(0.05, False), (0.05, False), (0.85, True), (0.85, True), (0.5, None)]
    connection = duckdb.connect()
    text = "\n".join(line.split("--")[0] for line in sql_text("views").splitlines())
    for statement in text.split(";"):
        if statement.strip().startswith("create or replace macro"):
            connection.execute(statement)
    connection.execute(
        "create table outcomes as select * from (values "
        + ", ".join(f"({p}::float, {'null' if f is None else f}, null::int, null::double)" for p, f in cases)
        + ") as t(fall_p, played_fell, mover_rating, clock_seconds)"
    )
    cursor = connection.execute(query("queries", "calibration"))
    rows = records([column[0] for column in cursor.description], cursor.fetchall())
    assert [(row["fall_p_bin"], row["occurrences"], row["fell"]) for row in rows] == [
        ("all", 4, 2),
        ("0.0-0.1", 2, 0),
        ("0.8-0.9", 2, 2),
    ]
    total = rows[0]
    assert total["ece"] == pytest.approx(0.1) and total["brier"] == pytest.approx(0.0125)
    assert total["played_unvalued"] == 1
    assert (round(rows[2]["wilson_low"], 4), rows[2]["wilson_high"]) == (0.3424, 1.0)  # 2 of 2
    python = expected_calibration([{"fall_p": p, "fell": f, "rating": None, "clock": None} for p, f in cases])
    assert python["overall", "all", "all"]["ece"] == pytest.approx(0.1)
    assert python["overall", "all", "all"]["brier"] == pytest.approx(0.0125)


# ---------------------------------------------------------------------------------------------
# trickiest-positions


def expected_trickiest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[int, int | None, str | None], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["fall_p"] is not None and row["fell"] is not None:
            groups[row["position_key"], band(row["rating"]), clock_bucket(row["clock"])].append(row)
    found = []
    for (key, rating_band, clock), members in groups.items():
        summary = rate_row(members)
        if not summary["fell"]:
            continue
        summary |= {
            "position_key": key,
            "rating_band": rating_band,
            "clock": clock,
            "expected_win_pct_lost": sum(win_pct_lost(row["expected_loss"]) or 0.0 for row in members) / len(members),
            "few_occurrences": len(members) < MIN_OCCURRENCES,
            "ply": min(row["ply"] for row in members),
            "fen": min(row["fen"] for row in members),
        }
        found.append(summary)
    found.sort(
        key=lambda s: (
            s["few_occurrences"],
            -s["wilson_low"],
            -s["expected_win_pct_lost"],
            -s["occurrences"],
            s["ply"],
            s["fen"],
            s["rating_band"] is None,
            s["rating_band"] or 0,
            s["clock"] is None,
            s["clock"] or "",
        )
    )
    return found[:50]


def test_trickiest_positions_is_the_python_computation(dataset: Path) -> None:
    result = run_saved(dataset, "trickiest-positions")
    found = records(result.columns, result.rows)
    rows = occurrences(dataset)
    expected = expected_trickiest(rows)
    assert len(found) == len(expected) == 50
    for row, wanted in zip(found, expected, strict=True):
        assert (row["fen"], row["rating_band"], row["clock"]) == (wanted["fen"], wanted["rating_band"], wanted["clock"])
        assert_numbers_equal(row, {k: v for k, v in wanted.items() if k not in ("ply", "position_key")}, row["fen"])
        # The move humans fell with, in SAN, and a game where one did.
        members = [
            r
            for r in rows
            if r["position_key"] == wanted["position_key"]
            and r["fell"]
            and band(r["rating"]) == row["rating_band"]
            and clock_bucket(r["clock"]) == row["clock"]
        ]
        assert row["fell_with"] in {r["move_san"] for r in members}
        assert row["example_game"] is None or any(row["example_game"].startswith(str(r["url"])) for r in members)
    # The well-attested rows first, the few marked and after them.
    few = [row["few_occurrences"] for row in found]
    assert few == sorted(few) and not few[0]
    assert any(few), "the dataset should have groups under the minimum too"


def test_without_fall_estimates_the_queries_say_what_is_missing(without_falls: Path) -> None:
    for name in ("calibration", "trickiest-positions"):
        with pytest.raises(RequirementError, match="practical judge"):
            run_saved(without_falls, name)
    listing = run_cli("query", "--list", check=True).stdout
    assert "calibration" in listing and "trickiest-positions" in listing
    printed = run_cli("query", "--data", str(without_falls), "--saved", "calibration")
    assert printed.returncode == 1 and "needs fall probabilities" in printed.stderr


def test_the_cli_prints_calibration(dataset: Path) -> None:
    out = run_cli("query", "--data", str(dataset), "--saved", "calibration", check=True).stdout
    head = out.splitlines()[0].split()
    assert head[:4] == ["grouping", "group_value", "fall_p_bin", "occurrences"]
    assert "overall" in out and "0.9-1.0" in out
