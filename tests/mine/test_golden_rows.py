"""Golden runs: the seed's DiffiMax, mined through today's pipeline with the dip judge alone, gives
the very rows the code before the trap judges and the restructuring gave (tests/golden.py says how
they are compared; the digests were taken from datasets mined at commit a8a59fe, and again, for
the two columns the per-worker tables changed on purpose, after a column-by-column comparison)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import GAMES, ROOT, STOCKFISH, require_stockfish, run_cli
from tests.golden import digests

RUNS = {
    "native100": [str(GAMES / "lichess_100.pgn"), "--engine", "native", "--depth", "2", "--plies", "10-12"],
    "sf100": [
        str(GAMES / "lichess_100.pgn"),
        "--engine",
        str(STOCKFISH),
        "--nodes",
        "20000",
        "--plies",
        "10-13",
        "--max-games",
        "10",
    ],
    "evalclk": [
        str(GAMES / "lichess_eval_clk_10024.pgn.zst"),
        "--engine",
        "native",
        "--depth",
        "1",
        "--plies",
        "10-11",
        "--max-games",
        "30",
        "--shard-games",
        "10",
    ],
    "famous": [str(ROOT / "pipeline" / "samples" / "famous.pgn"), "--engine", "native", "--depth", "2"],
}


@pytest.mark.parametrize(
    "name",
    [
        "native100",
        pytest.param("sf100", marks=[pytest.mark.stockfish]),
        "evalclk",
        "famous",
    ],
)
def test_the_seed_analysis_is_row_for_row_the_original(name: str, tmp_path: Path, data_dir: Path) -> None:
    if name == "sf100":
        require_stockfish()
    out = tmp_path / name
    run_cli(
        "mine", *RUNS[name], "--out", str(out), "--workers", "2", "--judges", "dip", "--human-model", "none", check=True
    )
    expected = json.loads((ROOT / "tests" / "golden" / f"{name}.json").read_text())
    assert digests(out) == expected
