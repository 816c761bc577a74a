"""The human-move model: features on hand-made positions, the model file, training, the CLI, the
bundled default model.

Positions here are chosen so that any decent model must agree (a queen recaptured, a free queen
taken), never to match fitted values.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import chess
import numpy as np
import pytest

from pipeline.human.book import Book, BookBuilder, own_counts
from pipeline.human.context import MoverContext
from pipeline.human.data import GameRecord, read_inputs
from pipeline.human.engine import EngineSettings, ShallowEngine
from pipeline.human.features import FeatureError, feature_names, move_features
from pipeline.human.model import DEFAULT_MODEL, MODEL_VERSION, HumanMoveModel, ModelError
from pipeline.human.train import TrainConfig, TrainError, played_ranks
from pipeline.human.trainer import train
from tests.conftest import GAMES, ROOT, needs_stockfish, require_data, run_cli

PYTHON = sys.executable


def board_after(*moves: str, fen: str | None = None) -> chess.Board:
    board = chess.Board(fen) if fen else chess.Board()
    for move in moves:
        board.push_san(move)
    return board


def row_of(board: chess.Board, uci: str, context: MoverContext | None = None) -> dict[str, float]:
    matrix = move_features(board, context or MoverContext())
    return dict(zip(matrix.names, matrix.values[matrix.moves.index(uci)].tolist(), strict=True))


# -- features -----------------------------------------------------------------------------


def test_one_row_per_legal_move_and_the_board_is_left_as_given():
    board = board_after("e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6")
    fen, stack = board.fen(), list(board.move_stack)
    matrix = move_features(board, MoverContext(1500, 30.0, 60, 0))
    assert sorted(matrix.moves) == sorted(move.uci() for move in board.legal_moves)
    assert matrix.values.shape == (board.legal_moves.count(), len(feature_names(("base",))))
    assert matrix.values.dtype == np.float32
    assert board.fen() == fen and board.move_stack == stack


def test_recapture_is_flagged_and_other_captures_are_not():
    # 1.e4 e5 2.Nf3 Nc6 3.d4 exd4 4.Nxd4 Nxd4: White's Qxd4 takes back on the square of the capture.
    board = board_after("e4", "e5", "Nf3", "Nc6", "d4", "exd4", "Nxd4", "Nxd4")
    recapture = row_of(board, "d1d4")
    assert recapture["recapture"] == 1.0 and recapture["takes_last_moved"] == 1.0
    assert recapture["see"] == 3.0  # the knight, and the queen on d4 is safe
    assert row_of(board, "b1c3")["recapture"] == 0.0


def test_capturing_a_hanging_piece_has_positive_see():
    board = chess.Board("4k3/8/8/3n4/8/8/8/3RK3 w - - 0 1")
    row = row_of(board, "d1d5")
    assert row["is_capture"] == 1.0 and row["captured_value"] == 3.0 and row["see"] == 3.0
    # Defended by a pawn the knight is no longer free: rook for knight loses two pawns.
    defended = chess.Board("4k3/8/4p3/3n4/8/8/8/3RK3 w - - 0 1")
    assert row_of(defended, "d1d5")["see"] == -2.0
    assert row_of(defended, "d1d5")["hanging_after"] == 5.0


def test_a_move_that_hangs_the_queen_is_flagged():
    # 1.e4 d5: Qg4?? walks into the c8 bishop; Qf3 is safe.
    board = board_after("e4", "d5")
    blunder = row_of(board, "d1g4")
    assert blunder["see"] == -9.0 and blunder["hanging_after"] == 9.0 and blunder["to_attackers"] == 1.0
    safe = row_of(board, "d1f3")
    assert safe["see"] == 0.0 and safe["hanging_after"] < 9.0


def test_moving_a_defender_away_leaves_another_piece_hanging():
    # The rook on d1 guards the knight on d4 from the black rook; Rd1-h1 abandons it.
    board = chess.Board("3rk3/8/8/8/3N4/8/6K1/3R4 w - - 0 1")
    assert row_of(board, "d1h1")["hanging_after"] == 3.0
    assert row_of(board, "d1d2")["hanging_after"] == 0.0
    assert row_of(board, "d1h1")["hanging_change"] == 3.0


def test_check_mate_castling_en_passant_and_promotion_flags():
    scholar = board_after("e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6")
    mate = row_of(scholar, "h5f7")
    assert mate["is_check"] == 1.0 and mate["is_mate"] == 1.0 and mate["see"] == 1.0
    assert row_of(scholar, "h5g6")["is_check"] == 0.0
    castle = board_after("e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5")
    assert row_of(castle, "e1g1")["is_castling"] == 1.0 and row_of(castle, "e1g1")["loses_castling"] == 0.0
    assert row_of(castle, "e1f1")["loses_castling"] == 1.0 and row_of(castle, "h1g1")["loses_castling"] == 1.0
    passant = board_after("e4", "a6", "e5", "d5")
    row = row_of(passant, "e5d6")
    assert row["is_en_passant"] == 1.0 and row["captured_value"] == 1.0 and row["is_capture"] == 1.0
    promote = chess.Board("8/4P1k1/8/8/8/8/8/4K3 w - - 0 1")
    assert row_of(promote, "e7e8q")["promotion"] == chess.QUEEN and row_of(promote, "e7e8q")["see"] == 8.0
    assert row_of(promote, "e7e8n")["promotion"] == chess.KNIGHT


def test_features_are_the_same_for_both_colours():
    # A position and its colour mirror describe the same moves (the last-move features need the
    # move stack, which a mirror does not keep, so both boards start from FEN); only the ply
    # differs (Black's mirror is half a move later).
    board = chess.Board("r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1N2/PPP2PPP/RNBQK2R w KQkq - 1 5")
    mirror = board.mirror()
    context = MoverContext(1700, 12.5, 60, 1)
    left = move_features(board, context)
    right = move_features(mirror, context)
    ply = left.names.index("ply")
    assert right.values[0, ply] == left.values[0, ply] + 1
    left.values[:, ply] = right.values[:, ply] = 0
    for index, uci in enumerate(left.moves):
        move = chess.Move.from_uci(uci)
        flipped = chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square), move.promotion)
        other = right.moves.index(flipped.uci())
        assert np.array_equal(left.values[index], right.values[other], equal_nan=True), uci


def test_unknown_context_is_nan_and_bad_groups_are_refused():
    row = row_of(chess.Board(), "e2e4")
    assert math.isnan(row["rating"]) and math.isnan(row["clock_seconds"]) and math.isnan(row["recapture"])
    with pytest.raises(FeatureError, match="unknown feature group 'eng'"):
        move_features(chess.Board(), MoverContext(), groups=("base", "eng"))  # type: ignore[arg-type]
    with pytest.raises(FeatureError, match="needs engine scores"):
        move_features(chess.Board(), MoverContext(), groups=("base", "engine"))
    with pytest.raises(FeatureError, match="no legal move"):
        move_features(board_after("f3", "e5", "g4", "Qh4"), MoverContext())


def test_book_counts_leave_the_game_itself_out():
    builder = BookBuilder()
    for move in ("e2e4", "e2e4", "d2d4", "e2e4"):
        builder.add(1, move)
    builder.add(2, "g1f3")
    book = builder.build(min_games=2)
    assert len(book) == 1  # key 2 was reached once
    full = book.lookup(1)
    assert full is not None and full.games == 4 and full.moves == {"e2e4": 3, "d2d4": 1}
    without = book.lookup(1, own_counts([(1, "d2d4")]))
    assert without is not None and without.games == 3 and without.moves == {"e2e4": 3}
    assert book.lookup(1, own_counts([(1, "e2e4"), (1, "e2e4"), (1, "e2e4")])) is None  # 1 < min_games
    assert Book.from_json(json.loads(json.dumps(book.to_json()))) == book


def test_played_ranks_count_better_moves_and_earlier_ties():
    from pipeline.human.examples import Examples

    probabilities = np.asarray([0.5, 0.3, 0.2, 0.25, 0.25, 0.5])
    examples = Examples(
        np.zeros((6, 1), np.float32), np.asarray([3, 3]), np.asarray([1, 1]), np.zeros(2), np.zeros((2, 5), np.int64),
        [], [], [],
    )  # fmt: skip
    # First: 0.5 is better than 0.3. Second: 0.5 is better and the tie at index 0 comes first.
    assert played_ranks(probabilities, examples).tolist() == [1, 2]


# -- games --------------------------------------------------------------------------------


def slice_pgn(tmp_path: Path, games: int, name: str = "slice.pgn") -> Path:
    """The first `games` games of lichess_100.pgn, as a file of a user's own (all training games)."""
    text = (GAMES / "lichess_100.pgn").read_text(encoding="utf-8")
    parts = text.split("[Event ")[1 : games + 1]
    path = tmp_path / name
    path.write_text("".join("[Event " + part for part in parts), encoding="utf-8")
    return path


