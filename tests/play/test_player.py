"""`diffimax play`: the styles' rules on hand-made evidence, the styles on the real Stockfish and the
bundled human-move model, the UCI protocol over a pipe to the real command, determinism, and full
games against Stockfish at 1+0 through `chess.engine`.

Every engine value here comes from /usr/games/stockfish; the only hand-made inputs are the
evidence records of the rule tests, and each expected figure there is computed from the rule's
definition (never copied from an output).
"""

from __future__ import annotations

import math
import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import chess
import chess.engine
import pytest

from pipeline.engines.backends import open_backend
from pipeline.engines.options import EngineOptions
from pipeline.harness.known_traps import load_known_traps
from pipeline.human.context import MoverContext
from pipeline.human.models import load_move_model
from pipeline.judging import Judgement
from pipeline.play.choice import Choice, Control, MoveOption, Remembered, Situation, TutorState, clip, loss_cp
from pipeline.play.clock import Go, TimeSettings, parse_go, plan_time
from pipeline.play.player import Player, instant_move
from pipeline.play.styles import PlaySettings, TutorSettings
from pipeline.play.trap import trap_chance, trap_pick
from pipeline.play.tutor import adapt_epsilon, choice_rng, decided_endgame, draw, effective_epsilon, tutor_weights
from pipeline.play.uci_options import BY_NAME, OPTIONS, Config, OptionError, set_option
from search.expectimax import within_margin
from search.judges import JudgeSettings, NodeEvidence, ReplyEvidence, Verdicts
from search.settings import DiffiMaxSettings, SettingsError
from search.values import win_drop
from tests.conftest import ROOT, needs_stockfish, require_stockfish
from tests.reading import two_scales_in_words

stockfish = [pytest.mark.stockfish, needs_stockfish]

# White to move mates with Re8#.
BACK_RANK_FEN = "6k1/5ppp/8/8/8/8/5PPP/4R1K1 w - - 0 1"
# A quiet Queen's Gambit middlegame, White to move (move 8): several plausible moves.
MIDDLEGAME_FEN = "r1bq1rk1/pp2bppp/2n1pn2/2pp4/3P4/2PBPN2/PP1N1PPP/R1BQ1RK1 w - - 0 8"
# Play's per-line node limit in these tests: the engine's default for play.
NODES = 20_000


# -- the rules, on hand-made evidence ------------------------------------------------------------


def test_within_margin_orders_best_first_and_keeps_ties() -> None:
    values = {"a2a3": 10, "b2b3": 60, "c2c3": 40, "d2d4": 60, "e2e4": 9}
    assert within_margin(values, 50) == ["b2b3", "d2d4", "c2c3", "a2a3"]  # 60 - 50 = 10: a2a3 in, e2e4 out
    assert within_margin(values, 0) == ["b2b3", "d2d4"]
    assert within_margin(values, None) == ["b2b3", "d2d4", "c2c3", "a2a3", "e2e4"]


def test_trap_pick_takes_the_best_expected_score_within_the_margin_then_the_best() -> None:
    values = {"best": 100, "near": 70, "far": 20}
    # "near" gives up score(100) - score(70) = 0.027 of score for a chance of 0.10: worth it.
    # "far" sets the biggest trap but lies 80 cp below the best, beyond a 50 cp margin.
    assert trap_pick(values, {"best": 0.0, "near": 0.10, "far": 0.90}, 50) == "near"
    assert trap_pick(values, {"best": 0.0, "near": 0.10, "far": 0.90}, 100) == "far"
    assert trap_pick(values, {"best": 0.05, "near": 0.05}, 50) == "best"  # equal chances: the better value
    assert trap_pick(values, {"best": 0.0, "near": 0.0}, 50) == "best"  # no chance anywhere: the best
    assert trap_pick(values, {}, None) == "best"  # nothing judged (time ran out): the best
    assert trap_pick({"b": 5, "a": 5}, {}, 0) == "a"  # equal values: UCI order
    # A chance smaller than the move's own loss on the curve does not pay for it.
    assert trap_pick(values, {"best": 0.0, "near": 0.02}, 50) == "best"


def _judgement(replies: tuple[ReplyEvidence, ...], verdicts: dict[str, frozenset[str]], **node: object) -> Judgement:
    evidence = NodeEvidence(replies, best="e7e5", best_value=0, **node)  # type: ignore[arg-type]
    return Judgement(evidence, Verdicts(verdicts), {})  # type: ignore[arg-type]


def test_trap_chance_is_the_expected_score_the_human_replies_give_up() -> None:
    replies = (
        ReplyEvidence("e7e5", deep_value=0, model_p=0.5, shallow_rank=2),
        ReplyEvidence("d7d5", deep_value=150, model_p=0.3, shallow_rank=1),
        ReplyEvidence("g7g5", deep_value=400, deeper_value=380, model_p=0.2, shallow_rank=3),
    )
    judgement = _judgement(replies, {"practical": frozenset({"g7g5"})})
    chance, traps, source = trap_chance(judgement, JudgeSettings())
    # Every valued reply counts, the deeper value where the reply was searched deeper; a drop of win
    # chances (-1..1) is half as much score (0..1).
    assert chance == pytest.approx((0.3 * win_drop(0, 150) + 0.2 * win_drop(0, 380)) / 2)
    # The traps shown are the practical judge's candidates, their drops in win chances.
    assert [(t.move, t.probability, t.drop) for t in traps] == [("g7g5", 0.2, pytest.approx(win_drop(0, 380)))]
    assert source == "practical"
    # A reply no search valued counts as the best reply: no gain.
    unvalued = (replies[0], ReplyEvidence("d7d5", model_p=0.3), replies[2])
    assert trap_chance(_judgement(unvalued, {"practical": frozenset()}), JudgeSettings())[0] == pytest.approx(
        0.2 * win_drop(0, 380) / 2
    )


