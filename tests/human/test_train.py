"""Tests of `pipeline.human.train`, the local trainer (reached through
`pipeline.human.trainer.train`, the entry point `diffimax human train` calls): the same bytes from
one seed on one process or two Ray workers, too little data as one clear error, and the ranks of
the moves played."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.human.train import TrainConfig, TrainError, played_ranks
from pipeline.human.trainer import train
from tests.conftest import GAMES, needs_stockfish
from tests.human.helpers import slice_pgn


@pytest.mark.stockfish
@pytest.mark.cluster
@needs_stockfish
def test_training_twice_with_one_seed_gives_identical_bytes(data_dir, tmp_path):
    # All three feature groups (the engine's answers must not depend on what it was asked
    # before), and a run on two Ray workers: the parts are merged in game order.
    data = slice_pgn(tmp_path, 25)
    config = TrainConfig(
        groups=("base", "engine", "book"),
        sample_rate=0.5,
        tune_sample_rate=1.0,
        max_rounds=20,
        book_min_games=2,
        min_data_in_leaf=50,
    )
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


def test_played_ranks_count_better_moves_and_earlier_ties():
    from pipeline.human.examples import Examples

    probabilities = np.asarray([0.5, 0.3, 0.2, 0.25, 0.25, 0.5])
    examples = Examples(
        np.zeros((6, 1), np.float32),
        np.asarray([3, 3]),
        np.asarray([1, 1]),
        np.zeros(2),
        np.zeros((2, 5), np.int64),
        [],
        [],
        [],
    )
    # First: 0.5 is better than 0.3. Second: 0.5 is better and the tie at index 0 comes first.
    assert played_ranks(probabilities, examples).tolist() == [1, 2]
