"""Issue 29, item 6: `diffimax query` runs one statement unless asked for a script, has a
read-only mode, and writes its results streamed.

On main (571d7ff): `select 1; select 2` ran both and printed only the last; `COPY ... TO`,
`ATTACH` and `INSTALL` ran with no way to refuse them (a shared server, a notebook); `--format
json` of 10 M rows held every row and its text at once (6.5 GB; table 2.9 GB, csv 2.2 GB), and
DuckDB's progress bar was drawn on stdout, into the JSON. The dataset here is written by the
project's one writer from real games (its games and positions; no engine, no Ray).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.dataset.duck import connect
from pipeline.dataset.queries import FETCH_ROWS, TABLE_WIDTH_ROWS, render_stream
from pipeline.dataset.store import DatasetWriter
from pipeline.ingest.games import read_pgn_bytes
from pipeline.ingest.outcomes import Selected
from tests.conftest import GAMES, one_error_line
from tests.conftest import cli_in_process as run_cli  # queries need no process of their own


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("queries") / "data"
    games = [game for game in read_pgn_bytes((GAMES / "lichess_100.pgn").read_bytes()) if isinstance(game, Selected)]
    writer = DatasetWriter.create(out, {"identity": {}})
    rows = {"games": [game.game for game in games], "positions": [row for game in games for row in game.positions]}
    writer.commit("lichess_100-00000000-000000", rows, {"shard_id": "lichess_100-00000000-000000", "ordinal": 0})
    writer.write_manifest({})
    return out


def test_two_statements_are_refused_unless_asked_for_a_script(dataset: Path) -> None:
    line = one_error_line(run_cli("query", "--data", str(dataset), "select 1 as one; select 2 as two"))
    assert "2 statements" in line and "--script" in line, line
    script = run_cli(
        "query",
        "--data",
        str(dataset),
        "create table t as select 41 as x; select x + 1 as two from t",
        "--script",
        "--format",
        "csv",
    )
    assert script.returncode == 0 and script.stdout.split() == ["two", "42"], script.stdout + script.stderr


@pytest.mark.parametrize(
    "sql",
    [
        "copy (select * from games) to '{outside}'",
        "attach '{outside}' as other",
        "install httpfs",
        "select * from read_csv('{victim}')",
    ],
)
def test_read_only_touches_nothing_outside_the_dataset(dataset: Path, tmp_path: Path, sql: str) -> None:
    outside, victim = tmp_path / "written.db", tmp_path / "victim.csv"
    victim.write_text("secret\n1\n")
    line = one_error_line(
        run_cli("query", "--data", str(dataset), sql.format(outside=outside, victim=victim), "--read-only")
    )
    assert "disabled" in line, line
    assert not outside.exists()
    # Without --read-only it is the user's own SQL on their own machine: it runs.
    if sql.startswith("copy"):
        assert run_cli("query", "--data", str(dataset), sql.format(outside=outside)).returncode == 0
        assert outside.exists()


def counted(batches: list[list[tuple[Any, ...]]], taken: list[int]) -> Iterator[list[tuple[Any, ...]]]:
    for batch in batches:
        taken.append(len(batch))
        yield batch


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_results_are_written_as_their_batches_come(fmt: str) -> None:
    """main rendered a result only once every row was held (`fetchall`, then one string)."""
    batches = [[(index, f"player {index}")] * 1_000 for index in range(50)]
    taken: list[int] = []
    pieces = render_stream(["n", "name"], counted(batches, taken), fmt)
    next(pieces)
    before = TABLE_WIDTH_ROWS if fmt == "table" else 1  # a table's widths: measured on its first rows
    assert sum(taken) <= max(before, FETCH_ROWS) and sum(taken) < 50_000
    rest = "".join(pieces)
    assert sum(taken) == 50_000 and rest


def test_no_progress_bar_is_drawn_into_a_results_output(dataset: Path) -> None:
    """main: DuckDB's progress bar (drawn once a query runs 2 s) went to stdout, before the JSON of
    `diffimax query --format json` (seen on a 1 M-row query)."""
    connection = connect(dataset)
    try:
        assert connection.execute("select current_setting('enable_progress_bar')").fetchone() == (False,)
    finally:
        connection.close()
