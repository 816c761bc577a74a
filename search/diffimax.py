"""DiffiMax: minimax plus response analysis at opponent nodes, in two implementations.

`reference_diffimax` is the exhaustive definition: every value is computed by plain minimax and
the rules of `docs/diffimax.md` are applied literally. `DiffiMaxSearch` is the optimised search:
alpha-beta with windows, null-window tests and a transposition table with bound flags. Both must
return the same root value and the same set of trap records (`TrapRecord.identity`).

Which nodes are analysed (spec, "The search around it"): the root is visited. At a visited
setter node, the children whose value is within the safety margin S of the node's value are
visited; at a visited opponent node the response analysis is made and the best response and
every trap candidate are visited. With S unbounded (None) every node is visited, which is the
exhaustive semantics. The set depends on values only, never on move order, pruning or caching.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from search.alphabeta import Budget, Searcher, SearchStats
from search.analysis import (
    ResponseAnalysis,
    ResponseValue,
    TrapRecord,
    classify_responses,
    trap_records,
)
from search.game import Game, Move
from search.settings import DiffiMaxSettings
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

    def trap_identities(self) -> set[tuple[Any, ...]]:
        return {record.identity() for record in self.traps}


def _canonical_best(game: Game[Any], values: dict[Any, Value], maximizing: bool) -> Any:
    """The best move by value, ties to the smallest tie-break key (UCI string for chess)."""
    sign = -1 if maximizing else 1
    return min(values, key=lambda move: (sign * values[move], game.tiebreak(move)))


def _response_value(
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


def reference_diffimax(game: Game[Any], settings: DiffiMaxSettings) -> DiffiMaxResult:
    """DiffiMax by definition: plain minimax values everywhere, no pruning, no table."""
    searcher: Searcher[Any] = Searcher(game, ordering="natural")
    analyses: list[ResponseAnalysis] = []
    traps: list[TrapRecord] = []
    safety = settings.safety_cp

    def child_values(depth: int) -> dict[Any, Value]:
        values = {}
        for move in game.legal_moves():
            game.push(move)
            values[move] = searcher.minimax(depth - 1)
            game.pop()
        return values

    def canonical_line(depth: int) -> tuple[str, ...]:
        """The PV at the current node: always the first best move by tie-break."""
        line: list[Any] = []
        while depth > 0 and game.terminal_value() is None:
            values = child_values(depth)
            move = _canonical_best(game, values, game.setter_to_move())
            line.append(move)
            game.push(move)
            depth -= 1
        for _ in line:
            game.pop()
        return tuple(game.move_name(move) for move in line)

    def visit(depth: int, path: tuple[str, ...]) -> tuple[Value, str | None]:
        if depth == 0 or game.terminal_value() is not None:
            return searcher.minimax(depth), None
        values = child_values(depth)
        maximizing = game.setter_to_move()
        best_move = _canonical_best(game, values, maximizing)
        value = values[best_move]
        if maximizing:
            explore = [m for m in values if safety is None or values[m] >= value - safety]
        else:
            lines = {}
            for move, v in values.items():
                if settings.trap_cp <= v - value <= settings.reasonable_cp:
                    game.push(move)
                    lines[game.move_name(move)] = (game.move_name(move), *canonical_line(depth - 1))
                    game.pop()
            analysis = classify_responses(
                [_response_value(game, m, v, True) for m, v in values.items()],
                settings,
                path=path,
                node=game.describe(),
                ply=game.ply,
                responder=game.responder_name(),
            )
            analyses.append(analysis)
            traps.extend(trap_records(analysis, {m: line[1:] for m, line in lines.items()}))
            keep = {analysis.best} | {r.move for r in analysis.candidates}
            explore = [m for m in values if safety is None or game.move_name(m) in keep]
        for move in sorted(explore, key=game.tiebreak):
            game.push(move)
            visit(depth - 1, (*path, game.move_name(move)))
            game.pop()
        return value, game.move_name(best_move)

    root_is_opponent = not game.setter_to_move()
    value, best_move = visit(settings.depth, ())
    root_analysis = analyses[0] if analyses and root_is_opponent and analyses[0].path == () else None
    return DiffiMaxResult(value, best_move, root_analysis, analyses, traps, searcher.stats, settings)


# -- the optimised search -------------------------------------------------------------------


class DiffiMaxSearch(Generic[Move]):
    """Alpha-beta based DiffiMax. Owns a `Searcher` (and so its table) for its whole life, so
    one instance can analyse many positions with a warm table (the pipeline's workers do)."""

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
        self._analyses: list[ResponseAnalysis] = []
        self._traps: list[TrapRecord] = []
        root_is_opponent = not game.setter_to_move()
        value, best_move = self._visit(settings.depth, ())
        analyses = self._analyses
        root_analysis = analyses[0] if analyses and root_is_opponent and analyses[0].path == () else None
        stats = self.searcher.stats
        used = SearchStats(
            stats.nodes - start.nodes,
            stats.leaves - start.leaves,
            stats.cutoffs - start.cutoffs,
            stats.tt_cutoffs - start.tt_cutoffs,
        )
        return DiffiMaxResult(value, best_move, root_analysis, analyses, self._traps, used, settings)

    def _exact(self, depth: int) -> Value:
        return self.searcher.alphabeta(depth, -INFINITY, INFINITY)

    def _child_at_least(self, move: Move, depth: int, threshold: Value) -> bool:
        """Null-window test: is the value after `move` >= threshold?"""
        game = self.game
        game.push(move)
        result = self.searcher.alphabeta(depth, threshold - 1, threshold)
        game.pop()
        return result >= threshold

    def _visit(self, depth: int, path: tuple[str, ...]) -> tuple[Value, str | None]:
        game = self.game
        if depth == 0 or game.terminal_value() is not None:
            return self._exact(depth), None
        value = self._exact(depth)
        moves = game.legal_moves()
        safety = self.settings.safety_cp
        if game.setter_to_move():
            if safety is None:
                explore: Sequence[Move] = moves
            else:
                explore = [m for m in moves if self._child_at_least(m, depth - 1, value - safety)]
            exact_values = {}
            for move in sorted(explore, key=game.tiebreak):
                game.push(move)
                exact_values[move], _ = self._visit(depth - 1, (*path, game.move_name(move)))
                game.pop()
            # Every move reaching the node's value is within the margin, so explored and exact.
            best = _canonical_best(game, exact_values, True)
            return value, game.move_name(best)

        analysis = self._analyse(depth, path, value, moves)
        keep = {analysis.best} | {r.move for r in analysis.candidates}
        for move in sorted(moves, key=game.tiebreak):
            if safety is not None and game.move_name(move) not in keep:
                continue
            game.push(move)
            self._visit(depth - 1, (*path, game.move_name(move)))
            game.pop()
        return value, analysis.best

    def _analyse(
        self, depth: int, path: tuple[str, ...], v1: Value, moves: Sequence[Move]
    ) -> ResponseAnalysis:
        """Classify every response with one window search each: exact inside [v1, v1 + R],
        a proof of `value > v1 + R` otherwise (all a trap decision needs)."""
        game, searcher, settings = self.game, self.searcher, self.settings
        ceiling = v1 + settings.reasonable_cp
        window_top = INFINITY if self.exact_root and not path else ceiling + 1
        measured = []
        for move in moves:
            game.push(move)
            result = searcher.alphabeta(depth - 1, v1 - 1, window_top)
            exact = result < window_top
            line: tuple[str, ...] = ()
            if exact and result - v1 >= settings.trap_cp:
                line = searcher.principal_variation(depth - 1)
            game.pop()
            # result <= v1 - 1 would mean a reply better than the minimum: impossible.
            assert result >= v1, "window search contradicts the node's exact value"
            measured.append(_response_value(game, move, result, exact, line))
        analysis = classify_responses(
            measured,
            settings,
            path=path,
            node=game.describe(),
            ply=game.ply,
            responder=game.responder_name(),
        )
        self._analyses.append(analysis)
        self._traps.extend(trap_records(analysis, {r.move: r.line for r in measured}))
        return analysis


def diffimax(
    game: Game[Any],
    settings: DiffiMaxSettings,
    *,
    tt: TranspositionTable | None = None,
    ordering: str = "heuristic",
    budget: Budget | None = None,
    exact_root: bool = False,
) -> DiffiMaxResult:
    """Run the optimised DiffiMax search once at the game's current position."""
    return DiffiMaxSearch(
        game, settings, tt=tt, ordering=ordering, budget=budget, exact_root=exact_root
    ).run()
