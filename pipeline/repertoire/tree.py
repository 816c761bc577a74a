"""The repertoire tree while it grows, and its values once it has (no Ray, no engine: the results
of `pipeline.repertoire.expand` come in, the next nodes to expand go out).

How it grows (`Growth`):

- the start is a player node or an opponent node, by who is to move;
- a **player node**'s candidates (the moves within the safety margin) each lead to an opponent
  node, which is expanded (its replies valued) unless the line is `plies` long or the game is over;
- once every candidate's opponent node is in, the `width` candidates (`root_width` for the
  player's first moves) with the best expected score after one reply grow on: each explored reply
  of theirs (above the floor) leads to a player node, expanded likewise. The other candidates
  keep that one-reply expectation: their replies are leaves;
- an opponent node at the start grows on at once.

The order results come in does not change the tree: a node's children depend on its own result
and, for the width, on its siblings' results alone.

Its values (`back_up`), leaves first, by `search.expectimax` (the one expectimax over human
replies): an opponent node's practical gain is the expectation over its valued replies (the
explored ones, and those below the floor that the practical judge valued anyway, as leaves, as
`play --style trap` counts them), each worth its drop plus the gain of the line after it; a player
node's is that of its best candidate by expected score (`practical_choice`), which is the
*recommended* move there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import chess

from pipeline.repertoire.expand import NodeKind, NodeRequest, OpponentResult, PlayerResult
from pipeline.repertoire.settings import RepertoireSettings, Start
from pipeline.repertoire.worker import NodeResult
from search.expectimax import HumanReply, expect, move_gain, practical_choice, score
from search.values import Value

# Why a node was not expanded: the depth reached, the game over, a candidate outside the width (its
# one-reply expectation stands), a reply below the floor (valued anyway: its drop counts), an error.
LeafReason = Literal["depth", "game over", "width", "floor", "error"]


@dataclass
class Node:
    """One position of the tree: the move that led here (None at the start) and what is known."""

    id: int
    parent: int | None
    depth: int
    path: tuple[str, ...]
    """UCI moves from the start."""
    to_move: NodeKind
    reach: float
    """The probability that humans' replies lead here from the start."""
    value: Value | None = None
    """The value of the move that led here, as its parent's search gave it (the start: its own)."""
    probability: float | None = None
    """A reply's human probability at its parent."""
    result: NodeResult | None = None
    leaf: LeafReason | None = None
    children: dict[str, int] = field(default_factory=dict)
    waiting: int = 0
    """A player node: its candidates' opponent nodes not yet expanded."""
    deepened: bool = False
    """An opponent node: whether its replies' player nodes were expanded (within the width)."""
    gain: float = 0.0
    """The practical gain of the position (`back_up`)."""
    move_gain: float = 0.0
    """What the move that led here adds to its parent's score: a player's move, its loss plus the
    gain after it; a reply, its drop plus the gain after it (`back_up`)."""
    recommended: bool = False
    """A player's move: the one chosen at its parent (`back_up`)."""
    unexplored: float = 0.0
    """An opponent node: the probability mass of the replies no search valued (`back_up`)."""

    @property
    def move(self) -> str | None:
        return self.path[-1] if self.path else None

    @property
    def expected(self) -> float:
        """The expected score against humans: the position's score plus its practical gain."""
        return (0.0 if self.value is None else score(self.value)) + self.gain


