"""Processes a test started, found in /proc by their session: what must be gone after a fault.

Subprocesses started with `start_new_session=True` lead a session of their own (sid = their pid);
Ray's processes and the engines they start stay in it (an engine gets its own process group, not
its own session), so "nothing left of that session" means no raylet, GCS, worker or engine
outlived the job. A Ray cluster a test starts in its own process (`ray.init`) is made of its
descendants (`descendants`): what a fault test may kill, and not the other pytest worker's jobs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


def session_of(pid: int) -> int | None:
    """The session id of a process (None when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[3])


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a running process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parent_of(pid: int) -> int | None:
    """The parent pid of a process (None when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def descendants(pid: int = 0) -> dict[int, str]:
    """Live processes descended from `pid` (default: this one), its children and theirs, with their
    command lines (zombies excluded): the processes a test started, and none of another test's."""
    root = pid or os.getpid()
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (parent := parent_of(int(entry.name))) is not None:
            children.setdefault(parent, []).append(int(entry.name))
    found, queue = {}, list(children.get(root, []))
    while queue:
        child = queue.pop()
        queue.extend(children.get(child, []))
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found[child] = command_line(child)
    return found


def session_processes(sid: int) -> dict[int, str]:
    """Live processes of session `sid` (zombies excluded), with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid() and session_of(int(entry.name)) == sid:
            try:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                found[int(entry.name)] = command_line(int(entry.name))
    return found


ORPHANS_NOTICE_SECONDS = 90.0
"""How long a SIGKILLed job's Ray workers may take to notice on their own. Nothing of ours runs after
SIGKILL; each worker is in a process group of its own and exits when it finds its raylet gone. A worker
still importing when the raylet dies likely finds out only after the import and its connection tries
(Ray's raylet_client_num_connect_attempts, 10, of raylet_client_connect_timeout_milliseconds, 1,000):
2-3 s on a quiet machine, and 20 s was once too little on CI's two busy cores (stop 57). A worker that
never exits still fails the test."""


def assert_session_ends(sid: int, seconds: float = 20.0) -> None:
    """Every process of session `sid` exits within `seconds`."""
    deadline = time.monotonic() + seconds
    left = session_processes(sid)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = session_processes(sid)
    assert not left, f"processes left behind: {left}"


@dataclass
class Terminated:
    """How a job answered SIGTERM (`terminate_timed`)."""

    acknowledged: float
    """Seconds from the signal to the job's answer: its handler ran (`pipeline.mine.driver`'s puts
    the driver's stderr aside at once, in a `diffimax-ray-shutdown-*.log`), or its exit if sooner."""
    took: float
    """Seconds from the signal to its exit: the answer, then Ray's shutdown, which load slows."""
    stderr: str


def _stderr_set_aside(pid: int) -> bool:
    try:
        return "diffimax-ray-shutdown-" in os.readlink(f"/proc/{pid}/fd/2")
    except OSError:
        return False


def terminate_timed(process: subprocess.Popen[str], timeout: float = 120.0) -> Terminated:
    """SIGTERM `process` (a session leader, a `diffimax mine` driver) and wait for its end. A
    process still alive after `timeout` is killed with its whole group."""
    done = threading.Event()
    answered: list[float] = []

    def watch() -> None:  # the driver's stderr, sampled until it is put aside or the driver ends
        while not done.is_set():
            if _stderr_set_aside(process.pid):
                answered.append(time.monotonic())
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    sent = time.monotonic()
    watcher.start()
    process.send_signal(signal.SIGTERM)
    try:
        _, stderr = process.communicate(timeout=timeout)
    finally:
        ended = time.monotonic()
        done.set()
        watcher.join(5)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=60)
    return Terminated(min([*answered, ended]) - sent, ended - sent, stderr)


def end_session(process: subprocess.Popen[str]) -> None:
    """Kill `process` (a session leader) and every process left in its session."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=60)
    for pid in session_processes(process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
