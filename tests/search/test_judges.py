"""The trap judges: their rules on hand-made evidence, then each judge on real Stockfish, the real
human-move model and real games, checked against its rule applied to the evidence it recorded
(never against a verdict written into the test)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot
import pyarrow as pa
import pytest

from pipeline.engines.backends import open_backend
from pipeline.engines.options import EngineOptions
from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus, write_corpus
from pipeline.human.models import load_move_model
from pipeline.judging import Judge, JudgingKit
from schemas.dataset import to_signed64
from search.analysis import ResponseValue, classify_responses
from search.judges import (
    JUDGES,
    JudgeSettings,
    NodeEvidence,
    ReplyEvidence,
    judge,
    needs_deep,
    needs_deeper,
    parse_judges,
    shallow_ranks,
)
from search.settings import DiffiMaxSettings, SettingsError
from search.values import win_chances, win_drop
from tests.conftest import GAMES, needs_stockfish

SETTINGS = DiffiMaxSettings(depth=2)  # T = 1.00, R = 2.00 pawns


def node(*replies: ReplyEvidence, best: str = "a1a2", corpus_games: int | None = None) -> NodeEvidence:
    values = {r.move: r.deep_value for r in replies}
    best_value = values[best]
    assert best_value is not None
    return NodeEvidence(tuple(replies), best, best_value, corpus_games)


def r(move: str, value: int | None = None, **fields: object) -> ReplyEvidence:
    return ReplyEvidence(move=move, deep_value=value, **fields)  # type: ignore[arg-type]


# -- the rules ----------------------------------------------------------------------------------


def test_win_chances_follow_lichess_and_drops_are_the_responders_loss() -> None:
    assert win_chances(0) == 0.0
    assert win_chances(100_000 - 5) == 1.0 and win_chances(-(100_000 - 5)) == -1.0
    assert win_chances(300) == pytest.approx(2 / (1 + 2.718281828 ** (-0.00368208 * 300)) - 1, abs=1e-9)
    assert win_drop(0, 0) == 0.0 and win_drop(100, -50) == 0.0  # never negative
    # A pawn lost in a level position costs more than a pawn lost when already lost.
    assert win_drop(0, 100) > win_drop(800, 900)


@pytest.mark.parametrize(("dip", "named"), [(99, False), (100, True), (500, True)])
def test_model_judge_needs_probability_and_a_dip_of_at_least_t(dip: int, named: bool) -> None:
    settings = JudgeSettings(judges=frozenset({"model"}), model_p=0.10)
    evidence = node(r("a1a2", 0, model_p=0.5), r("b1b2", dip, model_p=0.10), r("c1c2", 400, model_p=0.0999))
    assert judge(evidence, settings, SETTINGS).candidates["model"] == (frozenset({"b1b2"}) if named else frozenset())


def test_trappy_judge_takes_the_shallow_top_k_that_dips_at_full_depth() -> None:
    evidence = node(
        r("a1a2", 0, shallow_rank=2),
        r("b1b2", 250, shallow_rank=1),
        r("c1c2", 150, shallow_rank=2),
        r("d1d2", 300, shallow_rank=3),
    )
    one = JudgeSettings(judges=frozenset({"trappy"}), trappy_k=1)
    two = dataclasses.replace(one, trappy_k=2)
    assert judge(evidence, one, SETTINGS).candidates["trappy"] == {"b1b2"}  # no upper bound: a blunder counts
    assert judge(evidence, two, SETTINGS).candidates["trappy"] == {"b1b2", "c1c2"}


def test_human_judge_speaks_only_with_enough_corpus_games() -> None:
    settings = JudgeSettings(judges=frozenset({"human"}), corpus_share=0.2, corpus_min_games=5)
    replies = (r("a1a2", 0, corpus_count=2), r("b1b2", 150, corpus_count=1), r("c1c2", 150, corpus_count=1))
    assert "human" not in judge(node(*replies, corpus_games=4), settings, SETTINGS).candidates  # no verdict
    assert judge(node(*replies, corpus_games=5), settings, SETTINGS).candidates["human"] == {"b1b2", "c1c2"}
    assert "human" not in judge(node(*replies), settings, SETTINGS).candidates  # no corpus at all


def test_practical_judge_prefers_the_corpus_where_it_has_the_position_and_needs_stable_classes() -> None:
    settings = JudgeSettings(judges=frozenset({"practical"}), practical_p=0.2, practical_drop=0.2, corpus_min_games=5)
    drop_value = 120  # a drop of win chances above 0.2 from a level position
    assert win_drop(0, drop_value) > 0.2
    rich = node(
        r("a1a2", 0, model_p=0.5, corpus_count=2), r("b1b2", drop_value, model_p=0.01, corpus_count=3), corpus_games=5
    )
    assert judge(rich, settings, SETTINGS).candidates["practical"] == {"b1b2"}  # corpus 3/5 beats the model's 1 %
    poor = node(
        r("a1a2", 0, model_p=0.5, corpus_count=1), r("b1b2", drop_value, model_p=0.01, corpus_count=1), corpus_games=2
    )
    assert judge(poor, settings, SETTINGS).candidates["practical"] == frozenset()  # too few games: the model speaks
    unstable = node(r("a1a2", 0, model_p=0.5), r("b1b2", drop_value, deeper_value=20, model_p=0.4))
    assert judge(unstable, settings, SETTINGS).candidates["practical"] == frozenset()  # gone when searched deeper


def test_no_judge_names_the_best_an_excluded_reply_or_a_node_with_one_meaningful_reply() -> None:
    every = JudgeSettings(
        judges=parse_judges("all"), model_p=0.01, practical_p=0.01, trappy_k=5, corpus_share=0.01, corpus_min_games=1
    )
    # T = 0: even the best reply's dip (0) is large enough, so only the rules under test keep it out.
    settings = DiffiMaxSettings(depth=2, trap_dip=0.0, exclude_checks=True)

    def plausible(move: str, value: int, check: bool = False) -> ReplyEvidence:
        """A reply every judge finds plausible (model, corpus and the shallow pass all like it)."""
        return r(move, value, excluded="check" if check else None, model_p=0.3, shallow_rank=1, corpus_count=3)

    def verdicts(*replies: ReplyEvidence) -> dict[str, frozenset[str]]:
        # The dip judge's candidates as the pipeline records them: the seed's analysis of the values.
        values = [
            ResponseValue(
                move=x.move,
                tiebreak=(0, x.move),
                value=x.deep_value or 0,
                exact=True,
                gives_check=x.excluded == "check",
                is_capture=False,
            )
            for x in replies
        ]
        dip = frozenset(c.move for c in classify_responses(values, settings).candidates)
        evidence = dataclasses.replace(node(*replies, corpus_games=9), dip_candidates=dip)
        found = dict(judge(evidence, every, settings).candidates)
        assert set(found) == set(JUDGES)  # every judge gives a verdict on this evidence
        return found

    # a1a2 is best; b1b2 and c1c2 are plausible and dip 1.50, but b1b2 gives check (excluded).
    named = verdicts(plausible("a1a2", 0), plausible("b1b2", 150, check=True), plausible("c1c2", 150))
    for name, moves in named.items():
        assert moves == {"c1c2"}, name  # each judge names the trap, never the best or the excluded reply
    # The best reply gives check too: c1c2 is the one meaningful reply, and no judge names it.
    alone = verdicts(plausible("a1a2", 0, check=True), plausible("b1b2", 150, check=True), plausible("c1c2", 150))
    for name, moves in alone.items():
        assert moves == frozenset(), name


def test_only_the_replies_a_judge_finds_plausible_are_searched_deeply() -> None:
    settings = JudgeSettings(judges=frozenset({"model", "trappy"}), model_p=0.1, trappy_k=1)
    evidence = node(
        r("a1a2", 0, model_p=0.5, shallow_rank=2),
        r("b1b2", None, model_p=0.3, shallow_rank=3),
        r("c1c2", None, model_p=0.01, shallow_rank=1),
        r("d1d2", None, model_p=0.01, shallow_rank=4),
    )
    assert needs_deep(evidence, settings) == {"b1b2", "c1c2"}  # d1d2 is nobody's
    practical = JudgeSettings(
        judges=frozenset({"practical"}), practical_p=0.1, practical_drop=0.2, stability_margin=0.05
    )
    near = node(r("a1a2", 0, model_p=0.5), r("b1b2", 120, model_p=0.3), r("c1c2", 500, model_p=0.3))
    assert needs_deeper(near, practical) == {"b1b2"}  # 0.22 is near 0.2; c1c2's drop is far beyond it


def test_shallow_ranks_are_competition_ranks_for_the_responder() -> None:
    assert shallow_ranks({"a": 10, "b": -20, "c": 10, "d": 30}) == {"b": 1, "a": 2, "c": 2, "d": 4}


@pytest.mark.parametrize("text", ["", "dip,nonsense", "none"])
def test_bad_judge_names_are_one_clear_line(text: str) -> None:
    with pytest.raises(SettingsError, match="invalid judges"):
        parse_judges(text)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_p": 0.0}, "invalid model p"),
        ({"trappy_k": 0}, "invalid trappy k"),
        ({"practical_drop": 0.1, "stability_margin": 0.2}, "invalid practical drop"),
    ],
)
def test_impossible_judge_settings_are_refused(change: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        JudgeSettings(**change)  # type: ignore[arg-type]


# -- every judge on real positions -----------------------------------------------------------------


def real_positions(count: int) -> list[tuple[chess.Board, str, MoverContext]]:
    """Positions of real games (ply 12 and 30 of the first games of lichess_100), with the move
    played and the mover."""
    found = []
    with (GAMES / "lichess_100.pgn").open(encoding="utf-8") as handle:
        while len(found) < count:
            game = chess.pgn.read_game(handle)
            assert game is not None
            board = game.board()
            for ply, move in enumerate(game.mainline_moves()):
                if ply in (12, 30):
                    rating = game.headers.get("WhiteElo" if board.turn else "BlackElo", "")
                    found.append((board.copy(), move.uci(), MoverContext(int(rating) if rating.isdigit() else None)))
                board.push(move)
    return found[:count]


def check_recorded_rules(evidence: NodeEvidence, verdicts: dict[str, frozenset[str]], judges: JudgeSettings) -> None:
    """Each judge's candidates are its rule applied, here, to the evidence recorded."""
    t = SETTINGS.trap_cp
    meaningful = sum(1 for x in evidence.replies if x.excluded is None) >= 2
    open_replies = [x for x in evidence.replies if x.excluded is None and x.move != evidence.best]

    def dip(x: ReplyEvidence) -> int | None:
        return None if x.deep_value is None else x.deep_value - evidence.best_value

    expected = {
        "trappy": {x.move for x in open_replies if (x.shallow_rank or 99) <= judges.trappy_k and (dip(x) or -1) >= t},
        "model": {x.move for x in open_replies if (x.model_p or 0) >= judges.model_p and (dip(x) or -1) >= t},
    }
    for name, moves in expected.items():
        assert verdicts[name] == (moves if meaningful else set()), name
    # Every reply a judge could name was searched deeply.
    for x in open_replies:
        if (x.model_p or 0) >= judges.model_p or (x.shallow_rank or 99) <= judges.trappy_k:
            assert x.deep_value is not None, x.move


