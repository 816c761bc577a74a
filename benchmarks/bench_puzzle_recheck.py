"""Written set puzzles verified again under the current rules, then re-checked at 4x the nodes.

  python -m benchmarks.bench_puzzle_recheck DATA PUZZLES.csv --failed ID[,ID...] [--passing N]
         --out OUT.json [--factor 4] [--engine stockfish]

For each chosen set puzzle of PUZZLES.csv (the ids given as failing, then the first N other set
puzzles in file order): its candidate is found in the mined dataset DATA (the group whose FEN and
first three moves are the puzzle's), verified by `check_candidate` under the default standard at
its nodes (narrow passes searched again at twice the nodes), every engine search counted; a line it
keeps is re-verified by `recheck` on a fresh engine at `--factor` times the nodes, as
`benchmarks.bench_puzzle_yield --recheck` does. A kept practical setting move's loss at that budget
is also recorded both ways (`setting_losses`: one search, and the two searches used before).
The practical rule's human-model judge is not run:
a written practical puzzle passed it, and it is asked last, on its own engine, so the verifier's
searches and verdict do not depend on it (a stand-in accepts). Writes OUT.json (one record per
puzzle: the verdict, searches, nodes, seconds, the re-check) and prints a summary.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess

from pipeline.outputs.puzzles import EngineVerifier, recheck
from pipeline.outputs.puzzles.candidates import load_candidates
from pipeline.outputs.puzzles.generate import merged_candidates, verify_task
from pipeline.outputs.puzzles.records import MultiPvLine, Outcome, PracticalCheck, PuzzleReport
from pipeline.outputs.puzzles.rules import check_candidate, cp_of, setting_loss
from pipeline.outputs.puzzles.standards import STANDARDS


class Counted:
    """An engine verifier whose searches (and their nodes) are counted."""

    def __init__(self, verifier: EngineVerifier) -> None:
        self.verifier = verifier
        self.searches = 0
        self.nodes = 0

    def __call__(
        self, board: chess.Board, lines: int = 2, root_moves: Sequence[chess.Move] | None = None
    ) -> list[MultiPvLine]:
        self.searches += 1
        self.nodes += self.verifier.limit.nodes or 0
        return self.verifier(board, lines, root_moves)

    def deeper(
        self, board: chess.Board, lines: int = 2, root_moves: Sequence[chess.Move] | None = None
    ) -> list[MultiPvLine]:
        self.searches += 1
        self.nodes += self.verifier.deeper_limit.nodes or 0
        return self.verifier.deeper(board, lines, root_moves)


def accept(board: chess.Board, move: chess.Move) -> PracticalCheck | None:
    return PracticalCheck(1.0, 0.0, None, 0)


def setting_losses(fen: str, moves: Sequence[str], engine: EngineVerifier) -> dict[str, int]:
    """A practical setting move's loss on `engine`, measured both ways: in one search (the
    verifier's and `recheck`'s, `setting_loss`) and as the best line's value less a second search
    after the move (theirs before issue 44's one-search change), for the record of what changed."""
    board = chess.Board(fen)
    board.push_uci(moves[0])
    move = chess.Move.from_uci(moves[1])
    engine.new_puzzle()
    lines = engine(board, 2)
    _, one = setting_loss(board, move, engine, lines)
    after = board.copy()
    after.push(move)
    two = max(0, cp_of(lines[0].score) - cp_of(-engine(after, 1)[0].score)) if not after.is_game_over() else 0
    return {"one_search": one, "two_searches": two}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("puzzles", type=Path)
    parser.add_argument("--failed", default="", help="ids that failed the re-check (comma list)")
    parser.add_argument("--passing", type=int, default=40, help="the first N other set puzzles in file order")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--engine", default="stockfish")
    args = parser.parse_args()
    standard = STANDARDS["default"]
    failed = [i for i in args.failed.split(",") if i]
    rows = [r for r in csv.DictReader(args.puzzles.open(encoding="utf-8")) if "diffimaxSet" in r["Themes"]]
    chosen = [r for i in failed for r in rows if r["PuzzleId"] == i]
    chosen += [r for r in rows if r["PuzzleId"] not in failed][: args.passing]
    candidates, _, games = load_candidates(args.data, ["set"], 100, standard)
    report = PuzzleReport(
        engine=args.engine, nodes=standard.nodes, margin=standard.margin, standard="default", games=games
    )
    report.candidates["set"] = report.duplicates_merged["set"] = 0
    report.dropped["set"] = {}
    groups = merged_candidates(candidates, ("punish", "set"), report)
    results: list[dict[str, Any]] = []
    with (
        EngineVerifier(args.engine, nodes=standard.nodes) as engine,
        EngineVerifier(args.engine, nodes=standard.nodes * args.factor) as fresh,
    ):
        for row in chosen:
            moves = row["Moves"].split()
            members = next(
                m
                for (kind, _), m in groups
                if kind == "set" and m[0].fen == row["FEN"] and list(m[0].moves[:3]) == moves[:3]
            )
            task = verify_task(members, ("punish", "set"))
            engine.new_puzzle()
            counted = Counted(engine)
            started = time.monotonic()
            verdict = check_candidate(
                task.fen, task.moves, 3, counted, standard, accept if task.practical else None, confirm=counted.deeper
            )
            record: dict[str, Any] = {
                "id": row["PuzzleId"],
                "failed_before": row["PuzzleId"] in failed,
                "searches": counted.searches,
                "nodes": counted.nodes,
                "seconds": round(time.monotonic() - started, 2),
            }
            if isinstance(verdict, str):
                record["verdict"] = verdict
            else:
                record["verdict"] = "kept" if list(verdict.moves) == moves else "kept, line changed"
                record["moves"] = list(verdict.moves)
                final = chess.Board(row["FEN"])
                for move in verdict.moves:
                    final.push_uci(move)
                fresh.new_puzzle()
                outcome: Outcome = "mate" if final.is_checkmate() else "advantage"
                practical = verdict.set_rule == "practical"
                record["recheck"] = recheck(row["FEN"], verdict.moves, 3, fresh, standard, outcome, practical)
                if practical:
                    record["setting_loss_at_factor"] = setting_losses(row["FEN"], verdict.moves, fresh)
            results.append(record)
            print(json.dumps(record), flush=True)
            args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    for group in (True, False):
        part = [r for r in results if r["failed_before"] is group]
        kept = [r for r in part if "recheck" in r]
        print(
            f"{'failed before' if group else 'passed before'}: {len(part)}, kept {len(kept)}, "
            f"of which pass at {args.factor}x {sum(r['recheck'] for r in kept)}, "
            f"searches {sum(r['searches'] for r in part)}, nodes {sum(r['nodes'] for r in part):,}, "
            f"seconds {sum(r['seconds'] for r in part):.1f}"
        )


if __name__ == "__main__":
    main()
