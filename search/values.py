"""Units and mate scores.

Every value is an integer in centipawns from the setter's point of view (higher is better for
the setter). Values are shown to people in pawns.
"""

from __future__ import annotations

# A mate for the setter in n plies from the root scores MATE - n (spec: MATE = 100_000 cp).
MATE = 100_000
# Any score at least this large (in absolute value) is a mate score, not an evaluation.
MATE_BOUND = MATE - 10_000
# Larger than any score a search can return; the initial alpha-beta window.
INFINITY = 10 * MATE

Value = int  # centipawns, setter's point of view


def is_mate_score(value: Value) -> bool:
    return abs(value) >= MATE_BOUND


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
