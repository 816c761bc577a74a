"""`diffimax query`: SQL over a dataset's views, and the saved queries of `schemas/queries.sql`."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipeline.dataset.duck import connect
from pipeline.dataset.sql import NamedQuery, named_queries
from pipeline.outputs.sanitize import spreadsheet_safe


class QueryError(ValueError):
    """Bad SQL, or an unknown saved query."""


def saved_queries() -> dict[str, NamedQuery]:
    """The saved queries of `diffimax query --saved NAME`."""
    return named_queries("queries")


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def run_query(dataset: str | Path, sql: str) -> QueryResult:
    connection = connect(dataset)
    try:
        cursor = connection.execute(sql)
    except duckdb.Error as error:
        message = str(error).splitlines()[0]
        raise QueryError(f"query failed: {message}") from None
    columns = [column[0] for column in cursor.description or []]
    return QueryResult(columns, cursor.fetchall())


def run_saved(dataset: str | Path, name: str) -> QueryResult:
    queries = saved_queries()
    if name not in queries:
        raise QueryError(f"no saved query {name!r}: `diffimax query --list` shows them")
    return run_query(dataset, queries[name].sql)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def render(result: QueryResult, fmt: str) -> str:
    if fmt == "json":
        return json.dumps([dict(zip(result.columns, row, strict=True)) for row in result.rows], indent=2, default=str)
    if fmt == "csv":
        buffer = io.StringIO()
        # CRLF rows (RFC 4180), so a bare CR inside a cell is quoted rather than splitting the row.
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow(result.columns)
        writer.writerows([[_csv_cell(value) for value in row] for row in result.rows])
        return buffer.getvalue().removesuffix("\r\n")
    if fmt != "table":
        raise QueryError(f"unknown format {fmt!r}: expected table, csv or json")
    cells = [[_cell(value) for value in row] for row in result.rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(result.columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(result.columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    lines.append(f"({len(result.rows)} row{'s' if len(result.rows) != 1 else ''})")
    return "\n".join(lines)


def _csv_cell(value: Any) -> Any:
    """Neutralise spreadsheet formulas in text from strangers (player names, events)."""
    return spreadsheet_safe(value) if isinstance(value, str) else value
