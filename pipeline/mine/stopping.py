"""How a mining job stops before its end: Ctrl-C, SIGTERM, a lost lease or an engine that cannot
start. Published shards stay; the one line the job ends with says what was kept and how to go on
(`--resume`), or that nothing was committed and the output is gone.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from pipeline.common.cluster import StderrAside
from pipeline.dataset.store import DatasetWriter
from search.errors import DiffimaxError


class MiningStopped(DiffimaxError, RuntimeError):
    """The job stopped before the end (an interrupt, an engine that cannot start); committed
    shards are kept. `exit_code` is what the command line exits with."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Terminated(BaseException):
    """SIGTERM, raised by the driver loop (like KeyboardInterrupt for SIGINT)."""


def stopped_message(store: DatasetWriter, why: str, resumable: bool = True) -> str:
    committed = len(store.committed())
    if (not committed and store.created) or (store.lease is not None and store.lease.lost is not None):
        store.discard()  # only what this run wrote, its job.json only while its lease holds (`discard`)
    if store.lease is not None and (lost := store.lease.lost) is not None:  # discard asked the store again
        why = why if lost in why else f"{why}; {lost}"
        return f"{why}; {str(store.root)!r} is that job's now: this one removed only its own uncommitted files"
    if not committed and store.created:
        return f"{why}; nothing was committed, {str(store.root)!r} removed"
    then = "run the same command with --resume to continue" if resumable else "start a new job (a new --out)"
    return f"{why}; {committed} shard{'s' if committed != 1 else ''} committed in {str(store.root)!r}: {then}"


@contextlib.contextmanager
def sigterm_stops(stop: threading.Event, aside: StderrAside) -> Iterator[None]:
    """SIGTERM sets `stop`, which the driver loop turns into `Terminated` between two steps
    (raising inside the handler could land inside Ray's C++ calls), and puts stderr aside at once:
    a SIGTERM to the whole group reaches Ray's own processes too, whose dying words the driver
    would print. Only the main thread can set a handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        stop.set()
        aside.start()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
