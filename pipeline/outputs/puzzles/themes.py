"""The theme tagger: `cook(puzzle) -> tags` in Lichess's vocabulary, pure (no engine, no I/O), in
the style of lichess-puzzler's `tagger/cook.py` (whose code is AGPL and is not copied: the rules
are re-implemented in `tactics.py` and `mates.py` from what they tag).

Tags it gives: phases (`opening`, `middlegame`, `endgame`), lengths (`oneMove`, `short`, `long`,
`veryLong`), outcomes (`mate`, `mateIn1`..`mateIn5`, `crushing`, `advantage`, `equality`), the
tactics of `tactics.py` and the named mates of `mates.py`; `THEMES` lists them. Left out: Lichess's
`zugzwang` (its tagger asks an engine), `overloading` (its tagger never sets it), the endgame kinds
(`rookEndgame`, ...), and the tags from the game rather than the puzzle (`master`,
`masterVsMaster`, `superGM`, `long`/`short` games).
"""

from __future__ import annotations

from collections.abc import Callable

import chess

from pipeline.outputs.puzzles import mates, tactics
from pipeline.outputs.puzzles.line import Line, PuzzleLine

CRUSHING_CP = 600  # Lichess's outcome themes on the final evaluation, solver's view
ADVANTAGE_CP = 200
ENDGAME_PIECES = 6  # Lichess's divider: at most this many queens, rooks, bishops and knights is an endgame
MIDDLEGAME_PIECES = 10  # ... at most this many, a sparse back rank or mixed armies end the opening
MIXEDNESS_MIDDLEGAME = 150

# Tactics in the order Lichess's tagger tests them (the order of the tags does not matter).
TACTICS: tuple[tuple[str, Callable[[Line], bool]], ...] = (
    ("attraction", tactics.attraction),
    ("deflection", tactics.deflection),
    ("advancedPawn", lambda line: any(line.is_advanced_pawn_move(i, very=True) for i in line.solver_indices)),
    ("doubleCheck", tactics.double_check),
    ("quietMove", tactics.quiet_move),
    ("defensiveMove", tactics.defensive_move),
    ("sacrifice", tactics.sacrifice),
    ("xRayAttack", tactics.x_ray),
    ("fork", tactics.fork),
    ("hangingPiece", tactics.hanging_piece),
    ("trappedPiece", tactics.trapped_piece),
    ("discoveredAttack", tactics.discovered_attack),
    ("exposedKing", tactics.exposed_king),
    ("skewer", tactics.skewer),
    ("interference", tactics.interference),
    ("intermezzo", tactics.intermezzo),
    ("pin", tactics.pin),
    ("attackingF2F7", tactics.attacking_f2_f7),
    ("clearance", tactics.clearance),
    ("enPassant", tactics.en_passant),
    ("castling", lambda line: any(line.is_castling(i) for i in line.solver_indices)),
    ("promotion", lambda line: any(line.moves[i].promotion for i in line.solver_indices)),
    ("underPromotion", tactics.under_promotion),
    ("capturingDefender", tactics.capturing_defender),
)
NAMED_MATES = (
    "smotheredMate",
    "backRankMate",
    "anastasiaMate",
    "hookMate",
    "arabianMate",
    "bodenMate",
    "doubleBishopMate",
    "dovetailMate",
)
THEMES: tuple[str, ...] = (
    "opening",
    "middlegame",
    "endgame",
    "oneMove",
    "short",
    "long",
    "veryLong",
    "mate",
    *(f"mateIn{n}" for n in range(1, 6)),
    "crushing",
    "advantage",
    "equality",
    *(name for name, _ in TACTICS),
    "kingsideAttack",
    "queensideAttack",
    *NAMED_MATES,
)


