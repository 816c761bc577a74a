"""Who is to move, and under what clock: what a human-move model conditions on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MoverContext:
    """Who is to move and under what clock; every field may be None (unknown)."""

    rating: int | None = None
    """The mover's rating (Lichess Glicko-2 in the shared games)."""
    clock_seconds: float | None = None
    """The mover's remaining time when deciding, in seconds."""
    base_seconds: int | None = None
    """The time control's base time in seconds (60 for 1+0)."""
    increment_seconds: int | None = None
    """The time control's increment per move in seconds."""
