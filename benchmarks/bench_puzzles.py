"""A peer's data: how DiffiMax's judges classify the blunders Lichess's puzzle generator found.

  python -m benchmarks.bench_puzzles [--engine stockfish|native] [--depth D] [--limit N]
                                     [--human-model default|none|FILE] [--human-corpus DATA]

For each Lichess puzzle, FEN is the position before the opponent's move and Moves[0] is that move:
a real mistake a human made. Every judge (`judge_position`, the one judging code of `mine`,
`explain` and `evaluate`) judges the replies at FEN (the side to move responds, the other side is
the setter), and we count how often Moves[0] was its trap candidate, and its dip.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import Counter
from pathlib import Path

import chess

from pipeline.engines.backends import EngineOptions, open_backend
from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.judging import judge_position, load_model
from search.judges import JUDGES, JudgeSettings
from search.settings import NATIVE_DEFAULT_DEPTH, UCI_DEFAULT_DEPTH, DiffiMaxSettings

PUZZLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "puzzles"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", default=str(PUZZLES / "lichess_puzzles_sample_1000.csv"))
    parser.add_argument("--engine", default="stockfish")
    parser.add_argument("--depth", type=int, default=None)
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--human-model", default="default")
    parser.add_argument("--human-corpus", default=None)
    args = parser.parse_args()
    depth = args.depth or (NATIVE_DEFAULT_DEPTH if args.engine == "native" else UCI_DEFAULT_DEPTH)
    settings = DiffiMaxSettings(depth=depth)
    judges = JudgeSettings(judges=frozenset(JUDGES))
    model = load_model(None if args.human_model == "none" else args.human_model)
    corpus = Corpus.load(args.human_corpus) if args.human_corpus else None
    backend = open_backend(args.engine, EngineOptions(nodes=args.nodes))
    tallies: dict[str, Counter[str]] = {judge: Counter() for judge in sorted(judges.judges)}
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
                judgement = judge_position(
                    backend, board, not board.turn, settings, judges, model=model,
                    context=MoverContext(rating=int(row["Rating"])), corpus=corpus, also=(blunder,),
                )  # fmt: skip
                count += 1
                for judge in judges.judges:
                    found = judgement.candidates(judge)
                    kind = "no evidence" if found is None else "candidate" if blunder in found else "not a candidate"
                    tallies[judge][kind] += 1
                evidence = judgement.evidence
                reply = next(r for r in evidence.replies if r.move == blunder)
                dip = evidence.dip(reply)
                if dip is not None:
                    dips.append(dip / 100)
    finally:
        backend.close()
    elapsed = time.perf_counter() - start
    print(f"{count} puzzles from {Path(args.file).name}, engine {args.engine}, depth {depth}, "
          f"R {settings.reasonable_dip}, T {settings.trap_dip}; {elapsed:.0f} s")  # fmt: skip
    for judge, tally in tallies.items():
        shares = ", ".join(f"{kind} {n} ({n / max(count, 1):.0%})" for kind, n in tally.most_common())
        print(f"  {judge:<9} {shares}")
    dips.sort()
    if dips:
        print(f"  blunder dip: median {dips[len(dips) // 2]:.2f} pawns, "
              f"{sum(d > settings.reasonable_dip for d in dips) / len(dips):.0%} beyond R")  # fmt: skip


if __name__ == "__main__":
    main()
