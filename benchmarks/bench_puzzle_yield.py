"""Puzzles per 100 games at each standard, and whether they are puzzles a puzzle maker keeps.

  python -m benchmarks.bench_puzzle_yield DATA [DATA ...] --out DIR [--standards default,lichess]
         [--lichess-nodes N] [--recheck 4] [--recheck-kinds all|set,...] [--workers N] [--engine stockfish]
         [--baseline]

For each mined dataset and each standard: `generate_puzzles` with the defaults (kind both), the
drop reasons, the share of written puzzles that are non-mating one-movers or end below +2 pawns
without mate (the defensive kind aside), and the share that passes `recheck` by a fresh engine at
`--recheck` times the standard's nodes (the set puzzles that fail it apart: issue 44 wants none),
the yield before the merge of game moments and the per-game cap (the puzzles written plus those
the two dropped), and the most puzzles one game gave. Beside the lichess standard: the positions of the mined
games where lichess-puzzler's generator would start a puzzle (the human's move lost more than 0.6
win chances and left the other side >= +2), and how many of them the dataset's primary judge calls
a trap the human fell into (the only punish candidates the puzzles read). With `--baseline`, a
standard that searches narrow passes again (`Standard.confirm_band`) is also run without, in the
same run, dataset by dataset. Writes OUT/yield.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pipeline.common.progress import Progress
from pipeline.dataset.duck import connect
from pipeline.outputs.puzzles import STANDARDS, EngineVerifier, PuzzleRequest, generate_puzzles, recheck, standard_of
from pipeline.outputs.puzzles.records import Puzzle, PuzzleReport
from pipeline.outputs.puzzles.rules import cp_of
from pipeline.outputs.puzzles.standards import ADVANTAGE_CP, LICHESS_WINNING_CP, Standard

# lichess-puzzler's generator starts a puzzle where the move just played lost more than this much
# win chances (on [-1, 1]) for its player and left the opponent at least LICHESS_WINNING_CP ahead.
LICHESS_JUMP = 0.6

LICHESS_STARTS = """
with fell as (
    select game_id, ply, bool_or(fell and by_primary) as fell_primary from root_candidates group by game_id, ply
),
starts as (
    select r.*, coalesce(f.fell_primary, false) as fell_primary,
           r.played_win_pct_lost > 50 * $jump and r.played_value >= $winning as starts
    from responses r left join fell f using (game_id, ply)
),
punish as (
    select win_pct_lost, value from root_candidates where by_primary and fell and dip >= 100
),
final as (
    select (select count(*) from starts) as positions,
           (select count(*) from starts where starts) as lichess_starts,
           (select count(*) from starts where starts and fell_primary) as lichess_starts_at_a_trap,
           (select count(*) from starts where played_value is null and move_played <> best_move)
               as played_move_not_valued,
           (select median(played_dip) from starts where starts) as median_dip_cp_of_starts,
           (select count(*) from punish) as punish_candidates,
           (select count(*) from punish where win_pct_lost > 50 * $jump and value >= $winning)
               as punish_candidates_lichess_jump,
           (select median(win_pct_lost) from punish) as median_win_pct_lost_of_punish_candidates
)
select * from final
"""


def lichess_starts(data: Path) -> dict[str, Any]:
    """Where lichess-puzzler would have started a puzzle in the mined games (see the module docstring)."""
    connection = connect(data)
    try:
        cursor = connection.execute(LICHESS_STARTS, {"jump": LICHESS_JUMP, "winning": LICHESS_WINNING_CP})
        columns = [column[0] for column in cursor.description]
        row = cursor.fetchone()
    finally:
        connection.close()
    return dict(zip(columns, row or (), strict=False))


def one_movers(puzzles: list[Puzzle]) -> int:
    return sum(1 for p in puzzles if "mate" not in p.themes and len(p.checks) < 2)


def below_advantage(puzzles: list[Puzzle]) -> int:
    return sum(
        1 for p in puzzles if p.kind != "defend" and "mate" not in p.themes and cp_of(p.checks[-1].best) < ADVANTAGE_CP
    )


def recheck_all(puzzles: list[Puzzle], standard: Standard, engine: str, factor: int) -> tuple[int, list[str]]:
    """How many puzzles pass on a fresh engine at `factor` times the nodes, and the ids that fail."""
    failed = []
    progress = Progress()
    progress.start("rechecked", "puzzles", len(puzzles))
    with EngineVerifier(engine, nodes=standard.nodes * factor) as verifier:
        for p in puzzles:
            verifier.new_puzzle()
            fixed = 3 if p.kind == "set" else 1
            if not recheck(p.fen, p.moves, fixed, verifier, standard, p.outcome, p.set_rule == "practical"):
                failed.append(p.puzzle_id)
            progress.advance(detail=f"{len(failed)} failed")
    progress.close()
    return len(puzzles) - len(failed), failed


def spread(report: PuzzleReport) -> dict[str, Any]:
    """The merge of game moments and the per-game cap (issue 44, item 4): what they dropped, the
    yield without them, and the most puzzles one game gave (a puzzle merged from several games
    counts for its first)."""
    same_moment = sum(reasons.get("same_moment", 0) for reasons in report.dropped.values())
    capped = sum(reasons.get("per_game", 0) for reasons in report.dropped.values())
    before = len(report.puzzles) + same_moment + capped
    by_game: dict[str, int] = {}
    for puzzle in report.puzzles:
        by_game[puzzle.game_ids[0]] = by_game.get(puzzle.game_ids[0], 0) + 1
    return {
        "dropped_same_moment": same_moment,
        "dropped_per_game": capped,
        "puzzles_before_merge": before,
        "per_100_games_before_merge": round(100 * before / report.games, 2) if report.games else None,
        "most_from_one_game": max(by_game.values(), default=0),
        "games_with_puzzles": len(by_game),
    }


def measure(data: Path, out: Path, rules: Standard, variant: str, args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    with Progress() as progress:
        report: PuzzleReport = generate_puzzles(
            data,
            out / f"{data.name}-{rules.name}-{variant}",
            PuzzleRequest(standard=rules, engine=args.engine),
            workers=args.workers,
            progress=progress,
        )
    seconds = time.monotonic() - started
    puzzles = report.puzzles
    rechecked = [p for p in puzzles if args.recheck_kinds == "all" or p.kind in args.recheck_kinds.split(",")]
    passed, failed = recheck_all(rechecked, rules, args.engine, args.recheck) if args.recheck else (0, [])
    set_ids = {p.puzzle_id for p in puzzles if p.kind == "set"}
    result = {
        "dataset": str(data),
        "standard": rules.name,
        "variant": variant,
        "confirm_band": rules.confirm_band,
        "nodes": rules.nodes,
        "games": report.games,
        "puzzles": len(puzzles),
        "per_100_games": round(100 * len(puzzles) / report.games, 2) if report.games else None,
        "kinds": report.kinds,
        "candidates": report.candidates,
        "duplicates_merged": report.duplicates_merged,
        "dropped": report.dropped,
        "engine_failures": report.engine_failures,
        "non_mating_one_movers": one_movers(puzzles),
        "below_plus_2_without_mate": below_advantage(puzzles),
        "recheck_nodes": rules.nodes * args.recheck,
        "rechecked": len(rechecked) if args.recheck else 0,
        "recheck_passed": passed,
        "recheck_failed": failed,
        "set_puzzles": len(set_ids),
        "set_recheck_failed": [puzzle_id for puzzle_id in failed if puzzle_id in set_ids],
        **spread(report),
        "seconds": round(seconds, 1),
    }
    if rules.name == "lichess":
        result["lichess_starts"] = lichess_starts(data)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--standards", default=",".join(STANDARDS))
    parser.add_argument("--lichess-nodes", type=int, default=None, help="the lichess standard's budget (say so)")
    parser.add_argument("--recheck", type=int, default=4, help="re-verify at this many times the nodes (0: not)")
    parser.add_argument("--recheck-kinds", default="all", help="kinds rechecked: punish,set,defend or all")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--engine", default="stockfish")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="beside a standard that searches narrow passes again, the same standard without (confirm_band 0)",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.standards.split(","):
        rules = standard_of(name, nodes=args.lichess_nodes if name == "lichess" else None)
        variants = [("as-is", rules)]
        if args.baseline and rules.confirm_band > 0:
            variants.insert(0, ("no-confirm", replace(rules, confirm_band=0.0)))
        for data, (variant, chosen) in itertools.product(args.data, variants):
            result = measure(data, args.out, chosen, variant, args)
            results.append(result)
            print(json.dumps(result, sort_keys=True), flush=True)
            (args.out / "yield.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
