"""A mining worker's evaluation cache (`mine --evals`): the evals a user brought, looked up for the
positions of each part it is given, and served in place of the root searches they are deep enough
for.

A *root search* is the search for the position's best reply and its value at one level (`probe`,
`deep`, `deeper`: `pipeline.judging.EngineLines.best`). A cached eval stands in for it when it
searched at least as much as that level's limit: at least as many nodes per line (its `knodes`
over its lines) under a node limit, at least as many plies under a depth limit. Its lines also
value the replies they start with at that level (a MultiPV line is an exact value of its move).
The shallow pass over every reply and the searches of other replies stay the engine's.

A cached eval is of the position alone (Lichess's export has no clocks or history), so it is
served at every occurrence of the position, whatever its halfmove clock and repetitions.
"""

from __future__ import annotations

from collections.abc import Collection

import chess
import chess.engine
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.dataset.objects import ObjectPath, dataset_path
from pipeline.engines.options import EngineOptions
from pipeline.engines.process import one_line
from pipeline.engines.uci import deeper_limits, has_probe, line_value, probe_limits
from pipeline.evals.export import EVALS_SCHEMA, CachedEval, CachedLine, EvalExportError
from search.backend import Level
from search.values import Value


def level_limits(limits: EngineOptions) -> dict[Level, EngineOptions]:
    """The limit of a root search at each level a cached eval may stand in for, from a job's
    per-line limits (`pipeline.engines.uci.line_limits`)."""
    levels: dict[Level, EngineOptions] = {"deep": limits, "deeper": deeper_limits(limits)}
    if has_probe(limits):
        levels["probe"] = probe_limits(limits)
    return levels


def deep_enough(cached: CachedEval, limits: EngineOptions) -> bool:
    """Whether `cached` searched at least as much per line as a search at `limits` would."""
    if limits.movetime is not None:
        return False  # a time limit has no node or depth count to compare (`MineConfig` refuses it)
    if limits.nodes is not None and cached.knodes * 1000 < limits.nodes * len(cached.lines):
        return False
    return limits.depth is None or cached.depth >= limits.depth


def cached_value(line: CachedLine, setter: chess.Color) -> Value:
    """A cached line's score as the engine backend values a root line: the setter's view, mates
    counted in plies from the position."""
    score: chess.engine.Score = chess.engine.Mate(line.mate) if line.mate is not None else chess.engine.Cp(line.cp or 0)
    return line_value(chess.engine.PovScore(score, chess.WHITE), setter, 0)


def cached_lines(
    board: chess.Board, evals: list[CachedEval], limits: EngineOptions
) -> tuple[dict[str, Value], dict[str, tuple[str, ...]]]:
    """The value and the principal variation after each move of the deepest of `evals` (a
    position's, deepest first) that is as deep as a search at `limits`, for the setter who just
    moved; nothing when none is. A line whose move is not legal on `board` is left out (a damaged
    cache: the loader checks what the text shows, the board the rest)."""
    cached = next((e for e in evals if deep_enough(e, limits)), None)
    values: dict[str, Value] = {}
    pvs: dict[str, tuple[str, ...]] = {}
    for line in () if cached is None else cached.lines:
        move = line.moves[0]
        if board.is_legal(chess.Move.from_uci(move)):
            values[move], pvs[move] = cached_value(line, not board.turn), line.moves[1:]
    return values, pvs


class EvalCache:
    """The converted evals of `source` (a Parquet file sorted by key, local or on object storage),
    looked up by signed Polyglot key. Opening reads the file's footer alone: each row group's key
    range. A lookup reads only the row groups whose range holds a key looked up (about one a key:
    the whole 330 M-position export is ~16,500 groups of `ROW_GROUP_ROWS`)."""

    def __init__(self, source: str) -> None:
        self.source = source
        where = dataset_path(source)
        try:
            if not where.is_file():
                raise EvalExportError(f"no evaluation cache {source!r} (convert an export with diffimax evals)")
            if isinstance(where, ObjectPath):
                name, filesystem = where.arrow()
                self.file = pq.ParquetFile(filesystem.open_input_file(name))
            else:
                self.file = pq.ParquetFile(str(where))
        except (OSError, pa.ArrowInvalid) as error:
            raise EvalExportError(f"cannot read evaluation cache {source!r}: {one_line(error)}") from None
        schema = self.file.schema_arrow
        missing = [name for name in EVALS_SCHEMA.names if name not in schema.names]
        if missing or not schema.field("key").type.equals(pa.int64()):
            raise EvalExportError(
                f"evaluation cache {source!r} is no converted export "
                f"(missing {', '.join(missing) or 'an int64 key'}); make one with diffimax evals"
            )
        self.low, self.high = self._key_ranges()

    def _key_ranges(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Each row group's smallest and largest key, from the footer; a file whose groups are not
        in key order (not written by `diffimax evals`) is refused."""
        metadata = self.file.metadata
        column = self.file.schema_arrow.get_field_index("key")
        low, high = [], []
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(column).statistics
            if stats is None or not stats.has_min_max:
                raise EvalExportError(
                    f"evaluation cache {self.source!r} has no key ranges: convert it with diffimax evals"
                )
            low.append(stats.min)
            high.append(stats.max)
        lows, highs = np.array(low, dtype=np.int64), np.array(high, dtype=np.int64)
        if len(lows) and (np.any(lows > highs) or np.any(lows[1:] < highs[:-1])):
            raise EvalExportError(
                f"evaluation cache {self.source!r} is not sorted by key: convert it with diffimax evals"
            )
        return lows, highs

    def groups_of(self, keys: Collection[int]) -> list[int]:
        """The row groups whose key range holds one of `keys` (a key may span two groups)."""
        wanted = np.array(sorted(set(keys)), dtype=np.int64)
        first = np.searchsorted(self.high, wanted, side="left")  # the first group that may hold it
        last = np.searchsorted(self.low, wanted, side="right")  # past the last group that may
        return sorted({group for start, stop in zip(first, last, strict=True) for group in range(start, stop)})

    def lookup(self, keys: Collection[int]) -> dict[int, list[CachedEval]]:
        """The cached evals of each of `keys` that has any, deepest first."""
        groups = self.groups_of(keys) if keys else []
        if not groups:
            return {}
        try:
            table = self.file.read_row_groups(groups, columns=EVALS_SCHEMA.names)
        except (OSError, pa.ArrowInvalid) as error:
            raise EvalExportError(f"cannot read evaluation cache {self.source!r}: {one_line(error)}") from None
        table = table.filter(pc.is_in(table["key"], pa.array(sorted(set(keys)), pa.int64())))
        found: dict[int, list[CachedEval]] = {}
        for row in table.to_pylist():
            lines = tuple(CachedLine(pv["cp"], pv["mate"], tuple(pv["line"].split())) for pv in row["pvs"] or ())
            if lines:
                found.setdefault(row["key"], []).append(
                    CachedEval(row["key"], row["fen"], row["depth"], row["knodes"], lines)
                )
        for evals in found.values():
            evals.sort(key=lambda e: (-e.knodes, -e.depth))
        return found


__all__ = ["EvalCache", "cached_lines", "deep_enough", "level_limits"]
