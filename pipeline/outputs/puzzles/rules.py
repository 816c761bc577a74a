"""Judging a puzzle line (pure: the engine is a callable passed in): win chances, the only-move
rule, trimming a mined refutation, and `check_candidate`, which replays and verifies one candidate
under a `Standard`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import chess
import chess.engine

from pipeline.outputs.puzzles.records import Checked, DropReason, MultiPvLine, PracticalCheck, SetRule, SolverCheck
from pipeline.outputs.puzzles.standards import MATE_IN_ONE_SECOND_MAX, Standard
from search import backend
from search.judges import win_probability

# The verifier's only view of an engine: the best `lines` lines at a position, best first.
Analyse = Callable[[chess.Board, int], Sequence[MultiPvLine]]
# The practical rule for a setting move (`setting.py`): the board with the setter to move and the
# setting move; its verdict, or None when the move is not the clear practical best.
JudgeSetting = Callable[[chess.Board, chess.Move], PracticalCheck | None]


def win_chances(score: chess.engine.Score) -> float:
    """Lichess's win chances on [-1, 1] for the side the score belongs to; a mate is +-1."""
    mate = score.mate()
    if mate is not None:
        return 1.0 if mate > 0 else -1.0
    cp = score.score()
    assert cp is not None
    return 2.0 * win_probability(cp) - 1.0


def is_only_move(best: chess.engine.Score, second: chess.engine.Score | None, margin: float) -> bool:
    """Lichess puzzler's `is_valid_attack`: the best move is the only good one.

    Exact rules: no second move; or win chances of best minus second > `margin`; or the best is a
    mate in one, the second is not, and the second's win chances are at most MATE_IN_ONE_SECOND_MAX.
    Two mates in one, or two mates of any length, are not unique (but see `several_mates_pass`).
    """
    if second is None:
        return True
    if best.mate() == 1 and second.mate() != 1 and win_chances(second) <= MATE_IN_ONE_SECOND_MAX:
        return True
    return win_chances(best) - win_chances(second) > margin


def mates_in_one(board: chess.Board) -> list[chess.Move]:
    """The legal moves of `board` that checkmate."""
    mates = []
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            mates.append(move)
        board.pop()
    return mates


def several_mates_pass(board: chess.Board, move: chess.Move, analyse: Analyse) -> bool:
    """lichess-puzzler's `is_valid_mate_in_one` where several moves mate: `move` mates, and the
    best move that does not mate keeps at most MATE_IN_ONE_SECOND_MAX (one more MultiPV line than
    there are mates finds it)."""
    mates = mates_in_one(board)
    if move not in mates:
        return False
    if len(mates) == board.legal_moves.count():
        return True
    lines = analyse(board, len(mates) + 1)
    others = [line for line in lines if line.move not in mates]
    return not others or win_chances(others[0].score) <= MATE_IN_ONE_SECOND_MAX


def material(board: chess.Board, color: chess.Color) -> int:
    """Material balance for `color` in pawns (1, 3, 3, 5, 9)."""
    return backend.material(board, color) // 100


class IllegalLineError(ValueError):
    """A move of a puzzle line is not legal where it is played."""


def trim_line(board: chess.Board, line: Sequence[chess.Move]) -> tuple[chess.Move, ...]:
    """The solver's part of a refutation, ending where the solver's advantage is established.

    `board` has the solver to move; the solver plays line[0], line[2], ... The line stops after
    the first solver move that mates, or that captures (or promotes) when the line's next move is no
    capture and the solver is then ahead in material compared with `board`; else at the line's end.
    It always ends on a solver move (a trailing reply is dropped). Raises IllegalLineError.
    """
    solver = board.turn
    replay = board.copy(stack=False)
    start = material(replay, solver)
    kept: list[chess.Move] = []
    for index, move in enumerate(line):
        if not replay.is_legal(move):
            raise IllegalLineError(f"illegal move {move.uci()} in {replay.fen()!r}")
        solver_move = index % 2 == 0
        wins_material = replay.is_capture(move) or move.promotion is not None
        replay.push(move)
        kept.append(move)
        if replay.is_game_over():
            break
        if solver_move and wins_material and material(replay, solver) > start:
            following = line[index + 1] if index + 1 < len(line) else None
            if following is None or not replay.is_capture(following):
                break
    if len(kept) % 2 == 0:
        kept = kept[:-1]
    return tuple(kept)


