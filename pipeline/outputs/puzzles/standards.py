"""The verification standards a puzzle can meet: what `--standard` names.

Both build a puzzle's line the way lichess-puzzler's generator (`generator.py`, version 50) does:
the mined refutation as far as the engine confirms it, then the engine's own line (its best reply,
the solver's best move) for as long as every solver move stays the only good one; a final
only-legal move is dropped. Both publish only real puzzles: a line without mate needs at least two
solver moves and must leave the solver at least ADVANTAGE_CP ahead (a defensive puzzle, asked for
by name, instead escapes from BEHIND_CP to LEVEL_CP or better), and a first solver move that only
wins back what the opponent's move just took makes no puzzle unless the line wins more.

`default` is this project's: Lichess's *blunder* margin (0.3 win chances) at 500,000 nodes (a
solver move that passes by less than CONFIRM_BAND is searched again at twice the nodes, and the
deeper search decides), one puzzle per moment of a game and at most --per-game of one game, and set
puzzles whose setting move is either the only good move or the clear practical best
(`setting_move.py`). `lichess` is lichess-puzzler's:
margin 0.7 at its node budget (25,000,000 per MultiPV-2 search), several mates in one allowed when
the best non-mating move keeps at most 0.6, every solver move of a line without mate still >= 200
cp, and at most one puzzle per game; its set puzzles need the only-move rule (and nothing is
searched again: lichess-puzzler does not).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pipeline.outputs.puzzles.records import PuzzleError, SetRule

DEFAULT_MARGIN = 0.3  # win chances on [-1, 1] best must beat second best by (lila: a 0.3 drop is a blunder)
DEFAULT_NODES = 500_000  # Stockfish nodes per MultiPV-2 search (~0.5 s, depth ~19 on a 2020s core)
LICHESS_MARGIN = 0.7  # lichess-puzzler's is_valid_attack: win(best) > win(second) + 0.7
LICHESS_NODES = 25_000_000  # lichess-puzzler's pair_limit (with depth 50 and 30 s, whichever first)
LICHESS_WINNING_CP = 200  # lichess-puzzler's cook_advantage: "not winning enough" below this
MATE_IN_ONE_SECOND_MAX = 0.6  # puzzler: a mate in one is unique if the best non-mate is at most this
ADVANTAGE_CP = 200  # a line without mate leaves the solver at least this far ahead (Lichess's `advantage`)
BEHIND_CP = -200  # a defensive puzzle's solver is at least this far behind before the opponent's move
LEVEL_CP = -50  # ... and ends no worse than this: level (half a pawn is no real edge)
MIN_SOLVER_MOVES = 2  # a line without mate needs this many solver moves (no one-movers, as Lichess)
MAX_SOLVER_MOVES = 10  # the engine extends a line to at most this many solver moves
CONFIRM_BAND = 0.1  # default: a solver move that passes the margin by less than this is searched again ...
CONFIRM_NODES_FACTOR = 2  # ... at this many times the nodes, and the deeper search decides


@dataclass(frozen=True)
class Standard:
    """What a solver move must pass, and what a puzzle must be, to be written."""

    name: str
    margin: float
    """Win chances on [-1, 1] the best move must beat the second best by."""
    nodes: int
    """Engine nodes per MultiPV-2 search."""
    several_mates_in_one: bool = False
    """A solver move that mates in one passes where other moves mate too, if the best non-mating
    move keeps at most MATE_IN_ONE_SECOND_MAX (Lichess accepts any mate as the last move)."""
    one_per_game: bool = False
    """At most one puzzle per source game (the first in the evidence order)."""
    winning_cp: int | None = None
    """Every solver move of a line without mate keeps at least this (solver's view)."""
    set_rules: tuple[SetRule, ...] = ("only",)
    """How a set puzzle's setting move may pass (`setting_move.py` for `practical`)."""
    defence: bool = True
    """Defensive puzzles (`--kind defend`) can meet it (lichess-puzzler has none)."""
    confirm_band: float = 0.0
    """A solver move that passes the only-move rule by less than this (win chances above the
    margin) is searched again at CONFIRM_NODES_FACTOR times the nodes, and the deeper search
    decides: a gap that narrows with depth made puzzles that failed at 4x the nodes. 0: never."""


STANDARDS: dict[str, Standard] = {
    "default": Standard(
        "default", DEFAULT_MARGIN, DEFAULT_NODES, set_rules=("only", "practical"), confirm_band=CONFIRM_BAND
    ),
    "lichess": Standard(
        "lichess",
        LICHESS_MARGIN,
        LICHESS_NODES,
        several_mates_in_one=True,
        one_per_game=True,
        winning_cp=LICHESS_WINNING_CP,
        defence=False,
    ),
}


def standard_of(name: str | Standard, *, margin: float | None = None, nodes: int | None = None) -> Standard:
    """The named standard (or the one given), with its margin or node budget overridden where
    given (a lighter `lichess` run keeps every rule but the budget: say so when you report it)."""
    chosen = name if isinstance(name, Standard) else STANDARDS.get(name.strip().lower())
    if chosen is None:
        raise PuzzleError(f"invalid standard {name!r}: expected {' or '.join(STANDARDS)}")
    if margin is not None:
        if not 0 < margin < 2:
            raise PuzzleError(f"invalid margin {margin!r}: expected win chances in (0, 2)")
        chosen = replace(chosen, margin=margin)
    if nodes is not None:
        if nodes < 1:
            raise PuzzleError(f"invalid nodes {nodes!r}: expected at least 1")
        chosen = replace(chosen, nodes=nodes)
    return chosen
