"""`diffimax repertoire` end to end on the real Stockfish, the bundled human-move model, a real local
Ray cluster and a real mined dataset (lichess_100.pgn, the evidence): the rows do not depend on the
workers, the PGN parses with every main line legal and every comment's figures equal to the
Parquet rows, the DuckDB view and saved queries read the nodes, the evidence equals a direct count
over the dataset, and `play --style trap` chooses what the repertoire recommends."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import duckdb
import pyarrow.parquet as pq
import pytest

from pipeline.dataset.sql import query
from pipeline.engines.backends import open_backend
from pipeline.engines.options import EngineOptions
from pipeline.harness.known_traps import load_known_traps
from pipeline.human.models import load_move_model
from pipeline.ingest.headers import GameFilter
from pipeline.judging import HumanEvidence
from pipeline.outputs.repertoire.pgn import main_lines
from pipeline.outputs.repertoire.write import HTML_FILE, PGN_FILE, write_repertoire
from pipeline.play.player import Player
from pipeline.play.styles import PlaySettings
from pipeline.repertoire.driver import WorkerSpec, build_repertoire
from pipeline.repertoire.plan import plan_repertoire, repertoire_plan_text
from pipeline.repertoire.records import NODES_FILE, Labels, connect_nodes, saved_repertoire_queries
from pipeline.repertoire.settings import RepertoireSettings, Start, parse_start
from search.settings import DiffiMaxSettings
from tests.conftest import GAMES, STOCKFISH, needs_stockfish, run_cli
from tests.mining_helpers import mine
from tests.reading import PERCENT, shows_percent

pytestmark = needs_stockfish

# A small repertoire: White against Lichess players rated 1600 (lichess_100.pgn's players are
# 1400-1800, so its games are evidence), Stockfish at 20,000 nodes a line.
SETTINGS = RepertoireSettings(color=chess.WHITE, rating=1600, pool="lichess", plies=3, floor=0.15, width=1)
OPTIONS = EngineOptions(nodes=20_000)
LABELS = Labels("stockfish", HumanEvidence("default"))
# The built tree starts after 1.e4: the PGN plays it, the rows' paths start after it.
START_MOVES = ("e2e4",)


def spec(settings: RepertoireSettings = SETTINGS, start: Start | None = None) -> WorkerSpec:
    return WorkerSpec(
        str(STOCKFISH), OPTIONS, settings, start or parse_start(None, None), HumanEvidence(model="bundled")
    )


@pytest.fixture(scope="module")
def dataset(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lichess_100.pgn mined for its first plies (positions and results are what evidence reads)."""
    out = tmp_path_factory.mktemp("mined") / "lichess_100"
    mine(
        [str(GAMES / "lichess_100.pgn")],
        out,
        engine="material",
        game_filter=GameFilter(ply_from=0, ply_to=4),
        workers=1,
    )
    return out


