"""`generate_puzzles`: the pure rules (win chances, only-move, trimming, escaping) without an engine,
then puzzles mined from real games and re-checked by a fresh Stockfish that shares no code with the
generator, the three output formats, hostile PGN headers, and the HTML book in a real browser; the
same output from one engine on the driver and from a pool of Ray actors, with and without a limit,
nothing left running after the command, and engines that cannot start or crash as one line.
"""

from __future__ import annotations

import csv
import dataclasses
import html.parser
import io
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest

from pipeline.common.sanitize import clean_text, pgn_value, safe_url, spreadsheet_safe
from pipeline.dataset.duck import connect
from pipeline.dataset.integrity import DatasetError
from pipeline.engines.process import EngineError, EngineStartError, resolve_engine
from pipeline.ingest.headers import GameFilter
from pipeline.outputs.puzzles import (
    BATCHES_PER_WORKER,
    FORMATS,
    LICHESS_COLUMNS,
    STANDARDS,
    VERIFY_BATCH,
    Analyse,
    Checked,
    EngineVerifier,
    GameInfo,
    MultiPvLine,
    PracticalCheck,
    Puzzle,
    PuzzleCandidate,
    PuzzleError,
    PuzzleReport,
    PuzzleRequest,
    SolverCheck,
    check_candidate,
    generate_puzzles,
    is_only_move,
    opening_tags,
    parse_formats,
    parse_kind,
    recheck,
    render_csv,
    render_html,
    render_pgn,
    score_win_chances,
    themes_for,
)
from pipeline.outputs.puzzles.rules import clear_margin, clears_outcome, final_recapture, regains_only, setting_loss
from pipeline.outputs.puzzles.setting_move import SAFETY_CP, SETTING_BAND_CP
from pipeline.outputs.puzzles.standards import ADVANTAGE_CP
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings
from search.values import format_win_loss
from tests.conftest import (
    CHROMIUM,
    GAMES,
    ROOT,
    STOCKFISH,
    needs_chromium,
    needs_stockfish,
    one_error_line,
    ray_chatter,
    require_data,
    require_stockfish,
)
from tests.fake_engines import DIES_ON_GO, ONLY_ON_THE_DRIVER, crashes_on, fake_engine
from tests.mining_helpers import mine
from tests.processes import assert_session_ends, session_processes
from tests.reading import mate_markers, two_scales_in_words

SAMPLE = GAMES / "lichess_100.pgn"
# Engine budget of the tests: per MultiPV-2 search, for the generator and the independent check.
TEST_NODES = 100_000
# The end-to-end runs' margin (`--margin`): the default standard's 0.3 is written only with a clear
# margin of 0.4 (issue 44), which none of this slice's lines has at 100k nodes (its two puzzles
# pass by 0.32 and 0.36); at 0.2 they are written with a clear margin of 0.3, and every rule but
# the margin's value is the default standard's. (50 games at plies 6-40 give three at 0.3, in ~7
# minutes instead of ~1.)
TEST_MARGIN = 0.2
# The first 25 games of lichess_100.pgn at plies 6-23, depth 2: at 100k nodes this slice gives
# punish puzzles (j1dkb5dw ply 18, mntamgdj ply 7, ...) and a set puzzle (fiv37vzi, root ply 21).
MINE_GAMES = 25
MINE_PLIES = (6, 23)
# The seed's dip judge alone, so that it is the dataset's primary judge, whose root candidates the
# puzzles read (schema 2). With tests.mining_helpers.MINING_JUDGES the primary judge is trappy,
# which names 2 root candidates of dip >= 1 pawn in this slice (the dip judge: 1,627), too few for
# puzzles of both kinds; and the dip judge alone mines the slice in half the time. Under the
# practical judge a setting move is rarely the setter's clear best (60 games: 55 set candidates,
# none verified).
PUZZLE_JUDGES = JudgeSettings(judges=frozenset({"dip"}))
DEFAULT = STANDARDS["default"]
DIFFIMAX = [sys.executable, "-m", "pipeline.cli"]

SCRIPT_NAME = "<script>alert(1)</script>"
FORMULA_NAME = "\",\"=cmd|' /C calc'!A0"
# Line breaks a PGN tag can carry (the reader splits lines on LF only), a backslash and quotes.
BROKEN_EVENT = 'Evil\rEvent\u2028next\x85line\x0bvt "quoted" back\\slash </textarea><img src=x onerror=alert(3)>'
HOSTILE_OPENING = '=HYPERLINK("http://evil.example/","click")'


# ---------------------------------------------------------------------------------------------
# Pure rules


def test_win_chances_follow_the_lichess_curve() -> None:
    assert score_win_chances(chess.engine.Cp(0)) == 0
    assert score_win_chances(chess.engine.Cp(300)) == pytest.approx(2 / (1 + math.exp(-0.00368208 * 300)) - 1)
    assert score_win_chances(chess.engine.Cp(-250)) == pytest.approx(-score_win_chances(chess.engine.Cp(250)))
    assert score_win_chances(chess.engine.Mate(3)) == 1 and score_win_chances(chess.engine.Mate(-2)) == -1
    assert score_win_chances(chess.engine.MateGiven) == 1  # the side the score belongs to has given mate


@pytest.mark.parametrize(
    ("best", "second", "margin", "expected"),
    [
        (chess.engine.Cp(300), None, 0.3, True),  # the only legal move
        (chess.engine.Cp(300), chess.engine.Cp(0), 0.3, True),  # 0.50 > 0.3
        (chess.engine.Cp(300), chess.engine.Cp(0), 0.7, False),  # the puzzler's own margin
        (chess.engine.Cp(150), chess.engine.Cp(0), 0.3, False),  # 0.27: two good moves
        (chess.engine.Cp(100), chess.engine.Cp(-100), 0.3, True),  # 0.36: equal vs losing a pawn
        (chess.engine.Mate(1), chess.engine.Cp(200), 0.7, True),  # mate in one, next best <= 0.6
        (chess.engine.Mate(1), chess.engine.Cp(600), 0.7, False),  # next best still wins (0.80)
        (chess.engine.Mate(1), chess.engine.Mate(1), 0.3, False),  # two mates in one
        (chess.engine.Mate(3), chess.engine.Mate(5), 0.3, False),  # two mates
        (chess.engine.Mate(4), chess.engine.Cp(100), 0.3, True),
    ],
)
def test_only_move_rule(
    best: chess.engine.Score, second: chess.engine.Score | None, margin: float, expected: bool
) -> None:
    assert is_only_move(best, second, margin) is expected


# After 1.e4 e5 2.Nf3 d6 3.Bc4 Bg4 4.Nc3 g6?: 5.Nxe5! (Legal's pattern): White to move.
LEGAL_FEN = "rn1qkbnr/ppp2p1p/3p2p1/4p3/2B1P1b1/2N2N2/PPPP1PPP/R1BQK2R w KQkq - 0 5"


def moves(*uci: str) -> list[chess.Move]:
    return [chess.Move.from_uci(m) for m in uci]


# Scripted engine lines per position (EPD): ("move reply ...", score for the side to move), best first.
Table = Mapping[str, Sequence[tuple[str, chess.engine.Score]]]


def scripted(table: Table) -> Analyse:
    """A stand-in engine: the lines for each position (by EPD), best first; PV = the move and,
    when given as 'move reply', the expected reply."""

    def analyse(
        board: chess.Board, lines: int = 2, root_moves: Sequence[chess.Move] | None = None
    ) -> list[MultiPvLine]:
        found = []
        for text, score in table[board.epd()]:
            pv = tuple(chess.Move.from_uci(m) for m in text.split())
            if root_moves is None or pv[0] in root_moves:
                found.append(MultiPvLine(pv[0], score, pv))
        return found

    return analyse


def epd_after(fen: str, *uci: str) -> str:
    board = chess.Board(fen)
    for move in uci:
        board.push_uci(move)
    return board.epd()


# Black to move plays 4...g6? (the trap), White answers 5.Nxe5.
BEFORE_TRAP = "rn1qkbnr/ppp2ppp/3p4/4p3/2B1P1b1/2N2N2/PPPP1PPP/R1BQK2R b KQkq - 5 4"


