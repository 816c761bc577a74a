"""How often the training games played each move in each position: the model's ``book`` features
and the corpus-frequency baseline.

Positions are keyed by their Polyglot Zobrist key. A `Book` keeps the positions reached at least
`min_games` times (all occurrences count, a repetition within a game too), with the count of every
move played there. While training, a game's own occurrences are taken out of the counts it sees
(`Book.lookup(..., minus=...)`): a training position then sees what a new game would see, the
other games only, and a position that only the game itself reached is not in the book for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

import chess
import chess.polyglot
import numpy as np
import numpy.typing as npt

from pipeline.human.features import BookCounts
from search.errors import DiffimaxError

# Default: a position enters the book when the training games reached it this often.
DEFAULT_MIN_GAMES: Final = 3
# Moves are packed into one integer while counting: from * 64 + to, plus promotion * 4096.
PROMOTION_STEP: Final = 4096

# A game's own occurrences: position key -> moves played there in that game.
OwnCounts = Mapping[int, Counter[str]]


class BookError(DiffimaxError, ValueError):
    """A book in a model file that cannot be read."""


def pack_move(uci: str) -> int:
    move = chess.Move.from_uci(uci)
    return move.from_square * 64 + move.to_square + (move.promotion or 0) * PROMOTION_STEP


def unpack_move(code: int) -> str:
    promotion = code // PROMOTION_STEP
    rest = code % PROMOTION_STEP
    return chess.Move(rest // 64, rest % 64, promotion or None).uci()


@dataclass
class BookBuilder:
    """Collects (position, move) pairs; `build` counts them with numpy (millions of pairs)."""

    keys: list[int] = field(default_factory=list)
    moves: list[int] = field(default_factory=list)

    def add(self, key: int, move: str) -> None:
        self.keys.append(key)
        self.moves.append(pack_move(move))

    def build(self, min_games: int = DEFAULT_MIN_GAMES) -> Book:
        return book_from_pairs(np.asarray(self.keys, np.uint64), np.asarray(self.moves, np.uint64), min_games)


def book_from_pairs(keys: npt.NDArray[np.uint64], moves: npt.NDArray[np.uint64], min_games: int) -> Book:
    """The book of (position key, packed move) pairs: positions reached at least `min_games` times."""
    if min_games < 1:
        raise BookError(f"book min_games must be at least 1, not {min_games}")
    if not len(keys):
        return Book({}, min_games)
    unique_keys, totals = np.unique(keys, return_counts=True)
    kept = set(unique_keys[totals >= min_games].tolist())
    pairs = np.stack([keys, moves], axis=1)
    unique_pairs, counts = np.unique(pairs, axis=0, return_counts=True)
    entries: dict[int, dict[str, int]] = {}
    for (key, move), count in zip(unique_pairs.tolist(), counts.tolist(), strict=True):
        if key in kept:
            entries.setdefault(int(key), {})[unpack_move(int(move))] = int(count)
    return Book({key: (sum(moves.values()), moves) for key, moves in entries.items()}, min_games)


@dataclass(frozen=True)
class Book:
    """Positions (Zobrist key) -> (times reached, moves played there with their counts)."""

    entries: Mapping[int, tuple[int, Mapping[str, int]]]
    """Only positions reached at least `min_games` times."""
    min_games: int
    """How often a position must have been reached to be in the book."""

    def __len__(self) -> int:
        return len(self.entries)

    def lookup(self, key: int, minus: OwnCounts | None = None) -> BookCounts | None:
        """The counts at a position, less a game's own occurrences (`minus`); None when the
        position is not in the book or falls below `min_games` without them."""
        entry = self.entries.get(key)
        if entry is None:
            return None
        games, moves = entry
        own = minus.get(key) if minus is not None else None
        if own:
            games -= sum(own.values())
            if games < self.min_games:
                return None
            moves = {move: count - own.get(move, 0) for move, count in moves.items() if count > own.get(move, 0)}
        return BookCounts(games, moves)

    def counts_at(self, board: chess.Board) -> BookCounts | None:
        return self.lookup(chess.polyglot.zobrist_hash(board))

    def to_json(self) -> dict[str, object]:
        """A compact text form: key (16 hex digits) -> "move:count move:count ..." by count."""
        positions = {
            f"{key:016x}": " ".join(
                f"{move}:{count}" for move, count in sorted(moves.items(), key=lambda item: (-item[1], item[0]))
            )
            for key, (_, moves) in sorted(self.entries.items())
        }
        return {"min_games": self.min_games, "positions": positions}

    @classmethod
    def from_json(cls, data: object) -> Book:
        """The book of a model file's `book` field; BookError names the first bad entry (a key that
        is not 16 hex digits, a move that is not UCI, a count that is not a whole number >= 1)."""
        if not isinstance(data, dict) or not isinstance(data.get("positions"), dict):
            raise BookError("book: expected an object with 'min_games' and 'positions'")
        min_games = data.get("min_games")
        if not isinstance(min_games, int) or min_games < 1:
            raise BookError(f"book: invalid min_games {min_games!r}")
        entries: dict[int, tuple[int, Mapping[str, int]]] = {}
        for key_text, moves_text in data["positions"].items():
            try:
                if len(key_text) != KEY_DIGITS or not isinstance(moves_text, str):
                    raise ValueError(key_text)
                moves = {move: int(count) for move, count in (item.split(":") for item in moves_text.split())}
                if not moves or min(moves.values()) < 1 or not all(map(_is_uci, moves)):
                    raise ValueError(key_text)
                entries[int(key_text, 16)] = (sum(moves.values()), moves)
            except ValueError:
                raise BookError(
                    f"field 'book.positions' has an unreadable entry {key_text[:20]!r}: expected 16 hex digits -> "
                    "'move:count ...' (UCI moves, whole counts >= 1)"
                ) from None
        return cls(entries, min_games)


# Hex digits of a book key (a 64-bit Polyglot key).
KEY_DIGITS: Final = 16
_UCI_SQUARES: Final = frozenset(chess.SQUARE_NAMES)


def _is_uci(move: str) -> bool:
    """A UCI move's shape: two squares and an optional promotion piece (cheap: no Move object)."""
    return (
        len(move) in (4, 5)
        and move[:2] in _UCI_SQUARES
        and move[2:4] in _UCI_SQUARES
        and (len(move) == 4 or move[4] in "nbrq")
    )


def own_counts(pairs: Iterable[tuple[int, str]]) -> dict[int, Counter[str]]:
    """A game's own (position key, move) occurrences, to take out of the book while training on it."""
    own: dict[int, Counter[str]] = {}
    for key, move in pairs:
        own.setdefault(key, Counter())[move] += 1
    return own
