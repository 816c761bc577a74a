"""`diffimax plan`: the planned job against the same job run for real, and bad input as one line.

The accuracy test plans 100 games of a shared file from a 50-game sample (so games, positions and
distinct positions are extrapolated, not counted), then mines the 100 games on a local Ray cluster
and compares the plan's counts with the manifest. The planned seconds are a measurement of this
machine's speed, so they are compared in a benchmark (`python -m benchmarks.bench_plan`, figures
in docs/results/mining.md), not asserted by a test on a shared machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.cli import mine_config
from pipeline.ingest.sources import InputError
from pipeline.mine.plan import PlanError, plan
from tests.conftest import GAMES, run_cli

# The job: the native engine at depth 1 on a ply window, judges that need no human-move model
# (the bundled model starts Stockfish for its features), 100 games of the bullet player's file.
SOURCE = GAMES / "lichess_player_a_37221.pgn.zst"
JOB = [
    "--engine",
    "native",
    "--depth",
    "1",
    "--plies",
    "10-19",
    "--judges",
    "trappy,dip",
    "--human-model",
    "none",
    "--max-games",
    "100",
]
# What the plan must be within of the measured run (the bar).
TOLERANCE = 0.30


def within(planned: float, measured: float) -> bool:
    return abs(planned - measured) <= TOLERANCE * measured


def test_planned_counts_are_within_30_percent_of_the_real_run(data_dir: Path, tmp_path: Path) -> None:
    sample = ["--sample-games", "50", "--sample-positions", "200", "--json"]
    planned = json.loads(run_cli("mine", "--plan", str(SOURCE), *JOB, *sample, check=True).stdout)
    assert not planned["sample"]["whole_job"], "the sample must be smaller than the job, or nothing is estimated"
    out = tmp_path / "mined"
    run_cli("mine", str(SOURCE), *JOB, "--out", str(out), check=True)
    manifest = json.loads((out / "manifest.json").read_text())
    pairs = {
        "games": (planned["games_kept"]["value"], manifest["games_written"]),
        "positions": (planned["positions"]["value"], manifest["positions"]),
        "analysed": (
            planned["positions_analysed"]["value"],
            manifest["positions_analysed"] + manifest["positions_error"],
        ),
    }
    # Shown with -s, and in the failure message: the figures the docs quote.
    shown = {name: f"{p:,.1f} planned / {m:,.1f} measured" for name, (p, m) in pairs.items()}
    print(shown)
    assert all(within(p, m) for p, m in pairs.values()), shown


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--sample-positions", "0"], "invalid --sample-positions 0: must be a whole number >= 1"),
        (["--sample-games", "-5"], "invalid --sample-games -5: must be a whole number >= 1"),
        (
            ["--min-elo", "4000"],
            "nothing to analyse: no position of the 100 sampled games is in the job "
            "(0 kept, 0 unreadable; filtered: 100 by rating)",
        ),
    ],
)
def test_bad_planning_input_is_one_line(data_dir: Path, flags: list[str], message: str) -> None:
    result = run_cli("mine", "--plan", str(GAMES / "lichess_100.pgn"), "--engine", "native", *flags)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(f"diffimax: error: {message}")
    assert "Traceback" not in result.stderr


def test_plan_refuses_what_it_cannot_read(data_dir: Path) -> None:
    job = mine_config("(planned)", False, ["https://database.lichess.org/x.pgn.zst"], engine="native")
    with pytest.raises(
        PlanError, match=r"^cannot plan 'https://database.lichess.org/x.pgn.zst': plan reads files and objects"
    ):
        plan(job)
    missing = mine_config("(planned)", False, [str(GAMES / "no_such_file.pgn")], engine="native")
    with pytest.raises(InputError, match=r"^no such file: '.*no_such_file.pgn'$"):
        plan(missing)


def test_plan_gives_no_interval_from_too_few_timed_games(data_dir: Path) -> None:
    # The chess.com plan timed one game and printed "0.0 s - 7749 days": now the mean alone,
    # and how many games an interval needs.
    result = run_cli(
        "mine",
        "--plan",
        str(GAMES / "lichess_100.pgn"),
        "--engine",
        "native",
        "--depth",
        "1",
        "--judges",
        "dip",
        "--human-model",
        "none",
        "--plies",
        "10-12",
        "--sample-positions",
        "3",
        check=True,
    )
    text = result.stdout
    line = next(line for line in text.splitlines() if line.startswith("wall time:"))
    assert "90 %" not in line and "an interval needs at least 5" in line, text
    assert re.search(r"timed \d+/\d+ positions", result.stderr), result.stderr  # its progress, on stderr


def test_a_game_rate_scales_an_assumed_month_and_each_question_has_one_wall(data_dir: Path) -> None:
    """Issue 44: `--assume-games 90000000 --game-rate 0.01` on a small input failed ("nothing to
    analyse: ... filtered by sample"): the sample was thinned by the rate before it was timed. The
    plan now reads the sample without the rate and scales by it; the games it leaves out count as
    filtered. The plan on this machine gives one wall for its own workers, and the cluster rows
    do not repeat that count with another figure."""
    flags = [
        "--engine",
        "native",
        "--depth",
        "1",
        "--judges",
        "dip",
        "--human-model",
        "none",
        "--plies",
        "10-12",
        "--sample-positions",
        "6",
        "--workers",
        "1",
    ]
    assumed = ["--assume-games", "90000000", "--game-rate", "0.01"]
    planned = json.loads(
        run_cli("mine", "--plan", str(GAMES / "lichess_100.pgn"), *flags, *assumed, "--json", check=True).stdout
    )
    sample = planned["sample"]
    kept_share = sample["games_kept"] / sample["games_read"]
    assert sample["games_kept"] > 0 and not sample["whole_job"]
    assert planned["games_kept"]["value"] == pytest.approx(90_000_000 * 0.01 * kept_share)
    total = sum(planned[name]["value"] for name in ("games_kept", "games_filtered", "games_error"))
    assert total == pytest.approx(90_000_000)
    # The same job at rate 1 plans 100 times the games and about 100 times the positions.
    whole = json.loads(
        run_cli(
            "mine", "--plan", str(GAMES / "lichess_100.pgn"), *flags, "--assume-games", "90000000", "--json", check=True
        ).stdout
    )
    assert whole["games_kept"]["value"] == pytest.approx(100 * planned["games_kept"]["value"])
    assert whole["positions"]["value"] == pytest.approx(100 * planned["positions"]["value"])
    # A game the rate leaves out costs its headers, not a replay: the parse is planned for the kept.
    assert planned["ingest_seconds"]["value"] < whole["ingest_seconds"]["value"] / 5
    text = run_cli("mine", "--plan", str(GAMES / "lichess_100.pgn"), *flags, *assumed, check=True).stdout
    assert re.search(r"^wall time: .* with 1 worker$", text, re.MULTILINE), text
    assert not re.search(r"^\s+1 workers?:", text, re.MULTILINE), text
    assert re.search(r"unreadable: \d[\d,]*.*from \d+ of the \d+ games sampled", text), text


def test_a_month_plans_on_12000_workers(data_dir: Path) -> None:
    """Issue 47's plan is `--workers 12000`; the flag's bound (10,000, a machine's processes) refused
    it with "at most 10,000". The bound is now the cluster's, and the plan's wall is for 12,000."""
    flags = ["--engine", "native", "--depth", "1", "--judges", "dip", "--human-model", "none", "--plies", "10-12"]
    planned = json.loads(
        run_cli(
            "mine",
            "--plan",
            str(GAMES / "lichess_100.pgn"),
            *flags,
            "--sample-positions",
            "6",
            "--assume-games",
            "90000000",
            "--workers",
            "12000",
            "--json",
            check=True,
        ).stdout
    )
    assert planned["workers"] == 12000
    assert run_cli("mine", "--plan", str(GAMES / "lichess_100.pgn"), "--workers", "1000001").returncode == 1
