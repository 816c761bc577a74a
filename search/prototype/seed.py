"""Seed 000's prototype search: the trap condition at an opponent node and the substitution of
the second-best reply, backed up the tree (the rules are in the package docstring). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from search.prototype.trees import Path, PrototypeSettings
from search.tree import Tree
from search.values import Value


@dataclass(frozen=True)
class PrototypeTrap:
    """An opponent node where the prototype's condition held and v2 was substituted for v1.

    Values are the children's backed-up *prototype* values (substitutions below included).
    """

    path: Path
    children: int
    best_move: int  # child index of the best reply (lowest value, ties to the lowest index)
    best_value: Value  # v1
    second_move: int
    second_value: Value  # v2: the value substituted for v1, this node's backed-up value
    minimax_value: Value  # the node's plain minimax value, for comparison
    holds_on_minimax: bool  # whether the condition also holds on the children's minimax values

    @property
    def substituted_value(self) -> Value:
        return self.second_value

    @property
    def dip(self) -> Value:
        return self.second_value - self.best_value


@dataclass(frozen=True)
class PrototypeResult:
    value: Value  # the prototype's backed-up root value
    minimax_value: Value  # plain minimax value of the root (same tree, full depth)
    best_move: int | None  # the prototype's root decision (see `prototype_search`)
    minimax_move: int | None  # the minimax root decision (ties to the lowest index)
    traps: tuple[PrototypeTrap, ...]  # in path order
    leaves: int
    opponent_nodes: int  # internal MIN nodes
    eligible_nodes: int  # MIN nodes with at least min_children children
    changed_nodes: int  # nodes whose prototype value differs from their minimax value


def trap_condition(v1: Value, v2: Value, settings: PrototypeSettings) -> bool:
    """The prototype's test on the best (v1) and second-best (v2) reply values, in centipawns."""
    draw_ok = -settings.draw_cp <= v1 <= settings.draw_cp if settings.draw_rule == "band" else v1 <= settings.draw_cp
    return draw_ok and v2 >= settings.win_cp


def _best_two(values: Sequence[Value]) -> tuple[int, int]:
    """Indices of the lowest and second-lowest values (ties to the lower index)."""
    order = sorted(range(len(values)), key=lambda i: (values[i], i))
    return order[0], order[1]


def prototype_search(tree: Tree, settings: PrototypeSettings) -> PrototypeResult:
    """Minimax over the whole tree with the prototype's substitution rule at opponent nodes.

    Returns both the prototype's and plain minimax's root value and decision. The decision at a
    MAX root is the child with the highest backed-up value; at a MIN root it is the reply the
    backed-up value assumes: the second-best when the root itself substitutes, else the best.
    """
    traps: list[PrototypeTrap] = []
    counts = {"leaves": 0, "opponent": 0, "eligible": 0, "changed": 0}
    root_children: list[tuple[Value, Value]] = []
    root_substituted: list[int] = []

    def visit(node: Tree, path: Path, maximizing: bool) -> tuple[Value, Value]:
        """(prototype value, minimax value) of `node`."""
        if isinstance(node, int):
            counts["leaves"] += 1
            return node, node
        results = [visit(child, (*path, i), not maximizing) for i, child in enumerate(node)]
        if not path:
            root_children.extend(results)
        protos = [r[0] for r in results]
        minimaxes = [r[1] for r in results]
        if maximizing:
            value, plain = max(protos), max(minimaxes)
        else:
            counts["opponent"] += 1
            plain = min(minimaxes)
            first, second = _best_two(protos) if len(node) >= 2 else (0, 0)
            value = protos[first]
            if len(node) >= settings.min_children:
                counts["eligible"] += 1
                v1, v2 = protos[first], protos[second]
                if trap_condition(v1, v2, settings):
                    m1, m2 = _best_two(minimaxes)
                    traps.append(
                        PrototypeTrap(
                            path=path,
                            children=len(node),
                            best_move=first,
                            best_value=v1,
                            second_move=second,
                            second_value=v2,
                            minimax_value=plain,
                            holds_on_minimax=trap_condition(minimaxes[m1], minimaxes[m2], settings),
                        )
                    )
                    value = v2
                    if not path:
                        root_substituted.append(second)
        if value != plain:
            counts["changed"] += 1
        return value, plain

    value, plain = visit(tree, (), settings.root_is_max)
    best_move = minimax_move = None
    if root_children:
        sign = -1 if settings.root_is_max else 1
        indices = range(len(root_children))
        minimax_move = min(indices, key=lambda i: (sign * root_children[i][1], i))
        best = min(indices, key=lambda i: (sign * root_children[i][0], i))
        best_move = root_substituted[0] if root_substituted else best
    return PrototypeResult(
        value=value,
        minimax_value=plain,
        best_move=best_move,
        minimax_move=minimax_move,
        traps=tuple(sorted(traps, key=lambda t: t.path)),
        leaves=counts["leaves"],
        opponent_nodes=counts["opponent"],
        eligible_nodes=counts["eligible"],
        changed_nodes=counts["changed"],
    )