def test_trap_chance_prefers_the_corpus_share_where_the_corpus_knows_the_position() -> None:
    replies = (
        ReplyEvidence("e7e5", deep_value=0, model_p=0.7, corpus_count=2),
        ReplyEvidence("d7d5", deep_value=150, model_p=0.3, corpus_count=8),
    )
    judgement = _judgement(replies, {"practical": frozenset({"d7d5"})}, corpus_games=10)
    assert trap_chance(judgement, JudgeSettings())[0] == pytest.approx(0.8 * win_drop(0, 150) / 2)
    few = _judgement(replies, {"practical": frozenset({"d7d5"})}, corpus_games=4)  # under corpus_min_games
    assert trap_chance(few, JudgeSettings())[0] == pytest.approx(0.3 * win_drop(0, 150) / 2)


def test_trap_chance_without_human_evidence_spreads_over_the_shallow_best() -> None:
    replies = (
        ReplyEvidence("e7e5", deep_value=0, shallow_rank=2),
        ReplyEvidence("d7d5", deep_value=150, shallow_rank=1),
        ReplyEvidence("g7g5", deep_value=400, shallow_rank=3),
    )
    judgement = _judgement(replies, {"trappy": frozenset({"d7d5"})})
    # With k = 1 a human always plays the shallow pass's best reply, d7d5: the trap shown is d7d5,
    # certain, giving up its whole drop in win chances (150 cp below the best reply e7e5).
    chance, traps, source = trap_chance(judgement, JudgeSettings(trappy_k=1))
    assert chance == pytest.approx(win_drop(0, 150) / 2)
    assert [(t.move, t.probability, t.drop) for t in traps] == [("d7d5", 1.0, pytest.approx(win_drop(0, 150)))]
    assert source == "trappy"
    # With k = 2 a human plays either of the shallow pass's two best replies, each half the time.
    chance, traps, source = trap_chance(judgement, JudgeSettings(trappy_k=2))
    assert chance == pytest.approx(0.5 * win_drop(0, 150) / 2)
    assert [(t.move, t.probability, t.drop) for t in traps] == [("d7d5", 0.5, pytest.approx(win_drop(0, 150)))]
    assert trap_chance(_judgement(replies, {}), JudgeSettings())[2] == "none"


def test_effective_epsilon_is_strict_in_the_opening_and_in_a_decided_endgame() -> None:
    tutor = TutorSettings(epsilon=0.05, opening_epsilon=0.25, opening_moves=10, endgame_epsilon=0.15)
    assert effective_epsilon(0.05, tutor, 1, False) == pytest.approx(0.25)
    assert effective_epsilon(0.05, tutor, 6, False) == pytest.approx(0.25 - 0.20 * 5 / 10)
    assert effective_epsilon(0.05, tutor, 10, False) == pytest.approx(0.25 - 0.20 * 9 / 10)
    assert effective_epsilon(0.05, tutor, 11, False) == pytest.approx(0.05)
    assert effective_epsilon(0.05, tutor, 40, True) == pytest.approx(0.15)
    assert effective_epsilon(0.20, tutor, 40, True) == pytest.approx(0.20)  # never lowers the adaptive ε
    assert effective_epsilon(0.05, TutorSettings(opening_moves=0), 1, False) == pytest.approx(0.05)


def test_decided_endgame_needs_few_men_and_a_clear_lead() -> None:
    tutor = TutorSettings(endgame_men=10, decided_cp=300)
    queen_up = chess.Board("8/8/8/4k3/8/8/3QK3/8 w - - 0 60")
    assert decided_endgame(queen_up, 900, tutor)
    assert decided_endgame(queen_up, -300, tutor)  # either side ahead
    assert not decided_endgame(queen_up, 299, tutor)
    assert not decided_endgame(chess.Board(), 900, tutor)  # 30 men: no endgame
    assert decided_endgame(queen_up, 100_000 - 3, tutor)  # a mate is clearly decided


def _after(board: chess.Board, *moves: str) -> chess.Board:
    board = board.copy()
    for move in moves:
        board.push_uci(move)
    return board


def test_epsilon_rises_when_a_mistake_is_punished_and_falls_when_it_is_spared() -> None:
    tutor = TutorSettings(epsilon=0.05, raise_factor=1.25, lower_factor=0.8, mistake_cp=30, punish_share=0.5)
    start = _after(chess.Board(), "e2e4", "e7e5")
    player = Player(open_backend("material"), PlaySettings(tutor=tutor))
    # Our move g1f3 was worth 20 against a best of 100: it gave up 80 cp.
    choice = Choice("g1f3", "tutor", "", 20, "d2d4", 100, (MoveOption("g1f3", 20), MoveOption("d2d4", 100)))
    player.commit(start, "g1f3", choice)
    last = player.state.last
    assert last == Remembered(chess.STARTING_FEN, ("e2e4", "e7e5", "g1f3"), 20, 80)
    after_reply = _after(start, "g1f3", "b8c6")
    # Our best value is now 50: the reply kept 100 - 50 = 50 >= 0.5 * 80 of our gift: punished.
    punished = adapt_epsilon(player.state, tutor, after_reply, 50)
    assert punished.epsilon == pytest.approx(0.0625) and punished.punished == 1 and punished.last is None
    # Now 70: it kept only 30 < 40: spared.
    spared = adapt_epsilon(player.state, tutor, after_reply, 70)
    assert spared.epsilon == pytest.approx(0.04) and spared.spared == 1
    # Exactly half kept counts as punished.
    assert adapt_epsilon(player.state, tutor, after_reply, 60).punished == 1


def test_epsilon_stays_when_there_was_no_mistake_or_the_game_moved_elsewhere() -> None:
    tutor = TutorSettings(mistake_cp=30)
    start = _after(chess.Board(), "e2e4", "e7e5")
    reply = _after(start, "g1f3", "b8c6")
    small = TutorState(0.05, Remembered(chess.STARTING_FEN, ("e2e4", "e7e5", "g1f3"), 90, 10))
    assert adapt_epsilon(small, tutor, reply, -500) == small  # 10 cp is no mistake
    unvalued = TutorState(0.05, Remembered(chess.STARTING_FEN, ("e2e4", "e7e5", "g1f3"), None, None))
    assert adapt_epsilon(unvalued, tutor, reply, -500) == unvalued
    mistake = TutorState(0.05, Remembered(chess.STARTING_FEN, ("e2e4", "e7e5", "g1f3"), 20, 80))
    assert adapt_epsilon(mistake, tutor, _after(chess.Board(), "d2d4", "d7d5", "g1f3", "g8f6"), 0) == mistake
    assert adapt_epsilon(mistake, tutor, _after(reply, "d2d4", "d7d5"), 0) == mistake  # two moves on
    assert adapt_epsilon(mistake, tutor, start, 0) == mistake  # a takeback


