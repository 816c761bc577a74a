"""DiffiMax written a second time, from docs/diffimax.md alone, to check the product against.

The product's two native searches (`search.diffimax.reference_diffimax` and `DiffiMaxSearch`)
share the walk of the analysed node set (`search.traversal.walk`), the response classification
(`search.analysis.classify_responses`) and `DiffiMaxResult.of`: a test that compares one with the
other cannot see a bug in those. This module shares no code with them. It uses only the `Game`
protocol (legal_moves, push, pop, terminal_value, evaluate, setter_to_move, move_name, tiebreak,
gives_check, is_capture, describe, ply) and the settings' plain fields, and applies the
definition literally: the full minimax value of every node (no pruning, no table, no bounds),
then the response analysis at every analysed opponent node:

- v(r) for every legal response r, v1 = min; the best response r1 is the first by (value,
  tie-break) over ALL legal responses;
- excluded: checks / captures when asked; meaningful M = legal - excluded;
- alternatives = M without r1, by (value, tie-break); scope Top-k keeps the first k - 1;
- dip d = v(r) - v1; reasonable d <= R; trap candidate: an alternative in scope with
  T <= d <= R, and only where |M| >= 2;
- reasonable_count = alternatives in scope with d <= R (the spec's count for scope All).

Analysed nodes: the root; below a setter node, the children within the safety margin S of its
best; below an analysed opponent node, the best response and every trap candidate (every response
when S is unbounded). Leaves (depth 0) and terminal positions are never analysed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

# Wider than any score: `evaluate` with this window is exact.
WINDOW = 10**12

# What a trap record is identified by, as a plain tuple (the product's `TrapRecord.identity` is
# not used: it is part of what is checked): path, best response, v1, move, value, dip, rank.
TrapKey = tuple[tuple[str, ...], str, int, str, int, int, int]


def centipawns(pawns: float) -> int:
    return round(pawns * 100)


@dataclass(frozen=True)
class Reply:
    move: str
    value: int
    dip: int
    best: bool
    excluded: frozenset[str]  # the reasons ("check", "capture") it is excluded for; empty: meaningful
    alternative_rank: int | None  # 1 = strongest alternative; None: not an alternative
    in_scope: bool
    reasonable: bool
    trap: bool


@dataclass(frozen=True)
class Node:
    """The response analysis at one analysed opponent node."""

    path: tuple[str, ...]
    node: str
    ply: int
    best: str
    best_value: int
    meaningful: int
    replies: dict[str, Reply]
    reasonable_count: int
    trap_count: int
    trap_ratio: float

    def trap_keys(self) -> set[TrapKey]:
        return {
            (self.path, self.best, self.best_value, r.move, r.value, r.dip, r.alternative_rank or 0)
            for r in self.replies.values()
            if r.trap
        }


@dataclass
class Expected:
    value: int
    best_move: str | None
    nodes: dict[tuple[str, ...], Node]
    reasonable: int  # R in centipawns
    trap: int  # T in centipawns
    values: dict[tuple[str, ...], int] = field(repr=False)  # minimax value of every node, by path

    def trap_keys(self) -> set[TrapKey]:
        return {key for node in self.nodes.values() for key in node.trap_keys()}


def independent_diffimax(game: Any, settings: Any) -> Expected:
    """DiffiMax at `game`'s current node by the definition (see the module docstring)."""
    depth = settings.depth
    reasonable = centipawns(settings.reasonable_dip)
    trap = centipawns(settings.trap_dip)
    margin = settings.safety_margin
    safety = None if margin is None or math.isinf(margin) else centipawns(margin)
    kept = None if settings.scope == "all" else int(settings.scope) - 1
    values: dict[tuple[str, ...], int] = {}
    nodes: dict[tuple[str, ...], Node] = {}

    def minimax(path: tuple[str, ...], left: int) -> int:
        if path in values:
            return values[path]
        terminal = game.terminal_value()
        if terminal is not None:
            value = terminal
        elif left == 0:
            value = game.evaluate(-WINDOW, WINDOW)
        else:
            found = children(path, left)
            value = max(found.values()) if game.setter_to_move() else min(found.values())
        values[path] = value
        return value

    def children(path: tuple[str, ...], left: int) -> dict[Any, int]:
        found = {}
        for move in list(game.legal_moves()):
            name = game.move_name(move)
            game.push(move)
            found[move] = minimax((*path, name), left - 1)
            game.pop()
        return found

    def analyse(path: tuple[str, ...], found: dict[Any, int]) -> tuple[Node, list[Any]]:
        """The response analysis here, and the responses the search continues below."""
        ranked = sorted(found, key=lambda m: (found[m], game.tiebreak(m)))
        best = ranked[0]
        v1 = found[best]
        excluded = {}
        for move in ranked:
            reasons = set()
            if settings.exclude_checks and game.gives_check(move):
                reasons.add("check")
            if settings.exclude_captures and game.is_capture(move):
                reasons.add("capture")
            excluded[move] = frozenset(reasons)
        meaningful = [m for m in ranked if not excluded[m]]
        alternatives = [m for m in meaningful if m != best]
        in_scope = alternatives if kept is None else alternatives[:kept]
        replies = {}
        for move in ranked:
            dip = found[move] - v1
            scoped = move in in_scope
            replies[game.move_name(move)] = Reply(
                move=game.move_name(move),
                value=found[move],
                dip=dip,
                best=move == best,
                excluded=excluded[move],
                alternative_rank=alternatives.index(move) + 1 if move in alternatives else None,
                in_scope=scoped,
                reasonable=dip <= reasonable,
                trap=len(meaningful) >= 2 and scoped and trap <= dip <= reasonable,
            )
        reasonable_count = sum(1 for r in replies.values() if r.in_scope and r.reasonable)
        trap_count = sum(1 for r in replies.values() if r.trap)
        node = Node(
            path=path,
            node=game.describe(),
            ply=game.ply,
            best=game.move_name(best),
            best_value=v1,
            meaningful=len(meaningful),
            replies=replies,
            reasonable_count=reasonable_count,
            trap_count=trap_count,
            trap_ratio=trap_count / reasonable_count if reasonable_count else 0.0,
        )
        below = [m for m in ranked if safety is None or m == best or replies[game.move_name(m)].trap]
        return node, below

    def visit(path: tuple[str, ...], left: int) -> None:
        if left == 0 or game.terminal_value() is not None:
            return
        found = children(path, left)
        if game.setter_to_move():
            top = max(found.values())
            below = [m for m in found if safety is None or found[m] >= top - safety]
        else:
            nodes[path], below = analyse(path, found)
        for move in below:
            name = game.move_name(move)
            game.push(move)
            visit((*path, name), left - 1)
            game.pop()

    value = minimax((), depth)
    best_move = None
    if depth > 0 and game.terminal_value() is None:
        found = children((), depth)
        sign = -1 if game.setter_to_move() else 1
        best_move = game.move_name(min(found, key=lambda m: (sign * found[m], game.tiebreak(m))))
    visit((), depth)
    return Expected(value, best_move, nodes, reasonable, trap, values)


