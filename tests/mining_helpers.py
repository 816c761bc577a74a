"""Helpers for the mining tests: running jobs and comparing datasets row for row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.api import mine as run_job
from pipeline.common.progress import Progress
from pipeline.dataset.store import DatasetReader
from pipeline.ingest.headers import GameFilter
from pipeline.judging import HumanEvidence
from pipeline.mine.config import MineConfig
from schemas.dataset import TABLES
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings

# The judges the mining tests record: the seed's and the trappy judge (no human-move model needed).
MINING_JUDGES = JudgeSettings(judges=frozenset({"dip", "trappy"}))
# What `diffimax mine` judges with by default (human, model, practical, the bundled human-move
# model, so the practical judge is the primary one) and trappy, so that every column a user can
# ask for without the seed's full analysis is exercised (for what a user queries, reports, prints).
EVERY_JUDGE: dict[str, Any] = {
    "judges": JudgeSettings(judges=frozenset({"trappy", "human", "model", "practical"})),
    "human": HumanEvidence(model="bundled"),  # not `default`: the same rows whether Maia-3 is fetched or not
}

# Sort keys that make two datasets comparable row for row.
ORDER = {
    "games": ["game_id"],
    "positions": ["game_id", "ply"],
    "responses": ["game_id", "ply"],
    "traps": ["game_id", "ply", "path", "move"],
    "errors": ["source", "shard_id", "game_index", "game_id", "ply", "reason"],
}


def mine(inputs: list[str], out: Path | str, **overrides: Any) -> dict[str, Any]:
    settings = overrides.pop("settings", DiffiMaxSettings(depth=1))
    overrides.setdefault("judges", MINING_JUDGES)
    game_filter = overrides.pop("game_filter", GameFilter(ply_from=10, ply_to=11))
    config = MineConfig(inputs=tuple(inputs), out=str(out), settings=settings, game_filter=game_filter, **overrides)
    return run_job(config, progress=Progress.quiet())  # the seam `diffimax mine` and notebooks call


def rows(out: Path) -> dict[str, list[dict[str, Any]]]:
    store = DatasetReader(out)
    tables = {}
    for name in TABLES:
        data = store.read_table(name).to_pylist()
        data.sort(key=lambda row, name=name: json.dumps([row[k] for k in ORDER[name]], default=str))
        tables[name] = data
    return tables


# What may differ between two runs of one job: which occurrences a worker's table served (a
# restarted worker, a resumed run and other tables start empty); every value and verdict is the same.
SERVED = ("reused",)


def assert_same_rows(first: Path, second: Path, *, ignore: tuple[str, ...] = ()) -> None:
    """The two datasets hold the same rows, but for the columns named in `ignore`."""
    left, right = rows(first), rows(second)
    for name in TABLES:
        assert len(left[name]) == len(right[name]), name
        for a, b in zip(left[name], right[name], strict=True):
            a = {k: v for k, v in a.items() if k not in ignore}
            b = {k: v for k, v in b.items() if k not in ignore}
            if a != b:
                keys = {k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
                raise AssertionError(f"{name} row {[a.get(k) for k in ORDER[name]]} differs: {keys}")


def except_all(
    first: Path | str, second: Path | str, *, ignore: tuple[str, ...] = SERVED
) -> dict[str, tuple[int, int]]:
    """Per table, the rows of `first` not in `second` and of `second` not in `first`, counted with
    duplicates (DuckDB's EXCEPT ALL both ways, every column but `ignore`); each dataset a local
    directory or an object URL, read through `DatasetReader` (every page's checksum verified)."""
    import duckdb

    connection = duckdb.connect()
    found = {}
    for name in TABLES:
        left, right = DatasetReader(first).read_table(name), DatasetReader(second).read_table(name)
        columns = [column for column in left.schema.names if column not in ignore]
        connection.register("left_rows", left.select(columns))
        connection.register("right_rows", right.select(columns))
        # fetchall: a result left unfinished (fetchone) blocks the next register on this connection.
        [(only_left,)] = connection.execute(
            "select count(*) from (from left_rows except all from right_rows)"
        ).fetchall()
        [(only_right,)] = connection.execute(
            "select count(*) from (from right_rows except all from left_rows)"
        ).fetchall()
        found[name] = (int(only_left), int(only_right))
    connection.close()
    return found


def assert_counts_add_up(manifest: dict[str, Any], out: Path) -> None:
    m = manifest
    assert m["games_read"] == m["games_written"] + m["games_filtered"] + m["games_error"]
    assert m["positions"] == m["positions_analysed"] + m["positions_reused"] + m["positions_error"]
    data = rows(out)
    assert len(data["games"]) == m["games_written"]
    assert len(data["positions"]) == m["positions"]
    assert len(data["responses"]) == m["positions"] - m["positions_error"]
    assert len(data["traps"]) == m["traps"]
    parse_errors = [e for e in data["errors"] if e["stage"] == "parse"]
    assert len(parse_errors) == m["games_error"]