def test_epsilon_is_bounded() -> None:
    tutor = TutorSettings(epsilon=0.30, epsilon_max=0.30, epsilon_min=0.02, raise_factor=2.0, lower_factor=0.1)
    reply = _after(chess.Board(), "e2e4", "e7e5", "g1f3", "b8c6")
    state = TutorState(0.30, Remembered(chess.STARTING_FEN, ("e2e4", "e7e5", "g1f3"), 0, 100))
    assert adapt_epsilon(state, tutor, reply, 0).epsilon == 0.30
    low = TutorState(0.03, Remembered(chess.STARTING_FEN, ("e2e4", "e7e5", "g1f3"), 0, 100))
    assert adapt_epsilon(low, tutor, reply, 100).epsilon == 0.02


def test_tutor_weights_prefer_worse_moves_and_in_decided_endgames_better_plausible_ones() -> None:
    tutor = TutorSettings(temperature_cp=100.0, max_loss_cp=300)
    options = {"a": 100, "b": 50, "c": -50}
    probabilities = {"a": 0.5, "b": 0.3, "c": 0.2}
    weights, losses = tutor_weights(options, probabilities, 100, tutor, decided=False)
    assert losses == {"a": 0, "b": 50, "c": 150}
    total = 1 + math.exp(0.5) + math.exp(1.5)
    assert weights == pytest.approx({"a": 1 / total, "b": math.exp(0.5) / total, "c": math.exp(1.5) / total})
    decided, _ = tutor_weights(options, probabilities, 100, tutor, decided=True)
    raw = {"a": 0.5, "b": 0.3 * math.exp(-0.5), "c": 0.2 * math.exp(-1.5)}
    assert decided == pytest.approx({m: w / sum(raw.values()) for m, w in raw.items()})
    assert decided["a"] > decided["b"] > decided["c"]


def test_tutor_weights_drop_what_loses_too_much() -> None:
    tutor = TutorSettings(max_loss_cp=300)
    weights, _ = tutor_weights({"a": 0, "b": -200, "c": -700}, {}, 0, tutor, decided=False)
    assert set(weights) == {"a", "b"}
    # Every passing move loses more than the limit against the best: only the least losing stays.
    weights, _ = tutor_weights({"b": -400, "c": -700}, {}, 0, tutor, decided=False)
    assert weights == {"b": 1.0}
    # Losses are clipped (a mate is worth 1000): no overflow, no infinite weight.
    weights, losses = tutor_weights({"a": 99_990, "b": -99_990}, {}, 99_990, TutorSettings(max_loss_cp=0), False)
    assert losses == {"a": 0, "b": 2000} and weights["b"] == pytest.approx(1 / (1 + math.exp(-20)))


def test_draws_are_seeded_by_the_seed_and_the_game() -> None:
    weights = {"a": 0.2, "b": 0.3, "c": 0.5}
    board = _after(chess.Board(), "e2e4")
    first = [draw(weights, choice_rng(7, board)) for _ in range(3)]
    assert len(set(first)) == 1  # the same seed and position: the same draw
    by_seed = {seed: draw(weights, choice_rng(seed, board)) for seed in range(40)}
    counts = {move: list(by_seed.values()).count(move) for move in weights}
    assert all(counts[m] > 0 for m in weights)  # the seed does change the draw
    # The frequencies follow the weights (40 seeds, so loosely): "c" most, "a" least.
    many = [draw(weights, choice_rng(seed, board)) for seed in range(2000)]
    assert [many.count(m) / 2000 for m in ("a", "b", "c")] == pytest.approx([0.2, 0.3, 0.5], abs=0.04)


def test_clip_and_loss() -> None:
    assert clip(100_000 - 5) == 1000 and clip(-100_000 + 5) == -1000 and clip(37) == 37
    assert loss_cp(100, 40) == 60 and loss_cp(40, 100) == 0 and loss_cp(100_000 - 3, 0) == 1000


def test_instant_move_mates_takes_what_is_free_and_keeps_the_queen() -> None:
    assert instant_move(chess.Board(BACK_RANK_FEN)) == "e1e8"
    # The knight on d4 is free; the pawn on d5 is defended by c6 (Qxd5 cxd5 loses the queen).
    board = chess.Board("4k3/8/2p5/3p4/3n4/8/8/3QK3 w - - 0 1")
    assert instant_move(board) == "d1d4"
    board = chess.Board("4k3/8/2p5/3p4/8/8/8/3QK3 w - - 0 1")
    move = instant_move(board)
    assert move != "d1d5" and chess.Move.from_uci(move) in board.legal_moves


def test_instant_move_is_always_legal() -> None:
    rng = random.Random(11)
    for _ in range(60):
        board = chess.Board()
        for _ in range(rng.randrange(0, 120)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if board.is_game_over():
            continue
        assert chess.Move.from_uci(instant_move(board)) in board.legal_moves


def test_settings_refuse_impossible_values_in_one_line() -> None:
    with pytest.raises(
        SettingsError, match=r"^invalid epsilon 0\.5: must lie within epsilon min 0\.02 and epsilon max 0\.3$"
    ):
        TutorSettings(epsilon=0.5)
    with pytest.raises(SettingsError, match=r"^invalid temperature 0\.0: must be > 0 centipawns$"):
        TutorSettings(temperature_cp=0.0)
    with pytest.raises(SettingsError, match=r"^invalid lower factor 1\.5: must be in \(0, 1\]$"):
        TutorSettings(lower_factor=1.5)
    with pytest.raises(SettingsError, match=r"^invalid style 'wild': expected trap, tutor or best$"):
        PlaySettings(style="wild")  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match=r"^invalid trap candidates 0: must be a whole number >= 1$"):
        PlaySettings(trap_candidates=0)


# -- options, go, the clock ----------------------------------------------------------------------


