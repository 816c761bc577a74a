"""Plausibility judges beside the seed's dip judge (spec, "Beyond the seed").

The seed calls a reply plausible when its dip is at most R. Two more judges answer the same
question with other evidence, and each reports its own trap candidates so the analytics can ask
which judge predicts the mistakes humans actually make:

- *dip* (the seed): a trap candidate is an in-scope alternative with T <= dip <= R.
- *shallow* (Trappy-minimax style): the reply looks fine to a shallow search — its dip there is at
  most R — but dips at least T at full depth. A catastrophic reply that hides its refutation
  beyond the shallow horizon counts: that is the kind a hurried human plays.
- *human*: humans at that rating played the reply in this position at least `min_share` of the
  time (from the mined corpus), and it dips at least T at full depth.

Pure functions over analyses and counts; the searches and the corpus lookups live elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from search.analysis import ResponseAnalysis
from search.settings import DiffiMaxSettings

Judge = Literal["dip", "shallow", "human"]
JUDGES: tuple[Judge, ...] = ("dip", "shallow", "human")

# Share of human games in which a reply must have been played to count as plausible.
DEFAULT_MIN_SHARE = 0.05
# Fewest human games in a position before the human judge gives a verdict there.
DEFAULT_MIN_GAMES = 5


@dataclass(frozen=True)
class Verdict:
    """One judge's view of one reply. `plausible` None: the judge has no evidence here."""

    move: str
    plausible: bool | None
    trap: bool
    evidence: str  # a short reason for people: "shallow dip 0.40", "played in 12 of 40 games"


def dip_verdicts(analysis: ResponseAnalysis) -> dict[str, Verdict]:
    """The seed's judge, as already decided by `classify_responses`."""
    return {
        r.move: Verdict(r.move, r.reasonable, r.trap, f"dip {r.dip / 100:.2f}{'' if r.exact else ' (bound)'}")
        for r in analysis.responses
    }


def shallow_verdicts(
    full: ResponseAnalysis, shallow: ResponseAnalysis, settings: DiffiMaxSettings
) -> dict[str, Verdict]:
    """A reply is a shallow trap when the shallow search rates it within R of its best but the full
    search finds it at least T below the full-depth best. `shallow` must hold exact values."""
    shallow_dips = {r.move: r.dip for r in shallow.responses}
    verdicts = {}
    for r in full.responses:
        looks = shallow_dips.get(r.move)
        plausible = None if looks is None else looks <= settings.reasonable_cp
        # A bound is never on the wrong side of T (classify_responses' contract), so `dip` decides.
        trap = bool(plausible) and not r.best and r.excluded is None and r.dip >= settings.trap_cp
        evidence = "not searched" if looks is None else f"shallow dip {looks / 100:.2f}, full dip {r.dip / 100:.2f}"
        verdicts[r.move] = Verdict(r.move, plausible, trap, evidence)
    return verdicts


def human_verdicts(
    full: ResponseAnalysis,
    counts: Mapping[str, int],
    settings: DiffiMaxSettings,
    *,
    min_share: float = DEFAULT_MIN_SHARE,
    min_games: int = DEFAULT_MIN_GAMES,
) -> dict[str, Verdict]:
    """`counts` maps a reply (UCI) to how often humans of the chosen rating band played it here."""
    total = sum(counts.values())
    verdicts = {}
    for r in full.responses:
        played = counts.get(r.move, 0)
        if total < min_games:
            verdicts[r.move] = Verdict(r.move, None, False, f"only {total} games in the corpus")
            continue
        share = played / total
        plausible = share >= min_share
        trap = plausible and not r.best and r.excluded is None and r.dip >= settings.trap_cp
        verdicts[r.move] = Verdict(r.move, plausible, trap, f"played in {played} of {total} games ({share:.0%})")
    return verdicts
