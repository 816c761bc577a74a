"""A peer's data: how DiffiMax's judges classify the blunders Lichess's puzzle generator found.

  python -m benchmarks.bench_puzzles [--engine native|stockfish] [--depth D] [--limit N] [--human-freq DIR]

For each Lichess puzzle, FEN is the position before the opponent's move and Moves[0] is that move:
a real mistake a human made. We run the response analysis at FEN (the side to move responds, the
other side is the setter) and ask each plausibility judge whether Moves[0] was a trap candidate,
an implausible (unreasonable) reply, or neither.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import Counter
from pathlib import Path

import chess

from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.judges import judge_root
from search.settings import NATIVE_DEFAULT_DEPTH, UCI_DEFAULT_DEPTH, DiffiMaxSettings

PUZZLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "puzzles"


def classify(verdict: object) -> str:
    if verdict is None or getattr(verdict, "plausible", None) is None:
        return "no evidence"
    if getattr(verdict, "trap", False):
        return "trap candidate"
    if not verdict.plausible:
        return "implausible"
    return "neither"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", default=str(PUZZLES / "lichess_puzzles_sample_1000.csv"))
    parser.add_argument("--engine", default="native")
    parser.add_argument("--depth", type=int, default=None)
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--shallow-depth", type=int, default=1)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--human-freq", default=None)
    args = parser.parse_args()
    depth = args.depth or (NATIVE_DEFAULT_DEPTH if args.engine == "native" else UCI_DEFAULT_DEPTH)
    settings = DiffiMaxSettings(depth=depth)
    options = EngineOptions(nodes=args.nodes)
    backend = open_backend(args.engine, options)
    tallies: dict[str, Counter[str]] = {}
    dips: list[float] = []
    count = 0
    start = time.perf_counter()
    try:
        with open(args.file, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if count >= args.limit:
                    break
                board = chess.Board(row["FEN"])
                blunder = row["Moves"].split()[0]
                setter = not board.turn
                result = backend.analyse(board, setter, settings)
                if result.root_analysis is None:
                    continue
                count += 1
                verdicts = judge_root(
                    board, setter, settings, result.root_analysis, engine=args.engine, options=options,
                    shallow_depth=args.shallow_depth, human_freq=args.human_freq, rating=int(row["Rating"]),
                )  # fmt: skip
                for judge, by_move in verdicts.items():
                    tallies.setdefault(judge, Counter())[classify(by_move.get(blunder))] += 1
                entry = next(r for r in result.root_analysis.responses if r.move == blunder)
                dips.append(entry.dip / 100)
    finally:
        backend.close()
    elapsed = time.perf_counter() - start
    print(f"{count} puzzles from {Path(args.file).name}, engine {args.engine}, depth {depth}, "
          f"R {settings.reasonable_dip}, T {settings.trap_dip}; {elapsed:.0f} s")  # fmt: skip
    for judge, tally in tallies.items():
        shares = ", ".join(f"{kind} {n} ({n / count:.0%})" for kind, n in tally.most_common())
        print(f"  {judge:<8} {shares}")
    dips.sort()
    if dips:
        print(f"  blunder dip: median {dips[len(dips) // 2]:.2f} pawns, "
              f"{sum(d > settings.reasonable_dip for d in dips) / len(dips):.0%} beyond R")  # fmt: skip


if __name__ == "__main__":
    main()
