"""Stockfish at the defaults in a real mining job: positions per second per worker, this code
against a baseline checkout, in turn.

  python -m benchmarks.bench_mine_cost --baseline /work/baseline [--games 6] [--plies 10-40] [--rounds 2]

Each run is `python -m pipeline.cli mine` of the checkout (its own .venv) with the defaults
(Stockfish, the default judges and the bundled human-move model) and one worker, over the first
`--games` games of each of two shared files (lichess_100, player_b) at `--plies`; runs alternate
baseline, new, baseline, new, ... so that a shared machine's load falls on both alike. Reported
per run: positions per second of the worker's own time (the manifest's `analysis_seconds`: the
judged analysis, what a worker of a large cluster spends) and of the job's wall time (start-up
included), and their ratios new / baseline; and the engine nodes the job spent per position (the
`nodes` of the rows whose analysis was searched, not served from a table or a cache, over all
positions): a count that the machine's load does not move, so that one round already says what
the engine work per position became.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.checkouts import cli_of

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
FILES = ("lichess_100.pgn", "lichess_player_b_1089.pgn")
ROOT = Path(__file__).resolve().parent.parent


def first_games(count: int, into: Path) -> list[Path]:
    """The first `count` games of each file, as files of their own (the jobs read exactly these)."""
    made = []
    for name in FILES:
        text = (DATA / name).read_text(encoding="utf-8")
        starts = [i for i in range(len(text)) if text.startswith("[Event ", i) and (i == 0 or text[i - 1] == "\n")]
        end = starts[count] if count < len(starts) else len(text)
        path = into / name
        path.write_text(text[:end], encoding="utf-8")
        made.append(path)
    return made


def mine(checkout: Path, inputs: list[Path], out: Path, plies: str) -> dict[str, Any]:
    cli, env = cli_of(checkout)
    command = [*cli, "mine", *map(str, inputs), "--out", str(out), "--workers", "1", "--plies", plies]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: mine failed ({done.returncode}): {done.stderr[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    responses = pa.concat_tables(
        pq.read_table(path, columns=["nodes", "reused"]) for path in sorted(out.glob("shards/*/responses.parquet"))
    )
    searched = responses.filter(pc.invert(responses.column("reused")))
    return {
        "nodes_per_position": pc.sum(searched.column("nodes")).as_py() / manifest["positions"],
        "positions": manifest["positions"],
        "reused": manifest["positions_reused"],
        "worker_rate": manifest["positions"] / manifest["analysis_seconds"],
        "wall_rate": manifest["positions"] / manifest["wall_seconds"],
        "engine": manifest["engine"].get("limits"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--games", type=int, default=6)
    parser.add_argument("--plies", default="10-40")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {"games_per_file": args.games, "plies": args.plies, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = first_games(args.games, work)
        for index in range(args.rounds):
            for name, checkout in (("baseline", args.baseline), ("new", ROOT)):
                run = mine(checkout, inputs, work / f"{name}{index}", args.plies) | {"code": name, "round": index}
                report["runs"].append(run)
                print(json.dumps(run), flush=True)
    for measure in ("worker_rate", "wall_rate", "nodes_per_position"):
        pairs = zip(report["runs"][::2], report["runs"][1::2], strict=True)
        ratios = [
            base[measure] / new[measure] if measure == "nodes_per_position" else new[measure] / base[measure]
            for base, new in pairs
        ]
        report[f"{measure}_ratios"] = ratios
        report[f"{measure}_ratio_median"] = statistics.median(ratios)
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
