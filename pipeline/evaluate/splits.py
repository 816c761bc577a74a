"""The fixed split of the shared games into training, tuning and held-out parts.

Every fitted or tuned figure (the human-move model, the judges' thresholds) is fitted on
`train` and chosen on `tune` games only; every published figure is measured on `held_out`
games. The split is a function of the file name and the game id alone, so it is the same in
every run, whatever the sharding, the order of the inputs or the number of workers.

- Whole files held out, so that a figure is also measured on *other players*:
  `lichess_player_b_1089.pgn` (two accounts that never appear in the other files) and
  `lichess_100.pgn`.
- `lichess_player_a_37221.pgn.zst` and `lichess_eval_clk_10024.pgn.zst` are split by game, by a
  hash of (HOLDOUT_SEED, game id): the lowest HELD_OUT_SHARE held out, the next TUNE_SHARE for
  tuning, the rest for training.
- Any other file (a user's own games) counts as training data.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Final, Literal

from pipeline.ingest.games import sample_value

Split = Literal["train", "tune", "held_out"]
SPLITS: Final[tuple[Split, ...]] = ("train", "tune", "held_out")

# Seed of the per-game hash; changing it changes every published figure.
HOLDOUT_SEED: Final = 20261201
# Shared files held out whole (other players than the training files).
HELD_OUT_FILES: Final = frozenset({"lichess_player_b_1089.pgn", "lichess_100.pgn"})
# Shared files split game by game.
SPLIT_FILES: Final = frozenset({"lichess_player_a_37221.pgn.zst", "lichess_eval_clk_10024.pgn.zst"})
# Share of a split file's games held out, and the share after it kept for tuning.
HELD_OUT_SHARE: Final = 0.10
TUNE_SHARE: Final = 0.10


def file_name(source: str) -> str:
    """The last path segment of a source path or URL."""
    return PurePosixPath(source.rstrip("/")).name


def split_of(source: str, game_id: str) -> Split:
    """Which part a game belongs to; `source` is the file's path or URL (only its name counts)."""
    name = file_name(source)
    if name in HELD_OUT_FILES:
        return "held_out"
    if name not in SPLIT_FILES:
        return "train"
    value = sample_value(HOLDOUT_SEED, game_id)
    if value < HELD_OUT_SHARE:
        return "held_out"
    if value < HELD_OUT_SHARE + TUNE_SHARE:
        return "tune"
    return "train"
