"""`diffimax query` and the saved queries over a dataset mined from real games; the human judge;
and the command's hygiene: empty SQL, dataset paths that look like globs, and strangers' headers
that hold terminal escape sequences or a megabyte of text."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from pathlib import Path

import chess.pgn
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.common.sanitize import CELL_MAX
from pipeline.common.stats import wilson
from pipeline.dataset.queries import (
    QueryError,
    RequirementError,
    render,
    requirements,
    run_query,
    run_saved,
    saved_queries,
)
from pipeline.ingest.headers import GameFilter
from search.settings import DiffiMaxSettings
from tests.conftest import GAMES
from tests.conftest import cli_in_process as run_cli  # queries need no process of their own
from tests.mining_helpers import EVERY_JUDGE, mine

# Header values that drive a terminal: clear the screen (CSI), set the window title (OSC, ended by
# BEL), the 8-bit CSI of C1 and a right-to-left override that reorders what follows.
CLEAR = "\x1b[2JCleared"
TITLE = "\x1b]0;pwned\x07Mallory"
C1_BIDI = "\u202eevil\x9b31m"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")
# A header of half a megabyte (what `select * from games` used to print whole): far past any cell,
# within the 1 MiB game cap (--max-game-mb), which a larger one would trip (an error row).
HUGE = 1 << 19


@pytest.fixture(scope="module")
def dataset(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100 games of player_a (ratings, time controls and clocks on every game), plies 0-16, every
    judge (the bundled human-move model, so the practical judge is primary) as `diffimax mine` does."""
    out = tmp_path_factory.mktemp("query") / "run"
    mine(
        [str(GAMES / "lichess_player_a_37221.pgn.zst")],
        out,
        workers=2,
        max_games=100,
        game_filter=GameFilter(ply_from=0, ply_to=16),
        **EVERY_JUDGE,
    )
    return out


