"""Duplicate games: the same game read twice, from two inputs or twice in one, is mined once.

What a duplicate is: a game whose *identity keys* (`pipeline.ingest.headers.identity_keys`)
share one with a game before it in the job's input order (shard order, then the game's place in
its shard). A game's keys are its id (its GameId tag, or its Site URL's last segment, or, for a
game that names neither, the reader's `pgn-` id of its source and offset), its Link tag (chess.com's
game address) with its moves (`games.moves_digest`) when it has one, and, for a game without an id
of its own, the digest of all its tags and its moves (`games.digest`). So two games are one when
they share a Lichess id or a Site URL, or a Link and their moves, or are the same tags and moves.
The first is kept; each later one is filtered (`Filtered`, rule `duplicate`, counted in
`games_filtered_by`). Because every kept game's id is
a key, no two games of a dataset share a `game_id`, and the views join one-to-one.

`SeenGames` decides, shard by shard, in a way that does not depend on the order shards arrive in,
on retries or on a resumed run: each key keeps the *ordinal* (the shard's place in the input
order) of the first kept game that has it, and a shard's game is a duplicate when one of its
keys belongs to an earlier ordinal, or to an earlier game of its own shard. A shard's answer is
the same however often it is asked, provided every earlier shard was registered first (from the
dataset's committed shards, `load`, and by the caller for the ones in flight). The keys are
64-bit digests held in sorted numpy runs: 16 bytes per key (a key and its ordinal), one key per
Lichess game (its id), up to three for a game without an id: ~1.4 GB for a month of 90 M Lichess
games, in one actor on the driver's node. A false duplicate needs two different keys to share 64
bits: with 90 M keys, about one job in 4,500 loses one game that way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from pipeline.dataset.integrity import SHARD_MARKER, files_dir, read_json, read_verified
from pipeline.dataset.store import DatasetReader
from pipeline.ingest.headers import identity_keys

# A shard's place in the job's input order: its source's index among the inputs, its index in
# its source, as one int (`ordinal_of`).
Ordinal = int
# Bits of a shard's index within its ordinal.
INDEX_BITS: Final = 32
# Runs merged once the newest is at least this fraction of the one before (a binary counter's
# rule: log2(n) runs, every key merged O(log n) times).
MERGE_RATIO: Final = 0.5


def ordinal_of(source_index: int, index: int) -> Ordinal:
    return (source_index << INDEX_BITS) | index


class KeyOrdinals:
    """A set of 64-bit keys, each with the smallest ordinal it was added with: sorted numpy runs,
    merged as they grow (`MERGE_RATIO`), so that adding n keys costs O(n log n) and a lookup
    O(log n) per run."""

    def __init__(self) -> None:
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []  # (sorted unique keys, their ordinals)

    def __len__(self) -> int:
        """Entries held (a key in two runs counts twice until they are merged)."""
        return sum(len(keys) for keys, _ in self.runs)

    def first(self, keys: np.ndarray) -> np.ndarray:
        """The smallest ordinal of each of `keys` (int64), or -1 where a key is not held."""
        found = np.full(len(keys), -1, dtype=np.int64)
        for run, ordinals in self.runs:
            at = np.searchsorted(run, keys).clip(max=len(run) - 1)
            hit = run[at] == keys
            held = ordinals[at]
            better = hit & ((found < 0) | (held < found))
            found[better] = held[better]
        return found

    def add(self, keys: np.ndarray, ordinal: Ordinal) -> None:
        if not len(keys):
            return
        self.runs.append(_unique(keys, np.full(len(keys), ordinal, dtype=np.int64)))
        while len(self.runs) > 1 and len(self.runs[-1][0]) >= MERGE_RATIO * len(self.runs[-2][0]):
            (a, oa), (b, ob) = self.runs.pop(), self.runs.pop()
            self.runs.append(_unique(np.concatenate([a, b]), np.concatenate([oa, ob])))


def _unique(keys: np.ndarray, ordinals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys sorted, each once, with its smallest ordinal."""
    order = np.lexsort((ordinals, keys))
    keys, ordinals = keys[order], ordinals[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return keys[first], ordinals[first]


class SeenGames:
    """The kept games' identity keys of a job, by shard ordinal; which games of a shard are
    duplicates (`register`)."""

    def __init__(self) -> None:
        self.keys = KeyOrdinals()
        self.answers: dict[Ordinal, frozenset[int]] = {}

    def known(self, ordinal: Ordinal) -> bool:
        return ordinal in self.answers

    def register(self, ordinal: Ordinal, games: Sequence[Sequence[int]]) -> frozenset[int]:
        """The indices (in `games`, the shard's selected games in order, each its identity keys) of
        the duplicates: a game one of whose keys an earlier shard's kept game holds, or an earlier
        game of this shard. The kept games' keys are added. Asked again, the same answer."""
        if ordinal in self.answers:
            return self.answers[ordinal]
        flat = np.array([key for keys in games for key in keys], dtype=np.int64)
        earlier = self.keys.first(flat) if len(flat) else flat
        duplicates: set[int] = set()
        here: set[int] = set()
        kept: list[int] = []
        at = 0
        for index, keys in enumerate(games):
            mine = earlier[at : at + len(keys)]
            at += len(keys)
            if any(0 <= held < ordinal for held in mine.tolist()) or any(key in here for key in keys):
                duplicates.add(index)
                continue
            here.update(keys)
            kept.extend(keys)
        self.keys.add(np.array(kept, dtype=np.int64), ordinal)
        answer = self.answers[ordinal] = frozenset(duplicates)
        return answer

    def load(self, root: str | Path) -> None:
        """Register the committed shards of the dataset at `root`: every game in them was kept,
        under the ordinal its `_shard.json` records."""
        reader = DatasetReader(root)
        for shard_id in sorted(reader.committed()):
            info = read_json(reader.shards / shard_id / SHARD_MARKER)
            ordinal = info.get("ordinal") if isinstance(info, dict) else None
            if not isinstance(ordinal, int) or ordinal in self.answers:
                continue
            where = files_dir(reader.shards / shard_id, info)  # on object storage, the attempt its record names
            columns = ("game_id", "link", "digest", "moves_digest")
            table = read_verified(where / "games.parquet", list(columns))
            rows = zip(*(table.column(name).to_pylist() for name in columns), strict=True)
            keys = [key for game_id, link, digest, moves in rows for key in identity_keys(game_id, link, digest, moves)]
            self.keys.add(np.array(keys, dtype=np.int64), ordinal)
            self.answers[ordinal] = frozenset()


__all__ = ["KeyOrdinals", "Ordinal", "SeenGames", "ordinal_of"]
