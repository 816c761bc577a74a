"""How often humans played each reply in a position, from a mined dataset (the *human* judge)."""

from __future__ import annotations

from pathlib import Path

from pipeline.dataset.duck import connect
from schemas.dataset import to_signed64

# Width of the rating band around the responder's rating, in rating points.
DEFAULT_BAND = 200


def human_move_counts(
    dataset: str | Path, position_key: int, rating: int | None = None, band: int = DEFAULT_BAND
) -> dict[str, int]:
    """Replies played at `position_key` (unsigned or signed Zobrist) by movers rated within
    `band / 2` of `rating` (all movers when rating is None)."""
    connection = connect(dataset)
    sql = "select move_uci, count(*) from positions where position_key = ?"
    params: list[object] = [to_signed64(position_key) if position_key >= 1 << 63 else position_key]
    if rating is not None:
        sql += " and mover_rating between ? and ?"
        params += [rating - band // 2, rating + band // 2]
    rows = connection.execute(sql + " group by move_uci", params).fetchall()
    return {move: int(count) for move, count in rows}
