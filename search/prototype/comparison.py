"""The prototype set against the revised DiffiMax on the same trees: per-tree overlaps of their
trap nodes and the totals. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from search.diffimax import DiffiMaxSearch
from search.prototype.seed import PrototypeResult, prototype_search
from search.prototype.trees import InvariantError, PrototypeSettings, children_at, random_tree
from search.settings import DiffiMaxSettings, Scope, SettingsError, is_whole
from search.tree import Tree, TreeGame
from search.ttable import TranspositionTable
from search.values import Value, cp_to_pawns


def revised_settings(
    settings: PrototypeSettings,
    scopes: Sequence[Scope] = ("all", 2),
    *,
    reasonable_dip: float = 2.0,
    trap_dip: float = 1.0,
    safety_margin: float | None = None,
) -> tuple[DiffiMaxSettings, ...]:
    """The revised DiffiMax settings to compare with, one per scope, searching the whole tree.

    The default safety margin is unbounded, so every opponent node is analysed, as the prototype
    considers every opponent node.
    """
    if not scopes:
        raise SettingsError("no revised scope to compare with: give at least one of 2, 3, 4, 5, all")
    if len(set(scopes)) != len(scopes):
        raise SettingsError(f"repeated scope in {list(scopes)!r}")
    return tuple(
        DiffiMaxSettings(
            depth=settings.depth,
            scope=scope,
            reasonable_dip=reasonable_dip,
            trap_dip=trap_dip,
            safety_margin=math.inf if safety_margin is None else safety_margin,
        )
        for scope in scopes
    )


@dataclass(frozen=True)
class Overlap:
    """Prototype trap nodes against one revised scope's trap nodes (sets of node paths)."""

    scope: Scope
    analysed_nodes: int  # opponent nodes the revised search analysed
    trap_nodes: int  # revised trap nodes (at least one candidate)
    trap_nodes_eligible: int  # ... of them at nodes with >= min_children children
    candidates: int  # revised trap candidates (records), over all its trap nodes
    prototype_nodes: int  # prototype trap nodes (repeated here so the row adds up on its own)
    both: int
    only_prototype: int
    only_revised: int
    only_revised_eligible: int

    @property
    def jaccard(self) -> float | None:
        """|both| / |either|, over all opponent nodes; None when neither flags anything."""
        union = self.both + self.only_prototype + self.only_revised
        return self.both / union if union else None

    @property
    def jaccard_eligible(self) -> float | None:
        """The same over the nodes the prototype considers (>= min_children children) only."""
        union = self.both + self.only_prototype + self.only_revised_eligible
        return self.both / union if union else None

    def __add__(self, other: Overlap) -> Overlap:
        if other.scope != self.scope:
            raise ValueError(f"cannot add overlaps of scopes {self.scope!r} and {other.scope!r}")
        return Overlap(
            self.scope,
            *(getattr(self, name) + getattr(other, name) for name in OVERLAP_COUNTS),
        )


OVERLAP_COUNTS = (
    "analysed_nodes",
    "trap_nodes",
    "trap_nodes_eligible",
    "candidates",
    "prototype_nodes",
    "both",
    "only_prototype",
    "only_revised",
    "only_revised_eligible",
)


@dataclass(frozen=True)
class TreeComparison:
    index: int
    prototype: PrototypeResult
    revised: tuple[Overlap, ...]  # one per scope, in the order asked for

    @property
    def value_change(self) -> Value:
        """Prototype root value minus minimax root value (never negative)."""
        return self.prototype.value - self.prototype.minimax_value

    @property
    def move_changed(self) -> bool:
        return self.prototype.best_move != self.prototype.minimax_move


@dataclass(frozen=True)
class Totals:
    trees: int
    leaves: int
    opponent_nodes: int
    eligible_nodes: int
    prototype_nodes: int
    prototype_holds_on_minimax: int  # prototype traps whose condition also holds on minimax values
    prototype_dip_below_t: int  # prototype traps with v2 - v1 < T (too close for the revised)
    prototype_dip_in_range: int  # T <= v2 - v1 <= R
    prototype_dip_above_r: int  # v2 - v1 > R (catastrophic: not a revised trap)
    changed_nodes: int
    root_value_changed: int  # trees whose prototype root value differs from minimax
    root_value_change_mean: float  # pawns, over the trees where it changed (0 when none)
    root_value_change_max: float  # pawns
    root_value_change_all_mean: float  # pawns, over all trees
    root_move_changed: int
    revised: tuple[Overlap, ...]


