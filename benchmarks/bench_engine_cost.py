"""Engine cost per position: the judged analysis at today's defaults against the one before the
probe, on the same positions, in one run, and both against one deeper reference.

  python -m benchmarks.bench_engine_cost [--positions 100] [--reference 600000] [--json OUT]

Every method judges each position with the player who just moved as setter (the default judges:
human, model, practical, with the bundled human-move model) on a Stockfish of its own (Threads 1),
interleaved position by position so that a shared machine's load falls on all alike:

- *before*: the judged analysis as it was before the probe: every plausible reply searched at
  100,000 nodes per line, a reply near the practical threshold searched again at 4x;
- *probe* (the default): a probe of the node and of every plausible reply at a quarter of the
  nodes; the full search (100,000) only for the replies whose class the probe puts near a
  threshold, and then of the node too; deeper (2x) where that still sits near the threshold;
- *reference*: *before* at `--reference` nodes per line (deeper at 4x): what both are measured
  against. The share of positions whose practical candidate set is the reference's, and the mean
  Jaccard index of the two sets.

The move played is valued in every method (an isolated position has no next position to take it
from, as a mining job does: docs/mining.md). Positions: every ~7th ply from 10 to 60 of the first
games of two shared files (lichess_100, player_b), half from each; the margins of the probe were
chosen on positions of two other files (player_a, chesscom_mixed).
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

from pipeline.engines.options import EngineOptions
from pipeline.engines.process import resolve_engine
from pipeline.engines.uci import DEFAULT_NODES, UciBackend
from pipeline.human.models import load_move_model
from pipeline.judging import Judge, JudgingKit
from pipeline.mine.plan import cpu_seconds
from search.judges import JudgeSettings
from search.settings import UCI_DEFAULT_DEPTH, DiffiMaxSettings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
FILES = ("lichess_100.pgn", "lichess_player_b_1089.pgn")
JUDGES = JudgeSettings()
# The judged analysis before the probe: no probe, deeper at 4x the nodes.
BEFORE = {"deeper_factor": 4, "probe_divisor": 0}


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


def backend(limits: EngineOptions) -> UciBackend:
    return UciBackend(resolve_engine("stockfish"), limits=limits)


def main(args: argparse.Namespace) -> dict[str, Any]:
    boards = positions(args.positions)
    settings = DiffiMaxSettings(depth=UCI_DEFAULT_DEPTH)
    model = load_move_model("default")
    assert model is not None
    methods = {
        "before": backend(EngineOptions(nodes=DEFAULT_NODES, **BEFORE)),
        "probe": backend(EngineOptions()),
        **{f"probe/{divisor}": backend(EngineOptions(probe_divisor=divisor)) for divisor in args.also_divisor},
    }
    reference = backend(EngineOptions(nodes=args.reference, **BEFORE))
    runs: dict[str, dict[str, list[Any]]] = {
        name: {"seconds": [], "cpu": [], "nodes": [], "candidates": [], "calls": []} for name in methods
    }
    references: list[frozenset[str]] = []
    try:
        for index, (board, played) in enumerate(boards):
            setter = not board.turn
            for name, engine in methods.items():
                started, cpu = time.perf_counter(), cpu_seconds()
                found = Judge(JudgingKit(engine, model, None), settings, JUDGES).position(board, setter, also=[played])
                runs[name]["cpu"].append(cpu_seconds() - cpu)
                runs[name]["seconds"].append(time.perf_counter() - started)
                runs[name]["nodes"].append(sum(found.nodes.values()))
                runs[name]["candidates"].append(found.candidates("practical") or frozenset())
            deep = Judge(JudgingKit(reference, model, None), settings, JUDGES).position(board, setter)
            references.append(deep.candidates("practical") or frozenset())
            print(f"{index + 1}/{len(boards)} positions", flush=True)
            if args.json:
                args.json.write_text(json.dumps(summarise(runs, references, args), indent=2))
    finally:
        for engine in (*methods.values(), reference):
            engine.close()
        model.close()
    return summarise(runs, references, args)


def summarise(
    runs: dict[str, dict[str, list[Any]]], references: list[frozenset[str]], args: argparse.Namespace
) -> dict[str, Any]:
    """The figures over the positions done so far (written after each, so a cut run keeps them)."""
    done = len(references)
    report: dict[str, Any] = {"positions": done, "reference_nodes": args.reference}
    for name, run in runs.items():
        pairs = list(zip(run["candidates"][:done], references, strict=True))
        report[name] = {
            "positions_per_second": done / sum(run["seconds"][:done]),
            "positions_per_cpu_second": done / sum(run["cpu"][:done]),
            "nodes_per_position": statistics.mean(run["nodes"][:done]),
            "mean_candidates": statistics.mean(len(c) for c in run["candidates"][:done]),
            "same_candidates": sum(a == b for a, b in pairs) / done,
            "mean_jaccard": statistics.mean(jaccard(a, b) for a, b in pairs),
        }
    before, probe = report["before"], report["probe"]
    report["speed_ratio"] = probe["positions_per_second"] / before["positions_per_second"]
    report["cpu_ratio"] = probe["positions_per_cpu_second"] / before["positions_per_cpu_second"]
    report["nodes_ratio"] = before["nodes_per_position"] / probe["nodes_per_position"]
    return report


def print_report(report: dict[str, Any]) -> None:
    print(
        f"\n{report['positions']} positions; reference: the judging before the probe at "
        f"{report['reference_nodes']:,} nodes per line"
    )
    for name in [name for name in report if name == "before" or name.startswith("probe")]:
        row = report[name]
        print(
            f"  {name:>8}: {row['positions_per_second']:.2f} positions/s ({row['positions_per_cpu_second']:.2f} per "
            f"CPU-second), {row['nodes_per_position']:,.0f} nodes per position, {row['mean_candidates']:.2f} "
            f"candidates, same as the reference {row['same_candidates']:.1%}, mean Jaccard "
            f"{row['mean_jaccard']:.3f}"
        )
    print(
        f"  probe / before: {report['speed_ratio']:.2f}x the positions per second, {report['cpu_ratio']:.2f}x per "
        f"CPU-second, {report['nodes_ratio']:.2f}x fewer nodes"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=100)
    parser.add_argument("--reference", type=int, default=600_000)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--also-divisor",
        type=int,
        action="append",
        default=[],
        help="also a probe at nodes / N (another probe divisor), beside the default's",
    )
    arguments = parser.parse_args()
    result = main(arguments)
    print_report(result)
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2))
