"""`diffimax query`: SQL over a dataset's views, and the saved queries of `schemas/queries.sql`.

What it prints comes from strangers' PGN headers, so `render` shows control characters and
escape sequences as backslash escapes in table and CSV output (JSON escapes them itself), guards
CSV cells against spreadsheet formulas, and cuts wide table cells at `sanitize.CELL_MAX` characters.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipeline.common.sanitize import spreadsheet_safe, terminal_visible, truncate_cell
from pipeline.dataset.duck import connect, open_dataset
from pipeline.dataset.integrity import DatasetState, damage_named, is_damage
from pipeline.dataset.sql import NamedQuery, named_queries
from search.errors import DiffimaxError

# Characters a CSV cell keeps as they are: the csv module quotes a cell that holds them.
CSV_KEEPS = "\t\n\r"


class QueryError(DiffimaxError, ValueError):
    """Bad SQL, or an unknown saved query."""


class RequirementError(QueryError):
    """A saved query the dataset cannot answer (it was mined without what the query needs)."""


def saved_queries() -> dict[str, NamedQuery]:
    """The saved queries of `diffimax query --saved NAME`."""
    return named_queries("queries")


def requirements() -> dict[str, NamedQuery]:
    """What saved queries need from a dataset (`schemas/requirements.sql`), by saved query name."""
    return named_queries("requirements")


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def _execute(connection: duckdb.DuckDBPyConnection, sql: str) -> QueryResult:
    try:
        cursor = connection.execute(sql)
    except duckdb.Error as error:
        if is_damage(error):
            raise  # a damaged file, not bad SQL: `damage_named` names its shard
        # DuckDB quotes the data in some messages (a failed cast of a player's name, ...).
        message = terminal_visible(str(error).splitlines()[0])
        raise QueryError(f"query failed: {message}") from None
    if cursor is None:  # DuckDB returns no cursor for SQL that holds only comments or `;`
        raise QueryError(f"no SQL statement in {sql.strip()!r}")
    columns = [column[0] for column in cursor.description or []]
    return QueryResult(columns, cursor.fetchall())


def run_query(dataset: str | Path | DatasetState, sql: str, *, allow_partial: bool = False) -> QueryResult:
    """The result of `sql` over the views of `dataset` (checked first, `open_dataset`; a partial
    dataset only with `allow_partial`); QueryError for empty or failing SQL."""
    if not sql.strip():
        raise QueryError('empty SQL: give a statement, e.g. "select * from traps limit 10"')
    state = dataset if isinstance(dataset, DatasetState) else open_dataset(dataset, allow_partial=allow_partial)
    connection = connect(state)
    try:
        with damage_named(state):
            return _execute(connection, sql)
    finally:
        connection.close()


def run_saved(dataset: str | Path | DatasetState, name: str, *, allow_partial: bool = False) -> QueryResult:
    """The saved query `name` over `dataset`; RequirementError when the dataset lacks what it needs."""
    queries = saved_queries()
    if name not in queries:
        raise QueryError(f"no saved query {name!r}: `diffimax query --list` shows them")
    state = dataset if isinstance(dataset, DatasetState) else open_dataset(dataset, allow_partial=allow_partial)
    connection = connect(state)
    try:
        with damage_named(state):
            need = requirements().get(name)
            if need is not None:
                ((met,),) = _execute(connection, need.sql).rows
                if not met:
                    raise RequirementError(f"saved query {name!r} {need.description}")
            return _execute(connection, queries[name].sql)
    finally:
        connection.close()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def _csv_cell(value: Any) -> Any:
    """Text from strangers (player names, events) shown, not acted on, and never a formula;
    numbers and NULL as the csv module writes them."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return spreadsheet_safe(terminal_visible(value, keep=CSV_KEEPS))
    # Lists, structs, dates, decimals: their text (a negative decimal is no formula).
    return terminal_visible(str(value), keep=CSV_KEEPS)


def _table_cell(text: str) -> str:
    return truncate_cell(terminal_visible(text))


def render(result: QueryResult, fmt: str) -> str:
    if fmt == "json":
        # json.dumps escapes every control character (and, ensure_ascii, all else beyond ASCII).
        return json.dumps([dict(zip(result.columns, row, strict=True)) for row in result.rows], indent=2, default=str)
    if fmt == "csv":
        buffer = io.StringIO()
        # CRLF rows (RFC 4180), so a bare CR inside a cell is quoted rather than splitting the row.
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow([_csv_cell(column) for column in result.columns])
        writer.writerows([[_csv_cell(value) for value in row] for row in result.rows])
        return buffer.getvalue().removesuffix("\r\n")
    if fmt != "table":
        raise QueryError(f"unknown format {fmt!r}: expected table, csv or json")
    columns = [_table_cell(column) for column in result.columns]
    cells = [[_table_cell(_cell(value)) for value in row] for row in result.rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    lines.append(f"({len(result.rows)} row{'s' if len(result.rows) != 1 else ''})")
    return "\n".join(lines)
