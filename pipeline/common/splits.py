"""The fixed split of the shared games into training, tuning and held-out parts.

Every fitted or tuned figure (the human-move model, the judges' thresholds) is fitted on
`train` and chosen on `tune` games only; every published figure is measured on `held_out`
games. The split is a function of the file name and the game id alone, so it is the same in
every run, whatever the sharding, the order of the inputs or the number of workers.

- Whole files held out, so that a figure is also measured on *other players*:
  `lichess_player_b_1089.pgn` (two accounts that never appear in the other files) and
  `lichess_100.pgn`.
- `lichess_player_a_37221.pgn.zst` and `lichess_eval_clk_10024.pgn.zst` are split by game, by a
  hash of (HOLDOUT_SEED, game id): the lowest 10 % held out, the next 10 % for tuning, the rest
  for training.
- `chesscom_mixed_1187.pgn` (chess.com players of every level, median ~900) is split the same way
  with larger shares, 30 % held out and 15 % for tuning: its bands are small, and every published
  band wants 2,000 held-out positions. Its games have no GameId tag, so their key is the file
  name and the game's byte offset (`game_key`), not the reader's id (which hashes the path as
  given, and would move games between parts when the file is named by another path).
- Any other file (a user's own games) counts as training data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Final, Literal

from search.errors import DiffimaxError


def sample_value(seed: int, game_id: str) -> float:
    """A uniform number in [0, 1) from (seed, game id); a game is sampled when it is below the rate."""
    digest = hashlib.blake2b(f"{seed}:{game_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


Split = Literal["train", "tune", "held_out"]
SPLITS: Final[tuple[Split, ...]] = ("train", "tune", "held_out")


class SplitError(DiffimaxError, ValueError):
    """A `--split` that names no part of the split."""


def parse_split(text: str) -> Split | None:
    """`--split`: one part of the split, or `all` (None: every game)."""
    if text == "all":
        return None
    if text not in SPLITS:
        raise SplitError(f"invalid --split {text!r}: expected held_out, tune, train or all")
    return text


# Seed of the per-game hash; changing it changes every published figure.
HOLDOUT_SEED: Final = 20261201
# Shared files held out whole (other players than the training files).
HELD_OUT_FILES: Final = frozenset({"lichess_player_b_1089.pgn", "lichess_100.pgn"})
# Share of a split file's games held out, and the share after it kept for tuning (defaults).
HELD_OUT_SHARE: Final = 0.10
TUNE_SHARE: Final = 0.10
# Shared files split game by game -> (held-out share, tune share).
SPLIT_SHARES: Final[Mapping[str, tuple[float, float]]] = {
    "lichess_player_a_37221.pgn.zst": (HELD_OUT_SHARE, TUNE_SHARE),
    "lichess_eval_clk_10024.pgn.zst": (HELD_OUT_SHARE, TUNE_SHARE),
    "chesscom_mixed_1187.pgn": (0.30, 0.15),
}
SPLIT_FILES: Final = frozenset(SPLIT_SHARES)
# The reader's id of a game without a site id: "pgn-" and a hash of the path as given.
PATH_ID_PREFIX: Final = "pgn-"


def file_name(source: str) -> str:
    """The last path segment of a source path or URL."""
    return PurePosixPath(source.rstrip("/")).name


def game_key(source: str, game_id: str, byte_offset: int | None) -> str:
    """What a game's split is a hash of: its id when the game names one (a GameId or a URL Site
    tag), else the file name and the game's byte offset (the same whatever path names the file)."""
    if game_id.startswith(PATH_ID_PREFIX) and byte_offset is not None:
        return f"{file_name(source)}#{byte_offset}"
    return game_id


def split_of(source: str, game_id: str, byte_offset: int | None = None) -> Split:
    """Which part a game belongs to; `source` is the file's path or URL (only its name counts),
    `byte_offset` where the game starts in it (it keys games that name no id of their own)."""
    name = file_name(source)
    if name in HELD_OUT_FILES:
        return "held_out"
    shares = SPLIT_SHARES.get(name)
    if shares is None:
        return "train"
    held_out, tune = shares
    value = sample_value(HOLDOUT_SEED, game_key(source, game_id, byte_offset))
    if value < held_out:
        return "held_out"
    if value < held_out + tune:
        return "tune"
    return "train"
