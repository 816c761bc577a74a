"""Step 2 of a plan: the game sample (seeded blocks of consecutive games read through the job's
reader and filters), and the units of its new positions drawn for timing (step 4)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from pipeline.ingest.games import GameReader
from pipeline.ingest.outcomes import Failed, Filtered, Selected
from pipeline.ingest.rows import PositionRow
from pipeline.ingest.sources import Shard, stream_shards
from pipeline.mine.config import MineConfig
from pipeline.mine.occurrences import Occurrence, occurrences_of
from pipeline.mine.plan.records import ReuseFit, SourceCount

# Consecutive games per sample block (blocks at seeded places, so the sample spans the input).
SAMPLE_BLOCK_GAMES = 25


@dataclass
class KeptGame:
    """A kept game of the sample, compactly: where it is, to read it again for its rows."""

    block: int  # index into the sample's blocks
    outcome: int  # index of its outcome within the block


@dataclass
class SampledGames:
    """The games the planner read from the job's inputs to time it, and the positions it drew from them."""

    blocks: list[tuple[Shard, int]] = field(default_factory=list)  # block, games of it the job reads
    games_read: int = 0
    filtered: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    kept: list[KeptGame] = field(default_factory=list)
    # One entry per position of a kept game, in reading order: kept-game index, ply, key.
    game_of: list[int] = field(default_factory=list)
    ply_of: list[int] = field(default_factory=list)
    key_of: list[int] = field(default_factory=list)
    parse_seconds: float = 0.0
    kept_parse_seconds: float = 0.0  # of parse_seconds, the kept games' (replayed in full)
    cut_seconds: float = 0.0
    cut_games: int = 0  # games of compressed sources the cut above went through

    def parse_seconds_per_game(self, rate: float) -> float:
        """The job's parse seconds per game read, at --game-rate `rate`: the sample is read without
        the rate, so a kept game it would thin costs what a filtered game costs (its headers), not
        its replay (none filtered in the sample: that cost is taken as nil, a hash beside a replay)."""
        others = self.games_read - len(self.kept)
        other_mean = (self.parse_seconds - self.kept_parse_seconds) / others if others else 0.0
        kept = rate * self.kept_parse_seconds + (1.0 - rate) * len(self.kept) * other_mean
        return (self.parse_seconds - self.kept_parse_seconds + kept) / max(1, self.games_read)


def choose_blocks(counts: Sequence[SourceCount], sample_games: int, seed: int) -> dict[int, list[int]]:
    """Seeded block indices (of SAMPLE_BLOCK_GAMES games) to read, by source index: every block
    when the sample covers the job."""
    blocks = [
        (index, block)
        for index, count in enumerate(counts)
        for block in range(math.ceil(count.sampleable / SAMPLE_BLOCK_GAMES))
    ]
    wanted = math.ceil(sample_games / SAMPLE_BLOCK_GAMES)
    if wanted < len(blocks):
        rng = np.random.default_rng(seed)
        picked = sorted(int(i) for i in rng.choice(len(blocks), size=wanted, replace=False))
        blocks = [blocks[i] for i in picked]
    chosen: dict[int, list[int]] = {}
    for index, block in blocks:
        chosen.setdefault(index, []).append(block)
    return chosen


def content_reader(config: MineConfig) -> GameReader:
    """The job's reader and filters without its --game-rate. The rate keeps a seeded hash's share
    of the games whatever they hold, so the plan reads the games it would thin and scales the
    counts by it instead (`count_figures`): at --game-rate 0.01 a 1,000-game sample would
    otherwise leave about 10 games to time, and a 40-game input none."""
    return GameReader(dataclasses.replace(config.game_filter, sample_rate=1.0))


