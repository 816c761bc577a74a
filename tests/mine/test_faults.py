"""Faults during a mining job: a killed worker process, a removed node, a killed driver.

Each job must still finish with exactly the rows of an undisturbed run. Real Ray clusters on this
machine (`ray.cluster_utils.Cluster` for several nodes); the faults are real kills.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from tests.conftest import GAMES, ROOT, local_ray
from tests.mining_helpers import SERVED, assert_counts_add_up, assert_same_rows, mine
from tests.processes import descendants

pytestmark = pytest.mark.cluster

SAMPLE = str(GAMES / "lichess_100.pgn")
JOB = {"shard_bytes": 15_000, "workers": 2}
# How long a job may show no progress before the test gives up on it (a loaded machine starts Ray
# and its workers slowly: a failsafe, not a measure).
FAILSAFE_SECONDS = 300.0


def committed(out: Path) -> int:
    return len(list((out / "shards").glob("*/_shard.json"))) if (out / "shards").is_dir() else 0


def worker_pids() -> list[int]:
    """Processes of this test's analysis actors, found by Ray's process title among the descendants
    of this process (the raylet of the cluster it started, and its workers): never the actors of a
    job another pytest worker runs beside it."""
    return sorted(pid for pid, command in descendants().items() if "MiningWorker" in command)


def run_in_thread(out: Path) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["manifest"] = mine([SAMPLE], out, **JOB)
        except BaseException as error:  # reported by the test
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def finish(thread: threading.Thread, outcome: dict, out: Path, reference: Path) -> None:
    """The disturbed job must still end normally, with the undisturbed run's rows (a restarted
    worker's table starts empty: only which occurrences it served may differ)."""
    thread.join(timeout=FAILSAFE_SECONDS)
    assert not thread.is_alive(), f"the disturbed job did not end in {FAILSAFE_SECONDS:.0f} s"
    assert "error" not in outcome, outcome.get("error")
    assert_counts_add_up(outcome["manifest"], out)
    assert_same_rows(reference, out, ignore=SERVED)


def wait_for(condition, seconds: float = FAILSAFE_SECONDS) -> None:
    """Until `condition` holds; the time is a failsafe for a job that hangs, not a measure."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"the job showed no progress in {seconds:.0f} s")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "run"
    with local_ray():
        mine([SAMPLE], out, **JOB)
    return out


def test_killed_worker_process(tmp_path, reference):
    with local_ray():
        out = tmp_path / "run"
        thread, outcome = run_in_thread(out)
        wait_for(lambda: worker_pids() or not thread.is_alive())
        wait_for(lambda: committed(out) >= 1 or not thread.is_alive())
        victims = worker_pids()
        assert victims and thread.is_alive(), "the job ended before a worker could be killed"
        os.kill(victims[0], signal.SIGKILL)
        finish(thread, outcome, out, reference)


def test_removed_node(tmp_path, reference):
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    try:
        with local_ray(address=cluster.address):
            out = tmp_path / "run"
            thread, outcome = run_in_thread(out)
            wait_for(lambda: committed(out) >= 1 or not thread.is_alive())
            assert thread.is_alive(), "the job ended before a node could be removed"
            cluster.remove_node(nodes[0])  # a whole node goes, with whatever ran on it
            finish(thread, outcome, out, reference)
    finally:
        cluster.shutdown()


def test_four_nodes_give_the_rows_of_one(tmp_path, reference):
    """A head and three worker nodes (`ray.cluster_utils.Cluster`), a worker per node: every key is
    owned by one worker wherever it runs, so the rows are the one-node run's, and as many repeats
    were served (which ones follows the order the parts reach a worker: nothing is evicted or
    restarted here)."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(3):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        with local_ray(address=cluster.address):
            out = tmp_path / "run"
            manifest = mine([SAMPLE], out, **{**JOB, "workers": 4})
            nodes = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
            assert len(nodes) == 4
    finally:
        cluster.shutdown()
    assert manifest["workers"] == 4
    assert_counts_add_up(manifest, out)
    assert_same_rows(reference, out, ignore=SERVED)


def test_resume_after_the_driver_is_killed(tmp_path, reference):
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "pipeline.cli",
        "mine",
        SAMPLE,
        "--out",
        str(out),
        "--engine",
        "native",
        "--depth",
        "1",
        "--plies",
        "10-11",
        "--workers",
        "2",
        "--shard-mb",
        str(JOB["shard_bytes"] / (1 << 20)),
        "--judges",
        "dip,trappy",
        "--human-model",
        "none",  # the reference's judges (MINING_JUDGES)
    ]
    process = subprocess.Popen(
        command, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: committed(out) >= 1 or process.poll() is not None)
        assert process.poll() is None, "the job ended before it could be killed"
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    partial = committed(out)
    assert partial >= 1
    resumed = subprocess.run([*command, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "Dataset written" in resumed.stdout
    assert_same_rows(reference, out, ignore=SERVED)
    assert_counts_add_up(json.loads((out / "manifest.json").read_text()), out)