def test_check_candidate_verifies_the_mined_line_then_extends_it() -> None:
    cp = chess.engine.Cp
    after_trap = epd_after(BEFORE_TRAP, "g7g6")
    after_second = epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1")
    after_third = epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1", "c4f7", "e8e7")
    table = {
        after_trap: [("f3e5 g4d1", cp(400)), ("h2h3", cp(0))],
        after_second: [("c4f7 e8e7", cp(500)), ("c3d1", cp(-300))],
        after_third: [("c3d5", cp(650)), ("h2h3", cp(600))],  # two good moves: the line ends before them
    }
    # The mined refutation is one move (Nxe5); the engine's own line goes on while its move stays
    # the only good one: Bxd1 (the reply it expects), Bxf7+; after Ke7 two moves win, so it ends.
    checked = check_candidate(BEFORE_TRAP, ["g7g6", "f3e5"], 1, scripted(table), DEFAULT)
    assert not isinstance(checked, str)
    assert checked.moves == ("g7g6", "f3e5", "g4d1", "c4f7") and checked.extended == 1 and not checked.trimmed
    assert [c.index for c in checked.checks] == [1, 3] and checked.outcome == "advantage"
    # The mined line itself, as far as it goes: the trailing reply Ke7 is dropped.
    line = ["g7g6", "f3e5", "g4d1", "c4f7", "e8e7"]
    checked = check_candidate(BEFORE_TRAP, line, 1, scripted(table), DEFAULT)
    assert not isinstance(checked, str) and checked.moves == tuple(line[:4]) and checked.extended == 0
    # The engine prefers another move, or the second best is close: dropped.
    other = {after_trap: [("h2h3", cp(400)), ("f3e5", cp(0))]}
    assert check_candidate(BEFORE_TRAP, ["g7g6", "f3e5"], 1, scripted(other), DEFAULT) == "not_best"
    close = {after_trap: [("f3e5", cp(150)), ("h2h3", cp(0))]}
    assert check_candidate(BEFORE_TRAP, ["g7g6", "f3e5"], 1, scripted(close), DEFAULT) == "not_unique"
    # A one-mover (the second solver move is not the only good one) is no puzzle.
    single = {**table, after_second: [("c4f7 e8e7", cp(500)), ("c3d1", cp(450))]}
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(single), DEFAULT) == "too_short"
    # A reply the engine does not expect: the engine's line replaces the rest of the mined one.
    unexpected = {**table, after_trap: [("f3e5 g4d1", cp(400)), ("h2h3", cp(0))]}
    checked = check_candidate(BEFORE_TRAP, ["g7g6", "f3e5", "d6e5", "d1g4"], 1, scripted(unexpected), DEFAULT)
    assert not isinstance(checked, str) and checked.moves == ("g7g6", "f3e5", "g4d1", "c4f7") and checked.trimmed
    # A later move that leaves the solver short of two pawns ends the line before it.
    short = {**table, after_second: [("c4f7 e8e7", cp(150)), ("c3d1", cp(-400))]}
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(short), DEFAULT) == "too_short"
    # Illegal given moves, illegal or unparseable refutations, no refutation.
    assert check_candidate(BEFORE_TRAP, ["e2e4", "f3e5"], 1, scripted(table), DEFAULT) == "illegal"
    assert check_candidate(BEFORE_TRAP, ["g7g6", "e1e5"], 1, scripted(table), DEFAULT) == "illegal"
    assert check_candidate(BEFORE_TRAP, ["g7g6", "zz"], 1, scripted(table), DEFAULT) == "illegal"
    assert check_candidate(BEFORE_TRAP, ["g7g6"], 1, scripted(table), DEFAULT) == "empty_line"


def test_a_line_that_ends_level_is_a_defensive_puzzle_only_from_two_pawns_down() -> None:
    cp = chess.engine.Cp
    after_trap = epd_after(BEFORE_TRAP, "g7g6")
    after_second = epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1")
    after_third = epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1", "c4f7", "e8e7")
    table = {
        after_trap: [("f3e5 g4d1", cp(-20)), ("h2h3", cp(-400))],
        after_second: [("c4f7 e8e7", cp(10)), ("c3d1", cp(-350))],
        after_third: [("c3d5", cp(30)), ("h2h3", cp(20))],
    }
    line = ["g7g6", "f3e5"]
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(table), DEFAULT) == "too_short"
    checked = check_candidate(BEFORE_TRAP, line, 1, scripted(table), DEFAULT, defence_from=-250)
    assert not isinstance(checked, str) and checked.outcome == "defence" and len(checked.checks) == 2
    # Not two pawns down before the opponent's move: a level ending is no puzzle.
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(table), DEFAULT, defence_from=-150) == "too_short"
    lost = {**table, after_second: [("c4f7 e8e7", cp(-120)), ("c3d1", cp(-600))]}
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(lost), DEFAULT, defence_from=-250) == "not_winning"


def test_winning_back_what_was_just_taken_is_no_puzzle_unless_the_line_wins_more() -> None:
    fen = "4k3/8/8/3p4/4P3/2N5/8/4K3 b - - 0 1"  # ...dxe4 Nxe4: a pawn back, no more
    assert regains_only(fen, ["d5e4", "c3e4"])
    assert not regains_only(fen, ["e8d7", "e4d5"])  # the opponent's move took nothing
    queen = "3qk3/8/8/8/3P4/5N2/8/4K3 b - - 0 1"  # ...Qxd4 Nxd4: more back than was taken
    assert not regains_only(queen, ["d8d4", "f3d4"])


def test_a_puzzle_is_rechecked_on_its_own_moves() -> None:
    cp = chess.engine.Cp
    line = ("g7g6", "f3e5", "g4d1", "c4f7")
    table = {
        epd_after(BEFORE_TRAP, "g7g6"): [("f3e5 g4d1", cp(400)), ("h2h3", cp(0))],
        epd_after(BEFORE_TRAP, *line[:3]): [("c4f7 e8e7", cp(500)), ("c3d1", cp(-300))],
    }
    assert recheck(BEFORE_TRAP, line, 1, scripted(table), DEFAULT, "advantage")
    weaker = {**table, epd_after(BEFORE_TRAP, *line[:3]): [("c4f7 e8e7", cp(150)), ("c3d1", cp(-300))]}
    assert not recheck(BEFORE_TRAP, line, 1, scripted(weaker), DEFAULT, "advantage")
    assert recheck(BEFORE_TRAP, line, 1, scripted(weaker), DEFAULT, "defence")
    other = {**table, epd_after(BEFORE_TRAP, *line[:3]): [("c3d1", cp(500)), ("c4f7", cp(-300))]}
    assert not recheck(BEFORE_TRAP, line, 1, scripted(other), DEFAULT, "advantage")


def test_a_line_that_mates_is_tagged_mate() -> None:
    cp, mate = chess.engine.Cp, chess.engine.Mate
    line = ["g7g6", "f3e5", "g4d1", "c4f7", "e8e7", "c3d5"]
    table: Table = {
        epd_after(BEFORE_TRAP, "g7g6"): [("f3e5 g4d1", cp(400)), ("h2h3", cp(0))],
        epd_after(BEFORE_TRAP, *line[:3]): [("c4f7 e8e7", mate(2)), ("c3d1", cp(-300))],
        epd_after(BEFORE_TRAP, *line[:5]): [("c3d5", mate(1)), ("h2h3", cp(100))],
    }
    checked = check_candidate(BEFORE_TRAP, line, 1, scripted(table), DEFAULT)
    assert not isinstance(checked, str) and checked.mate and checked.moves == tuple(line)
    themes = themes_for("punish", checked, BEFORE_TRAP)
    assert {"diffimaxPunish", "diffimaxStandardDefault", "long", "mate", "mateIn3", "opening"} <= set(themes)
    assert list(themes) == sorted(themes)


def test_set_candidates_check_the_setting_move_and_skip_the_trap_reply() -> None:
    cp = chess.engine.Cp
    # 4.Nc3 (opponent's move, given) ...; here: 3...Bg4 given, 4.Nc3 the setting move, g6 the trap.
    fen = "rnbqkbnr/ppp2ppp/3p4/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 1 3"
    line = ["c8g4", "b1c3", "g7g6", "f3e5"]
    table = {
        epd_after(fen, "c8g4"): [("b1c3 g7g6", cp(60)), ("h2h3", cp(-200))],
        epd_after(fen, "c8g4", "b1c3", "g7g6"): [("f3e5 g4d1", cp(400)), ("h2h3", cp(50))],
        epd_after(fen, *line, "g4d1"): [("c4f7 e8e7", cp(500)), ("c3d1", cp(450))],  # no only move: the end
    }
    checked = check_candidate(fen, line, 3, scripted(table), DEFAULT)
    assert not isinstance(checked, str) and checked.moves == tuple(line)
    assert [c.index for c in checked.checks] == [1, 3]  # g6 (index 2) is the trap, not checked
    table[epd_after(fen, "c8g4")] = [("b1c3", cp(60)), ("h2h3", cp(40))]
    assert check_candidate(fen, line, 3, scripted(table), DEFAULT) == "not_unique"


