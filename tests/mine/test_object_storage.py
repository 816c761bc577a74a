"""Mining to object storage (issue 31), against a real S3 endpoint on 127.0.0.1 (moto's server,
tests/objectstore.py) and real local Ray clusters:

- the same input mined to a local directory and to `s3://` gives the same rows (DuckDB's EXCEPT ALL
  empty both ways, every table);
- `query`, `report`, `puzzles` and `verify` on the `s3://` dataset answer as on the local one;
- a job on `s3://` killed (SIGKILL, the whole process group) after each start's first committed
  shard, with the rest of its window in flight, and resumed, gives the undisturbed rows, and a
  reader polling all along never sees a shard other than whole;
- on a 3-node cluster (`ray.cluster_utils.Cluster`) with the output on object storage, the shards
  are written on more than one node.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import pytest
import ray
from ray.cluster_utils import Cluster

from pipeline.dataset.integrity import check_dataset, committed_ids
from pipeline.dataset.objects import ObjectPath
from pipeline.dataset.queries import run_query
from pipeline.dataset.store import DatasetReader
from pipeline.evals.cache import EvalCache
from pipeline.evals.export import EvalExportError, export_line
from schemas.dataset import to_signed64
from search.chessgame import zobrist
from tests.conftest import GAMES, ROOT, local_ray, needs_stockfish, one_error_line, run_cli
from tests.mining_helpers import assert_counts_add_up, except_all, mine
from tests.objectstore import S3Server, s3_server

pytestmark = pytest.mark.cluster

SAMPLE = str(GAMES / "lichess_100.pgn")
JOB = {"shard_bytes": 15_000, "workers": 2}
# The same job on the command line (MINING_JUDGES, depth 1, plies 10-11: tests/mining_helpers.mine).
COMMAND = [
    "mine",
    SAMPLE,
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
    "none",
]
# Starts killed before one is let finish, each once it has committed a shard.
KILLS = 3
NOTHING_DIFFERS = {"games": (0, 0), "positions": (0, 0), "responses": (0, 0), "traps": (0, 0), "errors": (0, 0)}


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:  # before Ray starts: its workers inherit the endpoint and credentials
        yield server


@pytest.fixture(scope="module")
def mined(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The sample mined to a local directory and to s3:// (two jobs on one local Ray cluster: each
    job starts its own workers, whose tables start empty)."""
    local = tmp_path_factory.mktemp("local") / "lichess-100"  # the name a report and the puzzles show
    remote = f"s3://{s3.bucket()}/runs/lichess-100"
    with local_ray():
        mine([SAMPLE], local, **JOB)
        manifest = mine([SAMPLE], remote, **JOB)
    assert manifest["shards_committed"] >= 3
    return local, remote


def without_bytes(verified: str) -> str:
    """`verify`'s report without its byte count."""
    return re.sub(r"[\d,]+ bytes", "N bytes", verified)


def test_the_same_input_mined_to_a_directory_and_to_s3_gives_the_same_rows(mined: tuple[Path, str]) -> None:
    local, remote = mined
    # Which repeats a worker's table served follows the parts' arrival order (SERVED), which a
    # loaded machine changes; every value and verdict is the same.
    assert except_all(local, remote) == NOTHING_DIFFERS
    manifest = json.loads((ObjectPath(remote) / "manifest.json").read_bytes())
    assert_counts_add_up(manifest, remote)  # type: ignore[arg-type]
    assert manifest["writers"]["nodes"] == 1 and not manifest["writers"]["pinned_to_driver"]
    assert DatasetReader(remote).committed() == DatasetReader(local).committed()


