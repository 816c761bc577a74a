"""DuckDB over a diffimax dataset: the views of `schemas/views.sql` on the Parquet files.

The files are listed here, in Python, and handed to DuckDB as an explicit list, each with its glob
characters escaped: DuckDB reads every path it is given as a glob pattern, so a dataset directory
named `run*` would also read `run1/` beside it, and one named `a[1]` would look for `a1/`.
DuckDB still scans the files lazily (only the columns and row groups a query needs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import duckdb
import pyarrow.parquet as pq

from pipeline.dataset.sql import sql_text
from schemas.dataset import SCHEMA_VERSION, TABLES, schema_version_of, versioned
from search.errors import DiffimaxError

# What DuckDB's globbing reads as a pattern, each written as a bracket class matching only itself
# (`]` and `{}` are literal to it).
GLOB_ESCAPES: Final = {"*": "[*]", "?": "[?]", "[": "[[]"}


class DatasetError(DiffimaxError, ValueError):
    """The directory holds no diffimax dataset."""


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def duckdb_path(path: Path) -> str:
    """`path` as a pattern DuckDB matches to that one file only."""
    text = str(path)
    if not any(char in text for char in GLOB_ESCAPES):
        return text
    if "\\" in text:
        # DuckDB splits a pattern at backslashes as well as slashes, so no escape can keep one.
        raise DatasetError(f"cannot read {text!r}: its path holds both a backslash and one of * ? [")
    return "".join(GLOB_ESCAPES.get(char, char) for char in text)


def table_files(root: Path, table: str) -> list[Path]:
    """The committed shards' Parquet files of `table` under `root` (taken as it is, no pattern)."""
    return sorted((root / "shards").glob(f"*/{table}.parquet"))


def check_schema_version(path: Path) -> None:
    """Refuse a file written under another schema version, in one line that says what to do."""
    version = schema_version_of(pq.read_schema(path))
    if version != SCHEMA_VERSION:
        dataset = path.parent.parent.parent
        raise DatasetError(
            f"dataset {str(dataset)!r} has schema version {version}; this diffimax reads version {SCHEMA_VERSION} "
            "(the trap judges): mine it again into a new --out"
        )


def is_dataset(root: Path) -> bool:
    """A directory `diffimax mine` made: shards, or a job that started (and maybe read no game)."""
    return (root / "shards").is_dir() and (
        (root / "job.json").is_file() or (root / "manifest.json").is_file() or bool(table_files(root, "games"))
    )


def connect(dataset: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the dataset's views defined."""
    root = Path(dataset)
    if not is_dataset(root):
        raise DatasetError(f"no diffimax dataset in {str(root)!r} (expected the output directory of diffimax mine)")
    files_of = {table: table_files(root.resolve(), table) for table in TABLES}
    shards = max(len(files) for files in files_of.values())
    for table, files in files_of.items():
        if len(files) != shards:  # every commit writes all five tables
            raise DatasetError(
                f"incomplete dataset in {str(root)!r}: {len(files)} of {shards} shards have {table}.parquet"
            )
    for files in files_of.values():
        if files:
            check_schema_version(files[0])
    connection = duckdb.connect()
    views = sql_text("views")
    for table, files in files_of.items():
        if files:
            listed = "[" + ", ".join(sql_literal(duckdb_path(path)) for path in files) + "]"
            scan = f"read_parquet({listed}, union_by_name = true)"
        else:  # a job that committed nothing (yet): the views exist, empty
            scan = f"empty_{table}"
            connection.register(scan, versioned(table).empty_table())
        views = views.replace(f"{{{table}}}", scan)
    connection.execute(views)
    return connection