def test_the_practical_setting_rule_is_asked_last_and_only_for_a_line_that_stands() -> None:
    cp = chess.engine.Cp
    fen = "rnbqkbnr/ppp2ppp/3p4/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 1 3"
    line = ["c8g4", "b1c3", "g7g6", "f3e5"]
    table = {
        epd_after(fen, "c8g4"): [("b1c3 g7g6", cp(60)), ("h2h3", cp(40))],  # not the only good move
        epd_after(fen, "c8g4", "b1c3"): [("g7g6", cp(-60))],  # the setting move's own value: it gives up nothing
        epd_after(fen, "c8g4", "b1c3", "g7g6"): [("f3e5 g4d1", cp(400)), ("h2h3", cp(50))],
        epd_after(fen, *line, "g4d1"): [("c4f7 e8e7", cp(500)), ("c3d1", cp(-300))],
        epd_after(fen, *line, "g4d1", "c4f7", "e8e7"): [("c3d5", cp(650)), ("h2h3", cp(600))],
    }
    asked: list[str] = []
    verdict = PracticalCheck(0.41, 0.12, "h2h3", 20)

    def judge(board: chess.Board, move: chess.Move) -> PracticalCheck | None:
        asked.append(move.uci())
        return verdict

    checked = check_candidate(fen, line, 3, scripted(table), DEFAULT, judge)
    assert not isinstance(checked, str) and checked.set_rule == "practical"
    assert checked.practical == dataclasses.replace(verdict, loss=0)  # the loss at the verification budget
    assert checked.checks[0] == SolverCheck(1, cp(60), cp(60))
    assert asked == ["b1c3"]
    assert check_candidate(fen, line, 3, scripted(table), DEFAULT, lambda board, move: None) == "not_practical"
    # The refutation fails: the costly rule is never asked.
    asked.clear()
    failing = {**table, epd_after(fen, "c8g4", "b1c3", "g7g6"): [("h2h3", cp(400)), ("f3e5", cp(50))]}
    assert check_candidate(fen, line, 3, scripted(failing), DEFAULT, judge) == "not_best" and asked == []


SET_FEN = "rnbqkbnr/ppp2ppp/3p4/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 1 3"  # 3...Bg4 4.Nc3 g6? 5.Nxe5
SET_LINE = ["c8g4", "b1c3", "g7g6", "f3e5"]


def practical_table(best: int, setting: int) -> dict[str, list[tuple[str, chess.engine.Score]]]:
    """The practical setting rule's line with the engine's best worth `best` and 4.Nc3 `setting`
    (centipawns, the setter's view)."""
    cp = chess.engine.Cp
    return {
        epd_after(SET_FEN, "c8g4"): [("h2h3", cp(best)), ("b1c3 g7g6", cp(setting))],
        epd_after(SET_FEN, "c8g4", "b1c3"): [("g7g6", cp(-setting))],
        epd_after(SET_FEN, "c8g4", "b1c3", "g7g6"): [("f3e5 g4d1", cp(400)), ("h2h3", cp(50))],
        epd_after(SET_FEN, *SET_LINE, "g4d1"): [("c4f7 e8e7", cp(500)), ("c3d1", cp(-300))],
        epd_after(SET_FEN, *SET_LINE, "g4d1", "c4f7", "e8e7"): [("c3d5", cp(650)), ("h2h3", cp(600))],
    }


def test_a_setting_moves_loss_is_read_from_one_search() -> None:
    """Issue 44: a coach reads a setting move's loss off one MultiPV search. The best move's value
    less a second search after the setting move compared two trees of different depths (on
    898d1c833a it read 28 to 100 cp where one search gave 0 to 17)."""
    cp = chess.engine.Cp
    board = chess.Board(SET_FEN)
    board.push_uci("c8g4")
    best, setting, other = (chess.Move.from_uci(u) for u in ("h2h3", "b1c3", "d2d4"))
    asked: list[list[chess.Move] | None] = []

    def engine(
        position: chess.Board, lines: int = 2, root_moves: Sequence[chess.Move] | None = None
    ) -> list[MultiPvLine]:
        assert position.epd() == board.epd(), "only the setter's position is searched"
        asked.append(None if root_moves is None else list(root_moves))
        if root_moves is None:
            return [MultiPvLine(best, cp(100), (best,)), MultiPvLine(other, cp(90), (other,))]
        values = {best: cp(80), setting: cp(70), other: cp(90)}
        return sorted((MultiPvLine(m, values[m], (m,)) for m in root_moves), key=lambda line: -line.score.score())

    # Not among the best two: the two moves alone, in one search (not the best line's 100 against it).
    assert setting_loss(board, setting, engine) == (cp(70), 10) and asked == [None, [best, setting]]
    asked.clear()
    # The second line: read off the same search, no other.
    assert setting_loss(board, other, engine) == (cp(90), 10) and asked == [None]
    # Lines already searched are used as they are; the best move gives up nothing.
    known = engine(board, 2)
    asked.clear()
    assert setting_loss(board, best, engine, known) == (cp(100), 0) and asked == []


def test_a_practical_setting_move_keeps_the_safety_margin_at_the_verification_budget() -> None:
    """Issue 44: "13... Bb5 ... gives up 0.00" where Stockfish gave Be6 +2.62 and Bb5 +1.63. The
    practical rule judged the margin at the mining budget; the verifier now measures it at its own
    budget, searches a narrow pass again deeper, and says the loss it measured."""

    def judge(board: chess.Board, move: chess.Move) -> PracticalCheck | None:
        return PracticalCheck(0.41, 0.12, "h2h3", 0)

    assert check_candidate(SET_FEN, SET_LINE, 3, scripted(practical_table(160, 60)), DEFAULT, judge) == "not_safe"
    checked = check_candidate(SET_FEN, SET_LINE, 3, scripted(practical_table(80, 60)), DEFAULT, judge)
    assert not isinstance(checked, str) and checked.practical is not None and checked.practical.loss == 20
    # 40 centipawns passes by less than half the margin: the deeper search decides, either way.
    narrow = scripted(practical_table(100, 60))
    assert check_candidate(
        SET_FEN, SET_LINE, 3, narrow, DEFAULT, judge, confirm=scripted(practical_table(130, 60))
    ) == ("not_safe")
    held = check_candidate(SET_FEN, SET_LINE, 3, narrow, DEFAULT, judge, confirm=scripted(practical_table(70, 60)))
    assert not isinstance(held, str) and held.practical is not None and held.practical.loss == 10
    # A written puzzle's setting move is held to the margin again on another budget.
    moves = ("c8g4", "b1c3", "g7g6", "f3e5", "g4d1", "c4f7")
    assert recheck(SET_FEN, moves, 3, scripted(practical_table(80, 60)), DEFAULT, "advantage", True)
    assert not recheck(SET_FEN, moves, 3, scripted(practical_table(160, 60)), DEFAULT, "advantage", True)


def test_a_line_that_ends_in_a_recapture_is_cut_before_it() -> None:
    """Issue 44: a line whose last solver move only takes back a piece (5.Nxe5 Bxd1 6.Nxd1) ends
    before the trade; here that leaves one solver move, no puzzle."""
    cp = chess.engine.Cp
    table = {
        epd_after(BEFORE_TRAP, "g7g6"): [("f3e5 g4d1", cp(400)), ("h2h3", cp(0))],
        epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1"): [("c3d1 h7h6", cp(300)), ("h2h3", cp(-600))],
    }
    line = ["g7g6", "f3e5", "g4d1", "c3d1"]
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(table), DEFAULT, extend=False) == "too_short"
    assert final_recapture(BEFORE_TRAP, [chess.Move.from_uci(m) for m in line], 3)
    assert not final_recapture(BEFORE_TRAP, [chess.Move.from_uci(m) for m in (*line[:3], "c4f7")], 3)


def test_a_set_puzzle_is_tagged_mate_only_when_the_setting_move_forces_it() -> None:
    """Issue 44: set puzzles were tagged `mate mateIn2` where the mate needs the opponent's error."""
    cp, mate = chess.engine.Cp, chess.engine.Mate
    line = ("c8g4", "b1c3", "g7g6", "f3e5", "g4d1", "c4f7", "e8e7", "c3d5")  # Legal's mate after 4...g6?
    later = (SolverCheck(3, cp(400), cp(50)), SolverCheck(5, mate(2), cp(-300)), SolverCheck(7, mate(1), cp(100)))
    unforced = Checked(line, (SolverCheck(1, cp(60), cp(40)), *later), False, True, "only")
    themes = themes_for("set", unforced, SET_FEN)
    assert "diffimaxSet" in themes and not [t for t in themes if t == "mate" or "Mate" in t or t.startswith("mateIn")]
    forced = dataclasses.replace(unforced, checks=(SolverCheck(1, mate(4), cp(40)), *later))
    assert {"mate", "mateIn4"} & set(themes_for("set", forced, SET_FEN))
    assert "mate" in themes_for("punish", unforced, SET_FEN)  # a punish puzzle's mate is forced by its checks


