"""The examples the human-move model learns from: sampled positions of games as feature rows.

`records_examples` turns games (`pipeline.human.data.GameRecord`) into `Examples`: each sampled,
unforced position becomes one row per legal move (`pipeline.human.features`) and a label (the
move played). Positions are sampled by a hash of (seed, game id, ply), so a sample is the same in
every run. `extract` makes them in parts on Ray workers (`workers > 1`) and merges the parts in
game order, so the result does not depend on the number of workers; `pipeline.human.scale` makes
them shard by shard at dump scale.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import chess
import numpy as np
import numpy.typing as npt

from pipeline.common.cluster import Tick, fan_out
from pipeline.common.files import replacing, write_atomic
from pipeline.common.progress import Progress
from pipeline.common.splits import Split
from pipeline.human.book import Book, own_counts
from pipeline.human.context import MoverContext, Pool
from pipeline.human.data import GameRecord, GameSample, PositionRecord, read_inputs
from pipeline.human.engine import FeatureEngine, ShallowEngine
from pipeline.human.features import FeatureGroup, Matrix, feature_names, move_features

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# Share of the training games kept for early stopping when the inputs hold no tune games.
CARVED_TUNE_SHARE: Final = 0.1
# Seed of that carve (apart from the sampling seed, so changing one leaves the other alone).
CARVE_SEED: Final = 7919
# Parts per Ray worker: each part re-reads (not re-parses) every compressed source, so few.
PARTS_PER_WORKER: Final = 1


@dataclass
class Examples:
    """Sampled positions as feature rows: position i owns rows offsets[i] .. offsets[i] + sizes[i]."""

    values: Matrix
    sizes: IntArray
    labels: IntArray
    """Index of the played move within its position's rows."""
    ratings: FloatArray
    """The mover's rating (NaN unknown)."""
    orders: IntArray
    """(n, 5): the game's order key and the ply: sorts positions in input order."""
    game_ids: list[str]
    sources: list[str]
    movers: list[str | None]

    @property
    def positions(self) -> int:
        return len(self.sizes)

    @property
    def offsets(self) -> IntArray:
        result: IntArray = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        return result

    @classmethod
    def empty(cls, width: int) -> Examples:
        return cls(
            np.zeros((0, width), np.float32),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0),
            np.zeros((0, 5), np.int64),
            [],
            [],
            [],
        )


@dataclass(frozen=True)
class ExtractSpec:
    """What one extraction part does (sent to Ray workers)."""

    splits: tuple[Split, ...]
    groups: tuple[FeatureGroup, ...]
    engine: FeatureEngine | None
    sample_rate: float
    seed: int
    carve: Literal["none", "train", "tune"] = "none"
    """Carved tune share of training games: `train` keeps the rest, `tune` keeps the share."""
    leave_one_out: bool = True
    """Take each game's own occurrences out of the book counts it sees (training games)."""
    source_rates: tuple[tuple[str, float], ...] = ()
    """(file name, share) pairs that replace `sample_rate` for that file's positions."""
    pool: Pool | None = None
    """The rating pool of every game (None: each game's Site tag says)."""
    games: GameSample | None = None
    """The share of each file's games read at all (None: every game)."""

    def rate_of(self, source: str) -> float:
        """The share of the positions of `source` (a file name) that is sampled."""
        for name, rate in self.source_rates:
            if name == source:
                return rate
        return self.sample_rate


def position_value(seed: int, game_id: str, ply: int) -> float:
    """A uniform number in [0, 1) from (seed, game id, ply): the position is sampled below the rate."""
    digest = hashlib.blake2b(f"{seed}:{game_id}:{ply}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def sampled_positions(
    record: GameRecord, seed: int, rate: float
) -> Iterator[tuple[PositionRecord, chess.Board, list[chess.Move]]]:
    """The positions of `record` in the seeded sample below `rate` that are not forced (two legal
    moves or more), each with its board (the same board, mutated: see `GameRecord.boards`) and its
    legal moves: the one sample that training, evaluation and the benchmarks draw from."""
    for position, board in record.boards():
        if position_value(seed, record.game_id, position.ply) >= rate:
            continue
        legal = list(board.generate_legal_moves())
        if len(legal) < 2:
            continue
        yield position, board, legal


def carved(game_id: str) -> bool:
    """Whether a training game falls in the carved tune share (inputs without tune games)."""
    return position_value(CARVE_SEED, game_id, -1) < CARVED_TUNE_SHARE


def context_of(record: GameRecord, position: PositionRecord) -> MoverContext:
    """Who moves at `position` of `record`, under what clock, and against whom."""
    return MoverContext(
        position.rating,
        position.clock_seconds,
        record.base_seconds,
        record.increment_seconds,
        record.pool,
        record.opponent_rating(position.ply),
    )


def game_examples(
    record: GameRecord, spec: ExtractSpec, book: Book | None, engine: ShallowEngine | None
) -> tuple[list[Matrix], list[int], list[tuple[int, ...]], list[int | None]]:
    """The sampled, unforced positions of one game: feature rows, label, (order..., ply), rating."""
    matrices: list[Matrix] = []
    labels: list[int] = []
    keys: list[tuple[int, ...]] = []
    ratings: list[int | None] = []
    own = own_counts((p.key, p.move) for p in record.positions) if book is not None and spec.leave_one_out else None
    for position, board, _ in sampled_positions(record, spec.seed, spec.rate_of(record.source)):
        scores = engine.scores(board) if engine is not None else None
        counts = book.lookup(position.key, own) if book is not None else None
        matrix = move_features(board, context_of(record, position), groups=spec.groups, engine=scores, book=counts)
        try:
            label = matrix.moves.index(position.move)
        except ValueError:
            continue  # cannot happen for a replayed game: the reader checked every move
        matrices.append(matrix.values)
        labels.append(label)
        keys.append((*record.order, position.ply))
        ratings.append(position.rating)
    return matrices, labels, keys, ratings


