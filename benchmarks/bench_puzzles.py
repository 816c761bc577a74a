"""Lichess's own puzzles as a yardstick: the theme tagger, the difficulty rating, and how
DiffiMax's judges classify the blunders Lichess's puzzle generator found.

  python -m benchmarks.bench_puzzles themes                 # tagger precision / recall per theme
  python -m benchmarks.bench_puzzles rating [--model FILE]  # rating vs Lichess's: Spearman, error by decile
  python -m benchmarks.bench_puzzles judges [--engine stockfish|native] [--depth D] [--limit N]
                                     [--human-model default|none|FILE] [--human-corpus DATA]

`themes` and `rating` tune on `lichess_puzzles_sample_1000.csv` and report on the held-out
`lichess_puzzles_sample_1499.csv` (docs/puzzles.md); the rating's calibration is refitted on the
tune file and printed, to paste into `pipeline/outputs/puzzles/rating.py`.

`judges`:
For each Lichess puzzle, FEN is the position before the opponent's move and Moves[0] is that move:
a real mistake a human made. Every judge (`Judge.position`, the one judging code of `mine`,
`explain` and `evaluate`) judges the replies at FEN (the side to move responds, the other side is
the setter), and we count how often Moves[0] was its trap candidate, and its dip.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sys
import time
from collections import Counter
from pathlib import Path

import chess

from pipeline.engines.backends import open_backend
from pipeline.engines.options import EngineOptions
from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.human.models import load_move_model, resolve_model
from pipeline.judging import Judge, JudgingKit
from search.judges import JUDGES, JudgeSettings
from search.settings import NATIVE_DEFAULT_DEPTH, UCI_DEFAULT_DEPTH, DiffiMaxSettings

PUZZLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "puzzles"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "judges"
    if mode == "themes":
        return themes_main(sys.argv[2:])
    if mode == "rating":
        return rating_main(sys.argv[2:])
    judges_main(sys.argv[2:] if mode == "judges" and len(sys.argv) > 1 and sys.argv[1] == "judges" else sys.argv[1:])


TUNE = PUZZLES / "lichess_puzzles_sample_1000.csv"
HELD_OUT = PUZZLES / "lichess_puzzles_sample_1499.csv"
LENGTHS = frozenset({"oneMove", "short", "long", "veryLong"})


def labelled_rows(path: Path) -> tuple[list[dict[str, str]], int]:
    """The rows whose Themes Lichess's tagger wrote (it always writes a length theme), and how
    many were left out for having none (74 of the 1,499 rows hold a phase alone)."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    kept = [row for row in rows if LENGTHS & set(row["Themes"].split())]
    return kept, len(rows) - len(kept)


def themes_main(argv: list[str]) -> None:
    """Precision and recall of `cook` per theme against Lichess's Themes, on both files."""
    from pipeline.outputs.puzzles.line import PuzzleLine
    from pipeline.outputs.puzzles.themes import THEMES, cook

    parser = argparse.ArgumentParser(prog="bench_puzzles themes")
    parser.add_argument("--file", action="append", default=None)
    args = parser.parse_args(argv)
    for path in [Path(f) for f in args.file] if args.file else [TUNE, HELD_OUT]:
        rows, dropped = labelled_rows(path)
        hits: Counter[str] = Counter()
        extra: Counter[str] = Counter()
        missed: Counter[str] = Counter()
        start = time.perf_counter()
        for row in rows:
            got = set(cook(PuzzleLine(row["FEN"], tuple(row["Moves"].split()))))
            want = set(row["Themes"].split()) & set(THEMES)
            hits.update(got & want)
            extra.update(got - want)
            missed.update(want - got)
        elapsed = time.perf_counter() - start
        print(f"{path.name}: {len(rows)} rows ({dropped} without Lichess's tags left out), {elapsed:.1f} s")
        print(f"  {'theme':<18} {'n':>5} {'precision':>9} {'recall':>7}")
        for theme in THEMES:
            n, found = hits[theme] + missed[theme], hits[theme] + extra[theme]
            if n or found:
                precision = f"{hits[theme] / found:.2f}" if found else "-"
                recall = f"{hits[theme] / n:.2f}" if n else "-"
                print(f"  {theme:<18} {n:>5} {precision:>9} {recall:>7}")