@pytest.mark.parametrize("prefix", ["=", "+", "-", "@", "\t", "\r"])
def test_spreadsheet_formulas_get_an_apostrophe(prefix: str) -> None:
    assert spreadsheet_safe(prefix + "cmd|' /C calc'!A0") == "'" + prefix + "cmd|' /C calc'!A0"
    assert spreadsheet_safe("https://lichess.org/x") == "https://lichess.org/x"


def test_pgn_values_are_one_escaped_line() -> None:
    assert pgn_value(BROKEN_EVENT) == (
        'Evil Event next line vt \\"quoted\\" back\\\\slash </textarea><img src=x onerror=alert(3)>'
    )
    assert pgn_value(None) == "?" and pgn_value("a" * 400) == "a" * 255
    assert clean_text("bidi\u202eoverride\u200b") == "bidioverride"


@pytest.mark.parametrize(
    ("site", "expected"),
    [
        ("https://lichess.org/abcdefgh", "https://lichess.org/abcdefgh"),
        ("http://example.com/g?id=1&x=2", "http://example.com/g?id=1&x=2"),
        ("javascript:alert(1)", ""),
        ("data:text/html,<script>alert(1)</script>", ""),
        ('https://lichess.org/abcdefgh"><script>alert(2)</script>', ""),
        ("https://lichess.org/a b", ""),
        ("ftp://example.com/x", ""),
        ("https:///nohost", ""),
        ("=HYPERLINK(1)", ""),
        (None, ""),
    ],
)
def test_only_plain_http_urls_survive(site: str | None, expected: str) -> None:
    assert safe_url(site) == expected


@pytest.mark.parametrize(
    ("opening", "tags"),
    [
        ("Sicilian Defense: Modern Variations", "Sicilian_Defense Sicilian_Defense_Modern_Variations"),
        ("English Opening: Anglo-Scandinavian Defense", "English_Opening English_Opening_Anglo-Scandinavian_Defense"),
        (
            "Queen's Gambit Declined: Exchange Variation, Positional",
            "Queens_Gambit_Declined Queens_Gambit_Declined_Exchange_Variation",
        ),
        ("Caro-Kann Defense", "Caro-Kann_Defense Caro-Kann_Defense_Other_variations"),  # Lichess's form
        ("Réti Opening", "Reti_Opening Reti_Opening_Other_variations"),
        (FORMULA_NAME, "cmd_C_calcA0 cmd_C_calcA0_Other_variations"),
        ("?", ""),
        (None, ""),
    ],
)
def test_opening_tags_are_normalised_like_lichess(opening: str | None, tags: str) -> None:
    assert opening_tags(opening) == tags


def test_kind_and_formats_parse_from_the_command_line() -> None:
    assert parse_kind(" Punish ") == ("punish",) and parse_kind("both") == ("punish", "set")
    assert parse_kind("defend,punish") == ("punish", "defend") and parse_kind("all") == ("punish", "set", "defend")
    with pytest.raises(PuzzleError, match=r"^invalid --kind 'traps': expected punish, set, defend, both or all$"):
        parse_kind("traps")
    assert parse_formats("html, csv,html") == ("html", "csv")
    assert parse_formats("all") == parse_formats(" ALL ") == ("csv", "pgn", "html")
    with pytest.raises(PuzzleError, match=r"^invalid --files \[\]: expected csv, pgn, html or all$"):
        parse_formats([])


def test_a_narrow_pass_is_searched_again_deeper_and_the_deeper_search_decides() -> None:
    """`Standard.confirm_band`: Nxe5 beats h3 by 0.303 win chances (170 cp against 0), within 0.1
    of the 0.3 margin, so the deeper search is asked, and its answer stands."""
    cp = chess.engine.Cp
    after_trap = epd_after(BEFORE_TRAP, "g7g6")
    after_second = epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1")
    table = {
        after_trap: [("f3e5 g4d1", cp(170)), ("h2h3", cp(0))],
        after_second: [("c4f7 e8e7", cp(500)), ("c3d1", cp(-300))],  # a wide pass: never searched again
        epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1", "c4f7", "e8e7"): [("c3d5", cp(650)), ("h2h3", cp(600))],
    }
    asked: list[str] = []

    def deeper(lines: list[tuple[str, chess.engine.Score]]) -> Analyse:
        def analyse(board: chess.Board, count: int = 2) -> list[MultiPvLine]:
            asked.append(board.epd())
            return scripted({board.epd(): lines})(board, count)  # type: ignore[return-value]

        return analyse

    narrowed = deeper([("f3e5 g4d1", cp(150)), ("h2h3", cp(0))])  # 0.269: below the margin
    assert check_candidate(BEFORE_TRAP, ["g7g6", "f3e5"], 1, scripted(table), DEFAULT, confirm=narrowed) == "not_unique"
    held = deeper([("f3e5 g4d1", cp(400)), ("h2h3", cp(0))])
    checked = check_candidate(BEFORE_TRAP, ["g7g6", "f3e5"], 1, scripted(table), DEFAULT, confirm=held)
    assert not isinstance(checked, str) and checked.moves == ("g7g6", "f3e5", "g4d1", "c4f7")
    assert checked.checks[0].best == cp(400)  # the deeper search's verdict is the one recorded
    assert asked == [after_trap, after_trap]
    # Without a band (the lichess standard's), the first search decides and nothing is asked again.
    no_band = dataclasses.replace(DEFAULT, confirm_band=0.0)
    assert not isinstance(
        check_candidate(BEFORE_TRAP, ["g7g6", "f3e5"], 1, scripted(table), no_band, confirm=narrowed), str
    )
    assert asked == [after_trap, after_trap] and STANDARDS["lichess"].confirm_band == 0.0