def test_query_report_verify_on_s3_answer_as_on_the_local_copy(mined: tuple[Path, str], tmp_path: Path) -> None:
    local, remote = mined
    for arguments in (
        ["select count(*), sum(hash(fen)) from positions"],
        ["--saved", "lift"],
        ["select judge, count(*) from judge_outcomes group by judge order by judge", "--format", "csv"],
    ):
        here = run_cli("query", "--data", str(local), *arguments, check=True)
        there = run_cli("query", "--data", remote, *arguments, check=True)
        assert there.stdout == here.stdout and here.stdout.strip()
    here, there = run_cli("verify", "--data", str(local)), run_cli("verify", "--data", remote)
    # The byte counts may differ by the compression of the `reused` flags (SERVED): not compared.
    assert here.returncode == there.returncode == 0
    assert without_bytes(here.stdout) == without_bytes(there.stdout)
    assert "all intact" in there.stdout
    pages = []
    for data, out in ((str(local), tmp_path / "local"), (remote, tmp_path / "remote")):
        run_cli("report", "--data", data, "--out", str(out), check=True)
        page = (out / "report.html").read_text()
        # What differs: when each was written and mined (the two jobs ran one after the other),
        # where each lies, and the page's copy of its manifest (times, node ids: compared below).
        volatile = (
            r"(?s)<header.*?</header>|<code>[^<]*lichess-100[^<]*</code>|<dt>run</dt><dd>[^<]*</dd>"
            r"|<section id=\"manifest\">.*?</section>"
        )
        pages.append(re.sub(volatile, "", page))
    assert pages[0] == pages[1]
    manifests = (
        json.loads((local / "manifest.json").read_text()),
        json.loads((ObjectPath(remote) / "manifest.json").read_bytes()),
    )
    counted = [
        key for key, value in manifests[0].items() if key.startswith(("games_", "positions", "traps", "shards_"))
    ]
    assert len(counted) >= 8 and all(manifests[0][key] == manifests[1][key] for key in counted)


@needs_stockfish
def test_puzzles_on_s3_are_the_local_ones(mined: tuple[Path, str], tmp_path: Path) -> None:
    """The same candidates read, verified and dropped for the same reasons (the job's window, plies
    10-11, gives set candidates whose history is not mined: none is published from either)."""
    local, remote = mined
    found = []
    for data, out in ((str(local), tmp_path / "local"), (remote, tmp_path / "remote")):
        done = run_cli(
            "puzzles",
            "--data",
            data,
            "--out",
            str(out),
            "--files",
            "csv",
            "--limit",
            "5",
            "--workers",
            "1",
            "--nodes",
            "20000",
            "--human-model",
            "none",
            check=True,
        )
        summary = [re.sub(r"; [\d.]+ s$", "", line) for line in done.stdout.splitlines()]
        written = sorted(path.name for path in out.iterdir()) if out.exists() else []
        found.append((summary, written, [(out / name).read_bytes() for name in written]))
    assert found[0] == found[1]
    assert any(re.match(r"set: [1-9]\d* candidates", line) for line in found[0][0]), found[0][0]


def committed_shards(url: str) -> int:
    """Shards committed under `url` (their records), as the store lists them now."""
    return len(committed_ids(ObjectPath(url) / "shards"))


def kill_after_a_commit(process: subprocess.Popen[str], url: str, before: int, failsafe: float = 600.0) -> int | None:
    """Once the store holds more than `before` committed shards while `process` (a job on `url`, a
    session leader) runs, SIGKILL its whole process group: the shards committed then, or None
    when the job ended first. The store is polled; `failsafe` only ends a job that hangs."""
    deadline = time.monotonic() + failsafe
    while process.poll() is None:
        assert time.monotonic() < deadline, f"no shard committed in {failsafe:.0f} s"
        if (now := committed_shards(url)) > before:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=60)
            return now
        time.sleep(0.05)
    return None


