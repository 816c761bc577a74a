"""Minimax, alpha-beta and iterative deepening over any `Game`.

Minimax form (MAX = setter, MIN = opponent), values from the setter's point of view.

Contract of `Searcher.alphabeta(depth, alpha, beta)` (fail-soft, alpha < beta):
  result <= alpha  ->  true value <= result   (an upper bound only)
  result >= beta   ->  true value >= result   (a lower bound only)
  otherwise        ->  result is the exact depth-limited minimax value.
Only a full-window search ((-INFINITY, INFINITY)) is guaranteed to return a value.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal

from search.game import Game, Move
from search.ttable import Bound, TranspositionTable, probe_cutoff
from search.values import INFINITY, Value

Ordering = Literal["natural", "heuristic"]

# Nodes between two looks at the clock when a time budget is set.
CLOCK_CHECK_INTERVAL = 256
# History scores are halved when any exceeds this, so old evidence fades.
HISTORY_CAP = 1 << 20


class SearchAborted(RuntimeError):
    """The node or time budget ran out in the middle of a search."""


@dataclass
class SearchStats:
    nodes: int = 0  # nodes entered, frontier included
    leaves: int = 0  # terminal or depth-0 nodes evaluated
    cutoffs: int = 0  # sibling moves skipped by beta cutoffs (the seed's teaching metric)
    tt_cutoffs: int = 0  # searches answered by the transposition table

    def as_dict(self) -> dict[str, int]:
        return {
            "nodes": self.nodes,
            "leaves": self.leaves,
            "cutoffs": self.cutoffs,
            "tt_cutoffs": self.tt_cutoffs,
        }


@dataclass(frozen=True)
class SearchResult:
    depth: int
    value: Value  # exact
    best_move: str | None  # None at a terminal or depth-0 root
    pv: tuple[str, ...]


@dataclass
class Budget:
    """Stop a search after `nodes` nodes or `seconds` of wall time, whichever comes first."""

    nodes: int | None = None
    seconds: float | None = None
    clock: Callable[[], float] = time.monotonic


@dataclass
class Searcher(Generic[Move]):
    """Owns the search state: transposition table, killer and history tables, counters."""

    game: Game[Move]
    tt: TranspositionTable | None = None
    ordering: Ordering = "heuristic"
    stats: SearchStats = field(default_factory=SearchStats)
    budget: Budget | None = None

    def __post_init__(self) -> None:
        self._killers: dict[int, list[Move]] = {}
        self._history: dict[Hashable, int] = {}
        self._pv: dict[int, list[Move]] = {}
        self._node_limit: int | None = None
        self._deadline: float | None = None
        self.set_budget(self.budget)

    def set_budget(self, budget: Budget | None) -> None:
        self.budget = budget
        self._node_limit = None
        self._deadline = None
        if budget is not None:
            if budget.nodes is not None:
                self._node_limit = self.stats.nodes + budget.nodes
            if budget.seconds is not None:
                self._deadline = budget.clock() + budget.seconds

    # -- exhaustive minimax --------------------------------------------------------------

    def minimax(self, depth: int) -> Value:
        """The exact depth-limited minimax value; visits every node (no pruning, no table)."""
        self._count_node()
        game = self.game
        terminal = game.terminal_value()
        if terminal is not None:
            self.stats.leaves += 1
            return terminal
        if depth == 0:
            self.stats.leaves += 1
            return game.evaluate(-INFINITY, INFINITY)
        maximizing = game.setter_to_move()
        best = -INFINITY if maximizing else INFINITY
        for move in game.legal_moves():
            game.push(move)
            value = self.minimax(depth - 1)
            game.pop()
            best = max(best, value) if maximizing else min(best, value)
        return best

    # -- alpha-beta ---------------------------------------------------------------------

    def alphabeta(self, depth: int, alpha: Value = -INFINITY, beta: Value = INFINITY) -> Value:
        """Fail-soft alpha-beta; see the module docstring for what the result means."""
        self._count_node()
        game = self.game
        ply = game.ply
        self._pv[ply] = []
        terminal = game.terminal_value()
        if terminal is not None:
            self.stats.leaves += 1
            return terminal
        if depth == 0:
            self.stats.leaves += 1
            return game.evaluate(alpha, beta)

        tt = self.tt
        key = game.key() if tt is not None else None
        tt_move: Move | None = None
        if tt is not None:
            entry = tt.get(key)
            if entry is not None:
                tt_move = entry.move
                hit = probe_cutoff(entry, depth, alpha, beta, ply, game.perspective)
                if hit is not None:
                    self.stats.tt_cutoffs += 1
                    return hit

        maximizing = game.setter_to_move()
        alpha0, beta0 = alpha, beta
        best = -INFINITY if maximizing else INFINITY
        best_move: Move | None = None
        moves = self.ordered_moves(game.legal_moves(), tt_move, ply)
        for index, move in enumerate(moves):
            game.push(move)
            value = self.alphabeta(depth - 1, alpha, beta)
            game.pop()
            if (value > best) if maximizing else (value < best):
                best, best_move = value, move
                if alpha < value < beta:
                    self._pv[ply] = [move, *self._pv.get(ply + 1, [])]
                if maximizing:
                    alpha = max(alpha, value)
                else:
                    beta = min(beta, value)
            if alpha >= beta:
                self.stats.cutoffs += len(moves) - index - 1
                self._reward(move, depth, ply)
                break

        if tt is not None:
            bound = Bound.UPPER if best <= alpha0 else Bound.LOWER if best >= beta0 else Bound.EXACT
            tt.store(key, depth, best, bound, best_move, ply, game.perspective)
        return best

    def search(self, depth: int) -> SearchResult:
        """Full-window search of the root: the exact value, the best move and the PV.

        Ties between equally good root moves go to the first in the search order; DiffiMax
        breaks them canonically (by UCI) where its records depend on it.
        """
        value = self.alphabeta(depth, -INFINITY, INFINITY)
        pv = self.principal_variation(depth)
        return SearchResult(depth, value, pv[0] if pv else None, pv)

    def iterative_deepening(self, max_depth: int) -> Iterator[SearchResult]:
        """Yield the result of each completed depth 1..max_depth (anytime search).

        Stops early, without yielding the interrupted depth, when the budget runs out.
        """
        for depth in range(1, max_depth + 1):
            try:
                result = self.search(depth)
            except SearchAborted:
                return
            yield result

    def deepest(self, max_depth: int) -> SearchResult | None:
        """The last completed depth of iterative deepening (None if not even depth 1 finished)."""
        results = list(self.iterative_deepening(max_depth))
        return results[-1] if results else None

    # -- principal variation ------------------------------------------------------------

    def principal_variation(self, depth: int) -> tuple[str, ...]:
        """The PV of the last exact search at the current node, completed from the table."""
        game = self.game
        line = list(self._pv.get(game.ply, []))
        pushed = 0
        for move in line:
            game.push(move)
            pushed += 1
        # Extend a PV cut short by a table hit along stored moves, as far as they stay legal.
        seen: set[Hashable] = set()
        while self.tt is not None and pushed < depth and game.terminal_value() is None:
            key = game.key()
            entry = self.tt.get(key)
            if entry is None or entry.move is None or key in seen or entry.move not in game.legal_moves():
                break
            seen.add(key)
            line.append(entry.move)
            game.push(entry.move)
            pushed += 1
        for _ in range(pushed):
            game.pop()
        names = [game.move_name(move) for move in line]
        return tuple(names)

    # -- move ordering ------------------------------------------------------------------

    def ordered_moves(self, moves: Sequence[Move], tt_move: Move | None, ply: int) -> Sequence[Move]:
        """TT move first, then captures by MVV-LVA, then killers, then the rest by history."""
        if self.ordering == "natural":
            return moves
        game = self.game
        killers = self._killers.get(ply, ())
        history = self._history

        def priority(move: Move) -> int:
            if move == tt_move:
                return 1 << 40
            capture = game.capture_order(move)
            if capture:
                return (1 << 30) + capture
            if move in killers:
                return (1 << 29) - killers.index(move)
            return history.get(move, 0)

        return sorted(moves, key=priority, reverse=True)

    def _reward(self, move: Move, depth: int, ply: int) -> None:
        if self.ordering == "natural" or self.game.capture_order(move):
            return
        killers = self._killers.setdefault(ply, [])
        if move not in killers:
            killers.insert(0, move)
            del killers[2:]
        score = self._history.get(move, 0) + depth * depth
        self._history[move] = score
        if score > HISTORY_CAP:
            self._history = {m: s // 2 for m, s in self._history.items()}

    def _count_node(self) -> None:
        stats = self.stats
        stats.nodes += 1
        if self._node_limit is not None and stats.nodes > self._node_limit:
            raise SearchAborted(f"node budget of {self.budget.nodes if self.budget else 0} exhausted")
        if self._deadline is not None and stats.nodes % CLOCK_CHECK_INTERVAL == 0:
            assert self.budget is not None
            if self.budget.clock() > self._deadline:
                raise SearchAborted(f"time budget of {self.budget.seconds} s exhausted")


def minimax_decision(game: Game[Any], depth: int) -> tuple[Value, str | None, SearchStats]:
    """Exhaustive minimax at the root: value, the first best move in natural order, counts."""
    searcher: Searcher[Any] = Searcher(game, ordering="natural")
    if depth == 0 or game.terminal_value() is not None:
        return searcher.minimax(depth), None, searcher.stats
    searcher.stats.nodes += 1  # the root, expanded here rather than in minimax()
    maximizing = game.setter_to_move()
    best_value: Value | None = None
    best_move: str | None = None
    for move in game.legal_moves():
        game.push(move)
        value = searcher.minimax(depth - 1)
        game.pop()
        if best_value is None or (value > best_value if maximizing else value < best_value):
            best_value, best_move = value, game.move_name(move)
    assert best_value is not None
    return best_value, best_move, searcher.stats
