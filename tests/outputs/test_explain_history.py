"""`diffimax explain` from a game's moves (issue 43, item 4): the position as moves (`--moves`, from
the start or `--from`) or as a ply of a PGN game (`--pgn --ply --game`), its history kept on the
board for the human-move model, the responder read from the game, bad input as one line naming
it; and, with the real Stockfish and Maia-3, the history changing the model's answer and the fall
estimate in the JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import chess
import pytest

from pipeline.judging import Judgement
from pipeline.outputs.explain import fall_lines, judgement_json, san_namer
from pipeline.outputs.explain_input import ExplainInput, ExplainInputError, explain_input, history_text
from search.chessgame import MovesError, numbered_line, play_moves
from search.judges import JudgeSettings, NodeEvidence, ReplyEvidence, Verdicts, fall_estimate
from tests.conftest import cli_in_process, needs_maia3, needs_stockfish, one_error_line
from tests.reading import mate_markers, percents_without_space, two_scales_in_words

# Blackburne's trap (4.Nxe5?? Qg5!): the moves to the trap position, and the position itself.
BLACKBURNE_MOVES = "1. e4 e5 2. Nf3 Nc6 3. Bc4 Nd4"
BLACKBURNE = "r1bqkbnr/pppp1ppp/8/4p3/2BnP3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
AFTER_E5 = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"
GAMES = """[Event "Rated Blitz game"]
[Site "https://lichess.org/abcdefgh"]
[White "alice"]
[Black "bob"]
[Result "0-1"]
[WhiteElo "1510"]
[BlackElo "1230"]
[TimeControl "180+2"]

1. e4 { [%clk 0:03:00] } 1... e5 { [%clk 0:02:58] } 2. Nf3 { [%clk 0:02:55] } 2... Nc6 { [%clk 0:02:50] }
3. Bc4 { [%clk 0:02:51] } 3... Nd4 { [%clk 0:02:41] } 4. Nxe5 { [%clk 0:02:40] } 4... Qg5 { [%clk 0:02:30] } 0-1

[Event "Casual game"]
[White "carol"]
[Black "dave"]
[Result "*"]

1. d4 d5 *

[Event "Broken"]
[Result "*"]

