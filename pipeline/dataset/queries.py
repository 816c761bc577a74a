"""`diffimax query`: SQL over a dataset's views, and the saved queries of `schemas/queries.sql`.

What it prints comes from strangers' PGN headers, so `render` shows control characters and
escape sequences as backslash escapes in table and CSV output (JSON escapes them itself), guards
CSV cells against spreadsheet formulas, and cuts wide table cells at `sanitize.CELL_MAX` characters.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import duckdb

from pipeline.common.sanitize import spreadsheet_safe, terminal_visible, truncate_cell
from pipeline.dataset.duck import connect, open_dataset
from pipeline.dataset.integrity import DatasetState, damage_named, is_damage
from pipeline.dataset.sql import NamedQuery, named_queries
from search.errors import DiffimaxError

# Characters a CSV cell keeps as they are: the csv module quotes a cell that holds them.
CSV_KEEPS = "\t\n\r"
# Rows fetched from DuckDB at a time, and rendered as they come.
FETCH_ROWS: Final = 10_000
# Rows a table's column widths are measured on (later rows keep them; a longer cell pushes its line).
TABLE_WIDTH_ROWS: Final = 1_000


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


@dataclass(frozen=True)
class QueryOptions:
    """How `diffimax query` runs the user's SQL."""

    read_only: bool = False
    """No file, extension or database outside the dataset: DuckDB's external access off and the
    configuration locked (no COPY ... TO, ATTACH, INSTALL, LOAD, read_csv of a path)."""
    script: bool = False
    """Run every statement of the SQL, in order, and show the last one's result (else the SQL must
    be one statement)."""


def _statements(connection: duckdb.DuckDBPyConnection, sql: str, options: QueryOptions) -> list[Any]:
    """The SQL's statements (DuckDB's parser); QueryError for none, or for several without
    `options.script`."""
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as error:
        raise QueryError(f"query failed: {terminal_visible(str(error).splitlines()[0])}") from None
    if not statements:  # only comments or `;`
        raise QueryError(f"no SQL statement in {sql.strip()!r}")
    if len(statements) > 1 and not options.script:
        raise QueryError(
            f"{len(statements)} statements given, and diffimax query runs one: add --script to run them all "
            "in order and show the last one's result"
        )
    return list(statements)


def _cursor(connection: duckdb.DuckDBPyConnection, sql: str, options: QueryOptions) -> duckdb.DuckDBPyConnection:
    """The user's SQL executed on `connection` (with the dataset's views), its result not yet read."""
    statements = _statements(connection, sql, options)
    if options.read_only:
        connection.execute("set enable_external_access = false")
        connection.execute("set lock_configuration = true")
    try:
        for statement in statements[:-1]:
            connection.execute(statement)
        return connection.execute(statements[-1])
    except duckdb.Error as error:
        if is_damage(error):
            raise  # a damaged file, not bad SQL: `damage_named` names its shard
        # DuckDB quotes the data in some messages (a failed cast of a player's name, ...).
        raise QueryError(f"query failed: {terminal_visible(str(error).splitlines()[0])}") from None


def _execute(connection: duckdb.DuckDBPyConnection, sql: str) -> QueryResult:
    cursor = _cursor(connection, sql, QueryOptions())
    return QueryResult([column[0] for column in cursor.description or []], cursor.fetchall())


@contextlib.contextmanager
def stream_query(
    dataset: str | Path | DatasetState, sql: str, options: QueryOptions = QueryOptions(), *, allow_partial: bool = False
) -> Iterator[tuple[list[str], Iterator[list[tuple[Any, ...]]]]]:
    """The result of `sql` over the views of `dataset` (checked first, `open_dataset`; a partial
    dataset only with `allow_partial`) as its columns and its rows in batches of FETCH_ROWS, read
    as they are consumed (DuckDB streams them): memory bounded whatever the result's size."""
    if not sql.strip():
        raise QueryError('empty SQL: give a statement, e.g. "select * from traps limit 10"')
    state = dataset if isinstance(dataset, DatasetState) else open_dataset(dataset, allow_partial=allow_partial)
    connection = connect(state)
    try:
        with damage_named(state):
            cursor = _cursor(connection, sql, options)
        columns = [column[0] for column in cursor.description or []]

        def batches() -> Iterator[list[tuple[Any, ...]]]:
            with damage_named(state):
                while rows := cursor.fetchmany(FETCH_ROWS):
                    yield rows

        yield columns, batches()
    finally:
        connection.close()


def run_query(
    dataset: str | Path | DatasetState, sql: str, options: QueryOptions = QueryOptions(), *, allow_partial: bool = False
) -> QueryResult:
    """The whole result of `sql` (`stream_query`, read at once); QueryError for empty or failing SQL."""
    with stream_query(dataset, sql, options, allow_partial=allow_partial) as (columns, batches):
        return QueryResult(columns, [row for batch in batches for row in batch])


