"""A mining worker's transposition table: the engine's answers at the positions it owns, bounded.

Each position of a job is routed by its *analysis key* to the one worker that owns the key's
partition (`partition_of`), so a repeat of a position meets the table that holds its answers.
What the table keeps is engine work only — the shallow pass, the best reply's search, each reply's
line, the seed's DiffiMax — never a verdict: the human evidence and the verdicts belong to the
occurrence (its mover's rating and clock), and are judged again at every repeat.

Every answer depends on the analysis key alone (the position, its halfmove clock and the
positions since the last irreversible move, which is all a search can see of the game), and every
search starts from a clean engine state. So an answer served from the table is the answer a fresh
search would give, and the rows never depend on which repeats were served: only how much engine
work the job spent does (how many workers, how big their tables, what was evicted, a restarted
worker's empty table).

A job given an evaluation cache (`mine --evals`) fills a fresh entry with the root searches its
cached evals are deep enough for (`serve_cached`) before the judging asks for them.

Entries are kept pickled and compressed (`zlib`, level 1), least recently used first out, within
a byte budget (`--table-mb`).
"""

from __future__ import annotations

import hashlib
import pickle
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import chess

from pipeline.common.files import MIB
from pipeline.engines.options import EngineOptions
from pipeline.evals.cache import cached_lines
from pipeline.evals.export import CachedEval
from schemas.dataset import to_signed64
from schemas.rows import ChoiceColumns
from search.backend import Backend, Level, ReplyValues
from search.diffimax import DiffiMaxResult
from search.settings import DiffiMaxSettings
from search.values import Value

# The default byte budget of one worker's table, in MiB (`--table-mb`): on 10,000 games of the
# shared player_a file it serves all but a few per cent of the repeats exact job-wide reuse would
# (docs/results/mining.md, "Per-worker tables").
DEFAULT_TABLE_MB = 256

# A line: (value, principal variation after the move, engine nodes spent on it).
Line = tuple[Value, tuple[str, ...], int]


def analysis_key(position_key: int, halfmove_clock: int, history: Sequence[int]) -> int:
    """The signed 64-bit key of what a search can see: the position (its Polyglot key), its halfmove
    clock (the fifty-move rule, and Stockfish's evaluation, depend on it) and the keys of the
    positions since the last irreversible move, oldest first (repetitions). A position right after
    an irreversible move has no history, and its key is its Polyglot key."""
    if halfmove_clock == 0 and not history:
        return position_key
    digest = hashlib.blake2b(digest_size=8)
    digest.update(position_key.to_bytes(8, "little", signed=True))
    digest.update(halfmove_clock.to_bytes(2, "little"))
    for key in history:
        digest.update(key.to_bytes(8, "little", signed=True))
    return to_signed64(int.from_bytes(digest.digest(), "little"))


def partition_of(key: int, partitions: int) -> int:
    """The worker that owns `key` among `partitions` (Zobrist keys' low bits are uniform)."""
    return key % partitions


@dataclass
class AnalysisEntry:
    """The engine's answers at one analysis key, for the job's setter and settings."""

    shallow: ReplyValues | None = None
    best: dict[Level, ReplyValues] = field(default_factory=dict)
    lines: dict[tuple[str, Level], Line] = field(default_factory=dict)
    seed: DiffiMaxResult | None = None
    choices: ChoiceColumns | None = None
    """The side to move's setter choices (`--setter-choices`), when asked."""


def serve_cached(
    entry: AnalysisEntry, board: chess.Board, evals: list[CachedEval], levels: dict[Level, EngineOptions]
) -> int:
    """Put into `entry` (a position's entry, with no answers yet) the root searches that `evals` (the
    position's cached evals, deepest first: `mine --evals`) stand in for at each of `levels`, and
    their lines' reply values; the number of levels served. The values are the cache's, not a
    search's: a job with a cache depends on it (its identity names the file)."""
    served = 0
    for level, limits in levels.items():
        values, pvs = cached_lines(board, evals, limits)
        if not values:
            continue
        best = min(values, key=values.__getitem__)  # the responder's best: the setter's lowest value
        entry.best[level] = ReplyValues({best: values[best]}, {best: pvs[best]}, best, 0)
        for move, value in values.items():
            entry.lines[move, level] = (value, pvs[move], 0)
        served += 1
    return served


