"""The views' macros (schemas/views.sql) say what the Python says: values and dips for people as
`search.values.format_pawns` / `format_dip` write them (mates as #3 / #-3, never 999.97 pawns),
links to a game at a ply, and games named by their players, event and date."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.dataset.sql import sql_text
from search.values import MATE, format_dip, format_pawns


@pytest.fixture(scope="module")
def macros() -> duckdb.DuckDBPyConnection:
    """A connection with every macro of views.sql (the views need a dataset; the macros do not)."""
    connection = duckdb.connect()
    text = "\n".join(line.split("--")[0] for line in sql_text("views").splitlines())  # comments may hold ';'
    for statement in text.split(";"):
        if statement.strip().startswith("create or replace macro"):
            connection.execute(statement)
    return connection


def one(connection: duckdb.DuckDBPyConnection, sql: str, *params: object) -> object:
    row = connection.execute(sql, list(params)).fetchone()
    assert row is not None
    return row[0]


@pytest.mark.parametrize("cp", [0, 5, -5, 180, -180, 1234, -99, MATE - 2, MATE - 5, -(MATE - 1), -(MATE - 6), 89_999])
def test_pawns_is_format_pawns(macros: duckdb.DuckDBPyConnection, cp: int) -> None:
    assert one(macros, "select pawns(?::integer)", cp) == format_pawns(cp)


def test_mates_read_as_moves_from_the_root() -> None:
    # At an analysed root the responder moves first: a mate for the setter 2 plies away (the reply,
    # then the mate) is a mate in 1; the responder mating in 1 ply is #-1; 6 plies against: #-3.
    assert format_pawns(MATE - 2) == "#1" and format_pawns(MATE - 6) == "#3"
    assert format_pawns(-(MATE - 1)) == "#-1" and format_pawns(-(MATE - 6)) == "#-3"
    assert format_pawns(MATE - 3, setter_moves_first=True) == "#2"  # a setter root: the setter moves first
    assert format_pawns(180) == "+1.80" and format_pawns(-20) == "-0.20"


@pytest.mark.parametrize(
    ("dip", "best", "value"),
    [(140, 40, 180), (0, -20, -20), (MATE - 2 - 585, 585, MATE - 2), (200, -(MATE - 5), -(MATE - 5) + 200)],
)
def test_dip_pawns_is_format_dip(macros: duckdb.DuckDBPyConnection, dip: int, best: int, value: int) -> None:
    shown = one(macros, "select dip_pawns(?::integer, ?::integer, ?::integer)", dip, best, value)
    assert shown == format_dip(dip, best, value)
    assert "994" not in str(shown)  # the "994.1" pawns for a reply that allows mate


@pytest.mark.parametrize(
    ("url", "ply", "link"),
    [
        ("https://lichess.org/SLbfzQtP", 36, "https://lichess.org/SLbfzQtP#36"),
        ("https://lichess.org/q2SFqfYD", 97, "https://lichess.org/q2SFqfYD/black#97"),
        ("https://www.chess.com/game/live/56889059865", 12, "https://www.chess.com/game/live/56889059865?move=12"),
        ("https://www.chess.com/game/daily/123456", 3, "https://www.chess.com/game/daily/123456?move=3"),
        ("https://example.org/games/7", 10, "https://example.org/games/7"),
        (None, 10, None),
    ],
)
def test_game_link_takes_the_move_where_the_site_does(
    macros: duckdb.DuckDBPyConnection, url: str | None, ply: int, link: str | None
) -> None:
    assert one(macros, "select game_link(?::varchar, ?::integer)", url, ply) == link


def test_games_are_named_by_players_event_and_date(macros: duckdb.DuckDBPyConnection) -> None:
    sql = "select game_name(?::varchar, ?::integer, ?::varchar, ?::integer, ?::varchar, ?::varchar)"
    assert one(macros, sql, "Ann", 1500, "Bob", 1480, "Live Chess", "2024.01.31") == (
        "Ann (1500) - Bob (1480), Live Chess, 2024.01.31"
    )
    assert one(macros, sql, None, None, "Bob", None, "?", "????.??.??") == "? - Bob"
