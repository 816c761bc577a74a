"""The fall probability's calibration figures (`pipeline.harness.calibration`) against a direct
computation here: deciles of equal count, the expected calibration error and the Brier score."""

from __future__ import annotations

import random

import pytest

from pipeline.harness.calibration import Observation, calibration_summary, calibration_table, reliability


def sample(seed: int, count: int, bias: float) -> list[Observation]:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        p = rng.random() ** 2
        found.append(Observation(p, rng.random() < min(1.0, p * bias), p / 3, rng.choice([1100, 1500, 2100]), None))
    return found


def test_deciles_ece_and_brier_match_their_definitions() -> None:
    found = sample(3, 1000, 1.0)
    table = reliability(found)
    assert [row["n"] for row in table] == [100] * 10
    ordered = sorted(found, key=lambda o: o.predicted)
    ece = 0.0
    for index, row in enumerate(table):
        part = ordered[index * 100 : (index + 1) * 100]
        assert row["predicted"] == pytest.approx(sum(o.predicted for o in part) / 100)
        assert row["observed"] == pytest.approx(sum(o.fell for o in part) / 100)
        assert row["observed_low"] <= row["observed"] <= row["observed_high"]
        ece += abs(row["observed"] - row["predicted"]) / 10
    figures = calibration_summary(found)
    assert figures["ece"] == pytest.approx(ece)
    assert figures["brier"] == pytest.approx(sum((o.predicted - o.fell) ** 2 for o in found) / 1000)


def test_a_calibrated_prediction_scores_better_than_a_biased_one() -> None:
    assert calibration_summary(sample(5, 4000, 1.0))["ece"] < 0.03
    assert calibration_summary(sample(5, 4000, 0.5))["ece"] > 0.08  # humans fall half as often as predicted


def test_the_table_reads_as_percentages() -> None:
    text = calibration_table(
        {"overall": calibration_summary(sample(1, 200, 1.0)), "bands": {}, "clocks": {}, "worst_band": None}
    )
    assert "expected calibration error" in text and "%" in text
    assert calibration_table({}).startswith("Calibration: no position")
