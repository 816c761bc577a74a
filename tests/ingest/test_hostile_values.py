"""Issue 29, item 2: every value read from a game is range-checked where it is parsed.

On main (571d7ff) `[%eval 30000000]` or `[%eval #2147483648]` in one game ended the whole mining
job with exit 70 (the int32 column could not hold it), as did a rating or a TimeControl of eleven
digits; `[%clk 99999999999:00:00]`, `99:99:99` and `-0:00:01` were stored as 3.6e14 s, 362,439 s and
1 s; a date of `9999.99.99` was stored as it came; Latin-1 names became U+FFFD in silence. Here each
value outside its plausible range, or unreadable, is dropped (null), counted by kind on the game
(`Selected.dropped`), and the game with everything else it holds is kept; headers that are not
UTF-8 are read as Windows-1252 and the game says so (`Selected.latin1`). The mining job over
these games is in tests/mine/test_hostile_inputs.py.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipeline.ingest.games import read_pgn_bytes
from pipeline.ingest.headers import decode_text, parse_date, parse_rating, parse_time_control
from pipeline.ingest.movetext import read_commands
from pipeline.ingest.outcomes import Selected
from schemas.dataset import versioned

HEADERS = '[Event "Rated Blitz game"]\n[GameId "hostile1"]\n[WhiteElo "1500"]\n[BlackElo "1500"]\n'


def one_game(movetext: str, headers: str = HEADERS) -> Selected:
    (outcome,) = read_pgn_bytes(f"{headers}\n{movetext}\n\n".encode())
    assert isinstance(outcome, Selected), outcome
    return outcome


@pytest.mark.parametrize(
    ("comment", "stored", "dropped"),
    [
        ("[%eval 0.17]", (17, None), []),
        ("[%eval #-3]", (None, -3), []),
        ("[%eval 0.17,20]", (17, None), []),
        ("[%eval 30000000]", None, ["eval"]),
        ("[%eval #2147483648]", None, ["eval"]),
        ("[%eval 1e400]", None, ["eval"]),
        ("[%eval nan]", None, ["eval"]),
    ],
)
def test_an_eval_out_of_range_is_dropped_and_counted(
    comment: str, stored: tuple[int | None, int | None] | None, dropped: list[str]
) -> None:
    evals: dict[int, tuple[int | None, int | None]] = {}
    assert read_commands({}, evals, 1, comment) == dropped
    assert evals.get(1) == stored


@pytest.mark.parametrize(
    ("comment", "stored"),
    [
        ("[%clk 0:01:00]", 60.0),
        ("[%clk 0:09:59.9]", 599.9),
        ("[%clk 90:00]", 5400.0),
        ("[%clk 167:59:59]", 604799.0),  # a chess.com daily game's seven days
        ("[%clk 99999999999:00:00]", None),  # main: 3.6e14 s
        ("[%clk 99:99:99]", None),  # main: 362,439 s
        ("[%clk -0:00:01]", None),  # main: 1 s
    ],
)
def test_a_clock_out_of_range_is_dropped_and_counted(comment: str, stored: float | None) -> None:
    clocks: dict[int, float] = {}
    assert read_commands(clocks, {}, 1, comment) == ([] if stored is not None else ["clock"])
    assert clocks.get(1) == stored


def test_a_game_keeps_everything_but_its_absurd_values_and_its_rows_fit_the_schema() -> None:
    headers = (
        '[Event "Rated Blitz game"]\n[GameId "hostile2"]\n[Date "9999.99.99"]\n[WhiteElo "99999999999"]\n'
        '[BlackElo "1500"]\n[TimeControl "99999999999+0"]\n'
    )
    movetext = (
        "1. e4 { [%eval 30000000] [%clk 99999999999:00:00] } 1... e5 { [%eval #2147483648] [%clk -0:00:01] } "
        "2. Nf3 { [%eval 0.3] [%clk 0:02:59] } 2... Nc6 { [%clk 99:99:99] } 3. Bb5 1-0"
    )
    game = one_game(movetext, headers)
    assert sorted(game.dropped) == ["clock", "clock", "clock", "date", "eval", "eval", "rating", "time_control"]
    row = game.game
    assert (row["date"], row["white_elo"], row["black_elo"], row["time_control_class"]) == (None, None, 1500, "unknown")
    assert row["base_seconds"] is None and row["plies"] == 5
    by_ply = {position["ply"]: position for position in game.positions}
    assert by_ply[1]["eval_cp"] is None and by_ply[1]["eval_mate"] is None
    assert by_ply[3]["eval_cp"] == 30 and by_ply[3]["eval_mate"] is None
    assert [by_ply[ply]["clock_seconds"] for ply in (2, 3, 4)] == [None, None, 179.0]
    # main: ArrowInvalid (int32) when the shard was written, and the job ended with exit 70
    pa.Table.from_pylist([row], schema=versioned("games"))
    pa.Table.from_pylist(game.positions, schema=versioned("positions"))


def test_plausible_header_values_are_read_as_they_are() -> None:
    assert parse_rating("3046") == 3046 and parse_rating("4001") is None and parse_rating("?") is None
    assert parse_time_control("2678400+86400") == (2678400, 86400, "classical")
    assert parse_time_control("2678401+0") == (None, None, "unknown")
    assert parse_time_control("9" * 40) == (None, None, "unknown")
    assert [parse_date(text) for text in ("2017.12.14", "1858.??.??", "????.??.??", "2023.02.30", "12.14.2017")] == [
        "2017.12.14",
        "1858.??.??",
        "????.??.??",
        None,
        None,
    ]


def test_headers_that_are_not_utf8_are_read_as_windows_1252_and_said_so() -> None:
    assert decode_text("Jörg €".encode()) == ("Jörg €", False)
    assert decode_text("Jörg €".encode("cp1252")) == ("Jörg €", True)
    assert decode_text(b"J\xf6rg \x81") == ("J\xf6rg \x81", True)  # a byte cp1252 leaves undefined: Latin-1
    assert not one_game("1. e4 e5 1-0", HEADERS + '[White "J\xf6rg"]\n').latin1  # written as UTF-8
    (outcome,) = read_pgn_bytes((HEADERS + '[White "J\xf6rg"]\n\n1. e4 e5 1-0\n\n').encode("latin-1"))
    assert isinstance(outcome, Selected) and outcome.latin1 and outcome.game["white"] == "J\xf6rg"