def run_saved(dataset: str | Path | DatasetState, name: str, *, allow_partial: bool = False) -> QueryResult:
    """The saved query `name` over `dataset`; RequirementError when the dataset lacks what it needs."""
    saved_query(name)  # an unknown name is said before the dataset is read
    with Dataset.open(dataset, allow_partial=allow_partial) as data, damage_named(data.state):
        relation = data.saved(name)
        return QueryResult(list(relation.columns), relation.fetchall())


def saved_query(name: str) -> NamedQuery:
    """The saved query `name`; QueryError naming where the list is when there is none."""
    queries = saved_queries()
    if name not in queries:
        raise QueryError(f"no saved query {name!r}: `diffimax query --list` shows them")
    return queries[name]


class Dataset:
    """A mined dataset open for SQL (`diffimax.open`, and `diffimax query --saved`): a DuckDB
    connection over its checked shards with the views of `schemas/views.sql` and the SAN
    functions, and its saved queries as DuckDB relations (`.df()`, `.arrow()`, `.fetchall()`).

    A relation is read when it is asked for: a page damaged since the check fails that read with
    DuckDB's error, which `pipeline.dataset.integrity.damage_named(dataset.state)` names by shard."""

    def __init__(self, state: DatasetState) -> None:
        self.state = state
        self.connection = connect(state)

    @classmethod
    def open(cls, dataset: str | Path | DatasetState, *, allow_partial: bool = False) -> Dataset:
        """`dataset` (a directory, `s3://` or `gs://` prefix), checked first (`open_dataset`: a job
        that has not finished only with `allow_partial`)."""
        state = dataset if isinstance(dataset, DatasetState) else open_dataset(dataset, allow_partial=allow_partial)
        return cls(state)

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        """Any SQL over the views (`traps`, `positions`, `responses`, `outcomes`, `games`, ...)."""
        return self.connection.sql(query)

    def saved(self, name: str) -> duckdb.DuckDBPyRelation:
        """The saved query `name` (`diffimax query --list`); RequirementError when the dataset was
        mined without what it needs (e.g. --setter-choices)."""
        query = saved_query(name)
        need = requirements().get(name)
        if need is not None:
            with damage_named(self.state):
                ((met,),) = _execute(self.connection, need.sql).rows
            if not met:
                raise RequirementError(f"saved query {name!r} {need.description}")
        return self.connection.sql(query.sql)

    @staticmethod
    def saved_names() -> list[str]:
        """The saved queries' names, in the order `diffimax query --list` shows them."""
        return list(saved_queries())

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    """The whole result as text in `fmt` (`render_stream` at once, without its last newline)."""
    text = "".join(render_stream(result.columns, [result.rows], fmt))
    return text.removesuffix("\r\n" if fmt == "csv" else "\n")


def render_stream(columns: list[str], batches: Iterable[list[tuple[Any, ...]]], fmt: str) -> Iterator[str]:
    """The result as text in `fmt` (table, csv or json), piece by piece as its batches come: what
    is held is one batch, and for a table the rows its widths are measured on."""
    if fmt == "json":
        return _json_pieces(columns, batches)
    if fmt == "csv":
        return _csv_pieces(columns, batches)
    if fmt != "table":
        raise QueryError(f"unknown format {fmt!r}: expected table, csv or json")
    return _table_pieces(columns, batches)


def _json_pieces(columns: list[str], batches: Iterable[list[tuple[Any, ...]]]) -> Iterator[str]:
    # A list of objects, one a line, each written by json.dumps's C encoder (no indent), which
    # escapes every control character (and, ensure_ascii, all else beyond ASCII).
    first = True
    for batch in batches:
        pieces = []
        for row in batch:
            pieces.append(
                ("[\n  " if first else ",\n  ") + json.dumps(dict(zip(columns, row, strict=True)), default=str)
            )
            first = False
        yield "".join(pieces)
    yield "[]\n" if first else "\n]\n"


def _csv_pieces(columns: list[str], batches: Iterable[list[tuple[Any, ...]]]) -> Iterator[str]:
    # CRLF rows (RFC 4180), so a bare CR inside a cell is quoted rather than splitting the row.
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([_csv_cell(column) for column in columns])
    for batch in batches:
        writer.writerows([[_csv_cell(value) for value in row] for row in batch])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _table_pieces(columns: list[str], batches: Iterable[list[tuple[Any, ...]]]) -> Iterator[str]:
    heads = [_table_cell(column) for column in columns]
    rows = iter(row for batch in batches for row in batch)
    measured = [[_table_cell(_cell(value)) for value in row] for row in itertools.islice(rows, TABLE_WIDTH_ROWS)]
    widths = [max([len(head), *(len(row[i]) for row in measured)]) for i, head in enumerate(heads)]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + "\n"

    yield line(heads) + "  ".join("-" * width for width in widths) + "\n"
    count = len(measured)
    yield "".join(line(cells) for cells in measured)
    for row in rows:
        count += 1
        yield line([_table_cell(_cell(value)) for value in row])
    yield f"({count} row{'s' if count != 1 else ''})\n"
