"""Processes a test started, found in /proc by their session: what must be gone after a fault.

Subprocesses started with `start_new_session=True` lead a session of their own (sid = their pid);
Ray's processes and the engines they start stay in it (an engine gets its own process group, not
its own session), so "nothing left of that session" means no raylet, GCS, worker or engine
outlived the job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
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


def assert_session_ends(sid: int, seconds: float = 20.0) -> None:
    """Every process of session `sid` exits within `seconds`."""
    deadline = time.monotonic() + seconds
    left = session_processes(sid)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = session_processes(sid)
    assert not left, f"processes left behind: {left}"


def terminate_timed(process: subprocess.Popen[str], timeout: float = 60.0) -> tuple[float, str]:
    """SIGTERM `process` (a session leader) and wait for its end: (seconds from the signal to the
    exit, its stderr). A process still alive after `timeout` is killed with its whole group."""
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        _, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=60)
    return time.monotonic() - sent, stderr


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
