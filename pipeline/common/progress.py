"""How every long command shows that it is working: one `Progress`, a rich progress bar when its
stream is a terminal, else a line when a step starts, every LINE_SECONDS after, and when it ends.

A command makes one `Progress` and hands it to the core function, which starts a step for each
stage of its work (`start("verified", "candidates", total=...)`), counts what it finishes
(`advance`, or `update` with a count from elsewhere) and says what a count cannot (`say`). A core
function called from code without a display gets `Progress.quiet()`, which shows nothing.

    verified 120/340 candidates | 0.9 candidates/s | ETA 4:05 | 12 puzzles
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, TaskID, TaskProgressColumn, TextColumn
from rich.progress import Progress as RichProgress

# Seconds between two redraws of a bar (callers that pay for a count ask `due()` first).
REFRESH_SECONDS = 0.5
# Seconds between two progress lines when the stream is not a terminal.
LINE_SECONDS = 30.0
# Seconds between two looks at a count that costs something to read, when only lines are printed
# (the rate over the last RATE_WINDOW_SECONDS needs a few samples).
LINE_REFRESH_SECONDS = 5.0
# Seconds of history the rate is measured over (a rate since the start would include start-up).
RATE_WINDOW_SECONDS = 60.0

Echo = Callable[[str], None]


class Rate:
    """Units per second over the last RATE_WINDOW_SECONDS."""

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


def describe_eta(seconds: float | None) -> str:
    """`ETA 4:05`, `ETA 1:02:03`, or `ETA ?`."""
    if seconds is None:
        return "ETA ?"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"ETA {hours}:{minutes:02d}:{secs:02d}" if hours else f"ETA {minutes}:{secs:02d}"


def eta_seconds(done: int, total: int | None, rate: float | None) -> float | None:
    """Seconds left at `rate`, None when the total or the rate is unknown."""
    if total is None or not rate:
        return None
    return max(0.0, (total - done) / rate)


def progress_line(
    verb: str, unit: str, done: int, total: int | None, rate: float | None, detail: str, finished: bool
) -> str:
    """One line for logs and pipes: `analysed 132/9,155 positions | 5.1 positions/s | ETA 29:19 | ...`."""
    of = f"/{total:,}" if total is not None else ""
    pace = f"{rate:,.1f} {unit}/s" if rate else f"{unit}/s ?"
    eta = "done" if finished else describe_eta(eta_seconds(done, total, rate))
    return f"{verb} {done:,}{of} {unit} | {pace} | {eta}" + (f" | {detail}" if detail else "")


class Progress:
    """A progress display for one command (see the module docstring). Not thread-safe."""

    def __init__(
        self,
        *,
        stream: TextIO | None = None,
        echo: Echo | None = None,
        clock: Callable[[], float] = time.monotonic,
        enabled: bool = True,
    ) -> None:
        self.stream = stream or sys.stderr
        self.echo = echo or (lambda line: print(line, file=self.stream, flush=True))
        self.clock = clock
        self.enabled = enabled
        self.terminal = enabled and echo is None and self.stream.isatty()
        self.verb, self.unit = "", ""
        self.done = 0
        self.total: int | None = None
        self.detail = ""
        self.rate = Rate(clock)
        self.last_look = -REFRESH_SECONDS
        self.last_line = clock()
        self.bar: RichProgress | None = None
        self.task: TaskID | None = None
        self.started = False

    @classmethod
    def quiet(cls) -> Progress:
        """A display that shows nothing (a core function called without one)."""
        return cls(enabled=False, echo=lambda line: None)

    def start(self, verb: str, unit: str, total: int | None = None, detail: str = "") -> None:
        """A new step: what is counted (`verified`, `candidates`) and how many there will be."""
        self.finish_step()
        self.verb, self.unit, self.total, self.detail = verb, unit, total, detail
        self.done = 0
        self.rate = Rate(self.clock)
        self.started = True
        if not self.enabled:
            return
        if self.terminal:
            self._bar().update(
                self._task(),
                completed=0,
                total=total,
                verb=verb,
                of=self._of(),
                unit=unit,
                pace="",
                eta="",
                detail=detail,
                visible=True,
            )
        else:
            self.last_line = self.clock()
            self.echo(progress_line(verb, unit, 0, total, None, detail, False))

    def due(self) -> bool:
        """Is it time for a new count (for callers whose count costs a call to read)?"""
        every = REFRESH_SECONDS if self.terminal else LINE_REFRESH_SECONDS
        return self.clock() - self.last_look >= every

    def advance(self, amount: int = 1, detail: str | None = None) -> None:
        self.update(self.done + amount, detail=detail)

    def update(self, done: int, total: int | None = None, detail: str | None = None, *, finished: bool = False) -> None:
        """The step's count is `done` (of `total`, when it changes); shown when it is time."""
        self.last_look = self.clock()
        self.done = done
        if total is not None:
            self.total = total
        if detail is not None:
            self.detail = detail
        if not self.enabled or not self.started:
            return
        rate = self.rate.add(done)
        if self.bar is not None and self.task is not None:
            eta = "" if finished else describe_eta(eta_seconds(done, self.total, rate))
            self.bar.update(
                self.task,
                completed=done,
                total=self.total,
                of=self._of(),
                pace=f"{rate:,.1f}/s" if rate else "",
                eta=eta,
                detail=self.detail,
            )
            return
        now = self.clock()
        if finished or now - self.last_line >= LINE_SECONDS:
            self.last_line = now
            self.echo(progress_line(self.verb, self.unit, done, self.total, rate, self.detail, finished))

    def finish_step(self, detail: str | None = None) -> None:
        """The step is over: its last line (`done`), or the bar at its end."""
        if not self.started:
            return
        self.update(self.done, detail=detail, finished=True)
        self.started = False

    def say(self, line: str) -> None:
        """A message beside the count (printed above a bar)."""
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.console.print(line, markup=False, highlight=False)
        else:
            self.echo(line)

    def close(self) -> None:
        """The bar taken down (for the command's last words); no `done` for a step under way."""
        self.started = False
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self.finish_step()
        self.close()

    def _of(self) -> str:
        return f"{self.total:,}" if self.total is not None else "?"

    def _bar(self) -> RichProgress:
        if self.bar is None:
            self.bar = RichProgress(
                TextColumn("{task.fields[verb]}"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.completed:,.0f}/{task.fields[of]} {task.fields[unit]}"),
                TextColumn("{task.fields[pace]}"),
                TextColumn("{task.fields[eta]}"),
                TextColumn("{task.fields[detail]}"),
                console=Console(file=self.stream),
                transient=False,
            )
            self.bar.start()
        return self.bar

    def _task(self) -> TaskID:
        bar = self._bar()
        if self.task is not None:
            bar.stop_task(self.task)
        self.task = bar.add_task("", total=None, verb="", of="?", unit="", pace="", eta="", detail="")
        return self.task