def _tag(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture(scope="module")
def hostile(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first game of lichess_100.pgn twice, under headers holding escape sequences and under a
    half-megabyte Event; mined at plies 4-8, depth 2, with --setter-choices."""
    root = tmp_path_factory.mktemp("hostile-query")
    with (GAMES / "lichess_100.pgn").open(encoding="utf-8") as handle:
        game = chess.pgn.read_game(handle)
    assert game is not None
    moves = game.accept(chess.pgn.StringExporter(headers=False, comments=False, variations=False))
    headers = [
        {"Event": CLEAR, "White": TITLE, "Black": C1_BIDI, "GameId": "escapes1"},
        {"Event": "E" * HUGE, "White": "w", "Black": "b", "GameId": "huge0001"},
    ]
    pgn = "".join(
        "".join(f"[{name} {_tag(value)}]\n" for name, value in tags.items()) + "\n" + moves + "\n\n" for tags in headers
    )
    source = root / "hostile.pgn"
    source.write_text(pgn, encoding="utf-8", newline="")
    out = root / "run"
    manifest = mine(
        [str(source)],
        out,
        workers=1,
        setter_choices=True,
        settings=DiffiMaxSettings(depth=2),
        game_filter=GameFilter(ply_from=4, ply_to=8),
    )
    assert manifest["games_written"] == 2, manifest
    return out


def assert_one_line_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stdout[-500:], result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("diffimax: error: ") and message in lines[0], lines[-5:]


def test_every_saved_query_runs_and_returns_rows(dataset):
    queries = saved_queries()
    assert len(queries) >= 8
    assert set(requirements()) <= set(queries)
    for name in queries:
        if name == "trap-setting-choice":  # this dataset was mined without --setter-choices
            with pytest.raises(RequirementError, match="--setter-choices"):
                run_saved(dataset, name)
            continue
        result = run_saved(dataset, name)
        assert result.rows, f"saved query {name} returned no rows"
        if "fall_rate" in result.columns:
            index = {c: i for i, c in enumerate(result.columns)}
            # judge-comparison names its interval after the rate (it also has a lift interval)
            low_name, high_name = (
                ("wilson_low", "wilson_high") if "wilson_low" in index else ("fall_rate_low", "fall_rate_high")
            )
            for row in result.rows:
                low, rate, high = row[index[low_name]], row[index["fall_rate"]], row[index[high_name]]
                if rate is None:  # a judge with no trap node in this dataset
                    assert name == "judge-comparison" and low is None and high is None
                    continue
                assert 0 <= low <= rate <= high <= 1


def plain(value):
    """A cell as Python compares it: pandas's arrays as lists, its NaN / NA as None."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return None if value is None or value != value else value


def test_a_notebook_opens_the_dataset_and_reads_a_saved_query_into_pandas(dataset):
    """Issue 46, item 5 (docs/api.md): `diffimax.open` gives the views and the saved queries as
    DuckDB relations; a saved query read into pandas is what `diffimax query --saved` answers."""
    import diffimax

    with diffimax.open(dataset) as ds:
        frame = ds.saved("practical-traps").df()
        traps = ds.sql("select count(*) as n, count(distinct game_id) as games from traps").df()
        assert "practical-traps" in ds.saved_names()
    answered = run_saved(dataset, "practical-traps")
    assert list(frame.columns) == answered.columns and len(frame) == len(answered.rows) > 0
    assert [[plain(value) for value in row] for row in frame.itertuples(index=False)] == [
        [plain(value) for value in row] for row in answered.rows
    ]
    assert traps["n"][0] == run_query(dataset, "select count(*) from traps").rows[0][0] > 0
    with diffimax.open(dataset) as ds, pytest.raises(QueryError, match="no saved query 'nope'"):
        ds.saved("nope")


@pytest.mark.parametrize(
    ("name", "loss"), [("practical-traps", "win_pct_lost"), ("top-trap-positions", "fallen_win_pct_lost")]
)
def test_rankings_rest_on_the_lower_bound_and_mark_the_rows_of_few_occurrences(dataset, name, loss):
    """Issue 44: on small data every trap reads "1 of 1 fell, 100 %", so a ranking by falls or by
    the rate puts the least-attested rows first. The rows of 3 occurrences or more come first, by
    the Wilson lower bound of the fall rate, then the larger loss; the others are marked."""
    result = run_saved(dataset, name)
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    assert rows
    assert all(row["few_occurrences"] == (row["games"] < 3) for row in rows)
    assert all(row["wilson_low"] == pytest.approx(wilson(row["fell"], row["games"])[0]) for row in rows)
    ranked = [(row["few_occurrences"], -row["wilson_low"], -(row[loss] or 0.0), -row["games"]) for row in rows]
    assert ranked == sorted(ranked)
    if any(row["few_occurrences"] for row in rows) and not all(row["few_occurrences"] for row in rows):
        assert not rows[0]["few_occurrences"]


def test_lift_compares_with_a_random_meaningful_reply(dataset):
    (row,) = run_saved(dataset, "lift").rows
    data = dict(zip(run_saved(dataset, "lift").columns, row, strict=True))
    assert data["trap_nodes"] > 0 and data["expected_by_chance"] > 0
    assert data["lift"] == pytest.approx(data["fell"] / data["expected_by_chance"])


def test_outcomes_view_partitions_the_analysed_positions(dataset):
    result = run_query(dataset, "select outcome, count(*) from outcomes group by outcome")
    outcomes = dict(result.rows)
    assert set(outcomes) <= {"best", "fell", "mistake", "reasonable", "excluded", "unmeasured"}
    assert {"best", "fell"} <= set(outcomes)
    (total,) = run_query(dataset, "select count(*) from responses").rows[0]
    assert sum(outcomes.values()) == total


def test_cli_formats_and_errors(dataset):
    out = run_cli(
        "query",
        "--data",
        str(dataset),
        "select game_id, ply from positions order by 1, 2 limit 3",
        "--format",
        "json",
        check=True,
    )
    assert len(json.loads(out.stdout)) == 3
    out = run_cli("query", "--data", str(dataset), "--saved", "fall-rate-by-rating", "--format", "csv", check=True)
    header = next(csv.reader(io.StringIO(out.stdout)))
    assert header[:3] == ["rating_band", "trap_nodes", "fell"]
    listing = run_cli("query", "--list", check=True).stdout
    assert "fall-rate-by-clock" in listing and "lift" in listing
    for args, message in (
        (("--data", str(dataset), "select * from no_such_table"), "query failed"),
        (("--data", str(dataset.parent / "missing"), "select 1"), "no diffimax dataset"),
        (("--data", str(dataset), "--saved", "nope"), "no saved query 'nope'"),
    ):
        result = run_cli("query", *args)
        assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
        assert message in result.stderr


def test_verify_of_a_place_without_a_dataset_is_one_line_saying_so(tmp_path):
    """It said "no manifest.json: the job has not finished" and told the user to repair a dataset
    that was never there; it now says what every reader says."""
    for place in (tmp_path / "missing", tmp_path):
        result = run_cli("verify", "--data", str(place))
        assert result.returncode == 1 and not result.stdout, result.stdout
        assert (
            result.stderr
            == f"diffimax: error: no diffimax dataset in {str(place)!r} (expected the output directory of diffimax mine)\n"
        )


def test_csv_output_neutralises_formulas():
    from pipeline.dataset.queries import QueryResult

    text = render(QueryResult(["name"], [("=cmd|' /C calc'!A0",), ("plain",)]), "csv")
    assert text.splitlines()[1].startswith("\"'=cmd") or text.splitlines()[1].startswith("'=cmd")
    with pytest.raises(QueryError, match="unknown format"):
        render(QueryResult(["a"], []), "xml")


def test_explain_human_judge_uses_the_corpus(dataset):
    # After 1.e4 (ply 1) the corpus holds many games: explain counts what they replied, per move.
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    (games,) = run_query(dataset, f"select count(*) from positions where fen = '{fen}'").rows[0]
    played = dict(run_query(dataset, f"select move_uci, count(*) from positions where fen = '{fen}' group by 1").rows)
    assert games >= 5, "1.e4 is common in player_a's games"
    out = run_cli(
        "explain", fen, "--engine", "native", "--depth", "1", "--human-corpus", str(dataset), "--json", check=True
    )
    judges = json.loads(out.stdout)["judges"]
    assert "human" in judges["settings"]["judges"]
    assert judges["corpus_games"] == games
    counts = {reply["move"]: reply["corpus_count"] for reply in judges["replies"]}
    assert {move: n for move, n in counts.items() if n} == played
    # A reply the corpus names as a human judge's candidate was played in enough of those games.
    settings = judges["settings"]
    for move in judges["trap_candidates"]["human"]:
        assert counts[move] >= settings["corpus_min_games"] and counts[move] / games >= settings["corpus_share"]


# ---------------------------------------------------------------------------------------------
# Hygiene: each of these failed before the change that added it (see the commit message).


def test_empty_sql_is_one_clear_line(dataset):
    for sql, message in (("", "empty SQL"), ("  \n\t ", "empty SQL"), (" /* only a comment */ ;", "no SQL statement")):
        assert_one_line_error(run_cli("query", "--data", str(dataset), sql), message)
    with pytest.raises(QueryError, match=r"^empty SQL: give a statement"):
        run_query(dataset, " ")


def test_a_dataset_path_with_glob_characters_is_read_as_it_is(hostile, tmp_path):
    (games,) = run_query(hostile, "select count(*) from games").rows[0]
    assert games == 2
    brackets = tmp_path / "a[1]"
    shutil.copytree(hostile, brackets)
    out = run_cli("query", "--data", str(brackets), "select count(*) as games from games", "--format", "json")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == [{"games": 2}]
    every = tmp_path / "x*?[]{}"
    shutil.copytree(hostile, every)
    assert run_query(every, "select count(*) from games").rows == [(2,)]


def test_a_neighbouring_dataset_is_never_read(hostile, tmp_path):
    """`--data 'run*'` names the directory called `run*`, not also `run` and `run1` beside it."""
    for name in ("run*", "run", "run1"):
        shutil.copytree(hostile, tmp_path / name)
    out = run_cli("query", "--data", str(tmp_path / "run*"), "select count(*) as games from games", "--format", "json")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == [{"games": 2}]
    shutil.rmtree(tmp_path / "run*")
    assert_one_line_error(run_cli("query", "--data", str(tmp_path / "run?"), "select 1"), "no diffimax dataset")


def test_escape_sequences_in_headers_never_reach_the_terminal(hostile):
    sql = "select event, white, black from games where game_id = 'escapes1'"
    for fmt in ("table", "csv", "json"):
        out = run_cli("query", "--data", str(hostile), sql, "--format", fmt)
        assert out.returncode == 0, out.stderr[-2000:]
        for char in RAW:
            assert char not in out.stdout, (fmt, char, out.stdout)
        if fmt == "json":  # json.dumps writes \u001b: read back, the values are the headers
            assert json.loads(out.stdout) == [{"event": CLEAR, "white": TITLE, "black": C1_BIDI}]
    table = run_cli("query", "--data", str(hostile), sql, check=True).stdout
    for shown in ("\\x1b[2JCleared", "\\x1b]0;pwned\\x07Mallory", "\\u202eevil\\x9b31m"):
        assert shown in table, table
    rows = list(csv.reader(io.StringIO(run_cli("query", "--data", str(hostile), sql, "--format", "csv").stdout)))
    assert rows == [
        ["event", "white", "black"],
        ["\\x1b[2JCleared", "\\x1b]0;pwned\\x07Mallory", "\\u202eevil\\x9b31m"],
    ]
    # A failing cast quotes the value in DuckDB's message: shown the same way on stderr.
    failed = run_cli("query", "--data", str(hostile), "select white::int from games where game_id = 'escapes1'")
    assert_one_line_error(failed, "query failed")
    assert not [char for char in RAW if char in failed.stderr]


def test_a_megabyte_header_is_cut_in_table_format(hostile):
    (length,) = run_query(hostile, "select length(event) from games where game_id = 'huge0001'").rows[0]
    assert length == HUGE
    out = run_cli("query", "--data", str(hostile), "select * from games order by game_id")
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(out.stdout) < 30_000, len(out.stdout)
    assert "E" * CELL_MAX + f"…(+{HUGE - CELL_MAX} chars)" in out.stdout
    assert out.stdout.rstrip().endswith("(2 rows)")
    # CSV and JSON are for programs: they keep the whole value.
    whole = run_cli(
        "query",
        "--data",
        str(hostile),
        "select event from games where game_id = 'huge0001'",
        "--format",
        "csv",
        check=True,
    )
    assert whole.stdout.splitlines() == ["event", "E" * HUGE]


def test_trap_setting_choice_says_what_it_needs(dataset, hostile):
    out = run_cli("query", "--data", str(dataset), "--saved", "trap-setting-choice")
    assert_one_line_error(out, "saved query 'trap-setting-choice' needs a dataset mined with --setter-choices")
    assert out.stdout == ""
    # Mined with --setter-choices, it counts what the responses' Parquet files hold, read here with
    # pyarrow alone: every analysed position (2 games x plies 4-8) has its choices; those with a
    # trap-setting move among them are the query's positions, and the mover chose one where the
    # move played is among its trap-setting moves.
    files = sorted(hostile.glob("shards/*/responses.parquet"))
    assert files
    responses = pa.concat_tables([pq.read_table(path) for path in files]).to_pylist()
    assert len(responses) == 2 * 5 and all(r["choice_moves"] is not None for r in responses)
    within = [r for r in responses if r["choice_moves"] and r["choice_trap_moves"]]
    chose = sum(r["move_played"] in r["choice_trap_moves"] for r in within)
    chance = sum(len(r["choice_trap_moves"]) / len(r["choice_moves"]) for r in within)
    assert within and chance > 0  # the query has something to count
    out = run_cli("query", "--data", str(hostile), "--saved", "trap-setting-choice", "--format", "json", check=True)
    (row,) = json.loads(out.stdout)
    assert (row["positions"], row["chose_trap_move"]) == (len(within), chose)
    assert row["expected_by_chance"] == pytest.approx(chance)
    assert row["choice_rate"] == pytest.approx(chose / len(within))
    assert row["chance_rate"] == pytest.approx(chance / len(within))
    assert row["lift"] == pytest.approx(chose / chance)
    assert 0 <= row["wilson_low"] <= row["choice_rate"] <= row["wilson_high"] <= 1


def test_render_shows_controls_and_keeps_csv_cells_whole():
    from pipeline.dataset.queries import QueryResult

    result = QueryResult(["name"], [(CLEAR,), ("Carriage\rReturn\tTab",), ("-1",)])
    rows = list(csv.reader(io.StringIO(render(result, "csv"), newline="")))
    assert rows == [["name"], ["\\x1b[2JCleared"], ["Carriage\rReturn\tTab"], ["'-1"]]
    table = render(result, "table")
    assert "\\x1b[2JCleared" in table and "Carriage\\x0dReturn\\x09Tab" in table and "\x1b" not in table