def test_records_replay_the_games(data_dir, tmp_path):
    path = slice_pgn(tmp_path, 5)
    records: list[GameRecord] = list(read_inputs([str(path)]))
    assert len(records) == 5
    for record in records:
        assert record.split == "train"
        for position, board in record.boards():
            assert board.ply() == position.ply
            assert chess.Move.from_uci(position.move) in board.legal_moves
            assert record.mover_name(position.ply) == (record.white if board.turn else record.black)


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


@pytest.mark.slow
@pytest.mark.stockfish
@pytest.mark.cluster
@needs_stockfish
def test_training_twice_with_one_seed_gives_identical_bytes(data_dir, tmp_path):
    # All three feature groups (the engine's answers must not depend on what it was asked
    # before), and a run on two Ray workers: the parts are merged in game order.
    data = slice_pgn(tmp_path, 25)
    config = TrainConfig(groups=("base", "engine", "book"), sample_rate=0.5, tune_sample_rate=1.0, max_rounds=20,
                         book_min_games=2, min_data_in_leaf=50)  # fmt: skip
    first, second, parallel = (tmp_path / name / "model.json" for name in ("a", "b", "c"))
    for path in (first, second, parallel):
        path.parent.mkdir()
    train([str(data)], str(first), config)
    train([str(data)], str(second), config)
    assert first.read_bytes() == second.read_bytes()
    train([str(data)], str(parallel), dataclasses.replace(config, workers=2))
    assert parallel.read_bytes() == first.read_bytes()
    other_seed = tmp_path / "seed1.json"
    train([str(data)], str(other_seed), dataclasses.replace(config, seed=1))
    assert other_seed.read_bytes() != first.read_bytes()


