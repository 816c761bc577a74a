"""The Lichess `GameUrl` of a puzzle: the source game's address from its `Site` or `Link` header,
with the ply of the puzzle's FEN, and the `Link` header read back from the game's source where the
dataset does not keep it (chess.com games carry their address only there)."""

from __future__ import annotations

import io
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import chess
import chess.pgn

from pipeline.common.sanitize import safe_url
from pipeline.ingest.sources import InputError, compression_of, is_url, open_stream

_LICHESS_GAME = re.compile(r"https://lichess\.org/[A-Za-z0-9]{8}")
_CHESSCOM_GAME = re.compile(r"https://www\.chess\.com/(?:game/)?(?:live|daily)/(?:game/)?[0-9]+")
GAME_BYTES = 65536  # a game is read from at most this many bytes at its offset


def game_url(site: str | None, fen: str, ply: int, link: str | None = None) -> str:
    """The Lichess GameUrl: the game's http(s) address (`Site`, else `Link`) with the puzzle's ply.

    A lichess.org game gets Lichess's own form, `/black` when Black moves first and `#ply`; a
    chess.com game its viewer's `?move=ply`; any other address is kept as it is (no anchor we
    know it understands). Anything but a plain http(s) URL gives an empty cell.
    """
    url = safe_url(site) or safe_url(link)
    if _LICHESS_GAME.fullmatch(url):
        side = "/black" if chess.Board(fen).turn == chess.BLACK else ""
        return f"{url}{side}#{ply}"
    if _CHESSCOM_GAME.fullmatch(url):
        return f"{url}?move={ply}"
    return url


@dataclass(frozen=True)
class SourceGame:
    """What the puzzles read back from a game's source: its `Link` and its moves."""

    link: str | None
    moves: tuple[str, ...]
    """The mainline in UCI, as far as it could be read (for the opening)."""


def source_games(games: Iterable[tuple[str, str, int]]) -> dict[str, SourceGame]:
    """Each (game id, source, byte offset)'s `Link` header and moves, read from the game's source.

    Each source is read once, forward, up to its last wanted game (a plain file by seeking). A
    source that cannot be read (moved, or a URL: never fetched again) gives nothing, and the
    puzzle goes without (its GameUrl and OpeningTags then come from the dataset alone).
    """
    wanted: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for game_id, source, offset in games:
        if not is_url(source):
            wanted[source].append((offset, game_id))
    found: dict[str, SourceGame] = {}
    for source, offsets in wanted.items():
        try:
            found |= _games_in(source, sorted(offsets))
        except (InputError, OSError, EOFError, ValueError):
            continue  # the source is gone or unreadable
    return found


def _games_in(source: str, offsets: list[tuple[int, str]]) -> dict[str, SourceGame]:
    found: dict[str, SourceGame] = {}
    if compression_of(source) == "none":
        with open(source, "rb") as stream:
            for offset, game_id in offsets:
                stream.seek(offset)
                found[game_id] = _parse(stream.read(GAME_BYTES))
        return found
    with open_stream(source) as stream:
        position = 0
        for offset, game_id in offsets:
            while position < offset:  # a compressed stream only reads forward
                skipped = stream.read(min(offset - position, 1 << 20))
                if not skipped:
                    return found
                position += len(skipped)
            block = stream.read(GAME_BYTES)
            position += len(block)
            found[game_id] = _parse(block)
    return found


def _parse(block: bytes) -> SourceGame:
    """The first game of `block`: its Link (http(s) only) and the moves python-chess could read."""
    game = chess.pgn.read_game(io.StringIO(block.decode("utf-8", errors="replace")))
    if game is None:
        return SourceGame(None, ())
    return SourceGame(safe_url(game.headers.get("Link")) or None, tuple(m.uci() for m in game.mainline_moves()))