def read_sample(config: MineConfig, counts: Sequence[SourceCount], chosen: dict[int, list[int]]) -> SampledGames:
    """Read the chosen blocks through the job's reader and filters (all but the rate)."""
    sample = SampledGames()
    reader = content_reader(config)
    for index, wanted in sorted(chosen.items()):
        count = counts[index]
        wanted_set = set(wanted)
        last = max(wanted)
        shards = cast(Generator[Shard, None, None], stream_shards(count.source, index, SAMPLE_BLOCK_GAMES))
        cut_seconds = 0.0
        start = time.perf_counter()
        for shard in shards:
            if shard.index in wanted_set:
                cut_seconds += time.perf_counter() - start
                limit = min(SAMPLE_BLOCK_GAMES, count.games_read - shard.index * SAMPLE_BLOCK_GAMES)
                _read_block(reader, shard, limit, sample)
                start = time.perf_counter()
            if shard.index >= last:
                break
        shards.close()
        if count.compressed:  # the driver cuts a range source by arithmetic alone
            sample.cut_seconds += cut_seconds + time.perf_counter() - start
            sample.cut_games += (last + 1) * SAMPLE_BLOCK_GAMES
    return sample


def _read_block(reader: GameReader, shard: Shard, limit: int, sample: SampledGames) -> None:
    block = len(sample.blocks)
    sample.blocks.append((shard, limit))
    start = time.perf_counter()
    outcomes = reader.read(shard.data or b"", source=shard.source, shard_id=shard.shard_id, base_offset=shard.start)
    for number, outcome in enumerate(outcomes):
        if number >= limit:
            break
        sample.games_read += 1
        now = time.perf_counter()  # this game's parse: the generator reads one game a step
        sample.parse_seconds += now - start
        if isinstance(outcome, Selected):  # always with a position: a game without is filtered (ply_window)
            sample.kept_parse_seconds += now - start
            game = len(sample.kept)
            sample.kept.append(KeptGame(block, number))
            for row in outcome.positions:
                sample.game_of.append(game)
                sample.ply_of.append(row["ply"])
                sample.key_of.append(row["position_key"])
        elif isinstance(outcome, Failed):
            sample.errors += 1
        elif isinstance(outcome, Filtered):
            sample.filtered[outcome.rule] = sample.filtered.get(outcome.rule, 0) + 1
        start = time.perf_counter()


def selected_games(config: MineConfig, sample: SampledGames, games: Sequence[int]) -> dict[int, Selected]:
    """The kept games of the sample with these indices, read again in full (rows, moves)."""
    reader = content_reader(config)
    by_block: dict[int, dict[int, int]] = {}
    for game in games:
        kept = sample.kept[game]
        by_block.setdefault(kept.block, {})[kept.outcome] = game
    found: dict[int, Selected] = {}
    for block, wanted in by_block.items():
        shard, limit = sample.blocks[block]
        outcomes = reader.read(shard.data or b"", source=shard.source, shard_id=shard.shard_id, base_offset=shard.start)
        for number, outcome in enumerate(outcomes):
            if number >= limit or number > max(wanted):
                break
            if number in wanted:
                assert isinstance(outcome, Selected), "the same bytes and filter give the same outcome"
                found[wanted[number]] = outcome
    return found


def draw_units(
    sample: SampledGames, fits: Sequence[ReuseFit], games: float, count: int, seed: int
) -> list[tuple[int, list[int], list[float]]]:
    """Kept games of the sample in a seeded order, until they hold `count` new positions: per game,
    its index, the indices of its positions whose key is new in the sample (what the driver would
    send as its unit) and their weights (the job's distinct positions at that ply per distinct one
    of the sample)."""
    ply_weight = {fit.ply: fit.distinct_at(games) / max(1, fit.distinct) for fit in fits}
    seen: set[int] = set()
    new_of: dict[int, list[int]] = {}
    for index, key in enumerate(sample.key_of):
        if key not in seen:
            seen.add(key)
            new_of.setdefault(sample.game_of[index], []).append(index)
    order = np.random.default_rng(seed + 1).permutation(len(sample.kept)).tolist()
    units: list[tuple[int, list[int], list[float]]] = []
    positions = 0
    for game in order:
        indices = new_of.get(game)
        if not indices:
            continue
        units.append((game, indices, [ply_weight[sample.ply_of[i]] for i in indices]))
        positions += len(indices)
        if positions >= count:
            break
    return units


def unit_of(selected: Selected, rows: Sequence[PositionRow]) -> tuple[Occurrence, ...]:
    """The occurrences of these positions of a game, in ply order (as the job's prepare step builds them)."""
    plies = {row["ply"] for row in rows}
    return tuple(occurrence for occurrence in occurrences_of(selected) if occurrence.ply in plies)
