"""The records of one decision: what the player is told about the move (`Situation`, `Control`),
what it yields (`Choice`, its `MoveOption`s, the `TrapReply`s behind a trap) and what the tutor
carries between moves (`TutorState`, `Remembered`); and the value arithmetic every style shares.

Every value is the player's own (the side to move at the position being decided), in centipawns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import chess

from pipeline.engines.options import EngineOptions
from pipeline.human.context import MoverContext
from pipeline.play.styles import Style
from search.values import MATE, Value, is_mate_score

# Values are clipped to +-this many centipawns before losses are taken (as Lichess does for its
# average centipawn loss): a mate and a ten-pawn lead are both simply won.
CLIP_CP: Final = 1000


def clip(value: Value) -> Value:
    """A value clipped to +-CLIP_CP: a mate counts as CLIP_CP."""
    return max(-CLIP_CP, min(CLIP_CP, value))


def loss_cp(best: Value, value: Value) -> Value:
    """What playing a move worth `value` gives up against the best (`best`), clipped values, >= 0."""
    return max(0, clip(best) - clip(value))


def pawns(value: Value) -> str:
    """A value as a GUI shows it: "+0.35", "mate in 3", "mated in 2"."""
    if is_mate_score(value):
        plies = MATE - abs(value)
        return f"mate in {(plies + 1) // 2}" if value > 0 else f"mated in {plies // 2}"
    return f"{value / 100:+.2f}"


@dataclass(frozen=True)
class TrapReply:
    """One of the opponent's replies the judge names as a trap candidate after our move."""

    move: str
    probability: float
    """How likely a human plays it (corpus share, model probability, or the trappy fallback's share)."""
    drop: float
    """The win chances it gives up, on [0, 2] (searched deeper where its class sat near the threshold)."""


@dataclass(frozen=True)
class Remembered:
    """Our last move as sent: where the game stood after it and what it was worth."""

    root: str
    """The FEN the game started from."""
    moves: tuple[str, ...]
    """Every move of the game up to and including ours (UCI)."""
    value: Value | None
    """Its full-depth value (None: it was not valued, e.g. a move sent when time ran out)."""
    loss: Value | None
    """What it gave up against our best move, in centipawns."""


@dataclass(frozen=True)
class TutorState:
    """What the tutor carries from move to move within a game."""

    epsilon: float
    """The adaptive ε (before the opening and endgame strictness)."""
    last: Remembered | None = None
    """Our last move, for judging the opponent's reply to it."""
    punished: int = 0
    """Mistakes of ours the opponent punished so far this game."""
    spared: int = 0
    """Mistakes of ours the opponent let go so far this game."""


def game_of(board: chess.Board) -> tuple[str, tuple[str, ...]]:
    """(starting FEN, moves) of the game that led to `board`."""
    return board.root().fen(), tuple(move.uci() for move in board.move_stack)


@dataclass
class Control:
    """When the player should stop starting new work, set by whoever waits for its move."""

    soft_deadline: float | None = None
    """`time.monotonic()` after which no new stage starts (None: no clock)."""
    hard_deadline: float | None = None
    """`time.monotonic()` at which the move is sent whatever the player has (None: no clock)."""
    hurry: bool = False
    """Too little time for the full work: decide on the shallow pass alone."""
    stop: threading.Event = field(default_factory=threading.Event)
    """Set when the move has been sent (or `stop` came): nothing more is wanted."""

    def can_start(self, seconds: float) -> bool:
        """Whether a stage expected to take `seconds` may start now."""
        if self.stop.is_set():
            return False
        now = time.monotonic()
        if self.soft_deadline is not None and now >= self.soft_deadline:
            return False
        return self.hard_deadline is None or now + seconds < self.hard_deadline


@dataclass(frozen=True)
class Situation:
    """What the player knows about the move beyond the position: clocks and the `go` limits."""

    our_clock: float | None = None
    """Our remaining time in seconds."""
    their_clock: float | None = None
    """The opponent's remaining time in seconds."""
    base_seconds: int | None = None
    """The game's base time in seconds (for the human-move model)."""
    increment_seconds: int | None = None
    """The increment per move in seconds."""
    searchmoves: frozenset[str] | None = None
    """Only these moves may be chosen (UCI `go searchmoves`)."""
    limits: EngineOptions | None = None
    """The per-line node and depth limits of this move instead of the engine's (UCI `go nodes`,
    `go depth`; a depth is the native engine's plies), None: the engine's own."""

    def mover_context(self, rating: int | None, *, ours: bool) -> MoverContext:
        """What the human-move model is told of the mover: `rating`, and our clock or the
        opponent's with the game's time control."""
        return MoverContext(
            rating=rating,
            clock_seconds=self.our_clock if ours else self.their_clock,
            base_seconds=self.base_seconds,
            increment_seconds=self.increment_seconds,
        )


@dataclass(frozen=True)
class MoveOption:
    """One of our moves as the style saw it."""

    move: str
    value: Value | None = None
    """Full-depth value (None: not valued)."""
    probability: float | None = None
    """The human-move model's probability that we (a human of the tutor's rating) play it."""
    chance: float | None = None
    """Trap style: its trap chance, the score the opponent's replies are expected to give up after it
    (`search.expectimax`; None: not judged)."""
    traps: tuple[TrapReply, ...] = ()
    """Trap style: the opponent's replies that make the chance."""
    weight: float | None = None
    """Tutor style: the chance it had to be drawn."""


@dataclass(frozen=True)
class Choice:
    """A decided move and why."""

    move: str
    style: Style
    reason: str
    """One line for `info string`: what the style chose and why."""
    value: Value | None = None
    """The chosen move's full-depth value (None: not valued)."""
    best: str | None = None
    """The best move by the same values."""
    best_value: Value | None = None
    candidates: tuple[MoveOption, ...] = ()
    epsilon: float | None = None
    """Tutor style: the ε in force for this move."""
    state: TutorState | None = None
    """Tutor style: the adaptive state after judging the opponent's last reply."""
    complete: bool = False
    """Every stage ran (False: stopped early, by the clock or by `stop`)."""
    nodes: int = 0
    """Engine nodes spent."""
    plausible: float | None = None
    """The human-move model's probability of the chosen move, where computed."""
    shallow_value: Value | None = None
    """The shallow pass's value of the move: the score an early `bestmove` reports when the search
    was stopped before the full depth (a GUI shows a score with every move)."""

    @property
    def cost(self) -> Value | None:
        """What the chosen move gives up against the best move, by the player's own values."""
        if self.value is None or self.best_value is None:
            return None
        return loss_cp(self.best_value, self.value)


Offer = Callable[[Choice], None]


def no_offer(choice: Choice) -> None:
    """An `Offer` for callers that only want the final choice."""