def extract_part(
    inputs: Sequence[str], part: int, parts: int, spec: ExtractSpec, book: Book | None, tick: Tick | None = None
) -> Examples:
    """The examples of part `part` of `parts` of the inputs (a plain function: Ray runs it remotely)."""
    records = read_inputs(inputs, part=part, parts=parts, pool=spec.pool, games=spec.games)
    return records_examples(records, spec, book, tick)


def records_examples(
    records: Iterable[GameRecord], spec: ExtractSpec, book: Book | None, tick: Tick | None = None
) -> Examples:
    """The examples of the games among `records` that `spec` selects (its splits and carve), with
    the engine it needs started here and ended before returning; `tick` is told of the positions
    of each game as they are done."""
    width = len(feature_names(spec.groups))
    engine = ShallowEngine(*spec.engine) if spec.engine is not None and "engine" in spec.groups else None
    matrices: list[Matrix] = []
    labels: list[int] = []
    keys: list[tuple[int, ...]] = []
    ratings: list[int | None] = []
    game_ids: list[str] = []
    sources: list[str] = []
    movers: list[str | None] = []
    try:
        for record in records:
            split = record.split
            if split not in spec.splits:
                continue
            if spec.carve != "none" and split == "train" and carved(record.game_id) != (spec.carve == "tune"):
                continue
            found = game_examples(record, spec, book, engine)
            if tick is not None:
                tick(len(found[1]))
            matrices.extend(found[0])
            labels.extend(found[1])
            keys.extend(found[2])
            ratings.extend(found[3])
            game_ids.extend([record.game_id] * len(found[1]))
            sources.extend([record.source] * len(found[1]))
            movers.extend(record.mover_name(key[-1]) for key in found[2])
    finally:
        if engine is not None:
            engine.close()
    if not matrices:
        return Examples.empty(width)
    return Examples(
        np.concatenate(matrices),
        np.asarray([len(m) for m in matrices], np.int64),
        np.asarray(labels, np.int64),
        np.asarray([math.nan if r is None else float(r) for r in ratings]),
        np.asarray(keys, np.int64),
        game_ids,
        sources,
        movers,
    )


def merge(parts: Sequence[Examples], width: int) -> Examples:
    """The parts' examples in input order (by game order key and ply)."""
    parts = [p for p in parts if p.positions]
    if not parts:
        return Examples.empty(width)
    orders = np.concatenate([p.orders for p in parts])
    sizes = np.concatenate([p.sizes for p in parts])
    values = np.concatenate([p.values for p in parts])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    permutation = np.lexsort(orders.T[::-1])
    new_sizes = sizes[permutation]
    # Row index of every row in the new order: each chosen position's rows, in turn.
    owner_starts = np.repeat(starts[permutation], new_sizes)
    within = np.arange(int(new_sizes.sum())) - np.repeat(np.cumsum(new_sizes) - new_sizes, new_sizes)
    game_ids = [g for p in parts for g in p.game_ids]
    sources = [s for p in parts for s in p.sources]
    movers = [m for p in parts for m in p.movers]
    order = permutation.tolist()
    return Examples(
        values[owner_starts + within],
        new_sizes,
        np.concatenate([p.labels for p in parts])[permutation],
        np.concatenate([p.ratings for p in parts])[permutation],
        orders[permutation],
        [game_ids[i] for i in order],
        [sources[i] for i in order],
        [movers[i] for i in order],
    )


def extract(
    inputs: Sequence[str], spec: ExtractSpec, book: Book | None, workers: int = 1, progress: Progress | None = None
) -> Examples:
    """Examples of every input game in `spec.splits`, on `workers` processes (Ray when > 1), the
    positions shown on `progress` as they are done."""
    width = len(feature_names(spec.groups))
    parts = workers * PARTS_PER_WORKER if workers > 1 else 1
    calls = [(list(inputs), part, parts, spec) for part in range(parts)]
    if progress is not None:
        progress.start("extracted", "positions")
    results = fan_out(extract_part, calls, workers=workers, shared=(book,), progress=progress)
    if progress is not None:
        progress.finish_step()
    return merge(results, width)


def save_examples(examples: Examples, path: Path) -> None:
    """Examples as .npz (arrays) beside a .json (game ids, sources, movers)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as stream:  # never through a link, never half a file
        np.savez(
            stream,
            values=examples.values,
            sizes=examples.sizes,
            labels=examples.labels,
            ratings=examples.ratings,
            orders=examples.orders,
        )
    ids = {"game_ids": examples.game_ids, "sources": examples.sources, "movers": examples.movers}
    write_atomic(path.with_suffix(".json"), json.dumps(ids))


def load_examples(path: Path) -> Examples:
    arrays = np.load(path)
    meta = json.loads(path.with_suffix(".json").read_text())
    return Examples(
        arrays["values"],
        arrays["sizes"],
        arrays["labels"],
        arrays["ratings"],
        arrays["orders"],
        meta["game_ids"],
        meta["sources"],
        meta["movers"],
    )
