"""Every numeric flag's range, checked against what the flag feeds before a command does any work.

`BOUNDS` is the one table: a flag (`--depth`), a flag of one command (`repertoire --rating`)
where that command feeds it elsewhere, or a job file's key (`engine-options.hash`, checked by
`pipeline.cli.jobfile` as the file is read), maps to the range of what it feeds: a Parquet column (the
range of the column's type, read from the schema, within the rules `diffimax verify` holds the
column to), a limit of Python (the longest wait a thread can make), of the engine (UCI nodes,
depth, Threads, Hash; `diffimax play`'s UCI options) or of memory where the flag sizes an
allocation. `guard_commands` wraps every command of the app with the check, so a value beyond
the range is one line before anything starts, not an `ArrowInvalid` or an `OverflowError` after
the work; a numeric flag without a row fails when the app is built (and in
tests/test_flag_ranges.py), so none escapes the table.
"""

from __future__ import annotations

import functools
import math
import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import typer

from pipeline.cli.options import UsageError
from pipeline.common.files import TIB_IN_MIB
from pipeline.engines.process import MOVETIME_MAX, NODES_MAX
from pipeline.mine.config import SIZE_MIB_MAX
from pipeline.play.uci_options import OPTIONS
from schemas import dataset, repertoire
from schemas.dataset import integer_range
from search.prototype.trees import MAX_LEAVES


@dataclass(frozen=True)
class FlagRange:
    """The values a flag takes: `low` to `high` (`low` itself excluded when `above`), and why."""

    low: float
    high: float
    reason: str
    above: bool = False

    def problem(self, value: float) -> str | None:
        """What `value` must be, when it is not (None: it is in range)."""
        finite = not isinstance(value, float) or math.isfinite(value)
        if finite and not (value < self.low or (self.above and value == self.low) or value > self.high):
            return None
        kind = "whole number" if isinstance(value, int) else "number" if finite else "finite number"
        low = f"above {_number(self.low)}" if self.above else f">= {_number(self.low)}"
        return f"a {kind} {low} and at most {_number(self.high)} ({self.reason})"


def _number(value: float) -> str:
    """1,000,000 for a whole number (or a float holding one), 1e+300 for a huge float."""
    whole = isinstance(value, int) or (math.isfinite(value) and value == int(value) and abs(value) < 1e18)
    return f"{int(value):,}" if whole else f"{value:g}"


def column(
    schema: pa.Schema, name: str, table: str, low: int | None = None, high: int | None = None, why: str = ""
) -> FlagRange:
    """The range of integer column `name` of `table` (`schema`): its type's, within `low` and
    `high` where the column's values are narrower (the rules `verify` holds it to), `why` says."""
    kind = schema.field(name).type
    smallest, largest = integer_range(kind)
    rule = dataset.VALUE_RULES.get(table, {}).get(name, (None, None))
    lows = [smallest, *(bound for bound in (low, rule[0]) if isinstance(bound, int | float))]
    highs = [largest, *(bound for bound in (high, rule[1]) if isinstance(bound, int | float))]
    least, most = int(max(lows)), int(min(highs))
    reason = f"the {table} column {name} is {kind}" if most == largest else why or f"what {table}.{name} holds"
    return FlagRange(least, most, reason)


def uci_option(name: str) -> FlagRange:
    """The range of `diffimax play`'s UCI spin option `name`, which its flag sets."""
    spec = next(spec for spec in OPTIONS if spec.name == name)
    return FlagRange(spec.minimum, spec.maximum, f"the UCI option {name}'s range")


def counted(low: int, reason: str = "a count is int64 where the dataset and DuckDB hold it") -> FlagRange:
    return FlagRange(low, integer_range(pa.int64())[1], reason)


C_INT = integer_range(pa.int32())[1]
# Memory-sane sizes: no machine holds a terabyte for one table, one engine's hash or one game.
MEMORY_MIB_MAX = TIB_IN_MIB
# Workers one job asks for (a process each, with its own engine and tables), across a cluster: a
# Lichess month is planned on 12,000 (docs/results/mining.md), so the bound leaves room above it.
WORKERS_MAX = 1_000_000
# The most legal moves a chess position has.
LEGAL_MOVES_MAX = 218
# Stockfish searches at most MAX_PLY (246) plies deep.
ENGINE_DEPTH_MAX = 245

PROBABILITY = FlagRange(0.0, 1.0, "a probability", above=True)
RATE = FlagRange(0.0, 1.0, "a share", above=True)
RATING_WHY = "a rating lies in 0..4,000, the rule `verify` holds the rating columns to"
RATING = column(dataset.POSITIONS, "mover_rating", "positions", why=RATING_WHY)
PAWNS = FlagRange(-dataset.EVAL_CP_MAX / 100, dataset.EVAL_CP_MAX / 100, "an evaluation is at most 1,000 pawns")
DIP = FlagRange(0.0, 2 * dataset.EVAL_CP_MAX / 100, "a dip between two evaluations of at most 1,000 pawns")
ENGINE_DEPTH = FlagRange(1, ENGINE_DEPTH_MAX, "Stockfish searches at most 245 plies")
SEED = FlagRange(0, C_INT, "a seed is a C int: LightGBM's, the UCI option Seed's")
WORKERS = FlagRange(0, WORKERS_MAX, "a process each, with its engine, across the cluster")
MEMORY = FlagRange(0.0, MEMORY_MIB_MAX, "MiB of memory: 1 TiB at most")
SHALLOW_RANK = column(dataset.TRAPS, "shallow_rank", "traps", low=1)