def test_a_written_puzzle_clears_every_threshold_by_the_band_and_is_rechecked_at_the_threshold() -> None:
    """Issue 44: 15 of 213 set puzzles written at 500,000 nodes failed at 2,000,000, each where a
    verdict sat near its threshold (a refutation move's gap 0.30-0.36 at both 500k and 1M, a line
    ending at +2.01, a practical setting move giving up 0.39 at the deeper search). Under the
    default standard a written puzzle clears each threshold `recheck` holds it to by the band: a
    solver move's gap the margin plus `confirm_band`, the final score +2 plus the band in win
    chances, a practical setting move SAFETY_CP less SETTING_BAND_CP; a narrow pass is searched
    again at twice the nodes, and that search must clear it too."""
    cp = chess.engine.Cp
    after_trap = epd_after(BEFORE_TRAP, "g7g6")
    after_second = epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1")
    table: Table = {
        after_trap: [("f3e5 g4d1", cp(400)), ("h2h3", cp(0))],
        after_second: [("c4f7 e8e7", cp(500)), ("c3d1", cp(-300))],
        epd_after(BEFORE_TRAP, "g7g6", "f3e5", "g4d1", "c4f7", "e8e7"): [("c3d5", cp(650)), ("h2h3", cp(600))],
    }
    line = ["g7g6", "f3e5", "g4d1", "c4f7"]
    assert clear_margin(DEFAULT) == pytest.approx(0.4) and clear_margin(STANDARDS["lichess"]) == 0.7
    # The gap: Nxe5 +2.00 against h3 0.00 is 0.352, above the margin, and still 0.352 deeper: dropped.
    gap = {**table, after_trap: [("f3e5 g4d1", cp(200)), ("h2h3", cp(0))]}
    assert is_only_move(cp(200), cp(0), DEFAULT.margin)  # what `recheck` holds a written puzzle to
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(gap), DEFAULT, confirm=scripted(gap)) == "not_unique"
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(gap), DEFAULT) == "not_unique"  # no deeper search
    wide = {after_trap: [("f3e5 g4d1", cp(400)), ("h2h3", cp(0))]}
    checked = check_candidate(BEFORE_TRAP, line, 1, scripted(gap), DEFAULT, confirm=scripted(wide))
    assert not isinstance(checked, str) and checked.checks[0].best == cp(400)
    # The end: Bxf7+ at +2.30 reaches +2 but not the band (+2.65): searched again deeper.
    end = {**table, after_second: [("c4f7 e8e7", cp(230)), ("c3d1", cp(-300))]}
    assert clears_outcome(cp(230), ADVANTAGE_CP, 0.0) and not clears_outcome(cp(230), ADVANTAGE_CP, 0.1)
    assert clears_outcome(cp(270), ADVANTAGE_CP, 0.1) and clears_outcome(chess.engine.Mate(3), ADVANTAGE_CP, 0.1)
    assert check_candidate(BEFORE_TRAP, line, 1, scripted(end), DEFAULT, confirm=scripted(end)) == "too_short"
    deeper_end = {after_second: [("c4f7 e8e7", cp(300)), ("c3d1", cp(-300))]}
    checked = check_candidate(BEFORE_TRAP, line, 1, scripted(end), DEFAULT, confirm=scripted(deeper_end))
    assert not isinstance(checked, str) and checked.moves == tuple(line) and checked.checks[-1].best == cp(300)
    # A set puzzle's required refutation move ending its line narrowly: no shorter line, no puzzle.
    set_table: Table = {
        epd_after(SET_FEN, "c8g4"): [("b1c3 g7g6", cp(60)), ("h2h3", cp(-200))],
        epd_after(SET_FEN, *SET_LINE[:3]): [("f3e5 g4d1", cp(230)), ("h2h3", cp(-300))],
        epd_after(SET_FEN, *SET_LINE, "g4d1"): [("c4f7 e8e7", cp(500)), ("c3d1", cp(450))],  # the end
    }
    assert check_candidate(SET_FEN, SET_LINE, 3, scripted(set_table), DEFAULT) == "not_winning"
    deeper_set = {epd_after(SET_FEN, *SET_LINE[:3]): [("f3e5 g4d1", cp(300)), ("h2h3", cp(-300))]}
    checked = check_candidate(SET_FEN, SET_LINE, 3, scripted(set_table), DEFAULT, confirm=scripted(deeper_set))
    assert not isinstance(checked, str) and checked.moves == tuple(SET_LINE) and checked.checks[-1].best == cp(300)
    # Without a band (the lichess standard's rule, and the benchmark's --baseline), +2.30 ends a line.
    no_band = dataclasses.replace(DEFAULT, confirm_band=0.0)
    checked = check_candidate(BEFORE_TRAP, line, 1, scripted(end), no_band)
    assert not isinstance(checked, str) and checked.moves == tuple(line)
    assert recheck(BEFORE_TRAP, tuple(line), 1, scripted(end), DEFAULT, "advantage")  # held to +2 alone

    # A practical setting move giving up 0.35 at 500k and at the deeper search: within SAFETY_CP,
    # not within SAFETY_CP - SETTING_BAND_CP; 0.20 passes outright.
    def judge(board: chess.Board, move: chess.Move) -> PracticalCheck | None:
        return PracticalCheck(0.41, 0.12, "h2h3", 0)

    assert SAFETY_CP - SETTING_BAND_CP == 25
    narrow = scripted(practical_table(95, 60))
    assert check_candidate(SET_FEN, SET_LINE, 3, narrow, DEFAULT, judge, confirm=narrow) == "not_safe"
    assert check_candidate(SET_FEN, SET_LINE, 3, narrow, DEFAULT, judge) == "not_safe"
    held = check_candidate(SET_FEN, SET_LINE, 3, narrow, DEFAULT, judge, confirm=scripted(practical_table(80, 60)))
    assert not isinstance(held, str) and held.practical is not None and held.practical.loss == 20
    moves = ("c8g4", "b1c3", "g7g6", "f3e5", "g4d1", "c4f7")
    assert recheck(SET_FEN, moves, 3, narrow, DEFAULT, "advantage", True)  # held to SAFETY_CP alone


def test_a_mate_in_one_with_a_winning_second_best_is_not_an_only_move() -> None:
    cp, mate = chess.engine.Cp, chess.engine.Mate
    line = ["g7g6", "f3e5", "g4d1", "c4f7", "e8e7", "c3d5"]
    table: Table = {
        epd_after(BEFORE_TRAP, "g7g6"): [("f3e5 g4d1", cp(400)), ("h2h3", cp(0))],
        epd_after(BEFORE_TRAP, *line[:3]): [("c4f7 e8e7", mate(2)), ("c3d1", cp(-300))],
        epd_after(BEFORE_TRAP, *line[:5]): [("c3d5", mate(1)), ("c3d1", cp(700))],  # 0.86 > 0.6
    }
    checked = check_candidate(BEFORE_TRAP, line, 1, scripted(table), DEFAULT)
    assert not isinstance(checked, str) and checked.moves == tuple(line[:4]) and checked.trimmed
    themes = themes_for("punish", checked, BEFORE_TRAP)
    assert {"crushing", "diffimaxPunish", "short"} <= set(themes) and "mate" not in themes


def test_bad_settings_fail_with_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(PuzzleError, match=r"^invalid --kind 'every': expected punish, set, defend, both or all$"):
        generate_puzzles(tmp_path, tmp_path / "out", PuzzleRequest(kind="every"))
    with pytest.raises(PuzzleError, match=r"^the lichess standard has no defensive puzzles"):
        generate_puzzles(tmp_path, tmp_path / "out", PuzzleRequest(kind="defend", standard="lichess"))
    with pytest.raises(PuzzleError, match=r"^invalid --files 'svg': expected csv, pgn, html or all$"):
        generate_puzzles(tmp_path, tmp_path / "out", PuzzleRequest(formats=["csv", "svg"]))
    with pytest.raises(PuzzleError, match=r"^invalid margin 0: expected win chances in \(0, 2\)$"):
        generate_puzzles(tmp_path, tmp_path / "out", PuzzleRequest(margin=0))
    with pytest.raises(PuzzleError, match=r"^invalid limit 0: expected at least 1$"):
        generate_puzzles(tmp_path, tmp_path / "out", PuzzleRequest(limit=0))
    with pytest.raises(PuzzleError, match=r"^invalid workers 0: expected at least 1$"):
        generate_puzzles(tmp_path, tmp_path / "out", workers=0)
    # The engine is checked before the dataset is read (tmp_path holds none).
    with pytest.raises(
        EngineStartError, match=r"^engine not found: 'no-such-engine-xyz' is not on PATH or in /usr/games$"
    ):
        generate_puzzles(tmp_path, tmp_path / "out", PuzzleRequest(engine="no-such-engine-xyz"))
    with pytest.raises(EngineStartError, match=r"^engine not found: /nowhere/stockfish$"):
        generate_puzzles(tmp_path, tmp_path / "out", PuzzleRequest(engine="/nowhere/stockfish"))
    assert not (tmp_path / "out").exists()


def test_a_program_that_is_no_uci_engine_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(EngineStartError, match=r"^engine /bin/true did not start as a UCI engine: [^\n]+$"):
        EngineVerifier("/bin/true")
    with pytest.raises(EngineStartError, match=r"^engine /bin/true did not start as a UCI engine: [^\n]+$"):
        generate_puzzles(tmp_path, tmp_path / "out", PuzzleRequest(engine="/bin/true"))  # before the (missing) dataset


@needs_stockfish
def test_the_stockfish_name_resolves_like_every_other_engine_command() -> None:
    verifier = EngineVerifier("stockfish", nodes=1_000)
    try:
        assert verifier.path == resolve_engine("stockfish") and verifier.name.startswith("Stockfish")
        assert verifier.engine.options == {"Threads": 1, "Hash": 16}
        lines = verifier(chess.Board())
        assert 1 <= len(lines) <= 2 and all(line.move in chess.Board().legal_moves for line in lines)
    finally:
        verifier.close()
    assert verifier.engine.pid is None


@needs_stockfish
def test_a_directory_without_a_dataset_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no diffimax dataset"):
        generate_puzzles(tmp_path, tmp_path / "out")


def hostile_puzzle() -> Puzzle:
    """A hand-made puzzle whose source headers are hostile (the renderers without any engine)."""
    game = GameInfo(
        game_id="hostile01",
        site='https://lichess.org/abcdefgh"><script>alert(2)</script>',
        event=BROKEN_EVENT,
        date='2024.01.01\r\n[Evil "tag"]',
        white=SCRIPT_NAME,
        black=FORMULA_NAME,
        white_elo=1500,
        black_elo=None,
        opening=HOSTILE_OPENING,
        eco="C41\n",
    )
    return Puzzle(
        puzzle_id="0123456789",
        kind="punish",
        fen=BEFORE_TRAP,
        moves=("g7g6", "f3e5"),
        themes=("advantage", "diffimaxPunish", "oneMove"),
        game_url="",
        opening_tags=opening_tags(game.opening),
        checks=(SolverCheck(1, chess.engine.Cp(400), chess.engine.Cp(0)),),
        game_ids=("hostile01", "hostile02"),
        game=game,
        ply=7,
        dip=150,
    )


def test_renderers_keep_hostile_headers_inert() -> None:
    puzzle = hostile_puzzle()
    assert_outputs_inert(render_csv([puzzle]), render_pgn([puzzle]), render_html([puzzle]), [puzzle])