def rating_main(argv: list[str]) -> None:
    """The rating against Lichess's: knots fitted on the tune file, Spearman and error by decile
    on the held-out file. Surprisals are cached per (model, puzzle) in --cache."""
    import json

    import numpy as np
    from scipy.stats import spearmanr

    from pipeline.outputs.puzzles import rating

    parser = argparse.ArgumentParser(prog="bench_puzzles rating")
    parser.add_argument("--model", default="default")
    parser.add_argument("--cache", default="/tmp/diffimax-rating-cache.json")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    model = load_move_model(args.model)
    assert model is not None
    cache_path = Path(args.cache)
    cache: dict[str, float] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    # Cached surprisals are keyed by the model's identity (its files' digests), not its name:
    # "default" is another model once Maia-3 is installed or the bundled file is replaced.
    choice = resolve_model(args.model)
    assert choice is not None
    model_key = hashlib.sha256(choice.identity().encode()).hexdigest()[:16]
    measured: dict[str, tuple[list[float], list[float]]] = {}
    start = time.perf_counter()
    for path in (TUNE, HELD_OUT):
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))[: args.limit]
        pairs: tuple[list[float], list[float]] = ([], [])
        for row in rows:
            key = f"{model_key}|{row['PuzzleId']}"
            if key not in cache:
                cache[key] = rating.surprisal(model, row["FEN"], row["Moves"].split())
                if len(cache) % 100 == 0:
                    cache_path.write_text(json.dumps(cache))
            pairs[0].append(cache[key])
            pairs[1].append(float(row["Rating"]))
        measured[path.name] = pairs
    cache_path.write_text(json.dumps(cache))
    print(f"surprisals of {sum(len(p[0]) for p in measured.values())} puzzles, {time.perf_counter() - start:.0f} s")
    tune = measured[TUNE.name]
    fitted = rating.fit_calibration(tune[0], tune[1], (1200, 1600, 2000))
    print(f"SURPRISAL_KNOTS = {fitted.surprisal}\nRATING_KNOTS = {fitted.rating}\nDEVIATION_BANDS = {fitted.deviation}")
    for name, (surprisals, ratings) in measured.items():
        estimates = np.array([rating.rating_of(s, fitted)[0] for s in surprisals], dtype=float)
        deviations = np.array([rating.rating_of(s, fitted)[1] for s in surprisals], dtype=float)
        truth = np.array(ratings)
        rho = spearmanr(surprisals, truth)[0]
        within = float(np.mean(np.abs(estimates - truth) <= deviations))
        mean_abs = np.mean(np.abs(estimates - truth))
        print(
            f"{name}: n={len(truth)} Spearman rho {rho:.3f}; mean abs error {mean_abs:.0f}; "
            f"|error| <= RatingDeviation for {within:.0%}"
        )
        order = np.argsort(truth)
        for decile, part in enumerate(np.array_split(order, 10), start=1):
            error = estimates[part] - truth[part]
            print(
                f"  decile {decile:>2} (Lichess {truth[part].min():.0f}-{truth[part].max():.0f}): "
                f"mean error {error.mean():+.0f}, mean abs {np.abs(error).mean():.0f}"
            )


def judges_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", default=str(PUZZLES / "lichess_puzzles_sample_1000.csv"))
    parser.add_argument("--engine", default="stockfish")
    parser.add_argument("--depth", type=int, default=None)
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--human-model", default="default")
    parser.add_argument("--human-corpus", default=None)
    args = parser.parse_args(argv)
    depth = args.depth or (NATIVE_DEFAULT_DEPTH if args.engine == "native" else UCI_DEFAULT_DEPTH)
    settings = DiffiMaxSettings(depth=depth)
    judges = JudgeSettings(judges=frozenset(JUDGES))
    model = load_move_model(None if args.human_model == "none" else args.human_model)
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
                judgement = Judge(JudgingKit(backend, model, corpus), settings, judges).position(
                    board, not board.turn, context=MoverContext(rating=int(row["Rating"])), also=(blunder,)
                )
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
    print(
        f"{count} puzzles from {Path(args.file).name}, engine {args.engine}, depth {depth}, "
        f"R {settings.reasonable_dip}, T {settings.trap_dip}; {elapsed:.0f} s"
    )
    for judge, tally in tallies.items():
        shares = ", ".join(f"{kind} {n} ({n / max(count, 1):.0%})" for kind, n in tally.most_common())
        print(f"  {judge:<9} {shares}")
    dips.sort()
    if dips:
        print(
            f"  blunder dip: median {dips[len(dips) // 2]:.2f} pawns, "
            f"{sum(d > settings.reasonable_dip for d in dips) / len(dips):.0%} beyond R"
        )


if __name__ == "__main__":
    main()