@pytest.mark.stockfish
@needs_stockfish
def test_every_judge_on_real_stockfish_the_model_and_real_games(tmp_path: Path) -> None:
    positions = real_positions(4)
    # A corpus in which six games played the human's move at each position: the human judge speaks.
    rows = [
        {"position_key": to_signed64(chess.polyglot.zobrist_hash(board)), "mover_rating": 1500, "move_uci": played}
        for board, played, _ in positions
        for _ in range(6)
    ]
    corpus = Corpus.load(write_corpus(pa.Table.from_pylist(rows), tmp_path / "corpus.parquet"))
    model = load_move_model("default")
    judges = JudgeSettings(judges=parse_judges("all"))
    backend = open_backend("stockfish", EngineOptions(nodes=20_000))
    judge_with = Judge(JudgingKit(backend, model, corpus), SETTINGS, judges)
    try:
        for board, played, context in positions:
            found = judge_with.position(
                board, not board.turn, context=dataclasses.replace(context, rating=1500), also=[played]
            )
            evidence, verdicts = found.evidence, dict(found.verdicts.candidates)
            assert set(verdicts) == {"dip", "trappy", "human", "model", "practical"}
            check_recorded_rules(evidence, verdicts, judges)
            probabilities = [x.model_p or 0.0 for x in evidence.replies]
            assert all(x.model_p is not None for x in evidence.replies)
            assert sum(probabilities) == pytest.approx(1, abs=1e-6)
            human = next(x for x in evidence.replies if x.move == played)
            assert evidence.corpus_games == 6 and human.corpus_count == 6
            assert human.deep_value is not None  # `also`: the move played is always valued
            dip = evidence.dip(human)
            bad = played != evidence.best and human.excluded is None and dip is not None and dip >= SETTINGS.trap_cp
            assert verdicts["human"] == ({played} if bad and evidence.meaningful() >= 2 else set())
            analysis = found.root_analysis
            assert analysis is not None and verdicts["dip"] == {x.move for x in analysis.candidates}
            ranks = shallow_ranks({x.move: x.shallow_value for x in evidence.replies if x.shallow_value is not None})
            assert ranks == {x.move: x.shallow_rank for x in evidence.replies if x.shallow_rank is not None}
    finally:
        backend.close()
        if model is not None:
            model.close()
