"""Engine cost per position: the judged analysis (the mining default) against the seed's full
response analysis (the default before it), in one run, on the same positions.

  python -m benchmarks.bench_engine_cost [--positions 100] [--nodes 100000] [--reference 600000] [--json OUT]

Both analyse each position with the player who just moved as setter, on one Stockfish (Threads 1)
at `--nodes` per line, interleaved position by position so that a shared machine's load falls on
both alike:

- *seed*: the adaptive response analysis of every reply within R (`--judges dip`);
- *judged*: the default judges (human, model, practical) with the bundled human-move model: a
  shallow pass, then deep lines only for the replies a judge finds plausible, deeper ones near a
  threshold.

Reported: positions per second and engine nodes per position for each, and their ratio; and how
well each agrees with itself at `--reference` nodes per line (the same method, deeper): the share of
positions whose candidate set is the same, and the mean Jaccard index of the two sets. Positions:
every ~7th ply from 10 to 60 of games of two shared files (lichess_100, player_b), first N.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import chess
import chess.pgn

from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.judging import judge_position, load_model
from search.judges import JudgeSettings
from search.settings import UCI_DEFAULT_DEPTH, DiffiMaxSettings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
FILES = ("lichess_100.pgn", "lichess_player_b_1089.pgn")
SEED = JudgeSettings(judges=frozenset({"dip"}))
JUDGED = JudgeSettings()


def positions(count: int) -> list[tuple[chess.Board, str]]:
    """Half from each file: (board with its move stack, the move played)."""
    found: list[tuple[chess.Board, str]] = []
    for name in FILES:
        mine: list[tuple[chess.Board, str]] = []
        with (DATA / name).open(encoding="utf-8") as handle:
            while len(mine) < count // len(FILES):
                game = chess.pgn.read_game(handle)
                if game is None:
                    break
                board = game.board()
                for ply, move in enumerate(game.mainline_moves()):
                    if 10 <= ply <= 60 and ply % 7 == 3 and board.legal_moves.count() >= 2:
                        mine.append((board.copy(), move.uci()))
                    board.push(move)
        found += mine[: count // len(FILES)]
    return found


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def main(args: argparse.Namespace) -> dict[str, Any]:
    boards = positions(args.positions)
    settings = DiffiMaxSettings(depth=UCI_DEFAULT_DEPTH)
    model = load_model("default")
    backends = {
        "cheap": open_backend("stockfish", EngineOptions(nodes=args.nodes)),
        "reference": open_backend("stockfish", EngineOptions(nodes=args.reference)),
    }
    runs: dict[str, dict[str, list[Any]]] = {
        method: {"seconds": [], "nodes": [], "candidates": [], "reference": []} for method in ("seed", "judged")
    }
    try:
        for index, (board, played) in enumerate(boards):
            for method, judges, primary in (("seed", SEED, "dip"), ("judged", JUDGED, "practical")):
                setter = not board.turn
                started = time.perf_counter()
                found = judge_position(backends["cheap"], board, setter, settings, judges, model=model,
                                       also=[played])  # fmt: skip
                runs[method]["seconds"].append(time.perf_counter() - started)
                runs[method]["nodes"].append(sum(found.nodes.values()))
                runs[method]["candidates"].append(found.candidates(primary) or frozenset())  # type: ignore[arg-type]
                if args.reference:
                    deep = judge_position(backends["reference"], board, setter, settings, judges, model=model)
                    runs[method]["reference"].append(deep.candidates(primary) or frozenset())  # type: ignore[arg-type]
            print(f"{index + 1}/{len(boards)} positions", flush=True)
            if args.json:
                args.json.write_text(json.dumps(summarise(runs, args), indent=2))
    finally:
        for backend in backends.values():
            backend.close()
        if model is not None and hasattr(model, "close"):
            model.close()
    return summarise(runs, args)


def summarise(runs: dict[str, dict[str, list[Any]]], args: argparse.Namespace) -> dict[str, Any]:
    """The figures over the positions done so far (written after each, so a cut run keeps them)."""
    done = len(runs["judged"]["seconds"])
    report: dict[str, Any] = {"positions": done, "nodes_per_line": args.nodes, "reference": args.reference}
    for method, run in runs.items():
        seconds = sum(run["seconds"])
        row: dict[str, Any] = {
            "positions_per_second": done / seconds,
            "nodes_per_position": statistics.mean(run["nodes"]),
            "mean_candidates": statistics.mean(len(c) for c in run["candidates"]),
        }
        if run["reference"]:
            pairs = list(zip(run["candidates"], run["reference"], strict=True))
            row["same_candidates"] = sum(a == b for a, b in pairs) / len(pairs)
            row["mean_jaccard"] = statistics.mean(jaccard(a, b) for a, b in pairs)
        report[method] = row
    report["speed_ratio"] = report["judged"]["positions_per_second"] / report["seed"]["positions_per_second"]
    report["nodes_ratio"] = report["seed"]["nodes_per_position"] / report["judged"]["nodes_per_position"]
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"\n{report['positions']} positions, {report['nodes_per_line']:,} nodes per line; reference "
          f"{report['reference']:,}")  # fmt: skip
    for method in ("seed", "judged"):
        row = report[method]
        agreement = (f", same candidates as the reference {row['same_candidates']:.0%}, mean Jaccard "
                     f"{row['mean_jaccard']:.2f}") if "same_candidates" in row else ""  # fmt: skip
        print(f"  {method:>6}: {row['positions_per_second']:.2f} positions/s, {row['nodes_per_position']:,.0f} nodes "
              f"per position, {row['mean_candidates']:.1f} candidates{agreement}")  # fmt: skip
    print(f"  judged / seed: {report['speed_ratio']:.2f}x the positions per second, "
          f"{report['nodes_ratio']:.2f}x fewer nodes")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--reference", type=int, default=600_000, help="0: no agreement measurement")
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    result = main(arguments)
    print_report(result)
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2))
