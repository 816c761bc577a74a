"""Live progress of a mining job: a progress bar on a terminal, sparse single lines otherwise.

The unit of progress is a judged position (an occurrence, served from its worker's table or
searched), counted as each one finishes on a worker (not when its shard commits). The total is known once the inputs are read; before that it is
estimated from the share of the input bytes routed so far, when the input size is known.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, TaskID, TaskProgressColumn, TextColumn
from rich.progress import Progress as RichProgress

# Seconds between two looks at the workers' counter.
REFRESH_SECONDS = 0.5
# Seconds between two progress lines when the output is not a terminal.
LINE_SECONDS = 30.0
# Seconds between two looks at the workers' counter when only lines are printed (the rate over the
# last RATE_WINDOW_SECONDS needs a few samples).
LINE_REFRESH_SECONDS = 5.0
# Seconds of history the rate is measured over (a rate since the start would include start-up).
RATE_WINDOW_SECONDS = 60.0


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

    def expected_analyses(self) -> int | None:
        """How many analyses the whole job will need: exact once reading is done, else estimated
        from the input bytes routed so far (None when the input size is unknown)."""
        if self.reading_done:
            return self.analyses_requested
        if not self.total_bytes or not self.bytes_routed:
            return None
        return max(self.analyses_requested, round(self.analyses_requested * self.total_bytes / self.bytes_routed))


class Rate:
    """Analyses per second over the last RATE_WINDOW_SECONDS."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.samples: deque[tuple[float, int]] = deque()

    def add(self, done: int) -> float | None:
        now = self.clock()
        self.samples.append((now, done))
        while len(self.samples) > 2 and now - self.samples[1][0] > RATE_WINDOW_SECONDS:
            self.samples.popleft()
        (first_time, first_done), (last_time, last_done) = self.samples[0], self.samples[-1]
        if last_time - first_time < 1.0 or last_done == first_done:
            return None
        return (last_done - first_done) / (last_time - first_time)


def eta_seconds(status: Status, rate: float | None) -> float | None:
    expected = status.expected_analyses()
    if expected is None or not rate:
        return None
    return max(0.0, (expected - status.analyses_done) / rate)


def describe_eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA ?"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"ETA {hours}:{minutes:02d}:{secs:02d}" if hours else f"ETA {minutes}:{secs:02d}"


def status_line(status: Status, rate: float | None) -> str:
    """One line for logs and pipes."""
    expected = status.expected_analyses()
    of = f"/{expected:,}" if expected is not None else ""
    pace = f"{rate:,.1f} positions/s" if rate else "positions/s ?"
    eta = "done" if status.finished else describe_eta(eta_seconds(status, rate))
    return (
        f"analysed {status.analyses_done:,}{of} positions | {pace} | {eta} | games {status.games_read:,} read | "
        f"{status.shards_committed:,} shards committed, {status.traps:,} trap records"
    )


class Progress:
    """Shows `Status` snapshots: a rich progress bar when `stream` is a terminal, else a line
    every LINE_SECONDS (and at the end) through `echo`."""

    def __init__(
        self,
        echo: Callable[[str], None] | None = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.echo = echo or (lambda line: print(line, file=self.stream, flush=True))
        self.clock = clock
        self.rate = Rate(clock)
        self.last_look = -REFRESH_SECONDS
        self.last_line = clock()
        self.bar: RichProgress | None = None
        self.task: TaskID | None = None
        if echo is None and self.stream.isatty():
            self.bar = RichProgress(
                TextColumn("mining"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.completed:,.0f}/{task.fields[of]} positions"),
                TextColumn("{task.fields[pace]}"),
                TextColumn("{task.fields[eta]}"),
                TextColumn("{task.fields[traps]}"),
                console=Console(file=self.stream),
                transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task("mining", total=None, of="?", pace="", eta="", traps="")

    def due(self) -> bool:
        """Is it time for a new snapshot (the driver then asks the workers' counter)? A bar is
        redrawn every REFRESH_SECONDS; lines are printed every LINE_SECONDS, so they need fewer
        looks (each costs the driver a Ray call)."""
        every = REFRESH_SECONDS if self.bar is not None else LINE_REFRESH_SECONDS
        return self.clock() - self.last_look >= every

    def update(self, status: Status) -> None:
        self.last_look = self.clock()
        rate = self.rate.add(status.analyses_done)
        if self.bar is not None and self.task is not None:
            expected = status.expected_analyses()
            self.bar.update(
                self.task,
                completed=status.analyses_done,
                total=expected,
                of=f"{expected:,}" if expected is not None else "?",
                pace=f"{rate:,.1f}/s" if rate else "",
                eta="" if status.finished else describe_eta(eta_seconds(status, rate)),
                traps=f"{status.traps:,} traps",
            )
            if status.finished:
                self.close()
            return
        now = self.clock()
        if status.finished or now - self.last_line >= LINE_SECONDS:
            self.last_line = now
            self.echo(status_line(status, rate))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
