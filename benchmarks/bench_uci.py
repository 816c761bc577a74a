"""UCI backend benchmark: adaptive response analysis against naive MultiPV-all, in one run.

  python -m benchmarks.bench_uci [--engine stockfish] [--positions 50] [--nodes 20000] [--json OUT]

1. Root response analysis (depth 1, default DiffiMax settings) on the same game positions, once
   adaptive (best line, then the best of the rest, until a line lies beyond v1 + R) and once
   naive (one MultiPV search over every legal move), both at `--nodes` per line: engine nodes,
   wall time and engine calls per position, and the ratio. Beside it the floor of any analysis
   that must know every reply within R exactly: lines = (replies within R) + 1 proof line.
2. How the two agree: differences of the values, and how many alternatives fall in a different
   class (below T / trap / beyond R) at each tolerance around the thresholds; beside it the
   engine's own noise, naive MultiPV-all against itself at 2x the nodes per line.
3. A batch of adaptive analyses at the default UCI depth (2) and at depth 3: the fraction of
   wall time spent inside engine calls.
4. What clearing the hash per node query gives up: consecutive positions of a few games, one
   line each at the same node limit, with `ucinewgame` before each against a hash kept warm
   through the game: the depth the engine reaches.
5. With `--quality 50000,100000,200000`: how the reply classes at each node limit agree with a
   deeper reference (`--quality-reference`, 600k), on every other position of the first 40 —
   the measurement behind the mining default.

The machine may be shared: compare ratios within one run, not seconds across runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn

from pipeline.engines.options import EngineOptions
from pipeline.engines.process import resolve_engine
from pipeline.engines.uci import UciBackend
from pipeline.harness.agreement import disagreements, response_class, sample_positions
from search.analysis import ResponseAnalysis
from search.settings import UCI_DEFAULT_DEPTH, DiffiMaxSettings

GAMES = Path(__file__).resolve().parents[2] / "shared" / "data" / "games" / "lichess_100.pgn"
# Tolerances (cp around T and R, on top of the v1 difference) at which agreement is reported.
TOLERANCES = (0, 10, 20, 30, 40, 50)
# The noise baseline: naive MultiPV-all again with this many times the nodes per line (about one
# ply deeper): how far two equally valid searches disagree.
BASELINE_FACTOR = 2.0


def root_analyses(
    backends: list[UciBackend], boards: list[chess.Board], settings: DiffiMaxSettings
) -> list[tuple[list[ResponseAnalysis], list[dict[str, float]]]]:
    """Each backend's root analysis of every board, interleaved position by position so that a
    shared machine's changing load falls on all of them alike."""
    runs: list[tuple[list[ResponseAnalysis], list[dict[str, float]]]] = [([], []) for _ in backends]
    for board in boards:
        for backend, (analyses, costs) in zip(backends, runs, strict=True):
            start = time.perf_counter()
            result = backend.analyse(board, not board.turn, settings)
            wall = time.perf_counter() - start
            assert result.root_analysis is not None
            analyses.append(result.root_analysis)
            extra = result.extra
            costs.append(
                {
                    "nodes": extra["engine_nodes"],
                    "wall": wall,
                    "engine": extra["engine_seconds"],
                    "calls": extra["engine_calls"],
                    "lines": extra["engine_lines"],
                    "legal": len(result.root_analysis.responses),
                }
            )
    return runs


def batch(backend: UciBackend, boards: list[chess.Board], settings: DiffiMaxSettings) -> dict[str, float]:
    """Wall time of a batch of analyses and the part of it spent inside engine calls."""
    engine = nodes = analysed = 0.0
    start = time.perf_counter()
    for board in boards:
        result = backend.analyse(board, not board.turn, settings)
        engine += result.extra["engine_seconds"]
        nodes += result.extra["engine_nodes"]
        analysed += len(result.analyses)
    wall = time.perf_counter() - start
    return {
        "depth": settings.depth,
        "positions": len(boards),
        "analysed_nodes": analysed,
        "engine_nodes": nodes,
        "wall": wall,
        "engine_seconds": engine,
        "engine_fraction": engine / wall,
    }


