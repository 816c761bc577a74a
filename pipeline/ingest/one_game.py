"""One game of a PGN input by its number (`game_number`), read as a mining job reads every game
(the inputs cut into shards by `pipeline.ingest.sources`, each game parsed, checked and replayed
by `pipeline.ingest.games`): for a command that looks at one game (`diffimax explain --pgn`).

The games are read in order and the reading stops at the one asked for, so a game near the start
of a large or compressed file costs little.
"""

from __future__ import annotations

from pipeline.ingest.games import read_games
from pipeline.ingest.outcomes import Failed, Filtered, Selected
from pipeline.ingest.sources import iter_shards
from search.errors import DiffimaxError


class GameNumberError(DiffimaxError, ValueError):
    """No readable game of that number in the input: fewer games, or that game left out or unreadable."""


def game_number(source: str, number: int) -> Selected:
    """Game `number` (1-based, counting every game of the file, readable or not) of the PGN
    `source` (a file, compressed or not, or a URL). GameNumberError when the file holds fewer
    games, or that game is not standard chess or cannot be read (its reason); an input that
    cannot be read is `pipeline.ingest.sources.InputError`."""
    if number < 1:
        raise GameNumberError(f"invalid game number {number}: games are counted from 1")
    seen = 0
    for shard in iter_shards([source]):
        for outcome in read_games(shard):
            seen += 1
            if seen < number:
                continue
            if isinstance(outcome, Failed):
                raise GameNumberError(f"game {number} of {source!r} cannot be read: {outcome.reason}")
            if isinstance(outcome, Filtered):
                raise GameNumberError(f"game {number} of {source!r} is left out: {outcome.reason}")
            return outcome
    held = f"{seen} game{'' if seen == 1 else 's'}"
    raise GameNumberError(f"{source!r} holds {held}: there is no game {number}")