class Growth:
    """The tree of one repertoire as its nodes are expanded (see the module docstring)."""

    def __init__(self, settings: RepertoireSettings, start: Start) -> None:
        self.settings = settings
        self.start = start
        board = start.board()
        kind: NodeKind = "player" if board.turn == settings.color else "opponent"
        self.nodes: list[Node] = [Node(0, None, 0, (), kind, 1.0)]
        self.failures: list[tuple[int, str]] = []
        """(node, reason) of each node whose expansion failed."""

    def first(self) -> list[NodeRequest]:
        return [self.request(self.nodes[0])]

    def request(self, node: Node) -> NodeRequest:
        return NodeRequest(node.id, node.to_move, node.path, node.reach)

    def add(self, parent: Node, move: str, value: Value | None, probability: float | None, reach: float) -> Node:
        """A child of `parent` after `move`, a leaf when the line is long enough or the game over."""
        kind: NodeKind = "opponent" if parent.to_move == "player" else "player"
        node = Node(len(self.nodes), parent.id, parent.depth + 1, (*parent.path, move), kind, reach, value, probability)
        self.nodes.append(node)
        parent.children[move] = node.id
        if node.depth >= self.settings.plies:
            node.leaf = "depth"
        elif self.game_over(node.path):
            node.leaf = "game over"
        return node

    def game_over(self, path: tuple[str, ...]) -> bool:
        board = self.start.board(path)
        return board.is_game_over(claim_draw=False)

    def receive(self, result: NodeResult) -> list[NodeRequest]:
        """Record a node's result; the nodes to expand next."""
        node = self.nodes[result.node]
        node.result = result
        if result.error is not None:
            node.leaf = "error"
            self.failures.append((node.id, result.error))
        elif isinstance(result, PlayerResult):
            if node.parent is None:
                node.value = result.best_value
            return self.player_children(node, result)
        elif node.parent is None:
            node.value = result.best_value
            return self.reply_children(node, deepen=True)
        else:
            self.reply_children(node, deepen=False)
        parent = None if node.parent is None else self.nodes[node.parent]
        if parent is None or node.to_move != "opponent":
            return []
        parent.waiting -= 1
        return self.deepen(parent) if parent.waiting == 0 else []

    def player_children(self, node: Node, result: PlayerResult) -> list[NodeRequest]:
        wanted = []
        for move in result.candidates:
            child = self.add(node, move, result.values[move], None, node.reach)
            if child.leaf is None:
                wanted.append(self.request(child))
        node.waiting = len(wanted)
        return wanted if wanted else self.deepen(node)

    def reply_children(self, node: Node, *, deepen: bool) -> list[NodeRequest]:
        """The children of an expanded opponent node: each explored reply (expanded when `deepen`,
        else a leaf of the width), and each reply below the floor that the practical judge valued
        anyway (a leaf: its drop counts, nothing grows below it)."""
        result = node.result
        assert isinstance(result, OpponentResult)
        node.deepened = deepen
        wanted = []
        shown = [m for m in result.explored if m in result.values]
        below = [m for m in result.values if m not in shown and result.probabilities.get(m, 0.0) > 0.0]
        shown += sorted(below, key=lambda m: (-result.probabilities[m], m))
        for move in shown:
            p = result.probabilities.get(move, 0.0)
            child = self.add(node, move, result.values[move], p, node.reach * p)
            if child.leaf is not None:
                continue
            if move not in result.explored:
                child.leaf = "floor"
            elif not deepen:
                child.leaf = "width"
            else:
                wanted.append(self.request(child))
        return wanted

    def deepen(self, node: Node) -> list[NodeRequest]:
        """A player node whose candidates are all in: its `width_at` best by the expected score
        after one reply grow on."""
        result = node.result
        assert isinstance(result, PlayerResult)
        one_reply = {}
        for move, child_id in node.children.items():
            child = self.nodes[child_id]
            gain = opponent_gain(child) if child.leaf is None else 0.0
            one_reply[move] = move_gain(result.best_value, result.values[move], gain)
        ranked = sorted(one_reply, key=lambda m: (-one_reply[m], -result.values[m], m))
        wanted = []
        for move in ranked[: self.settings.width_at(node.depth)]:
            child = self.nodes[node.children[move]]
            if child.leaf is None and isinstance(child.result, OpponentResult):
                for leaf_id in child.children.values():
                    grown = self.nodes[leaf_id]
                    if grown.leaf == "width":
                        grown.leaf = None
                        wanted.append(self.request(grown))
                child.deepened = True
        return wanted

    def walk(self, node: Node | None = None) -> Iterator[Node]:
        """The nodes below `node` (default: the start), depth first, children by insertion order."""
        stack = [node or self.nodes[0]]
        while stack:
            current = stack.pop()
            yield current
            stack.extend(self.nodes[i] for i in reversed(list(current.children.values())))


def opponent_gain(node: Node, gains: dict[int, float] | None = None) -> float:
    """An expanded opponent node's practical gain (`search.expectimax.expect`) over its valued
    replies, each worth its drop plus its child's gain from `gains` (none: the replies as leaves)."""
    result = node.result
    assert isinstance(result, OpponentResult)
    return expectation_of(result, node.children, gains)[0]


def expectation_of(
    result: OpponentResult, children: dict[str, int], gains: dict[int, float] | None
) -> tuple[float, float]:
    """(gain, unexplored mass) of an opponent node's result (see `opponent_gain`): every reply a
    search valued counts (the explored ones, and those below the floor the practical judge valued
    anyway, as leaves), as in `diffimax play --style trap`; the rest is the unexplored mass."""
    replies = [
        HumanReply(
            move,
            p,
            result.drops.get(move),
            0.0 if gains is None or move not in children else gains.get(children[move], 0.0),
        )
        for move, p in sorted(result.probabilities.items())
    ]
    found = expect(replies)
    return found.gain, found.unexplored


def back_up(growth: Growth) -> None:
    """Every node's practical gain, leaves first, and each player node's recommended move."""
    gains: dict[int, float] = {}
    for node in reversed(growth.nodes):
        result = node.result
        if node.leaf is not None or result is None:
            node.gain = 0.0
        elif isinstance(result, OpponentResult):
            node.gain, node.unexplored = expectation_of(result, node.children, gains)
            for move, child_id in node.children.items():
                growth.nodes[child_id].move_gain = result.drops.get(move, 0.0) + gains.get(child_id, 0.0)
        else:
            choices = {m: (result.values[m], gains.get(c, 0.0)) for m, c in node.children.items()}
            for move, child_id in node.children.items():
                growth.nodes[child_id].move_gain = move_gain(result.best_value, *choices[move])
            if choices:
                chosen = growth.nodes[node.children[practical_choice(choices)]]
                chosen.recommended = True
                node.gain = chosen.move_gain
        gains[node.id] = node.gain


def san_path(start: Start, path: tuple[str, ...]) -> list[str]:
    """The SAN of each move of `path` from the start."""
    board = start.board()
    sans = []
    for move in path:
        parsed = chess.Move.from_uci(move)
        sans.append(board.san(parsed))
        board.push(parsed)
    return sans
