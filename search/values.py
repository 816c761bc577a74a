"""Units and mate scores.

Every value is an integer in centipawns from the setter's point of view (higher is better for
the setter). Values are shown to people in pawns.

A loss of win chances (`win_drop`, on [0, 2]: a difference of Lichess's win chances
on [-1, 1]) is shown to people on one scale only, the points of Lichess's Win% (0-100, the figure
its analysis board shows): `win_percent_points`. An expected score on [0, 1] is on the same scale
times 100, so a repertoire's score drop and a judge's win drop read alike.
"""

from __future__ import annotations

import functools
import math
from typing import Final

# A mate for the setter in n plies from the root scores MATE - n (spec: MATE = 100_000 cp).
MATE = 100_000
# Any score at least this large (in absolute value) is a mate score, not an evaluation.
MATE_BOUND = MATE - 10_000
# Larger than any score a search can return; the initial alpha-beta window.
INFINITY = 10 * MATE

Value = int  # centipawns, setter's point of view


def is_mate_score(value: Value) -> bool:
    return abs(value) >= MATE_BOUND


# Lichess's win-chance curve: 2 / (1 + exp(-k * cp)) - 1, in [-1, 1] (lila `WinPercent`).
WIN_CHANCE_K: Final = 0.00368208


def win_probability(cp: float) -> float:
    """Lichess's win probability in [0, 1] of a centipawn score: the one definition of its
    logistic curve (lila's `WinPercent`), which the judges, the human features and the puzzles share."""
    return 1.0 / (1.0 + math.exp(-WIN_CHANCE_K * cp))


@functools.lru_cache(maxsize=8192)
def win_chances(value: Value) -> float:
    """The setter's win chances in [-1, 1] for a value in centipawns (a mate counts as +-1).
    Cached: a position asks it of every reply several times, and values repeat."""
    if is_mate_score(value):
        return 1.0 if value > 0 else -1.0
    # 2p - 1: doubling is exact in floating point, so this equals 2 / (1 + e) - 1 to the bit.
    return 2.0 * win_probability(max(-MATE_BOUND, min(MATE_BOUND, value))) - 1.0


def win_drop(best: Value, value: Value) -> float:
    """What the responder gives up by playing a reply worth `value` instead of the best (`best`):
    the setter's gain in win chances, in [0, 2] (0 for the best reply)."""
    return max(0.0, win_chances(value) - win_chances(best))


def pawns_to_cp(pawns: float) -> int:
    """Convert a user-facing pawn amount to centipawns, rounding to the nearest centipawn."""
    return round(pawns * 100)


def cp_to_pawns(value: Value) -> float:
    return value / 100


def mate_moves(value: Value, *, setter_moves_first: bool = False) -> int:
    """The mating side's moves to mate from the root of a mate score (MATE - n for a mate in n
    plies). In mining the root is the responder's turn (`setter_moves_first` False)."""
    plies = MATE - abs(value)
    mater_first = (value > 0) == setter_moves_first
    return (plies + 1) // 2 if mater_first else plies // 2


def format_pawns(value: Value, *, signed: bool = True, setter_moves_first: bool = False) -> str:
    """`+1.80`, `-0.20`, or `#3` / `#-3` for mate scores: mate in 3 moves by the setter / against
    it, counted from the root (`mate_moves`). schemas/views.sql's `pawns` macro says the same."""
    if is_mate_score(value):
        moves = mate_moves(value, setter_moves_first=setter_moves_first)
        return f"#{moves}" if value > 0 else f"#-{moves}"
    text = f"{value / 100:+.2f}" if signed else f"{value / 100:.2f}"
    return text


def format_dip(dip: Value, best: Value, value: Value, *, setter_moves_first: bool = False) -> str:
    """A dip in pawns (`1.40`); where the best reply or this one is a mate score, where the reply
    leads instead (`#3`): a difference of mate scores is no number of pawns. schemas/views.sql's
    `dip_pawns` macro says the same."""
    if is_mate_score(best) or is_mate_score(value):
        return format_pawns(value, setter_moves_first=setter_moves_first)
    return f"{dip / 100:.2f}"


def win_percent_points(win_drop: float) -> float:
    """A loss of win chances on [0, 2] in points of Win% (0-100): 0.15 -> 7.5."""
    return 50.0 * win_drop


def win_drop_of_points(points: float) -> float:
    """Points of Win% (0-100), as people give a loss (the flags), on the rows' [0, 2]: 7.5 -> 0.15."""
    return points / 50.0


def format_percent_points(points: float, *, signed: bool = False) -> str:
    """Points of Win% (or of an expected score in percent) as people read them: `7.5 %`, `30 %`;
    one decimal below 10, where it still says something."""
    size = abs(points)
    if 0 < size < 0.05 and not signed:
        return "<0.1 %"  # not 0 when it is not
    digits = 1 if 0 < size < 9.95 else 0
    text = f"{points:+.{digits}f}" if signed else f"{points:.{digits}f}"
    return f"{text} %"


def format_win_loss(win_drop: float) -> str:
    """A loss of win chances on [0, 2] for people (`win_percent_points`): `7.5 %`."""
    return format_percent_points(win_percent_points(win_drop))


def format_percent(score: float, *, signed: bool = False) -> str:
    """An expected score on [0, 1] (or a difference of two, or a probability) in percent, on the
    scale of `format_win_loss`: `58 %`, `+6.1 %`, `9.7 %`."""
    return format_percent_points(100.0 * score, signed=signed)