def test_every_option_reads_back_its_announced_default() -> None:
    config = Config()
    names = [spec.name for spec in OPTIONS]
    assert len(names) == len(set(names))
    for spec in OPTIONS:
        assert set_option(config, spec.name, spec.show(config)) == config, spec.name
        line = spec.announce(config)
        assert line.startswith(f"option name {spec.name} type {spec.kind} default ")
        if spec.kind == "spin":
            assert f" min {spec.minimum} max {spec.maximum}" in line
    # The options reach every tutor and judge threshold.
    paths = {spec.path for spec in OPTIONS}
    for name in TutorSettings.__dataclass_fields__:
        assert f"play.tutor.{name}" in paths, name
    for name in ("practical_p", "practical_drop", "practical_shallow_k", "practical_shallow_p", "trappy_k"):
        assert f"play.judges.{name}" in paths, name


def test_options_set_their_fields() -> None:
    config = set_option(Config(), "style", "Tutor")  # names and combo values in any case
    assert config.play.style == "tutor"
    assert set_option(config, "Safety Margin", "inf").play.diffimax.safety_margin is None
    assert set_option(config, "Safety Margin", "1.25").play.diffimax.safety_margin == 1.25
    assert set_option(config, "Nodes", "0").setup.options.nodes is None
    assert set_option(config, "Engine Depth", "12").setup.options.depth == 12
    assert set_option(config, "Human Corpus", "<empty>").setup.human.corpus is None
    assert set_option(config, "Exclude Checks", "true").play.diffimax.exclude_checks
    assert set_option(config, "Epsilon", "0.1").play.tutor.epsilon == 0.1
    # A loss of win chances in points of Win%, as --practical-drop takes it; held on [0, 2].
    assert set_option(config, "Practical Drop", "10").play.judges.practical_drop == 0.2
    assert BY_NAME["practical drop"].show(config) == "7.5"
    assert set_option(config, "Stability Margin", "2.5").play.judges.stability_margin == 0.05
    # A value refused is said in the points it was given in, never on the rows' 0..2.
    with pytest.raises(OptionError, match=r"practical drop 2 / stability margin 2.5 \(points of Win%\)"):
        set_option(config, "Practical Drop", "2")
    assert set_option(config, "UCI_Opponent", "GM 2700 human Someone Strong").play.opponent_rating == 2700
    assert set_option(config, "UCI_Opponent", "none none computer X").play.opponent_rating == 1500


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("Nodes", "abc", "invalid value 'abc' for option Nodes: expected a whole number"),
        ("Nodes", "-5", "invalid value '-5' for option Nodes: expected a whole number from 0 to 1000000000"),
        ("Style", "wild", "invalid value 'wild' for option Style: invalid style 'wild': expected trap, tutor or best"),
        ("Epsilon", "x", "invalid value 'x' for option Epsilon: expected a number"),
        (
            "Epsilon",
            "0.9",
            "invalid value '0.9' for option Epsilon: invalid epsilon 0.9: must lie within epsilon min "
            "0.02 and epsilon max 0.3",
        ),
        (
            "Safety Margin",
            "-1",
            "invalid value '-1' for option Safety Margin: invalid safety margin -1.0: must be >= 0 pawns or inf",
        ),
        ("Exclude Checks", "maybe", "invalid value 'maybe' for option Exclude Checks: expected true or false"),
        (
            "Engine",
            "/nonexistent/engine",
            "invalid value '/nonexistent/engine' for option Engine: engine not found: /nonexistent/engine",
        ),
        (
            "Human Model",
            "/nonexistent/model.json",
            "invalid value '/nonexistent/model.json' for option Human Model: "
            "no model file at '/nonexistent/model.json': a human-move model is "
            "default, maia3, bundled, none, a file",
        ),
        ("Frobnicate", "1", "no option named 'Frobnicate'"),
    ],
)
def test_bad_option_values_are_one_line(name: str, value: str, message: str) -> None:
    with pytest.raises(OptionError) as caught:
        set_option(Config(), name, value)
    assert str(caught.value) == message


def test_parse_go_reads_every_parameter() -> None:
    go, problems = parse_go(["wtime", "60000", "btime", "59000", "winc", "100", "binc", "200", "movestogo", "20"])
    assert go == Go(wtime=60000, btime=59000, winc=100, binc=200, movestogo=20) and problems == []
    assert parse_go(["movetime", "500"])[0] == Go(movetime=500)
    assert parse_go(["depth", "8", "nodes", "1000"])[0] == Go(depth=8, nodes=1000)
    assert parse_go(["infinite"])[0] == Go(infinite=True)
    go, _ = parse_go(["searchmoves", "e2e4", "d2d4", "wtime", "1000"])
    assert go == Go(wtime=1000, searchmoves=("e2e4", "d2d4"))
    assert parse_go(["wtime", "-150"])[0] == Go(wtime=0)  # a flagged GUI clock


def test_parse_go_names_what_it_skips() -> None:
    go, problems = parse_go(["wtime", "abc", "btime", "1000", "frobnicate", "depth", "0"])
    assert go == Go(btime=1000)
    assert problems == [
        "go wtime: expected a whole number, got 'abc'",
        "go: unknown parameter 'frobnicate'",
        "go depth: 0 is out of range",
    ]
    assert parse_go(["movetime"])[1] == ["go movetime: expected a whole number, got '(nothing)'"]


def test_time_plan_at_one_minute() -> None:
    settings = TimeSettings(move_overhead_ms=100, horizon=30, hard_factor=3.0, max_share=0.25, hurry_ms=300)
    plan = plan_time(Go(wtime=60_000, btime=60_000), chess.WHITE, settings)
    assert plan.soft == pytest.approx(59.9 / 30) and plan.hard == pytest.approx(3 * 59.9 / 30) and not plan.hurry
    low = plan_time(Go(wtime=60_000, btime=2_000), chess.BLACK, settings)  # black's clock counts
    assert low.soft == pytest.approx(1.9 / 30) and low.hard == pytest.approx(3 * 1.9 / 30) and low.hurry
    last = plan_time(Go(wtime=10_000, btime=10_000, movestogo=1), chess.WHITE, settings)
    assert last.hard == pytest.approx(0.8 * 9.9) and last.soft == last.hard
    timed = plan_time(Go(movetime=1000), chess.WHITE, settings)
    assert (timed.soft, timed.hard) == (pytest.approx(0.72), pytest.approx(0.9))
    assert plan_time(Go(infinite=True, wtime=1000), chess.WHITE, settings).hard is None
    assert plan_time(Go(depth=5), chess.WHITE, settings).hard is None


