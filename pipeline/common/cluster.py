"""The one way the pipeline starts or joins a Ray cluster, with Ray's own chatter kept out of the
user's terminal.

    with ray_session(address=None) as started:   # a new local cluster (or RAY_ADDRESS / --address)
        ...                                        # Ray is up; `started` says whether this call started it

    fan_out(function, calls, workers=4, shared=(book,))   # [function(*call, book) for call in calls]

A session started here is shut down here, whatever ends the block; one found already running (a
test's cluster, `ray job submit`'s) is left as it was found.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import ray

from pipeline.common.progress import Progress
from search.errors import DiffimaxError

# Tries to start a local Ray cluster before the job gives up (see `start_ray`).
CLUSTER_START_ATTEMPTS = 2

# The project root: workers import this project from where the driver did.
PROJECT_ROOT = str(Path(__file__).resolve().parent.parent.parent)

# Retries of one `fan_out` call whose worker died (a task that raised is not retried).
FAN_OUT_RETRIES = 2

Result = TypeVar("Result")


class ClusterError(DiffimaxError, RuntimeError):
    """Ray could not start or reach the cluster (an overloaded machine, a wrong --address)."""


def start_ray(
    address: str | None,
    *,
    verbose: bool = False,
    num_cpus: int | None = None,
    runtime_env: dict[str, Any] | None = None,
) -> None:
    """Connect to `address`, or start a local cluster (`num_cpus` CPUs, default all), with Ray's
    own chatter kept out of the user's terminal unless `verbose` (its logs stay in /tmp/ray)."""
    # Ray announces that a new local cluster uses token authentication (its default, which we
    # keep); the user did not ask about it.
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    if address is None and "RAY_ADDRESS" not in os.environ:
        # A new local cluster, even where a `ray start` cluster runs on this machine (ray.init would
        # join it): --address is how a job joins a cluster; `ray job submit` sets RAY_ADDRESS.
        address = "local"
    options: dict[str, Any] = {}
    if num_cpus is not None and address == "local":
        options["num_cpus"] = num_cpus
    if runtime_env is not None:
        options["runtime_env"] = runtime_env
    # Ray's processes share the driver's process group, so a Ctrl-C in the terminal, or a
    # supervisor's SIGTERM to the group, would reach them all: the raylet would die under the
    # driver, and Ray's core worker would end the driver (exit 1, no word) before its handler could
    # wind the job down. They inherit an ignored SIGINT and a blocked SIGTERM instead (a mask
    # survives exec, and the raylet's own SIGTERM handler cannot undo it); the driver alone
    # answers, and stops them itself (ray.shutdown's SIGTERM stays pending, its SIGKILL follows).
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}) if main_thread else None
    try:
        for attempt in range(1, CLUSTER_START_ATTEMPTS + 1):
            try:
                ray.init(
                    address=address,
                    include_dashboard=False,
                    logging_level=logging.INFO if verbose else logging.ERROR,
                    log_to_driver=verbose,
                    configure_logging=verbose,
                    **options,
                )
                return
            except (ConnectionError, TimeoutError) as error:
                raise ClusterError(f"Ray could not reach the cluster at {address!r}: {error}") from None
            except Exception as error:
                # Ray raises a bare Exception when its raylet does not register within its fixed
                # 30 s (a loaded machine); a second try usually finds the machine less busy.
                if "timed out during startup" not in str(error):
                    raise
                ray.shutdown()
                # A start that timed out leaves its head's processes (GCS server, dashboard, log
                # and autoscaler monitors) running: each try on a loaded machine added four.
                kill_processes_matching(rf"/session_[0-9_-]+_{os.getpid()}\b")
                if attempt == CLUSTER_START_ATTEMPTS:
                    raise ClusterError(
                        f"Ray's local cluster did not start in time, {attempt} tries (machine overloaded?): {error}"
                    ) from None
    finally:
        if previous_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