BOUNDS: dict[str, FlagRange] = {
    # The DiffiMax settings.
    "--depth": column(pa.schema(dataset.SETTINGS_FIELDS), "depth", "settings", low=0),
    "--reasonable-dip": DIP,
    "--trap-dip": DIP,
    # The engine.
    "--nodes": FlagRange(1, NODES_MAX, "its timeout, at 150,000 nodes per second, must fit Python's longest wait"),
    "engine-options.depth": ENGINE_DEPTH,
    "engine-options.shallow-depth": ENGINE_DEPTH,
    "--feature-depth": ENGINE_DEPTH,
    "--baseline-depth": ENGINE_DEPTH,
    "engine-options.movetime": FlagRange(0.0, MOVETIME_MAX, "as long as the largest --nodes search", above=True),
    "engine-options.threads": FlagRange(1, 1024, "Stockfish's Threads option"),
    "engine-options.hash": FlagRange(1, MEMORY_MIB_MAX, "MiB of memory: 1 TiB at most"),
    # The human evidence and the judges.
    "--rating": RATING,
    "--player-rating": RATING,
    "--trap-rating": RATING,
    "--min-elo": column(dataset.GAMES, "white_elo", "games", why=RATING_WHY),
    "--max-elo": column(dataset.GAMES, "white_elo", "games", why=RATING_WHY),
    "--clock": FlagRange(0.0, dataset.CLOCK_SECONDS_MAX, "a clock holds at most 31 days, the rule of clock_seconds"),
    "thresholds.trappy-k": SHALLOW_RANK,
    "thresholds.practical-shallow-k": column(dataset.TRAPS, "shallow_rank", "traps", low=0),
    "thresholds.model-p": PROBABILITY,
    "thresholds.practical-p": PROBABILITY,
    "thresholds.practical-fall-p": PROBABILITY,
    "thresholds.practical-shallow-p": PROBABILITY,
    "thresholds.corpus-share": PROBABILITY,
    "thresholds.practical-drop": FlagRange(0.0, 100.0, "a loss of win chance in points of Win% (0-100)", above=True),
    "thresholds.corpus-min-games": column(dataset.RESPONSES, "corpus_games", "responses", low=1),
    # Reading games and sampling them.
    "--seed": SEED,
    "--plan-seed": SEED,
    "--game-rate": RATE,
    "--train-rate": RATE,
    "--tune-rate": RATE,
    "--position-rate": RATE,
    "--baseline-rate": RATE,
    "--max-games": counted(1),
    "--max-positions": counted(1),
    "--positions": counted(1),
    "--limit": counted(0),
    "--sample-games": counted(1),
    "--sample-positions": counted(1),
    "--assume-games": counted(1),
    "--shard-games": column(dataset.GAMES, "game_index", "games", low=1),
    "--shard-mb": FlagRange(0.0, SIZE_MIB_MAX, "MiB: in bytes it must fit the int64 byte offsets", above=True),
    "--max-game-mb": FlagRange(0.0, MEMORY_MIB_MAX, "a game is held in memory: 1 TiB at most", above=True),
    "--ply": column(dataset.POSITIONS, "ply", "positions"),
    "--game": counted(1),
    "--url-timeout": FlagRange(0.0, threading.TIMEOUT_MAX, "Python's longest wait, threading.TIMEOUT_MAX", above=True),
    # Running.
    "--workers": WORKERS,
    "--table-mb": MEMORY,
    # Puzzles.
    "--min-dip": DIP,
    "--per-game": counted(1, "a count of puzzles"),
    "--margin": FlagRange(0.0, 100.0, "a difference of win chance in points of Win% (0-100)", above=True),
    # The repertoire (its nodes.parquet columns).
    "repertoire --rating": column(repertoire.NODES, "opponent_rating", "nodes", 0, dataset.RATING_MAX, RATING_WHY),
    "repertoire --player-rating": column(repertoire.NODES, "player_rating", "nodes", 0, dataset.RATING_MAX, RATING_WHY),
    "--line-plies": column(repertoire.NODES, "plies", "nodes", low=1),
    "--width": column(repertoire.NODES, "width", "nodes", low=1),
    "--root-width": column(repertoire.NODES, "root_width", "nodes", low=1),
    "--candidates": FlagRange(1, LEGAL_MOVES_MAX, "a position has at most 218 legal moves"),
    "--floor": FlagRange(0.0, 1.0, "a probability below 1"),
    "--plan-sample": counted(1),
    # The prototype's random trees (at most MAX_LEAVES leaves: 2 children a node reach it first).
    "--trees": FlagRange(1, 1_000_000, "a million trees take days to compare, at 0.3 s a tree"),
    "tree-shape.depth": FlagRange(1, int(math.log2(MAX_LEAVES)), f"a tree has at most {MAX_LEAVES:,} leaves"),
    "rule.min-children": FlagRange(2, LEGAL_MOVES_MAX, "a position has at most 218 legal moves"),
    "tree-shape.step": FlagRange(0.0, PAWNS.high, PAWNS.reason),
    "tree-shape.value-limit": FlagRange(0.0, PAWNS.high, PAWNS.reason, above=True),
    "rule.draw-thresh": FlagRange(0.0, PAWNS.high, PAWNS.reason),
    "rule.win-thresh": PAWNS,
    # The human-move model's training (LightGBM's parameters are C ints).
    "--book-min-games": column(dataset.RESPONSES, "corpus_games", "responses", low=1),
    "lightgbm.num-leaves": FlagRange(2, 131_072, "LightGBM's num_leaves"),
    "lightgbm.learning-rate": FlagRange(0.0, 1.0, "LightGBM's shrinkage, at most 1", above=True),
    "lightgbm.max-rounds": FlagRange(1, C_INT, "LightGBM's num_iterations is a C int"),
    "lightgbm.min-data-in-leaf": FlagRange(1, C_INT, "LightGBM's min_data_in_leaf is a C int"),
    "lightgbm.threads": FlagRange(1, 1024, "LightGBM's threads, as many as Stockfish's"),
    # `diffimax play`: each flag sets one of its UCI options, whose range it takes.
    "play --nodes": uci_option("Nodes"),
    "play --rating": uci_option("Opponent Rating"),
}


