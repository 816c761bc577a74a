"""A human-move model's evaluation as a report: Markdown for a reader, JSON for a benchmark.

    diffimax human eval --human-model MODEL GAMES... [--json]

The tables come from `pipeline.human.evaluate` (every position's outcome, by band and player,
calibration) and `pipeline.human.protocol` (Maia's protocol, by pool and band).
"""

from __future__ import annotations

from typing import Any

from pipeline.human.evaluate import (
    PartResult,
    by_band,
    calibration_rows,
    confidence_rows,
    format_table,
    player_groups,
    predictors_of,
    summarise,
)
from pipeline.human.protocol import maia_json, maia_section


def report_text(result: PartResult, title: str = "") -> str:
    """The evaluation as Markdown: by rating band, by player, calibration."""
    predictors = predictors_of(result)
    lines = [title] if title else []
    lines += ["Move matching by rating band (top-1 [95 % interval] / top-3, %):", ""]
    lines.append(format_table(by_band(result.outcomes, predictors), predictors))
    lines += maia_section(result.outcomes, predictors)
    baseline = [o for o in result.outcomes if o.in_baseline]
    if baseline and any(name.startswith("sf_") for name in predictors):
        lines += ["", f"The same on the {len(baseline)} positions where the engine baselines ran:", ""]
        lines.append(format_table(by_band(baseline, predictors), predictors))
    covered = [o for o in result.outcomes if "corpus" in o.ranks]
    if covered:
        share = len(covered) / len(result.outcomes)
        lines += ["", f"Where the corpus has the position ({len(covered)} positions, {100 * share:.1f} %):", ""]
        lines.append(format_table(by_band(covered, ["model", "uniform", "corpus"]), ["model", "uniform", "corpus"]))
        rest = [o for o in result.outcomes if "corpus" not in o.ranks]
        lines += ["", f"Where it has not ({len(rest)} positions):", ""]
        lines.append(format_table(by_band(rest, ["model", "uniform"]), ["model", "uniform"]))
    groups = player_groups(result)
    rows = [{"group": name, **{p: summarise(items, p) for p in ("model", "uniform")}} for name, items in groups.items()]
    lines += ["", "By player:", "", format_table(rows, ["model", "uniform"], key="group")]
    lines += ["", "Calibration (every legal move is one prediction):", ""]
    lines += ["| predicted | moves | mean predicted | observed |", "|---|---|---|---|"]
    for row in calibration_rows(result):
        lines.append(
            f"| {row['low']:.1f}-{row['high']:.1f} | {int(row['moves'])} | {row['predicted']:.3f} | "
            f"{row['observed']:.3f} |"
        )
    lines += ["", "Top-1 calibration (per position: the model's highest probability against top-1 accuracy):", ""]
    lines += ["| top probability | positions | mean | top-1 accuracy |", "|---|---|---|---|"]
    for row in confidence_rows(result.outcomes):
        if row["positions"]:
            lines.append(
                f"| {row['low']:.1f}-{row['high']:.1f} | {int(row['positions'])} | {row['predicted']:.3f} | "
                f"{row['observed']:.3f} |"
            )
    if result.model_positions:
        per = 1000 * result.model_seconds / result.model_positions
        lines += ["", f"Model: {per:.2f} ms per position ({result.model_positions} positions)."]
        if result.reference_seconds:
            lines.append(f"Reference model: {1000 * result.reference_seconds / result.model_positions:.2f} ms.")
    return "\n".join(lines)


def report_json(result: PartResult) -> dict[str, Any]:
    predictors = predictors_of(result)
    groups = player_groups(result)
    covered = [o for o in result.outcomes if "corpus" in o.ranks]
    return {
        "positions": len(result.outcomes),
        "by_band": by_band(result.outcomes, predictors),
        "by_band_baseline_positions": by_band([o for o in result.outcomes if o.in_baseline], predictors),
        "by_band_corpus_positions": by_band(covered, ["model", "uniform", "corpus"]) if covered else [],
        "by_player": {name: {p: summarise(items, p) for p in ("model", "uniform")} for name, items in groups.items()},
        "calibration": calibration_rows(result),
        "top1_calibration": confidence_rows(result.outcomes),
        "ms_per_position": 1000 * result.model_seconds / result.model_positions if result.model_positions else None,
        "reference_ms_per_position": (
            1000 * result.reference_seconds / result.model_positions if result.reference_seconds else None
        ),
        "maia_protocol": maia_json(result.outcomes, predictors),
    }
