"""Every numeric flag of every command is checked against what it feeds before any work (issue 42,
failure 5): each flag, given 0, -1, 2^31, 2^63, 1e20 and nan, ends in one line (exit 1), the
parser's refusal (exit 2) or a finished run (exit 0), never an internal error (exit 70) or a
traceback. Each command gets an input that makes its work trivial (a one-game PGN, a dataset
without candidates, the material engine) or ends it right after the check (an input that does not
exist), so the walk takes a couple of minutes.

On 64e93b5: `repertoire --rating 2^31` (and `--player-rating`, `--line-plies 2^31`) ran the whole
search, then exit 70 (ArrowInvalid in nodes_table); `puzzles --nodes 2^63`, exit 70
(OverflowError: timestamp out of range); a row per flag did not exist.
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import pytest
import typer

from tests.conftest import cli_in_process, one_error_line, run_cli

pytestmark = pytest.mark.cluster  # the puzzles' dataset is mined once, on Ray

EXTREMES: tuple[int | float, ...] = (0, -1, 2**31, 2**63, 1e20, math.nan)
GAME = """[Event "Rated Blitz game"]
[Site "https://lichess.org/abcdefgh"]
[White "a"]
[Black "b"]
[Result "1-0"]
[WhiteElo "1500"]
[BlackElo "1500"]
[TimeControl "180+0"]