def test_candidate_key_ignores_move_counters_and_the_opponents_move_order() -> None:
    game = GameInfo("g")
    one = PuzzleCandidate("punish", game, 7, BEFORE_TRAP, ("g7g6", "f3e5"), 1, 150)
    other_clock = BEFORE_TRAP.replace(" 5 4", " 9 12")
    two = PuzzleCandidate("punish", game, 23, other_clock, ("g7g6", "f3e5"), 1, 150)
    assert one.key() == two.key()


# ---------------------------------------------------------------------------------------------
# Output checks shared by the unit and the end-to-end tests


class StrictHTML(html.parser.HTMLParser):
    """Records tags and attributes; fails on a closing tag that does not match the open one."""

    VOID = frozenset(
        {"meta", "img", "input", "br", "hr", "link", "source", "wbr", "area", "base", "col", "embed", "track"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.script_bodies: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] == "script":
            self.script_bodies.append(data)
        else:
            self.text.append(data)


def parse_html(text: str) -> StrictHTML:
    parser = StrictHTML()
    parser.feed(text)
    parser.close()
    assert not parser.errors, parser.errors[:5]
    assert parser.stack == [], parser.stack
    return parser


def assert_html_self_contained(parser: StrictHTML) -> None:
    for tag, attrs in parser.tags:
        assert tag not in ("link", "iframe", "object", "embed", "base", "form"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name == "src":
                assert value and value.startswith("data:image/svg+xml;base64,"), (tag, value[:60] if value else value)
            if name == "href" and tag == "use":  # a shape drawn once in the page
                assert value and re.fullmatch(r"#[a-zA-Z]+", value), value
            elif name == "href":  # only the link to the source game, a plain http(s) URL
                assert tag == "a" and value and re.fullmatch(r"https?://[^\s\"'<>]+", value), value
    assert [tag for tag, _ in parser.tags].count("script") == 1
    csp = [
        a.get("content") or ""
        for t, a in parser.tags
        if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert csp and "default-src 'none'" in csp[0]


def assert_outputs_inert(csv_text: str, pgn_text: str, html_text: str, puzzles: Sequence[Puzzle]) -> None:
    hostile = [SCRIPT_NAME, FORMULA_NAME, "onerror=alert", "<img src=x", HOSTILE_OPENING]
    # CSV: the exact Lichess header, one row per puzzle, no cell a spreadsheet would run.
    rows = list(csv.reader(io.StringIO(csv_text)))
    assert tuple(rows[0]) == LICHESS_COLUMNS and len(rows) == len(puzzles) + 1
    for row in rows[1:]:
        assert len(row) == len(LICHESS_COLUMNS)
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
            assert "\n" not in cell and "\r" not in cell
    for needle in hostile:
        assert needle not in csv_text
    # PGN: every tag a single, well-escaped line; the reader gets the cleaned text back.
    for line in pgn_text.splitlines():
        if line.startswith("["):
            assert re.fullmatch(r'\[[A-Za-z0-9_]+ "(?:[^"\\]|\\.)*"\]', line), line
    for char in ("\r", "\u2028", "\x85", "\x0b"):
        assert char not in pgn_text
    games = read_pgn(pgn_text)
    assert len(games) == len(puzzles)

    def unescape(value: str) -> str:
        return value.replace('\\"', '"').replace("\\\\", "\\")

    for game, puzzle in zip(games, puzzles, strict=True):
        assert unescape(game.headers["White"]) == clean_text(puzzle.game.white)
        assert unescape(game.headers["Black"]) == clean_text(puzzle.game.black)
        assert unescape(game.headers["Event"]) == clean_text(puzzle.game.event)
        assert "Evil" not in game.headers  # a tag smuggled in a header value stays in that value
    # HTML: well formed, self-contained, the names shown as text, no markup from them.
    parser = parse_html(html_text)
    assert_html_self_contained(parser)
    shown = " ".join(parser.text)
    for puzzle in puzzles:
        assert clean_text(puzzle.game.white) in shown and clean_text(puzzle.game.black) in shown
    assert SCRIPT_NAME not in html_text and "<img src=x" not in html_text and "\u2028" not in html_text


def read_pgn(text: str) -> list[chess.pgn.Game]:
    stream = io.StringIO(text)
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors, game.errors
        games.append(game)
    return games


# ---------------------------------------------------------------------------------------------
# End to end on real games: mined here, verified by Stockfish, re-checked independently


@pytest.fixture(scope="module")
def mined(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_data(SAMPLE)
    out = tmp_path_factory.mktemp("puzzles") / "data"
    mine(
        [str(SAMPLE)],
        out,
        settings=DiffiMaxSettings(depth=2),
        game_filter=GameFilter(ply_from=MINE_PLIES[0], ply_to=MINE_PLIES[1]),
        max_games=MINE_GAMES,
        workers=2,
        judges=PUZZLE_JUDGES,
    )
    return out


@pytest.fixture(scope="module")
def generated(mined: Path, tmp_path_factory: pytest.TempPathFactory) -> PuzzleReport:
    require_stockfish()
    out = tmp_path_factory.mktemp("puzzles") / "book"
    # No `workers`: one per CPU of the module's Ray session (2), so the end-to-end tests read the pool's output.
    return generate_puzzles(mined, out, PuzzleRequest(kind="both", nodes=TEST_NODES, margin=TEST_MARGIN))


def independent_win_chances(score: chess.engine.Score) -> float:
    """The test's own copy of Lichess's curve (not the generator's function)."""
    if score.is_mate():
        return 1.0 if (score.mate() or 0) > 0 else -1.0
    return 2 / (1 + math.exp(-0.00368208 * (score.score() or 0))) - 1


@pytest.mark.stockfish
def test_real_games_give_puzzles_of_both_kinds_and_the_counts_add_up(generated: PuzzleReport) -> None:
    report = generated
    assert set(report.written) == {"csv", "pgn", "html"}
    assert all(path.exists() and path.stat().st_size > 0 for path in report.written.values())
    kinds = {p.kind for p in report.puzzles}
    assert kinds == {"punish", "set"}, report.as_dict()
    for kind in ("punish", "set"):
        accounted = report.duplicates_merged[kind] + report.verified[kind] + sum(report.dropped[kind].values())
        assert report.candidates[kind] == accounted, (kind, report.as_dict())
        assert report.verified[kind] == sum(p.kind == kind for p in report.puzzles)
    assert report.not_checked == 0 and report.discarded == 0
    assert report.dropped["set"].get("screened", 0) > 0
    assert report.engine.startswith("Stockfish") and report.workers == 2
    summary = report.summary()
    assert f"punish: {report.candidates['punish']:,} candidates" in summary and "wrote " in summary
    # The margin on the one scale of a loss of win chances (it read "margin 0.3"): issue 44, item 6.
    assert f"margin {format_win_loss(report.margin)} win chance" in summary and not two_scales_in_words(summary)
    ids = [p.puzzle_id for p in report.puzzles]
    assert len(ids) == len(set(ids))


@pytest.mark.stockfish
def test_every_puzzle_passes_a_fresh_engine_and_matches_the_game(generated: PuzzleReport, mined: Path) -> None:
    rows = list(csv.DictReader(generated.written["csv"].open(encoding="utf-8", newline="")))
    assert rows and len(rows) == len(generated.puzzles)
    connection = connect(mined)
    engine = chess.engine.SimpleEngine.popen_uci(str(STOCKFISH))
    try:
        engine.configure({"Threads": 1, "Hash": 16})
        for row in rows:
            moves = row["Moves"].split()
            board = chess.Board(row["FEN"])
            assert len(moves) % 2 == 0 and len(moves) >= 2
            game = object()  # ucinewgame before each puzzle, as the generator does
            for index, uci in enumerate(moves):
                move = chess.Move.from_uci(uci)
                assert move in board.legal_moves, (row["PuzzleId"], index, uci)
                if index % 2 == 1:  # a solver move: the best, by the margin
                    infos = engine.analyse(board, chess.engine.Limit(nodes=TEST_NODES), multipv=2, game=game)
                    assert infos[0]["pv"][0] == move, (row["PuzzleId"], index)
                    if len(infos) > 1:
                        best = independent_win_chances(infos[0]["score"].relative)
                        second = independent_win_chances(infos[1]["score"].relative)
                        mate_in_one = infos[0]["score"].relative == chess.engine.Mate(1)
                        assert best - second > TEST_MARGIN or (mate_in_one and second <= 0.6), row
                board.push(move)
            # The puzzle comes from the games: its first moves are what the humans played there.
            if "diffimaxPunish" in row["Themes"]:
                sql = """
                    select count(*) from traps t join positions p using (game_id, ply)
                    where p.fen = ? and len(t.path_uci) = 0 and t.fell and t.move_uci = ? and p.move_uci = t.move_uci
                """
                params = [row["FEN"], moves[0]]
            else:
                sql = """
                    select count(*) from positions a
                    join positions b on b.game_id = a.game_id and b.ply = a.ply + 1
                    join traps t on t.game_id = a.game_id and t.ply = a.ply + 2 and len(t.path_uci) = 0
                    where a.fen = ? and a.move_uci = ? and b.move_uci = ? and t.move_uci = ?
                """
                params = [row["FEN"], *moves[:3]]
            found = connection.execute(sql, params).fetchone()
            assert found is not None and found[0] >= 1, row
    finally:
        engine.quit()


@pytest.mark.stockfish
def test_every_written_puzzle_cleared_its_thresholds_by_the_band(generated: PuzzleReport) -> None:
    """Issue 44, on real Stockfish: what the verifier recorded for every written puzzle clears the
    thresholds `recheck` holds it to by the band (the curve is the test's own copy): each solver
    move's gap the margin + `confirm_band`, the end +2 + the band in win chances, a practical
    setting move's loss SAFETY_CP - SETTING_BAND_CP."""
    band = DEFAULT.confirm_band
    floor = independent_win_chances(chess.engine.Cp(ADVANTAGE_CP)) + band
    assert generated.puzzles
    for puzzle in generated.puzzles:
        for check in puzzle.checks:
            if check.second is None or (puzzle.set_rule == "practical" and check.index == 1):
                continue
            best, second = independent_win_chances(check.best), independent_win_chances(check.second)
            mate_in_one = check.best == chess.engine.Mate(1) and second <= 0.6
            assert best - second > TEST_MARGIN + band or mate_in_one, (puzzle.puzzle_id, check)
        if puzzle.outcome == "advantage":
            assert independent_win_chances(puzzle.checks[-1].best) >= floor, (puzzle.puzzle_id, puzzle.checks)
        if puzzle.practical is not None:
            assert puzzle.practical.loss <= SAFETY_CP - SETTING_BAND_CP, puzzle.puzzle_id


@pytest.mark.stockfish
def test_csv_pgn_and_html_read_a_mate_as_a_mate_and_a_loss_on_one_scale(generated: PuzzleReport) -> None:
    """Issue 44, item 6 (`tests.reading`): no internal mate score (99,9xx cp, 999.9x pawns) and no
    loss of win chances on the rows' 0..2 in any of the three outputs."""
    found = {}
    for kind in ("csv", "pgn", "html"):
        text = generated.written[kind].read_text(encoding="utf-8")
        if kind == "html":  # the words, not the board's drawing numbers or the script
            text = re.sub(r"<(svg|script|style)\b.*?</\1>", "", text, flags=re.DOTALL)
        found[kind] = mate_markers(text) + two_scales_in_words(text)
    assert found == {"csv": [], "pgn": [], "html": []}


def test_csv_pgn_and_html_agree_and_are_well_formed(generated: PuzzleReport) -> None:
    csv_text = generated.written["csv"].read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert csv_text.splitlines()[0] == ",".join(LICHESS_COLUMNS)
    for row in rows:
        assert re.fullmatch(r"[0-9a-f]{10}", row["PuzzleId"])
        assert row["Rating"].isdigit() and row["RatingDeviation"].isdigit()  # the human model's estimate
        assert row["Popularity"] == row["NbPlays"] == ""  # no one has played these yet
        assert row["GameUrl"].startswith("https://lichess.org/") and "#" in row["GameUrl"]
        themes = row["Themes"].split()
        assert themes == sorted(themes) and ("diffimaxPunish" in themes) != ("diffimaxSet" in themes)
    games = read_pgn(generated.written["pgn"].read_text(encoding="utf-8"))
    assert len(games) == len(rows)
    for game, row in zip(games, rows, strict=True):
        assert game.headers["SetUp"] == "1" and game.headers["FEN"] == row["FEN"]
        assert game.headers["PuzzleId"] == row["PuzzleId"]
        assert [m.uci() for m in game.mainline_moves()] == row["Moves"].split()
        assert game.end().board().is_valid()
    text = generated.written["html"].read_text(encoding="utf-8")
    parser = parse_html(text)
    assert_html_self_contained(parser)
    sections = [a for t, a in parser.tags if t == "section"]
    assert [a["id"] for a in sections] == [row["PuzzleId"] for row in rows]
    boards = [a for t, a in parser.tags if t == "svg" and a.get("class") == "board"]
    assert len(boards) == len(rows)  # one board per puzzle, its steps drawn on it by the script


@pytest.mark.stockfish
def test_no_puzzle_writes_no_file_and_says_so_in_one_line(mined: Path, tmp_path: Path) -> None:
    # A margin no line can pass: every candidate is dropped, nothing is written (the lichess
    # run wrote three empty files), and the summary says so.
    report = generate_puzzles(
        mined, tmp_path / "none", PuzzleRequest(nodes=TEST_NODES, margin=1.99, human_model=None), workers=1
    )
    assert report.puzzles == [] and report.written == {} and not (tmp_path / "none").exists()
    assert report.summary().splitlines()[-1] == f"no puzzles from {report.games:,} games: nothing written"


def outputs(report: PuzzleReport) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in report.written.items()}


def counts(report: PuzzleReport) -> dict[str, object]:
    """The report's counts: what must not depend on the number of workers."""
    keep = ("candidates", "duplicates_merged", "verified", "trimmed", "dropped", "not_checked", "engine", "nodes")
    return {name: value for name, value in report.as_dict().items() if name in keep}


@pytest.mark.stockfish
def test_one_engine_on_the_driver_and_the_pool_write_the_same_bytes(
    generated: PuzzleReport, mined: Path, tmp_path: Path
) -> None:
    serial = generate_puzzles(
        mined, tmp_path / "serial", PuzzleRequest(nodes=TEST_NODES, margin=TEST_MARGIN), workers=1
    )
    assert serial.workers == 1 and generated.workers == 2
    screened = ("history_missing", "screened")  # dropped before the engine
    distinct = sum(
        generated.candidates[kind]
        - generated.duplicates_merged[kind]
        - sum(n for reason, n in generated.dropped[kind].items() if reason in screened)
        for kind in generated.candidates
    )
    assert distinct > 2 * VERIFY_BATCH  # enough batches for both actors
    assert set(outputs(serial)) == set(FORMATS)
    assert outputs(serial) == outputs(generated)
    assert counts(serial) == counts(generated)


@pytest.mark.stockfish
@pytest.mark.parametrize("short_of_all", [False, True])
def test_a_limit_cuts_the_pool_where_it_cuts_the_serial_run(
    generated: PuzzleReport, mined: Path, tmp_path: Path, short_of_all: bool
) -> None:
    """A limit of one puzzle, and of one short of all the run writes (how many that is, is the
    rules' business: each rule of issue 44 changed it)."""
    assert len(generated.puzzles) >= 2
    limit = len(generated.puzzles) - 1 if short_of_all else 1
    runs = {
        workers: generate_puzzles(
            mined,
            tmp_path / str(workers),
            PuzzleRequest(nodes=TEST_NODES, margin=TEST_MARGIN, limit=limit),
            workers=workers,
        )
        for workers in (1, 2)
    }
    serial, pool = runs[1], runs[2]
    assert pool.workers == 2 and serial.discarded == 0
    assert outputs(serial) == outputs(pool) and counts(serial) == counts(pool)
    # Verdicts do not depend on the order: the cut run is the full run's first `limit` puzzles.
    assert [p.puzzle_id for p in pool.puzzles] == [p.puzzle_id for p in generated.puzzles[:limit]]
    assert pool.not_checked > 0  # the limit did cut the candidates
    assert pool.discarded <= min(pool.not_checked, VERIFY_BATCH * BATCHES_PER_WORKER * 2 - 1)


def run_puzzles(*args: str) -> subprocess.Popen[str]:
    """`diffimax puzzles` in a session of its own, as a terminal would run it (told of no cluster)."""
    env = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"}
    return subprocess.Popen(
        [*DIFFIMAX, "puzzles", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )


@pytest.mark.stockfish
def test_the_command_starts_its_own_cluster_and_leaves_nothing_running(mined: Path, tmp_path: Path) -> None:
    # The command finds no cluster (the module's Ray session is not advertised to it), starts a
    # local one in its own session for the pool, and must stop it and every engine before it exits.
    limit = 2
    process = run_puzzles(
        "--data",
        str(mined),
        "--out",
        str(tmp_path / "pool"),
        "--nodes",
        str(TEST_NODES),
        "--margin",
        str(TEST_MARGIN * 50),  # points of Win% on the command line (0.2 -> 10)
        "--workers",
        "2",
        "--limit",
        str(limit),
    )
    seen: dict[int, str] = {}  # every process of its session, by pid
    while process.poll() is None:
        seen.update(session_processes(process.pid))
        time.sleep(0.2)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    assert "on 2 workers" in stdout, stdout
    assert not ray_chatter(stderr), stderr[-3000:]  # none of Ray's chatter (its own progress lines only)
    assert any("raylet" in command for command in seen.values()), seen  # its own cluster, in its session
    assert sum("stockfish" in command for command in seen.values()) >= 2, seen  # the actors' engines
    assert_session_ends(process.pid)
    serial = generate_puzzles(
        mined, tmp_path / "serial", PuzzleRequest(nodes=TEST_NODES, margin=TEST_MARGIN, limit=limit), workers=1
    )
    pool_files = {name: (tmp_path / "pool" / path.name).read_bytes() for name, path in serial.written.items()}
    assert pool_files == outputs(serial)


def test_an_engine_that_cannot_start_on_the_workers_is_one_line(mined: Path, tmp_path: Path) -> None:
    engine = fake_engine(tmp_path, "driver-only", ONLY_ON_THE_DRIVER)
    process = run_puzzles(
        "--data", str(mined), "--out", str(tmp_path / "out"), "--engine", str(engine), "--workers", "2"
    )
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 1
    line = one_error_line(stderr)
    assert f"engine {engine} did not start as a UCI engine" in line, line
    assert_session_ends(process.pid)
    assert not (tmp_path / "out").exists()  # nothing written


def test_an_engine_that_cannot_start_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            *DIFFIMAX,
            "puzzles",
            "--data",
            str(tmp_path / "nowhere"),
            "--out",
            str(tmp_path / "out"),
            "--engine",
            "/bin/false",
            "--workers",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    line = one_error_line(result.stderr)
    assert line.startswith("diffimax: error: engine /bin/false did not start as a UCI engine: "), line


@pytest.mark.parametrize("workers", [1, 2])
def test_an_engine_that_crashes_in_every_search_stops_in_one_line(mined: Path, tmp_path: Path, workers: int) -> None:
    engine = fake_engine(tmp_path, "dies-on-go", DIES_ON_GO)
    # One candidate's failure drops it (`engine_failed`); ENGINE_FAILURES_IN_A_ROW stop the run.
    stop = rf"^engine {engine} crashed twice on FEN '[^'\n]+': [^\n]+; the engine failed on 3 candidates in a row$"
    with pytest.raises(EngineError, match=stop) as caught:
        generate_puzzles(mined, tmp_path / "out", PuzzleRequest(engine=str(engine)), workers=workers)
    assert not isinstance(caught.value, EngineStartError)
    assert not (tmp_path / "out").exists()


@pytest.mark.stockfish
def test_a_candidate_the_engine_fails_on_is_dropped_with_its_line_and_the_rest_goes_on(
    mined: Path, generated: PuzzleReport, tmp_path: Path
) -> None:
    # The real Stockfish behind a proxy that crashes on every search from one written puzzle's
    # position: that candidate is dropped and named, the pool goes on, and the puzzles of every
    # other game stay (in the victim's games, one moment freed may let another in, or keep one out).
    victim = generated.puzzles[0]
    placement = victim.fen.split()[0]
    engine = fake_engine(tmp_path, "crashes-on-one", crashes_on(placement, resolve_engine("stockfish")))
    report = generate_puzzles(
        mined, tmp_path / "out", PuzzleRequest(engine=str(engine), nodes=TEST_NODES, margin=TEST_MARGIN)
    )
    assert report.workers == 2
    assert sum(dropped.get("engine_failed", 0) for dropped in report.dropped.values()) == len(report.engine_failures)
    assert report.engine_failures, report.summary()
    for failure in report.engine_failures:  # the position searched: the root or a move of its line
        assert re.fullmatch(rf"engine {re.escape(str(engine))} crashed twice on FEN '[^'\n]+': [^\n]+", failure)
    ids = {p.puzzle_id for p in report.puzzles}
    assert victim.puzzle_id not in ids
    kept = {p.puzzle_id for p in generated.puzzles if not set(p.game_ids) & set(victim.game_ids)}
    assert kept and kept <= ids, kept - ids
    assert f"engine_failed: {report.engine_failures[0]}" in report.summary().splitlines()


def hostile_pgn(moves: Sequence[str]) -> str:
    """Three copies of a real game's opening under hostile headers; the third has a raw newline."""

    def tag(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"')

    board = chess.Board()
    movetext = board.variation_san([chess.Move.from_uci(m) for m in moves])
    games = []
    for number, site in ((1, "javascript:alert(1)"), (2, 'https://lichess.org/abcdefgh"><script>alert(2)</script>')):
        games.append(
            f'[Event "{tag(BROKEN_EVENT)}"]\n[Site "{tag(site)}"]\n[GameId "hostile0{number}"]\n'
            f'[Date "2024.01.0{number}"]\n[White "{tag(SCRIPT_NAME)}"]\n[Black "{tag(FORMULA_NAME)}"]\n'
            f'[Result "*"]\n[Opening "{tag(HOSTILE_OPENING)}"]\n\n{movetext} *\n\n'
        )
    games.append(
        f'[Event "line one\nline two"]\n[Site "https://lichess.org/hostile3"]\n[GameId "hostile03"]\n'
        f'[White "a\\\\"]\n[Black "b"]\n[Result "*"]\n\n{movetext} *\n\n'
    )
    return "".join(games)


@pytest.mark.stockfish
def test_hostile_headers_stay_inert_and_repeats_merge(generated: PuzzleReport, tmp_path: Path) -> None:
    # A real game that gave a punish puzzle, replayed under hostile headers in two games (+ one
    # whose header holds a raw newline): one puzzle, the same id, from two games.
    source = next(p for p in generated.puzzles if p.kind == "punish")
    with SAMPLE.open(encoding="utf-8") as stream:
        while (game := chess.pgn.read_game(stream)) is not None:
            if game.headers.get("Site", "").endswith(source.game.game_id):
                break
    assert game is not None
    played = [m.uci() for m in game.mainline_moves()][: source.ply + 4]
    pgn = tmp_path / "hostile.pgn"
    pgn.write_text(hostile_pgn(played), encoding="utf-8")
    data = tmp_path / "data"
    mine(
        [str(pgn)],
        data,
        settings=DiffiMaxSettings(depth=2),
        game_filter=GameFilter(ply_from=source.ply, ply_to=source.ply),
        workers=1,
        judges=PUZZLE_JUDGES,
    )
    # The raw newline breaks its header block: that game is refused and recorded, not mined.
    (reason,) = connect(data).execute("select reason from errors where stage = 'parse'").fetchone() or ("",)
    assert "unparseable header line" in reason
    report = generate_puzzles(
        data, tmp_path / "book", PuzzleRequest(kind="punish", nodes=TEST_NODES, margin=TEST_MARGIN)
    )
    assert [p.puzzle_id for p in report.puzzles] == [source.puzzle_id]
    (puzzle,) = report.puzzles
    assert puzzle.moves == source.moves and puzzle.game.game_id == "hostile01"
    assert set(puzzle.game_ids) >= {"hostile01", "hostile02"}
    assert report.duplicates_merged["punish"] == len(puzzle.game_ids) - 1
    assert puzzle.game_url == ""  # neither hostile Site is a plain http(s) URL
    texts = {name: path.read_text(encoding="utf-8") for name, path in report.written.items()}
    assert_outputs_inert(texts["csv"], texts["pgn"], texts["html"], report.puzzles)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in texts["html"]
    pgn_game = read_pgn(texts["pgn"])[0]
    assert pgn_game.headers["Games"] == str(len(puzzle.game_ids)) and pgn_game.headers["Site"] == "?"
    if CHROMIUM.exists():  # the browser's own DOM holds no script but ours
        dom = run_chromium("--dump-dom", report.written["html"].resolve().as_uri(), tmp_path / "profile-dom")
        assert dom.count("<script") == 1 and "alert(1)</script>" not in dom


def run_chromium(mode: str, url: str, profile: Path, *extra: str) -> str:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *extra,
        mode,
        url,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.stockfish
@needs_chromium
def test_the_book_renders_and_steps_in_a_real_browser(generated: PuzzleReport, tmp_path: Path) -> None:
    page = generated.written["html"].resolve().as_uri()
    first = generated.puzzles[0]
    shots = {}
    for name, url in (("start", page), ("last", f"{page}#{first.puzzle_id}/{len(first.moves)}")):
        shot = tmp_path / f"{name}.png"
        run_chromium(f"--screenshot={shot}", url, tmp_path / f"profile-{name}", "--window-size=1280,1600")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        shots[name] = shot.read_bytes()
    assert shots["start"] != shots["last"]  # the fragment stepped the first puzzle to its end
