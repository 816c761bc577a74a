"""`diffimax query` and the saved queries over a dataset mined from real games; the human judge."""

from __future__ import annotations

import csv
import io
import json

import pytest
import ray

from pipeline.dataset.queries import QueryError, render, run_query, run_saved, saved_queries
from pipeline.ingest.games import GameFilter
from tests.conftest import GAMES, run_cli
from tests.mining_helpers import mine

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """100 games of player_a (ratings, time controls and clocks on every game), plies 0-16."""
    out = tmp_path_factory.mktemp("query") / "run"
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        mine([str(GAMES / "lichess_player_a_37221.pgn.zst")], out, workers=2, max_games=100,
             game_filter=GameFilter(ply_from=0, ply_to=16))  # fmt: skip
    finally:
        ray.shutdown()
    return out


def test_every_saved_query_runs_and_returns_rows(dataset):
    queries = saved_queries()
    assert len(queries) >= 8
    for name in queries:
        result = run_saved(dataset, name)
        assert result.rows, f"saved query {name} returned no rows"
        if "fall_rate" in result.columns:
            index = {c: i for i, c in enumerate(result.columns)}
            for row in result.rows:
                low, rate, high = row[index["wilson_low"]], row[index["fall_rate"]], row[index["wilson_high"]]
                assert 0 <= low <= rate <= high <= 1


def test_lift_compares_with_a_random_meaningful_reply(dataset):
    (row,) = run_saved(dataset, "lift").rows
    data = dict(zip(run_saved(dataset, "lift").columns, row, strict=True))
    assert data["trap_nodes"] > 0 and data["expected_by_chance"] > 0
    assert data["lift"] == pytest.approx(data["fell"] / data["expected_by_chance"])


def test_outcomes_view_partitions_the_analysed_positions(dataset):
    result = run_query(dataset, "select outcome, count(*) from outcomes group by outcome")
    outcomes = dict(result.rows)
    assert set(outcomes) <= {"best", "fell", "reasonable", "unreasonable", "excluded"}
    (total,) = run_query(dataset, "select count(*) from responses").rows[0]
    assert sum(outcomes.values()) == total


def test_cli_formats_and_errors(dataset):
    out = run_cli("query", "--data", str(dataset), "select game_id, ply from positions order by 1, 2 limit 3",
                  "--format", "json", check=True)  # fmt: skip
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


def test_csv_output_neutralises_formulas():
    from pipeline.dataset.queries import QueryResult

    text = render(QueryResult(["name"], [("=cmd|' /C calc'!A0",), ("plain",)]), "csv")
    assert text.splitlines()[1].startswith("\"'=cmd") or text.splitlines()[1].startswith("'=cmd")
    with pytest.raises(QueryError, match="unknown format"):
        render(QueryResult(["a"], []), "xml")


def test_explain_human_judge_uses_the_corpus(dataset):
    # After 1.e4 (ply 1) the corpus holds many games: the human judge gives verdicts there.
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    (games,) = run_query(dataset, f"select count(*) from positions where fen = '{fen}'").rows[0]
    if games < 5:
        pytest.skip("1.e4 is rare in this slice")
    out = run_cli("explain", fen, "--depth", "1", "--human-freq", str(dataset), "--json", check=True)
    judges = json.loads(out.stdout)["judges"]
    assert set(judges) == {"dip", "shallow", "human"}
    human = {v["move"]: v for v in judges["human"]["verdicts"]}
    assert any(v["plausible"] for v in human.values())
    played = [
        v for v in human.values() if v["evidence"].startswith("played in") and "played in 0 " not in v["evidence"]
    ]
    assert played
