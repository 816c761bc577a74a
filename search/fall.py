"""The fall probability's record (`FallEstimate`) and its calibration (`calibrate_fall`): how
likely a human is to go wrong at a node, as `search.judges.fall_estimate` computes it. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class FallEstimate:
    """How likely a human of the responder's rating is to go wrong at a node, under the human reply
    distribution (`plausible_share`: the corpus where it has enough games, else the model).

    A reply *falls* when it loses at least `practical_drop` win chances; the falling mass is
    turned into a probability by `JudgeSettings.fall_calibration`. Replies valued at the probe or
    deeper count by their value; a reply only the shallow pass valued counts by its
    shallow loss in the point estimate, and between 0 and its mass in the bounds; a reply with no
    value at all counts 0 in the estimate and its mass in `high`. So `low <= fall_p <= high`, and
    `high - low` is the mass the estimate does not rest on a real search for."""

    fall_p: float
    """The probability of a reply that loses at least `practical_drop` (the point estimate)."""
    low: float
    """The mass of replies searched (probe or deeper) and found to fall: a lower bound."""
    high: float
    """`low` plus the mass of every reply not searched: an upper bound."""
    expected_loss: float
    """The expected loss of win chances (on `win_drop`'s scale), point estimate."""
    searched: float
    """The mass of the replies searched at the probe or deeper."""
    falling: tuple[str, ...]
    """The searched replies that fall, the most probable first: the mass a trap is made of."""
    mass: float
    """The falling mass itself, before the calibration (`fall_p` is its calibrated probability)."""


def calibrate_fall(mass: float, calibration: tuple[float, float]) -> float:
    """The fall probability of a falling mass: Platt scaling, sigmoid(a * logit(mass) + b), with
    0 and 1 kept (no reply can fall; every reply falls). Monotone, so the bounds stay bounds."""
    slope, offset = calibration
    if mass <= 0.0 or mass >= 1.0 or (slope, offset) == (1.0, 0.0):
        return mass
    return 1.0 / (1.0 + math.exp(-(slope * math.log(mass / (1.0 - mass)) + offset)))
