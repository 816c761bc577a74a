"""`diffimax mine --plan` against the real run of the same job: counts and seconds, side by side.

  python -m benchmarks.bench_plan [--engine native] [--max-games 100] [--sample-games 50]
                                  [--sample-positions 200] [-- extra mine flags]

Plans the job (the real command, `--json`), then mines it (the real command) right after, so the
machine's load is as alike for both as a shared machine allows, and prints planned / measured and
their ratio for games, positions, analysed positions, engine seconds and wall seconds. Default:
tests/mine/test_plan.py's job (native, depth 1, plies 10-19, the engine-only judges, 100 games of
player_a from a 50-game sample); `--engine stockfish` with the default judges is the note's
Stockfish comparison.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT.parent / "shared" / "data" / "games" / "lichess_player_a_37221.pgn.zst"


def diffimax(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(result.stderr[-2000:])
    return result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="native")
    parser.add_argument("--max-games", type=int, default=100)
    parser.add_argument("--sample-games", type=int, default=50)
    parser.add_argument("--sample-positions", type=int, default=200)
    parser.add_argument("extra", nargs="*", help="more mine flags (after --)")
    args = parser.parse_args()
    job = ["--engine", args.engine, "--plies", "10-19", "--max-games", str(args.max_games), *args.extra]
    if args.engine == "native":
        job += ["--depth", "1", "--judges", "trappy,dip", "--human-model", "none"]
    sample = ["--sample-games", str(args.sample_games), "--sample-positions", str(args.sample_positions), "--json"]
    planned = json.loads(diffimax("mine", "--plan", str(SOURCE), *job, *sample))
    with tempfile.TemporaryDirectory() as tmp:
        diffimax("mine", str(SOURCE), *job, "--out", f"{tmp}/run")
        manifest = json.loads(Path(f"{tmp}/run/manifest.json").read_text())
    rows = {
        "games": (planned["games_kept"]["value"], manifest["games_written"]),
        "positions": (planned["positions"]["value"], manifest["positions"]),
        "analysed": (
            planned["positions_analysed"]["value"],
            manifest["positions_analysed"] + manifest["positions_error"],
        ),
        "engine seconds": (planned["engine_seconds"]["value"], manifest["engine_seconds"]),
        "wall seconds": (planned["wall_seconds"]["value"], manifest["wall_seconds"]),
    }
    for name, (plan, measured) in rows.items():
        print(f"{name:>15}: planned {plan:>12,.1f}  measured {measured:>12,.1f}  ratio {plan / measured:.2f}")


if __name__ == "__main__":
    main()
