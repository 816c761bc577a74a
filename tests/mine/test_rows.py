"""The fall estimate in a judged position's RESPONSES row (issue 43): the estimate the judging made
(`Judgement.fall`), the threshold it counted falls at, nulls where none was made. A hand-made
judgement, and one judged in process by a worker (the native engine at depth 1 and the bundled
human-move model; no Ray)."""

from __future__ import annotations

import chess
import pyarrow as pa

from pipeline.dataset.store import table_of
from pipeline.engines.options import EngineOptions
from pipeline.judging import HumanEvidence, Judgement
from pipeline.mine.occurrences import game_occurrences
from pipeline.mine.rows import response_columns
from pipeline.mine.work import AnalysisWorker, Judging
from search.fall import FallEstimate
from search.judges import JudgeSettings, NodeEvidence, ReplyEvidence, Verdicts
from search.settings import DiffiMaxSettings

FALL_COLUMNS = ("fall_p", "fall_p_low", "fall_p_high", "expected_loss", "fall_drop")
# 1.e4 e5 2.Nf3 Nc6 3.Bc4 Nd4, judged after 3...Nd4 (White to reply), then 4.Nxe5 played.
MOVES = ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "c6d4", "f3e5")


def judgement(fall: FallEstimate | None) -> Judgement:
    replies = (ReplyEvidence("e7e5", deep_value=0, model_p=0.6), ReplyEvidence("g7g5", deep_value=400, model_p=0.4))
    return Judgement(NodeEvidence(replies, best="e7e5", best_value=0), Verdicts({}), {}, fall=fall)


def test_the_row_holds_the_estimate_and_the_threshold_it_was_counted_at() -> None:
    judges = JudgeSettings(judges=frozenset({"practical"}), practical_drop=0.2)
    fall = FallEstimate(fall_p=0.4, low=0.25, high=0.55, expected_loss=0.31, searched=0.7, falling=("g7g5",), mass=0.4)
    columns = response_columns(judgement(fall), judges, "practical", chess.WHITE)
    assert {name: columns[name] for name in FALL_COLUMNS} == {
        "fall_p": 0.4,
        "fall_p_low": 0.25,
        "fall_p_high": 0.55,
        "expected_loss": 0.31,
        "fall_drop": 0.2,
    }
    nothing = response_columns(judgement(None), judges, "practical", chess.WHITE)
    assert all(nothing[name] is None for name in FALL_COLUMNS)


def test_a_worker_writes_the_fall_estimate_of_every_occurrence_it_judges() -> None:
    judges = JudgeSettings(judges=frozenset({"practical"}))
    judging = Judging(DiffiMaxSettings(depth=1), judges, "practical")
    worker = AnalysisWorker("native", EngineOptions(), judging, HumanEvidence(model="bundled"))
    try:
        (result,) = worker.analyse(list(game_occurrences("g", MOVES, [6])))
    finally:
        worker.close()
    assert result.error is None, result.error
    row = result.response
    assert row["fall_drop"] == judges.practical_drop
    assert 0.0 <= row["fall_p_low"] <= row["fall_p"] <= row["fall_p_high"] <= 1.0
    assert row["expected_loss"] >= 0.0
    # As the dataset stores them: float32, nullable, and the same numbers to float32's precision.
    stored = table_of(
        "responses",
        [
            row
            | {"game_id": "g", "ply": 6, "position_key": 0, "move_played": "f3e5", "reused": False, "analysis_key": 0}
        ],
    ).to_pylist()[0]
    for name in FALL_COLUMNS:
        assert stored[name] == pa.scalar(row[name], pa.float32()).as_py()
    # Without the practical judge nothing is estimated.
    dip = AnalysisWorker(
        "native",
        EngineOptions(),
        Judging(DiffiMaxSettings(depth=1), JudgeSettings(judges=frozenset({"trappy"})), "trappy"),
    )
    try:
        (plain,) = dip.analyse(list(game_occurrences("g", MOVES, [6])))
    finally:
        dip.close()
    assert all(plain.response[name] is None for name in FALL_COLUMNS)
