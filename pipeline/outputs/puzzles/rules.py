"""Judging a puzzle line (pure: the engine is a callable passed in): win chances, the only-move
rule, and `check_candidate`, which replays one candidate, verifies its mined refutation, extends it
with the engine's own line and decides whether it is a puzzle under a `Standard`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import chess
import chess.engine

from pipeline.engines.process import EngineError
from pipeline.engines.uci import line_value
from pipeline.outputs.puzzles.records import (
    Checked,
    DropReason,
    MultiPvLine,
    Outcome,
    PracticalCheck,
    SetRule,
    SolverCheck,
)
from pipeline.outputs.puzzles.setting_move import SAFETY_CP, SETTING_BAND_CP
from pipeline.outputs.puzzles.standards import (
    ADVANTAGE_CP,
    BEHIND_CP,
    LEVEL_CP,
    MATE_IN_ONE_SECOND_MAX,
    MAX_SOLVER_MOVES,
    MIN_SOLVER_MOVES,
    Standard,
)
from search import backend
from search.values import win_chances


class Analyse(Protocol):
    """The verifier's only view of an engine: the best `lines` lines at a position, best first;
    among `root_moves` only, when given (UCI `go searchmoves`)."""

    def __call__(
        self, board: chess.Board, lines: int, root_moves: Sequence[chess.Move] | None = None
    ) -> Sequence[MultiPvLine]: ...


# The practical rule for a setting move (`setting_move.py`): the board with the setter to move and the
# setting move; its verdict, or None when the move is not the clear practical best.
JudgeSetting = Callable[[chess.Board, chess.Move], PracticalCheck | None]


def score_win_chances(score: chess.engine.Score) -> float:
    """Lichess's win chances on [-1, 1] (`search.values.win_chances`) of an engine score, for the
    side the score belongs to; a mate is +-1."""
    return win_chances(line_value(chess.engine.PovScore(score, chess.WHITE), chess.WHITE, 0))


def is_only_move(best: chess.engine.Score, second: chess.engine.Score | None, margin: float) -> bool:
    """Lichess puzzler's `is_valid_attack`: the best move is the only good one.

    Exact rules: no second move; or win chances of best minus second > `margin`; or the best is a
    mate in one, the second is not, and the second's win chances are at most MATE_IN_ONE_SECOND_MAX.
    Two mates in one, or two mates of any length, are not unique (but see `several_mates_pass`).
    """
    if second is None:
        return True
    if best.mate() == 1 and second.mate() != 1 and score_win_chances(second) <= MATE_IN_ONE_SECOND_MAX:
        return True
    return score_win_chances(best) - score_win_chances(second) > margin


def passes_narrowly(lines: Sequence[MultiPvLine], standard: Standard) -> bool:
    """The best line passes the only-move rule at the standard's margin but not at the margin
    plus its `confirm_band`: a verdict a deeper search may turn."""
    if len(lines) < 2:
        return False
    best, second = lines[0].score, lines[1].score
    return is_only_move(best, second, standard.margin) and not is_only_move(best, second, clear_margin(standard))


def clear_margin(standard: Standard) -> float:
    """The margin a solver move must clear to be written: the standard's margin plus its
    `confirm_band` (a written puzzle is then held to the margin alone, `recheck`, on any budget)."""
    return standard.margin + standard.confirm_band


def clears_outcome(score: chess.engine.Score, floor_cp: int, band: float) -> bool:
    """Does a line's final score (the solver's view) clear `floor_cp` (ADVANTAGE_CP, or LEVEL_CP
    for a defensive line) by `band` win chances? A mate does."""
    if score.mate() is not None:
        return (score.mate() or 0) > 0
    return score_win_chances(score) >= score_win_chances(chess.engine.Cp(floor_cp)) + band


def setting_band_cp(standard: Standard) -> int:
    """What a practical setting move must stay within SAFETY_CP by to be written (centipawns):
    SETTING_BAND_CP under a standard that searches narrow verdicts again (`confirm_band`), else 0."""
    return SETTING_BAND_CP if standard.confirm_band > 0 else 0


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
    return not others or score_win_chances(others[0].score) <= MATE_IN_ONE_SECOND_MAX


def material_pawns(board: chess.Board, color: chess.Color) -> int:
    """Material balance for `color` in pawns (1, 3, 3, 5, 9)."""
    return backend.material(board, color) // 100


def regains_only(fen: str, moves: Sequence[str]) -> bool:
    """Does the line's first solver move only win back what the opponent's move just took?

    True when `moves[0]` (the opponent's) captures, `moves[1]` (the solver's first) captures too,
    and the line neither mates nor leaves the solver with a better material balance than before
    `moves[0]`: a recapture, not a puzzle, unless the line wins more."""
    board = chess.Board(fen)
    solver = not board.turn
    before = material_pawns(board, solver)
    first, reply = chess.Move.from_uci(moves[0]), chess.Move.from_uci(moves[1])
    if not board.is_capture(first):
        return False
    board.push(first)
    if not board.is_capture(reply):
        return False
    for uci in moves[1:]:
        board.push_uci(uci)
    return not board.is_checkmate() and material_pawns(board, solver) <= before


def cp_of(score: chess.engine.Score) -> int:
    """A score as one number of centipawns, by the engines' one conversion (`line_value`: a mate is
    +-MATE less its distance in plies)."""
    return line_value(chess.engine.PovScore(score, chess.WHITE), chess.WHITE, 0)


def _parse(fen: str, moves: Sequence[str], fixed: int) -> list[chess.Move] | DropReason:
    """The candidate's moves, legal, cut at the end of the game; or why they cannot be a puzzle."""
    try:
        parsed = [chess.Move.from_uci(move) for move in moves]
    except chess.InvalidMoveError:
        return "illegal"
    board = chess.Board(fen)
    kept = []
    for move in parsed:
        if not board.is_legal(move):
            return "illegal"
        board.push(move)
        kept.append(move)
        if board.is_game_over():
            break
    if len(kept) <= fixed:
        return "illegal" if len(kept) < fixed else "empty_line"
    return kept


