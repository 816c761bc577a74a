"""The Lichess puzzle CSV: exactly Lichess's columns, `Rating`/`RatingDeviation` from the human
model's estimate (`rating.py`), `Popularity`/`NbPlays` empty (no one has played these puzzles)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from pipeline.common.sanitize import spreadsheet_safe
from pipeline.outputs.puzzles.records import LICHESS_COLUMNS, Puzzle


def render_csv(puzzles: Sequence[Puzzle]) -> str:
    """Lichess puzzle CSV (`csv` module, minimal quoting, LF line ends); every cell made safe
    for spreadsheets (a leading `'` before `=`, `+`, `-`, `@`, tab or CR)."""
    stream = io.StringIO()
    writer = csv.writer(stream, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(LICHESS_COLUMNS)
    for p in puzzles:
        rating = "" if p.rating is None else str(p.rating)
        deviation = "" if p.rating_deviation is None else str(p.rating_deviation)
        row = [
            p.puzzle_id,
            p.fen,
            " ".join(p.moves),
            rating,
            deviation,
            "",
            "",
            " ".join(p.themes),
            p.game_url,
            p.opening_tags,
        ]
        writer.writerow([spreadsheet_safe(cell) for cell in row])
    return stream.getvalue()
