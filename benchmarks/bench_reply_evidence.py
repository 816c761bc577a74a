"""The human evidence in the opening from games (issue 45, item 2): reply probabilities from a
corpus's counts shrunk toward Maia-3's, against Maia-3 alone and the practical judge's "corpus else
model", on held-out games of both populations.

  nice -n 10 python -m benchmarks.bench_reply_evidence [--corpus corpus_train.parquet] \\
        [--games FILE...] [--plies 40] [--tune-games 600] [--held-out-games 1000] \\
        [--priors 1,2,5,10,20,50,100] [--json OUT]

What it measures, at every position of a game where the mover had a choice (more than one legal
move) and a rating, up to ply `--plies` (ply 1 is White's first move):

- **maia3**: Maia-3's probabilities alone, at the mover's rating and pool against the opponent's
  rating, no clock (what the repertoire gives it: `RepertoireSettings.context`);
- **corpus_else_model**: the practical judge's rule, today's repertoire rule: the corpus's share
  where it has at least `corpus_min_games` (5) games with a mover within the band (±100) of the
  mover's rating, else Maia-3's;
- **shrunk**: the corpus's counts in the band shrunk toward Maia-3's probabilities by k games,
  (count + k p) / (games + k) (Maia-3 alone where the corpus has no game in the band), at the k
  chosen on the tune split.

All three are `search.expectimax.reply_probabilities` (the shrunk rule with `prior_games=k`), the
code the repertoire runs. Log-loss is that of the move played, each distribution mixed with 1 % of
uniform over the legal moves (as `bench_repertoire heldout`), so that a move given 0 is finite.
Top-1 is the share of positions where the rule's likeliest move was played (a tie between n moves
counts 1/n if the played move is among them). Intervals: log-loss, a bootstrap over games (95 %,
1,000 resamples, seeded); top-1, Wilson (positions taken as independent).

The corpus is the TRAIN split of `--games` (`pipeline.common.splits`; the same rows as `diffimax
human corpus --games ... --out corpus_train.parquet`), built in the same pass that reads the tune
and held-out games unless `--corpus` gives one. Its ratings are as the games give them, chess.com's
and Lichess's in one column: a mover's band is looked up with the mover's own rating as the game
gives it, as the judges look it up (`pipeline.judging`, `corpus_counts`); Maia-3 maps a chess.com
rating onto Lichess's scale itself (`pipeline.human.ratings`).

k is chosen on the TUNE split by the mean of the two populations' log-losses (each population
weighted alike, as one default serves both), over the tune positions where the corpus has a game in
the band (elsewhere every k gives Maia-3 alone, so only those positions can tell the k apart).

The cap (Maia-3 costs ~11 ms of CPU a position, batched): `--held-out-games` and `--tune-games`
games per population, a seeded sample (`SAMPLE_SEED`) of the split's games (a population with fewer
has all of them), each up to `--plies` plies.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import chess
import numpy as np
import pyarrow as pa

from pipeline.common.stats import wilson
from pipeline.human.context import MoverContext
from pipeline.human.corpus import CORPUS_SCHEMA, Corpus
from pipeline.human.data import GameRecord, ReadCounts, read_inputs
from pipeline.human.models import load_move_model
from schemas.dataset import to_signed64
from search.expectimax import reply_probabilities
from search.judges import JudgeSettings, NodeEvidence, ReplyEvidence

SHARED: Final = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
# Every shared game file: the three split by game give the corpus (train), the tune and the
# held-out games; the two held out whole give held-out games only.
DEFAULT_GAMES: Final = (
    "lichess_player_a_37221.pgn.zst",
    "lichess_eval_clk_10024.pgn.zst",
    "chesscom_mixed_1187.pgn",
    "lichess_player_b_1089.pgn",
    "lichess_100.pgn",
)
# Share of uniform mixed into every distribution before its log-loss (a move given 0 is finite).
UNIFORM_SHARE: Final = 0.01
# The k of the tune split's grid (prior strength, in games).
DEFAULT_PRIORS: Final = "1,2,5,10,20,50,100"
# Seed of the game sample, and of the bootstrap.
SAMPLE_SEED: Final = 45002
BOOTSTRAPS: Final = 1000
# Ply buckets (ply 1 = White's first move): (label, first, last).
BUCKETS: Final = (("1-10", 1, 10), ("11-20", 11, 20), ("21+", 21, 10_000))
# Positions per Maia-3 call.
MAIA_CHUNK: Final = 256
POPULATIONS: Final = ("lichess", "chesscom")


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Position:
    """One measured position: who moved, what was played, and the evidence at it."""

    population: str
    source: str
    game: int
    """Index of its game in the run (the bootstrap's unit)."""
    ply: int
    """1 = White's first move."""
    played: str
    legal: tuple[str, ...]
    corpus_games: int
    corpus_moves: dict[str, int]
    maia: dict[str, float] = field(default_factory=dict)


def cpu_seconds() -> float:
    """This process's CPU and its children's (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def read_games(
    inputs: Sequence[str], plies: int, build_corpus: bool
) -> tuple[dict[str, dict[str, list[GameRecord]]], pa.Table | None, ReadCounts]:
    """One pass over `inputs`: the tune and held-out games by split and population (positions up to
    `plies`), and the train split's corpus rows when `build_corpus`."""
    counts = ReadCounts()
    by_split: dict[str, dict[str, list[GameRecord]]] = {"tune": defaultdict(list), "held_out": defaultdict(list)}
    keys: list[int] = []
    ratings: list[int | None] = []
    moves: list[str] = []
    for record in read_inputs(list(inputs), counts=counts):
        split = record.split
        if split == "train":
            if build_corpus:
                for position in record.positions:
                    keys.append(to_signed64(position.key))
                    ratings.append(position.rating)
                    moves.append(position.move)
            continue
        if record.start_fen is not None or record.pool is None:
            continue  # plies count from the standard start; a game of no known pool has no population
        by_split[split][record.pool].append(record)
    table = None
    if build_corpus:
        table = pa.table({"position_key": keys, "mover_rating": ratings, "move_uci": moves}, schema=CORPUS_SCHEMA)
    return by_split, table, counts


def sample(records: list[GameRecord], cap: int) -> list[GameRecord]:
    """A seeded sample of `cap` games (all of them when there are fewer), in reading order."""
    if len(records) <= cap:
        return records
    chosen = set(random.Random(SAMPLE_SEED).sample(range(len(records)), cap))
    return [r for i, r in enumerate(records) if i in chosen]


def positions_of(
    records: list[GameRecord],
    population: str,
    corpus: Corpus,
    band: int,
    plies: int,
    first_game: int,
    skipped: dict[str, int],
) -> tuple[list[Position], list[tuple[chess.Board, MoverContext]]]:
    """The measured positions of `records` (up to `plies`) with the corpus's counts in the mover's
    band, and each one's board and context for Maia-3."""
    found: list[Position] = []
    asks: list[tuple[chess.Board, MoverContext]] = []
    for offset, record in enumerate(records):
        for position, board in record.boards():
            if position.ply >= plies:
                break
            if position.rating is None:
                skipped["no rating"] += 1
                continue
            legal = tuple(move.uci() for move in board.legal_moves)
            if len(legal) < 2:
                skipped["forced"] += 1
                continue
            counted = corpus.counts(position.key, position.rating, band)
            found.append(
                Position(
                    population,
                    record.source,
                    first_game + offset,
                    position.ply + 1,
                    position.move,
                    legal,
                    counted.games,
                    counted.moves,
                )
            )
            context = MoverContext(
                rating=position.rating, pool=record.pool, opponent_rating=record.opponent_rating(position.ply)
            )
            asks.append((board.copy(), context))
    return found, asks


def add_maia(positions: list[Position], asks: list[tuple[chess.Board, MoverContext]], model: Any) -> None:
    """Maia-3's probabilities of every position, `MAIA_CHUNK` a call."""
    started = time.perf_counter()
    for start in range(0, len(asks), MAIA_CHUNK):
        chunk = asks[start : start + MAIA_CHUNK]
        for position, found in zip(
            positions[start : start + MAIA_CHUNK], model.batch_probabilities(chunk), strict=True
        ):
            position.maia = found
        if (start // MAIA_CHUNK) % 20 == 0:
            say(f"  maia3: {start + len(chunk):,} of {len(asks):,} positions, {time.perf_counter() - started:.0f} s")


def rule_probabilities(
    position: Position, judges: JudgeSettings, rule: str, prior: float | None = None
) -> dict[str, float]:
    """A rule's distribution at `position` (`search.expectimax.reply_probabilities`)."""
    with_corpus = rule != "maia3"
    replies = tuple(
        ReplyEvidence(
            move,
            model_p=position.maia.get(move, 0.0),
            corpus_count=position.corpus_moves.get(move, 0) if with_corpus else None,
        )
        for move in position.legal
    )
    evidence = NodeEvidence(replies, best="", best_value=0, corpus_games=position.corpus_games if with_corpus else None)
    return reply_probabilities(evidence, judges, prior_games=prior if rule == "shrunk" else None)


def scored(position: Position, probabilities: dict[str, float]) -> tuple[float, float]:
    """(log-loss of the move played, top-1 credit) of a distribution at `position`."""
    p = probabilities.get(position.played, 0.0)
    loss = -math.log((1.0 - UNIFORM_SHARE) * p + UNIFORM_SHARE / len(position.legal))
    best = max(probabilities.values(), default=0.0)
    tied = [m for m in position.legal if probabilities.get(m, 0.0) == best]
    return loss, (1.0 / len(tied) if position.played in tied else 0.0)


def scores_of(positions: list[Position], judges: JudgeSettings, rule: str, prior: float | None) -> np.ndarray:
    """(log-loss, top-1) per position, as an (n, 2) array."""
    found = [scored(p, rule_probabilities(p, judges, rule, prior)) for p in positions]
    return np.asarray(found, np.float64).reshape(-1, 2)


def bootstrap(games: np.ndarray, values: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """95 % interval of the mean of `values`, resampling the games they belong to."""
    if len(values) == 0:
        return math.nan, math.nan
    _, index = np.unique(games, return_inverse=True)
    sums = np.bincount(index, weights=values)
    sizes = np.bincount(index).astype(np.float64)
    draws = rng.integers(0, len(sums), (BOOTSTRAPS, len(sums)))
    means = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def cell_figures(positions: list[Position], scores: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, Any]:
    """n, and per rule log-loss [bootstrap] and top-1 [Wilson], and the log-loss gain over Maia-3."""
    games = np.asarray([p.game for p in positions], np.int64)
    n = len(positions)
    found: dict[str, Any] = {
        "n": n,
        "covered": sum(1 for p in positions if p.corpus_games > 0),
        "games": len(set(games.tolist())),
    }
    for rule, table in scores.items():
        if n == 0:
            continue
        top = float(table[:, 1].sum())
        found[rule] = {
            "log_loss": float(table[:, 0].mean()),
            "log_loss_interval": bootstrap(games, table[:, 0], rng),
            "top1": top / n,
            "top1_interval": wilson(top, n),
            "log_loss_minus_maia3": float((table[:, 0] - scores["maia3"][:, 0]).mean()),
            "log_loss_minus_maia3_interval": bootstrap(games, table[:, 0] - scores["maia3"][:, 0], rng),
        }
    return found


def tune_figures(positions: list[Position], judges: JudgeSettings, priors: list[float]) -> dict[str, Any]:
    """Log-loss and top-1 of every k (and of the two other rules) on the tune positions the corpus
    covers, per population; the chosen k."""
    found: dict[str, Any] = {}
    for population in POPULATIONS:
        chosen = [p for p in positions if p.population == population]
        rows: dict[str, Any] = {"n": len(chosen)}
        for name, rule, prior in [
            ("maia3", "maia3", None),
            ("corpus_else_model", "corpus_else_model", None),
            *((f"shrunk_k{k:g}", "shrunk", k) for k in priors),
        ]:
            table = scores_of(chosen, judges, rule, prior)
            rows[name] = (
                {"log_loss": float(table[:, 0].mean()), "top1": float(table[:, 1].mean())} if len(chosen) else {}
            )
        found[population] = rows

    present = [pop for pop in POPULATIONS if found[pop]["n"]]

    def mean_loss(k: float) -> float:
        return sum(found[pop][f"shrunk_k{k:g}"]["log_loss"] for pop in present) / len(present)

    best = min(priors, key=mean_loss)
    found["chosen_k"] = best
    found["mean_log_loss"] = {f"{k:g}": mean_loss(k) for k in priors}
    return found


def print_tune(found: dict[str, Any], priors: list[float]) -> None:
    print("\nTune split, positions the corpus covers (a game in the band): log-loss / top-1")
    present = [pop for pop in POPULATIONS if found[pop]["n"]]
    heads = [f"{pop} (n={found[pop]['n']:,})" for pop in present]
    print(f"| rule | {' | '.join(heads)} | mean log-loss |")
    print("|---|" + "---|" * (len(present) + 1))
    names = ["maia3", "corpus_else_model", *(f"shrunk_k{k:g}" for k in priors)]
    for name in names:
        cells = [f"{found[pop][name]['log_loss']:.3f} / {found[pop][name]['top1']:.3f}" for pop in present]
        mean = sum(found[pop][name]["log_loss"] for pop in present) / len(present)
        marker = " (chosen)" if name == f"shrunk_k{found['chosen_k']:g}" else ""
        print(f"| {name}{marker} | {' | '.join(cells)} | {mean:.3f} |")


def print_held_out(found: dict[str, Any], title: str) -> None:
    print(f"\n{title}")
    print("| population | plies | n (corpus covers) | rule | log-loss [95 %] | minus Maia-3 [95 %] | top-1 [95 %] |")
    print("|---|---|---|---|---|---|---|")
    for population, buckets in found.items():
        for bucket, cell in buckets.items():
            for rule in ("maia3", "corpus_else_model", "shrunk"):
                if rule not in cell:
                    continue
                figure = cell[rule]
                low, high = figure["log_loss_interval"]
                dlow, dhigh = figure["log_loss_minus_maia3_interval"]
                tlow, thigh = figure["top1_interval"]
                print(
                    f"| {population} | {bucket} | {cell['n']:,} ({cell['covered']:,}) | {rule} | "
                    f"{figure['log_loss']:.3f} [{low:.3f}, {high:.3f}] | "
                    f"{figure['log_loss_minus_maia3']:+.3f} [{dlow:+.3f}, {dhigh:+.3f}] | "
                    f"{figure['top1']:.3f} [{tlow:.3f}, {thigh:.3f}] |"
                )


def held_out_figures(
    positions: list[Position], judges: JudgeSettings, prior: float, *, covered_only: bool
) -> dict[str, Any]:
    """Per population (and Lichess's files held out whole), per ply bucket and overall: every
    rule's figures."""
    rng = np.random.default_rng(SAMPLE_SEED)
    chosen = [p for p in positions if p.corpus_games > 0] if covered_only else positions
    scores = {
        "maia3": scores_of(chosen, judges, "maia3", None),
        "corpus_else_model": scores_of(chosen, judges, "corpus_else_model", None),
        "shrunk": scores_of(chosen, judges, "shrunk", prior),
    }
    groups = {
        "lichess": lambda p: p.population == "lichess",
        "chesscom": lambda p: p.population == "chesscom",
        "lichess, files held out whole": lambda p: p.source in ("lichess_player_b_1089.pgn", "lichess_100.pgn"),
    }
    found: dict[str, Any] = {}
    for name, member in groups.items():
        cells = {}
        for label, first, last in (*BUCKETS, ("all", 1, 10_000)):
            if name.startswith("lichess, files") and label != "all":
                continue
            index = [i for i, p in enumerate(chosen) if member(p) and first <= p.ply <= last]
            cells[label] = cell_figures([chosen[i] for i in index], {r: s[index] for r, s in scores.items()}, rng)
        found[name] = cells
    return found


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", nargs="+", default=[str(SHARED / name) for name in DEFAULT_GAMES])
    parser.add_argument(
        "--corpus", default=None, help="a train-split corpus (default: built from --games' train split)"
    )
    parser.add_argument("--plies", type=int, default=40, help="positions up to this ply (1 = White's first move)")
    parser.add_argument("--tune-games", type=int, default=600, help="tune games per population (a seeded sample)")
    parser.add_argument("--held-out-games", type=int, default=1000, help="held-out games per population")
    parser.add_argument("--priors", default=DEFAULT_PRIORS, help="the grid of k (games) tried on the tune split")
    parser.add_argument("--json", default=None, help="write the figures as JSON here")
    return parser.parse_args(argv)


def main(args: argparse.Namespace) -> None:
    cpu_started, wall_started = cpu_seconds(), time.perf_counter()
    judges = JudgeSettings(judges=frozenset({"practical"}))
    priors = [float(k) for k in args.priors.split(",")]
    by_split, table, counts = read_games(args.games, args.plies, build_corpus=args.corpus is None)
    corpus = Corpus.load(args.corpus) if args.corpus else Corpus(table, "the train split of --games")
    say(f"read: corpus of {len(corpus):,} rows; {counts.failed} games failed, {counts.filtered} filtered")
    skipped: dict[str, int] = defaultdict(int)
    measured: dict[str, list[Position]] = {}
    asks: dict[str, list[tuple[chess.Board, MoverContext]]] = {}
    games_read: dict[str, dict[str, int]] = {}
    next_game = 0
    for split, cap in (("tune", args.tune_games), ("held_out", args.held_out_games)):
        measured[split], asks[split], games_read[split] = [], [], {}
        for population in POPULATIONS:
            records = sample(by_split[split][population], cap)
            games_read[split][population] = len(records)
            found, boards = positions_of(
                records, population, corpus, judges.rating_band, args.plies, next_game, skipped
            )
            next_game += len(records)
            if split == "tune":  # only where the corpus has a game in the band can the k differ
                kept = [i for i, p in enumerate(found) if p.corpus_games > 0]
                found, boards = [found[i] for i in kept], [boards[i] for i in kept]
            measured[split] += found
            asks[split] += boards
            say(f"{split} {population}: {len(records):,} games, {len(found):,} positions")
    read_cpu = cpu_seconds() - cpu_started
    model = load_move_model("maia3")
    assert model is not None
    for split in ("tune", "held_out"):
        add_maia(measured[split], asks[split], model)
    model_cpu = cpu_seconds() - cpu_started - read_cpu
    tune = tune_figures(measured["tune"], judges, priors)
    prior = tune["chosen_k"]
    held_out = held_out_figures(measured["held_out"], judges, prior, covered_only=False)
    covered = held_out_figures(measured["held_out"], judges, prior, covered_only=True)
    print_tune(tune, priors)
    print_held_out(held_out, f"Held-out split, every measured position (shrunk at k = {prior:g})")
    print_held_out(covered, f"Held-out split, positions the corpus covers (a game in the band; k = {prior:g})")
    cost = {
        "cpu_seconds": cpu_seconds() - cpu_started,
        "read_cpu_seconds": read_cpu,
        "maia_cpu_seconds": model_cpu,
        "wall_seconds": time.perf_counter() - wall_started,
    }
    print(f"\ncost: {json.dumps({k: round(v, 1) for k, v in cost.items()})}; skipped positions: {dict(skipped)}")
    if args.json:
        found = {
            "games": args.games,
            "corpus": args.corpus or "built from the train split",
            "corpus_rows": len(corpus),
            "plies": args.plies,
            "games_measured": games_read,
            "uniform_share": UNIFORM_SHARE,
            "rating_band": judges.rating_band,
            "corpus_min_games": judges.corpus_min_games,
            "skipped_positions": dict(skipped),
            "tune": tune,
            "held_out": held_out,
            "held_out_covered": covered,
            "cost": cost,
        }
        Path(args.json).write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(parse_args())
