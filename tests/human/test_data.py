"""Tests of `pipeline.human.data`: the games a human-move model learns from, read from PGN files
or a mined dataset (records that replay their games, a sample of a file's games, a mined dataset
read as the same positions as its PGN), and the split its records get from
`pipeline.common.splits`, which must not depend on the path that names the file."""

from __future__ import annotations

import chess
import pytest

from pipeline.human.data import GameRecord, read_inputs
from pipeline.human.model import HumanMoveModel
from pipeline.human.train import TrainConfig
from pipeline.human.trainer import train
from tests.conftest import GAMES
from tests.human.helpers import slice_pgn


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


def test_a_game_sample_reads_a_share_of_a_file_and_a_file_rate_overrides_it(data_dir):
    from pipeline.human.data import GameSample

    every = [record.game_id for record in read_inputs([str(GAMES / "lichess_100.pgn")])]
    some = [record.game_id for record in read_inputs([str(GAMES / "lichess_100.pgn")], games=GameSample(0.3))]
    assert set(some) < set(every) and 15 <= len(some) <= 45
    again = [record.game_id for record in read_inputs([str(GAMES / "lichess_100.pgn")], games=GameSample(0.3))]
    assert again == some  # a hash of the game id: the same games every time
    whole = GameSample(0.3, (("lichess_100.pgn", 1.0),))
    assert [record.game_id for record in read_inputs([str(GAMES / "lichess_100.pgn")], games=whole)] == every


@pytest.mark.cluster
def test_a_mined_dataset_gives_the_same_positions_as_its_pgn(data_dir, tmp_path):
    from pipeline.ingest.headers import GameFilter
    from tests.mining_helpers import mine

    data = slice_pgn(tmp_path, 30)  # enough games that the carved tune share holds some
    out = tmp_path / "dataset"
    # the material backend: the positions are what this test reads, not their analysis
    mine([str(data)], out, workers=1, game_filter=GameFilter(ply_from=0, ply_to=40), engine="material")
    from_pgn = {
        (r.game_id, p.ply): (board.fen(), p.move)
        for r in read_inputs([str(data)])
        for p, board in r.boards()
        if p.ply <= 40
    }
    from_dataset = {
        (r.game_id, p.ply): (board.fen(), p.move) for r in read_inputs([str(out)]) for p, board in r.boards()
    }
    assert from_dataset == from_pgn
    model_path = tmp_path / "m.json"
    config = TrainConfig(groups=("base",), sample_rate=1.0, tune_sample_rate=1.0, max_rounds=5, min_data_in_leaf=20)
    summary = train([str(out)], str(model_path), config)
    assert summary["train_positions"] + summary["tune_positions"] > 100
    assert HumanMoveModel.load(model_path).describe()["training"]["data"][0]["kind"] == "dataset"


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
