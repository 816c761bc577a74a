"""Nested-tuple game trees, the textbook model of seeds 002/003.

A tree is a number (a leaf utility, in pawns) or a tuple of subtrees; levels alternate MAX and
MIN. Utilities are resolved to centipawns like every value in this package, so a leaf may carry
at most two decimals: more would be silently rounded, so it is rejected instead.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from search.errors import DiffimaxError
from search.values import Value

# A parsed tree: an int leaf (centipawns) or a tuple of subtrees.
Tree = int | tuple["Tree", ...]


class TreeSyntaxError(DiffimaxError, ValueError):
    """The tree literal is not a nested tuple of numbers."""


def parse_tree(text: str) -> Tree:
    """Parse a literal such as ``((3,12,8),(2,4,6),(14,5,2))`` into centipawn leaves."""
    source = text.strip()
    try:
        expression = ast.parse(source, mode="eval")
    except SyntaxError as error:
        column = f" at column {error.offset}" if error.offset else ""
        raise TreeSyntaxError(f"malformed tree literal {text!r}: {error.msg}{column}") from None
    except (ValueError, MemoryError, RecursionError) as error:
        raise TreeSyntaxError(f"malformed tree literal {text!r}: {error}") from None
    for node in ast.walk(expression.body):
        if not isinstance(node, (ast.Tuple, ast.List, ast.Constant, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load)) or (
            isinstance(node, ast.UnaryOp) and not isinstance(node.operand, ast.Constant)
        ):
            segment = ast.get_source_segment(source, node) or type(node).__name__
            at = getattr(node, "col_offset", 0) + 1
            raise TreeSyntaxError(
                f"malformed tree literal {text!r}: {segment!r} at column {at} is not a number or a tuple of numbers"
            )
    try:
        literal = ast.literal_eval(expression)
    except (ValueError, TypeError, MemoryError, RecursionError) as error:
        raise TreeSyntaxError(f"malformed tree literal {text!r}: {error}") from None
    return _convert(literal, ())


def _convert(node: object, path: tuple[int, ...]) -> Tree:
    where = "root" if not path else "path " + ".".join(map(str, path))
    if isinstance(node, bool):
        raise TreeSyntaxError(f"tree leaf at {where} is a boolean, not a number: {node!r}")
    if isinstance(node, (int, float)):
        if node != node or node in (float("inf"), float("-inf")):
            raise TreeSyntaxError(f"tree leaf at {where} is not finite: {node!r}")
        centi = round(node * 100)
        if abs(centi - node * 100) > 1e-6:
            raise TreeSyntaxError(f"tree leaf at {where} has more than two decimals: {node!r}")
        return int(centi)
    if isinstance(node, (tuple, list)):
        if not node:
            raise TreeSyntaxError(f"tree node at {where} has no children")
        return tuple(_convert(child, (*path, index)) for index, child in enumerate(node))
    raise TreeSyntaxError(f"tree node at {where} is neither a number nor a tuple: {node!r}")


def tree_height(tree: Tree) -> int:
    if isinstance(tree, int):
        return 0
    return 1 + max(tree_height(child) for child in tree)


def leaf_mean(tree: Tree) -> int:
    """Static estimate of a cut-off internal node: the mean of its leaf utilities."""
    total, count = _leaf_sum(tree)
    return round(total / count)


def _leaf_sum(tree: Tree) -> tuple[int, int]:
    if isinstance(tree, int):
        return tree, 1
    total = count = 0
    for child in tree:
        child_total, child_count = _leaf_sum(child)
        total += child_total
        count += child_count
    return total, count


@dataclass
class TreeGame:
    """A tree as a `Game`; moves are child indices, MAX is the setter.

    `shuffle_seed` presents each node's children in a seeded random order (the same order on
    every visit), for tests that results do not depend on move order.
    """

    tree: Tree
    root_is_max: bool = True
    shuffle_seed: int | None = None

    def __post_init__(self) -> None:
        self._nodes: list[Tree] = [self.tree]
        self._path: list[int] = []

    perspective = 1

    @property
    def ply(self) -> int:
        return len(self._path)

    def setter_to_move(self) -> bool:
        return self.root_is_max == (len(self._path) % 2 == 0)

    def legal_moves(self) -> Sequence[int]:
        node = self._nodes[-1]
        if isinstance(node, int):
            return ()
        moves = list(range(len(node)))
        if self.shuffle_seed is not None:
            random.Random(f"{self.shuffle_seed}:{self._path}").shuffle(moves)
        return moves

    def push(self, move: int) -> None:
        node = self._nodes[-1]
        assert not isinstance(node, int)
        self._nodes.append(node[move])
        self._path.append(move)

    def pop(self) -> None:
        self._nodes.pop()
        self._path.pop()

    def terminal_value(self) -> Value | None:
        node = self._nodes[-1]
        return node if isinstance(node, int) else None

    def evaluate(self, alpha: Value, beta: Value) -> Value:
        return leaf_mean(self._nodes[-1])

    def key(self) -> Hashable:
        return tuple(self._path)

    def move_name(self, move: int) -> str:
        return str(move)

    def tiebreak(self, move: int) -> tuple[int, str]:
        return (move, "")

    def gives_check(self, move: int) -> bool:
        return False

    def is_capture(self, move: int) -> bool:
        return False

    def capture_order(self, move: int) -> int:
        return 0

    def describe(self) -> str:
        return "root" if not self._path else ".".join(map(str, self._path))

    def responder_name(self) -> str:
        return "max" if self.setter_to_move() else "min"
