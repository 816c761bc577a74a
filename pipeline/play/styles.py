"""What `diffimax play` is told: the style (trap, tutor or best) and each style's settings, checked
when they are made (a bad value is a `SettingsError` naming it)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, Literal

from search.errors import DiffimaxError
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings, SettingsError, is_whole
from search.values import Value

Style = Literal["trap", "tutor", "best"]
STYLES: Final[tuple[Style, ...]] = ("trap", "tutor", "best")


class PlayError(DiffimaxError, ValueError):
    """A position or request the player cannot decide on (no legal move, an empty searchmoves)."""


def parse_style(text: str) -> Style:
    token = text.strip().lower()
    for style in STYLES:
        if token == style:
            return style
    raise SettingsError(f"invalid style {text!r}: expected trap, tutor or best")


def _probability(name: str, value: float, *, zero: bool = False) -> None:
    low_ok = value >= 0.0 if zero else value > 0.0
    if not (isinstance(value, (int, float)) and math.isfinite(value) and low_ok and value <= 1.0):
        raise SettingsError(f"invalid {name} {value!r}: must be a probability in {'[0' if zero else '(0'}, 1]")


def check_whole(name: str, value: int, minimum: int) -> None:
    """`SettingsError` naming the setting unless `value` is a whole number of at least `minimum`."""
    if not is_whole(value, minimum):
        raise SettingsError(f"invalid {name} {value!r}: must be a whole number >= {minimum}")


@dataclass(frozen=True)
class TutorSettings:
    """The tutor style (seed 001): plausible mistakes, under an ε that follows the opponent."""

    epsilon: float = 0.05
    """ε at the start of a game: the smallest human-model probability a move needs (seed 001: 0.05)."""
    epsilon_min: float = 0.02
    """ε never falls below this, however rarely the opponent punishes."""
    epsilon_max: float = 0.30
    """ε never rises above this, however well the opponent punishes."""
    raise_factor: float = 1.25
    """ε is multiplied by this after the opponent punished our last mistake."""
    lower_factor: float = 0.8
    """ε is multiplied by this after the opponent let our last mistake go."""
    mistake_cp: int = 30
    """A move that gave up at least this many centipawns against our best is a mistake to punish."""
    punish_share: float = 0.5
    """The opponent punished a mistake when their reply kept at least this share of what it gave up."""
    opening_epsilon: float = 0.25
    """ε in force at move 1; it falls linearly to the adaptive ε over the opening moves."""
    opening_moves: int = 10
    """How many moves the opening strictness lasts (seed 001: "the first ~10 moves")."""
    temperature_cp: float = 100.0
    """T: a move `loss` centipawns worse than the best gets weight exp(loss / T)."""
    max_loss_cp: int = 300
    """A move losing more than this against the best is no plausible mistake and is never drawn
    (0: no limit); when every passing move loses more, the least losing one is kept."""
    endgame_men: int = 10
    """A position with at most this many men besides the kings is an endgame."""
    decided_cp: int = 300
    """An endgame is decided when the best value is at least this far from level, for either side."""
    endgame_epsilon: float = 0.15
    """ε in a decided endgame, where a mistake is plain to see (the larger of it and the adaptive ε)."""
    rating: int = 1500
    """The rating of the human the model imitates for our own moves (seed 001: Maia 1500)."""

    def __post_init__(self) -> None:
        for name in ("epsilon", "epsilon_min", "epsilon_max", "opening_epsilon", "endgame_epsilon"):
            _probability(name.replace("_", " "), getattr(self, name))
        _probability("punish share", self.punish_share)
        if not self.epsilon_min <= self.epsilon <= self.epsilon_max:
            raise SettingsError(
                f"invalid epsilon {self.epsilon!r}: must lie within epsilon min {self.epsilon_min!r} "
                f"and epsilon max {self.epsilon_max!r}"
            )
        factors = (("raise factor", self.raise_factor, True), ("lower factor", self.lower_factor, False))
        for name, factor, above in factors:
            if not (math.isfinite(factor) and factor > 0 and (factor >= 1.0 if above else factor <= 1.0)):
                bound = ">= 1" if above else "in (0, 1]"
                raise SettingsError(f"invalid {name} {factor!r}: must be {bound}")
        if not (math.isfinite(self.temperature_cp) and self.temperature_cp > 0):
            raise SettingsError(f"invalid temperature {self.temperature_cp!r}: must be > 0 centipawns")
        for name, amount, minimum in (
            ("mistake cp", self.mistake_cp, 0),
            ("max loss cp", self.max_loss_cp, 0),
            ("opening moves", self.opening_moves, 0),
            ("endgame men", self.endgame_men, 0),
            ("decided cp", self.decided_cp, 0),
            ("tutor rating", self.rating, 0),
        ):
            check_whole(name, amount, minimum)


@dataclass(frozen=True)
class PlaySettings:
    """How the player chooses: the style, and what each style needs."""

    style: Style = "trap"
    """trap, tutor or best."""
    seed: int = 0
    """Seeds the tutor's draws, together with the position (same seed, same position, same draw)."""
    diffimax: DiffiMaxSettings = field(default_factory=DiffiMaxSettings)
    """The safety margin S (trap style), the exclusions the judges apply, and the native engine's depth."""
    judges: JudgeSettings = field(default_factory=JudgeSettings)
    """The practical and trappy judges' thresholds (which judges run is decided by the evidence)."""
    trap_candidates: int = 6
    """Trap style: how many of our moves, by the shallow pass's ranking, get a full-depth value
    (the backend's best move always does); those within S of the best are judged."""
    opponent_rating: int = 1500
    """The opponent's rating, for the human evidence about their replies (UCI_Opponent overrides it)."""
    tutor: TutorSettings = field(default_factory=TutorSettings)
    """The tutor style."""

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise SettingsError(f"invalid style {self.style!r}: expected trap, tutor or best")
        check_whole("seed", self.seed, 0)
        check_whole("trap candidates", self.trap_candidates, 1)
        check_whole("opponent rating", self.opponent_rating, 0)

    @property
    def margin_cp(self) -> Value | None:
        """The safety margin in centipawns (None: every move is within it)."""
        return self.diffimax.safety_cp
