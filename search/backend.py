"""The backend interface: whatever values the responses, DiffiMax records come out the same.

A backend analyses one chess position for a setter and returns a `DiffiMaxResult` whose
analyses and trap records are built by `search.analysis.classify_responses`. The native backend
below searches with this package; a UCI engine backend (in `pipeline`, since it talks to a
process) implements the same protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import chess

from search.alphabeta import Budget
from search.chessgame import ChessGame
from search.diffimax import DiffiMaxResult, DiffiMaxSearch
from search.settings import DiffiMaxSettings
from search.ttable import DEFAULT_CAPACITY, TranspositionTable


class Backend(Protocol):
    name: str

    def analyse(self, board: chess.Board, setter: chess.Color, settings: DiffiMaxSettings) -> DiffiMaxResult:
        """DiffiMax at `board` (with its move stack, for repetitions) for `setter`."""

    def describe(self) -> dict[str, Any]:
        """Name, version and limits, for reports and the dataset manifest."""

    def new_unit(self) -> None:
        """Forget state carried over from earlier positions (table, hash) before an independent
        unit of work, so that its results do not depend on what ran before."""

    def close(self) -> None: ...


@dataclass
class NativeBackend:
    """The embedded engine: alpha-beta + quiescence + PeSTO on python-chess.

    One instance keeps its transposition table across positions (the pipeline gives each
    worker its own); entries are stored from White's point of view, so roots with either
    setter share them.
    """

    table_capacity: int = DEFAULT_CAPACITY
    node_budget: int | None = None
    exact_root: bool = False  # exact values for every root response (explain), not just bounds
    name: str = "native"
    tt: TranspositionTable = field(init=False)

    def __post_init__(self) -> None:
        self.tt = TranspositionTable(self.table_capacity)

    def analyse(self, board: chess.Board, setter: chess.Color, settings: DiffiMaxSettings) -> DiffiMaxResult:
        game = ChessGame(board, setter)
        budget = Budget(nodes=self.node_budget) if self.node_budget else None
        result = DiffiMaxSearch(game, settings, tt=self.tt, budget=budget, exact_root=self.exact_root).run()
        result.extra["qnodes"] = game.qnodes
        return result

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": "diffimax-native",
            "table_capacity": self.table_capacity,
            "node_budget": self.node_budget,
        }

    def new_unit(self) -> None:
        self.tt.clear()

    def close(self) -> None:
        self.tt.clear()