def test_time_plan_never_spends_the_clock() -> None:
    settings = TimeSettings()
    rng = random.Random(3)
    for _ in range(2000):
        clock = rng.choice([0, 1, 50, 99, 100, 101, 500, 2000, 60_000, 600_000]) + rng.randrange(100)
        increment = rng.choice([0, 0, 100, 2000, 30_000])
        moves = rng.choice([None, 1, 2, 40])
        plan = plan_time(Go(wtime=clock, btime=clock, winc=increment, binc=increment, movestogo=moves), True, settings)
        usable = max(0.0, clock / 1000 - settings.move_overhead_ms / 1000)
        assert plan.hard is not None and plan.soft is not None
        assert plan.soft <= plan.hard <= max(usable, 0.001) + 1e-9


# -- the styles on the real engine ---------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> Iterator[tuple[object, object]]:
    require_stockfish()
    backend = open_backend("stockfish", EngineOptions(nodes=NODES))
    model = load_move_model("default")
    try:
        yield backend, model
    finally:
        backend.close()
        if model is not None:
            model.close()


def _player(engine: tuple[object, object], **settings: object) -> Player:
    backend, model = engine
    return Player(backend, PlaySettings(**settings), model=model)  # type: ignore[arg-type]


@pytest.mark.stockfish
def test_best_style_plays_the_engines_best(engine: tuple[object, object]) -> None:
    choice = _player(engine, style="best").choose(chess.Board(BACK_RANK_FEN))
    assert choice.move == "e1e8" and choice.complete and choice.value is not None and choice.value > 90_000
    backend = engine[0]
    board = chess.Board(MIDDLEGAME_FEN)
    found = backend.reply_values(board, board.turn, DiffiMaxSettings(), None, "deep")  # type: ignore[attr-defined]
    assert _player(engine, style="best").choose(board).move == found.best


def _fishing_pole() -> tuple[chess.Board, chess.Move, chess.Move]:
    """The position before 5...h5 of the Fishing Pole (the setter's move), 5...h5 and 6.hxg4."""
    trap = next(t for t in load_known_traps() if t.name == "Fishing Pole")
    board = trap.board.copy()
    setter_move = board.pop()
    return board, setter_move, trap.victim_move


@pytest.mark.stockfish
def test_trap_style_sets_the_fishing_pole_when_it_is_within_the_margin(engine: tuple[object, object]) -> None:
    board, setter_move, victim_move = _fishing_pole()
    choice = _player(engine, style="trap").choose(board)  # safety margin 0.5
    assert choice.complete
    assert choice.move == setter_move.uci() != choice.best  # 5...h5, not the engine's best
    assert choice.cost is not None and 0 < choice.cost <= 50
    chosen = next(c for c in choice.candidates if c.move == choice.move)
    assert chosen.chance is not None and chosen.chance > 0
    assert victim_move.uci() in {t.move for t in chosen.traps}  # the bait is 6.hxg4
    # The rule, on the candidates the player judged: the largest chance among those within S.
    judged = {c.move: c.chance or 0.0 for c in choice.candidates if c.chance is not None}
    values = {c.move: c.value for c in choice.candidates if c.value is not None}
    assert trap_pick(values, judged, 50) == choice.move
    # What a GUI shows of it (the info string) says each idea on its one scale: the bait's
    # likelihood in percent, its loss in points of Win%, the move's cost in pawns.
    assert re.search(rf"{victim_move.uci()}: [\d.<]+ % likely, loses [\d.]+ % win chance", choice.reason), choice.reason
    assert re.search(r"\(\S+, \d+\.\d\d pawns below \w+\)", choice.reason), choice.reason
    assert not two_scales_in_words(choice.reason) and " cp " not in choice.reason and "=" not in choice.reason
    # With no margin only the best move is left: the trap style then plays it.
    strict = _player(engine, style="trap", diffimax=DiffiMaxSettings(safety_margin=0.0)).choose(board)
    assert strict.move == strict.best == choice.best


class RecordingBackend:
    """A backend that passes every call on to the real one and notes it: (method, level) for
    `reply_values` (the level of the search: shallow or deep), (method, None) for any other."""

    def __init__(self, backend: object) -> None:
        self.backend = backend
        self.calls: list[tuple[str, object]] = []
        self.results: list[object] = []

    def __getattr__(self, name: str) -> object:
        found = getattr(self.backend, name)
        if not callable(found):
            return found

        def noted(*args: object, **kwargs: object) -> object:
            level = args[4] if name == "reply_values" and len(args) > 4 else kwargs.get("level")
            self.calls.append((name, level))
            result = found(*args, **kwargs)
            self.results.append(result)
            return result

        return noted


@pytest.mark.stockfish
def test_trap_style_in_a_hurry_decides_on_the_shallow_pass(engine: tuple[object, object]) -> None:
    # What the engine was asked, not how long it took: in a hurry the one search is the shallow
    # pass (no full-depth values, no judged position), and the choice is that pass's best.
    board, _, _ = _fishing_pole()
    backend, model = engine
    expired = Control(soft_deadline=time.monotonic())  # the budget is gone before it starts
    for control in (Control(hurry=True), expired):
        recording = RecordingBackend(backend)
        offers: list[Choice] = []
        player = Player(recording, PlaySettings(style="trap"), model=model)  # type: ignore[arg-type]
        choice = player.choose(board, control=control, offer=offers.append)
        assert recording.calls == [("reply_values", "shallow")], control
        (shallow,) = recording.results
        assert offers == [choice] and not choice.complete and choice.value is None
        assert choice.nodes == shallow.nodes > 0  # type: ignore[attr-defined]
        values = {m: v for m, v in shallow.values.items() if chess.Move.from_uci(m) in board.legal_moves}  # type: ignore[attr-defined]
        assert choice.move == min(values, key=lambda m: (-values[m], m))  # the pass's best, ties by UCI
        assert choice.shallow_value == values[choice.move]


