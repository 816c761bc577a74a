"""Transposition table with bound flags.

An entry remembers what a search of one position to one depth proved: an EXACT value, or only a
LOWER or UPPER bound when the search was cut off by its window. A bound is never a value: a probe
may cut the search only when the bound alone decides the window.
"""

from __future__ import annotations

from collections.abc import Hashable
from enum import IntEnum
from typing import Any, NamedTuple

from search.values import MATE_BOUND, Value

# Default capacity in entries (~200 bytes each in CPython, so ~200 MB at the default).
DEFAULT_CAPACITY = 1_000_000


class Bound(IntEnum):
    EXACT = 0
    LOWER = 1  # value <= true value (the search failed high)
    UPPER = 2  # value >= true value (the search failed low)


class Entry(NamedTuple):
    # depth: remaining plies searched below this position; value: in TT form (see to_tt), from
    # the table's fixed point of view (perspective +1), so searches for either side share it.
    depth: int
    value: Value
    bound: Bound
    move: Any


def to_tt(value: Value, ply: int) -> Value:
    """Mate scores count plies from the root; stored, they count from the position itself."""
    if value >= MATE_BOUND:
        return value + ply
    if value <= -MATE_BOUND:
        return value - ply
    return value


def from_tt(value: Value, ply: int) -> Value:
    if value >= MATE_BOUND:
        return value - ply
    if value <= -MATE_BOUND:
        return value + ply
    return value


class TranspositionTable:
    """Bounded map from position key to `Entry`; the oldest entry goes first when full."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"transposition table capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._entries: dict[Hashable, Entry] = {}
        self.probes = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Entry | None:
        self.probes += 1
        entry = self._entries.get(key)
        if entry is not None:
            self.hits += 1
        return entry

    def store(
        self, key: Hashable, depth: int, value: Value, bound: Bound, move: Any, ply: int, perspective: int = 1
    ) -> None:
        """Remember a search result; `value` and `bound` are from the searcher's point of view,
        which is `perspective` (+1 or -1) times the table's."""
        if perspective < 0:
            value, bound = -value, _FLIPPED[bound]
        entries = self._entries
        if key in entries:
            del entries[key]  # re-insert so that recently used entries are evicted last
        elif len(entries) >= self.capacity:
            del entries[next(iter(entries))]
        entries[key] = Entry(depth, to_tt(value, ply), bound, move)

    def clear(self) -> None:
        self._entries.clear()


_FLIPPED = {Bound.EXACT: Bound.EXACT, Bound.LOWER: Bound.UPPER, Bound.UPPER: Bound.LOWER}


def probe_cutoff(entry: Entry, depth: int, alpha: Value, beta: Value, ply: int, perspective: int = 1) -> Value | None:
    """The stored result if it settles a search of `depth` with window (alpha, beta), else None.

    Only an entry of exactly the requested depth answers: a deeper entry would change the value
    of the node, and DiffiMax must return the depth-limited minimax value the reference computes.
    Deeper entries still supply their move for ordering.
    """
    if entry.depth != depth:
        return None
    value, bound = from_tt(entry.value, ply), entry.bound
    if perspective < 0:
        value, bound = -value, _FLIPPED[bound]
    if bound == Bound.EXACT:
        return value
    if bound == Bound.LOWER and value >= beta:
        return value
    if bound == Bound.UPPER and value <= alpha:
        return value
    return None
