"""The games the human-move model learns from and is measured on: PGN files or a mined dataset.

Both kinds of input become `GameRecord`s: a start position, the moves after it, and for each
position that has a move after it the mover's rating and clock. The project's PGN reader is used
in ONE place, `pgn_games`; a mined dataset (`diffimax mine --out`) is read in ONE place,
`dataset_games`. Either can be cut into `parts` by game (for parallel workers): part i gets the
shards (PGN) or the game ids (dataset) whose index or hash falls to it, and every game lands in
exactly one part.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import chess

from pipeline.common.files import file_sha256, files_sha256
from pipeline.common.splits import Split, file_name, split_of
from pipeline.common.storage import is_object_url
from pipeline.dataset.duck import is_dataset
from pipeline.dataset.objects import dataset_path
from pipeline.dataset.store import DatasetReader
from pipeline.human.context import Pool, pool_of
from pipeline.ingest.sources import Shard
from search.errors import DiffimaxError

# Sources are read in shards of this many games (the unit of parallel work for compressed files).
SHARD_GAMES: Final = 1000
# Uncompressed PGN files are cut in byte ranges of this size: small enough that a file of a few
# thousand games (chesscom_mixed_1187.pgn, 850 KB) is dealt to several workers, not one.
SHARD_BYTES: Final = 256 << 10
# Zobrist keys are kept unsigned (a dataset stores them as signed 64-bit).
KEY_MASK: Final = (1 << 64) - 1
# Seed of the game sample (`GameSample`), apart from the split's and the position sample's.
GAME_SAMPLE_SEED: Final = 104729


class DataError(DiffimaxError, ValueError):
    """An input that is neither PGN nor a mined dataset, or that cannot be read."""


@dataclass(frozen=True, slots=True)
class PositionRecord:
    """One position of a game at which the mover made a move."""

    ply: int
    """Half-moves played in the game before this position."""
    move: str
    """The move the human played, in UCI."""
    rating: int | None
    """The mover's rating."""
    clock_seconds: float | None
    """The mover's clock when deciding."""
    key: int
    """Polyglot Zobrist key of the position (unsigned), as `chess.polyglot.zobrist_hash` gives."""


@dataclass(frozen=True, slots=True)
class GameRecord:
    """A game (or, from a dataset, a run of consecutive positions of one) with its players."""

    order: tuple[int, int, int, int]
    """(input group, source index, shard or first-row index, game index): sorts the games of a
    run of inputs in input order, whatever part read them."""
    source: str
    """File name of the source (what the split is a function of), or the dataset's source column."""
    game_id: str
    white: str | None
    black: str | None
    base_seconds: int | None
    increment_seconds: int | None
    start_fen: str | None
    """The position before `moves`; None for the standard start."""
    start_ply: int
    """Half-moves played in the game before `start_fen`."""
    moves: tuple[str, ...]
    """UCI moves from the start position on."""
    positions: tuple[PositionRecord, ...]
    """The positions with a move after them, by ply (within start_ply .. start_ply + len(moves) - 1)."""
    pool: Pool | None = None
    """The rating pool of the players' ratings (`pipeline.human.context.pool_of`)."""
    byte_offset: int | None = None
    """Where the game starts in its source (keys the split of a game without an id of its own)."""

    @property
    def split(self) -> Split:
        return split_of(self.source, self.game_id, self.byte_offset)

    def mover_name(self, ply: int) -> str | None:
        """The name of the player to move at `ply` (White at even plies of a standard start)."""
        board_turn_white = self._white_to_move_at(ply)
        return self.white if board_turn_white else self.black

    def opponent_rating(self, ply: int) -> int | None:
        """The rating of the player not to move at `ply`: the mover's at the ply before or after
        (None where neither is recorded)."""
        first = self.positions[0].ply if self.positions else 0
        for other in (ply + 1, ply - 1):
            index = other - first
            if 0 <= index < len(self.positions) and self.positions[index].ply == other:
                return self.positions[index].rating
        return None

    def _white_to_move_at(self, ply: int) -> bool:
        first_white = True if self.start_fen is None else self.start_fen.split()[1] == "w"
        return first_white == ((ply - self.start_ply) % 2 == 0)

    def boards(self) -> Iterator[tuple[PositionRecord, chess.Board]]:
        """Each position with a board at it (its stack holds the moves since the start). The SAME
        board is yielded each time, mutated in place: copy it to keep it."""
        board = chess.Board(self.start_fen) if self.start_fen is not None else chess.Board()
        done = 0
        for position in self.positions:
            while self.start_ply + done < position.ply:
                board.push(chess.Move.from_uci(self.moves[done]))
                done += 1
            yield position, board


