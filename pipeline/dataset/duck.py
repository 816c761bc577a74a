"""DuckDB over a diffimax dataset: the views of `schemas/views.sql` on the Parquet files."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipeline.dataset.sql import sql_text
from search.errors import DiffimaxError


class DatasetError(DiffimaxError, ValueError):
    """The directory holds no diffimax dataset."""


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(dataset: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the dataset's views defined."""
    root = Path(dataset)
    if not (root / "shards").is_dir() or not any((root / "shards").glob("*/games.parquet")):
        raise DatasetError(f"no diffimax dataset in {str(root)!r} (expected shards/*/games.parquet)")
    views = sql_text("views")
    connection = duckdb.connect()
    connection.execute(views.replace("{dataset}", sql_literal(str(root.resolve()))))
    return connection
