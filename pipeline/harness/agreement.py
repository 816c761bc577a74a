"""How two analyses of the same positions agree: the reply classes of two searches (an adaptive
and a naive one, or a cheaper and a deeper one), with engine noise near the thresholds exempt.

The agreement test of the UCI backend and the benchmarks use it; so does the judge harness's
comparison with a deeper reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chess
import chess.pgn

from search.analysis import Response, ResponseAnalysis
from search.settings import DiffiMaxSettings

# The benchmark file of the shared data (read in place).
GAMES = Path(__file__).resolve().parents[3] / "shared" / "data" / "games" / "lichess_100.pgn"


def sample_positions(count: int = 50, path: Path = GAMES) -> list[chess.Board]:
    """Deterministic mining roots: game i (of those with >= 12 half-moves) after ply
    8 + (13 i mod min(40, moves - 9)), skipping finished positions; boards keep their move stack."""
    boards: list[chess.Board] = []
    index = 0
    with open(path, encoding="utf-8") as handle:
        while len(boards) < count:
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            moves = list(game.mainline_moves())
            if len(moves) < 12:
                continue
            ply = 8 + (13 * index) % min(40, len(moves) - 9)
            index += 1
            board = game.board()
            for move in moves[:ply]:
                board.push(move)
            if not board.is_game_over():
                boards.append(board)
    return boards


def response_class(response: Response) -> str:
    """Where an alternative falls: below T, trap (T <= dip <= R), or beyond R."""
    if response.trap:
        return "trap"
    return "below-T" if response.reasonable else "beyond-R"


def disagreements(
    naive: ResponseAnalysis, adaptive: ResponseAnalysis, settings: DiffiMaxSettings, tolerance: int
) -> dict[str, Any]:
    """Alternatives (in both analyses) whose class differs. Engine noise moves every value, v1
    included, and a v1 that moves shifts every dip: an alternative whose naive dip lies within
    `tolerance` + |v1 difference| cp of T or R is exempt (noise decides its side)."""
    values = {r.move: r.value for r in naive.responses}
    adaptive_by_move = {r.move: r for r in adaptive.responses}
    shift = abs(adaptive.best_value - naive.best_value)
    band = tolerance + shift
    compared = 0
    exempt: set[str] = set()
    mismatched: set[str] = set()
    mismatches: list[str] = []
    for r in naive.responses:
        other = adaptive_by_move[r.move]
        if r.alternative_rank is None or other.alternative_rank is None:
            continue  # the best response in either analysis (or excluded)
        if min(abs(r.dip - settings.trap_cp), abs(r.dip - settings.reasonable_cp)) <= band:
            exempt.add(r.move)
            continue
        compared += 1
        if response_class(r) != response_class(other):
            mismatched.add(r.move)
            mismatches.append(
                f"{r.move}: naive dip {r.dip} ({response_class(r)}), adaptive dip {other.dip}"
                f" ({response_class(other)}), v1 {naive.best_value} / {adaptive.best_value}"
            )
    return {
        "best_swapped": naive.best != adaptive.best,
        "best_gap": values[adaptive.best] - values[naive.best],
        "shift": shift,
        "compared": compared,
        "exempt": len(exempt),
        "exempt_moves": exempt,
        "mismatched_moves": mismatched,
        "mismatches": mismatches,
    }