class AnalysisTable:
    """A bounded table of `AnalysisEntry` by analysis key: least recently used out first, within
    `budget_bytes` of packed entries. `hits` / `misses` count `get`s."""

    def __init__(self, budget_bytes: int = DEFAULT_TABLE_MB * MIB) -> None:
        if budget_bytes < 0:
            raise ValueError(f"table budget {budget_bytes!r} bytes must be >= 0")
        self.budget = budget_bytes
        self.entries: OrderedDict[int, bytes] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def get(self, key: int) -> AnalysisEntry | None:
        packed = self.entries.get(key)
        if packed is None:
            self.misses += 1
            return None
        self.hits += 1
        self.entries.move_to_end(key)
        return self.unpack(packed)

    @staticmethod
    def pack(entry: AnalysisEntry) -> bytes:
        """An entry as the table keeps it."""
        return zlib.compress(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL), 1)

    @staticmethod
    def unpack(packed: bytes) -> AnalysisEntry:
        entry: AnalysisEntry = pickle.loads(zlib.decompress(packed))
        return entry

    def put(self, key: int, entry: AnalysisEntry) -> None:
        """Keep `entry` (replacing what `key` held), then evict down to the budget."""
        packed = self.pack(entry)
        old = self.entries.pop(key, None)
        if old is not None:
            self.bytes -= len(old)
        self.entries[key] = packed
        self.bytes += len(packed)
        while self.bytes > self.budget and self.entries:
            _, evicted = self.entries.popitem(last=False)
            self.bytes -= len(evicted)
            self.evictions += 1

    def __len__(self) -> int:
        return len(self.entries)

    def stats(self) -> dict[str, int]:
        """Entries, packed bytes, hits, misses and evictions so far (a worker's `table_stats`)."""
        return {
            "entries": len(self),
            "bytes": self.bytes,
            "hits": self.hits,
            "misses": self.misses,
            "evictions": self.evictions,
        }

    def clear(self) -> None:
        self.entries.clear()
        self.bytes = 0


class TableLines:
    """`pipeline.judging.EngineLines` over an entry: an answer the entry holds is served, any other
    is asked of the backend (from a clean engine state, so that it depends on the position alone)
    and kept. `changed` says whether the entry gained an answer; `asked` counts engine calls."""

    def __init__(
        self,
        entry: AnalysisEntry,
        backend: Backend,
        board: chess.Board,
        setter: chess.Color,
        settings: DiffiMaxSettings,
    ) -> None:
        self.entry = entry
        self.backend = backend
        self.board = board
        self.setter = setter
        self.settings = settings
        self.changed = False
        self.asked = 0

    @property
    def probes(self) -> bool:
        return self.backend.probes

    def _clean(self) -> None:
        self.asked += 1
        self.changed = True
        self.backend.new_unit()

    def shallow(self) -> ReplyValues:
        if self.entry.shallow is None:
            self._clean()
            self.entry.shallow = self.backend.reply_values(self.board, self.setter, self.settings, None, "shallow")
        return self.entry.shallow

    def best(self, level: Level) -> ReplyValues:
        found = self.entry.best.get(level)
        if found is None:
            self._clean()
            found = self.entry.best[level] = self.backend.reply_values(
                self.board, self.setter, self.settings, None, level
            )
        return found

    def replies(self, moves: Sequence[str], level: Level) -> ReplyValues:
        lines = self.entry.lines
        for move in moves:
            if (move, level) not in lines:
                self._clean()  # one search per reply, each from a clean state: its own nodes, its own value
                found = self.backend.reply_values(self.board, self.setter, self.settings, [move], level)
                lines[move, level] = (found.values[move], found.lines.get(move, ()), found.nodes)
        chosen = [lines[move, level] for move in moves]
        return ReplyValues(
            {move: line[0] for move, line in zip(moves, chosen, strict=True)},
            {move: line[1] for move, line in zip(moves, chosen, strict=True)},
            None,
            sum(line[2] for line in chosen),
        )

    def seed(self) -> DiffiMaxResult:
        if self.entry.seed is None:
            self._clean()
            self.entry.seed = self.backend.analyse(self.board, self.setter, self.settings)
        return self.entry.seed


__all__ = [
    "DEFAULT_TABLE_MB",
    "AnalysisEntry",
    "AnalysisTable",
    "TableLines",
    "analysis_key",
    "partition_of",
    "serve_cached",
]
