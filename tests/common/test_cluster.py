"""`pipeline.common.cluster.fan_out`: the one split-then-gather over Ray (the human examples, the
human evaluation and the harness use it), on this process and on a real local cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import ray

from pipeline.common.cluster import StderrAside, fan_out, ray_session
from tests.processes import descendants


def square(value: int, last_done: str | None, offset: int) -> tuple[int, int]:
    """value² + offset, with the process that computed it. With `last_done` (a path), call 0 first
    waits (up to a minute) for call 4 to have left that file: so call 0 finishes after call 4
    whatever the order Ray runs them in."""
    if last_done is not None and value == 0:
        deadline = time.monotonic() + 60
        while not os.path.exists(last_done) and time.monotonic() < deadline:
            time.sleep(0.05)
    if last_done is not None and value == 4:
        Path(last_done).touch()
    return value * value + offset, os.getpid()


def refuse(value: int) -> int:
    if value == 2:
        raise ValueError(f"no {value}")
    return value


def test_on_one_process_the_calls_run_here_in_order() -> None:
    seen: list[int] = []
    results = fan_out(
        square,
        [(value, None) for value in range(5)],
        workers=1,
        shared=(10,),
        on_result=lambda index, result: seen.append(index),
    )
    assert [value for value, _ in results] == [10, 11, 14, 19, 26]
    assert {pid for _, pid in results} == {os.getpid()}
    assert seen == [0, 1, 2, 3, 4]
    assert not ray.is_initialized()


@pytest.mark.cluster
def test_on_ray_results_come_back_in_call_order_whatever_the_finish_order(tmp_path: Path) -> None:
    seen: list[int] = []
    calls = [(value, str(tmp_path / "four-done")) for value in range(5)]
    results = fan_out(square, calls, workers=2, shared=(10,), on_result=lambda index, result: seen.append(index))
    assert [value for value, _ in results] == [10, 11, 14, 19, 26]
    assert os.getpid() not in {pid for _, pid in results}  # the work ran in Ray's workers
    assert sorted(seen) == [0, 1, 2, 3, 4] and seen.index(4) < seen.index(0)  # progress as each arrives
    assert not ray.is_initialized()  # the cluster it started is gone


@pytest.mark.cluster
def test_an_exception_in_a_call_reaches_the_caller_with_its_type() -> None:
    with pytest.raises(ValueError, match="no 2"):
        fan_out(refuse, [(value,) for value in range(4)], workers=2)
    assert not ray.is_initialized()


@pytest.mark.cluster
def test_a_process_of_the_cluster_that_ray_does_not_know_of_ends_with_it() -> None:
    with ray_session(num_cpus=1) as started:
        assert started
        session_dir = ray._private.worker._global_node.get_session_dir_path()
        # A straggler as a raylet leaves one when it dies while starting a worker: started with the
        # session's paths, but not among the processes ray.shutdown stops.
        straggler = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)", session_dir], start_new_session=True
        )
    assert straggler.wait(timeout=10) == -signal.SIGKILL
    assert not ray.is_initialized()


def blocks_sigterm(pid: int) -> bool:
    """Whether process `pid`'s main thread has SIGTERM in its blocked mask (/proc's SigBlk)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    raise AssertionError(f"no SigBlk for {pid}")


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.cluster
def test_a_sigterm_to_the_group_is_the_drivers_alone_and_every_process_of_the_cluster_ends_with_it() -> None:
    with ray_session(num_cpus=1) as started:
        assert started
        ray.get(ray.remote(square).remote(1, None, 0))  # a worker of the raylet's, to end with it
        # Every process the cluster has, found by the test's own walk of /proc (not the one under test).
        cluster = list(descendants())
        # A supervisor's SIGTERM to the job's group must not kill the raylet under the driver (Ray's
        # core worker would end the driver, exit 1, before it could stop the job in order).
        assert not blocks_sigterm(os.getpid())
        assert len(cluster) >= 5 and all(blocks_sigterm(pid) for pid in cluster if alive(pid))
    # Killed, not left to notice the raylet is gone (its agents can take seconds): 0.5 s is time to die.
    deadline = time.monotonic() + 0.5
    while any(alive(pid) for pid in cluster) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in cluster if alive(pid)] == []


def test_the_stderr_set_aside_during_a_shutdown_leaves_no_file_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted job puts its stderr aside while its cluster dies (`StderrAside`); the file
    took what was written and is gone with it (one was left in /tmp for every interrupted job)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = os.readlink("/proc/self/fd/2")
    aside = StderrAside()
    aside.start()
    try:
        os.write(2, b"a dying process's complaint\n")
        assert "diffimax-ray-shutdown-" in os.readlink("/proc/self/fd/2")
    finally:
        aside.end()
    assert os.readlink("/proc/self/fd/2") == before
    assert list(tmp_path.iterdir()) == []
