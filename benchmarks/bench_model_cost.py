"""What a human-move model costs and saves a mining worker: each setup (a model and its judge
defaults) judges the same positions on a Stockfish of its own, interleaved position by position so
that a shared machine's load falls on all alike, beside the same setup at a deeper reference.

  python -m benchmarks.bench_model_cost [--positions 100] [--reference 600000] [--json OUT]
      [--setup NAME=MODEL[:k=v,...]]...

A setup is a `--human-model` spec and `JudgeSettings` fields that differ from the defaults, e.g.
`today=bundled:practical_shallow_k=2` and `maia3=maia3:practical_shallow_k=0`; the first is the
baseline the others' ratios are against. Per setup and position: the model's inference (batched as
a worker batches it: all positions of a part at once, timed apart), the judged analysis's engine
work (CPU seconds of this process and its engine, nodes), the replies probed and fully searched,
and the practical candidates, against the same setup's candidates at `--reference` nodes per line
(agreement: the share of positions with the same set, and the mean Jaccard index).

Positions: `bench_engine_cost.positions` (lichess_100 and player_b, every ~7th ply from 10 to 60),
with their move stacks (Maia-3 reads seven moves back) and the players' ratings.
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
import chess.pgn

from benchmarks.bench_engine_cost import BEFORE, DATA, FILES, backend, jaccard
from pipeline.engines.options import EngineOptions
from pipeline.human.context import MoverContext
from pipeline.human.models import load_move_model
from pipeline.judging import Judge, JudgingKit
from pipeline.mine.plan import cpu_seconds
from search.judges import JudgeSettings
from search.settings import UCI_DEFAULT_DEPTH, DiffiMaxSettings

Sample = tuple[chess.Board, str, MoverContext]


def positions(count: int) -> list[Sample]:
    """Half from each file: (board with its move stack, the move played, the mover's context)."""
    found: list[Sample] = []
    for name in FILES:
        mine: list[Sample] = []
        with (DATA / name).open(encoding="utf-8") as handle:
            while len(mine) < count // len(FILES):
                game = chess.pgn.read_game(handle)
                if game is None:
                    break
                elo = {colour: _rating(game.headers.get(f"{colour}Elo")) for colour in ("White", "Black")}
                board = game.board()
                for ply, move in enumerate(game.mainline_moves()):
                    if 10 <= ply <= 60 and ply % 7 == 3 and board.legal_moves.count() >= 2:
                        mover, other = ("White", "Black") if board.turn == chess.WHITE else ("Black", "White")
                        context = MoverContext(rating=elo[mover], opponent_rating=elo[other], pool="lichess")
                        mine.append((board.copy(), move.uci(), context))
                    board.push(move)
        found += mine[: count // len(FILES)]
    return found


def _rating(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


@dataclasses.dataclass(frozen=True)
class Setup:
    name: str
    model: str
    judges: JudgeSettings


def parse_setup(text: str) -> Setup:
    name, _, rest = text.partition("=")
    model, _, fields = rest.partition(":")
    changes: dict[str, Any] = {}
    for item in filter(None, fields.split(",")):
        key, _, value = item.partition("=")
        kind = type(getattr(JudgeSettings(), key))
        changes[key] = kind(float(value)) if kind in (int, float) else kind(value)
    return Setup(name, model, dataclasses.replace(JudgeSettings(), **changes))


def main(args: argparse.Namespace) -> dict[str, Any]:
    samples = positions(args.positions)
    setups = [parse_setup(text) for text in args.setup]
    settings = DiffiMaxSettings(depth=UCI_DEFAULT_DEPTH)
    runs: dict[str, dict[str, list[Any]]] = {}
    for setup in setups:
        model = load_move_model(setup.model)
        assert model is not None
        started = time.process_time()
        predicted = model.batch_probabilities([(board, context) for board, _, context in samples])
        inference = time.process_time() - started
        engine, reference = backend(EngineOptions()), backend(EngineOptions(nodes=args.reference, **BEFORE))
        runs[setup.name] = {
            "inference": [inference / len(samples)],
            "cpu": [],
            "nodes": [],
            "probed": [],
            "searched": [],
            "candidates": [],
            "reference": [],
            "model": [setup.model],
            "engine": [engine],
            "reference_engine": [reference],
            "predicted": predicted,
        }
        model.close()
    try:
        for index, (board, played, context) in enumerate(samples):
            for setup in setups:
                run = runs[setup.name]
                cpu = cpu_seconds()
                found = Judge(JudgingKit(run["engine"][0], None, None), settings, setup.judges).position(
                    board, not board.turn, context=context, also=[played], model_probabilities=run["predicted"][index]
                )
                run["cpu"].append(cpu_seconds() - cpu)
                run["nodes"].append(sum(found.nodes.values()))
                replies = found.evidence.replies
                run["probed"].append(sum(r.probe_value is not None for r in replies))
                run["searched"].append(sum(r.deep_value is not None for r in replies))
                run["candidates"].append(found.candidates("practical") or frozenset())
                deep = Judge(JudgingKit(run["reference_engine"][0], None, None), settings, setup.judges).position(
                    board, not board.turn, context=context, model_probabilities=run["predicted"][index]
                )
                run["reference"].append(deep.candidates("practical") or frozenset())
            print(f"{index + 1}/{len(samples)} positions", flush=True)
    finally:
        for run in runs.values():
            run["engine"][0].close()
            run["reference_engine"][0].close()
    return summarise(runs, setups)


def summarise(runs: dict[str, dict[str, list[Any]]], setups: list[Setup]) -> dict[str, Any]:
    report: dict[str, Any] = {"setups": {}}
    for setup in setups:
        run = runs[setup.name]
        done = len(run["cpu"])
        pairs = list(zip(run["candidates"], run["reference"], strict=True))
        per_position = statistics.mean(run["cpu"]) + run["inference"][0]
        report["setups"][setup.name] = {
            "model": setup.model,
            "judges": setup.judges.describe(),
            "positions": done,
            "inference_seconds": run["inference"][0],
            "engine_cpu_seconds": statistics.mean(run["cpu"]),
            "positions_per_cpu_second": 1 / per_position,
            "nodes_per_position": statistics.mean(run["nodes"]),
            "replies_probed": statistics.mean(run["probed"]),
            "replies_searched": statistics.mean(run["searched"]),
            "mean_candidates": statistics.mean(len(c) for c in run["candidates"]),
            "trap_node_share": sum(bool(c) for c in run["candidates"]) / done,
            "same_as_reference": sum(a == b for a, b in pairs) / done,
            "mean_jaccard": statistics.mean(jaccard(a, b) for a, b in pairs),
        }
    base = report["setups"][setups[0].name]
    for setup in setups[1:]:
        row = report["setups"][setup.name]
        row["rate_ratio"] = row["positions_per_cpu_second"] / base["positions_per_cpu_second"]
        row["nodes_ratio"] = base["nodes_per_position"] / row["nodes_per_position"]
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=100)
    parser.add_argument("--reference", type=int, default=600_000)
    parser.add_argument("--setup", action="append", default=[], help="NAME=MODEL[:field=value,...]; first: baseline")
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    if len(arguments.setup) < 2:
        arguments.setup = ["today=bundled", "maia3=maia3"]
    result = main(arguments)
    print(json.dumps(result, indent=2))
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2))