@pytest.fixture(scope="module")
def built(ray_session: None, dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The repertoire after 1.e4 grown on two Ray workers, and again in this process, both written out."""
    found: dict[str, Any] = {}
    for name, workers in (("ray", 2), ("local", 0)):
        growth, stats = build_repertoire(spec(start=Start(None, START_MOVES)), workers)
        out = tmp_path_factory.mktemp(name)
        write_repertoire(growth, stats, LABELS, out, data=str(dataset))
        found[name] = {"out": out, "stats": stats, "rows": pq.read_table(out / NODES_FILE).to_pylist()}
    return found


def test_the_rows_do_not_depend_on_the_workers(built: dict[str, Any]) -> None:
    ray_rows, local_rows = built["ray"]["rows"], built["local"]["rows"]
    assert len(ray_rows) > 5 and ray_rows == local_rows
    assert built["ray"]["stats"].workers == 2 and built["ray"]["stats"].expanded == built["local"]["stats"].expanded


def test_every_node_keeps_the_invariants(built: dict[str, Any]) -> None:
    rows = built["ray"]["rows"]
    ids = [row["node_id"] for row in rows]
    assert ids == list(range(len(rows)))
    for row in rows:
        children = [r for r in rows if r["parent_id"] == row["node_id"]]
        assert abs(row["expected"] - (row["score"] + row["gain"])) < 1e-12
        if row["to_move"] == "player" and row["status"] == "expanded" and children:
            # One recommended move, whose contribution is the node's gain and the best of all.
            chosen = [c for c in children if c["recommended"]]
            assert len(chosen) == 1 and chosen[0]["move_gain"] == pytest.approx(row["gain"])
            assert all(c["move_gain"] <= chosen[0]["move_gain"] + 1e-12 for c in children)
        if row["to_move"] == "opponent" and row["status"] == "expanded":
            # Every valued reply is a child and counts; those above the floor grow, the rest are leaves.
            valued = [c for c in children if c["drop"] is not None]
            assert valued == children
            assert row["gain"] == pytest.approx(sum(c["probability"] * c["move_gain"] for c in valued))
            assert all((c["reach"] >= SETTINGS.floor) == c["explored"] for c in valued)
            assert all(c["status"] in ("floor", "depth", "game over") for c in valued if not c["explored"])
            assert row["unexplored"] == pytest.approx(1 - sum(c["probability"] for c in valued))
            assert row["source"] == "model" and row["replies"]


def test_the_pgn_parses_its_main_lines_are_legal_and_its_figures_are_the_rows(built: dict[str, Any]) -> None:
    out, rows = built["ray"]["out"], built["ray"]["rows"]
    by_path = {tuple(row["path_uci"]): row for row in rows}
    text = (out / PGN_FILE).read_text(encoding="utf-8")
    stream = io.StringIO(text)
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert game.errors == [], game.errors
        games.append(game)
    lines, total = main_lines(rows)
    assert len(games) == len(lines) == min(total, 64) > 0
    checked = 0
    for game in games:
        checked += check_main_line(game, by_path, rows)
        for node in game.mainline():  # the trap variations: the reply is a trap row of the tree
            for variation in node.variations[1:]:
                path = tree_path(variation.board())
                assert by_path[path]["trap"] and variation.comment.startswith("Trap, played by "), variation.comment
    assert checked > 0


def check_main_line(
    game: chess.pgn.Game, by_path: dict[tuple[str, ...], dict[str, Any]], rows: list[dict[str, Any]]
) -> int:
    """Assert a chapter's main line is legal and each commented move's figures are its row's; a
    line that ends in a trap reply goes on with the trap's punishment (moves with no row and no
    comment). The number of comments with figures."""
    board = game.board()
    checked, trap, tail = 0, None, []
    for node in game.mainline():
        assert node.move in board.legal_moves
        board.push(node.move)
        if len(board.move_stack) <= len(START_MOVES):
            assert tuple(m.uci() for m in board.move_stack) == START_MOVES[: len(board.move_stack)]
            continue
        row = by_path.get(tree_path(board))
        if trap is None and row is not None:
            checked += check_comment(node.comment, row, rows)
            if row["trap"] and row["status"] != "expanded":
                trap = row
            continue
        assert trap is not None, f"{board.move_stack} is neither a row of the tree nor a trap's punishment"
        assert node.comment == ""
        tail.append(node.move.uci())
    if trap is not None:
        assert tail == list(trap["punishment_uci"][: len(tail)])
    return checked


def tree_path(board: chess.Board) -> tuple[str, ...]:
    """A PGN board's moves as a row's path: those after the start."""
    played = tuple(m.uci() for m in board.move_stack)
    assert played[: len(START_MOVES)] == START_MOVES
    return played[len(START_MOVES) :]


LOSS = r"loses? (\d+\.\d) pawns|allows? #\d+|loses? (\d+(?:\.\d)?) % of the expected score"


def shows_loss(words: str, trap: dict[str, Any], before: dict[str, Any]) -> bool:
    """A trap's loss as the comment says it: pawns from the two rows' values, or the mate."""
    pawns = re.fullmatch(r"loses? (\d+\.\d) pawns", words)
    if pawns:
        return abs(float(pawns[1]) - (trap["value_cp"] - before["value_cp"]) / 100) <= 0.051
    return words.startswith(("allows #", "allow #")) and trap["value_cp"] > 90_000


def check_comment(comment: str, row: dict[str, Any], rows: list[dict[str, Any]]) -> int:
    """Assert the comment's figures are the row's (to the digits shown), and the traps it names
    are its node's trap replies with their figures, in words a student reads (percent, pawns or
    #N, SAN); 1 if it had any figures."""
    assert not re.search(r"\b(p|gain|drop|works) [-+\d]", comment), comment  # no bare figures
    expected = re.search(rf"^Expected score ({PERCENT}) against 1600 players \(({PERCENT}) over", comment)
    played = re.search(rf"^Played by ({PERCENT}) of 1600 players", comment)
    if expected is None and played is None:
        return 0
    if expected:
        assert shows_percent(expected[1], row["expected"]) and shows_percent(expected[2], row["move_gain"]), comment
    if played:
        assert shows_percent(played[1], row["probability"]), comment
    named = re.findall(rf"(\S+) \(({PERCENT}) of 1600 players, ({LOSS})( to \S+)?\)", comment)
    traps = {r["move_san"]: r for r in rows if r["parent_id"] == row["node_id"] and r["trap"]}
    assert sorted(re.sub(r"^\d+\.+", "", found[0]) for found in named) == sorted(traps), comment
    for numbered, p, loss, *_rest in named:
        trap = traps[re.sub(r"^\d+\.+", "", numbered)]
        assert shows_percent(p, trap["probability"]) and shows_loss(loss, trap, row), (comment, trap)
        if trap["punishment_san"]:
            assert f"{loss} to {trap['punishment_san'].split()[0]})" in comment, comment
    works = re.search(rf"One comes ({PERCENT}) of the time", comment)
    assert (works is None) == (not traps)
    if works:
        assert shows_percent(works[1], row["trap_probability"]), comment
    seen = re.search(r"Seen in (\d+) of (\d+) games", comment)
    if seen:
        assert (int(seen[1]), int(seen[2])) == (row["observed_count"], row["observed_games"])
    return 1


