"""The model at run time: its file (probabilities over every legal move, bad files refused in one
line), the shallow engine, the bundled default model, damaged model and corpus files through the
real command line, and the rating pools."""

from __future__ import annotations

import json
import math
import subprocess
import time
from pathlib import Path

import chess
import numpy as np
import pytest

from pipeline.human.context import MoverContext
from pipeline.human.data import read_inputs
from pipeline.human.engine import ShallowEngine
from pipeline.human.features import feature_names, move_features
from pipeline.human.model import DEFAULT_MODEL, MODEL_VERSION, HumanMoveModel, ModelError
from pipeline.human.train import TrainConfig
from pipeline.human.trainer import train
from tests.conftest import GAMES, needs_stockfish, require_data, run_cli
from tests.human.helpers import board_after, slice_pgn

# -- the model file -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    """A base+book model of 40 games (early-stopped on a carved share of them)."""
    require_data()
    directory = tmp_path_factory.mktemp("small")
    data = slice_pgn(directory, 40)
    out = directory / "model.json"
    config = TrainConfig(groups=("base", "book"), sample_rate=1.0, tune_sample_rate=1.0, max_rounds=30,
                         book_min_games=2, min_data_in_leaf=50, threads=1)  # fmt: skip
    train([str(data)], str(out), config)
    return out


def test_probabilities_cover_every_legal_move_and_sum_to_one(small_model):
    model = HumanMoveModel.load(small_model)
    boards = [
        chess.Board(), board_after("e4", "e5", "Nf3", "Nc6", "d4", "exd4", "Nxd4", "Nxd4"),
        chess.Board("7k/8/8/8/8/8/5PP1/r5K1 w - - 0 1"),  # one legal move
    ]  # fmt: skip
    for board in boards:
        for context in (MoverContext(), MoverContext(2400, 3.0, 60, 0)):
            p = model.move_probabilities(board, context)
            assert set(p) == {move.uci() for move in board.legal_moves}
            assert math.isclose(sum(p.values()), 1.0, abs_tol=1e-9)
            assert all(value > 0 for value in p.values())
    assert model.move_probabilities(board_after("f3", "e5", "g4", "Qh4")) == {}  # mate: no move
    described = model.describe()
    assert described["version"] == MODEL_VERSION and described["groups"] == ["base", "book"]
    assert described["training"]["data"][0]["name"] == "slice.pgn"
    assert "carved" in described["training"]["split"]
    model.close()


def one_line(error: pytest.ExceptionInfo[ModelError]) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_bad_model_files_are_refused_in_one_line(small_model, tmp_path):
    with pytest.raises(ModelError) as missing:
        HumanMoveModel.load(tmp_path / "nothing.json")
    assert one_line(missing).startswith("no model file at")
    text = small_model.read_text()
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text(text[: len(text) // 2])
    with pytest.raises(ModelError) as cut:
        HumanMoveModel.load(corrupt)
    assert "not valid JSON" in one_line(cut)
    document = json.loads(text)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**document, "version": MODEL_VERSION + 1}))
    with pytest.raises(ModelError) as version:
        HumanMoveModel.load(other)
    assert f"format version {MODEL_VERSION + 1}; this code reads version {MODEL_VERSION}" in one_line(version)
    features = tmp_path / "features.json"
    features.write_text(json.dumps({**document, "features": document["features"][:-1]}))
    with pytest.raises(ModelError) as mismatch:
        HumanMoveModel.load(features)
    assert "features" in one_line(mismatch)
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ModelError) as not_ours:
        HumanMoveModel.load(foreign)
    assert "is not a diffimax human-move model file" in one_line(not_ours)
    trees = tmp_path / "trees.json"
    trees.write_text(json.dumps({**document, "booster": "tree\nversion=v4\nnum_class=oops"}))
    with pytest.raises(ModelError) as booster:
        HumanMoveModel.load(trees)
    assert "LightGBM" in one_line(booster)


