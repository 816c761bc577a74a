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

    def _search_child(self, move: Move, depth: int, alpha: Value, beta: Value) -> Value:
        game = self.game
        game.push(move)
        result = self.searcher.alphabeta(depth, alpha, beta)
        game.pop()
        return result

    def _visit(self, depth: int, path: tuple[str, ...], known: Value | None = None) -> tuple[Value, str | None]:
        """Visit a node of the analysed set; returns its exact value and (at the root) best move.

        `known` is the node's exact value when the parent already proved it.
        """
        game = self.game
        if depth == 0 or game.terminal_value() is not None:
            return (self._exact(depth) if known is None else known), None
        value = self._exact(depth) if known is None else known
        if game.setter_to_move():
            if depth < 2 and path:
                # Its children have no depth left, so nothing below can be analysed.
                return value, None
            return value, self._visit_setter_node(depth, path, value)
        return value, self._visit_opponent_node(depth, path, value)

    def _visit_setter_node(self, depth: int, path: tuple[str, ...], value: Value) -> str:
        """Visit the moves within the safety margin of the best; returns the canonical best."""
        game = self.game
        safety = self.settings.safety_cp
        threshold = -INFINITY if safety is None else value - safety
        exact_values = {}
        for move in sorted(game.legal_moves(), key=game.tiebreak):
            # One search decides the margin and, for moves inside it, gives the exact value.
            result = self._search_child(move, depth - 1, threshold - 1, INFINITY)
            if result < threshold:
                continue
            exact_values[move] = result
            game.push(move)
            self._visit(depth - 1, (*path, game.move_name(move)), result)
            game.pop()
        # Every move reaching the node's value is within the margin, so it was measured exactly.
        return game.move_name(_canonical_best(game, exact_values, True))

    def _visit_opponent_node(self, depth: int, path: tuple[str, ...], v1: Value) -> str:
        game = self.game
        analysis, exact = self._analyse(depth, path, v1)
        if self.settings.safety_cp is None:
            visit = {game.move_name(m) for m in game.legal_moves()}
        else:
            visit = {analysis.best} | {r.move for r in analysis.candidates}
        for move in sorted(game.legal_moves(), key=game.tiebreak):
            name = game.move_name(move)
            if name in visit:
                game.push(move)
                self._visit(depth - 1, (*path, name), exact.get(name))
                game.pop()
        return analysis.best

    def _analyse(self, depth: int, path: tuple[str, ...], v1: Value) -> tuple[ResponseAnalysis, dict[str, Value]]:
        """Classify every response with as little search as the decision needs.

        With T > 0, a null-window scout at v1 + T first: a reply that stays below it can be
        neither a trap nor unreasonable, and only an upper bound is kept. Replies at or above it
        get a window search that is exact inside [v1 + T, v1 + R] and a proof of `> v1 + R`
        beyond. Ties at v1 (the best response is the first by UCI among them) are settled by a
        null-window test at v1 where a bound leaves them open. Returns the analysis and the
        exact values it proved.
        """
        game, settings = self.game, self.settings
        trap_floor = v1 + settings.trap_cp
        ceiling = v1 + settings.reasonable_cp
        whole_distribution = self.exact_root and not path
        measured: dict[Move, tuple[Value, bool, tuple[str, ...]]] = {}
        for move in game.legal_moves():
            if whole_distribution or settings.trap_cp == 0:
                top = INFINITY if whole_distribution else ceiling + 1
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
        responses = [_response_value(game, move, *entry) for move, entry in measured.items()]
        analysis = classify_responses(
            responses,
            settings,
            path=path,
            node=game.describe(),
            ply=game.ply,
            responder=game.responder_name(),
        )
        self._analyses.append(analysis)
        self._traps.extend(trap_records(analysis, {r.move: r.line for r in responses}))
        exact_values = {r.move: r.value for r in responses if r.exact}
        return analysis, exact_values

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
    return DiffiMaxSearch(game, settings, tt=tt, ordering=ordering, budget=budget, exact_root=exact_root).run()