def hash_warmth(path: str, nodes: int, games: int = 5, plies: range = range(10, 30)) -> dict[str, float]:
    """Mean depth of one line per position, hash cleared before each position or kept warm."""
    boards: list[chess.Board] = []
    with open(GAMES, encoding="utf-8") as handle:
        while len(boards) < games * len(plies):
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            moves = list(game.mainline_moves())
            if len(moves) <= plies.stop:
                continue
            board = game.board()
            for ply, move in enumerate(moves[: plies.stop]):
                if ply in plies:
                    boards.append(board.copy())
                board.push(move)
    depths: dict[str, list[int]] = {"cleared": [], "warm": []}
    with chess.engine.SimpleEngine.popen_uci(path) as engine:
        for mode, depth_list in depths.items():
            game_token = object()
            for index, board in enumerate(boards):
                if mode == "cleared" or index % len(plies) == 0:
                    game_token = object()  # a new token makes python-chess send ucinewgame
                info = engine.analyse(board, chess.engine.Limit(nodes=nodes), game=game_token)
                depth_list.append(info.get("depth", 0))
    return {mode: statistics.fmean(values) for mode, values in depths.items()} | {"positions": len(boards)}


def quality(path: str, levels: list[int], reference: int, boards: list[chess.Board]) -> dict[int, dict[str, float]]:
    """Share of replies in the same class (best / below T / trap / beyond R) as at `reference`
    nodes per line, and the mean Jaccard index of the trap candidate sets, per node limit."""
    settings = DiffiMaxSettings(depth=1)

    def classes(nodes: int) -> tuple[list[dict[str, str]], int]:
        found, total = [], 0
        with UciBackend(path, limits=EngineOptions(nodes=nodes)) as backend:
            for board in boards:
                result = backend.analyse(board, not board.turn, settings)
                assert result.root_analysis is not None
                found.append({r.move: "best" if r.best else response_class(r) for r in result.root_analysis.responses})
                total += result.stats.nodes
        return found, total

    deep, _ = classes(reference)
    table = {}
    for nodes in levels:
        found, total = classes(nodes)
        same = sum(row[m] == ref[m] for row, ref in zip(found, deep, strict=True) for m in ref)
        jaccard = []
        for row, ref in zip(found, deep, strict=True):
            mine, theirs = ({m for m, c in r.items() if c == "trap"} for r in (row, ref))
            jaccard.append(len(mine & theirs) / len(mine | theirs) if mine | theirs else 1.0)
        table[nodes] = {
            "same_class": same / sum(len(ref) for ref in deep),
            "jaccard": statistics.fmean(jaccard),
            "engine_nodes": total,
        }
    return table


def percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0


def agreement(
    reference: list[ResponseAnalysis], other: list[ResponseAnalysis], settings: DiffiMaxSettings
) -> dict[str, Any]:
    """How `other` classifies the alternatives of `reference`, at each tolerance (see `compare`),
    and how far their values for the same replies lie apart."""
    differences = []
    for n, a in zip(reference, other, strict=True):
        by_move = {r.move: r for r in a.responses}
        differences += [
            abs(r.value - by_move[r.move].value) for r in n.responses if r.reasonable and by_move[r.move].exact
        ]
    table = {}
    for tolerance in TOLERANCES:
        rows = [disagreements(n, a, settings, tolerance) for n, a in zip(reference, other, strict=True)]
        table[tolerance] = {
            "compared": sum(row["compared"] for row in rows),
            "exempt": sum(row["exempt"] for row in rows),
            "mismatched": sum(len(row["mismatches"]) for row in rows),
            "best_swapped": sum(row["best_swapped"] for row in rows),
        }
    shifts = [abs(n.best_value - a.best_value) for n, a in zip(reference, other, strict=True)]
    return {
        "value_difference": {f"p{round(q * 100)}": percentile(differences, q) for q in (0.5, 0.9, 0.99)}
        | {"max": max(differences, default=0)},
        "v1_difference": {"p50": percentile(shifts, 0.5), "p90": percentile(shifts, 0.9), "max": max(shifts)},
        "by_tolerance": table,
    }


