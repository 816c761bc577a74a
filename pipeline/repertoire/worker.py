"""A repertoire worker: one engine, the human evidence and a bounded table of engine answers for the
whole run (a Ray actor in `pipeline.repertoire.driver`, a plain object in tests and plans).

Nodes are routed to the worker that owns their analysis key (`pipeline.mine.table.partition_of`),
so a position reached by several lines meets the table that holds its answers, exactly as a mining
job's positions meet theirs.
"""

from __future__ import annotations

import dataclasses
import time

from pipeline.common.files import MIB
from pipeline.engines.options import EngineOptions
from pipeline.engines.process import EngineStartError
from pipeline.judging import HumanEvidence, Judge, KitWorker
from pipeline.mine.plan.measure import cpu_seconds
from pipeline.mine.table import DEFAULT_TABLE_MB, AnalysisEntry, AnalysisTable, TableLines
from pipeline.repertoire.expand import (
    Cost,
    NodeRequest,
    OpponentResult,
    PlayerResult,
    board_analysis_key,
    expand_opponent,
    expand_player,
    sketch_opponent,
    sketch_player,
    timed_cost,
)
from pipeline.repertoire.settings import RepertoireSettings, Start
from search.errors import DiffimaxError

NodeResult = PlayerResult | OpponentResult


class RepertoireWorker(KitWorker):
    """Expands the nodes it is given on its engine, model, corpus and table. A backend that cannot
    start makes each node come back with that error."""

    def __init__(
        self,
        engine: str,
        options: EngineOptions,
        settings: RepertoireSettings,
        start: Start,
        human: HumanEvidence | None = None,
        table_mb: float = DEFAULT_TABLE_MB,
        *,
        sketch: bool = False,
    ) -> None:
        self.settings = settings
        self.sketch = sketch
        """Expand on the shallow pass alone (`sketch_player`, `sketch_opponent`): a plan's sketch."""
        self.start = start
        self.table = AnalysisTable(round(table_mb * MIB))
        super().__init__(engine, options, human)
        self.judge = Judge(self.kit, settings.diffimax, settings.judges)

    def expand(self, request: NodeRequest) -> NodeResult:
        """Expand one node (`pipeline.repertoire.expand`); a node whose analysis fails (an engine
        that failed twice) comes back with its error and no evaluation."""
        started = time.perf_counter()
        board = self.start.board(request.path)
        if self.backend is None:
            return failed(request, f"engine did not start: {self.startup_error}")
        key = board_analysis_key(board)
        entry = self.table.get(key)
        reused = entry is not None
        entry = entry or AnalysisEntry()
        lines = TableLines(entry, self.backend, board, self.settings.color, self.settings.diffimax)
        try:
            if request.kind == "player" and self.sketch:
                result: NodeResult = sketch_player(lines, board, self.settings, request.node, len(request.path))
            elif request.kind == "player":
                result = expand_player(lines, board, self.settings, request.node, self.judge.kit.model)
            else:
                opponent = sketch_opponent if self.sketch else expand_opponent
                result = opponent(lines, board, self.settings, request, self.judge)
        except EngineStartError as error:
            return failed(request, f"engine did not start: {error}")
        except DiffimaxError as error:
            return failed(request, f"{type(error).__name__}: {error}")
        finally:
            if lines.changed or not reused:
                self.table.put(key, entry)
        return dataclasses.replace(result, cost=timed_cost(lines, started, reused))

    def table_stats(self) -> dict[str, int]:
        return self.table.stats()

    def cpu(self) -> float:
        """CPU seconds of this process and its engines so far (`pipeline.mine.plan.measure.cpu_seconds`)."""
        return cpu_seconds()


def failed(request: NodeRequest, reason: str) -> NodeResult:
    """A node that could not be expanded, with why (the tree keeps it as a leaf and counts it)."""
    if request.kind == "player":
        return PlayerResult(request.node, {}, "", 0, (), {}, "deep", Cost(), reason)
    return OpponentResult(request.node, "", 0, "none", None, {}, {}, {}, (), {}, {}, (), {}, Cost(), reason)
