"""What each move of a puzzle is, in our own words (no untrusted text): shared by the PGN comments
and the HTML book's captions."""

from __future__ import annotations

import chess
import chess.engine

from pipeline.outputs.puzzles.records import Puzzle, SolverCheck
from search.values import format_percent, is_mate_score


def format_score(score: chess.engine.Score | None) -> str:
    """`+1.25` (pawns) or `#3` / `#-2`, from the score's side."""
    if score is None:
        return "none"
    mate = score.mate()
    if mate is not None:
        return f"#{mate}"
    cp = score.score()
    assert cp is not None
    return f"{cp / 100:+.2f}"


def verdict(check: SolverCheck) -> str:
    if check.second is None:
        return f"only legal move, {format_score(check.best)}"
    return f"only move: {format_score(check.best)}, next best {format_score(check.second)}"


def practical_words(p: Puzzle) -> str:
    """How a practical setting move passed: its trap chance against the next safe move's."""
    assert p.practical is not None
    runner = f" ({p.practical.runner_up_move})" if p.practical.runner_up_move else ""
    return (
        f"sets the likeliest trap: a {format_percent(p.practical.chance)} chance the opponent falls into one, "
        f"next safe move {format_percent(p.practical.runner_up)}{runner}; gives up {p.practical.loss / 100:.2f} pawns"
    )


def trap_reply_words(p: Puzzle) -> str:
    """The set puzzle's trap reply with what the miner found it loses: pawns, or the mate it allows
    (the mined dip of a mate is a marker near 1,000 pawns, never shown)."""
    reply = "the trap reply" if p.practical_trap else "the reply"
    if is_mate_score(p.dip):
        return f"{reply}: it allows a forced mate"
    return f"{reply}: it gives up {p.dip / 100:.2f} pawns"


def role(p: Puzzle, index: int) -> str:
    """What move `index` of the puzzle is, in words. The opponent's mistake is "the trap" only
    where the practical judge named it a trap candidate (the judge everything else reports)."""
    if index == 0:
        if p.kind == "set":
            return "the opponent's move"
        return "the trap" if p.practical_trap else "the opponent's mistake"
    if p.kind == "set" and index == 2:
        return trap_reply_words(p)
    if p.kind == "set" and index == 1 and p.set_rule == "practical" and p.practical is not None:
        return practical_words(p)
    check = next((c for c in p.checks if c.index == index), None)
    return verdict(check) if check else "reply"


def colour_names(p: Puzzle) -> tuple[str, str]:
    """(opponent, solver) colour names: the opponent moves first in the Lichess format."""
    board = chess.Board(p.fen)
    colour = {chess.WHITE: "White", chess.BLACK: "Black"}
    return colour[board.turn], colour[not board.turn]


def task(p: Puzzle) -> str:
    """The solver's task in a few words (the book's heading)."""
    mistake = "the trap" if p.practical_trap else "the mistake"
    if p.kind == "punish":
        return f"punish {mistake}"
    if p.kind == "defend":
        return f"two pawns down: use {mistake} to get back to level"
    if p.set_rule == "practical":
        return "set the likeliest trap (a safe move)"
    return "set a trap" if p.practical_trap else "find the move, then punish the reply"
