"""The analysed node set, walked once for every backend (spec: "The search around it").

DiffiMax visits the root. At a visited setter node it visits the children whose value is within
the safety margin S of the best; at a visited opponent node it makes the response analysis and
visits the best response and every trap candidate (every response when S is unbounded). This
module owns that walk and nothing else: how values are obtained is an `Oracle`'s business. Three
oracles implement it: the exhaustive reference and the native alpha-beta (`search.diffimax`), and
a UCI engine (`pipeline.engines.uci`). The set of visited nodes depends on values only, never on
the oracle's move order, pruning or caching, so every oracle that answers correctly walks the
same nodes and produces the same analyses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from search.analysis import ResponseAnalysis, ResponseValue, TrapRecord, classify_responses, trap_records
from search.game import Game, Move
from search.settings import DiffiMaxSettings
from search.values import Value


class Oracle(Protocol[Move]):
    """What the walk asks about the game's current node, answered by some search.

    The walk moves through the tree with `game.push` / `game.pop` between calls; an oracle may
    keep state across calls (a table, an engine hash) but must leave `game` where it found it.
    """

    @property
    def game(self) -> Game[Move]: ...

    def value(self, depth: int) -> Value:
        """The exact depth-limited minimax value of the current node (a leaf or terminal root)."""

    def setter_children(self, depth: int, value: Value | None, margin: Value | None) -> Iterator[tuple[Move, Value]]:
        """The children of the current setter node whose value is within `margin` of the best
        (every child when None), in tie-break order, each with its EXACT value. `value` is the
        node's exact value when the walk already knows it. The walk visits each child before it
        asks for the next, so an oracle may interleave its own searches with those visits."""

    def responses(self, depth: int, value: Value | None, whole: bool) -> list[ResponseValue]:
        """Every legal response at the current opponent node, valued as `ResponseValue` requires:
        exact for the best response and for every response inside [v1 + T, v1 + R] (with its
        principal variation there), a bound on the right side of the thresholds elsewhere; every
        response exact when `whole`. `value` is the node's exact value (v1) when known."""


@dataclass
class Walk:
    """What the walk found: the root's exact value and the side to move's best move (None at a
    leaf or terminal root), and every analysed opponent node with its trap records, in visit
    order (the root first when it is an opponent node)."""

    value: Value
    best_move: str | None
    analyses: list[ResponseAnalysis]
    traps: list[TrapRecord]


def canonical_best(game: Game[Move], values: dict[Move, Value], maximizing: bool) -> Move:
    """The best move by value, ties to the smallest tie-break key (UCI string for chess)."""
    sign = -1 if maximizing else 1
    return min(values, key=lambda move: (sign * values[move], game.tiebreak(move)))


def walk(oracle: Oracle[Any], settings: DiffiMaxSettings, *, exact_root: bool = False) -> Walk:
    """DiffiMax at the game's current node. `exact_root` asks for an exact value of every root
    response (explain's whole distribution), where the decision itself needs only bounds."""
    game = oracle.game
    analyses: list[ResponseAnalysis] = []
    traps: list[TrapRecord] = []

    def visit(depth: int, path: tuple[str, ...], known: Value | None) -> tuple[Value | None, str | None]:
        """Visit the current node; returns its exact value (None below the root when nothing
        needed it) and, for an inner node, the side to move's best move."""
        root = not path
        if depth == 0 or game.terminal_value() is not None:
            return (oracle.value(depth) if known is None and root else known), None
        if game.setter_to_move():
            if depth < 2 and not root:
                return known, None  # its children are leaves: nothing below can be analysed
            values: dict[Any, Value] = {}
            for move, value in oracle.setter_children(depth, known, settings.safety_cp):
                values[move] = value
                game.push(move)
                visit(depth - 1, (*path, game.move_name(move)), value)
                game.pop()
            # Every move reaching the node's value is within any margin, so it is among `values`.
            best = canonical_best(game, values, True)
            return values[best], game.move_name(best)
        responses = oracle.responses(depth, known, exact_root and root)
        analysis = classify_responses(
            responses, settings, path=path, node=game.describe(), ply=game.ply, responder=game.responder_name()
        )
        analyses.append(analysis)
        traps.extend(trap_records(analysis, {r.move: r.line for r in responses}))
        keep = None if settings.safety_cp is None else {analysis.best} | {r.move for r in analysis.candidates}
        exact = {r.move: r.value for r in analysis.responses if r.exact}
        for move in sorted(game.legal_moves(), key=game.tiebreak):
            name = game.move_name(move)
            if keep is None or name in keep:
                game.push(move)
                visit(depth - 1, (*path, name), exact.get(name))
                game.pop()
        return analysis.best_value, analysis.best

    value, best_move = visit(settings.depth, (), None)
    assert value is not None, "the root's value is always known"
    return Walk(value, best_move, analyses, traps)