class StderrAside:
    """Sends this process's stderr (file descriptor 2, where Ray's C++ core and its error listener
    write) to a log file from `start` to `end`: while an interrupted cluster shuts down its dying
    processes say so at length. `start` is safe in a signal handler and may be called twice."""

    def __init__(self) -> None:
        self.saved: int | None = None

    def start(self) -> None:
        if self.saved is not None:
            return
        sys.stderr.flush()
        self.saved = os.dup(2)
        with tempfile.NamedTemporaryFile("wb", prefix="diffimax-ray-shutdown-", suffix=".log", delete=False) as log:
            os.dup2(log.fileno(), 2)
            # Nobody reads it: the name goes at once (the open file takes what is written until
            # `end`), so an interrupted job leaves no file behind (404 were left in /tmp).
            os.unlink(log.name)

    def end(self) -> None:
        if self.saved is None:
            return
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.saved = None


def stop_ray(*, quietly: bool = False) -> None:
    """`ray.shutdown()`, and when this process started the cluster, none of its processes left.
    Ray stops the processes it knows of; a worker the raylet was still starting when the cluster
    went down (on a loaded machine) is not among them, and would live on for the ~10 s of its
    connection retries plus its imports. `quietly` keeps the dying processes' complaints out of the
    terminal (an interrupt)."""
    worker = ray._private.worker
    node = worker._global_node  # Ray's handle on the cluster, if this process started it
    aside = StderrAside()
    if quietly:
        aside.start()
    try:
        if node is not None and node.head:
            # The cluster's processes block SIGTERM (start_ray), so Ray's graceful stop would send
            # each a SIGTERM that stays pending and wait 1 s before its SIGKILL: 5 s a job. Ray
            # disconnects the driver first (its core worker must not outlive the raylet), then we
            # stop the processes at once, in Ray's order.
            worker._global_node = None
            ray.shutdown()
            # The raylet's own children (its agents, renamed `ray::...`, and the workers) would
            # otherwise outlive a raylet that had no time to stop them, for up to a minute.
            children = descendants([info.process.pid for infos in node.all_processes.values() for info in infos])
            node.destroy_external_storage()
            node.kill_all_processes(check_alive=False, allow_graceful=False)
            for pid in children:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            kill_processes_mentioning(node.get_session_dir_path())
        else:
            ray.shutdown()
    finally:
        aside.end()


