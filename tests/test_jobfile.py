"""A job file (`--config job.toml`, `pipeline/cli/jobfile.py`; issue 46, item 4): the flags by
name, flags on the command line over it, one file for `mine --plan` and `mine`, a bad file in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import GAMES, cli_in_process, one_error_line, run_cli

SAMPLE = str(GAMES / "lichess_100.pgn")


def job_file(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_job_file_sets_the_flags_a_flag_given_overrides_it_and_the_identity_holds_the_merge(tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = job_file(
        tmp_path / "job.toml",
        f"""inputs = ["{SAMPLE}"]
out = "{out}"
engine = "native"
depth = 1
plies = "10-10"
max-games = 5
workers = 1
judges = "dip,trappy"
human-model = "none"
rated-only = false
sample-positions = 2   # --plan's: mine passes over it

[thresholds]  # the judges' thresholds, which are no flags
model-p = 0.25
practical-drop = 10  # points of Win%
""",
    )
    run_cli("mine", "--config", config, "--max-games", "2", check=True)
    identity = json.loads((out / "job.json").read_text())["identity"]
    assert identity["inputs"] == [SAMPLE] and identity["max_games"] == 2  # the command line's 2, not the file's 5
    assert (identity["engine"], identity["depth"], identity["ply_from"], identity["ply_to"]) == ("native", 1, 10, 10)
    assert sorted(identity["judges"]) == ["dip", "trappy"]
    assert (identity["model_p"], identity["practical_drop"]) == (0.25, 0.2)  # 10 points of Win% on the rows' 0..2
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["games_read"] == 2 and manifest["positions"] == 2
    # The same file plans the job (--plan reads its sample-positions; the plan writes nothing at `out`).
    planned = cli_in_process("mine", "--plan", "--config", config, "--sample-games", "5", "--json", check=True)
    plan = json.loads(planned.stdout)
    assert (plan["engine"], plan["settings"]["depth"], plan["settings"]["max_games"]) == ("native", 1, 5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max-gams = 3\n", "job file '{path}': unknown key 'max-gams' (mine takes: "),
        ("max-games = \n", "job file '{path}' is not TOML: "),
        ('max-games = "many"\n', "job file '{path}': invalid max-games = 'many': "),
        ("[engine]\nnodes = 5\n", "job file '{path}': key 'engine' holds a table"),
        (
            "[thresholds]\nmodel-q = 0.3\n",
            "job file '{path}': unknown key thresholds.model-q ([thresholds] holds: trappy-k, ",
        ),
        ("[thresholds]\ntrappy-k = 1.5\n", "job file '{path}': invalid thresholds.trappy-k = 1.5: expected a whole"),
        ('[thresholds]\nmodel-p = "high"\n', "job file '{path}': invalid thresholds.model-p = 'high': expected a "),
        ("[thresholds]\nmodel-p = nan\n", "job file '{path}': invalid thresholds.model-p nan: must be a finite"),
        ("[thresholds]\ncorpus-min-games = 0\n", "job file '{path}': invalid thresholds.corpus-min-games 0: must be"),
        ('[thresholds]\npractical-rule = "most"\n', "job file '{path}': [thresholds]: invalid practical rule 'most'"),
        ("thresholds = 0.3\n", "job file '{path}': 'thresholds' is a table: write it as [thresholds] with"),
        ("[engine-options]\nhash = 0\n", "job file '{path}': invalid engine-options.hash 0: must be a whole"),
        ("[engine-options]\nthreads = true\n", "job file '{path}': invalid engine-options.threads = True: expec"),
        ("[search]\nexclude-checks = 1\n", "job file '{path}': invalid search.exclude-checks = 1: expected true"),
        ('[search]\nscope = "7"\n', "job file '{path}': [search]: invalid scope '7': expected 2, 3, 4, 5 or all"),
        ("[lightgbm]\nthreads = 2\n", "job file '{path}': unknown key 'lightgbm' (mine takes: "),
    ],
    ids=[
        "unknown-key",
        "not-toml",
        "bad-value",
        "table",
        "threshold-key",
        "whole",
        "number",
        "nan",
        "range",
        "rule",
        "flat",
        "engine-range",
        "engine-bool",
        "search-bool",
        "search-scope",
        "other-command",
    ],
)
def test_a_bad_job_file_is_one_line_naming_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    config = job_file(tmp_path / "job.toml", text)
    result = cli_in_process("mine", SAMPLE, "--config", config, "--out", str(tmp_path / "out"))
    assert one_error_line(result.stderr).startswith("diffimax: error: " + message.format(path=config))
    assert not (tmp_path / "out").exists()


def test_a_missing_job_file_is_one_line(tmp_path: Path) -> None:
    result = cli_in_process("mine", "--plan", SAMPLE, "--config", str(tmp_path / "none.toml"))
    assert one_error_line(result.stderr) == (
        f"diffimax: error: cannot read job file {str(tmp_path / 'none.toml')!r}: No such file or directory"
    )


def test_the_repertoire_reads_its_own_keys(tmp_path: Path) -> None:
    """The repertoire's keys are its flags (`color`, `rating`, `line-plies`); mining's are not."""
    config = job_file(tmp_path / "rep.toml", 'color = "purple"\nrating = 1500\nline-plies = 4\n')
    result = cli_in_process("repertoire", "--config", config)
    assert one_error_line(result.stderr) == "diffimax: error: invalid --color 'purple': expected white or black"
    mining = job_file(tmp_path / "mine.toml", "max-games = 3\n")
    result = cli_in_process("repertoire", "--config", mining, "--color", "white", "--rating", "1500")
    assert "unknown key 'max-games' (repertoire takes: " in one_error_line(result.stderr)


def test_explain_reads_the_thresholds_of_a_job_file(tmp_path: Path) -> None:
    config = job_file(tmp_path / "explain.toml", "[thresholds]\npractical-fall-p = 1.5\n")
    result = cli_in_process("explain", "--moves", "e4 e5", "--engine", "native", "--config", config)
    assert one_error_line(result.stderr) == (
        f"diffimax: error: job file {config!r}: invalid thresholds.practical-fall-p 1.5: must be a number above 0 and "
        "at most 1 (a probability)"
    )
    good = job_file(tmp_path / "good.toml", "[thresholds]\npractical-fall-p = 0.5\n")
    shown = cli_in_process("explain", "--moves", "e4 e5", "--engine", "native", "--config", good, "--json", check=True)
    assert json.loads(shown.stdout)["judges"]["settings"]["practical_fall_p"] == 0.5  # the default is 0.4
