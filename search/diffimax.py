"""DiffiMax: minimax plus response analysis at opponent nodes, over two native oracles.

The walk of the analysed node set is `search.traversal.walk`; this module supplies two of the
oracles it runs on. `reference_diffimax` is the exhaustive definition: every value is computed by
plain minimax and the rules of `docs/diffimax.md` are applied literally. `DiffiMaxSearch` is the
optimised search: alpha-beta with windows, null-window tests and a transposition table with
bound flags. Both must return the same root value and the same set of trap records
(`TrapRecord.identity`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic

from search.alphabeta import Budget, Searcher, SearchStats
from search.analysis import ResponseAnalysis, ResponseValue, TrapRecord
from search.game import Game, Move
from search.settings import DiffiMaxSettings
from search.traversal import Walk, canonical_best, walk
from search.ttable import TranspositionTable
from search.values import INFINITY, Value


@dataclass
class DiffiMaxResult:
    value: Value  # exact depth-limited minimax value of the root (setter's view)
    best_move: str | None  # the side to move's minimax move (canonical tie-break)
    root_analysis: ResponseAnalysis | None  # when the root is an analysed opponent node
    analyses: list[ResponseAnalysis]  # every analysed opponent node, root first
    traps: list[TrapRecord]
    stats: SearchStats
    settings: DiffiMaxSettings
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, found: Walk, root_is_opponent: bool, stats: SearchStats, settings: DiffiMaxSettings, **extra: Any
    ) -> DiffiMaxResult:
        """The result of a walk; `root_is_opponent` says whether the root was an opponent node."""
        analyses = found.analyses
        root_analysis = analyses[0] if analyses and root_is_opponent and analyses[0].path == () else None
        return cls(found.value, found.best_move, root_analysis, analyses, found.traps, stats, settings, dict(extra))

    def trap_identities(self) -> set[tuple[Any, ...]]:
        return {record.identity() for record in self.traps}


def response_value(
    game: Game[Move], move: Move, value: Value, exact: bool, line: tuple[str, ...] = ()
) -> ResponseValue:
    return ResponseValue(
        move=game.move_name(move),
        tiebreak=game.tiebreak(move),
        value=value,
        exact=exact,
        gives_check=game.gives_check(move),
        is_capture=game.is_capture(move),
        line=line,
    )


# -- the exhaustive reference ---------------------------------------------------------------


class ReferenceOracle(Generic[Move]):
    """Plain minimax values everywhere: no pruning, no table, every response exact."""

    def __init__(self, game: Game[Move], settings: DiffiMaxSettings) -> None:
        self.game = game
        self.settings = settings
        self.searcher: Searcher[Move] = Searcher(game, ordering="natural")

    def value(self, depth: int) -> Value:
        return self.searcher.minimax(depth)

    def child_values(self, depth: int) -> dict[Move, Value]:
        game = self.game
        values = {}
        for move in game.legal_moves():
            game.push(move)
            values[move] = self.searcher.minimax(depth - 1)
            game.pop()
        return values

    def canonical_line(self, depth: int) -> tuple[str, ...]:
        """The PV at the current node: always the first best move by tie-break."""
        game = self.game
        line: list[Any] = []
        while depth > 0 and game.terminal_value() is None:
            values = self.child_values(depth)
            move = canonical_best(game, values, game.setter_to_move())
            line.append(move)
            game.push(move)
            depth -= 1
        for _ in line:
            game.pop()
        return tuple(game.move_name(move) for move in line)

    def setter_children(self, depth: int, value: Value | None, margin: Value | None) -> Iterator[tuple[Move, Value]]:
        values = self.child_values(depth)
        best = max(values.values())
        for move in sorted(values, key=self.game.tiebreak):
            if margin is None or values[move] >= best - margin:
                yield move, values[move]

    def responses(self, depth: int, value: Value | None, whole: bool) -> list[ResponseValue]:
        game = self.game
        values = self.child_values(depth)
        v1 = min(values.values())
        settings = self.settings
        responses = []
        for move, v in values.items():
            line: tuple[str, ...] = ()
            if settings.trap_cp <= v - v1 <= settings.reasonable_cp:
                game.push(move)
                line = self.canonical_line(depth - 1)
                game.pop()
            responses.append(response_value(game, move, v, True, line))
        return responses


def reference_diffimax(game: Game[Any], settings: DiffiMaxSettings) -> DiffiMaxResult:
    """DiffiMax by definition: plain minimax values everywhere, no pruning, no table."""
    oracle: ReferenceOracle[Any] = ReferenceOracle(game, settings)
    root_is_opponent = not game.setter_to_move()
    found = walk(oracle, settings)
    return DiffiMaxResult.of(found, root_is_opponent, oracle.searcher.stats, settings)


# -- the optimised search -------------------------------------------------------------------


class DiffiMaxSearch(Generic[Move]):
    """Alpha-beta based DiffiMax: the walk over an oracle that proves only what each decision
    needs. Owns a `Searcher` (and so its table) for its whole life, so one instance can analyse
    many positions with a warm table (the pipeline's workers do)."""

    def __init__(
        self,
        game: Game[Move],
        settings: DiffiMaxSettings,
        *,
        tt: TranspositionTable | None = None,
        ordering: str = "heuristic",
        budget: Budget | None = None,
        warm_up: bool = True,
        exact_root: bool = False,
    ) -> None:
        self.game = game
        self.settings = settings
        self.searcher: Searcher[Move] = Searcher(game, tt=tt, ordering=ordering, budget=budget)  # type: ignore[arg-type]
        self.warm_up = warm_up and tt is not None
        # Explain shows the whole response distribution at the root, so it asks for exact values
        # there even beyond v1 + R, where the decision itself needs only a bound.
        self.exact_root = exact_root

    def run(self) -> DiffiMaxResult:
        game, settings = self.game, self.settings
        start = SearchStats(**self.searcher.stats.as_dict())
        if self.warm_up:
            # Shallower iterations leave best moves in the table for ordering (never values:
            # table cutoffs need equal depth).
            for depth in range(1, settings.depth):
                self.searcher.alphabeta(depth)
        root_is_opponent = not game.setter_to_move()
        found = walk(self, settings, exact_root=self.exact_root)
        stats = self.searcher.stats
        used = SearchStats(
            stats.nodes - start.nodes,
            stats.leaves - start.leaves,
            stats.cutoffs - start.cutoffs,
            stats.tt_cutoffs - start.tt_cutoffs,
        )
        return DiffiMaxResult.of(found, root_is_opponent, used, settings)

    # -- the oracle (search.traversal.Oracle) --------------------------------------------------

    def value(self, depth: int) -> Value:
        return self.searcher.alphabeta(depth, -INFINITY, INFINITY)

    def _search_child(self, move: Move, depth: int, alpha: Value, beta: Value) -> Value:
        game = self.game
        game.push(move)
        result = self.searcher.alphabeta(depth, alpha, beta)
        game.pop()
        return result

    def setter_children(self, depth: int, value: Value | None, margin: Value | None) -> Iterator[tuple[Move, Value]]:
        """One window search per child decides the margin and, inside it, gives the exact value."""
        game = self.game
        if value is None:
            value = self.value(depth)
        threshold = -INFINITY if margin is None else value - margin
        for move in sorted(game.legal_moves(), key=game.tiebreak):
            result = self._search_child(move, depth - 1, threshold - 1, INFINITY)
            if result >= threshold:
                yield move, result

    def responses(self, depth: int, value: Value | None, whole: bool) -> list[ResponseValue]:
        """Every response with as little search as its classification needs.

        With T > 0, a null-window scout at v1 + T first: a reply that stays below it can be
        neither a trap nor unreasonable, and only an upper bound is kept. Replies at or above it
        get a window search that is exact inside [v1 + T, v1 + R] and a proof of `> v1 + R`
        beyond. Ties at v1 (the best response is the first by UCI among them) are settled by a
        null-window test at v1 where a bound leaves them open.
        """
        game, settings = self.game, self.settings
        v1 = self.value(depth) if value is None else value
        trap_floor = v1 + settings.trap_cp
        ceiling = v1 + settings.reasonable_cp
        measured: dict[Move, tuple[Value, bool, tuple[str, ...]]] = {}
        for move in game.legal_moves():
            if whole or settings.trap_cp == 0:
                top = INFINITY if whole else ceiling + 1
                result = self._search_child(move, depth - 1, v1 - 1, top)
                exact = result < top
            else:
                result = self._search_child(move, depth - 1, trap_floor - 1, trap_floor)
                exact = result == v1  # below the floor only a bound, unless it is v1 itself
                if result >= trap_floor:
                    result = self._search_child(move, depth - 1, trap_floor - 1, ceiling + 1)
                    exact = result <= ceiling
            # A result below v1 would mean a reply better than the node's value: impossible.
            assert result >= v1, "window search contradicts the node's exact value"
            line: tuple[str, ...] = ()
            if exact and trap_floor <= result <= ceiling:
                game.push(move)
                line = self.searcher.principal_variation(depth - 1)
                game.pop()
            measured[move] = (result, exact, line)
        self._settle_ties(depth, v1, measured)
        return [response_value(game, move, *entry) for move, entry in measured.items()]

    def _settle_ties(self, depth: int, v1: Value, measured: dict[Any, tuple[Value, bool, tuple[str, ...]]]) -> None:
        """Make sure the first move by tie-break among those worth exactly v1 is known exactly."""
        game = self.game
        known = [move for move, (value, exact, _) in measured.items() if exact and value == v1]
        first_known = min((game.tiebreak(m) for m in known), default=None)
        open_moves = sorted(
            (m for m, (value, exact, _) in measured.items() if not exact and value < v1 + self.settings.trap_cp),
            key=game.tiebreak,
        )
        for move in open_moves:
            if first_known is not None and game.tiebreak(move) > first_known:
                break
            if self._search_child(move, depth - 1, v1, v1 + 1) <= v1:
                measured[move] = (v1, True, measured[move][2])
                break