def descendants(pids: list[int]) -> list[int]:
    """The pids of every living descendant of `pids` (children, their children, ...), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The parent is the second field after the command name, which may hold spaces.
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    found: list[int] = []
    frontier = set(pids)
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found.extend(children)
        frontier = set(children)
    return found


def kill_processes_matching(pattern: str, signum: int = signal.SIGKILL) -> list[int]:
    """`kill_processes_mentioning` for the processes whose command line matches the regular
    expression `pattern` (such as the sessions this process started: Ray names a session's
    directory after its driver's pid)."""
    compiled = re.compile(pattern.encode())
    killed = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if compiled.search((entry / "cmdline").read_bytes().replace(b"\0", b" ")):
                os.kill(int(entry.name), signum)
                killed.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return killed


def kill_processes_mentioning(text: str, signum: int = signal.SIGKILL) -> list[int]:
    """Signal (SIGKILL by default) every process but this one whose command line contains `text`,
    such as a Ray session's directory, which each of its processes is started with; returns their
    pids."""
    return kill_processes_matching(re.escape(text), signum)


@contextlib.contextmanager
def ray_session(
    address: str | None = None,
    *,
    verbose: bool = False,
    num_cpus: int | None = None,
    runtime_env: dict[str, Any] | None = None,
    interrupts: tuple[type[BaseException], ...] = (KeyboardInterrupt,),
) -> Iterator[bool]:
    """Ray for the duration of the block: the session found running, or one started here (yields
    True) and shut down at the end, quietly when one of `interrupts` ends the block."""
    if ray.is_initialized():
        yield False
        return
    start_ray(address, verbose=verbose, num_cpus=num_cpus, runtime_env=runtime_env)
    try:
        yield True
    except interrupts:
        stop_ray(quietly=True)  # Ray's dying workers say so at length: not in the user's terminal
        raise
    finally:
        if ray.is_initialized():
            stop_ray()


def project_runtime_env() -> dict[str, Any]:
    """A runtime environment whose workers import this checkout first (an editable install in
    another worktree, or none, must not win)."""
    path = os.pathsep.join(p for p in (PROJECT_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": {"PYTHONPATH": path}}


# Seconds between two reports of a fan-out task's finished units to the driver's counter.
TICK_SECONDS = 1.0
# Seconds the driver waits for a fan-out result before it looks at the counter again.
LOOK_SECONDS = 0.5
# What a fan-out task is given, with `ticks`, to say it finished some units of work.
Tick = Callable[[int], None]


class TickCounter:
    """A Ray actor: the units of work the tasks of one `fan_out` have finished (for its progress)."""

    def __init__(self) -> None:
        self.done = 0

    def add(self, amount: int) -> None:
        self.done += amount

    def total(self) -> int:
        return self.done


class RemoteTick:
    """A task's `tick`: units are told to the counter at most every TICK_SECONDS (an actor call
    per unit would cost more than many a unit), the rest when the task ends (`flush`)."""

    def __init__(self, counter: Any) -> None:
        self.counter = counter
        self.pending = 0
        self.last = time.monotonic()

    def __call__(self, amount: int = 1) -> None:
        self.pending += amount
        if time.monotonic() - self.last >= TICK_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.counter.add.remote(self.pending)
            self.pending = 0
        self.last = time.monotonic()


def _ticked(function: Callable[..., Result], counter: Any, *args: Any) -> Result:
    tick = RemoteTick(counter)
    try:
        return function(*args, tick)
    finally:
        tick.flush()


def fan_out(
    function: Callable[..., Result],
    calls: Sequence[Sequence[Any]],
    *,
    workers: int,
    shared: Sequence[Any] = (),
    on_result: Callable[[int, Result], None] | None = None,
    progress: Progress | None = None,
) -> list[Result]:
    """`[function(*call, *shared) for call in calls]`, on a local Ray cluster of `workers` CPUs
    (one task per call) when `workers > 1`, else on this process. `shared` objects (a book, a
    corpus) go to the object store once, not once per call. `on_result(index, result)` sees each
    result as it arrives; the list comes back in call order whatever the finish order. With
    `progress` (its step started by the caller), each call is given one more argument, a `Tick`
    to call with the units of work it finishes, and the step counts them as they finish."""
    extra: tuple[Any, ...] = ()
    if workers <= 1:
        if progress is not None:
            extra = (progress.advance,)
        results = []
        for index, call in enumerate(calls):
            results.append(function(*call, *shared, *extra))
            if on_result is not None:
                on_result(index, results[-1])
        return results
    with ray_session(num_cpus=workers, runtime_env=project_runtime_env()):
        task = ray.remote(num_cpus=1, max_retries=FAN_OUT_RETRIES)(function if progress is None else _ticked)
        counter_class: Any = ray.remote(num_cpus=0)(TickCounter)
        counter: Any = counter_class.remote() if progress is not None else None
        head = (function, counter) if progress is not None else ()
        shared_refs = [ray.put(value) for value in shared]
        index_of = {task.remote(*head, *call, *shared_refs): index for index, call in enumerate(calls)}
        arrived: dict[int, Result] = {}
        pending = list(index_of)
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=LOOK_SECONDS if progress else None)
            for ref in done:
                arrived[index_of[ref]] = ray.get(ref)
                if on_result is not None:
                    on_result(index_of[ref], arrived[index_of[ref]])
            if progress is not None and counter is not None and (progress.due() or not pending):
                progress.update(int(ray.get(counter.total.remote())))
        return [arrived[index] for index in range(len(calls))]


__all__ = [
    "ClusterError",
    "StderrAside",
    "Tick",
    "fan_out",
    "kill_processes_matching",
    "kill_processes_mentioning",
    "project_runtime_env",
    "ray_session",
    "start_ray",
    "stop_ray",
]