@pytest.mark.stockfish
def test_tutor_plays_plausible_mistakes_drawn_by_the_seed(engine: tuple[object, object]) -> None:
    board = chess.Board(MIDDLEGAME_FEN)
    choices = {seed: _player(engine, style="tutor", seed=seed).choose(board) for seed in range(8)}
    model = engine[1]
    probabilities = model.move_probabilities(board, MoverContext(rating=1500))  # type: ignore[attr-defined]
    for seed, choice in choices.items():
        assert choice.complete and choice.epsilon is not None
        assert choice.epsilon == pytest.approx(effective_epsilon(0.05, TutorSettings(), board.fullmove_number, False))
        assert probabilities[choice.move] >= choice.epsilon, seed  # the same model, the same context
        assert choice.cost is not None and choice.cost <= TutorSettings().max_loss_cp
        passing = {c.move for c in choice.candidates}
        assert passing == {m for m, p in probabilities.items() if p >= choice.epsilon}
        assert _player(engine, style="tutor", seed=seed).choose(board).move == choice.move  # reproducible
    assert len({choice.move for choice in choices.values()}) > 1  # the seed matters


@pytest.mark.stockfish
def test_tutor_falls_back_on_the_most_plausible_move(engine: tuple[object, object]) -> None:
    board = chess.Board(MIDDLEGAME_FEN)
    never = TutorSettings(epsilon=1.0, epsilon_max=1.0, opening_epsilon=1.0, endgame_epsilon=1.0)
    choice = _player(engine, style="tutor", tutor=never).choose(board)
    probabilities = engine[1].move_probabilities(board, MoverContext(rating=1500))  # type: ignore[attr-defined]
    assert choice.move == max(probabilities, key=lambda m: probabilities[m])
    assert "the most plausible move" in choice.reason


@pytest.mark.stockfish
def test_tutor_is_strict_at_move_one_and_in_a_decided_endgame(engine: tuple[object, object]) -> None:
    opening = _player(engine, style="tutor").choose(_after(chess.Board(), "e2e4"))
    assert opening.epsilon == pytest.approx(TutorSettings().opening_epsilon)
    endgame = _player(engine, style="tutor").choose(chess.Board("8/8/8/4k3/8/8/3QK3/8 w - - 0 60"))
    assert endgame.epsilon == pytest.approx(TutorSettings().endgame_epsilon)
    assert "decided endgame" in endgame.reason


@pytest.mark.stockfish
def test_go_nodes_sets_the_per_line_limit_for_one_move(engine: tuple[object, object]) -> None:
    backend = engine[0]
    before = backend.limits  # type: ignore[attr-defined]
    choice = _player(engine, style="best").choose(
        chess.Board(MIDDLEGAME_FEN), Situation(limits=EngineOptions(nodes=1000))
    )
    assert choice.nodes <= 1100 and backend.limits == before  # type: ignore[attr-defined]


# -- the UCI protocol over a pipe ----------------------------------------------------------------


