"""Training a model of a user's own players: games read, the same bytes from one seed, too little
data, a mined dataset as input, the ray trainer, game samples."""

from __future__ import annotations

import dataclasses
import json

import chess
import pytest

from pipeline.human.context import MoverContext
from pipeline.human.data import GameRecord, read_inputs
from pipeline.human.model import HumanMoveModel
from pipeline.human.train import TrainConfig, TrainError
from pipeline.human.trainer import train
from tests.conftest import GAMES, needs_stockfish
from tests.human.helpers import board_after, slice_pgn

# -- games --------------------------------------------------------------------------------


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
