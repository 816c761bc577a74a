"""How well the fall probability is calibrated: at each sampled position, the predicted chance that
the human plays a reply losing at least the practical drop (`search.judges.fall_estimate`)
against whether the human did (the played move's loss, searched as the candidates are).

The positions are put into ten bins of equal count by their predicted probability (deciles: the
predictions crowd near 0, so bins of equal width would leave most of them empty); each bin's mean
prediction is set against its observed rate, with a Wilson interval. Two summaries:

- the expected calibration error, the mean of |observed - predicted| over the bins weighted by
  their counts;
- the Brier score, the mean squared error of the prediction against the 0/1 outcome.

Both overall, by the responder's rating band and by their clock when deciding (where the games
carry `%clk`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np
from scipy.optimize import minimize  # type: ignore[import-untyped]

from pipeline.common.stats import wilson
from search.judges import JudgeSettings, NodeEvidence, fall_estimate


class ScoredRecord(Protocol):
    """What the calibration reads of a harness record (`pipeline.harness.measure.ScoredRecord`)."""

    @property
    def evidence(self) -> NodeEvidence: ...
    @property
    def played(self) -> str: ...
    @property
    def rating(self) -> int | None: ...
    @property
    def clock_seconds(self) -> float | None: ...


BINS: Final = 10
# Rating bands of the responder (lower bounds; the last is open): wide enough for a few hundred
# positions to give each band a figure.
RATING_BANDS: Final = (0, 1200, 1600, 2000)
# Clock buckets in seconds (lower bounds), as the saved query `fall-rate-by-clock` cuts them.
CLOCK_BUCKETS: Final = (0, 10, 30, 60, 180)
# The falling mass itself: no pool's calibration (the first entry serves every pool).
UNCALIBRATED: Final = (("lichess", 1.0, 0.0),)


@dataclass(frozen=True)
class Observation:
    """One position: the predicted fall probability, and whether the human fell."""

    predicted: float
    fell: bool
    expected_loss: float
    rating: int | None
    clock_seconds: float | None
    pool: str | None = None


def observations(records: Sequence[ScoredRecord], settings: JudgeSettings) -> list[Observation]:
    """The positions with a fall estimate and a measured played move (the others cannot be scored):
    the prediction from the evidence as the judges at `settings` search it (`fall_estimate` drops
    what the harness searched beyond that, the played move among it), the outcome from the played
    move as the harness searched it."""
    found = []
    for record in records:
        evidence = record.evidence
        estimate = fall_estimate(evidence, settings)
        played = next((r for r in evidence.replies if r.move == record.played), None)
        if estimate is None or played is None:
            continue
        drop = 0.0 if played.move == evidence.best else evidence.settled_drop(played)
        if drop is None:
            continue
        found.append(
            Observation(
                estimate.fall_p,
                drop >= settings.practical_drop,
                estimate.expected_loss,
                record.rating,
                record.clock_seconds,
                evidence.pool,
            )
        )
    return found


def reliability(found: Sequence[Observation], bins: int = BINS) -> list[dict[str, Any]]:
    """The reliability table: `bins` bins of equal count by prediction, each with its mean
    prediction, observed rate and Wilson 95 % interval."""
    ordered = sorted(found, key=lambda o: o.predicted)
    rows = []
    for index in range(bins):
        part = ordered[index * len(ordered) // bins : (index + 1) * len(ordered) // bins]
        if not part:
            continue
        fell = sum(o.fell for o in part)
        low, high = wilson(fell, len(part))
        rows.append(
            {
                "bin": index + 1,
                "n": len(part),
                "predicted_from": part[0].predicted,
                "predicted_to": part[-1].predicted,
                "predicted": sum(o.predicted for o in part) / len(part),
                "observed": fell / len(part),
                "observed_low": low,
                "observed_high": high,
            }
        )
    return rows


def calibration_summary(found: Sequence[Observation], bins: int = BINS) -> dict[str, Any]:
    """The reliability table with its expected calibration error and Brier score."""
    table = reliability(found, bins)
    total = sum(row["n"] for row in table)
    return {
        "positions": len(found),
        "falls": sum(o.fell for o in found),
        "predicted_mean": sum(o.predicted for o in found) / len(found) if found else 0.0,
        "observed_rate": sum(o.fell for o in found) / len(found) if found else 0.0,
        "ece": sum(row["n"] * abs(row["observed"] - row["predicted"]) for row in table) / total if total else 0.0,
        "brier": sum((o.predicted - o.fell) ** 2 for o in found) / len(found) if found else 0.0,
        "reliability": table,
    }


def _group(found: Sequence[Observation], key: Callable[[Observation], str | None]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Observation]] = {}
    for observation in found:
        name = key(observation)
        if name is not None:
            groups.setdefault(name, []).append(observation)
    # Fewer bins in a small group: ten bins of three positions say nothing.
    return {
        name: calibration_summary(part, max(1, min(BINS, len(part) // 20))) for name, part in sorted(groups.items())
    }


def _bucket(value: float | None, bounds: Sequence[int], unit: str) -> str | None:
    if value is None:
        return None
    index = max(i for i, bound in enumerate(bounds) if value >= bound)
    upper = f"-{bounds[index + 1]}" if index + 1 < len(bounds) else "+"
    return f"{index + 1}: {bounds[index]}{upper}{unit}"


def fit_fall_calibration(found: Sequence[Observation]) -> tuple[float, float]:
    """Platt scaling of the falling mass: the (a, b) of sigmoid(a * logit(mass) + b) that best
    predicts the falls (maximum likelihood), on observations whose `predicted` is the mass itself
    (`UNCALIBRATED`); masses of 0 or 1 are certain and left out."""
    inner = [o for o in found if 0.0 < o.predicted < 1.0]
    if len({o.fell for o in inner}) < 2:
        return (1.0, 0.0)  # nothing to fit: every position fell, or none did
    logits = np.array([math.log(o.predicted / (1.0 - o.predicted)) for o in inner])
    fell = np.array([float(o.fell) for o in inner])

    def negative_log_likelihood(params: np.ndarray) -> float:
        z = params[0] * logits + params[1]
        return float(np.sum(np.logaddexp(0.0, z) - fell * z))

    fitted = minimize(negative_log_likelihood, np.array([1.0, 0.0]), method="Nelder-Mead")
    return (round(float(fitted.x[0]), 2), round(float(fitted.x[1]), 2))


def calibrate(records: Sequence[ScoredRecord], settings: JudgeSettings) -> dict[str, Any]:
    """The fall probability's calibration on `records` (positions of games), overall, by rating
    band and by clock bucket; the worst band (by expected calibration error, among bands of 50
    positions or more) is named; and the Platt scaling these positions would fit (`fit`), from
    the falling mass, as the default was fitted on the tune split."""
    found = observations(records, settings)
    bands = _group(found, lambda o: _bucket(o.rating, RATING_BANDS, ""))
    clocks = _group(found, lambda o: _bucket(o.clock_seconds, CLOCK_BUCKETS, " s"))
    sizable = {name: band for name, band in bands.items() if band["positions"] >= 50}
    worst = max(sizable, key=lambda name: sizable[name]["ece"]) if sizable else None
    raw = observations(records, dataclasses.replace(settings, fall_calibration=UNCALIBRATED))
    pools = sorted({o.pool or "unknown" for o in raw})
    return {
        "overall": calibration_summary(found),
        "bands": bands,
        "clocks": clocks,
        "worst_band": worst,
        "pools": _group(found, lambda o: o.pool or "unknown"),
        "calibration": [list(entry) for entry in settings.fall_calibration],
        "mass": calibration_summary(raw),
        "fit": {pool: list(fit_fall_calibration([o for o in raw if (o.pool or "unknown") == pool])) for pool in pools},
    }


def calibration_table(calibration: dict[str, Any]) -> str:
    """The calibration as Markdown: the overall reliability table, then one line per band and clock."""
    overall = calibration.get("overall")
    if not overall or not overall["positions"]:
        return "Calibration: no position with a fall estimate and a measured played move."
    lines = [
        f"Fall probability: {overall['positions']} positions, predicted mean {overall['predicted_mean']:.1%}, "
        f"observed {overall['observed_rate']:.1%}; expected calibration error {overall['ece']:.3f}, "
        f"Brier {overall['brier']:.3f}",
        "",
        "| decile | positions | predicted (range) | predicted mean | observed [95 %] |",
        "|---|---|---|---|---|",
    ]
    for row in overall["reliability"]:
        lines.append(
            f"| {row['bin']} | {row['n']} | {row['predicted_from']:.1%}-{row['predicted_to']:.1%} | "
            f"{row['predicted']:.1%} | {row['observed']:.1%} [{row['observed_low']:.1%}, {row['observed_high']:.1%}] |"
        )
    if calibration["bands"] or calibration["clocks"]:
        lines += ["", "| group | positions | predicted mean | observed | ECE | Brier |", "|---|---|---|---|---|---|"]
    for kind in ("bands", "clocks"):
        for name, group in calibration[kind].items():
            label = ("rating " if kind == "bands" else "clock ") + name.split(": ", 1)[1]
            lines.append(
                f"| {label} | {group['positions']} | {group['predicted_mean']:.1%} | {group['observed_rate']:.1%} | "
                f"{group['ece']:.3f} | {group['brier']:.3f} |"
            )
    if calibration.get("worst_band"):
        lines.append(f"\nWorst band: rating {calibration['worst_band'].split(': ', 1)[1]}")
    if "mass" in calibration:
        mass = calibration["mass"]
        used = "; ".join(f"{pool} sigmoid({a:g} * logit(mass) + {b:g})" for pool, a, b in calibration["calibration"])
        fits = "; ".join(f"{pool} ({a:g}, {b:g})" for pool, (a, b) in calibration["fit"].items())
        by_pool = ", ".join(
            f"{pool} {group['positions']} positions, ECE {group['ece']:.3f}"
            for pool, group in calibration["pools"].items()
        )
        lines.append(
            f"\nCalibration by pool: {used}. By pool: {by_pool}. The falling mass uncalibrated: expected "
            f"calibration error {mass['ece']:.3f}, Brier {mass['brier']:.3f}. Platt scaling fitted on these "
            f"positions: {fits}"
        )
    return "\n".join(lines)
