"""`diffimax explain` on the 27 known opening traps (`pipeline/harness/known_traps.py`), with the
moves that reach each trap as the human-move model's history, or (`--no-history`) its FEN alone.

  nice -n 10 python -m benchmarks.bench_known_explain [--no-history] [--rating 1200] \\
        [--human-model maia3] [--engine stockfish] [--nodes N] [--depth D] [--json OUT]

Each trap is explained by `pipeline.outputs.explain.explain_position`, the function behind
`diffimax explain`, with explain's defaults (every judge, its search, engine and threshold flags
as the command line leaves them), the victim (the side to move) rated `--rating`, and the setter
the side that just moved. Per trap: whether the victim's documented mistake is a candidate of the
practical judge, the model's probability of it, the win chances it loses, and the position's fall
probability (`Judgement.fall`); then how many of the traps the practical judge names.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import chess

from pipeline.cli.options import EngineFlags, JudgeThresholds, SearchFlags, build_judges
from pipeline.harness.known_traps import KnownTrap, load_known_traps
from pipeline.human.context import MoverContext
from pipeline.mine.rows import reply_rows
from pipeline.outputs.explain import explain_position
from pipeline.outputs.explain_input import ExplainInput
from search.judges import JUDGES
from search.settings import default_depth


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def explain_trap(trap: KnownTrap, args: argparse.Namespace) -> dict[str, Any]:
    """One trap explained as `diffimax explain` would, with or without the moves before it."""
    board = trap.board.copy() if args.history else chess.Board(trap.board.fen())
    origins = {"rating": "--rating"}
    position = ExplainInput(board, MoverContext(rating=args.rating), origins)
    engine_flags = EngineFlags(engine=args.engine, nodes=args.nodes)
    engine = engine_flags.name()
    settings = SearchFlags(depth=args.depth).settings(default_depth(engine))
    judges = build_judges(None, frozenset(JUDGES), JudgeThresholds())
    started = time.perf_counter()
    explanation = explain_position(
        position, trap.setter, engine, engine_flags.options(), settings, judges, model=args.human_model, corpus=None
    )
    seconds = time.perf_counter() - started
    judgement = explanation.judgement
    assert judgement is not None  # the victim is to move in every trap position
    victim = trap.victim_move.uci()
    row = next(row for row in reply_rows(judgement) if row["move"] == victim)
    fall = judgement.fall
    return {
        "name": trap.name,
        "victim_move": trap.victim_san,
        "practical_candidate": victim in (judgement.candidates("practical") or frozenset()),
        "model_p": row["model_p"],
        "win_drop": row["win_drop"],
        "fall_p": None if fall is None else fall.fall_p,
        "fall_p_low": None if fall is None else fall.low,
        "fall_p_high": None if fall is None else fall.high,
        "history_plies": len(board.move_stack),
        "seconds": round(seconds, 1),
    }


def cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-history", dest="history", action="store_false", help="Judge each trap's FEN alone.")
    parser.add_argument("--rating", type=int, default=1200, help="The victim's rating.")
    parser.add_argument("--human-model", default="maia3", help="As explain's --human-model.")
    parser.add_argument("--engine", default=None, help="As explain's --engine (default: Stockfish where installed).")
    parser.add_argument("--nodes", type=int, default=None, help="As explain's --nodes (default: explain's).")
    parser.add_argument("--depth", type=int, default=None, help="As explain's --depth (default: explain's).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the rows here.")
    args = parser.parse_args(argv)
    traps = load_known_traps()
    rows = []
    print(f"{'trap':<44} {'move':<7} {'practical':<9} {'model_p':>7} {'win drop':>8} {'fall_p':>6} {'s':>5}")
    for trap in traps:
        row = explain_trap(trap, args)
        rows.append(row)
        print(
            f"{row['name'][:44]:<44} {row['victim_move']:<7} {'yes' if row['practical_candidate'] else 'no':<9} "
            f"{cell(row['model_p'], '.3f'):>7} {cell(row['win_drop'], '.2f'):>8} {cell(row['fall_p'], '.2f'):>6} "
            f"{row['seconds']:>5.0f}",
            flush=True,
        )
    named = sum(row["practical_candidate"] for row in rows)
    history = "the moves before each trap as history" if args.history else "each trap's FEN alone (no history)"
    print(f"practical candidate: {named} of {len(rows)} ({history}; rating {args.rating}, {args.human_model})")
    if args.json is not None:
        args.json.write_text(json.dumps({"history": args.history, "rating": args.rating, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
