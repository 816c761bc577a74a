"""The report's data: the run's manifest, the saved queries' results, and what the trap-position
boards and the errors section show beyond them (its SQL is in `schemas/report.sql`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

import duckdb

from pipeline.common.sanitize import PGN_VALUE_MAX, truncate_cell
from pipeline.dataset.integrity import DatasetState
from pipeline.dataset.objects import Where
from pipeline.dataset.queries import QueryResult, RequirementError, run_saved, saved_queries
from pipeline.dataset.sql import query
from search.errors import DiffimaxError

# Trap positions drawn as boards (the table below them lists every row of the saved query).
BOARDS_SHOWN: Final = 12
# Example games listed beside each board.
GAMES_PER_BOARD: Final = 3
# Error rows quoted in the errors section (the counts cover all of them).
ERRORS_SHOWN: Final = 20

# A board's details: kind ("candidates", "played", "last", "games") -> position key -> rows.
Details = dict[str, dict[int, list[dict[str, Any]]]]


class ReportError(DiffimaxError, ValueError):
    """A dataset whose manifest cannot be read."""


def bounded(value: Any) -> Any:
    """A value read from the dataset as the report shows it: text from strangers (a 5 MB player
    name) cut at PGN_VALUE_MAX characters, the cut noted (`truncate_cell`), as the puzzles cut it."""
    return truncate_cell(value, PGN_VALUE_MAX) if isinstance(value, str) else value


def bounded_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [tuple(bounded(value) for value in row) for row in rows]


def records(result: QueryResult) -> list[dict[str, Any]]:
    """The rows of `result` as column -> value."""
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def number(value: Any) -> float | None:
    """A SQL number (int, float, Decimal) as a float; None stays None."""
    return None if value is None else float(value)


def read_manifest(dataset: Where) -> dict[str, Any] | None:
    """The run's manifest.json, or None when the dataset has none."""
    path = dataset / "manifest.json"
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReportError(f"unreadable manifest {str(path)!r}: {error}") from None
    if not isinstance(manifest, dict):
        raise ReportError(f"unreadable manifest {str(path)!r}: expected a JSON object")
    return manifest


def _grouped(
    connection: duckdb.DuckDBPyConnection, sql: str, parameters: dict[str, Any]
) -> dict[int, list[dict[str, Any]]]:
    cursor = connection.execute(sql, parameters)
    columns = [column[0] for column in cursor.description]
    grouped: dict[int, list[dict[str, Any]]] = {}
    for row in bounded_rows(cursor.fetchall()):
        record = dict(zip(columns, row, strict=True))
        grouped.setdefault(record["position_key"], []).append(record)
    return grouped


@dataclass(frozen=True)
class SavedResults:
    """Every saved query, run on one dataset."""

    results: dict[str, QueryResult]
    """The result of each saved query the dataset can answer."""
    unmet: dict[str, str]
    """Each saved query the dataset cannot answer, and why."""
    descriptions: dict[str, str]
    """Each saved query's description line, in the saved queries' order."""

    def get(self, name: str) -> QueryResult:
        """The result of saved query `name`, or no rows when the dataset cannot answer it."""
        return self.results.get(name, QueryResult([], []))


def run_saved_queries(state: DatasetState) -> SavedResults:
    """Every saved query on the checked dataset `state`."""
    queries = saved_queries()
    results: dict[str, QueryResult] = {}
    unmet: dict[str, str] = {}
    for name in queries:
        try:
            found = run_saved(state, name)
            results[name] = QueryResult(found.columns, bounded_rows(found.rows))
        except RequirementError as error:
            unmet[name] = str(error)
    return SavedResults(results, unmet, {name: saved.description for name, saved in queries.items()})


def shown_positions(top: QueryResult) -> list[dict[str, Any]]:
    """The rows of top-trap-positions drawn as boards."""
    return records(top)[:BOARDS_SHOWN]


def board_details(connection: duckdb.DuckDBPyConnection, top: QueryResult) -> Details:
    """For each position drawn as a board: its trap candidates, what humans played there, the move
    that led there and example games (nothing when no position is drawn)."""
    keys = [row["position_key"] for row in shown_positions(top)]
    if not keys:
        return {}
    return {
        "candidates": _grouped(connection, query("report", "trap-candidates"), {"keys": keys}),
        "played": _grouped(connection, query("report", "humans-played"), {"keys": keys}),
        "last": _grouped(connection, query("report", "last-move"), {"keys": keys}),
        "games": _grouped(connection, query("report", "example-games"), {"keys": keys, "limit": GAMES_PER_BOARD}),
    }


@dataclass(frozen=True)
class ErrorRows:
    """The dataset's error rows: how many at each stage, and the first few."""

    counts: list[tuple[str, int]]
    """(stage, errors) for each stage with errors."""
    first: QueryResult
    """The first ERRORS_SHOWN error rows (none read when there are no errors)."""


def error_rows(connection: duckdb.DuckDBPyConnection) -> ErrorRows:
    """The error counts by stage and the first error rows."""
    counts = connection.execute(query("report", "error-counts")).fetchall()
    if not counts:
        return ErrorRows([], QueryResult([], []))
    cursor = connection.execute(query("report", "first-errors"), {"limit": ERRORS_SHOWN})
    return ErrorRows(counts, QueryResult([column[0] for column in cursor.description], bounded_rows(cursor.fetchall())))