@dataclass
class _Walk:
    """A line being verified: the moves kept, the verdicts at the solver's moves, where it left the
    mined line, and the last solver move's principal variation (its second move is the reply the
    engine expects)."""

    board: chess.Board
    moves: list[chess.Move] = field(default_factory=list)
    checks: list[SolverCheck] = field(default_factory=list)
    trimmed: bool = False
    extended: int = 0
    pv: tuple[chess.Move, ...] = ()
    set_rule: SetRule | None = None
    practical: PracticalCheck | None = None
    deferred: tuple[chess.Board, chess.Move] | None = None
    """A setting move left to the practical rule, judged once the rest of the line stands (the
    rule costs a judging of every safe move; most lines fail before it would matter)."""
    setting_loss: int | None = None
    """What a practical setting move gives up against the engine's best, centipawns, at the
    verification budget (the practical rule's own figure is at the mining budget)."""

    def play(self, move: chess.Move) -> None:
        self.board.push(move)
        self.moves.append(move)


@dataclass(frozen=True)
class _Rules:
    standard: Standard
    analyse: Analyse
    fixed: int
    judge_setting: JudgeSetting | None
    defending: bool
    extend: bool
    confirm: Analyse | None


def check_candidate(
    fen: str,
    moves: Sequence[str],
    fixed: int,
    analyse: Analyse,
    standard: Standard,
    judge_setting: JudgeSetting | None = None,
    *,
    defence_from: int | None = None,
    extend: bool = True,
    confirm: Analyse | None = None,
) -> Checked | DropReason:
    """Replay and verify one candidate under `standard`; the verified line or why it was dropped.

    Solver moves are the odd indices of the Lichess move list. Those at indices <= `fixed` (the
    first refutation move, and for set puzzles the setting move) must pass the only-move rule or
    the candidate is dropped. After them the mined refutation is followed as far as the engine
    agrees (each solver move its best by the margin, each reply the one it expects); where the
    engine prefers another move, or the mined line ends, the engine's own line goes on (its
    expected reply, then its best move) while the solver's move stays the only good one and keeps
    the solver ADVANTAGE_CP ahead (or, defending, at any score), up to MAX_SOLVER_MOVES
    (`extend=False`: the mined moves only). A final only-legal solver move is dropped. A set
    puzzle's setting move (index 1 when `fixed` is 3) passes by the only-move rule or, where the
    standard allows it and `judge_setting` is given, by the practical rule, which is applied last,
    to a line that passes everything else (`not_practical` when it fails).

    Then the puzzle rules: a line without mate needs MIN_SOLVER_MOVES solver moves (`too_short`)
    and must end ADVANTAGE_CP ahead, or, when `defence_from` (the solver's value before the
    opponent's move) is at most BEHIND_CP, at LEVEL_CP or better (`not_winning`); the lichess
    standard also wants every solver move at `winning_cp`; a first solver move that only wins
    back what the opponent's move took needs a line that wins more (`recapture`).

    Under a standard with a `confirm_band` (issue 44) every verdict must clear its threshold by a
    band to be written, so that a recheck on another budget (`recheck`, at the bare thresholds)
    does not turn it: a solver move the margin plus the band (`clear_margin`), the line's end its
    floor plus the band in win chances (`clears_outcome`, `_cut_unclear_end`), a practical setting
    move SAFETY_CP less SETTING_BAND_CP. `confirm` is the deeper search: a verdict that passes the
    threshold but not the band is searched again on it, and must clear the band there.
    """
    full = _parse(fen, moves, fixed)
    if isinstance(full, str):
        return full
    rules = _Rules(
        standard, analyse, fixed, judge_setting, defence_from is not None and defence_from <= BEHIND_CP, extend, confirm
    )
    walk = _Walk(chess.Board(fen))
    dropped = _walk_line(walk, full, rules)
    if dropped is not None:
        return dropped
    checked = _finish(fen, walk, rules)
    if isinstance(checked, str) or walk.deferred is None or rules.judge_setting is None:
        return checked
    practical = rules.judge_setting(*walk.deferred)
    if practical is None:
        return "not_practical"
    return replace(checked, practical=replace(practical, loss=walk.setting_loss or 0))