def _parse_and_trim(fen: str, moves: Sequence[str], fixed: int) -> list[chess.Move] | DropReason:
    """The given moves and the trimmed refutation, or why the line cannot be a puzzle."""
    try:
        parsed = [chess.Move.from_uci(move) for move in moves]
    except chess.InvalidMoveError:
        return "illegal"
    board = chess.Board(fen)
    for move in parsed[:fixed]:
        if not board.is_legal(move):
            return "illegal"
        board.push(move)
    try:
        line = trim_line(board, parsed[fixed:])
    except IllegalLineError:
        return "illegal"
    if not line:
        return "empty_line"
    return [*parsed[:fixed], *line]


def check_candidate(
    fen: str,
    moves: Sequence[str],
    fixed: int,
    analyse: Analyse,
    standard: Standard,
    judge_setting: JudgeSetting | None = None,
) -> Checked | DropReason:
    """Replay and verify one candidate under `standard`; the trimmed, verified line or why it was dropped.

    Solver moves are the odd indices of the Lichess move list. Those at indices <= `fixed` (the
    first refutation move, and for set puzzles the setting move) must pass or the candidate is
    dropped; a later one that fails ends the line at the solver move before it. So does a reply
    the engine does not expect (its PV's second move), since the solver's next move answers it.
    A set puzzle's setting move (index 1 when `fixed` is 3) passes by the only-move rule, or, where
    the standard allows it and `judge_setting` is given, by the practical rule.
    """
    full = _parse_and_trim(fen, moves, fixed)
    if isinstance(full, str):
        return full
    replay = chess.Board(fen)
    checks: list[SolverCheck] = []
    trimmed = False
    set_rule: SetRule | None = None
    practical: PracticalCheck | None = None
    index = 0
    while index < len(full):
        move = full[index]
        if index % 2 == 1:
            lines = analyse(replay, 2)
            best, second = lines[0], (lines[1] if len(lines) > 1 else None)
            passed = best.move == move and is_only_move(best.score, second.score if second else None, standard.margin)
            if not passed and standard.several_mates_in_one and best.score.mate() == 1:
                passed = several_mates_pass(replay, move, analyse)
            if fixed == 3 and index == 1:  # the setting move
                if passed:
                    set_rule = "only"
                elif "practical" in standard.set_rules and judge_setting is not None:
                    practical = judge_setting(replay.copy(), move)
                    if practical is None:
                        return "not_practical"
                    passed, set_rule = True, "practical"
            if not passed:
                if index <= fixed:
                    return "not_best" if best.move != move else "not_unique"
                full, trimmed = full[: index - 1], True
                break
            own = best if best.move == move else MultiPvLine(move, chess.engine.Mate(1), (move,))
            checks.append(SolverCheck(index, own.score, second.score if second else None))
            reply = index + 1
            if reply < len(full) and reply > fixed and len(own.pv) > 1 and own.pv[1] != full[reply]:
                full, trimmed = full[:reply], True
                break
        replay.push(move)
        index += 1
    return _finish(fen, full, checks, trimmed, standard, set_rule, practical)


def _finish(
    fen: str,
    full: list[chess.Move],
    checks: list[SolverCheck],
    trimmed: bool,
    standard: Standard,
    set_rule: SetRule | None,
    practical: PracticalCheck | None,
) -> Checked | DropReason:
    """The standard's rules on the whole verified line (lichess: long enough, winning enough)."""
    final = chess.Board(fen)
    for move in full:
        final.push(move)
    mate = final.is_checkmate()
    if not mate:
        # The setting move of a practical set puzzle is judged by its trap chance, not its score.
        scored = [c for c in checks if not (set_rule == "practical" and c.index == 1)]
        if standard.drop_final_only_move:
            while scored and scored[-1].second is None:
                cut = scored.pop().index
                full, checks, trimmed = full[: cut - 1], checks[:-1], True
        if len(checks) < standard.min_solver_moves:
            return "too_short"
        if standard.winning_cp is not None:
            for check in scored:
                if (check.best.score(mate_score=100_000) or 0) < standard.winning_cp:
                    return "not_winning"
    if not checks:
        return "empty_line"
    return Checked(tuple(m.uci() for m in full), tuple(checks), trimmed, mate, set_rule, practical)
