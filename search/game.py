"""The small game interface every search in this package runs on.

Two adapters implement it: nested-tuple trees (`search.tree`) and chess (`search.chessgame`).
Values are from the *setter's* point of view; the setter is the MAX player. The interface is
stateful (push/pop) because copying a chess board per node would dominate the search time.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol, TypeVar

from search.values import Value

Move = TypeVar("Move", bound=Hashable)


class Game(Protocol[Move]):
    """A position that can be searched, with the line from the search root pushed on it."""

    @property
    def perspective(self) -> int:
        """+1 or -1: turns a setter value into the transposition table's fixed point of view
        (White's for chess), so one table serves searches for either setter."""

    @property
    def ply(self) -> int:
        """Plies played since the search root (mate scores count from the root)."""

    def setter_to_move(self) -> bool:
        """True at setter (MAX) nodes, False at opponent (MIN) nodes."""

    def legal_moves(self) -> Sequence[Move]:
        """Every legal move here, in the adapter's natural order."""

    def push(self, move: Move) -> None: ...

    def pop(self) -> None: ...

    def terminal_value(self) -> Value | None:
        """The value fixed by the rules (mate, stalemate, a tree leaf, ...) or None."""

    def evaluate(self, alpha: Value, beta: Value) -> Value:
        """Value of a non-terminal frontier node (fail-soft with respect to the window).

        For chess this is a quiescence search: the result is exact inside (alpha, beta), an
        upper bound when <= alpha and a lower bound when >= beta. Trees ignore the window.
        """

    def key(self) -> Hashable:
        """Identifies the position for the transposition table (everything that matters)."""

    def move_name(self, move: Move) -> str:
        """UCI for chess, the child index for trees."""

    def tiebreak(self, move: Move) -> tuple[int, str]:
        """Sort key that breaks ties between equal values (spec: by UCI string)."""

    def gives_check(self, move: Move) -> bool: ...

    def is_capture(self, move: Move) -> bool: ...

    def capture_order(self, move: Move) -> int:
        """MVV-LVA score for ordering; 0 for quiet moves."""

    def describe(self) -> str:
        """The current node for people and records: a FEN for chess, the path for trees."""

    def responder_name(self) -> str:
        """Who moves here, in the domain's words ("white"/"black", "min"/"max")."""