def test_too_little_data_is_one_clear_error(data_dir, tmp_path):
    held_out = GAMES / "lichess_100.pgn"  # a held-out file: never trained on
    with pytest.raises(TrainError, match="too little data: 0 training"):
        train([str(held_out)], str(tmp_path / "m.json"), TrainConfig(groups=("base",)))


# -- the command line ---------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [PYTHON, "-m", "pipeline.cli", "human", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )


@pytest.mark.slow
def test_cli_train_and_eval_on_a_small_slice(data_dir, tmp_path):
    data = slice_pgn(tmp_path, 30)
    out = tmp_path / "m.json"
    done = cli("train", "--data", str(data), "--out", str(out), "--groups", "base,book", "--sample-rate", "1",
               "--tune-sample-rate", "1", "--max-rounds", "20", "--book-min-games", "2", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["train_positions"] > 500 and 0 < summary["tune"]["top1"] < 1
    recorded = json.loads(out.read_text())["training"]
    assert recorded["command"].startswith("diffimax human train --data ") and recorded["command"].endswith(
        "--out m.json"
    )
    shown = cli("eval", "--model", str(out), str(data), "--split", "all", "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    every = report["by_band"][-1]
    assert every["band"] == "all" and every["model"]["n"] == report["positions"] > 1000
    assert every["model"]["top1"] > every["uniform"]["top1"]
    assert sum(row["moves"] for row in report["calibration"]) > report["positions"] * 10
    # Two Ray workers split the games, and the merged figures are the one process's.
    spread = cli("eval", "--model", str(out), str(data), "--split", "all", "--json", "--workers", "2")
    assert spread.returncode == 0, spread.stderr
    timing = "ms_per_position"  # the one figure that is a time
    assert {**json.loads(spread.stdout), timing: None} == {**report, timing: None}
    text = cli("eval", "--model", str(out), str(data), "--split", "all", "--max-positions", "50")
    assert text.returncode == 0 and "Move matching by rating band" in text.stdout
    # Bad input: one line, exit code 1.
    missing = cli("eval", "--model", str(tmp_path / "none.json"), str(data))
    assert missing.returncode == 1 and missing.stderr.strip().count("\n") == 0 and "no model file" in missing.stderr
    no_games = cli("eval", "--model", str(out), str(tmp_path / "none.pgn"))
    assert no_games.returncode == 1 and "no such file" in no_games.stderr
    held = cli("train", "--data", str(GAMES / "lichess_100.pgn"), "--out", str(tmp_path / "x.json"), "--groups", "base")
    assert held.returncode == 1 and "too little data" in held.stderr and "Traceback" not in held.stderr


# -- a mined dataset as input -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.cluster
def test_a_mined_dataset_gives_the_same_positions_as_its_pgn(data_dir, tmp_path):
    from pipeline.ingest.headers import GameFilter
    from tests.mining_helpers import mine

    data = slice_pgn(tmp_path, 30)  # enough games that the carved tune share holds some
    out = tmp_path / "dataset"
    # the material backend: the positions are what this test reads, not their analysis
    mine([str(data)], out, workers=1, game_filter=GameFilter(ply_from=0, ply_to=40), engine="material")
    from_pgn = {(r.game_id, p.ply): (board.fen(), p.move) for r in read_inputs([str(data)]) for p, board in r.boards()
                if p.ply <= 40}  # fmt: skip
    from_dataset = {
        (r.game_id, p.ply): (board.fen(), p.move) for r in read_inputs([str(out)]) for p, board in r.boards()
    }
    assert from_dataset == from_pgn
    model_path = tmp_path / "m.json"
    config = TrainConfig(groups=("base",), sample_rate=1.0, tune_sample_rate=1.0, max_rounds=5, min_data_in_leaf=20)
    summary = train([str(out)], str(model_path), config)
    assert summary["train_positions"] + summary["tune_positions"] > 100
    assert HumanMoveModel.load(model_path).describe()["training"]["data"][0]["kind"] == "dataset"


# -- the engine and the bundled model -----------------------------------------------------


@pytest.mark.stockfish
@needs_stockfish
def test_shallow_engine_scores_every_move_and_ends_its_process():
    board = board_after("e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6")
    engine = ShallowEngine(EngineSettings(depth=1))
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
        evaluated = run_cli("human", "eval", "--model", str(path), games, "--max-positions", "5")
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


# -- rating pools, the chess.com split, Maia's protocol, the ray trainer ----------------------


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


def outcome(ply: int, clock: float | None, rating: int, pool: str | None, rank: int):
    from pipeline.human.evaluate import Outcome

    return Outcome("s.pgn", "g", ply, rating, "p", 20, {"model": rank, "reference": 1}, {"model": 0.5,
                   "reference": 0.25, "uniform": 0.05}, 0.5, False, clock, pool)  # type: ignore[arg-type]  # fmt: skip


def test_maia_protocol_leaves_out_the_opening_and_time_trouble():
    from pipeline.human.protocol import by_pool_and_band, maia_outcomes

    outcomes = [
        outcome(9, None, 1000, "chesscom", 0),  # a book move: out
        outcome(10, None, 1000, "chesscom", 0),  # no clock known: in
        outcome(30, 29.9, 1500, "lichess", 0),  # under 30 s: out
        outcome(30, 30.0, 1500, "lichess", 3),
        outcome(40, 100.0, 1500, None, 0),
    ]
    kept = maia_outcomes(outcomes)
    assert [o.ply for o in kept] == [10, 30, 40] and kept[1].clock == 30.0
    rows = {(row["pool"], row["band"]): row for row in by_pool_and_band(kept, ["model", "reference", "uniform"])}
    assert rows[("chesscom", "<1200")]["model"]["top1"] == 1.0
    assert rows[("lichess", "1400-1599")]["model"]["top1"] == 0.0
    assert rows[("unknown", "all")]["model"]["n"] == 1
    every = rows[("all", "all")]
    assert every["model"]["n"] == 3 and math.isclose(every["model"]["top1"], 2 / 3)
    assert every["reference"]["top1"] == 0.0 and math.isclose(every["reference"]["log_loss"], -math.log(0.25))


@pytest.mark.slow
@pytest.mark.cluster
def test_the_ray_trainer_streams_shards_and_fits_on_ray_train(data_dir, tmp_path):
    first = slice_pgn(tmp_path, 30, "first.pgn")
    text = (GAMES / "lichess_100.pgn").read_text(encoding="utf-8")
    second = tmp_path / "second.pgn"
    second.write_text("[Event " + "[Event ".join(text.split("[Event ")[31:61]), encoding="utf-8")
    out = tmp_path / "ray.json"
    config = TrainConfig(groups=("base", "book"), sample_rate=1.0, tune_sample_rate=1.0, max_rounds=8,
                         book_min_games=2, min_data_in_leaf=50, workers=2, trainer="ray")  # fmt: skip
    summary = train([str(first), str(second)], str(out), config)
    recorded = json.loads(out.read_text())["training"]
    assert recorded["fit"]["trainer"] == "ray" and recorded["fit"]["workers"] == 2
    assert "--trainer ray" in recorded["command"] and summary["train_positions"] > 1000
    assert 0.15 < summary["tune"]["top1"] < 1  # trees that learnt something (uniform is ~0.04)
    model = HumanMoveModel.load(out)
    p = model.move_probabilities(board_after("e4", "e5", "Nf3", "Qg5"), MoverContext(1500))
    assert max(p, key=lambda m: p[m]) == "f3g5"  # the free queen
    with pytest.raises(TrainError, match="dump-examples needs the local trainer"):
        train([str(first)], str(out), config, dump=str(tmp_path / "dump"))


def test_a_game_sample_reads_a_share_of_a_file_and_a_file_rate_overrides_it(data_dir):
    from pipeline.human.data import GameSample

    every = [record.game_id for record in read_inputs([str(GAMES / "lichess_100.pgn")])]
    some = [record.game_id for record in read_inputs([str(GAMES / "lichess_100.pgn")], games=GameSample(0.3))]
    assert set(some) < set(every) and 15 <= len(some) <= 45
    again = [record.game_id for record in read_inputs([str(GAMES / "lichess_100.pgn")], games=GameSample(0.3))]
    assert again == some  # a hash of the game id: the same games every time
    whole = GameSample(0.3, (("lichess_100.pgn", 1.0),))
    assert [record.game_id for record in read_inputs([str(GAMES / "lichess_100.pgn")], games=whole)] == every