def _walk_line(walk: _Walk, mined: list[chess.Move], rules: _Rules) -> DropReason | None:
    """Verify the mined moves and extend them (see `check_candidate`); None when the line stands."""
    on_mined = True
    while not walk.board.is_game_over():
        index = len(walk.moves)
        if index > rules.fixed and walk.board.is_repetition(2):
            break  # a line that repeats a position proves nothing (lichess-puzzler cancels it)
        planned = mined[index] if on_mined and index < len(mined) else None
        if index % 2 == 0:  # the opponent's move: given (the first, a set puzzle's trap reply) or a reply
            if index == 0 or (rules.fixed == 3 and index == 2):
                assert planned is not None
                walk.play(planned)
                continue
            expected = walk.pv[1] if len(walk.pv) > 1 else rules.analyse(walk.board, 1)[0].move
            if planned != expected:
                if planned is not None:
                    walk.trimmed = True
                if not rules.extend:
                    break
                on_mined = False
            walk.play(expected)
            continue
        if planned is None and (not rules.extend or len(walk.checks) >= MAX_SOLVER_MOVES):
            break
        verdict = _solver_move(walk, planned, index, rules)
        if isinstance(verdict, str):
            return verdict
        if verdict is None:
            walk.trimmed = walk.trimmed or planned is not None
            break
        if verdict != planned:
            walk.trimmed = walk.trimmed or planned is not None
            on_mined = False
            walk.extended += 1
        walk.play(verdict)
    if len(walk.moves) % 2 == 1:  # the line ends on a solver move (an odd index): a trailing reply is dropped
        walk.moves.pop()
    return None


def _solver_move(walk: _Walk, planned: chess.Move | None, index: int, rules: _Rules) -> chess.Move | DropReason | None:
    """The solver's move at `index` if it passes (the planned one, or the engine's where the mined
    line ends or is not the only good move); a drop reason for a required move that fails; None
    where the line ends before it."""
    lines = rules.analyse(walk.board, 2)
    at_budget = lines  # the setting move's loss is measured in this search (no search again)
    if rules.confirm is not None and passes_narrowly(lines, rules.standard):
        lines = rules.confirm(walk.board, 2)
    best, second = lines[0], (lines[1] if len(lines) > 1 else None)
    unique = is_only_move(best.score, second.score if second else None, clear_margin(rules.standard))
    required = index <= rules.fixed
    move = planned if planned is not None and (required or best.move == planned or not unique) else best.move
    passed = best.move == move and unique
    if not passed and rules.standard.several_mates_in_one and best.score.mate() == 1:
        passed = several_mates_pass(walk.board, move, rules.analyse)
    if rules.fixed == 3 and index == 1:  # the setting move
        if passed:
            walk.set_rule = "only"
        elif "practical" in rules.standard.set_rules and rules.judge_setting is not None:
            band = setting_band_cp(rules.standard)
            safe = setting_within_margin(walk.board, move, rules.analyse, rules.confirm, at_budget, band)
            if safe is None:
                return "not_safe"
            score, walk.setting_loss = safe
            walk.deferred = (walk.board.copy(), move)  # judged last (`check_candidate`)
            walk.set_rule = "practical"
            walk.checks.append(SolverCheck(index, score, best.score))  # its own score; the best's beside it
            walk.pv = (move,)  # the next move is the given trap reply, not the engine's
            return move
    if not passed:
        if required:
            return "not_best" if best.move != move else "not_unique"
        return None
    own = best if best.move == move else MultiPvLine(move, chess.engine.Mate(1), (move,))
    if not required and not rules.defending and cp_of(own.score) < ADVANTAGE_CP:
        return None  # a later move that leaves the solver short of a clear advantage ends the line before it
    walk.checks.append(SolverCheck(index, own.score, second.score if second else None))
    walk.pv = own.pv
    return move