def test_a_job_on_s3_killed_at_random_points_resumes_to_the_undisturbed_rows(
    s3: S3Server, mined: tuple[Path, str]
) -> None:
    """The job's process group is SIGKILLed as soon as a start has committed a shard of its own (the
    rest of its window in flight: analyses, uploads, a record's put), and the same command resumed,
    KILLS times; then a start finishes. A reader polls the dataset all along and must only ever see
    whole shards."""
    local, _ = mined
    remote = f"s3://{s3.bucket()}/runs/killed"
    poller = Poller(remote)
    poller.start()
    starts, kills, at_kills = 0, 0, []
    try:
        while True:
            starts += 1
            command = [
                sys.executable,
                "-m",
                "pipeline.cli",
                *COMMAND,
                "--out",
                remote,
                *(["--resume"] if starts > 1 else []),
            ]
            before = committed_shards(remote)
            process = subprocess.Popen(
                command, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            try:
                if kills < KILLS and (killed_at := kill_after_a_commit(process, remote, before)) is not None:
                    kills += 1
                    at_kills.append(killed_at)
                    continue
                stdout, stderr = process.communicate(timeout=600)
            finally:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.communicate(timeout=60)
            assert process.returncode == 0, stderr[-2000:]
            assert "Dataset written" in stdout
            break
    finally:
        poller.stop()
    shards = len(DatasetReader(local).committed())
    # The figures docs/mining.md quotes (-rP).
    print(f"{starts} starts, {kills} kills (at {at_kills} of {shards} shards committed), {poller.reads} polled reads")
    assert kills >= 1, "the job finished before its first shard was seen committed"
    assert at_kills[0] < shards, "the first start committed every shard before it was killed: raise the shard count"
    assert poller.reads >= 3 and poller.problems == []
    assert except_all(local, remote) == NOTHING_DIFFERS
    assert_counts_add_up(json.loads((ObjectPath(remote) / "manifest.json").read_bytes()), remote)  # type: ignore[arg-type]


class Poller(threading.Thread):
    """Reads a dataset as `query --allow-partial` does, again and again: every shard it sees must
    hold all the rows its record counts (a half-written shard would hold fewer, or fail to read)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.done = threading.Event()
        self.reads = 0
        self.problems: list[str] = []

    def run(self) -> None:
        while not self.done.wait(1.0):
            if not (ObjectPath(self.url) / "job.json").is_file():
                continue
            try:
                state = check_dataset(self.url, allow_partial=True)
                result = run_query(state, "select shard_id, count(*) from games group by shard_id")
            except Exception as error:
                self.problems.append(f"read failed: {type(error).__name__}: {error}")
                continue
            counts: dict[str, Any] = DatasetReader(state.root).shard_info()
            for shard_id, games in result.rows:
                expected = counts.get(shard_id, {}).get("counts", {}).get("games_written")
                if shard_id not in state.shards or games != expected:
                    self.problems.append(f"shard {shard_id}: {games} games read, its record says {expected}")
            self.reads += 1

    def stop(self) -> None:
        self.done.set()
        self.join(30)


def test_on_three_nodes_with_the_output_on_s3_the_shards_are_written_on_more_than_one_node(
    s3: S3Server, mined: tuple[Path, str]
) -> None:
    local, _ = mined
    remote = f"s3://{s3.bucket()}/runs/three-nodes"
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for _ in range(2):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        with local_ray(address=cluster.address):
            assert len([node for node in ray.nodes() if node["Alive"]]) == 3
            manifest = mine([SAMPLE], remote, **JOB)
    finally:
        cluster.shutdown()
    writers = manifest["writers"]
    print(f"writers: {writers}")  # the figures docs/mining.md quotes (-rP)
    assert writers["nodes"] >= 2, writers
    assert sum(writers["shards_by_node"].values()) == manifest["shards_committed"]
    assert except_all(local, remote) == NOTHING_DIFFERS


def test_an_evaluation_export_and_its_cache_are_read_from_s3(s3: S3Server, tmp_path: Path) -> None:
    bucket, client = s3.bucket(), s3.client()
    start = chess.Board()
    line = export_line(start.epd(), [{"pvs": [{"cp": 18, "line": "e2e4 e7e5"}], "knodes": 9, "depth": 20}])
    client.put_object(Bucket=bucket, Key="lichess_db_eval.jsonl", Body=f"{line}\n".encode())  # type: ignore[attr-defined]
    run_cli("evals", f"s3://{bucket}/lichess_db_eval.jsonl", "--out", str(tmp_path / "e.parquet"), check=True)
    client.upload_file(str(tmp_path / "e.parquet"), bucket, "cache/evals.parquet")  # type: ignore[attr-defined]
    key = to_signed64(zobrist(start))
    (cached,) = EvalCache(f"s3://{bucket}/cache/evals.parquet").lookup([key, 1])[key]
    assert (cached.knodes, cached.lines[0].moves) == (9, ("e2e4", "e7e5"))
    with pytest.raises(EvalExportError, match="no evaluation cache"):
        EvalCache(f"s3://{bucket}/cache/none.parquet")
    missing = run_cli("evals", f"s3://{bucket}/none.jsonl", "--out", str(tmp_path / "n.parquet"))
    assert "cannot open evaluation export" in one_error_line(missing) and "no such object" in missing.stderr