def cook(puzzle: PuzzleLine) -> tuple[str, ...]:
    """The puzzle's themes, sorted. Raises `LineError` for a FEN or move that cannot be replayed."""
    line = Line(puzzle)
    tags = [phase(line.before(1), line.before(0).fullmove_number), length_theme(len(line))]
    tags += outcome_themes(line)
    tags += [name for name, test in TACTICS if test(line)]
    if "backRankMate" not in tags and "fork" not in tags:
        if tactics.side_attack(line, 7, (6, 7), 20):
            tags.append("kingsideAttack")
        elif tactics.side_attack(line, 0, (0, 1, 2), 18):
            tags.append("queensideAttack")
    return tuple(sorted(set(tags)))


def length_theme(moves: int) -> str:
    """Lichess's length theme from the number of moves in `Moves` (the opponent's one included)."""
    return "oneMove" if moves == 2 else "short" if moves == 4 else "veryLong" if moves >= 8 else "long"


def outcome_themes(line: Line) -> list[str]:
    """`mate` and `mateInN` (N solver moves, 5 and more: `mateIn5`) with the mate's name, else the
    outcome of the final evaluation. Without one (a CSV row has none) no outcome is guessed: the
    material won says too little (measured: ~0.6 precision for `crushing` and `advantage`)."""
    if line.mates:
        named = mates.named_mate(line)
        return ["mate", f"mateIn{min(5, len(line) // 2)}", *([named] if named else [])]
    cp = line.puzzle.cp
    if cp is None:
        return []
    return ["crushing" if cp > CRUSHING_CP else "advantage" if cp > ADVANTAGE_CP else "equality"]


def phase(board: chess.Board, fullmove: int) -> str:
    """Lichess's game phase at the puzzle's position (its divider on one board): an endgame with
    few pieces left; the opening until pieces are traded, a back rank empties or the armies mix."""
    pieces = sum(
        len(board.pieces(kind, color))
        for kind in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
        for color in chess.COLORS
    )
    if pieces <= ENDGAME_PIECES:
        return "endgame"
    if pieces <= MIDDLEGAME_PIECES or _back_rank_sparse(board) or mixedness(board) > MIXEDNESS_MIDDLEGAME:
        return "middlegame"
    return "opening"


def _back_rank_sparse(board: chess.Board) -> bool:
    white = chess.popcount(board.occupied_co[chess.WHITE] & chess.BB_RANK_1)
    black = chess.popcount(board.occupied_co[chess.BLACK] & chess.BB_RANK_8)
    return white < 4 or black < 4


def _region_score(y: int, white: int, black: int) -> int:
    """Lichess's divider: how mixed a 2x2 region with `white` and `black` pieces is, at height y (1..7)."""
    table: dict[tuple[int, int], int] = {
        (0, 0): 0,
        (1, 0): 1 + (8 - y),
        (2, 0): 2 + (y - 2) if y > 2 else 0,
        (3, 0): 3 + (y - 1) if y > 1 else 0,
        (4, 0): 3 + (y - 1) if y > 1 else 0,
        (0, 1): 1 + y,
        (1, 1): 5 + abs(3 - y),
        (2, 1): 4 + y,
        (3, 1): 5 + y,
        (0, 2): 2 + (6 - y) if y < 6 else 0,
        (1, 2): 4 + (6 - y),
        (2, 2): 7,
        (0, 3): 3 + (7 - y) if y < 7 else 0,
        (1, 3): 5 + (6 - y),
        (0, 4): 3 + (7 - y) if y < 7 else 0,
    }
    return table.get((white, black), 0)


def mixedness(board: chess.Board) -> int:
    """Lichess's divider's mixedness: the sum of `_region_score` over every 2x2 region."""
    total = 0
    for rank in range(7):
        for file in range(7):
            white = black = 0
            for dy in (0, 1):
                for dx in (0, 1):
                    piece = board.piece_at(chess.square(file + dx, rank + dy))
                    if piece is not None:
                        white += piece.color == chess.WHITE
                        black += piece.color == chess.BLACK
            total += _region_score(rank + 1, white, black)
    return total
