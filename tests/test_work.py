"""The worker's progress reports and the reuse cache's packed analyses, without Ray."""

from __future__ import annotations

import pytest

from pipeline.engines.backends import EngineOptions
from pipeline.mine import work
from pipeline.mine.driver import pack, unpack
from pipeline.mine.work import AnalysisUnit, AnalysisWorker, Judging, ProgressReporter
from search.judges import JudgeSettings

GAME = ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "f3g5", "d7d5", "e4d5", "f6d5", "g5f7")
JUDGING = Judging(judges=JudgeSettings(judges=frozenset({"trappy", "practical"})), primary="trappy")


def test_every_position_is_reported_once_whatever_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    for interval, calls in ((0.0, len(GAME)), (3600.0, 1)):
        monkeypatch.setattr(work, "PROGRESS_INTERVAL", interval)
        told: list[int] = []
        worker = AnalysisWorker("material", EngineOptions(), JUDGING, progress=told.append)
        outcome = worker.analyse(AnalysisUnit("g", None, GAME, tuple(range(len(GAME)))))
        assert sum(told) == len(outcome.results) == len(GAME)
        assert len(told) == calls


def test_a_reporter_with_nothing_pending_tells_nothing() -> None:
    told: list[int] = []
    reporter = ProgressReporter(told.append)
    reporter.flush()
    assert told == []


def test_a_packed_analysis_comes_back_equal_and_smaller() -> None:
    worker = AnalysisWorker("material", EngineOptions(), JUDGING)
    results = worker.analyse(AnalysisUnit("g", None, GAME, tuple(range(len(GAME))))).results
    assert any(result.traps for result in results)
    for result in results:
        assert unpack(pack(result)) == result
    assert len(pack(results[-1])) < len(repr(results[-1]))
