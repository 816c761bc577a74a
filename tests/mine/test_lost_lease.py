"""A job that lost its lease removes only what it wrote (issue 42, failure 2), against a real S3
endpoint on 127.0.0.1 (moto's server, tests/objectstore.py):

- in the store: job A's lease taken over by job B (the store's clock set past A's lease, as in
  tests/dataset/test_objects.py); A's `discard`, a shard's commit by one of A's writers, A's
  manifest and A's release then leave B's `job.json`, staged attempt, record and manifest alone,
  and A removes its own staged attempt;
- end to end: real `mine` subprocesses, each on a local Ray cluster of its own. Job A is paused
  (SIGSTOP of its driver) once it has committed a shard, until its lease (a few seconds here,
  `$DIFFIMAX_LEASE_SECONDS`) has expired by the store's clock; job B (`--resume`) takes the prefix
  and finishes; A is continued and ends. B's dataset is then exactly as B left it, whole (`verify`)
  and resumable (`mine --resume` finishes, the same `job.json`); A says it lost the lease.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.common.storage import filesystem
from pipeline.dataset import lease as lease_module
from pipeline.dataset.integrity import committed_ids
from pipeline.dataset.lease import LEASE_DIR, LEASE_SECONDS_ENV, LeaseLostError, acquire, newest
from pipeline.dataset.lease import store_time as real_store_time
from pipeline.dataset.objects import ObjectPath
from pipeline.dataset.store import DatasetReader, DatasetWriter, attempt_id, commit_shard
from pipeline.ingest.games import read_pgn_bytes
from pipeline.ingest.outcomes import Selected
from tests.conftest import GAMES, ROOT
from tests.mining_helpers import assert_counts_add_up
from tests.objectstore import S3Server, s3_server
from tests.processes import end_session

pytestmark = pytest.mark.cluster

SAMPLE = GAMES / "lichess_100.pgn"
SHARD = "games-0123abcd-000000"
# Seconds of the jobs' leases in the end-to-end test: short, so that A's pause outlasts its lease
# within seconds; long enough for the store's whole-second Last-Modified and a loaded machine's
# renewals (every quarter of it).
LEASE = 5
# The job on the command line: the cheap native engine, one worker, shards of ~5 KB (about 15 of
# lichess_100's 76 KB), so that A has committed some and B has the rest to mine.
COMMAND = [
    "mine",
    str(SAMPLE),
    "--engine",
    "native",
    "--depth",
    "1",
    "--plies",
    "10-11",
    "--workers",
    "1",
    "--shard-mb",
    "0.005",
    "--judges",
    "dip,trappy",
    "--human-model",
    "none",
]
# Seconds a condition the test waits for may take before the test gives up (Ray's start on a
# loaded machine is most of it); a failsafe, not a timing the test relies on.
FAILSAFE = 600.0


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:  # before any job starts: its Ray workers inherit the endpoint
        yield server


# -- in the store ------------------------------------------------------------------------------------


def shard_rows() -> dict[str, Any]:
    text = SAMPLE.read_bytes()
    chosen = next(outcome for outcome in read_pgn_bytes(text, shard_id=SHARD) if isinstance(outcome, Selected))
    return {"games": [chosen.game], "positions": chosen.positions[:3]}


def stage_attempt(url: str, run: str) -> ObjectPath:
    """An attempt of run `run` in flight: its first file uploaded, no record yet."""
    staged = ObjectPath(url) / "shards" / SHARD / attempt_id(run)
    (staged / "games.parquet").put(b"PAR1 an upload in flight")
    return staged


def test_a_job_that_lost_its_lease_leaves_the_new_holders_objects_alone(
    s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"s3://{s3.bucket()}/runs/taken"
    root = ObjectPath(url)
    first = acquire(root, "diffimax mine first", seconds=30)
    first.done.set()  # no renewal from its thread: the job is paused
    old = DatasetWriter.create(url, {"identity": {"test": True}, "created": time.time()})
    old.lease = first
    own = stage_attempt(url, old.token)
    # The store's clock past the first lease: the second job finds it expired, and takes the prefix.
    expired = real_store_time(root) + 31
    monkeypatch.setattr(lease_module, "store_time", lambda _root: expired)
    second = acquire(root, "diffimax mine second --resume", seconds=30)
    new = DatasetWriter.reopen(url)  # clears the first job's attempt, as a resumed run does
    new.lease = second
    assert not own.is_dir()
    job_file = (root / "job.json").read_bytes()
    theirs = stage_attempt(url, new.token)
    own = stage_attempt(url, old.token)  # one of the first job's writers, still uploading
    try:
        old.discard()  # the first job wakes up, finds nothing committed and undoes its `create`
        assert (root / "job.json").is_file(), "the first job removed the new holder's job.json"
        assert (root / "job.json").read_bytes() == job_file
        assert (theirs / "games.parquet").is_file(), "the first job removed the new holder's staged attempt"
        assert not own.is_dir(), "the first job left its own staged attempt"
        assert first.lost is not None and "another job took the lease" in first.lost
        # One of the first job's writers: its record is never put.
        with pytest.raises(LeaseLostError, match="another job took the lease"):
            commit_shard(url, SHARD, shard_rows(), {"shard_id": SHARD}, run=old.token, tenure=first.tenure)
        assert DatasetReader(url).committed() == set()
        assert (theirs / "games.parquet").is_file()
        # Its end: neither the leftovers' clearing nor the manifest.
        with pytest.raises(LeaseLostError):
            old.write_manifest({"test": True})
        assert not (root / "manifest.json").is_file() and (theirs / "games.parquet").is_file()
        first.release()
        assert second.confirm() is None, "the first job's release took the new holder's lease"
        # The new holder commits and ends as if the first job had never woken up.
        assert commit_shard(url, SHARD, shard_rows(), {"shard_id": SHARD}, run=new.token, tenure=second.tenure)
        new.write_manifest({"test": True})
        assert DatasetReader(url).committed() == {SHARD}
        # Nor does a resumed run of the first job, paused since it took the lease, reopen the dataset.
        with pytest.raises(LeaseLostError):
            DatasetWriter.reopen(url, lease=first)
        assert (root / "manifest.json").is_file()
    finally:
        second.release()
    # Once the new holder has released the prefix (its record deleted, numbering free to start
    # again), the first job still knows that the lease it held is not its own.
    third = acquire(root, "diffimax mine third --resume", seconds=30)
    try:
        assert third.number == 0 == first.number
        assert first.tenure.lost(root) is not None
    finally:
        third.release()
    assert not [key for key in filesystem("s3").find(f"{root.path}/{LEASE_DIR}/")]


# -- end to end ----------------------------------------------------------------------------------------


def start_job(url: str, logs: Path, name: str, *, resume: bool) -> subprocess.Popen[str]:
    """`diffimax mine` to `url` in a session of its own (its Ray cluster with it), this checkout
    first on its path, its output in `logs/<name>.out` and `.err`."""
    env = {**os.environ, LEASE_SECONDS_ENV: str(LEASE)}
    env["PYTHONPATH"] = os.pathsep.join(part for part in (str(ROOT), os.environ.get("PYTHONPATH", "")) if part)
    command = [sys.executable, "-m", "pipeline.cli", *COMMAND, "--out", url, *(["--resume"] if resume else [])]
    with (logs / f"{name}.out").open("w") as stdout, (logs / f"{name}.err").open("w") as stderr:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, start_new_session=True, stdout=stdout, stderr=stderr, text=True
        )


def wait_for(condition: Any, what: str, job: subprocess.Popen[str] | None = None) -> None:
    """Poll `condition` until it holds; fail when `job` ends first, or after FAILSAFE seconds."""
    deadline = time.monotonic() + FAILSAFE
    while not condition():
        assert job is None or job.poll() is None, f"the job ended (exit {job.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} in {FAILSAFE:.0f} s"
        time.sleep(0.1)


def finish(job: subprocess.Popen[str], logs: Path, name: str) -> tuple[int, str, str]:
    """Wait for `job` to end (FAILSAFE at most): its exit code, stdout and stderr."""
    code = job.wait(FAILSAFE)
    return code, (logs / f"{name}.out").read_text(), (logs / f"{name}.err").read_text()


def state_of(url: str) -> dict[str, str]:
    """Every object under `url` but the lease's, with its ETag: what another job must not change."""
    found: dict[str, dict[str, Any]] = filesystem("s3").find(ObjectPath(url).path + "/", detail=True)
    return {key: str(info.get("ETag")) for key, info in found.items() if f"/{LEASE_DIR}/" not in key}


