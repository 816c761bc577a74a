"""Evidence beside prediction: what humans really played at the repertoire's positions, in a mined
dataset (`--data`), and what came of it.

For each move of the tree (a node and the position before it): among the games of the dataset that
reached that position with the opponent rated within the band around the repertoire's rating
(`JudgeSettings.rating_band`, the corpus's band), how many played the move (`count` of `games`),
and the player's score in the games that did (a win 1, a draw 1/2), each with a Wilson 95 %
interval (`pipeline.common.stats.wilson`). A position is matched by its Polyglot key, so a
transposition counts. Only games of the repertoire's pool count when it names one, and only the
games of one split (`pipeline.common.splits`) when asked: the held-out games of the must-show
figures.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess

from pipeline.common.splits import Split, split_of
from pipeline.common.stats import wilson
from pipeline.dataset.duck import connect, open_dataset
from pipeline.dataset.integrity import damage_named
from pipeline.dataset.sql import query
from pipeline.human.context import Pool, pool_of
from pipeline.repertoire.settings import RepertoireSettings

# A game's result as the player's points, by the player's colour.
POINTS = {"1-0": (1.0, 0.0), "0-1": (0.0, 1.0), "1/2-1/2": (0.5, 0.5)}


@dataclass(frozen=True)
class Observed:
    """What the dataset's games did with one move at one position."""

    games: int
    """Games that reached the position, the opponent in the band."""
    count: int
    """Of those, the games that played the move."""
    results: int
    """Of those, the games with a result."""
    points: float
    """The player's points in them."""

    @property
    def share(self) -> float | None:
        return None if self.games == 0 else self.count / self.games

    def share_interval(self) -> tuple[float, float]:
        return wilson(self.count, self.games)

    @property
    def score(self) -> float | None:
        return None if self.results == 0 else self.points / self.results

    def score_interval(self) -> tuple[float, float]:
        return wilson(self.points, self.results)


@dataclass(frozen=True)
class PlayedMove:
    """One move a dataset game played at a position: the move, and the player's points (None: no
    result)."""

    move: str
    points: float | None


class PositionGames:
    """The moves the dataset's games played at each position key, the opponent in the band."""

    def __init__(self, by_key: dict[int, list[PlayedMove]]) -> None:
        self.by_key = by_key

    def observed(self, key: int, move: str) -> Observed:
        played = self.by_key.get(key, [])
        chosen = [p for p in played if p.move == move]
        results = [p.points for p in chosen if p.points is not None]
        return Observed(len(played), len(chosen), len(results), float(sum(results)))

    def moves(self, key: int) -> list[PlayedMove]:
        return list(self.by_key.get(key, []))


@dataclass(frozen=True)
class GameOpening:
    """One game's first plies as the evidence reads them."""

    game_id: str
    moves: tuple[tuple[int, str], ...]
    """(signed Polyglot key of the position, the move played there), ply by ply from the start."""
    white_elo: int | None
    black_elo: int | None
    result: str | None

    def points(self, color: chess.Color) -> float | None:
        """`color`'s points in the game (None: no result)."""
        found = POINTS.get(self.result or "")
        return None if found is None else found[0 if color == chess.WHITE else 1]

    def rating(self, color: chess.Color) -> int | None:
        return self.white_elo if color == chess.WHITE else self.black_elo


def kept(
    row_source: str,
    game_id: str,
    offset: int | None,
    site: str | None,
    link: str | None,
    split: Split | None,
    pool: Pool | None,
) -> bool:
    """Whether a game counts: of `pool` (None: any) and of `split` (None: any)."""
    if pool is not None and pool_of({"Site": site, "Link": link}) != pool:
        return False
    return split is None or split_of(row_source, game_id, offset) == split


def in_band(rating: int | None, settings: RepertoireSettings) -> bool:
    """Whether an opponent rated `rating` is within the band around the repertoire's rating."""
    return rating is not None and abs(rating - settings.rating) <= settings.judges.rating_band // 2


def read_position_games(
    dataset: str | Path,
    keys: Iterable[int],
    settings: RepertoireSettings,
    *,
    split: Split | None = None,
    pool: Pool | None = None,
) -> PositionGames:
    """The games of `dataset` at the positions `keys` (signed Polyglot keys) whose opponent (the
    side that is not the player) is rated within the band around `settings.rating`, of `pool`
    (default: the repertoire's) and of `split` when given."""
    rows = run_named(dataset, "evidence-rows", {"keys": sorted(set(keys))})
    wanted_pool = pool if pool is not None else settings.pool
    opponent = not settings.color
    by_key: dict[int, list[PlayedMove]] = defaultdict(list)
    for key, move, _, white_elo, black_elo, result, source, game_id, offset, site, link in rows:
        if not in_band(white_elo if opponent == chess.WHITE else black_elo, settings):
            continue
        if not kept(source, game_id, offset, site, link, split, wanted_pool):
            continue
        points = POINTS.get(result or "")
        by_key[key].append(PlayedMove(move, None if points is None else points[0 if settings.color else 1]))
    return PositionGames(dict(by_key))


def read_game_openings(
    dataset: str | Path, plies: int, *, split: Split | None = None, pool: Pool | None = None
) -> list[GameOpening]:
    """Every game of `dataset` (of `pool` and `split` when given) with its first `plies` plies."""
    rows = run_named(dataset, "game-openings", {"plies": plies})
    games: dict[str, GameOpening] = {}
    skipped: set[str] = set()
    moves: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for game_id, _, key, move, white_elo, black_elo, result, source, offset, site, link in rows:
        if game_id in skipped:
            continue
        if game_id not in games:
            if not kept(source, game_id, offset, site, link, split, pool):
                skipped.add(game_id)
                continue
            games[game_id] = GameOpening(game_id, (), white_elo, black_elo, result)
        moves[game_id].append((key, move))
    return [dataclasses.replace(game, moves=tuple(moves[game.game_id])) for game in games.values()]


def read_pgn_openings(
    inputs: Sequence[str], plies: int, *, split: Split | None = None, pool: Pool | None = None
) -> list[GameOpening]:
    """`read_game_openings` from PGN files, read by the project's reader with no analysis (the
    held-out games of the must-show figures, which no mining job needs to judge)."""
    from pipeline.ingest.games import GameReader
    from pipeline.ingest.headers import GameFilter
    from pipeline.ingest.outcomes import Selected
    from pipeline.ingest.sources import iter_shards

    reader = GameReader(GameFilter(ply_from=0, ply_to=max(0, plies - 1)))
    found = []
    for shard in iter_shards(list(inputs)):
        for outcome in reader.read_shard(shard):
            if not isinstance(outcome, Selected):
                continue
            game = outcome.game
            if not kept(game["source"], game["game_id"], game["byte_offset"], game["site"], game["link"], split, pool):
                continue
            moves = tuple((row["position_key"], row["move_uci"]) for row in outcome.positions if row["ply"] < plies)
            found.append(GameOpening(game["game_id"], moves, game["white_elo"], game["black_elo"], game["result"]))
    return found


def run_named(dataset: str | Path, name: str, parameters: dict[str, object]) -> list[tuple[Any, ...]]:
    """The rows of the named query `name` of schemas/repertoire.sql over a mined dataset's views."""
    state = open_dataset(dataset)
    connection = connect(state)
    try:
        with damage_named(state):
            return connection.execute(query("repertoire", name), parameters).fetchall()
    finally:
        connection.close()