class UciPipe:
    """`python -m pipeline.cli play ...` of this checkout, driven line by line."""

    def __init__(self, *flags: str) -> None:
        self.stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115  (lives as long as the process; closed by close())
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", "play", *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            cwd=ROOT,
            env=env,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, *lines: str) -> None:
        assert self.process.stdin is not None
        for line in lines:
            self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def until(self, prefix: str, timeout: float = 60.0) -> list[str]:
        """Every line up to and including the first that starts with `prefix`."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} within {timeout} s; got {seen}; stderr: {self.errors()}") from None
            if line is None:
                raise AssertionError(f"the engine exited before {prefix!r}; got {seen}; stderr: {self.errors()}")
            seen.append(line)
            if line.startswith(prefix):
                return seen

    def quiet_for(self, seconds: float) -> list[str]:
        """The lines that arrive within `seconds`."""
        seen: list[str] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is not None:
                seen.append(line)
        return seen

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()

    def close(self) -> int:
        if self.process.poll() is None:
            self.send("quit")
        code = self.process.wait(timeout=20)
        self.stderr.close()
        return code


def bestmove(lines: list[str]) -> str:
    assert lines[-1].startswith("bestmove "), lines
    return lines[-1].split()[1]


def engine_ms(lines: list[str]) -> int:
    """The milliseconds from `go` to the move, as the engine reports them with every bestmove."""
    times = [
        int(line.split(" time ")[1].split()[0])
        for line in lines
        if line.startswith("info ") and not line.startswith("info string") and " time " in line
    ]
    assert times, f"no info ... time line before the move: {lines}"
    return times[-1]


# The UCI player's promises about time are kept by the engine's own clock: the time it reports
# with each move (from reading `go` to writing `bestmove`), against the time plan. What the pipe and
# the OS add on a loaded machine is the GUI's `Move Overhead`, not the engine's. `stop` is answered
# before the next command is read, so a `readyok` after the `bestmove` shows the move went out at
# once, whatever the load. The wall clock is kept only as a failsafe; the moves played against real
# clocks, with their time forfeits, are measured by `benchmarks.bench_play`.
@pytest.mark.stockfish
@needs_stockfish
def test_uci_conversation_over_a_pipe() -> None:
    engine = UciPipe()
    try:
        engine.send("uci")
        hello = engine.until("uciok", 30)
        assert hello[0] == "id name diffimax play 0.1.0" and hello[1].startswith("id author ")
        announced = [line for line in hello if line.startswith("option name ")]
        assert announced == [spec.announce(Config()) for spec in OPTIONS]
        assert "option name Style type combo default trap var trap var tutor var best" in announced
        engine.send("setoption name Seed value 5", "isready")
        assert engine.until("readyok", 60) == ["readyok"]
        engine.send("ucinewgame", "position startpos moves e2e4 e7e5 g1f3", "go wtime 60000 btime 60000 winc 0 binc 0")
        lines = engine.until("bestmove", 60)
        board = _after(chess.Board(), "e2e4", "e7e5", "g1f3")
        assert chess.Move.from_uci(bestmove(lines)) in board.legal_moves
        assert any(line.startswith("info string style trap: ") for line in lines)
        assert engine_ms(lines) <= 1000 * plan_time(Go(wtime=60000, btime=60000), chess.BLACK, TimeSettings()).hard  # type: ignore[operator]
        # A FEN, a move time: the move within it, by the engine's clock.
        engine.send(f"position fen {BACK_RANK_FEN}", "go movetime 500")
        lines = engine.until("bestmove", 30)
        assert bestmove(lines) == "e1e8" and engine_ms(lines) < 500
        assert any(line.startswith("info score mate 1 ") for line in lines)
        # go infinite: no bestmove until stop; isready is answered meanwhile.
        engine.send("setoption name Style value tutor", f"position fen {MIDDLEGAME_FEN} moves d1e2", "go infinite")
        engine.send("isready")
        early = engine.until("readyok", 30)
        assert not any(line.startswith("bestmove") for line in early)
        assert not any(line.startswith("bestmove") for line in engine.quiet_for(2.0))
        engine.send("stop", "isready")
        lines = engine.until("readyok", 30)  # the move comes before the next command is read
        moves = [line for line in lines if line.startswith("bestmove")]
        assert len(moves) == 1 and lines[-1] == "readyok", lines
        assert chess.Move.from_uci(moves[0].split()[1]) in _after(chess.Board(MIDDLEGAME_FEN), "d1e2").legal_moves
        # stop while the work is still going: the best move so far, at once.
        engine.send("setoption name Style value trap", "position startpos", "go wtime 600000 btime 600000")
        engine.send("isready")  # answered while it searches: the `go` is under way
        assert not any(line.startswith("bestmove") for line in engine.until("readyok", 30))
        engine.send("stop", "isready")
        lines = engine.until("readyok", 30)
        moves = [line for line in lines if line.startswith("bestmove")]
        assert len(moves) == 1 and lines[-1] == "readyok", lines
        assert chess.Move.from_uci(moves[0].split()[1]) in chess.Board().legal_moves
        # A position without a legal move.
        engine.send("position fen 7k/5QQ1/8/8/8/8/8/K7 b - - 0 1", "go movetime 100")
        assert engine.until("bestmove", 30)[-1] == "bestmove (none)"
    finally:
        code = engine.close()
    assert code == 0


@pytest.mark.stockfish
@needs_stockfish
def test_the_clock_is_never_overrun() -> None:
    engine = UciPipe()
    turn = _after(chess.Board(), "d2d4", "d7d5", "c2c4").turn
    try:
        # Searches far longer than any of these clocks (5M nodes a line): below 3 s left the player
        # takes the hurry path, at 10 s it starts a full-depth stage that the clock's thread cuts off.
        engine.send("uci", "setoption name Nodes value 5000000", "isready")
        engine.until("readyok", 60)
        for clock in (300, 1000, 3000, 10000):  # milliseconds left, no increment
            engine.send("position startpos moves d2d4 d7d5 c2c4", f"go wtime {clock} btime {clock}")
            lines = engine.until("bestmove", 30)
            hard = plan_time(Go(wtime=clock, btime=clock), turn, TimeSettings()).hard
            assert hard is not None and 1000 * hard <= clock - TimeSettings().move_overhead_ms
            # The move goes out by the hard deadline, with 0.25 s for a loaded machine to wake the
            # clock's thread, and inside the overhead it keeps back from the clock.
            assert engine_ms(lines) <= min(1000 * hard + 250, clock - TimeSettings().move_overhead_ms / 2), (
                clock,
                lines,
            )
            assert chess.Move.from_uci(bestmove(lines)) in _after(chess.Board(), "d2d4", "d7d5", "c2c4").legal_moves
    finally:
        assert engine.close() == 0


def test_bad_input_is_answered_without_crashing() -> None:
    # The material backend and no model: the protocol alone, no engine process needed.
    engine = UciPipe("--engine", "material", "--human-model", "none")
    try:
        engine.send("uci")
        engine.until("uciok", 30)
        engine.send(
            "setoption name Nodes value lots",
            "setoption name Frobnicate value 1",
            "setoption Style",
            "frobnicate",
            "isready",
        )
        lines = engine.until("readyok", 30)
        assert lines == [
            "info string error: invalid value 'lots' for option Nodes: expected a whole number",
            "info string error: no option named 'Frobnicate'",
            "info string error: setoption needs 'name <option> [value <value>]', got 'setoption Style'",
            "info string error: unknown command 'frobnicate'",
            "readyok",
        ]
        engine.send("position startpos moves e2e4 e7e4", "go movetime 100")
        lines = engine.until("bestmove", 10)
        assert lines[0] == (
            "info string error: illegal move 'e7e4' (move 2 of the position command) in FEN "
            "'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1'"
        )
        assert lines[-1] == "bestmove (none)"
        engine.send("position fen not/a/fen w - - 0 1", "position startpos", "go wtime abc btime 1000 movetime 200")
        lines = engine.until("bestmove", 10)
        assert lines[0].startswith("info string error: invalid FEN 'not/a/fen w - - 0 1' in position: ")
        assert "info string error: go wtime: expected a whole number, got 'abc'" in lines
        assert chess.Move.from_uci(bestmove(lines)) in chess.Board().legal_moves
        # An engine that does not exist: refused, the old one stays.
        engine.send("setoption name Engine value /nonexistent/engine", "isready")
        assert engine.until("readyok", 30) == [
            "info string error: invalid value '/nonexistent/engine' for option Engine: engine not found: "
            "/nonexistent/engine",
            "readyok",
        ]
        engine.send("position startpos moves e2e4", "go searchmoves e7e5 e2e4 movetime 100")
        lines = engine.until("bestmove", 10)
        assert "info string error: go searchmoves: e2e4 not legal here, ignored" in lines
        assert bestmove(lines) == "e7e5"
    finally:
        assert engine.close() == 0


def test_ponder_waits_for_ponderhit_then_moves() -> None:
    # Conditions, not stopwatches: 100-minute clocks give the move after ponderhit a time plan of
    # minutes (a hard deadline of 600 s), so a bestmove within the failsafe's 60 s can only be the
    # move sent at ponderhit (the material search is done long before), never one sent on the clock.
    failsafe = 60.0
    clock = "wtime 6000000 btime 6000000"
    assert plan_time(parse_go(clock.split())[0], chess.BLACK, TimeSettings()).hard > 5 * failsafe  # type: ignore[operator]
    legal = {m.uci() for m in _after(chess.Board(), "e2e4").legal_moves}
    engine = UciPipe("--engine", "material", "--human-model", "none", "--style", "best")
    try:
        engine.send("uci", "isready")
        engine.until("readyok", failsafe)
        engine.send("position startpos moves e2e4", f"go ponder {clock}", "isready")
        # The go is under way (isready is answered after it), and pondering sends no move: not by
        # readyok, and not in the second after it, when the material search has long finished.
        assert not any(line.startswith("bestmove") for line in engine.until("readyok", failsafe))
        assert not any(line.startswith("bestmove") for line in engine.quiet_for(1.0))
        engine.send("ponderhit")
        assert bestmove(engine.until("bestmove", failsafe)) in legal
        engine.send(f"go ponder {clock}", "isready")
        assert not any(line.startswith("bestmove") for line in engine.until("readyok", failsafe))
        engine.send("stop")  # stop ends a ponder search too
        assert bestmove(engine.until("bestmove", failsafe)) in legal
    finally:
        assert engine.close() == 0


def test_bad_flags_are_one_line_and_exit_1() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "pipeline.cli", "play"]
    for flags, message in (
        (
            ["--style", "wild"],
            "diffimax: error: invalid value 'wild' for option Style: invalid style 'wild': "
            "expected trap, tutor or best",
        ),
        (["--option", "Epsilon"], "diffimax: error: invalid --option 'Epsilon': expected Name=value"),
        (
            ["--engine", "/nonexistent/engine"],
            "diffimax: error: invalid value '/nonexistent/engine' for option "
            "Engine: engine not found: /nonexistent/engine",
        ),
    ):
        result = subprocess.run(
            [*command, *flags], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60, input=""
        )
        assert result.returncode == 1 and result.stderr.strip() == message, result.stderr


def _moves_played(flags: list[str], positions: list[list[str]]) -> list[str]:
    engine = UciPipe(*flags)
    try:
        engine.send("uci", "ucinewgame", "isready")
        engine.until("readyok", 60)
        moves = []
        for position in positions:
            engine.send("position startpos moves " + " ".join(position), "go wtime 600000 btime 600000")
            moves.append(bestmove(engine.until("bestmove", 60)))
    finally:
        assert engine.close() == 0
    return moves


@pytest.mark.stockfish
@needs_stockfish
def test_same_seed_same_positions_same_moves() -> None:
    # Positions from a real game: after 1.d4 d5 2.c4 e6 3.Nc3 Nf6 4.Bg5 Be7 5.e3 O-O 6.Nf3 ...
    game = [
        "d2d4",
        "d7d5",
        "c2c4",
        "e7e6",
        "b1c3",
        "g8f6",
        "c1g5",
        "f8e7",
        "e2e3",
        "e8g8",
        "g1f3",
        "b8d7",
        "a1c1",
        "c7c6",
        "f1d3",
        "d5c4",
        "d3c4",
        "f6d5",
    ]
    positions = [game[:ply] for ply in range(10, 18)]
    for style in ("tutor", "trap"):
        flags = ["--style", style, "--option", "Seed=3", "--nodes", str(NODES)]
        first = _moves_played(flags, positions)
        assert _moves_played(flags, positions) == first, style
        for position, move in zip(positions, first, strict=True):
            assert chess.Move.from_uci(move) in _after(chess.Board(), *position).legal_moves


@pytest.mark.stockfish
@needs_stockfish
def test_full_games_against_stockfish_at_one_minute() -> None:
    from benchmarks.bench_play import open_opponent, open_player, play_game

    opponent = open_opponent()
    try:
        for style, colour in (("trap", chess.WHITE), ("tutor", chess.BLACK)):
            ours = open_player("--style", style, "--nodes", str(NODES))
            try:
                record = play_game(
                    ours,
                    opponent,
                    style,
                    colour,
                    base=60.0,
                    increment=0.0,
                    opponent_limit=chess.engine.Limit(nodes=3000),
                )
            finally:
                ours.quit()
            assert record.illegal == 0 and not record.flagged, (style, record.termination)
            assert record.termination in (
                "checkmate",
                "stalemate",
                "insufficient_material",
                "seventyfive_moves",
                "fivefold_repetition",
                "fifty_moves",
                "threefold_repetition",
                "stopped at 240 plies",
            ), record.termination
            assert len(record.ours) >= 10
            assert sum(move.seconds for move in record.ours) < 60.0
            # Every move was legal where it was played (python-chess checked each bestmove too).
            board = chess.Board()
            for move in record.moves:
                assert chess.Move.from_uci(move) in board.legal_moves
                board.push_uci(move)
            assert all(move.info and move.info.startswith(f"style {style}") for move in record.ours[:5])
    finally:
        opponent.quit()


def test_a_setup_part_that_does_not_open_is_said_once_and_play_goes_on(tmp_path: Path) -> None:
    """The judging kit opens the player's engine, model and corpus; a damaged model or corpus is
    one error line each and the player plays without it; an engine that is not a UCI engine makes
    it play instant moves."""
    broken_model = tmp_path / "model.json"
    broken_model.write_text("{not json")
    broken_corpus = tmp_path / "corpus.parquet"
    broken_corpus.write_bytes(b"junk")
    engine = UciPipe(
        "--engine", "material", "--human-model", str(broken_model), "--option", f"Human Corpus={broken_corpus}"
    )
    try:
        engine.send("uci", "isready")
        lines = engine.until("readyok", 30)
        errors = [line for line in lines if line.startswith("info string error: ")]
        assert len(errors) == 2, lines
        assert errors[0].startswith(f"info string error: human model '{broken_model}' not loaded, playing without it: ")
        assert errors[1].startswith("info string error: corpus not loaded, playing without it: ")
        engine.send("position startpos", "go movetime 200")
        assert chess.Move.from_uci(bestmove(engine.until("bestmove", 10))) in chess.Board().legal_moves
    finally:
        assert engine.close() == 0
    engine = UciPipe("--engine", "/bin/true", "--human-model", "none")
    try:
        engine.send("uci", "isready")
        lines = engine.until("readyok", 30)
        assert any("engine '/bin/true' unavailable" in line and "(playing instant moves)" in line for line in lines)
        engine.send("position startpos", "go movetime 200")
        lines = engine.until("bestmove", 10)
        assert (
            "the instant move" in " ".join(lines) and chess.Move.from_uci(bestmove(lines)) in chess.Board().legal_moves
        )
    finally:
        assert engine.close() == 0