def lease_expired(url: str) -> bool:
    """The newest lease under `url` has not been renewed for its seconds, by the store's clock."""
    found = newest(ObjectPath(url))
    return found is not None and not found.alive


def test_a_job_paused_past_its_lease_leaves_the_next_jobs_dataset_whole_and_resumable(
    s3: S3Server, tmp_path: Path
) -> None:
    url = f"s3://{s3.bucket()}/runs/paused"
    first = start_job(url, tmp_path, "first", resume=False)
    second: subprocess.Popen[str] | None = None
    try:
        wait_for(lambda: len(committed_ids(ObjectPath(url) / "shards")) >= 1, "first committed shard", first)
        os.kill(first.pid, signal.SIGSTOP)  # its driver: its lease is no longer renewed
        paused_at = len(committed_ids(ObjectPath(url) / "shards"))
        wait_for(lambda: lease_expired(url), "expiry of the first job's lease")
        second = start_job(url, tmp_path, "second", resume=True)
        code, stdout, stderr = finish(second, tmp_path, "second")
        assert code == 0, stderr[-3000:]
        assert "Dataset written" in stdout
        finished = state_of(url)
        os.kill(first.pid, signal.SIGCONT)
        first_code, _, first_err = finish(first, tmp_path, "first")
    finally:
        for job in (first, second):
            if job is not None and job.poll() is None:
                os.kill(job.pid, signal.SIGCONT)
                end_session(job)
    # Nothing of the second job's dataset was changed, added or removed by the first job.
    after = state_of(url)
    assert sorted(after) == sorted(finished), set(after) ^ set(finished)
    assert after == finished, [key for key in after if after[key] != finished[key]]
    # The first job knows it lost the lease, and says so.
    assert first_code != 0 and "another job took the lease" in first_err, first_err[-3000:]
    manifest = json.loads((ObjectPath(url) / "manifest.json").read_bytes())
    assert manifest["resumed"] is True and manifest["games_read"] == 100
    assert manifest["shards_committed"] >= 1, f"the first job committed every shard ({paused_at} when paused)"
    assert_counts_add_up(manifest, url)  # type: ignore[arg-type]
    verified = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "verify", "--data", url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=FAILSAFE,
    )
    assert verified.returncode == 0 and "all intact" in verified.stdout, verified.stdout + verified.stderr
    # Resumable: a third start finds every shard committed, finishes cleanly, and keeps the job.
    job_file = (ObjectPath(url) / "job.json").read_bytes()
    third = start_job(url, tmp_path, "third", resume=True)
    try:
        code, stdout, stderr = finish(third, tmp_path, "third")
    finally:
        end_session(third)
    assert code == 0 and "Dataset written" in stdout, stderr[-3000:]
    assert (ObjectPath(url) / "job.json").read_bytes() == job_file
    assert DatasetReader(url).committed() == set(json.loads((ObjectPath(url) / "manifest.json").read_bytes())["shards"])
