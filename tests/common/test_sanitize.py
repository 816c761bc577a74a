"""What a person reads in a terminal: `shell_word` (a path printed inside a command to paste) and
the mining job's summary lines (issue 42's partial rows: a raw U+202E kept in a printed path, a
"query it:" command naming a path that does not exist, "workers: 3" when 2 ran)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.cli.jobs import summary_text
from pipeline.common.sanitize import shell_word

AWKWARD_PATHS = [
    "runs/plain",
    "runs/with space",
    "runs/it's",
    "runs/\u202eevil.pgn",  # a right-to-left override: the terminal would show the name reversed
    "runs/\x1b[2Jclear",
    "runs/back\\slash and 'quote' \u2066",
    "-starts-with-dash",
]


@pytest.mark.parametrize("text", AWKWARD_PATHS)
def test_a_shell_word_reads_back_as_the_text_and_shows_nothing_a_terminal_acts_on(text: str) -> None:
    word = shell_word(text)
    assert "\u202e" not in word and "\x1b" not in word and "\u2066" not in word
    read_back = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True).stdout
    assert read_back.decode("utf-8") == text


def manifest(workers: int, up: int) -> dict[str, object]:
    return {
        "games_read": 3,
        "games_written": 2,
        "games_filtered": 1,
        "games_filtered_by": {"duplicate": 1},
        "games_error": 0,
        "positions": 40,
        "positions_analysed": 30,
        "positions_reused": 10,
        "positions_error": 0,
        "traps": 5,
        "engine": {"name": "native"},
        "human": {"model_name": None},
        "workers": workers,
        "workers_up": up,
        "wall_seconds": 12.5,
    }


def test_the_summary_shows_the_path_safely_and_a_command_that_works(tmp_path: Path) -> None:
    out = str(tmp_path / "runs \u202ekcart.pgn")
    Path(out).mkdir()
    text = summary_text(manifest(2, 2), out)
    assert "\u202e" not in text and "\\u202e" in text.splitlines()[0]
    command = text.splitlines()[-1].removeprefix("query it: ")
    assert command.startswith("diffimax query --data ")
    named = subprocess.run(["bash", "-c", f'set -- {command}; printf %s "$4"'], capture_output=True, check=True)
    assert Path(named.stdout.decode("utf-8")).is_dir()  # the command names the directory that exists


def test_the_summary_says_how_many_workers_ran_when_fewer_than_asked() -> None:
    assert "workers: 2 (of 3 asked" in summary_text(manifest(3, 2), "out")
    assert "workers: 2;" in summary_text(manifest(2, 2), "out")