def main(args: argparse.Namespace) -> dict[str, Any]:
    path = resolve_engine(args.engine)
    boards = sample_positions(args.positions)
    settings = DiffiMaxSettings(depth=1, reasonable_dip=args.reasonable_dip, trap_dip=args.trap_dip)
    limits = EngineOptions(nodes=args.nodes)
    baseline_limits = EngineOptions(nodes=round(args.nodes * BASELINE_FACTOR))
    with (
        UciBackend(path, limits=limits) as adaptive_backend,
        UciBackend(path, limits=limits, strategy="naive") as naive_backend,
        UciBackend(path, limits=baseline_limits, strategy="naive") as baseline_backend,
    ):
        engine = adaptive_backend.describe()
        backends = [adaptive_backend, naive_backend] + ([baseline_backend] if args.baseline else [])
        runs = root_analyses(backends, boards, settings)
        (adaptive, adaptive_cost), (naive, naive_cost) = runs[:2]
        baseline = runs[2][0] if args.baseline else None
        batches = [
            batch(adaptive_backend, boards[: args.batch], dataclasses.replace(settings, depth=depth))
            for depth in (UCI_DEFAULT_DEPTH, 3)
            if args.batch > 0
        ]

    def total(costs: list[dict[str, float]], key: str) -> float:
        return sum(cost[key] for cost in costs)

    report = {
        "engine": engine,
        "positions": len(boards),
        "nodes_per_line": args.nodes,
        "settings": settings.describe(),
        "adaptive": {key: total(adaptive_cost, key) for key in ("nodes", "wall", "engine", "calls", "lines")},
        "naive": {key: total(naive_cost, key) for key in ("nodes", "wall", "engine", "calls", "lines")},
        "legal_moves": total(naive_cost, "legal"),
        "floor_lines": sum(min(len(a.responses), sum(r.reasonable for r in a.responses) + 1) for a in naive),
        "adaptive_vs_naive": agreement(naive, adaptive, settings),
        "naive_vs_naive": agreement(naive, baseline, settings) if baseline else None,
        "batches": batches,
        "hash_warmth": hash_warmth(path, args.nodes),
    }
    if args.quality:
        levels = [int(text) for text in args.quality.split(",")]
        report["quality"] = quality(path, levels, args.quality_reference, sample_positions(40)[::2])
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def print_report(report: dict[str, Any]) -> None:
    adaptive, naive, count = report["adaptive"], report["naive"], report["positions"]
    print(
        f"{report['engine']['engine']} at {report['nodes_per_line']:,} nodes per line, {count} positions,"
        f" R {report['settings']['reasonable_dip']}, T {report['settings']['trap_dip']}"
    )
    print(f"{'':24}{'adaptive':>14}{'naive':>14}{'ratio':>8}")
    for key, label in (
        ("nodes", "engine nodes / position"),
        ("wall", "wall s / position"),
        ("lines", "lines / position"),
        ("calls", "calls / position"),
    ):
        ratio = naive[key] / adaptive[key] if adaptive[key] else float("nan")
        print(f"{label:24}{adaptive[key] / count:>14,.2f}{naive[key] / count:>14,.2f}{ratio:>7.2f}x")
    floor = report["floor_lines"]
    legal = report["legal_moves"]
    print(
        f"floor: {floor / count:.2f} lines / position (replies within R + 1) of {legal / count:.2f} legal;"
        f" naive / floor = {legal / floor:.2f}x"
    )
    for key, title in (("adaptive_vs_naive", "adaptive"), ("naive_vs_naive", f"naive at {BASELINE_FACTOR}x nodes")):
        row = report[key]
        if row is None:
            continue
        print(f"{title} against naive: |value difference| {row['value_difference']},")
        print(f"  |v1 difference| {row['v1_difference']}")
        print("  tolerance  compared  exempt  mismatched  best swapped")
        for tolerance, counts in row["by_tolerance"].items():
            numbers = (
                f"{counts['compared']:>9} {counts['exempt']:>7} {counts['mismatched']:>11} {counts['best_swapped']:>13}"
            )
            print(f"  {tolerance:>6} cp {numbers}")
    for row in report["batches"]:
        analysed = row["analysed_nodes"] / row["positions"]
        print(
            f"batch depth {row['depth']}: {row['positions']} positions, {analysed:.1f} analysed nodes each,"
            f" {row['wall']:.1f} s wall, {row['engine_fraction']:.1%} inside the engine"
        )
    print_warmth(report["hash_warmth"])
    for nodes, row in report.get("quality", {}).items():
        print(
            f"{nodes:>9,} nodes per line: {row['same_class']:.1%} of replies in the class of the reference,"
            f" candidate sets' mean Jaccard {row['jaccard']:.2f}, {row['engine_nodes']:,} engine nodes"
        )


def print_warmth(row: dict[str, float]) -> None:
    print(
        f"hash over {row['positions']:.0f} consecutive game positions, one line each: mean depth"
        f" {row['cleared']:.2f} cleared per position, {row['warm']:.2f} kept warm"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="stockfish")
    parser.add_argument("--positions", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=20_000, help="engine nodes per line")
    parser.add_argument("--batch", type=int, default=20, help="positions in the engine-time batches")
    parser.add_argument("--reasonable-dip", type=float, default=2.0, help="R, pawns")
    parser.add_argument("--trap-dip", type=float, default=1.0, help="T, pawns")
    parser.add_argument("--quality", help="comma-separated node limits to compare with the reference")
    parser.add_argument("--quality-reference", type=int, default=600_000, help="nodes per line of the reference")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false", help="skip the 2x naive run")
    parser.add_argument("--json", help="also write the figures to this file")
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args())
