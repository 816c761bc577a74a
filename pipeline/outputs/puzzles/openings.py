"""`OpeningTags` in Lichess's form, from the game's opening as mined (`pipeline.ingest.openings`:
Lichess's table, the deepest position of the game found in it).

Lichess's puzzle CSV tags a puzzle whose FEN comes within the first LICHESS_OPENING_PLIES plies
with the opening's family and family + variation keys (`Other_variations` when the name has no
variation): measured on the shared samples, every row with OpeningTags has a FEN at ply <= 37 and
no row beyond has any.
"""

from __future__ import annotations

import re
import unicodedata

import chess

from pipeline.common.sanitize import clean_text

LICHESS_OPENING_PLIES = 37  # a puzzle whose FEN is at a later ply gets no OpeningTags (Lichess's CSV)


def opening_key(name: str) -> str:
    """Lichess's opening key: accents and punctuation dropped, words joined by underscores."""
    folded = unicodedata.normalize("NFKD", name)
    kept = "".join(c for c in folded if c.isalnum() or c in " -" if not unicodedata.combining(c))
    kept = "".join(c if c.isascii() else "" for c in kept)
    return re.sub(r"[\s_]+", "_", kept.strip()).strip("_-")


def opening_tags(opening: str | None) -> str:
    """`Family Family_Variation` as in the Lichess puzzle CSV, from an opening name (untrusted)."""
    name = clean_text(opening)
    if not name or name == "?":
        return ""
    family, colon, rest = name.partition(":")
    variation = rest.split(",")[0].strip() if colon else ""
    tags = [opening_key(family), opening_key(f"{family} {variation or 'Other variations'}")]
    return " ".join(dict.fromkeys(tag for tag in tags if tag))


def fen_ply(fen: str) -> int:
    """Plies played before a FEN position, from its move counters."""
    board = chess.Board(fen)
    return 2 * (board.fullmove_number - 1) + (board.turn == chess.BLACK)


def puzzle_opening_tags(fen: str, opening: str | None, start_fen: str | None = None) -> str:
    """OpeningTags of a puzzle at `fen` from its game's opening (Lichess's name): empty past
    LICHESS_OPENING_PLIES and for a game from a set-up position."""
    if fen_ply(fen) > LICHESS_OPENING_PLIES or start_fen:
        return ""
    return opening_tags(opening)