1. e4 Ke7 *
"""


@pytest.fixture
def games(tmp_path: Path) -> str:
    path = tmp_path / "games.pgn"
    path.write_text(GAMES)
    return str(path)


# -- the moves: one reader, SAN or UCI, the bad one named by its number ----------------------------


def test_moves_are_san_or_uci_with_numbers_and_stay_on_the_move_stack() -> None:
    board = chess.Board()
    played = play_moves(board, "1. e4 e5 2.Nf3 b8c6 3...")
    assert [move.uci() for move in played] == ["e2e4", "e7e5", "g1f3", "b8c6"]
    assert board.move_stack == played and numbered_line(board) == "1.e4 e5 2.Nf3 Nc6"
    assert numbered_line(board, last=1) == "... 2...Nc6"


@pytest.mark.parametrize(
    ("moves", "message"),
    [
        ("e4 e5 Ke3", r"^invalid --moves: move 3, 'Ke3', is illegal after 1\.e4 e5 \(FEN '"),
        ("e4 xyz", r"^invalid --moves: move 2, 'xyz', is not a move \(SAN or UCI\) after 1\.e4 \(FEN '"),
        ("Nd2", r"^invalid --moves: move 1, 'Nd2', is illegal in the first position \(FEN '"),
        ("Nc3 a6 Nf3 a5 Ne4 h6 Ng5", r"^invalid --moves: move 7, 'Ng5', is ambiguous after 1\.Nc3 a6 "),
        ("e4 --", r"^invalid --moves: move 2, '--', is a null move after 1\.e4 "),
    ],
)
def test_a_bad_move_is_named_by_its_number_and_text(moves: str, message: str) -> None:
    with pytest.raises(MovesError, match=message):
        play_moves(chess.Board(), moves)


def test_moves_from_a_fen_are_numbered_from_it() -> None:
    asked = explain_input(None, moves="Nxc2+ Kf1", start_fen=BLACKBURNE.replace(" w ", " b "))
    assert numbered_line(asked.board) == "4...Nxc2+ 5.Kf1"
    assert asked.board.root().fen() == BLACKBURNE.replace(" w ", " b ")


# -- what names the position, and what names two ---------------------------------------------------


def test_moves_and_the_fen_they_reach_are_one_position_with_and_without_history() -> None:
    with_history = explain_input(None, moves=BLACKBURNE_MOVES)
    fen_only = explain_input(BLACKBURNE)
    assert with_history.board.fen() == fen_only.board.fen() == BLACKBURNE
    assert len(with_history.board.move_stack) == 6 and not fen_only.board.move_stack
    assert history_text(with_history.board) == (
        "1.e4 e5 2.Nf3 Nc6 3.Bc4 Nd4 (6 plies; the model reads the last 8 positions)"
    )
    assert history_text(fen_only.board).startswith("none (FEN only; the human-move model reads this position")
    data = with_history.json()
    assert data["history_plies"] == 6 and data["history_san"] == ["e4", "e5", "Nf3", "Nc6", "Bc4", "Nd4"]
    assert fen_only.json()["history_plies"] == 0 and fen_only.json()["history_san"] == []


def test_a_long_history_is_shortened_in_the_text_only() -> None:
    asked = explain_input(None, moves="Nf3 Nf6 Ng1 Ng8 " * 8)
    assert history_text(asked.board).startswith("... 5.Nf3 Nf6 6.Ng1 Ng8 ")
    assert "(32 plies;" in history_text(asked.board) and len(asked.json()["history_san"]) == 32


@pytest.mark.parametrize(
    ("fen", "options", "message"),
    [
        (BLACKBURNE, {"moves": "e4"}, r"^give one of a FEN, --moves or --pgn FILE --ply N \(given: a FEN and --moves"),
        (BLACKBURNE, {"pgn": "x.pgn", "ply": 1}, r"\(given: a FEN and --pgn\)$"),
        (None, {}, r"\(given: nothing\)$"),
        (BLACKBURNE, {"ply": 3}, r"^--ply goes with --pgn FILE$"),
        (None, {"moves": "e4", "game": 2}, r"^--game goes with --pgn FILE$"),
        (None, {"start_fen": BLACKBURNE}, r"^--from FEN goes with --moves"),
        (None, {"pgn": "x.pgn"}, r"^--pgn FILE needs --ply N"),
        (None, {"moves": "e4", "start_fen": "nonsense"}, r"^invalid --from: invalid FEN 'nonsense'"),
    ],
)
def test_no_position_or_two_is_one_line_naming_the_flags(fen: str | None, options: dict, message: str) -> None:
    with pytest.raises(ExplainInputError, match=message):
        explain_input(fen, **options)


# -- a game of a PGN file ---------------------------------------------------------------------------


def test_a_ply_of_a_game_carries_its_history_and_its_responder(games: str) -> None:
    asked = explain_input(None, pgn=games, ply=6)
    assert asked.board.fen() == BLACKBURNE and numbered_line(asked.board) == "1.e4 e5 2.Nf3 Nc6 3.Bc4 Nd4"
    context = asked.context
    assert (context.rating, context.opponent_rating, context.clock_seconds) == (1510, 1230, 171.0)
    assert (context.base_seconds, context.increment_seconds, context.pool) == (180, 2, "lichess")
    assert asked.origins == {
        "rating": "WhiteElo",
        "opponent_rating": "BlackElo",
        "clock_seconds": "White's %clk after 3.Bc4",
        "base_seconds": "TimeControl",
        "increment_seconds": "TimeControl",
        "pool": "Site",
    }
    assert asked.game == f"game 1 of {games} (alice - bob, Rated Blitz game), after 6 of 8 half-moves"
    header = "\n".join(asked.header(responder=True))
    assert "Responder: rating 1510 (WhiteElo); clock 171 s (White's %clk after 3.Bc4); opponent 1230" in header


def test_the_command_line_wins_over_the_game_and_says_so(games: str) -> None:
    asked = explain_input(None, pgn=games, ply=7).given(rating=1000, clock=None, pool=None)
    assert (asked.context.rating, asked.context.clock_seconds) == (1000, 161.0)  # Black's clock after 3...Nd4
    assert asked.origins["rating"] == "--rating" and asked.origins["clock_seconds"] == "Black's %clk after 3...Nd4"


def test_the_games_first_and_last_positions_have_clocks(games: str) -> None:
    first = explain_input(None, pgn=games, ply=0)
    assert first.context.clock_seconds == 180.0 and "has not moved yet" in first.origins["clock_seconds"]
    last = explain_input(None, pgn=games, ply=8)  # after 4...Qg5: no move follows, White to move
    assert last.context.clock_seconds == 160.0 and last.origins["clock_seconds"] == "White's %clk after 4.Nxe5"


def test_a_game_without_ratings_or_clocks_says_they_are_not_given(games: str) -> None:
    asked = explain_input(None, pgn=games, ply=2, game=2)
    assert asked.context == ExplainInput(chess.Board()).context and asked.origins == {}
    assert asked.header(responder=True)[-1] == "Responder: rating not given (--rating); clock not given (--clock)"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ply": 9}, r"^invalid --ply 9: game 1 of '.*games\.pgn' has 8 half-moves \(--ply 0\.\.8\)$"),
        ({"ply": 1, "game": 4}, r"^invalid --game 4: '.*games\.pgn' holds 3 games: there is no game 4$"),
        ({"ply": 1, "game": 3}, r"^invalid --game 3: game 3 of '.*games\.pgn' cannot be read: illegal SAN 'Ke7'"),
        ({"ply": -1}, r"^invalid --ply -1: half-moves are counted from 0"),
    ],
)
def test_a_ply_or_game_beyond_the_file_is_one_line(games: str, options: dict, message: str) -> None:
    with pytest.raises(ExplainInputError, match=message):
        explain_input(None, pgn=games, **options)


def test_a_missing_pgn_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ExplainInputError, match=r"^invalid --pgn: no such file: '.*missing\.pgn'$"):
        explain_input(None, pgn=str(tmp_path / "missing.pgn"), ply=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--moves", "e4 e5 Ke3"], f"invalid --moves: move 3, 'Ke3', is illegal after 1.e4 e5 (FEN {AFTER_E5!r})"),
        ([BLACKBURNE, "--moves", "e4"], "give one of a FEN, --moves or --pgn FILE --ply N (given: a FEN and --moves)"),
        ([BLACKBURNE, "--ply", "3"], "--ply goes with --pgn FILE"),
        (["--pgn", "/nonexistent/games.pgn", "--ply", "3"], "invalid --pgn: no such file: '/nonexistent/games.pgn'"),
    ],
)
def test_the_command_prints_one_line_before_any_engine_starts(args: list[str], message: str) -> None:
    result = cli_in_process("explain", *args, "--engine", "/nonexistent/engine", "--human-model", "none")
    assert one_error_line(result) == f"diffimax: error: {message}"


# -- the fall estimate as the report says it ---------------------------------------------------------


def test_the_fall_estimate_reads_as_a_coach_reads_it_and_its_json_keeps_both_names() -> None:
    # At Blackburne's position (the setter, Black, values in its centipawns): O-O best; Nxe5 and
    # Nxd4 searched and losing; d3 valued by the shallow pass alone; Bd5 unplayed.
    replies = (
        ReplyEvidence("e1g1", deep_value=-40, model_p=0.40),
        ReplyEvidence("f3e5", deep_value=500, model_p=0.30),
        ReplyEvidence("f3d4", deep_value=60, model_p=0.20),
        ReplyEvidence("d2d3", shallow_value=-30, model_p=0.10),
        ReplyEvidence("c4d5", deep_value=0, model_p=0.0),
    )
    evidence = NodeEvidence(replies, best="e1g1", best_value=-40)
    judges = JudgeSettings(judges=frozenset({"practical"}))
    fall = fall_estimate(evidence, judges)
    assert fall is not None and fall.falling == ("f3e5", "f3d4")
    judgement = Judgement(evidence, Verdicts({"practical": frozenset()}), {}, fall=fall)
    board = chess.Board(BLACKBURNE)
    [line] = fall_lines(judgement, judges, san_namer(board), 1200)
    # The default calibration (Lichess's: sigmoid(1.21 logit m + 0.60)) moves 50 % to 65 % and
    # 60 % to 75 %; the line says the replies' own share beside it, so its shares add up.
    assert line == (
        "Fall probability (rating 1200): 65 % of humans play a reply that loses at least 7.5 % win chance "
        "(bounds 65-75 %; the falling replies' share 50 % before the calibration); "
        "expected loss 14 % win chance; the falling replies: Nxe5 30 %, Nxd4 20 %"
    )
    # One scale for a loss, points of Win%: 0.15 win chances on -1..1 is 7.5, the expected 0.277 is 14.
    assert fall.expected_loss == pytest.approx(0.2766, abs=1e-4)
    uncalibrated = JudgeSettings(judges=frozenset({"practical"}), fall_calibration=(("lichess", 1.0, 0.0),))
    raw = fall_estimate(evidence, uncalibrated)
    assert raw is not None and (raw.fall_p, raw.low, raw.high) == (0.5, 0.5, 0.6) == (fall.mass, 0.5, 0.6)
    [line] = fall_lines(
        Judgement(evidence, Verdicts({"practical": frozenset()}), {}, fall=raw), uncalibrated, san_namer(board), 1200
    )
    assert "(bounds 50-60 %); expected loss" in line
    data = judgement_json(judgement, judges, board)
    assert (data["fall_p"], data["fall_p_low"], data["fall_p_high"]) == (fall.fall_p, fall.low, fall.high)
    assert (round(fall.low, 3), round(fall.high, 3)) == (0.646, 0.748)
    assert data["expected_loss"] == fall.expected_loss > 0
    assert data["falling"] == [{"move": "f3e5", "san": "Nxe5", "p": 0.3}, {"move": "f3d4", "san": "Nxd4", "p": 0.2}]
    unjudged = Judgement(evidence, Verdicts(), {})
    assert fall_lines(unjudged, judges, san_namer(board), None) == [
        "Fall probability: not estimated (no human evidence: --human-model or --human-corpus)"
    ]
    assert judgement_json(unjudged, judges, board)["fall_p"] is None


# -- the real thing: Stockfish and Maia-3 -----------------------------------------------------------

# A cheap Stockfish: one ply of DiffiMax, a few thousand nodes a line.
CHEAP = ("--nodes", "3000", "--depth", "1", "--human-model", "maia3", "--rating", "1200")


def explained(*args: str) -> dict:
    return json.loads(cli_in_process("explain", *args, *CHEAP, "--json", check=True).stdout)


@pytest.mark.stockfish
@needs_stockfish
@needs_maia3
def test_maia3_reads_the_moves_and_the_json_carries_the_fall_estimate() -> None:
    with_history = explained("--moves", BLACKBURNE_MOVES)
    fen_only = explained(BLACKBURNE)
    assert with_history["fen"] == fen_only["fen"] == BLACKBURNE
    assert (with_history["history_plies"], fen_only["history_plies"]) == (6, 0)
    model_p = [{r["move"]: r["model_p"] for r in data["judges"]["replies"]} for data in (with_history, fen_only)]
    assert model_p[0].keys() == model_p[1].keys()
    assert max(abs(model_p[0][move] - model_p[1][move]) for move in model_p[0]) > 1e-3
    for data in (with_history, fen_only):
        judges = data["judges"]
        assert judges["fall_p"] is not None and judges["expected_loss"] >= 0
        assert 0 <= judges["fall_p_low"] <= judges["fall_p"] <= judges["fall_p_high"] <= 1
        board = chess.Board(BLACKBURNE)
        assert all(board.san(chess.Move.from_uci(f["move"])) == f["san"] for f in judges["falling"])


@pytest.mark.stockfish
@needs_stockfish
@needs_maia3
def test_a_pgn_ply_is_explained_with_the_games_rating_and_says_so(games: str) -> None:
    text = cli_in_process("explain", "--pgn", games, "--ply", "6", *CHEAP[:-2], check=True).stdout
    assert "History: 1.e4 e5 2.Nf3 Nc6 3.Bc4 Nd4 (6 plies; the model reads the last 8 positions)" in text
    assert "Responder: rating 1510 (WhiteElo); clock 171 s (White's %clk after 3.Bc4)" in text
    fall = next(line for line in text.splitlines() if line.startswith("Fall probability"))
    assert fall.startswith("Fall probability (rating 1510): ") and "of humans play a reply that loses at least" in fall


@pytest.mark.stockfish
@needs_stockfish
@needs_maia3
def test_explain_reads_a_loss_on_one_scale_and_a_mate_as_a_mate() -> None:
    """Issue 44, item 6 (`tests.reading`): after 3.Qh5, 3...Nf6?? allows Qxf7#. The text shows the
    mate as "#1", never the internal mate score, and every loss of win chances in points of Win%."""
    text = cli_in_process("explain", "--moves", "1. e4 e5 2. Bc4 Nc6 3. Qh5", *CHEAP, check=True).stdout
    assert two_scales_in_words(text) == [] and mate_markers(text) == [] and percents_without_space(text) == []
    (nf6,) = [line for line in text.splitlines() if re.match(r"\s*\d+\. \.\.\.Nf6 ", line)]
    # Mated from a level position: the setter's Win% goes from about 50 to 100.
    assert " #1 " in nf6 and 40 <= int(re.findall(r" (\d+) % ", nf6)[0]) <= 60, nf6
    assert re.search(r"loses at least 7\.5 % win chance .*; expected loss \d+(\.\d)? % win chance", text)
