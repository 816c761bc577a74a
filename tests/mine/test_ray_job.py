"""End to end on a real Ray cluster: `ray start --head` on loopback with token authentication
on, the real `ray job submit` client with `--working-dir .`, `python -m jobs.mine`, Parquet back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pipeline.common.cluster import kill_processes_mentioning
from pipeline.dataset.duck import connect
from tests.conftest import GAMES, ROOT
from tests.mining_helpers import assert_counts_add_up

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def cluster(tmp_path):
    """A one-node cluster with token authentication, its token in a private HOME."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": f"{BIN}:{os.environ['PATH']}", "RAY_AUTH_MODE": "token"}
    env.pop("RAY_ADDRESS", None)
    ray = str(BIN / "ray")
    subprocess.run([ray, "get-auth-token", "--generate"], env=env, check=True, capture_output=True, timeout=60)
    assert (home / ".ray" / "auth_token").is_file()
    dashboard = free_port()
    # Every port of this head is a free one: Ray's defaults (the agent's HTTP port 52365 above
    # all) collide with the other clusters the suite starts side by side under xdist, and a
    # head whose agent could not bind it answers every submission "No available agent".
    agent_ports = [
        f"--dashboard-agent-listen-port={free_port()}",
        f"--dashboard-agent-grpc-port={free_port()}",
        f"--metrics-export-port={free_port()}",
        f"--runtime-env-agent-port={free_port()}",
    ]
    # Unix socket paths are limited to 107 bytes, so Ray's session lives under a short name.
    temp_dir = tempfile.mkdtemp(prefix="rayjob-", dir="/tmp")
    started = subprocess.run(
        [
            ray,
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={free_port()}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dashboard}",
            "--num-cpus=2",
            "--disable-usage-stats",
            f"--temp-dir={temp_dir}",
            *agent_ports,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield env, f"http://127.0.0.1:{dashboard}", Path(temp_dir)
    finally:
        # This cluster's processes only (each names its session under temp_dir): `ray stop` stops
        # every Ray process on the machine, the other xdist worker's clusters too (their GCS gone,
        # a mining job in test_plan failed with "Failed to connect to GCS").
        kill_processes_mentioning(temp_dir, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while kill_processes_mentioning(temp_dir, 0) and time.monotonic() < deadline:
            time.sleep(0.2)
        kill_processes_mentioning(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_ray_job_submit_end_to_end(cluster, tmp_path):
    env, address, temp_dir = cluster
    out = tmp_path / "dataset"
    ray = str(BIN / "ray")
    entrypoint = [
        "python",
        "-m",
        "jobs.mine",
        str(GAMES / "lichess_100.pgn"),
        "--out",
        str(out),
        "--engine",
        "native",
        "--depth",
        "1",
        "--plies",
        "12-12",
        "--max-games",
        "40",
        "--workers",
        "2",
    ]
    unauthenticated = {k: v for k, v in env.items() if k != "RAY_AUTH_MODE"}
    refused = subprocess.run(
        [ray, "job", "list", "--address", address], env=unauthenticated, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode != 0, "the cluster accepted a client without its token"
    # The head's job agent may still be starting after `ray start`; Ray says so and asks to retry.
    deadline = time.monotonic() + 120
    while True:
        submitted = subprocess.run(
            [ray, "job", "submit", "--address", address, "--working-dir", str(ROOT), "--", *entrypoint],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if "No available agent" not in submitted.stderr + submitted.stdout or time.monotonic() > deadline:
            break
        time.sleep(3)
    agent_log = next(temp_dir.glob("session_*/logs/dashboard_agent.log"), None)
    agent_tail = agent_log.read_text(errors="replace")[-2000:] if agent_log else "(no dashboard_agent.log)"
    assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-3000:] + agent_tail
    assert "succeeded" in submitted.stdout.lower()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["games_read"] == 40
    assert_counts_add_up(manifest, out)
    (positions,) = connect(out).execute("select count(*) from responses").fetchone()
    assert positions == manifest["positions"] - manifest["positions_error"] > 0
