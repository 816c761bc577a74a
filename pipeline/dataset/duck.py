"""DuckDB over a diffimax dataset: the views of `schemas/views.sql` on the Parquet files.

The dataset is checked first (`pipeline.dataset.integrity.check_dataset`: its manifest, each
shard's presence, sizes, footers and the Arrow schema each footer holds), and only the shards that
passed are read. The files are
listed here, in Python, and handed to DuckDB as Arrow datasets that verify every page's checksum
as they read it (DuckDB's own Parquet reader ignores page checksums), so no path is ever read as
a glob pattern (a dataset directory named `run*` never reads `run1/` beside it). DuckDB still
scans lazily: only the columns and row groups a query needs.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipeline.dataset.integrity import DatasetError, DatasetState, check_dataset, scan
from pipeline.dataset.objects import ObjectPath, Where, dataset_path
from pipeline.dataset.sql import sql_text
from schemas.dataset import TABLES, versioned
from search.notation import san_at, san_line_after_at, san_line_at


def table_files(state: DatasetState, table: str) -> list[Where]:
    """The Parquet files of `table` of the shards that passed the check, where their records say
    they lie (taken as they are, no pattern)."""
    return [state.dirs[shard] / f"{table}.parquet" for shard in sorted(state.shards)]


def is_dataset(root: Where) -> bool:
    """A directory or prefix `diffimax mine` made: shards, or a job that started (and maybe read no game)."""
    if isinstance(root, ObjectPath):
        return (root / "job.json").is_file() or (root / "manifest.json").is_file()
    return (root / "shards").is_dir() and (
        (root / "job.json").is_file()
        or (root / "manifest.json").is_file()
        or any((root / "shards").glob("*/games.parquet"))
    )


def require_dataset(root: Where) -> None:
    """DatasetError, in one line, unless `root` is a dataset `diffimax mine` made (every reader and
    `verify` ask this first)."""
    if not is_dataset(root):
        raise DatasetError(f"no diffimax dataset in {str(root)!r} (expected the output directory of diffimax mine)")


def open_dataset(dataset: str | Path | ObjectPath, *, allow_partial: bool = False) -> DatasetState:
    """The checked state of a dataset directory or prefix (`check_dataset`), after making sure it is one."""
    root = dataset_path(dataset)
    require_dataset(root)
    state = check_dataset(root, allow_partial=allow_partial)
    if isinstance(root, Path):
        state.root = root
    return state


def define_notation(connection: duckdb.DuckDBPyConnection) -> None:
    """The views' SAN functions (`search.notation`): `san(fen, uci)`, a move at a position;
    `san_line(fen, moves)`, a UCI line from it; `san_line_after(fen, move, moves)`, a line after
    its first move (a refutation after its trap move). Null in, null out."""
    line = duckdb.list_type(duckdb.sqltypes.VARCHAR)
    text = duckdb.sqltypes.VARCHAR
    connection.create_function("san", san_at, [text, text], text, side_effects=False)
    connection.create_function("san_line", san_line_at, [text, line], text, side_effects=False)
    connection.create_function("san_line_after", san_line_after_at, [text, text, line], text, side_effects=False)


def connect(
    dataset: str | Path | ObjectPath | DatasetState, *, allow_partial: bool = False
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the dataset's views defined over the shards that pass
    the check (`open_dataset`; a partial read only when `allow_partial`); a read that meets a
    damaged page fails (see `pipeline.dataset.integrity.damage_named`)."""
    state = dataset if isinstance(dataset, DatasetState) else open_dataset(dataset, allow_partial=allow_partial)
    files_of = {table: table_files(state, table) for table in TABLES}
    # No progress bar: DuckDB draws it on stdout, into a long query's CSV or JSON.
    connection = duckdb.connect()
    connection.execute("set enable_progress_bar = false")
    define_notation(connection)
    views = sql_text("views")
    for table, files in files_of.items():
        name = f"scan_{table}"
        # A job that committed nothing (yet) has the views too, empty.
        connection.register(name, scan(files, versioned(table)) if files else versioned(table).empty_table())
        views = views.replace(f"{{{table}}}", name)
    connection.execute(views)
    return connection
