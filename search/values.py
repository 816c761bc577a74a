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


def format_pawns(value: Value, *, signed: bool = True) -> str:
    """`+1.80`, `-0.20`, or `#3` / `#-2` for mate scores (plies to mate from the root)."""
    if is_mate_score(value):
        plies = MATE - abs(value)
        return f"#{plies}" if value > 0 else f"#-{plies}"
    text = f"{value / 100:+.2f}" if signed else f"{value / 100:.2f}"
    return text
