"""A mining worker without Ray: occurrences and their analysis keys, the bounded table of engine
answers, progress reports, and the rows of a part."""

from __future__ import annotations

import chess
import pytest

from pipeline.engines.options import EngineOptions
from pipeline.mine import progress
from pipeline.mine.occurrences import MIN_HISTORY, game_occurrences
from pipeline.mine.progress import ProgressReporter
from pipeline.mine.table import AnalysisEntry, AnalysisTable, analysis_key, partition_of
from pipeline.mine.work import AnalysisWorker, Judging
from schemas.dataset import to_signed64
from search.chessgame import zobrist
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings

GAME = ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "f3g5", "d7d5", "e4d5", "f6d5", "g5f7")
JUDGING = Judging(judges=JudgeSettings(judges=frozenset({"trappy", "practical"})), primary="trappy")
# Knights out and back: the start position again at ply 4, with a history the first one lacks.
SHUFFLE = ("g1f3", "g8f6", "f3g1", "f6g8", "e2e4")


def test_every_position_is_reported_once_whatever_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    for interval, calls in ((0.0, len(GAME)), (3600.0, 1)):
        monkeypatch.setattr(progress, "PROGRESS_INTERVAL", interval)
        told: list[int] = []
        worker = AnalysisWorker("material", EngineOptions(), JUDGING, progress=told.append)
        outcome = worker.analyse_part(list(game_occurrences("g", GAME, range(len(GAME)))))
        assert sum(told) == outcome.responses.num_rows == len(GAME)
        assert len(told) == calls


def test_a_reporter_with_nothing_pending_tells_nothing() -> None:
    told: list[int] = []
    reporter = ProgressReporter(told.append)
    reporter.flush()
    assert told == []


def test_an_occurrence_carries_the_moves_a_search_can_see_and_rebuilds_its_position() -> None:
    occurrences = list(game_occurrences("g", GAME, range(len(GAME))))
    board = chess.Board()
    for ply, occurrence in enumerate(occurrences):
        rebuilt = occurrence.board()
        assert rebuilt.fen() == board.fen()
        assert occurrence.position_key == to_signed64(zobrist(board))
        assert occurrence.played == GAME[ply]
        # every move since the last irreversible one, and at least the seven Maia-3 reads
        assert len(occurrence.moves) == min(ply, max(MIN_HISTORY, board.halfmove_clock))
        assert MIN_HISTORY == 7
        board.push_uci(GAME[ply])


def test_the_analysis_key_is_the_position_with_what_a_search_sees_of_its_history() -> None:
    start, again, _ = list(game_occurrences("g", SHUFFLE, [0, 4, 5]))
    assert start.position_key == again.position_key  # the same position ...
    assert start.key == start.position_key  # (nothing before it: the key is the Polyglot key)
    assert again.key != start.key  # ... seen after a shuffle: its clock and its history differ
    # the same position, clock and history in two games share one key
    other = next(iter(game_occurrences("h", (*SHUFFLE[:4], "d2d4"), [4])))
    assert other.key == again.key
    assert analysis_key(again.position_key, 4, [1, 2, 3, 4]) != analysis_key(again.position_key, 4, [1, 2, 4, 3])


def test_keys_spread_over_the_partitions() -> None:
    occurrences = list(game_occurrences("g", GAME, range(len(GAME))))
    for partitions in (1, 2, 4):
        owners = [partition_of(o.key, partitions) for o in occurrences]
        assert all(0 <= owner < partitions for owner in owners)
        assert len(set(owners)) == min(partitions, len(occurrences)) or partitions > 2


def test_the_table_keeps_its_budget_least_recently_used_out_first() -> None:
    entry = AnalysisEntry(choices={"choice_moves": ["e2e4"] * 50, "choice_trap_moves": []})
    probe = AnalysisTable()
    probe.put(0, entry)
    size = probe.bytes
    table = AnalysisTable(budget_bytes=3 * size)
    for key in range(3):
        table.put(key, entry)
    assert table.get(0) is not None  # 0 is now the most recently used
    table.put(3, entry)  # evicts 1, the least recently used
    assert table.get(1) is None and table.get(0) is not None and table.get(3) is not None
    assert table.bytes <= table.budget and len(table) == 3 and table.evictions == 1
    assert (table.hits, table.misses) == (3, 1)
    assert AnalysisTable(budget_bytes=0).bytes == 0
    empty = AnalysisTable(budget_bytes=0)
    empty.put(5, entry)
    assert empty.get(5) is None


@pytest.mark.parametrize("engine", ["material", "native"])
def test_an_answer_served_from_the_table_is_the_answer_a_fresh_search_gives(engine: str) -> None:
    """Twice the same positions through one worker (the repeats served from its table) and once
    through a worker without a table: the same rows, apart from `reused`."""
    judging = Judging(DiffiMaxSettings(depth=1), JudgeSettings(judges=frozenset({"dip", "trappy", "practical"})), "dip")
    occurrences = list(game_occurrences("g", GAME, range(len(GAME))))
    repeats = [
        o.__class__(
            o.seq + len(GAME),
            "h",
            *[getattr(o, f) for f in ("ply", "position_key", "key", "base", "moves", "played", "context")],
        )
        for o in occurrences
    ]
    warm = AnalysisWorker(engine, EngineOptions(), judging)
    served = warm.analyse_part(occurrences + repeats)
    cold = AnalysisWorker(engine, EngineOptions(), judging, table_mb=0)
    fresh = cold.analyse_part(occurrences + repeats)
    assert served.reused == len(GAME) and fresh.reused == 0
    assert served.engine_calls < fresh.engine_calls
    left = served.responses.drop_columns(["reused"]).to_pylist()
    right = fresh.responses.drop_columns(["reused"]).to_pylist()
    assert left == right
    assert served.traps.drop_columns(["reused"]).to_pylist() == fresh.traps.drop_columns(["reused"]).to_pylist()
