"""Move matching measured the way Maia reports it, per rating pool and band.

Maia (McIlroy-Young et al., 2020) leaves out the first 10 plies of every game (book moves, which
a model matches by memory) and positions where the mover has under 30 s on the clock (moves
made in time trouble, close to random). `maia_outcomes` keeps the rest; where a game records no
clock, only the ply rule applies. The tables split by rating pool (a chess.com 900 is not a
Lichess 900) and band, with every distribution predictor's top-1, top-3 and log-loss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

from pipeline.human.evaluate import DISTRIBUTIONS, Outcome, band_of, band_order, percent_cell, summarise

# Plies played before a position for it to count (Maia: the first 10 plies are left out).
MAIA_MIN_PLY: Final = 10
# Seconds the mover must have left, where the clock is known (Maia: under 30 s left out).
MAIA_MIN_CLOCK: Final = 30.0
# The name of the rows of games whose pool is not known.
UNKNOWN_POOL: Final = "unknown"


def maia_outcomes(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """The outcomes Maia's protocol counts: from ply 10 on, and not with under 30 s left."""
    return [o for o in outcomes if o.ply >= MAIA_MIN_PLY and (o.clock is None or o.clock >= MAIA_MIN_CLOCK)]


def by_pool_and_band(outcomes: Sequence[Outcome], predictors: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (pool, rating band), one per pool for all its bands, and one for everything."""
    cells: dict[tuple[str, str], list[Outcome]] = {}
    for outcome in outcomes:
        pool: str = outcome.pool or UNKNOWN_POOL
        cells.setdefault((pool, band_of(outcome.rating)), []).append(outcome)
        cells.setdefault((pool, "all"), []).append(outcome)
    rows = []

    def order(key: tuple[str, str]) -> tuple[str, bool, int]:
        pool, band = key
        return pool, band == "all", 0 if band == "all" else band_order(band)

    for pool, band in sorted(cells, key=order):
        chosen = cells[(pool, band)]
        rows.append({"pool": pool, "band": band, **{name: summarise(chosen, name) for name in predictors}})
    rows.append({"pool": "all", "band": "all", **{name: summarise(outcomes, name) for name in predictors}})
    return rows


def format_pool_table(rows: Sequence[dict[str, Any]], predictors: Sequence[str]) -> str:
    """Markdown: pool, band, n, then top-1 [95 %] / top-3 per predictor and log-loss per
    distribution predictor."""
    losses = [name for name in predictors if name in DISTRIBUTIONS and name != "uniform"]
    header = ["pool", "band", "n", *(f"{name} top-1 / top-3" for name in predictors)]
    header += [f"{name} log-loss" for name in losses]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [str(row["pool"]), str(row["band"]), str(row[predictors[0]]["n"])]
        for name in predictors:
            found = row[name]
            cells.append(
                "—"
                if not found["n"]
                else f"{percent_cell(found['top1'])} "
                f"[{percent_cell(found['top1_low'])}-{percent_cell(found['top1_high'])}] / "
                f"{percent_cell(found['top3'])}"
            )
        for name in losses:
            value = row[name]["log_loss"]
            cells.append("—" if math.isnan(value) else f"{value:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def maia_section(outcomes: Sequence[Outcome], predictors: Sequence[str]) -> list[str]:
    """The report's lines for Maia's protocol."""
    kept = maia_outcomes(outcomes)
    shown = [name for name in predictors if name in ("model", "reference", "uniform")]
    if not kept:
        return ["", "Maia's protocol: no position from ply 10 on with 30 s or more left."]
    return [
        "",
        f"Maia's protocol (from ply {MAIA_MIN_PLY} on, not with under {MAIA_MIN_CLOCK:g} s left where the clock "
        f"is known; {len(kept)} of {len(outcomes)} positions), by rating pool and band:",
        "",
        format_pool_table(by_pool_and_band(kept, shown), shown),
    ]


def maia_json(outcomes: Sequence[Outcome], predictors: Sequence[str]) -> dict[str, Any]:
    kept = maia_outcomes(outcomes)
    shown = [name for name in predictors if name in ("model", "reference", "uniform")]
    return {
        "min_ply": MAIA_MIN_PLY,
        "min_clock_seconds": MAIA_MIN_CLOCK,
        "positions": len(kept),
        "by_pool_and_band": by_pool_and_band(kept, shown) if kept else [],
    }


__all__ = ["MAIA_MIN_CLOCK", "MAIA_MIN_PLY", "by_pool_and_band", "maia_json", "maia_outcomes", "maia_section"]
