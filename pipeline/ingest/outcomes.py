"""What a game of a shard becomes when it is read (`pipeline.ingest.games`): a `Selected` game
with its rows, a `Filtered` one with the rule that left it out, or a `Failed` one with its reason
and origin, so that always

    games read = Selected + Filtered + Failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import chess

from pipeline.ingest.headers import DroppedValue, FilterRule, find_board
from pipeline.ingest.rows import ErrorRow, GameRow, PositionRow


@dataclass(frozen=True, slots=True)
class Selected:
    """A game that passed the filters and replayed without error."""

    game: GameRow
    positions: list[PositionRow]
    """The positions inside the ply window that have a move played after them, by ply."""
    moves: tuple[str, ...]
    """Every half-move of the game, in UCI (python-chess's convention for the game's board)."""
    start_fen: str | None
    """FEN of the first position; None for the standard start."""
    chess960: bool = False
    dropped: tuple[DroppedValue, ...] = ()
    """The kind of each value read from the game and dropped (`headers.DroppedValue`: unreadable or
    outside its plausible range), stored as null."""
    latin1: bool = False
    """Its headers were not UTF-8, and were read as Windows-1252 (`headers.decode_text`)."""
    final_clock_seconds: float | None = None
    """The clock of the side to move at the game's last position, as a position row's
    `clock_seconds` (that position has no row: no move follows it)."""

    @property
    def game_index(self) -> int:
        return self.game["game_index"]

    @property
    def byte_offset(self) -> int:
        return self.game["byte_offset"]

    def new_board(self) -> chess.Board:
        """The game's first position, on the board class of its variant."""
        variant = self.game["variant"]
        cls = chess.Board if self.chess960 else find_board(variant)
        return cls(self.start_fen or cls.starting_fen, chess960=self.chess960)

    def boards(self) -> Iterator[tuple[PositionRow, chess.Board]]:
        """Each position row with a board at that position (its move stack holds the game's moves so
        far, for repetition checks). The SAME board object is yielded every time, mutated in place:
        use it before advancing the iterator, or `copy()` it."""
        board = self.new_board()
        ply = 0
        for row in self.positions:
            while ply < row["ply"]:
                board.push(chess.Move.from_uci(self.moves[ply]))
                ply += 1
            yield row, board


@dataclass(frozen=True, slots=True)
class Filtered:
    """A game left out by the filter, before its moves were replayed (its moves are unchecked)."""

    game_id: str
    rule: FilterRule
    reason: str
    game_index: int
    byte_offset: int


@dataclass(frozen=True, slots=True)
class Failed:
    """A game that could not be read; `error.reason` says why and the rest says where."""

    error: ErrorRow

    @property
    def reason(self) -> str:
        return self.error["reason"]


GameOutcome = Selected | Filtered | Failed
