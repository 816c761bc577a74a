"""What humans played where: move counts by position and mover rating, from a corpus of games.

The *human* judge asks the corpus how often movers rated near the responder played each reply
in this position. A corpus is read once into three sorted arrays (position key, mover rating,
move), so a lookup is a binary search: cheap enough for every analysed position of a job.

A corpus comes from a mined dataset (`diffimax mine --out`: its `positions` table), or from a
corpus file that `diffimax human corpus PGN... --out FILE` writes from games alone (no analysis):
Parquet with the columns `position_key`, `mover_rating`, `move_uci`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.files import replacing
from pipeline.dataset.integrity import check_dataset
from pipeline.dataset.objects import ObjectPath, dataset_path
from pipeline.dataset.store import DatasetReader
from schemas.dataset import to_signed64
from search.errors import DiffimaxError

# The columns a corpus is read from.
CORPUS_SCHEMA = pa.schema(
    [
        pa.field("position_key", pa.int64(), nullable=False),
        pa.field("mover_rating", pa.int32()),
        pa.field("move_uci", pa.string(), nullable=False),
    ]
)
# Stands for an unknown rating in the arrays (outside every band).
NO_RATING = -(1 << 30)
# A UCI move: two squares and an optional promotion piece.
UCI_PATTERN = "^[a-h][1-8][a-h][1-8][nbrq]?$"
# The highest rating a corpus may hold (a rating above is a damaged column, not a player).
MAX_RATING = 4000


class CorpusError(DiffimaxError, ValueError):
    """A corpus that cannot be read."""


@dataclass(frozen=True)
class CorpusCounts:
    games: int
    """Games that reached the position with a mover in the band (all moves together)."""
    moves: dict[str, int]
    """Times each move (UCI) was played there by those movers."""


class Corpus:
    """Move counts by (position, mover rating), in memory."""

    def __init__(self, table: pa.Table, source: str) -> None:
        self.source = source
        table = table.select(["position_key", "mover_rating", "move_uci"]).sort_by(
            [("position_key", "ascending"), ("mover_rating", "ascending")]
        )
        self.keys: npt.NDArray[np.int64] = table["position_key"].to_numpy()
        ratings = table["mover_rating"].fill_null(NO_RATING)
        self.ratings: npt.NDArray[np.int64] = ratings.to_numpy().astype(np.int64)
        encoded = table["move_uci"].dictionary_encode().combine_chunks()
        self.moves: npt.NDArray[np.int32] = encoded.indices.to_numpy().astype(np.int32)
        self.names: list[str] = encoded.dictionary.to_pylist()

    @classmethod
    def load(cls, path: str | Path) -> Corpus:
        """A mined dataset (a directory or an object prefix) or a corpus Parquet file (or object)."""
        source = dataset_path(path)
        try:
            if source.is_dir():
                reader = DatasetReader(source)
                if not reader.committed():
                    raise CorpusError(f"corpus {str(source)!r} is no mined dataset with committed shards")
                # A missing, cut or damaged shard is one line naming it, never a smaller corpus.
                table = reader.read_table("positions", check_dataset(source).shards)
            elif source.is_file():
                name, filesystem = source.arrow() if isinstance(source, ObjectPath) else (str(source), None)
                problem = corpus_schema_problem(pq.read_schema(name, filesystem=filesystem))
                if problem is not None:
                    raise CorpusError(f"corpus {str(source)!r}: {problem}")
                table = pq.read_table(name, columns=CORPUS_SCHEMA.names, filesystem=filesystem)
            else:
                raise CorpusError(f"corpus not found: {str(source)!r}")
        except (OSError, pa.ArrowInvalid, KeyError) as error:
            raise CorpusError(f"cannot read corpus {str(source)!r}: {' '.join(str(error).split())}") from None
        problem = corpus_schema_problem(table.schema) or corpus_values_problem(table)
        if problem is not None:
            raise CorpusError(f"corpus {str(source)!r}: {problem}")
        return cls(table, str(source))

    def __len__(self) -> int:
        return len(self.keys)

    def counts(self, position_key: int, rating: int | None = None, band: int = 200) -> CorpusCounts:
        """Moves played at `position_key` (unsigned or signed Zobrist) by movers rated within
        `band / 2` of `rating` (every mover, rated or not, when `rating` is None)."""
        key = to_signed64(position_key)
        low = int(np.searchsorted(self.keys, key, side="left"))
        high = int(np.searchsorted(self.keys, key, side="right"))
        if rating is not None:
            ratings = self.ratings[low:high]
            start = int(np.searchsorted(ratings, rating - band // 2, side="left"))
            end = int(np.searchsorted(ratings, rating + band // 2, side="right"))
            low, high = low + start, low + end
        moves = Counter(int(code) for code in self.moves[low:high])
        return CorpusCounts(int(high - low), {self.names[code]: count for code, count in moves.items()})


def corpus_schema_problem(schema: pa.Schema) -> str | None:
    """What keeps a table of this schema from being a corpus (a missing column, or one of another
    type: the key and the rating whole numbers, the move a string), naming the column; None if
    it can be one."""
    checks = {
        "position_key": (pa.types.is_integer, "whole numbers (64-bit Zobrist keys)"),
        "mover_rating": (lambda kind: pa.types.is_integer(kind) or pa.types.is_null(kind), "whole numbers"),
        "move_uci": (lambda kind: pa.types.is_string(kind) or pa.types.is_large_string(kind), "strings (UCI)"),
    }
    for name, (accepts, expected) in checks.items():
        index = schema.get_field_index(name)
        if index < 0:
            return f"column {name!r} is missing (expected {', '.join(CORPUS_SCHEMA.names)})"
        kind = schema.field(index).type
        if not accepts(kind):
            return f"column {name!r} holds {kind}: expected {expected}"
    return None


def corpus_values_problem(table: pa.Table) -> str | None:
    """What is wrong with a corpus's values (an empty key or move, a move that is not UCI, a
    rating outside 0..4000), naming the column and the first bad row; None if nothing is."""
    import pyarrow.compute as pc

    for name in ("position_key", "move_uci"):
        nulls = table[name].null_count
        if nulls:
            return f"column {name!r} is empty in {nulls} row(s)"
    bad_move = pc.invert(pc.match_substring_regex(table["move_uci"], UCI_PATTERN))
    if pc.any(bad_move).as_py():
        row = pc.index(bad_move, True).as_py()
        return f"column 'move_uci' holds {table['move_uci'][row].as_py()!r} at row {row}: expected a UCI move"
    ratings = table["mover_rating"]
    bad_rating = pc.or_(pc.less(ratings, 0), pc.greater(ratings, MAX_RATING))
    if pc.any(bad_rating).as_py():
        row = pc.index(bad_rating, True).as_py()
        return f"column 'mover_rating' holds {ratings[row].as_py()} at row {row}: expected 0..{MAX_RATING}"
    return None


def write_corpus(rows: pa.Table, path: str | Path) -> Path:
    """Save corpus rows (`CORPUS_SCHEMA`) as one Parquet file."""
    target = Path(path)
    with replacing(target) as stream:  # never through a link, never half a file
        pq.write_table(rows.select(CORPUS_SCHEMA.names).cast(CORPUS_SCHEMA), stream, compression="zstd")
    return target


def build_corpus(inputs: list[str], splits: frozenset[str]) -> pa.Table:
    """Corpus rows (`CORPUS_SCHEMA`) of every position of the games of `inputs` in `splits` (the
    shared files by `pipeline.common.splits`; other files count as training games)."""
    from pipeline.human.data import read_inputs

    keys: list[int] = []
    ratings: list[int | None] = []
    moves: list[str] = []
    for game in read_inputs(inputs):
        if game.split not in splits:
            continue
        for position in game.positions:
            keys.append(to_signed64(position.key))
            ratings.append(position.rating)
            moves.append(position.move)
    return pa.table({"position_key": keys, "mover_rating": ratings, "move_uci": moves}, schema=CORPUS_SCHEMA)
