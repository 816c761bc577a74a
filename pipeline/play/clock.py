"""The clock of `diffimax play`: the parameters of a UCI `go`, and time management.

Time management (`TimeSettings`, `plan_time`): a budget per move of the usable clock (the clock
less the move overhead) over the moves still to play (`movestogo`, else a fixed horizon) plus
most of the increment; the player starts no new stage after the budget, and the hard deadline
(a few budgets, never more than a share of the clock) sends the move whatever the player has.
Below the hurry threshold the player decides on the shallow pass alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import chess

from pipeline.play.styles import check_whole
from search.settings import SettingsError


@dataclass(frozen=True)
class TimeSettings:
    """How the clock becomes a budget per move."""

    move_overhead_ms: int = 100
    """Kept back from every clock for what the GUI, the pipe and the OS take around our thinking."""
    horizon: int = 30
    """Moves the usable clock is spread over when `go` gives no movestogo."""
    hard_factor: float = 3.0
    """The hard deadline is at most this many budgets after the `go`."""
    max_share: float = 0.25
    """... and at most this share of the usable clock (plus most of the increment)."""
    hurry_ms: int = 300
    """Below this budget the player decides on the shallow pass alone."""

    def __post_init__(self) -> None:
        for name, amount, minimum in (
            ("move overhead", self.move_overhead_ms, 0),
            ("moves horizon", self.horizon, 1),
            ("hurry time", self.hurry_ms, 0),
        ):
            check_whole(name, amount, minimum)
        if not (math.isfinite(self.hard_factor) and self.hard_factor >= 1.0):
            raise SettingsError(f"invalid hard factor {self.hard_factor!r}: must be >= 1")
        if not (0.0 < self.max_share <= 1.0):
            raise SettingsError(f"invalid max clock share {self.max_share!r}: must be in (0, 1]")


@dataclass(frozen=True)
class Go:
    """The parameters of one `go` (times in milliseconds)."""

    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    movetime: int | None = None
    depth: int | None = None
    nodes: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: tuple[str, ...] | None = None


GO_NUMBERS: Final = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "depth", "nodes", "mate")


def parse_go(tokens: list[str]) -> tuple[Go, list[str]]:
    """`go` parameters, and a one-line complaint for each token that could not be read (skipped)."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index].lower()
        if token in GO_NUMBERS:
            text = tokens[index + 1] if index + 1 < len(tokens) else ""
            try:
                number = int(text)
            except ValueError:
                problems.append(f"go {token}: expected a whole number, got {text or '(nothing)'!r}")
                index += 1 if not text or text.lower() in GO_NUMBERS else 2
                continue
            if token in ("wtime", "btime"):
                number = max(0, number)  # some GUIs send a negative clock after a flag fall
            elif number < (1 if token in ("movestogo", "depth", "nodes", "mate") else 0):
                problems.append(f"go {token}: {number} is out of range")
                index += 2
                continue
            values[token] = number
            index += 2
        elif token in ("infinite", "ponder"):
            values[token] = True
            index += 1
        elif token == "searchmoves":
            moves = []
            index += 1
            while index < len(tokens) and tokens[index].lower() not in (*GO_NUMBERS, "infinite", "ponder"):
                moves.append(tokens[index].lower())
                index += 1
            values["searchmoves"] = tuple(moves)
        else:
            problems.append(f"go: unknown parameter {tokens[index]!r}")
            index += 1
    return Go(**values), problems


@dataclass(frozen=True)
class TimePlan:
    """Seconds after the `go` (None: no deadline)."""

    soft: float | None = None
    hard: float | None = None
    hurry: bool = False


def plan_time(go: Go, turn: chess.Color, settings: TimeSettings) -> TimePlan:
    """The time plan of one `go` for the side `turn` (see the module docstring)."""
    overhead = settings.move_overhead_ms / 1000
    hurry = settings.hurry_ms / 1000
    if go.infinite or go.ponder:
        return TimePlan()
    if go.movetime is not None:
        hard = max(0.001, go.movetime / 1000 - overhead)
        return TimePlan(0.8 * hard, hard, hard < hurry)
    clock = go.wtime if turn == chess.WHITE else go.btime
    if clock is None:
        return TimePlan()  # depth, nodes or nothing: the whole work, however long
    increment = (go.winc if turn == chess.WHITE else go.binc) or 0
    usable = max(0.0, clock / 1000 - overhead)
    moves = go.movestogo or settings.horizon
    bonus = 0.75 * increment / 1000 if usable > increment / 1000 else 0.0
    budget = usable / moves + bonus
    cap = (0.8 * usable if moves == 1 else settings.max_share * usable) + bonus
    hard = max(0.001, min(settings.hard_factor * budget, cap, usable))
    soft = min(budget, hard)
    return TimePlan(soft, hard, soft < hurry)
