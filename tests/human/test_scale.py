"""Tests of `pipeline.human.scale`, the ray trainer (`diffimax human train --trainer ray`, chosen
by `pipeline.human.trainer`): shards streamed to Ray tasks and a fit on Ray Train that learns."""

from __future__ import annotations

import json

import pytest

from pipeline.human.context import MoverContext
from pipeline.human.model import HumanMoveModel
from pipeline.human.train import TrainConfig, TrainError
from pipeline.human.trainer import train
from tests.conftest import GAMES
from tests.human.helpers import board_after, slice_pgn


@pytest.mark.cluster
def test_the_ray_trainer_streams_shards_and_fits_on_ray_train(data_dir, tmp_path):
    first = slice_pgn(tmp_path, 30, "first.pgn")
    text = (GAMES / "lichess_100.pgn").read_text(encoding="utf-8")
    second = tmp_path / "second.pgn"
    second.write_text("[Event " + "[Event ".join(text.split("[Event ")[31:61]), encoding="utf-8")
    out = tmp_path / "ray.json"
    config = TrainConfig(
        groups=("base", "book"),
        sample_rate=1.0,
        tune_sample_rate=1.0,
        max_rounds=8,
        book_min_games=2,
        min_data_in_leaf=50,
        workers=2,
        trainer="ray",
    )
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