# -- the engine and the bundled model -----------------------------------------------------


@pytest.mark.stockfish
@needs_stockfish
def test_shallow_engine_scores_every_move_and_ends_its_process():
    board = board_after("e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6")
    engine = ShallowEngine()
    scores = engine.scores(board)
    assert set(scores) == {move.uci() for move in board.legal_moves}
    assert max(scores, key=lambda move: scores[move]) == "h5f7" and scores["h5f7"] > 1000  # mate in one
    assert engine.scores(board) == scores  # the same answer every time
    assert engine._engine is not None
    pid = engine._engine.pid
    assert pid is not None and Path(f"/proc/{pid}").exists()
    engine.close()
    assert wait_until_gone(pid)


def wait_until_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def default_model() -> HumanMoveModel:
    if not DEFAULT_MODEL.exists():
        pytest.fail(f"the bundled model is missing: {DEFAULT_MODEL}")
    return HumanMoveModel.load(DEFAULT_MODEL)


def test_default_model_is_small_and_records_its_training():
    size = DEFAULT_MODEL.stat().st_size
    assert size < 5_000_000
    described = json.loads(DEFAULT_MODEL.read_text())["training"]
    assert described["command"].startswith("diffimax human train")
    names = [item["name"] for item in described["data"]]
    assert names == ["lichess_player_a_37221.pgn.zst", "lichess_eval_clk_10024.pgn.zst", "chesscom_mixed_1187.pgn"]
    assert all(len(item["sha256"]) == 64 for item in described["data"])


@pytest.mark.stockfish
@needs_stockfish
def test_default_model_predicts_the_obvious_moves():
    model = default_model()
    try:
        context = MoverContext(1600, 40.0, 60, 0)
        # 1.d4 e5 2.dxe5 d6 3.exd6 Qxd6 4.Qxd6: Black takes the queen back (cxd6 or Bxd6).
        recapture = model.move_probabilities(board_after("d4", "e5", "dxe5", "d6", "exd6", "Qxd6", "Qxd6"), context)
        assert max(recapture, key=lambda m: recapture[m]) in {"c7d6", "f8d6"}
        assert recapture["c7d6"] + recapture["f8d6"] > 0.8
        # 1.e4 e5 2.Nf3 Qg5??: the knight takes the free queen.
        free = model.move_probabilities(board_after("e4", "e5", "Nf3", "Qg5"), context)
        ranked = sorted(free.values(), reverse=True)
        assert max(free, key=lambda m: free[m]) == "f3g5" and free["f3g5"] > 2 * ranked[1]
        # Only one legal move: certainty.
        forced = model.move_probabilities(chess.Board("7k/8/8/8/8/8/5PP1/r5K1 w - - 0 1"), context)
        assert forced == {"g1h2": 1.0}
        # The opening: 1.e4 or 1.d4 are among a 1600's three most likely first moves.
        first = model.move_probabilities(chess.Board(), context)
        top3 = sorted(first, key=lambda m: -first[m])[:3]
        assert "e2e4" in top3 or "d2d4" in top3
    finally:
        model.close()


# -- damaged model and corpus files, through the real command line ---------------------------

# A position where the responder (Black) is to move: explain judges its replies.
EXPLAIN_FEN = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"


def damaged_model(tmp_path: Path, name: str, damage) -> Path:
    """The bundled model with one field damaged by `damage(document)`."""
    document = json.loads(DEFAULT_MODEL.read_text())
    damage(document)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document))
    return path