def setting_within_margin(
    board: chess.Board,
    move: chess.Move,
    analyse: Analyse,
    confirm: Analyse | None,
    known: Sequence[MultiPvLine] | None = None,
    band: int = 0,
) -> tuple[chess.engine.Score, int] | None:
    """A practical setting move's own score (the setter's view) and what it gives up against the
    engine's best, centipawns, if that is at most SAFETY_CP - `band` at the verification budget:
    the practical rule chose it at the mining budget, where "gives up 0.00" became a pawn at the
    verifier's. A move within SAFETY_CP but not within SAFETY_CP - `band` (a narrow pass) is
    searched again on `confirm` (the deeper search), which must find it within SAFETY_CP - `band`
    (without `confirm`, it is not safe). None: not safe. `band` 0 is the plain rule (`recheck`:
    within SAFETY_CP on one search). `known` is the MultiPV lines `analyse` already gave here
    (searched for when not given).

    Both values come from one search, as a coach reads them off an engine's MultiPV: the best
    move's and the setting move's lines of the same tree (the move is among the best two, or the
    search is restricted to the two). A loss taken as the best line's value less a second search
    from the position after the move compared two trees of different depths: on the issue's
    898d1c833a that difference read 28, 50, 100 and 82 cp at 0.5, 1, 2 and 8M nodes, where one
    search gave 0, 0, 17 and 0 (docs/results/puzzles.md)."""
    searches = [(analyse, known)] if confirm is None else [(analyse, known), (confirm, None)]
    for search, lines in searches:
        score, loss = setting_loss(board, move, search, lines)
        if loss <= SAFETY_CP - band:
            return score, loss
        if loss > SAFETY_CP:
            break  # not safe at all: not searched again
    return None


def setting_loss(
    board: chess.Board, move: chess.Move, analyse: Analyse, lines: Sequence[MultiPvLine] | None = None
) -> tuple[chess.engine.Score, int]:
    """The setting move's score and its loss against the best move (centipawns), from one search:
    `lines` (or a MultiPV 2 search) when the move is among them, else a search of the best move and
    this one alone."""
    lines = lines if lines is not None else analyse(board, 2)
    best = lines[0]
    compared = {line.move: line.score for line in lines}
    if move not in compared:
        compared = {line.move: line.score for line in analyse(board, 2, [best.move, move])}
    if move not in compared or best.move not in compared:
        raise EngineError(f"the engine did not value {move.uci()} beside {best.move.uci()} on FEN {board.fen()!r}")
    return compared[move], max(0, cp_of(compared[best.move]) - cp_of(compared[move]))


def final_recapture(fen: str, moves: Sequence[chess.Move], index: int) -> bool:
    """Is the solver's move at `index` a recapture on the square the opponent just captured on (a
    forced trade, no puzzle move to end on)?"""
    board = chess.Board(fen)
    for move in moves[: index - 1]:
        board.push(move)
    taken, retaken = moves[index - 1], moves[index]
    if not board.is_capture(taken):
        return False
    board.push(taken)
    return retaken.to_square == taken.to_square and board.is_capture(retaken)


