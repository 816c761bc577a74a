"""Who is to move, and under what clock: what a human-move model conditions on.

A rating means something only within its *pool*: a chess.com 900 is not a Lichess 900 (the two
sites rate with different systems, start values and populations). `pool_of` names the pool of a
game from its headers (`Site`, else `Link`), with an explicit override for files whose headers do
not say (a user's own dump, a rating list of another site).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from search.errors import DiffimaxError

if TYPE_CHECKING:  # a type only: this module stays free of the PGN reader's imports
    from pipeline.ingest.rows import GameRow

Pool = Literal["lichess", "chesscom"]
POOLS: Final[tuple[Pool, ...]] = ("lichess", "chesscom")
# Host names (lower case, as a suffix of the URL's host or the whole Site tag) -> the pool.
POOL_HOSTS: Final[Mapping[str, Pool]] = {"lichess.org": "lichess", "chess.com": "chesscom"}


class PoolError(DiffimaxError, ValueError):
    """A rating pool that is not one of `POOLS`."""


@dataclass(frozen=True)
class MoverContext:
    """Who is to move and under what clock; every field may be None (unknown)."""

    rating: int | None = None
    """The mover's rating, in its `pool`."""
    clock_seconds: float | None = None
    """The mover's remaining time when deciding, in seconds."""
    base_seconds: int | None = None
    """The time control's base time in seconds (60 for 1+0)."""
    increment_seconds: int | None = None
    """The time control's increment per move in seconds."""
    pool: Pool | None = None
    """The rating pool the rating is in (`pool_of`); None: unknown (the model then treats the
    rating as it was trained on the mix of pools)."""
    opponent_rating: int | None = None
    """The opponent's rating, in the same pool (Maia-3 reads both players' ratings)."""


def mover_context(game: GameRow, white_to_move: bool, clock_seconds: float | None, pool: Pool | None) -> MoverContext:
    """Who moves in a position of `game` (White when `white_to_move`), with `clock_seconds` left
    (the position row's), against whom and under what time control; `pool` is the game's
    (`game_pool`)."""
    white, black = game["white_elo"], game["black_elo"]
    mover, opponent = (white, black) if white_to_move else (black, white)
    return MoverContext(mover, clock_seconds, game["base_seconds"], game["increment_seconds"], pool, opponent)


def game_pool(game: GameRow, override: Pool | None = None) -> Pool | None:
    """The rating pool of a game read from PGN (`pool_of` its Site and Link), or `override`."""
    return pool_of({"Site": game["site"], "Link": game["link"]}, override)


def parse_pool(name: str | None) -> Pool | None:
    """A pool name as given on a command line (`lichess`, `chesscom`, `chess.com`; `auto`/None:
    not given). PoolError names the valid ones."""
    if name is None:
        return None
    text = name.strip().lower().replace(".", "").replace("-", "").replace("_", "")
    if text in ("", "auto"):
        return None
    for pool in POOLS:
        if text == pool:
            return pool
    raise PoolError(f"unknown rating pool {name!r}: expected {', '.join(POOLS)} or auto")


def pool_of(headers: Mapping[str, str | None], override: Pool | None = None) -> Pool | None:
    """The rating pool of a game: `override` when given, else the site named by its `Site` tag
    (a URL or a bare name such as `Chess.com`), else by its `Link` tag; None when neither says."""
    if override is not None:
        return override
    for tag in ("Site", "Link", "site", "link"):
        value = headers.get(tag)
        if value:
            found = _pool_of_site(value)
            if found is not None:
                return found
    return None


def _pool_of_site(value: str) -> Pool | None:
    text = value.strip().lower()
    host = text.split("://", 1)[1] if "://" in text else text
    host = host.split("/", 1)[0].split(":", 1)[0]
    for suffix, pool in POOL_HOSTS.items():
        if host == suffix or host.endswith("." + suffix):
            return pool
    return None