def assert_matches_definition(result: Any, expected: Expected, where: str = "") -> None:
    """`result` (a `DiffiMaxResult`) reports what the definition fixes: the root's value and best
    move, the set of analysed nodes, each node's analysis, and one trap record per candidate.
    A response the product valued only by a bound must lie on the side of the threshold it
    claims; exact values must be the minimax values."""
    assert result.value == expected.value, where
    assert result.best_move == expected.best_move, where
    found = {a.path: a for a in result.analyses}
    assert len(found) == len(result.analyses), f"a node analysed twice {where}"
    assert set(found) == set(expected.nodes), where
    root = expected.nodes.get(())
    if root is None:
        assert result.root_analysis is None, where
    else:
        assert result.root_analysis is found[()], where
    for path, node in expected.nodes.items():
        mine = found[path]
        at = f"{where} at {path}"
        assert (mine.node, mine.ply, mine.best, mine.best_value, mine.meaningful) == (
            node.node,
            node.ply,
            node.best,
            node.best_value,
            node.meaningful,
        ), at
        assert (mine.reasonable_count, mine.trap_count) == (node.reasonable_count, node.trap_count), at
        assert mine.trap_ratio == pytest.approx(node.trap_ratio), at
        assert sorted(r.move for r in mine.responses) == sorted(node.replies), at
        assert sum(r.in_scope for r in mine.responses) == sum(r.in_scope for r in node.replies.values()), at
        for response in mine.responses:
            want = node.replies[response.move]
            assert (response.best, response.reasonable, response.trap) == (want.best, want.reasonable, want.trap), (
                at,
                response.move,
            )
            assert (response.excluded is None) == (not want.excluded), (at, response.move)
            assert response.excluded is None or response.excluded in want.excluded, (at, response.move)
            assert (response.alternative_rank is None) == (want.alternative_rank is None), (at, response.move)
            if response.exact:
                assert (response.value, response.dip) == (want.value, want.dip), (at, response.move)
                assert (response.alternative_rank, response.in_scope) == (want.alternative_rank, want.in_scope), (
                    at,
                    response.move,
                )
            else:  # a bound, on the side of the threshold it settles
                v1 = node.best_value
                above = response.value > v1 + expected.reasonable and want.value >= response.value
                below = response.value < v1 + expected.trap and want.value <= response.value
                assert above or below, (at, response.move, response.value, want.value)
    records = [(t.path, t.best_move, t.best_value, t.move, t.value, t.dip, t.rank) for t in result.traps]
    assert len(records) == len(set(records)), f"a trap recorded twice {where}"
    assert set(records) == expected.trap_keys(), where
    for record in result.traps:
        node = expected.nodes[record.path]
        assert (record.node, record.ply) == (node.node, node.ply), where
        # The refutation is a principal variation after the candidate: every move keeps its value.
        line = (*record.path, record.move)
        for move in record.refutation:
            line = (*line, move)
            assert expected.values.get(line) == record.value, (where, record.path, record.move, record.refutation)
