"""The backend interface: whatever values the responses, DiffiMax records come out the same.

A backend analyses one chess position for a setter and returns a `DiffiMaxResult` whose
analyses and trap records are built by `search.analysis.classify_responses`. The native backend
below searches with this package; a UCI engine backend (in `pipeline`, since it talks to a
process) implements the same protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import chess

from search.alphabeta import Budget, Searcher, SearchStats
from search.analysis import trap_records
from search.chessgame import ChessGame
from search.diffimax import DiffiMaxResult, DiffiMaxSearch
from search.settings import DiffiMaxSettings
from search.ttable import DEFAULT_CAPACITY, TranspositionTable
from search.values import INFINITY, Value

# How hard a reply is searched: a shallow pass over every reply (the trappy judge's evidence and a
# first look), a probe (a cheaper search of the same kind as the full one, for engines that have
# one: it settles the verdicts that lie far from every threshold), the full-depth search the
# verdicts rest on, and deeper still where a class sits near its threshold.
Level = Literal["shallow", "probe", "deep", "deeper"]
# Native engine: plies of the shallow pass (one ply and quiescence: what a hurried look sees).
NATIVE_SHALLOW_PLIES = 1


@dataclass(frozen=True)
class ReplyValues:
    """Replies at a position, each valued by one search at one level (setter's view, exact)."""

    values: dict[str, Value]
    lines: dict[str, tuple[str, ...]]  # the principal variation after each reply
    best: str | None  # the best reply, when the call asked for it (moves=None)
    nodes: int = 0  # search nodes spent


class Backend(Protocol):
    name: str

    @property
    def probes(self) -> bool:
        """Whether the `probe` level is cheaper than `deep` (else judging skips it)."""

    def analyse(self, board: chess.Board, setter: chess.Color, settings: DiffiMaxSettings) -> DiffiMaxResult:
        """DiffiMax at `board` (with its move stack, for repetitions) for `setter`."""

    def describe(self) -> dict[str, Any]:
        """Name, version and limits, for reports and the dataset manifest."""

    def reply_values(
        self,
        board: chess.Board,
        setter: chess.Color,
        settings: DiffiMaxSettings,
        moves: Sequence[str] | None,
        level: Level,
    ) -> ReplyValues:
        """The replies of the side to move at `board`, valued at `level`. With `moves` None: every
        reply at the shallow level; the best reply alone at the deep and deeper levels."""

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
    shallow_plies: int = NATIVE_SHALLOW_PLIES  # the shallow pass of `reply_values`
    name: str = "native"
    # A depth-limited search has no cheaper search of its kind (one ply less is another search).
    probes: bool = False
    tt: TranspositionTable = field(init=False)

    def __post_init__(self) -> None:
        self.tt = TranspositionTable(self.table_capacity)

    def analyse(self, board: chess.Board, setter: chess.Color, settings: DiffiMaxSettings) -> DiffiMaxResult:
        game = ChessGame(board, setter)
        budget = Budget(nodes=self.node_budget) if self.node_budget else None
        result = DiffiMaxSearch(game, settings, tt=self.tt, budget=budget, exact_root=self.exact_root).run()
        result.extra["qnodes"] = game.qnodes
        return result

    def reply_values(
        self,
        board: chess.Board,
        setter: chess.Color,
        settings: DiffiMaxSettings,
        moves: Sequence[str] | None,
        level: Level,
    ) -> ReplyValues:
        """Full-window alpha-beta below each reply: `shallow_plies` for the shallow pass, the
        DiffiMax depth for the deep level, one ply more for the deeper one."""
        plies = {
            "shallow": self.shallow_plies,
            "probe": settings.depth,
            "deep": settings.depth,
            "deeper": settings.depth + 1,
        }[level]
        game = ChessGame(board, setter)
        searcher: Searcher[chess.Move] = Searcher(game, tt=self.tt)
        legal = {move.uci(): move for move in game.legal_moves()}
        if moves is None and level != "shallow":  # the best reply: one search of the node itself
            value = searcher.alphabeta(plies, -INFINITY, INFINITY)
            line = searcher.principal_variation(plies)
            best = line[0] if line else min(legal)
            return ReplyValues({best: value}, {best: line[1:]}, best, searcher.stats.nodes + game.qnodes)
        values, lines = {}, {}
        for name in sorted(legal) if moves is None else moves:
            game.push(legal[name])
            values[name] = searcher.alphabeta(max(0, plies - 1), -INFINITY, INFINITY)
            lines[name] = searcher.principal_variation(max(0, plies - 1))
            game.pop()
        sign = 1 if board.turn != setter else -1  # the side to move minimises the setter's value
        shallow_best = min(values, key=lambda name: (sign * values[name], name)) if moves is None else None
        return ReplyValues(values, lines, shallow_best, searcher.stats.nodes + game.qnodes)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": "diffimax-native",
            "table_capacity": self.table_capacity,
            "node_budget": self.node_budget,
            "shallow_plies": self.shallow_plies,
        }

    def new_unit(self) -> None:
        self.tt.clear()

    def close(self) -> None:
        self.tt.clear()


