"""The positions the judge harness samples: positions of games (a seeded, spread sample of one
split, `pipeline.common.splits`) and the known opening traps, each with what the human played."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

import chess

from pipeline.common.progress import Progress
from pipeline.common.splits import Split, sample_value, split_of
from pipeline.harness.known_traps import KnownTrap, load_known_traps
from pipeline.human.context import MoverContext, pool_of
from pipeline.ingest.games import read_games
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.outcomes import Selected
from pipeline.ingest.sources import iter_shards
from search.errors import DiffimaxError

# Positions are drawn from these plies of a game (the opening's first moves repeat in every game).
MIN_PLY: Final = 6
MAX_PLY: Final = 80
# At most this many positions of one game, so that the sample spreads over many games.
PER_GAME: Final = 2
# Seed of the position sample.
SAMPLE_SEED: Final = 0  # the one --seed default of every command; the figures of docs/judges.md say --seed 7


class HarnessError(DiffimaxError, ValueError):
    """An evaluation that cannot run as asked."""


@dataclass(frozen=True)
class HumanSample:
    """A position a human faced, and what they played."""

    source: str
    game_id: str
    ply: int
    board: chess.Board = field(compare=False)
    played: str
    context: MoverContext = field(default_factory=MoverContext)
    name: str = ""  # a known trap's name


# -- samples -------------------------------------------------------------------------------------


# The rating a known trap's victim is given (the traps record none): the players who fall into
# the classic opening traps are club players, and the yardstick is stated at 1200.
KNOWN_TRAP_RATING: Final = 1200


def game_samples(
    inputs: Sequence[str],
    split: Split | None,
    count: int,
    *,
    seed: int = SAMPLE_SEED,
    per_game: int = PER_GAME,
    progress: Progress | None = None,
) -> list[HumanSample]:
    """About `count` positions of the games in `split` (None: every game), at most `per_game` per
    game, chosen by a seeded hash of the game id: the same sample in every run. Every game is read
    (the sample is drawn from all of the split's games), counted on `progress`."""
    shown = progress or Progress.quiet()
    shown.start("read", "games")
    games: list[Selected] = []
    for shard in iter_shards(inputs, shard_games=2000):
        for outcome in read_games(shard, GameFilter(ply_from=MIN_PLY, ply_to=MAX_PLY)):
            shown.advance()
            if not isinstance(outcome, Selected):
                continue
            if split is None or split_of(shard.source, outcome.game["game_id"], outcome.game["byte_offset"]) == split:
                games.append(outcome)
    shown.finish_step()
    if not games:
        raise HarnessError(f"no {split or 'readable'} games in {', '.join(inputs)}")
    games.sort(key=lambda game: sample_value(seed, game.game["game_id"]))
    samples: list[HumanSample] = []
    for game in games:
        rows = [row for row in game.positions if row["ply"] >= MIN_PLY]
        rows.sort(key=lambda row: sample_value(seed + row["ply"], game.game["game_id"]))
        for row, board in game.boards():
            if row in rows[:per_game] and board.legal_moves.count() >= 2:
                opponent = game.game["black_elo" if board.turn == chess.WHITE else "white_elo"]
                context = MoverContext(
                    row["mover_rating"],
                    row["clock_seconds"],
                    game.game["base_seconds"],
                    game.game["increment_seconds"],
                    pool_of({"Site": game.game["site"]}),
                    opponent,
                )
                samples.append(
                    HumanSample(
                        game.game["source"], game.game["game_id"], row["ply"], board.copy(), row["move_uci"], context
                    )
                )
        if len(samples) >= count:
            break
    return samples[:count]


def trap_samples(traps: Iterable[KnownTrap] | None = None, rating: int | None = KNOWN_TRAP_RATING) -> list[HumanSample]:
    """The known traps as samples: the trap position, the victim's move as the move played, the
    victim rated `rating` (pool unknown; None: no rating)."""
    return [
        HumanSample(
            "known_traps",
            trap.name,
            trap.trap_ply,
            trap.board.copy(),
            trap.victim_move.uci(),
            MoverContext(rating=rating),
            trap.name,
        )
        for trap in (load_known_traps() if traps is None else traps)
    ]