@dataclass(frozen=True)
class Comparison:
    settings: PrototypeSettings
    revised_settings: tuple[DiffiMaxSettings, ...]
    trees: tuple[TreeComparison, ...]
    totals: Totals = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "totals", _totals(self))


def _overlap(tree: Tree, result: PrototypeResult, settings: PrototypeSettings, revised: DiffiMaxSettings) -> Overlap:
    """Run the revised DiffiMax on `tree` and set its trap nodes against the prototype's."""
    game = TreeGame(tree, root_is_max=settings.root_is_max)
    found = DiffiMaxSearch(game, revised, tt=TranspositionTable()).run()
    minimax_move = None if result.minimax_move is None else str(result.minimax_move)
    if found.value != result.minimax_value or found.best_move != minimax_move:
        raise InvariantError(
            f"revised DiffiMax (scope {revised.scope}) returned {found.value} / move {found.best_move} "
            f"where minimax gives {result.minimax_value} / move {minimax_move}"
        )
    revised_nodes = {tuple(int(move) for move in a.path) for a in found.analyses if a.trap_node}
    eligible = {path for path in revised_nodes if children_at(tree, path) >= settings.min_children}
    prototype_nodes = {trap.path for trap in result.traps}
    return Overlap(
        scope=revised.scope,
        analysed_nodes=len(found.analyses),
        trap_nodes=len(revised_nodes),
        trap_nodes_eligible=len(eligible),
        candidates=len(found.traps),
        prototype_nodes=len(prototype_nodes),
        both=len(prototype_nodes & revised_nodes),
        only_prototype=len(prototype_nodes - revised_nodes),
        only_revised=len(revised_nodes - prototype_nodes),
        only_revised_eligible=len(eligible - prototype_nodes),
    )


def compare_tree(
    tree: Tree, settings: PrototypeSettings, revised: Sequence[DiffiMaxSettings], index: int = 0
) -> TreeComparison:
    """The prototype and every revised scope on one tree."""
    result = prototype_search(tree, settings)
    return TreeComparison(index, result, tuple(_overlap(tree, result, settings, r) for r in revised))


def compare(settings: PrototypeSettings, revised: Sequence[DiffiMaxSettings], trees: int) -> Comparison:
    """The prototype against the revised DiffiMax on trees 0 .. trees-1 of `settings.seed`."""
    if not is_whole(trees) or trees < 1:
        raise SettingsError(f"invalid tree count {trees!r}: must be a whole number >= 1")
    if not revised:
        raise SettingsError("no revised settings to compare with")
    for r in revised:
        if r.depth != settings.depth:
            raise SettingsError(f"revised search depth {r.depth} differs from the tree depth {settings.depth}")
    rows = tuple(compare_tree(random_tree(settings, i), settings, revised, i) for i in range(trees))
    return Comparison(settings, tuple(revised), rows)


def _totals(comparison: Comparison) -> Totals:
    rows = comparison.trees
    revised = comparison.revised_settings
    trap_cp, reasonable_cp = revised[0].trap_cp, revised[0].reasonable_cp
    traps = [trap for row in rows for trap in row.prototype.traps]
    changes = [row.value_change for row in rows if row.value_change]
    overlaps = []
    for position in range(len(revised)):
        total = rows[0].revised[position]
        for row in rows[1:]:
            total = total + row.revised[position]
        overlaps.append(total)
    return Totals(
        trees=len(rows),
        leaves=sum(row.prototype.leaves for row in rows),
        opponent_nodes=sum(row.prototype.opponent_nodes for row in rows),
        eligible_nodes=sum(row.prototype.eligible_nodes for row in rows),
        prototype_nodes=len(traps),
        prototype_holds_on_minimax=sum(1 for t in traps if t.holds_on_minimax),
        prototype_dip_below_t=sum(1 for t in traps if t.dip < trap_cp),
        prototype_dip_in_range=sum(1 for t in traps if trap_cp <= t.dip <= reasonable_cp),
        prototype_dip_above_r=sum(1 for t in traps if t.dip > reasonable_cp),
        changed_nodes=sum(row.prototype.changed_nodes for row in rows),
        root_value_changed=len(changes),
        root_value_change_mean=round(sum(changes) / len(changes) / 100, 4) if changes else 0.0,
        root_value_change_max=cp_to_pawns(max(changes, default=0)),
        root_value_change_all_mean=round(sum(changes) / len(rows) / 100, 4),
        root_move_changed=sum(1 for row in rows if row.move_changed),
        revised=tuple(overlaps),
    )
