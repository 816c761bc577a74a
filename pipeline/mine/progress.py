"""What a mining job's progress shows (on the one display of every long command,
`pipeline.common.progress.Progress`).

The unit of progress is a judged position (an occurrence, served from its worker's table or
searched), counted as each one finishes on a worker (not when its shard commits). The total is
known once the inputs are read; before that it is estimated from the share of the input bytes
routed so far, when the input size is known. A worker reports its judged positions in batches
(`ProgressReporter`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.common.progress import Progress


@dataclass(frozen=True)
class Status:
    """A snapshot of the job for the progress display."""

    games_read: int
    analyses_requested: int  # new positions sent to the workers so far
    analyses_done: int  # of those, analysed (as the workers report them)
    positions_committed: int  # positions (analysed or reused) in committed shards
    traps: int  # trap records in committed shards
    shards_committed: int
    bytes_routed: int  # input bytes whose games have been routed
    total_bytes: int | None  # input bytes in all, when known
    reading_done: bool
    finished: bool = False
    max_games: int | None = None  # --max-games: the job ends after this many games read

    def expected_analyses(self) -> int | None:
        """How many analyses the whole job will need: exact once reading is done, else estimated
        from the input bytes routed so far, or from the games read so far when --max-games ends the
        job sooner (None when neither is known)."""
        if self.reading_done:
            return self.analyses_requested
        estimates = []
        if self.total_bytes and self.bytes_routed:
            estimates.append(self.analyses_requested * self.total_bytes / self.bytes_routed)
        if self.max_games and self.games_read:
            estimates.append(self.analyses_requested * max(1.0, self.max_games / self.games_read))
        if not estimates:
            return None
        return max(self.analyses_requested, round(min(estimates)))

    def detail(self) -> str:
        committed = f"{self.shards_committed:,} shards committed, {self.traps:,} trap records"
        return f"games {self.games_read:,} read | {committed}"


def show_status(progress: Progress, status: Status) -> None:
    """The job's snapshot on `progress`: `analysed 132/9,155 positions | 5.1 positions/s | ETA 29:19 |
    games 150 read | 0 shards committed, 0 trap records`."""
    expected = status.expected_analyses()
    if not progress.started:
        progress.start("analysed", "positions", expected, status.detail())
    if status.finished:
        progress.update(status.analyses_done, expected, status.detail(), finished=False)
        progress.finish_step()
    else:
        progress.update(status.analyses_done, expected, status.detail())


# How often a worker tells the job's progress about finished positions: a call per position (a Ray
# actor call, ~0.5 ms) cost as much as the material backend's whole analysis of one; an engine
# that takes longer than this per position is still reported position by position.
PROGRESS_INTERVAL = 0.25


class ProgressReporter:
    """Counts finished positions and tells `progress` at most every `PROGRESS_INTERVAL` seconds,
    and what is left when the unit ends (`flush`)."""

    def __init__(self, progress: Callable[[int], Any]) -> None:
        self.progress = progress
        self.pending = 0
        self.last = time.monotonic()

    def position(self) -> None:
        self.pending += 1
        now = time.monotonic()
        if now - self.last >= PROGRESS_INTERVAL:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        if self.pending:
            self.progress(self.pending)
            self.pending = 0
        self.last = time.monotonic() if now is None else now
