"""Tests of `pipeline.human.protocol`: move matching measured the way Maia reports it, the opening
and time trouble left out, per rating pool and band."""

from __future__ import annotations

import math


def outcome(ply: int, clock: float | None, rating: int, pool: str | None, rank: int):
    from pipeline.human.evaluate import Outcome

    return Outcome(
        "s.pgn",
        "g",
        ply,
        rating,
        "p",
        20,
        {"model": rank, "reference": 1},
        {"model": 0.5, "reference": 0.25, "uniform": 0.05},
        0.5,
        False,
        clock,
        pool,
    )  # type: ignore[arg-type]


def test_maia_protocol_leaves_out_the_opening_and_time_trouble():
    from pipeline.human.protocol import by_pool_and_band, maia_outcomes

    outcomes = [
        outcome(9, None, 1000, "chesscom", 0),  # a book move: out
        outcome(10, None, 1000, "chesscom", 0),  # no clock known: in
        outcome(30, 29.9, 1500, "lichess", 0),  # under 30 s: out
        outcome(30, 30.0, 1500, "lichess", 3),
        outcome(40, 100.0, 1500, None, 0),
    ]
    kept = maia_outcomes(outcomes)
    assert [o.ply for o in kept] == [10, 30, 40] and kept[1].clock == 30.0
    rows = {(row["pool"], row["band"]): row for row in by_pool_and_band(kept, ["model", "reference", "uniform"])}
    assert rows[("chesscom", "<1200")]["model"]["top1"] == 1.0
    assert rows[("lichess", "1400-1599")]["model"]["top1"] == 0.0
    assert rows[("unknown", "all")]["model"]["n"] == 1
    every = rows[("all", "all")]
    assert every["model"]["n"] == 3 and math.isclose(every["model"]["top1"], 2 / 3)
    assert every["reference"]["top1"] == 0.0 and math.isclose(every["reference"]["log_loss"], -math.log(0.25))
