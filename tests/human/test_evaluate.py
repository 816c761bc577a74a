"""Tests of `pipeline.human.evaluate`: `diffimax human train` and `eval` end to end on a small
slice (the figures by band, the calibration, one process or two Ray workers giving the same
report, bad input in one line)."""

from __future__ import annotations

import json

from tests.conftest import GAMES
from tests.human.helpers import cli, slice_pgn


def test_cli_train_and_eval_on_a_small_slice(data_dir, tmp_path):
    data = slice_pgn(tmp_path, 30)
    out = tmp_path / "m.json"
    fit = tmp_path / "fit.toml"
    fit.write_text("[lightgbm]\nmax-rounds = 20\n")
    done = cli(
        "train",
        "--config",
        str(fit),
        "--games",
        str(data),
        "--out",
        str(out),
        "--groups",
        "base,book",
        "--train-rate",
        "1",
        "--tune-rate",
        "1",
        "--book-min-games",
        "2",
        "--json",
        "--workers",
        "1",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["train_positions"] > 500 and 0 < summary["tune"]["top1"] < 1
    recorded = json.loads(out.read_text())["training"]
    assert recorded["command"].startswith("diffimax human train --games ") and recorded["command"].endswith(
        "--config training.toml --out m.json"
    )
    assert recorded["job_file"] == "[lightgbm]\nmax-rounds = 20\n"  # what --config names, to train it again
    shown = cli("eval", "--human-model", str(out), str(data), "--split", "all", "--json", "--workers", "1")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    every = report["by_band"][-1]
    assert every["band"] == "all" and every["model"]["n"] == report["positions"] > 1000
    assert every["model"]["top1"] > every["uniform"]["top1"]
    assert sum(row["moves"] for row in report["calibration"]) > report["positions"] * 10
    # Two Ray workers split the games, and the merged figures are the one process's.
    spread = cli("eval", "--human-model", str(out), str(data), "--split", "all", "--json", "--workers", "2")
    assert spread.returncode == 0, spread.stderr
    timing = "ms_per_position"  # the one figure that is a time
    assert {**json.loads(spread.stdout), timing: None} == {**report, timing: None}
    text = cli(
        "eval", "--human-model", str(out), str(data), "--split", "all", "--max-positions", "50", "--workers", "1"
    )
    assert text.returncode == 0 and "Move matching by rating band" in text.stdout
    # Bad input: one line, exit code 1.
    missing = cli("eval", "--human-model", str(tmp_path / "none.json"), str(data))
    assert missing.returncode == 1 and missing.stderr.strip().count("\n") == 0 and "no model file" in missing.stderr
    no_games = cli("eval", "--human-model", str(out), str(tmp_path / "none.pgn"))
    assert no_games.returncode == 1 and "no such file" in no_games.stderr
    held = cli(
        "train",
        "--games",
        str(GAMES / "lichess_100.pgn"),
        "--out",
        str(tmp_path / "x.json"),
        "--groups",
        "base",
        "--workers",
        "1",
    )
    assert held.returncode == 1 and "too little data" in held.stderr and "Traceback" not in held.stderr
