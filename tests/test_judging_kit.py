"""The one judging kit (`pipeline.judging.open_kit`): the engine, the human-move model and the
corpus opened together from one engine record and one human-evidence record."""

from __future__ import annotations

import chess
import pytest

from pipeline.engines.options import EngineOptions
from pipeline.engines.process import EngineStartError
from pipeline.human.models import ModelSpecError
from pipeline.judging import HumanEvidence, judging_kit, open_kit
from pipeline.mine.rows import reply_rows
from pipeline.outputs.explain import explain_position
from pipeline.outputs.explain_input import ExplainInput
from schemas.dataset import RESPONSE_ITEM
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings


def test_a_kit_opens_the_engine_and_the_model_it_is_given() -> None:
    with judging_kit("native", EngineOptions(nodes=2_000), HumanEvidence("bundled")) as kit:
        assert kit.backend is not None and kit.model is not None and kit.corpus is None
        assert kit.startup_error is None
        assert kit.backend.analyse(chess.Board(), chess.WHITE, DiffiMaxSettings(depth=1)) is not None
        assert kit.model.move_probabilities(chess.Board(), None)  # type: ignore[arg-type]


def test_an_engine_that_cannot_start_is_one_line_or_a_recorded_reason() -> None:
    with pytest.raises(EngineStartError, match=r"^engine /bin/true did not start as a UCI engine: [^\n]+$"):
        open_kit("/bin/true", EngineOptions(nodes=1_000), HumanEvidence("none"))
    kit = open_kit("/bin/true", EngineOptions(nodes=1_000), HumanEvidence("none"), engine_may_fail=True)
    assert kit.backend is None and kit.startup_error is not None and "did not start" in kit.startup_error
    kit.close()


def test_a_model_that_is_not_there_is_one_line_before_any_engine_starts(tmp_path) -> None:
    with pytest.raises(ModelSpecError, match="no model file"):
        open_kit("/bin/true", EngineOptions(), HumanEvidence(str(tmp_path / "missing.json")))


def test_a_player_is_told_of_each_part_left_out(tmp_path) -> None:
    broken = tmp_path / "model.json"
    broken.write_text("{not json")
    told: list[str] = []
    kit = open_kit(
        "/bin/true",
        EngineOptions(),
        HumanEvidence(str(broken), str(tmp_path / "no-corpus")),
        without=lambda part, error: told.append(f"{part}: {error}"),
    )
    assert [line.split(":")[0] for line in told] == ["model", "corpus", "engine"]
    assert kit.backend is None and kit.model is None and kit.corpus is None and "did not start" in told[2]
    kit.close()


def test_a_reply_has_one_row_with_the_datasets_column_names() -> None:
    """Per-reply rows are built once (`reply_rows`): the dataset's `responses` items and `explain`'s
    JSON replies carry the same columns, named as in schemas/dataset.py."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3")
    judges = JudgeSettings(judges=frozenset({"dip", "trappy", "model", "practical"}))
    explanation = explain_position(
        ExplainInput(board),
        chess.WHITE,
        "native",
        EngineOptions(),
        DiffiMaxSettings(depth=2),
        judges,
        model="bundled",
        corpus=None,
    )
    assert explanation.judgement is not None
    rows = reply_rows(explanation.judgement)
    assert len(rows) == board.legal_moves.count() and len({row["move"] for row in rows}) == len(rows)
    assert set().union(*rows) == set(RESPONSE_ITEM.names)
    replies = explanation.json()["judges"]["replies"]
    assert [set(reply) for reply in replies] == [set(RESPONSE_ITEM.names)] * len(rows)
    assert [reply["move"] for reply in replies] == [row["move"] for row in rows]