@dataclass
class ReadCounts:
    """Games the reader did not hand on (for the training summary): every game read is a record,
    a failure or a filtered game."""

    failed: int = 0
    """Games that could not be parsed or replayed."""
    filtered: int = 0
    """Games left out by the reader's filter (variants)."""


@dataclass(frozen=True)
class GameSample:
    """Which share of each file's games is read at all: chosen by a hash of (seed, game id) on the
    headers, so a game left out costs its headers only (no replay)."""

    rate: float = 1.0
    """The share of every file's games."""
    rates: tuple[tuple[str, float], ...] = ()
    """(file name, share) pairs that replace `rate` for that file."""
    seed: int = GAME_SAMPLE_SEED

    def rate_of(self, source: str) -> float:
        return dict(self.rates).get(file_name(source), self.rate)


def pgn_games(
    inputs: Sequence[str],
    *,
    part: int = 0,
    parts: int = 1,
    counts: ReadCounts | None = None,
    group: int = 0,
    pool: Pool | None = None,
    games: GameSample | None = None,
) -> Iterator[GameRecord]:
    """Standard-chess games of PGN inputs (files, directories, globs) read with the project's reader
    (the only place it is called), in input order; games the reader fails or filters are counted
    in `counts` and skipped. Part `part` of `parts` reads every `parts`-th shard. Each game's
    rating pool is `pool` when given, else what its Site tag names; `games` reads a share only."""
    for number, shard in enumerate(pgn_shards(inputs)):
        if number % parts == part:
            yield from games_of_shard(shard, counts=counts, group=group, pool=pool, games=games)


def pgn_shards(inputs: Sequence[str]) -> Iterator[Shard]:
    """The shards of PGN inputs, in input order (a compressed stream is read as it is cut: one
    shard's bytes at a time); DataError for an input that names no PGN data."""
    from pipeline.ingest.sources import InputError, iter_shards

    try:
        yield from iter_shards(list(inputs), shard_bytes=SHARD_BYTES, shard_games=SHARD_GAMES)
    except InputError as error:
        raise DataError(str(error)) from error


def games_of_shard(
    shard: Shard,
    *,
    counts: ReadCounts | None = None,
    group: int = 0,
    pool: Pool | None = None,
    games: GameSample | None = None,
) -> Iterator[GameRecord]:
    """The standard-chess games of one shard (see `pgn_games`): a unit of work a Ray task can take.
    Games left out by `games` are not counted anywhere."""
    from pipeline.ingest.games import read_games
    from pipeline.ingest.headers import GameFilter
    from pipeline.ingest.outcomes import Failed, Filtered, Selected
    from pipeline.ingest.sources import InputError

    rate = 1.0 if games is None else games.rate_of(shard.source)
    chosen = GameFilter(sample_rate=rate, seed=games.seed) if games is not None and rate < 1.0 else None
    try:
        for outcome in read_games(shard, chosen):
            if chosen is not None and isinstance(outcome, Filtered) and outcome.rule == "sample":
                continue
            if isinstance(outcome, Failed):
                if counts is not None:
                    counts.failed += 1
                continue
            if not isinstance(outcome, Selected):
                if counts is not None:
                    counts.filtered += 1
                continue
            game = outcome.game
            positions = tuple(
                PositionRecord(
                    row["ply"],
                    row["move_uci"],
                    row["mover_rating"],
                    row["clock_seconds"],
                    row["position_key"] & KEY_MASK,
                )
                for row in outcome.positions
            )
            yield GameRecord(
                (group, shard.source_index, shard.index, outcome.game_index),
                file_name(game["source"]),
                game["game_id"],
                game["white"],
                game["black"],
                game["base_seconds"],
                game["increment_seconds"],
                outcome.start_fen,
                0,
                outcome.moves,
                positions,
                pool_of({"Site": game["site"]}, pool),
                game["byte_offset"],
            )
    except InputError as error:
        raise DataError(str(error)) from error


