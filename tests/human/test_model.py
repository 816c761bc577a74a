"""Tests of `pipeline.human.model`: a model file's probabilities over every legal move, bad model
files refused in one line, and the bundled default model (small, its training recorded, the
obvious moves predicted)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import chess
import pytest

from pipeline.human.context import MoverContext
from pipeline.human.model import DEFAULT_MODEL, MODEL_VERSION, HumanMoveModel, ModelError
from pipeline.human.train import TrainConfig
from pipeline.human.trainer import train
from tests.conftest import needs_stockfish, require_data
from tests.human.helpers import board_after, one_line, slice_pgn

# -- the model file -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    """A base+book model of 40 games (early-stopped on a carved share of them)."""
    require_data()
    directory = tmp_path_factory.mktemp("small")
    data = slice_pgn(directory, 40)
    out = directory / "model.json"
    config = TrainConfig(
        groups=("base", "book"),
        sample_rate=1.0,
        tune_sample_rate=1.0,
        max_rounds=30,
        book_min_games=2,
        min_data_in_leaf=50,
        threads=1,
    )
    train([str(data)], str(out), config)
    return out


def test_probabilities_cover_every_legal_move_and_sum_to_one(small_model):
    model = HumanMoveModel.load(small_model)
    boards = [
        chess.Board(),
        board_after("e4", "e5", "Nf3", "Nc6", "d4", "exd4", "Nxd4", "Nxd4"),
        chess.Board("7k/8/8/8/8/8/5PP1/r5K1 w - - 0 1"),  # one legal move
    ]
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


# -- the bundled model --------------------------------------------------------------------


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