def test_the_view_and_the_saved_queries_read_the_nodes(built: dict[str, Any]) -> None:
    connection = connect_nodes([built["ray"]["out"]])
    try:
        for name in saved_repertoire_queries():
            connection.execute(query("repertoire", name)).fetchall()
        black = connection.execute(query("repertoire", "best-practical-lines-black-below-1200")).fetchall()
        assert black == []  # a white repertoire against 1600
        best = connection.execute(query("repertoire", "best-practical-lines")).fetchall()
        recommended = [r for r in built["ray"]["rows"] if r["mover"] == "player" and r["recommended"]]
        assert len(best) == min(50, len(recommended))
        (count,) = connection.execute("select count(*) from repertoire_nodes").fetchone() or (0,)
        assert count == len(built["ray"]["rows"])
        # Issue 44, item 6: the view reads scores in percent (the PGN's and the explorer's unit) and a
        # reply's loss as `win_pct_lost`, the name every output gives it; never the files' 0..1.
        view = connection.execute("select * from repertoire_nodes")
        columns = [d[0] for d in view.description]
        assert not {"score", "gain", "expected", "move_gain", "drop", "trap_gain", "observed_score"} & set(columns)
        shown = [dict(zip(columns, row, strict=True)) for row in view.fetchall()]
        by_id = {r["node_id"]: r for r in built["ray"]["rows"]}
        for row in shown:
            node = by_id[row["node_id"]]
            for column, field in (
                ("expected_pct", "expected"),
                ("move_gain_pct", "move_gain"),
                ("win_pct_lost", "drop"),
            ):
                if node[field] is not None:
                    assert row[column] == pytest.approx(100 * node[field], abs=0.05)
        assert any(row["win_pct_lost"] for row in shown) and any(row["expected_pct"] for row in shown)
    finally:
        connection.close()


def test_the_evidence_is_a_direct_count_of_the_datasets_games(built: dict[str, Any], dataset: Path) -> None:
    """The observed share of each reply at every expanded opponent node, counted again in SQL over
    the dataset's own Parquet: games whose black player is rated 1500-1700 (the band). Which
    moves the tree recommends is the search's business; the start is 1.e4, which lichess_100's
    band plays 26 times, so at least the root's replies are seen."""
    rows = built["ray"]["rows"]
    files = [str(p) for p in sorted(dataset.glob("shards/*/positions.parquet"))]
    games = [str(p) for p in sorted(dataset.glob("shards/*/games.parquet"))]
    seen = 0
    for node in (r for r in rows if r["to_move"] == "opponent" and r["status"] == "expanded"):
        replies = [r for r in rows if r["parent_id"] == node["node_id"]]
        counted = dict(
            duckdb.sql(
                f"select p.move_uci, count(*) from read_parquet({files}) p join read_parquet({games}) g "
                f"using (game_id) where p.position_key = {node['position_key']} "
                "and g.black_elo between 1500 and 1700 group by 1"
            ).fetchall()
        )
        assert replies and all(r["observed_games"] == sum(counted.values()) for r in replies), node["path_uci"]
        assert all(r["observed_count"] == counted.get(r["move_uci"], 0) for r in replies), node["path_uci"]
        seen += sum(counted.values())
    assert seen >= 26


def test_play_trap_style_chooses_what_the_repertoire_recommends() -> None:
    """One expectimax: at the Fishing Pole's setting position, the repertoire one move and one reply
    deep, with every reply the trap style values (a floor no line reaches: the practical judge's
    replies alone), recommends the move the trap style plays."""
    trap = next(t for t in load_known_traps() if t.name == "Fishing Pole")
    board = trap.board.copy()
    board.pop()
    start = Start(None, tuple(m.uci() for m in board.move_stack))
    settings = RepertoireSettings(color=board.turn, rating=1500, plies=2, floor=0.999, width=6)
    growth, _ = build_repertoire(spec(settings, start), 0)
    recommended = next(growth.nodes[c] for c in growth.nodes[0].children.values() if growth.nodes[c].recommended)
    backend = open_backend(str(STOCKFISH), OPTIONS)
    model = load_move_model("bundled")
    try:
        choice = Player(backend, PlaySettings(style="trap", diffimax=DiffiMaxSettings()), model=model).choose(board)
    finally:
        backend.close()
        assert model is not None
        model.close()
    assert choice.move == recommended.move == trap.setter_move.uci()