def _finish(fen: str, walk: _Walk, rules: _Rules) -> Checked | DropReason:
    """The puzzle rules on the whole verified line (see `check_candidate`)."""
    full, checks = walk.moves, walk.checks
    practical_index = 1 if walk.set_rule == "practical" else None
    while True:
        while (
            len(checks) > 1
            and checks[-1].index > rules.fixed
            and (checks[-1].second is None or final_recapture(fen, full, checks[-1].index))
        ):
            cut = checks.pop().index  # a final only-legal move, or a final recapture, is no puzzle move
            del full[cut - 1 :]
            walk.trimmed = True
        if rules.standard.confirm_band <= 0 or not _cut_unclear_end(fen, walk, rules):
            break
    final = chess.Board(fen)
    for move in full:
        final.push(move)
    mate = final.is_checkmate()
    outcome: Outcome = "mate"
    if not mate:
        scored = [c for c in checks if c.index != practical_index]  # a practical setting move is judged by its chance
        if len(checks) < MIN_SOLVER_MOVES:
            return "too_short"
        end = checks[-1].best
        band = rules.standard.confirm_band
        if rules.standard.winning_cp is not None and any(cp_of(c.best) < rules.standard.winning_cp for c in scored):
            return "not_winning"
        if clears_outcome(end, ADVANTAGE_CP, band):
            outcome = "advantage"
        elif rules.defending and clears_outcome(end, LEVEL_CP, band):
            outcome = "defence"
        else:
            return "not_winning"
    ucis = tuple(m.uci() for m in full)
    if regains_only(fen, ucis):
        return "recapture"
    extended = min(walk.extended, len(checks))
    return Checked(ucis, tuple(checks), walk.trimmed, mate, walk.set_rule, walk.practical, outcome, extended)


def _ends_clear(score: chess.engine.Score, rules: _Rules, band: float) -> bool:
    return clears_outcome(score, ADVANTAGE_CP, band) or (rules.defending and clears_outcome(score, LEVEL_CP, band))


def _cut_unclear_end(fen: str, walk: _Walk, rules: _Rules) -> bool:
    """Under a standard with a `confirm_band`, a line's final score must clear its floor
    (ADVANTAGE_CP, or LEVEL_CP for a defensive line) by the band, as a solver move must clear the
    margin. A final score that reaches the floor but not by the band (a narrow pass) is searched
    again deeper (`confirm`): where the line's move is still the deeper search's best, the only
    good move by the clear margin, and its score clears the floor by the band, that search is
    recorded and the line stands. Otherwise a later solver move is cut, with the reply before it
    (True: judge the new end the same way); a required one stays, and the outcome rules drop the
    line (`not_winning`). A score below the floor, and a line that ends in mate, are left to the
    outcome rules."""
    full, checks = walk.moves, walk.checks
    if not checks:
        return False
    board = chess.Board(fen)
    for move in full:
        board.push(move)
    last = checks[-1]
    band = rules.standard.confirm_band
    if board.is_checkmate() or _ends_clear(last.best, rules, band) or not _ends_clear(last.best, rules, 0.0):
        return False
    if rules.confirm is not None:
        before = chess.Board(fen)
        for move in full[: last.index]:
            before.push(move)
        lines = rules.confirm(before, 2)
        best, second = lines[0], (lines[1].score if len(lines) > 1 else None)
        if (
            best.move == full[last.index]
            and is_only_move(best.score, second, clear_margin(rules.standard))
            and _ends_clear(best.score, rules, band)
        ):
            checks[-1] = SolverCheck(last.index, best.score, second)
            return False
    if last.index <= rules.fixed or len(checks) < 2:
        return False
    checks.pop()
    del full[last.index - 1 :]
    walk.trimmed = True
    return True


def recheck(
    fen: str,
    moves: Sequence[str],
    fixed: int,
    analyse: Analyse,
    standard: Standard,
    outcome: Outcome,
    practical_setting: bool = False,
) -> bool:
    """Does a written puzzle still pass on another engine budget? Every solver move of `moves`
    must be the engine's best by the margin (a practical setting move, judged by its trap chance,
    must give up at most SAFETY_CP against the best), and the line must still end as `outcome`
    said: in mate, ADVANTAGE_CP ahead, or (a defensive puzzle) at LEVEL_CP or better. The replies
    are the puzzle's own."""
    board = chess.Board(fen)
    last: chess.engine.Score | None = None
    for index, uci in enumerate(moves):
        move = chess.Move.from_uci(uci)
        if practical_setting and fixed == 3 and index == 1:
            if setting_within_margin(board, move, analyse, None) is None:
                return False
        elif index % 2 == 1:
            lines = analyse(board, 2)
            best, second = lines[0], (lines[1] if len(lines) > 1 else None)
            passed = best.move == move and is_only_move(best.score, second.score if second else None, standard.margin)
            if not passed and standard.several_mates_in_one and best.score.mate() == 1:
                passed = several_mates_pass(board, move, analyse)
            if not passed:
                return False
            last = best.score
        board.push(move)
    if board.is_checkmate():
        return True
    if outcome == "mate" or last is None:
        return False
    return cp_of(last) >= (LEVEL_CP if outcome == "defence" else ADVANTAGE_CP)