1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0
"""
FEN = "4k3/8/8/8/8/8/8/4K2R w K - 0 1"
MISSING = "/nonexistent/games.pgn"


def leaf_commands(command: object, path: str = "") -> Iterator[tuple[str, object]]:
    """Every leaf command below `command` with its path ("human train")."""
    commands = getattr(command, "commands", None)
    if commands is None:
        yield path, command
        return
    for name, sub in commands.items():
        yield from leaf_commands(sub, f"{path} {name}".strip())


def numeric_options() -> Iterator[tuple[str, str, type]]:
    """(command, flag, int or float) of every numeric option of every command, read from the
    app the console entry point runs (sub-apps' commands as "human train")."""
    from pipeline.cli import app

    for path, command in leaf_commands(typer.main.get_group(app)):
        for parameter in getattr(command, "params", []):
            kind = number_kind(parameter.type_descriptor.annotation)
            if kind is not None and getattr(parameter, "opts", None):
                yield path, next(opt for opt in parameter.opts if opt.startswith("--")), kind


def number_kind(annotation: object) -> type | None:
    """int or float for a numeric option (also optional, or a list of them); None otherwise."""
    if annotation in (int, float):
        return annotation  # type: ignore[return-value]
    for arg in getattr(annotation, "__args__", ()):
        if arg is not type(None) and (kind := number_kind(arg)) is not None:
            return kind
    return None


OPTIONS = sorted(set(numeric_options()))


def numeric_job_file_keys() -> Iterator[tuple[str, str, type]]:
    """(command, "table.key", int or float) of every numeric key of a job file's tables that a
    command takes (`pipeline.cli.options.from_job_file`)."""
    import typing

    from pipeline.cli import app
    from pipeline.cli.options import JOB_FILE_FIELDS

    for path, command in leaf_commands(typer.main.get_group(app)):
        for table, keys in getattr(getattr(command, "callback", None), JOB_FILE_FIELDS, {}).items():
            for key, (group, name) in keys.items():
                kind = number_kind(typing.get_type_hints(group)[name])
                if kind is not None:
                    yield path, f"{table}.{key}", kind


KEYS = sorted(set(numeric_job_file_keys()))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The one-game PGN, and a dataset mined from it with no puzzle candidate (so `puzzles`
    starts its engine and verifies nothing)."""
    base = tmp_path_factory.mktemp("flags")
    pgn = base / "game.pgn"
    pgn.write_text(GAME)
    data = base / "data"
    run_cli(
        "mine",
        str(pgn),
        "--out",
        str(data),
        "--engine",
        "material",
        "--workers",
        "1",
        "--plies",
        "0-0",
        "--human-model",
        "none",
        "--judges",
        "dip",
        check=True,
    )
    return {"pgn": str(pgn), "data": str(data), "out": str(base / "out")}


def base_args(command: str, paths: dict[str, str], case: str) -> list[str]:
    """What `command` needs besides the flag walked, for trivial work."""
    out = f"{paths['out']}-{case}"
    bases = {
        "tree": ["((1,2),(3,4))"],
        "explain": [FEN, "--engine", "material", "--depth", "1", "--human-model", "none"],
        "mine": [MISSING, "--out", out, "--workers", "1"],
        "puzzles": ["--data", paths["data"], "--out", out, "--workers", "1", "--human-model", "none"],
        "evaluate": [MISSING, "--engine", "material", "--workers", "1"],
        "prototype": ["--trees", "2"],
        "play": ["--engine", "material", "--human-model", "none"],
        "repertoire": [
            *("--color", "black", "--rating", "1000", "--moves", "e4", "--line-plies", "1", "--floor", "0.3"),
            *("--workers", "0", "--engine", "material", "--out", out),
        ],
        "human train": ["--games", MISSING, "--out", f"{out}.json", "--workers", "1"],
        "human eval": [MISSING, "--workers", "1"],
    }
    return bases[command]


def shown(value: int | float) -> str:
    return "nan" if isinstance(value, float) and math.isnan(value) else str(value)


def test_every_numeric_flag_of_every_command_is_walked() -> None:
    """The walk reaches every command with numeric flags (a new command needs a base input)."""
    commands = {command for command, _, _ in OPTIONS}
    assert commands == {
        "tree",
        "explain",
        "mine",
        "puzzles",
        "evaluate",
        "prototype",
        "play",
        "repertoire",
        "human train",
        "human eval",
    }, commands
    assert len(OPTIONS) > 70  # 76 since the engine's secondary limits and the tuning knobs moved to job files
    expected = {"explain", "mine", "evaluate", "prototype", "repertoire", "human train"}  # tree's [search] has none
    assert {command for command, _, _ in KEYS} == expected
    assert len(KEYS) > 40, KEYS


def test_every_numeric_flag_has_a_row_in_the_table() -> None:
    from pipeline.cli.limits import range_of

    missing = [f"{command} {flag}" for command, flag, _ in OPTIONS if range_of(command, flag) is None]
    assert not missing, missing


def test_every_numeric_job_file_key_has_a_row_in_the_table() -> None:
    from pipeline.cli.limits import range_of

    missing = [f"{command} {key}" for command, key, _ in KEYS if range_of(command, key) is None]
    assert not missing, missing


def test_a_flag_without_a_row_stops_the_app_from_being_built() -> None:
    from pipeline.cli.limits import guard_commands

    app = typer.Typer()

    @app.command()
    def grow(acres: Annotated[int, typer.Option("--acres")] = 1) -> None:
        """A command whose flag no row bounds."""

    with pytest.raises(TypeError, match="--acres"):
        guard_commands(app)


def test_the_bounds_derived_from_a_schema_follow_it() -> None:
    """The depth flag's bound is the settings column's type's (int16), not a copied number."""
    from pipeline.cli.limits import range_of

    depth = range_of("mine", "--depth")
    plies = range_of("repertoire", "--line-plies")
    assert depth is not None and plies is not None
    assert (depth.high, plies.high) == (32_767, 32_767)
    assert "int16" in depth.reason and "int16" in plies.reason


@pytest.mark.parametrize(("command", "flag", "kind"), OPTIONS, ids=[f"{c} {f}" for c, f, _ in OPTIONS])
def test_extremes_end_in_one_line_or_a_finished_run(
    command: str, flag: str, kind: type, inputs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("quit\n"))  # play reads its UCI commands from stdin
    for index, value in enumerate(EXTREMES):
        if kind is int and isinstance(value, float):
            continue  # the parser refuses it (exit 2), before any command
        args = [*command.split(), *base_args(command, inputs, f"{flag}-{index}"), flag, shown(value)]
        result = cli_in_process(*args)
        assert_one_line_or_done(result, " ".join(args))


@pytest.mark.parametrize(("command", "key", "kind"), KEYS, ids=[f"{c} {k}" for c, k, _ in KEYS])
def test_a_job_file_value_out_of_range_is_one_line_naming_the_file_and_key(
    command: str, key: str, kind: type, inputs: dict[str, str], tmp_path: Path
) -> None:
    """A job file's numeric key, given the extremes, is one line naming the file and the key
    before any work (the walk above, for the settings that are no flags)."""
    from pipeline.cli.limits import range_of

    table, name = key.split(".")
    bound = range_of(command, key)
    assert bound is not None
    for index, value in enumerate(EXTREMES):
        if kind is int and isinstance(value, float):
            value = 1.5  # a whole number's key refuses a fraction as a flag's parser does
        path = tmp_path / f"job-{index}.toml"
        path.write_text(f"[{table}]\n{name} = {shown(value)}\n")
        args = [*command.split(), *base_args(command, inputs, f"{key}-{index}"), "--config", str(path)]
        result = cli_in_process(*args)
        assert_one_line_or_done(result, f"{' '.join(args)} ({key} = {shown(value)})")
        if (isinstance(value, float) and kind is int) or bound.problem(value) is not None:  # refused, by the file
            assert f"job file {str(path)!r}: " in one_error_line(result), (key, value, result.stderr)


def assert_one_line_or_done(result: subprocess.CompletedProcess[str], line: str) -> None:
    assert result.returncode in (0, 1, 2), f"{line}: exit {result.returncode}\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr, f"{line}:\n{result.stderr[-3000:]}"
    if result.returncode:
        lines = [text for text in result.stderr.splitlines() if text.strip()]
        assert lines and lines[-1].startswith(("diffimax: error: ", "Usage:", "Try ")), f"{line}:\n{result.stderr}"


def test_a_float_out_of_range_is_told_its_range_and_nan_is_refused(tmp_path: Path) -> None:
    """64e93b5: `mine --shard-mb 1e14` said "must be above 0"; nan went on to the work."""
    out = str(tmp_path / "out")
    for value, words in (
        ("1e14", "a number above 0 and at most 1,099,511,627,776"),
        ("nan", "a finite number above 0"),
        ("inf", "a finite number above 0"),
    ):
        result = cli_in_process("mine", MISSING, "--out", out, "--shard-mb", value)
        line = one_error_line(result)
        assert f"invalid --shard-mb {float(value)!r}: must be {words}" in line, line
