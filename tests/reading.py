"""What a person reads, checked as they would read it (issue 44, item 6): one scale for a loss of win
chances, and no internal mate marker.

- **A loss of win chances** is shown in points of Lichess's Win% (0-100) only
  (`search.values.win_percent_points`): in a table, a column named `*_win_pct_lost`; in words,
  "N % win chance". The rows' own scale (0..2, `win_drop`, `expected_loss`, `fall_drop`) is for
  machines and never reaches a reader, nor does a loss written as a small decimal of "win chances".
- **A mate** reads "#N" or "mate": never the internal mate score (MATE - n = 99,9xx centipawns) nor
  it divided into pawns (999.9x).
- **A move** reads in SAN: a coordinate move (UCI, `g1f3`) only in a column for machines, named
  `*_uci`, or inside the per-reply evidence list `responses`.

`two_scales`, `mate_markers` and `coordinate_moves` return what they found, so a failing test names it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

# The rows' names for a loss on 0..2: a reader's table shows none of them.
MACHINE_LOSS_COLUMNS = frozenset({"win_drop", "played_win_drop", "expected_loss", "fall_drop", "fallen_win_drop"})
# A loss of win chances written as a decimal on 0..2 ("0.15 win chances", "win drop 0.29").
DECIMAL_WIN_LOSS = re.compile(r"\b[0-2]\.\d+ win chances?\b|\bwin (?:drop|chances lost) [0-2]\.\d+\b")
# The internal mate score (MATE - n, 90,000 <= |cp| <= 100,000) in centipawns, or in pawns as the
# pawn formatting writes it (two decimals: 999.98 for a mate n = 2 plies away).
MATE_MARKER = re.compile(r"(?<![\w.,])-?(?:9\d{4}|100000)(?![\w,.])|(?<![\w.,])-?(?:9\d\d|1000)\.\d\d(?!\w)")


def two_scales(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """Where a table shows a loss of win chances off the people's scale: a machine column, or a
    `*_win_pct_lost` value outside 0-100."""
    found = [f"column {name}" for name in columns if name in MACHINE_LOSS_COLUMNS]
    losses = [index for index, name in enumerate(columns) if name.endswith("win_pct_lost")]
    for row in rows:
        for index in losses:
            value = row[index]
            if value is not None and not 0 <= value <= 100:
                found.append(f"{columns[index]} = {value}")
    return found


# A percentage written without its space ("24%", "95% interval"): people read one writing,
# `search.values.format_percent`'s "24 %" (Win% and the PGN's %clk are names, not numbers).
PERCENT_WITHOUT_SPACE = re.compile(r"\d%")


def percents_without_space(text: str) -> list[str]:
    """The percentages of a text for people not written as `format_percent` writes them."""
    return [text[max(0, m.start() - 12) : m.end() + 8] for m in PERCENT_WITHOUT_SPACE.finditer(text)]


def two_scales_in_words(text: str) -> list[str]:
    """A loss of win chances written on the rows' 0..2 scale in a text for people."""
    return DECIMAL_WIN_LOSS.findall(text)


def mate_markers(text: str) -> list[str]:
    """The internal mate scores a text shows (99998, 999.98)."""
    return MATE_MARKER.findall(text)


# A move in coordinates standing alone: not part of a word, a FEN's rank ("1b1b4/"), a link or a key.
UCI_MOVE = re.compile(r"(?<![\w/#.-])[a-h][1-8][a-h][1-8][qrbn]?(?![\w/.-])")
# Columns whose moves are for machines: the UCI beside a SAN column, and the per-reply evidence.
MACHINE_MOVE_COLUMNS = frozenset({"responses"})


def coordinate_moves(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """Where a table shows a move in coordinates in a reader's column (`column: value`)."""
    read = [
        i for i, name in enumerate(columns) if not name.endswith(("_uci", "_key")) and name not in MACHINE_MOVE_COLUMNS
    ]
    found = []
    for row in rows:
        for index in read:
            value = row[index]
            for item in value if isinstance(value, list | tuple) else [value]:
                if isinstance(item, str) and UCI_MOVE.search(item):
                    found.append(f"{columns[index]}: {item}")
    return found


def coordinate_moves_in_words(text: str) -> list[str]:
    """The coordinate moves a text for people shows."""
    return UCI_MOVE.findall(text)


PERCENT = r"[-+]?\d+(?:\.\d)? %"


def shows_percent(text: str, fraction: float) -> bool:
    """Whether `text` ("58 %", "+6.1 %", "9.7 %") is `fraction` (a score, a difference of two, a
    probability) in percent, to the digits it shows."""
    match = re.fullmatch(r"([-+]?\d+)(\.\d)? %", text.strip())
    if match is None:
        return False
    step = 0.1 if match[2] else 1.0
    return abs(float(match[1] + (match[2] or "")) - 100 * fraction) <= step / 2 + 1e-9