def part_of(game_id: str, parts: int) -> int:
    """Which of `parts` parts a dataset game belongs to (a stable hash of its id)."""
    digest = hashlib.blake2b(game_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % parts


def dataset_games(
    directory: str, group: int = 0, *, part: int = 0, parts: int = 1, pool: Pool | None = None
) -> Iterator[GameRecord]:
    """The positions of a mined dataset as games: one record per run of consecutive plies of a game
    (a dataset may hold a ply window only), boards rebuilt from the run's first FEN; the pool is
    `pool` when given, else what the game's site names."""
    from pipeline.dataset.duck import connect
    from pipeline.dataset.integrity import DatasetError

    try:
        connection = connect(directory)
    except DatasetError as error:
        raise DataError(str(error)) from error
    rows = connection.execute(
        """
        select p.game_id, p.ply, p.fen, p.move_uci, p.mover_rating, p.clock_seconds, p.position_key,
               g.source, g.white, g.black, g.base_seconds, g.increment_seconds, g.site,
               g.byte_offset
        from positions p join games g using (game_id)
        order by g.source, p.game_id, p.ply
        """
    ).fetchall()
    run: list[tuple[object, ...]] = []
    run_start = 0  # index of the run's first row among all rows: the same in every part

    def flush() -> GameRecord | None:
        if not run:
            return None
        first = run[0]
        positions = tuple(
            PositionRecord(int(str(row[1])), str(row[3]), _int(row[4]), _float(row[5]), int(str(row[6])) & KEY_MASK)
            for row in run
        )
        record = GameRecord(
            (group, 0, run_start, 0),
            file_name(str(first[7])),
            str(first[0]),
            _str(first[8]),
            _str(first[9]),
            _int(first[10]),
            _int(first[11]),
            str(first[2]),
            int(str(first[1])),
            tuple(p.move for p in positions),
            positions,
            pool_of({"Site": _str(first[12])}, pool),
            _int(first[13]),
        )
        return record

    for number, row in enumerate(rows):
        game_id, ply = str(row[0]), int(str(row[1]))
        if part_of(game_id, parts) != part:
            continue
        if run and (str(run[-1][0]) != game_id or int(str(run[-1][1])) + 1 != ply):
            record = flush()
            run = []
            if record is not None:
                yield record
        if not run:
            run_start = number
        run.append(row)
    record = flush()
    if record is not None:
        yield record


def _int(value: object) -> int | None:
    return None if value is None else int(str(value))


def _float(value: object) -> float | None:
    return None if value is None else float(str(value))


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def read_inputs(
    inputs: Sequence[str],
    *,
    part: int = 0,
    parts: int = 1,
    counts: ReadCounts | None = None,
    pool: Pool | None = None,
    games: GameSample | None = None,
) -> Iterator[GameRecord]:
    """Games of every input, in order: a mined dataset directory, or PGN (files, directories, globs).
    Consecutive PGN inputs are read together (one reader pass). `pool` overrides every game's
    rating pool (else each game's Site tag says). `games` reads a share of the PGN games only (a
    mined dataset is read whole)."""
    if not inputs:
        raise DataError("no input given: expected PGN files or a mined dataset directory")
    pending: list[str] = []
    for index, item in enumerate(inputs):
        if is_dataset(dataset_path(item)):
            if pending:
                yield from pgn_games(
                    pending, part=part, parts=parts, counts=counts, group=index - 1, pool=pool, games=games
                )
                pending = []
            yield from dataset_games(item, index, part=part, parts=parts, pool=pool)
        elif os.path.isdir(item) and (Path(item) / "shards").is_dir():
            raise DataError(f"no diffimax dataset in {item!r} (expected shards/*/games.parquet)")
        else:
            pending.append(item)
    if pending:
        yield from pgn_games(pending, part=part, parts=parts, counts=counts, group=len(inputs), pool=pool, games=games)


def input_digest(inputs: Sequence[str]) -> list[dict[str, object]]:
    """Name, size and SHA-256 of every file behind the inputs (a dataset's Parquet files are
    digested together), in input order: what the model file records as its training data."""
    from pipeline.ingest.sources import InputError, expand_inputs

    described: list[dict[str, object]] = []
    pending: list[str] = []

    def add_pgn() -> None:
        try:
            paths = expand_inputs(pending) if pending else []
        except InputError as error:
            raise DataError(str(error)) from error
        for path in paths:
            described.append({"name": file_name(path), "bytes": os.path.getsize(path), "sha256": file_sha256(path)})
        pending.clear()

    for item in inputs:
        if is_dataset(dataset_path(item)) and is_object_url(item):  # its shards' recorded digests (not read again)
            add_pgn()
            records = {shard: info.get("files") or {} for shard, info in DatasetReader(item).shard_info().items()}
            size = sum(int(record.get("bytes", 0)) for files in records.values() for record in files.values())
            digest = hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()
            described.append({"name": item, "kind": "dataset", "bytes": size, "sha256": digest})
        elif is_dataset(dataset_path(item)):
            add_pgn()
            files = sorted(str(path) for path in Path(item).glob("shards/*/*.parquet"))
            size = sum(os.path.getsize(path) for path in files)
            described.append({"name": Path(item).name, "kind": "dataset", "bytes": size, "sha256": files_sha256(files)})
        else:
            pending.append(item)
    add_pgn()
    return described