def test_the_command_writes_every_output_and_says_bad_flags_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    done = run_cli(
        "repertoire",
        "--color",
        "black",
        "--rating",
        "1000",
        "--moves",
        "e4",
        "--line-plies",
        "1",
        "--floor",
        "0.3",
        "--workers",
        "0",
        "--engine",
        "material",
        "--out",
        str(out),
        check=True,
    )
    assert "repertoire:" in done.stdout and (out / HTML_FILE).is_file() and (out / NODES_FILE).is_file()
    for args, message in (
        (["--color", "green", "--rating", "1000", "--out", str(out)], "invalid --color 'green'"),
        (
            ["--color", "white", "--rating", "1000", "--moves", "e4 e4", "--out", str(out)],
            "invalid --moves: move 2, 'e4', is illegal after 1.e4",
        ),
        (["--color", "white", "--rating", "1000", "--floor", "1.5", "--out", str(out)], "invalid --floor 1.5"),
        (["--color", "white", "--rating", "1000"], "--out DIR is required"),
    ):
        result = run_cli("repertoire", *args, "--engine", "material", "--workers", "0")
        assert result.returncode == 1, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    queried = run_cli(
        "repertoire-query", "--in", str(out), "--saved", "best-practical-lines", "--format", "json", check=True
    )
    assert '"move_san"' in queried.stdout


def test_the_plan_sketches_the_tree_and_times_real_nodes(built: dict[str, Any]) -> None:
    """`--plan`: the sketch on the shallow pass has nodes of both kinds, the sample is timed for
    real, and more workers never plan a longer wall; the sketch's node count is of the order of the
    real run's (it is a sketch: docs/repertoire.md compares them on the default repertoire)."""
    plan = plan_repertoire(spec(start=Start(None, START_MOVES)), (1, 2), sample=4)
    assert plan.kinds["player"].nodes > 0 and plan.kinds["opponent"].nodes > 0
    assert plan.kinds["player"].sampled + plan.kinds["opponent"].sampled >= 4
    assert plan.core_hours.value > 0 and plan.walls[2].value <= plan.walls[1].value
    planned = sum(kind.nodes for kind in plan.kinds.values())
    assert planned / 3 <= built["local"]["stats"].expanded <= planned * 3
    assert "1 -> 2 workers" in repertoire_plan_text(plan)


def test_the_moves_humans_of_the_players_rating_play_most_join_the_candidates() -> None:
    """Issue 45: the shallow pass's six best left 1...e5 out of black's tree against 1.e4; the
    moves the player's peers choose most are valued too (and are candidates within the margin)."""
    from pipeline.repertoire.expand import HUMAN_CHOICE_P, HUMAN_CHOICES, human_choices

    board = chess.Board()
    board.push_san("e4")
    model = load_move_model("bundled")
    assert model is not None
    try:
        settings = RepertoireSettings(color=chess.BLACK, rating=1200)
        chosen = human_choices(board, settings, model)
        shares = model.move_probabilities(board, settings.player_context())
    finally:
        model.close()
    assert "e7e5" in chosen and 1 <= len(chosen) <= HUMAN_CHOICES
    assert all(shares[move] >= HUMAN_CHOICE_P for move in chosen)
    assert chosen == sorted(chosen, key=lambda move: -shares[move])
    assert human_choices(board, settings, None) == []


def test_a_repertoire_from_a_fen_and_moves_writes_its_outputs_with_the_moves_from_that_fen(tmp_path: Path) -> None:
    """`--from FEN --moves ...`: the explorer's and the PGN's lines start from the FEN (the
    explorer once replayed the moves from the standard start: an internal error)."""
    out = tmp_path / "rep"
    after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    done = run_cli(
        *("repertoire", "--color", "white", "--rating", "1200", "--from", after_e4, "--moves", "e5"),
        *("--line-plies", "1", "--nodes", "2000", "--workers", "0", "--human-model", "bundled", "--out", str(out)),
    )
    assert done.returncode == 0, done.stderr
    page = html.unescape((out / "explorer.html").read_text(encoding="utf-8"))  # the tree is an attribute's JSON
    assert f'[FEN \\"{after_e4}\\"]' in page and '\\n\\n1...e5 "' in page
    game = chess.pgn.read_game(io.StringIO((out / "repertoire.pgn").read_text(encoding="utf-8")))
    assert game is not None and game.headers.get("FEN") == after_e4