def range_of(command: str, flag: str) -> FlagRange | None:
    """The row of `flag` on `command` ("human train"): the command's own, else the flag's."""
    return BOUNDS.get(f"{command} {flag}") or BOUNDS.get(flag)


def numeric_flags(callback: Callable[..., Any]) -> dict[str, str]:
    """The numeric options of a typer command: parameter name -> its flag (`--depth`)."""
    found = {}
    for name, hint in typing.get_type_hints(callback, include_extras=True).items():
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        kind, *extras = typing.get_args(hint)
        option = next((extra for extra in extras if isinstance(extra, typer.models.OptionInfo)), None)
        if option is not None and _is_numeric(kind):
            found[name] = flag_of(name, option)
    return found


def flag_of(name: str, option: typer.models.OptionInfo) -> str:
    """The long flag of an option: its first `--` declaration (in an `Annotated` option typer
    takes a leading one from the default's place), else typer's own from the parameter's name."""
    declared = [option.default] if isinstance(option.default, str) else []
    declared += list(option.param_decls or ())
    return next((decl for decl in declared if decl.startswith("--")), "--" + name.replace("_", "-"))


def _is_numeric(kind: Any) -> bool:
    """int, float, or an optional or list of one (bool is a flag, not a number)."""
    if kind in (int, float):
        return True
    return any(_is_numeric(arg) for arg in typing.get_args(kind) if arg is not type(None))


def check(flag: str, value: Any, bound: FlagRange) -> None:
    """UsageError naming the flag, the value and its range when the value is outside it."""
    for item in value if isinstance(value, list | tuple) else [value]:
        if item is None or isinstance(item, bool):
            continue
        problem = bound.problem(item)
        if problem is not None:
            raise UsageError(f"invalid {flag} {item!r}: must be {problem}")


def guarded(callback: Callable[..., Any], command: str) -> Callable[..., Any]:
    """`callback` with its numeric flags checked against BOUNDS first. A flag without a row is a
    TypeError here, when the app is built."""
    flags = numeric_flags(callback)
    bounds = {name: range_of(command, flag) for name, flag in flags.items()}
    missing = sorted(flags[name] for name, bound in bounds.items() if bound is None)
    if missing:
        raise TypeError(f"{command}: no row in pipeline.cli.limits.BOUNDS for {', '.join(missing)}")

    @functools.wraps(callback)
    def checked(*args: Any, **values: Any) -> Any:
        for name, flag in flags.items():
            bound = bounds[name]
            assert bound is not None
            check(flag, values.get(name), bound)
        return callback(*args, **values)

    return checked


def guard_commands(app: typer.Typer, prefix: str = "") -> None:
    """Wrap every command of `app` and of its sub-apps (`human`) with `guarded`."""
    for info in app.registered_commands:
        assert info.callback is not None
        name = info.name or info.callback.__name__.replace("_", "-")
        info.callback = guarded(info.callback, f"{prefix}{name}")
    for group in app.registered_groups:
        assert group.typer_instance is not None
        guard_commands(group.typer_instance, f"{prefix}{group.name} ")
