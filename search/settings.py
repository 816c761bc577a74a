"""DiffiMax settings (names as in the seed) and their validation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypeGuard

from search.errors import DiffimaxError
from search.values import pawns_to_cp

# Opponent Responses: Top-k keeps the k-1 strongest alternatives; "all" keeps every one.
Scope = Literal[2, 3, 4, 5] | Literal["all"]
SCOPES: tuple[Scope, ...] = (2, 3, 4, 5, "all")

# Spec defaults: Search Depth is 3 plies for the native engine and 2 for a UCI engine.
NATIVE_DEFAULT_DEPTH = 3
UCI_DEFAULT_DEPTH = 2


def default_depth(engine: str) -> int:
    """The search depth when none is given: the native engine's is deeper in plies (it searches
    each line itself); a UCI engine's lines are searched by the engine below it."""
    return NATIVE_DEFAULT_DEPTH if engine == "native" else UCI_DEFAULT_DEPTH


def is_whole(value: object, minimum: int | None = None) -> TypeGuard[int]:
    """Whether `value` is an int (a bool is not) and, when `minimum` is given, at least it: the one
    check behind every "a whole number >= N" setting."""
    return isinstance(value, int) and not isinstance(value, bool) and (minimum is None or value >= minimum)


class SettingsError(DiffimaxError, ValueError):
    """A DiffiMax setting is impossible (T > R, scope 1, a negative depth or dip, ...)."""


def parse_scope(text: str | int) -> Scope:
    """`"2"`..`"5"` or `"all"` (any case) as a `Scope`."""
    token = str(text).strip().lower()
    if token == "all":
        return "all"
    if token in {"2", "3", "4", "5"}:
        return int(token)  # type: ignore[return-value]
    raise SettingsError(f"invalid scope {text!r}: expected 2, 3, 4, 5 or all")


@dataclass(frozen=True)
class DiffiMaxSettings:
    """What DiffiMax looks for; amounts in pawns, as the user gives them."""

    depth: int = NATIVE_DEFAULT_DEPTH
    """Search Depth: plies searched below the root."""
    scope: Scope = "all"
    """Opponent Responses: 2, 3, 4, 5 (Top-k) or "all"."""
    reasonable_dip: float = 2.0
    """Reasonable Player Dip R: the largest dip still plausible."""
    trap_dip: float = 1.0
    """Trap Dip Threshold T: the smallest dip that makes a trap (T <= R)."""
    exclude_checks: bool = False
    """Ignore checking responses as alternatives."""
    exclude_captures: bool = False
    """Ignore capturing responses (en passant included) as alternatives."""
    safety_margin: float | None = 0.5
    """How much the setter may give up for a trap line; None means unbounded (exhaustive)."""

    def __post_init__(self) -> None:
        if not is_whole(self.depth, 0):
            raise SettingsError(f"invalid search depth {self.depth!r}: must be a whole number >= 0")
        if self.scope not in SCOPES:
            raise SettingsError(f"invalid scope {self.scope!r}: expected 2, 3, 4, 5 or all")
        for name, amount in (("reasonable dip", self.reasonable_dip), ("trap dip", self.trap_dip)):
            if not math.isfinite(amount) or amount < 0:
                raise SettingsError(f"invalid {name} {amount!r}: must be a finite number of pawns >= 0")
        if self.trap_dip > self.reasonable_dip:
            raise SettingsError(
                f"trap dip {self.trap_dip} exceeds reasonable dip {self.reasonable_dip}: "
                "no reply could be a trap (need T <= R)"
            )
        margin = self.safety_margin
        if margin is not None and (math.isnan(margin) or margin < 0):
            raise SettingsError(f"invalid safety margin {margin!r}: must be >= 0 pawns or inf")
        if margin is not None and math.isinf(margin):
            object.__setattr__(self, "safety_margin", None)

    @property
    def reasonable_cp(self) -> int:
        return pawns_to_cp(self.reasonable_dip)

    @property
    def trap_cp(self) -> int:
        return pawns_to_cp(self.trap_dip)

    @property
    def safety_cp(self) -> int | None:
        return None if self.safety_margin is None else pawns_to_cp(self.safety_margin)

    @property
    def alternatives_in_scope(self) -> int | None:
        """How many alternatives the scope keeps (None: all of them)."""
        return None if self.scope == "all" else self.scope - 1

    def describe(self) -> dict[str, object]:
        return {
            "depth": self.depth,
            "scope": self.scope,
            "reasonable_dip": self.reasonable_dip,
            "trap_dip": self.trap_dip,
            "exclude_checks": self.exclude_checks,
            "exclude_captures": self.exclude_captures,
            "safety_margin": "inf" if self.safety_margin is None else self.safety_margin,
        }