def assert_one_line_naming(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.slow
def test_the_two_reported_model_files_fail_in_one_line_in_explain_mine_and_eval(data_dir, tmp_path):
    # Issue 18, item 6: `"features": 42` was a TypeError (exit 70) in explain and mine, and
    # `engine.depth: "deep"` passed mine's check, started Ray and died in a worker.
    games = str(GAMES / "lichess_100.pgn")
    features = damaged_model(tmp_path, "features", lambda d: d.__setitem__("features", 42))
    depth = damaged_model(tmp_path, "depth", lambda d: d["engine"].__setitem__("depth", "deep"))
    for path, field in ((features, "'features'"), (depth, "'engine.depth'")):
        explained = run_cli("explain", EXPLAIN_FEN, "--engine", "native", "--depth", "1", "--human-model", str(path))
        assert_one_line_naming(explained, field, path.name)
        out = tmp_path / f"mined-{path.stem}"
        mined = run_cli("mine", games, "--out", str(out), "--engine", "native", "--human-model", str(path))
        assert_one_line_naming(mined, field, path.name)
        assert not out.exists()  # refused before anything started
        evaluated = run_cli("human", "eval", "--human-model", str(path), games, "--max-positions", "5")
        assert_one_line_naming(evaluated, field, path.name)


def test_damaged_model_fields_are_named_in_one_line(tmp_path):
    damages = {
        "groups": (lambda d: d.__setitem__("groups", ["base", "eng"]), "field 'groups[1]' is 'eng'"),
        "engine": (lambda d: d["engine"].__setitem__("threads", 2), "field 'engine'"),
        "hash": (lambda d: d["engine"].__setitem__("hash_mb", -1), "field 'engine.hash_mb' is -1"),
        "booster": (lambda d: d.__setitem__("booster", 7), "field 'booster' is 7"),
        "kind": (lambda d: d.pop("kind"), "field 'kind' is missing"),
        "no engine": (lambda d: d.pop("engine"), "field 'engine' is missing"),
        "min games": (lambda d: d["book"].__setitem__("min_games", "3"), "field 'book.min_games' is '3'"),
        "book entry": (
            lambda d: d["book"]["positions"].__setitem__("00000000000000ff", "e2e4:x"),
            "field 'book.positions' has an unreadable entry '00000000000000ff'",
        ),
        "book move": (
            lambda d: d["book"]["positions"].__setitem__("00000000000000ff", "zz:3"),
            "field 'book.positions' has an unreadable entry",
        ),
        "not an object": (lambda d: d.__setitem__("metrics", [1]), "field 'metrics' is [1]"),
    }
    for name, (damage, expected) in damages.items():
        path = damaged_model(tmp_path, name.replace(" ", "_"), damage)
        with pytest.raises(ModelError) as refused:
            HumanMoveModel.load(path)
        assert expected in one_line(refused), (name, str(refused.value))


def write_table(path: Path, columns: dict[str, list[object]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


def test_damaged_corpus_files_are_named_in_one_line(tmp_path):
    from pipeline.human.corpus import Corpus, CorpusError

    good = {"position_key": [1, 2], "mover_rating": [1500, None], "move_uci": ["e2e4", "e7e8q"]}
    assert len(Corpus.load(write_table(tmp_path / "good.parquet", good))) == 2
    damages = {
        "key as text": ({**good, "position_key": ["a", "b"]}, "column 'position_key' holds string"),
        "rating as text": ({**good, "mover_rating": ["x", "1500"]}, "column 'mover_rating' holds string"),
        "no move column": ({"position_key": [1], "mover_rating": [1500]}, "column 'move_uci' is missing"),
        "bad move": ({**good, "move_uci": ["e2e4", "castle"]}, "column 'move_uci' holds 'castle' at row 1"),
        "empty move": ({**good, "move_uci": ["e2e4", None]}, "column 'move_uci' is empty in 1 row(s)"),
        "bad rating": ({**good, "mover_rating": [1500, 90000]}, "column 'mover_rating' holds 90000 at row 1"),
    }
    for name, (columns, expected) in damages.items():
        path = write_table(tmp_path / f"{name.replace(' ', '_')}.parquet", columns)
        with pytest.raises(CorpusError) as refused:
            Corpus.load(path)
        message = str(refused.value)
        assert "\n" not in message and expected in message and path.name in message, (name, message)


@pytest.mark.slow
def test_a_damaged_corpus_fails_in_one_line_in_explain_and_mine(data_dir, tmp_path):
    corpus = write_table(
        tmp_path / "corpus.parquet", {"position_key": ["a"], "mover_rating": [1], "move_uci": ["e2e4"]}
    )
    explained = run_cli("explain", EXPLAIN_FEN, "--engine", "native", "--depth", "1", "--human-corpus", str(corpus))
    assert_one_line_naming(explained, "'position_key'", "corpus.parquet")
    out = tmp_path / "mined"
    mined = run_cli("mine", str(GAMES / "lichess_100.pgn"), "--out", str(out), "--engine", "native",
                    "--human-corpus", str(corpus))  # fmt: skip
    assert_one_line_naming(mined, "'position_key'", "corpus.parquet")
    assert not out.exists()


# -- rating pools and the chess.com split --------------------------------------------------


def test_the_pool_comes_from_site_or_link_and_an_override_wins():
    from pipeline.human.context import PoolError, parse_pool, pool_of

    assert pool_of({"Site": "https://lichess.org/abcd1234"}) == "lichess"
    assert pool_of({"Site": "Chess.com"}) == "chesscom"
    assert pool_of({"Site": "?", "Link": "https://www.chess.com/game/live/1"}) == "chesscom"
    assert pool_of({"Site": "https://notlichess.org.example/x"}) is None  # a suffix, not a substring
    assert pool_of({"Site": "Berlin GER"}) is None
    assert pool_of({"Site": "Chess.com"}, "lichess") == "lichess"
    assert parse_pool("chess.com") == "chesscom" and parse_pool("auto") is None and parse_pool(None) is None
    with pytest.raises(PoolError, match="unknown rating pool 'fide'"):
        parse_pool("fide")


def test_the_pool_reaches_the_features_and_the_records(data_dir, tmp_path):
    board = board_after("e4", "e5")
    names = feature_names(("base", "pool"))
    assert names[-1] == "pool_chesscom"
    chesscom = move_features(board, MoverContext(900, pool="chesscom"), groups=("base", "pool")).values[:, -1]
    lichess = move_features(board, MoverContext(900, pool="lichess"), groups=("base", "pool")).values[:, -1]
    unknown = move_features(board, MoverContext(900), groups=("base", "pool")).values[:, -1]
    assert set(chesscom.tolist()) == {1.0} and set(lichess.tolist()) == {0.0} and np.isnan(unknown).all()
    text = (GAMES / "chesscom_mixed_1187.pgn").read_text(encoding="utf-8")
    sample = tmp_path / "mine.pgn"
    sample.write_text("[Event " + "[Event ".join(text.split("[Event ")[1:4]), encoding="utf-8")
    assert {record.pool for record in read_inputs([str(sample)])} == {"chesscom"}
    assert {record.pool for record in read_inputs([str(sample)], pool="lichess")} == {"lichess"}
    assert {record.pool for record in read_inputs([str(slice_pgn(tmp_path, 3))])} == {"lichess"}


def test_the_chesscom_split_does_not_depend_on_the_path_that_names_the_file():
    from pipeline.common.splits import game_key, split_of

    # The reader's id of a game without a GameId hashes the path as given: two paths, two ids.
    shares = {"train": 0, "tune": 0, "held_out": 0}
    for offset in range(0, 400_000, 1000):
        near = split_of("../shared/data/games/chesscom_mixed_1187.pgn", "pgn-aaaa", offset)
        far = split_of("/elsewhere/chesscom_mixed_1187.pgn", "pgn-bbbb", offset)
        assert near == far
        shares[near] += 1
    assert 0.25 < shares["held_out"] / 400 < 0.35 and 0.10 < shares["tune"] / 400 < 0.20
    assert game_key("x/lichess_100.pgn", "AbCdEfGh", 5) == "AbCdEfGh"  # a site id stays the key