# Piece values of the material backend, in centipawns.
MATERIAL = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 300, chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0}


def material(board: chess.Board, color: chess.Color) -> Value:
    """`color`'s material minus the other side's, in centipawns."""
    total = 0
    for piece, worth in MATERIAL.items():
        total += worth * (
            chess.popcount(board.pieces_mask(piece, color)) - chess.popcount(board.pieces_mask(piece, not color))
        )
    return total


def material_gain(board: chess.Board, move: chess.Move) -> Value:
    """What `move` changes in the mover's material: the piece it captures and the promotion."""
    captured = chess.PAWN if board.is_en_passant(move) else board.piece_type_at(move.to_square)
    gain = MATERIAL[captured] if captured else 0
    if move.promotion:
        gain += MATERIAL[move.promotion] - MATERIAL[chess.PAWN]
    return gain


@dataclass
class MaterialBackend:
    """A trivial backend: the material count, no search at all (`--engine material`). Every value
    is the material balance after the move in question, whatever the depth, and no rule beyond it
    (a mate counts as nothing). Its verdicts mean little; it is for smoke runs and for measuring
    what the pipeline around an engine costs."""

    name: str = "material"
    probes: bool = False
    # The last position valued, and its values: a judged position asks up to three times.
    _last: tuple[Any, chess.Color, dict[str, Value]] | None = field(default=None, init=False, repr=False)

    def _values(self, board: chess.Board, setter: chess.Color) -> dict[str, Value]:
        key = board._transposition_key()
        if self._last is not None and self._last[0] == key and self._last[1] == setter:
            return self._last[2]
        sign = 1 if board.turn == setter else -1
        base = material(board, board.turn)
        values = {move.uci(): sign * (base + material_gain(board, move)) for move in board.legal_moves}
        self._last = (key, setter, values)
        return values

    def analyse(self, board: chess.Board, setter: chess.Color, settings: DiffiMaxSettings) -> DiffiMaxResult:
        """The root's response analysis on material values (a setter root gets its best move)."""
        from search.analysis import ResponseValue, classify_responses

        values = self._values(board, setter)
        stats_nodes = len(values) + 1
        if not values:
            value = material(board, setter)
            return DiffiMaxResult(value, None, None, [], [], SearchStats(nodes=1), settings)
        if board.turn == setter:
            best = min(values, key=lambda move: (-values[move], move))
            return DiffiMaxResult(values[best], best, None, [], [], SearchStats(nodes=stats_nodes), settings)
        responses = [
            ResponseValue(
                move.uci(), (0, move.uci()), values[move.uci()], True, board.gives_check(move), board.is_capture(move)
            )
            for move in board.legal_moves
        ]
        analysis = classify_responses(
            responses, settings, node=board.fen(), responder="white" if board.turn else "black"
        )
        traps = trap_records(analysis, {})
        return DiffiMaxResult(
            analysis.best_value, analysis.best, analysis, [analysis], traps, SearchStats(nodes=stats_nodes), settings
        )

    def reply_values(
        self,
        board: chess.Board,
        setter: chess.Color,
        settings: DiffiMaxSettings,
        moves: Sequence[str] | None,
        level: Level,
    ) -> ReplyValues:
        values = self._values(board, setter)
        if moves is not None:  # named replies: no best to find (a position asks for them one by one)
            chosen = {move: values[move] for move in moves}
            return ReplyValues(chosen, dict.fromkeys(chosen, ()), None, len(values))
        sign = 1 if board.turn != setter else -1
        best = min(values, key=lambda move: (sign * values[move], move)) if values else None
        if level != "shallow":
            assert best is not None
            return ReplyValues({best: values[best]}, {best: ()}, best, len(values))
        return ReplyValues(values, dict.fromkeys(values, ()), best, len(values))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": "diffimax-material",
            "values": {chess.piece_name(p): v for p, v in MATERIAL.items()},
        }

    def new_unit(self) -> None:
        """Nothing to forget."""

    def close(self) -> None:
        """Nothing to release."""
