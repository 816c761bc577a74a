"""A dataset on object storage, against a real S3 endpoint on 127.0.0.1 (moto's server): the commit
protocol (staged objects under an attempt of their own, the shard committed by its record put last
and only once), readers that trust only committed shards, leftovers cleared, a writer killed
mid-upload, the lease (a second job refused, an expired or dead holder's lease taken over, a lost
lease noticed), integrity (`verify`, `--resume` refusing a damaged shard, `--repair`)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.common.storage import filesystem
from pipeline.dataset import lease as lease_module
from pipeline.dataset.integrity import (
    DamagedDatasetError,
    IncompleteDatasetError,
    check_dataset,
)
from pipeline.dataset.lease import LEASE_DIR, Lease, acquire, check_free, dataset_lock
from pipeline.dataset.lease import store_time as real_store_time
from pipeline.dataset.lock import LockedError
from pipeline.dataset.objects import ObjectPath
from pipeline.dataset.queries import run_query
from pipeline.dataset.store import DatasetReader, DatasetWriter, OutputError, commit_shard
from pipeline.dataset.verify import verify_dataset
from pipeline.ingest.games import read_pgn_bytes
from pipeline.ingest.outcomes import Selected
from tests.conftest import GAMES
from tests.objectstore import S3Server, s3_server

SHARD = "games-0123abcd-000000"
OTHER = "games-0123abcd-000001"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


def shard_rows(game: str, plies: int = 3) -> dict[str, Any]:
    """A shard's rows: game number `game` of lichess_100.pgn, its first `plies` positions."""
    index = int(game.removeprefix("g"))
    text = (GAMES / "lichess_100.pgn").read_bytes()
    outcomes = [outcome for outcome in read_pgn_bytes(text, shard_id=SHARD) if isinstance(outcome, Selected)]
    chosen = outcomes[index]
    return {"games": [chosen.game], "positions": chosen.positions[:plies]}


def info(shard_id: str, games: int = 1) -> dict[str, Any]:
    return {"shard_id": shard_id, "source": "test.pgn", "counts": {"games_read": games, "games_written": games}}


def keys(s3: S3Server, bucket: str) -> list[str]:
    return sorted(filesystem("s3").find(bucket))


def new_dataset(s3: S3Server) -> tuple[str, DatasetWriter]:
    url = f"s3://{s3.bucket()}/runs/one"
    return url, DatasetWriter.create(url, {"identity": {"test": True}})


def test_a_shard_is_committed_once_by_its_record_and_readers_see_only_committed_shards(s3: S3Server) -> None:
    url, writer = new_dataset(s3)
    assert commit_shard(url, SHARD, shard_rows("g1"), info(SHARD)) is True
    # A second attempt of the same shard (a retried writer) finds the record, and deletes its files.
    assert commit_shard(url, SHARD, shard_rows("g1"), info(SHARD)) is False
    attempts = {key.split("/")[5] for key in keys(s3, url.split("/")[2]) if "/shards/" in key}
    assert len(attempts) == 2  # the record, and one attempt's directory
    # An attempt that uploaded its files and never wrote its record (killed mid-upload) is invisible.
    staged = ObjectPath(url) / "shards" / OTHER / ("f" * 32)
    (staged / "games.parquet").put(b"PAR1 not a finished file")
    assert DatasetReader(url).committed() == {SHARD}
    state = check_dataset(url, allow_partial=True)
    assert state.shards == [SHARD] and not state.finished
    assert run_query(state, "select count(*) from positions").rows == [(3,)]
    with pytest.raises(IncompleteDatasetError):
        check_dataset(url)
    writer.write_manifest({"test": True})  # the end of the job clears what no record names
    assert not (ObjectPath(url) / "shards" / OTHER).is_dir()
    assert check_dataset(url).shards == [SHARD]
    report = verify_dataset(url)
    assert report.problems == [] and report.files == 5


def test_a_writer_killed_mid_upload_leaves_nothing_a_reader_sees(s3: S3Server) -> None:
    """The writer runs in a process of its own that is SIGKILLed after its first object is up."""
    url, writer = new_dataset(s3)
    commit_shard(url, SHARD, shard_rows("g1"), info(SHARD))
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=_slow_commit, args=(url, OTHER))
    child.start()
    base = ObjectPath(url) / "shards" / OTHER
    deadline = time.monotonic() + 600  # a spawned interpreter imports pyarrow and s3fs first: slow on a loaded machine
    while not base.is_dir() and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(child.pid or 0, signal.SIGKILL)
    child.join(30)
    assert base.is_dir(), "the writer uploaded nothing before it was killed"
    assert not (base / "_shard.json").is_file()
    assert DatasetReader(url).committed() == {SHARD}
    assert run_query(check_dataset(url, allow_partial=True), "select count(*) from games").rows == [(1,)]
    reopened = DatasetWriter.reopen(url)  # --resume clears the killed attempt's objects
    assert not base.is_dir()
    assert commit_shard(url, OTHER, shard_rows("g2"), info(OTHER)) is True
    reopened.write_manifest({})
    assert run_query(url, "select count(*) from games").rows == [(2,)]
    assert writer.root == reopened.root


def _slow_commit(url: str, shard_id: str) -> None:
    """`commit_shard`, each object's upload followed by a long pause (a writer to kill mid-upload)."""
    real = ObjectPath.put

    def slow_put(self: ObjectPath, data: bytes, *, create: bool = False) -> None:
        real(self, data, create=create)
        time.sleep(60)

    ObjectPath.put = slow_put  # type: ignore[method-assign]
    commit_shard(url, shard_id, shard_rows("g2"), info(shard_id))


class StoreClock:
    """The store's clock as the lease reads it (`pipeline.dataset.lease.store_time`), set by the test:
    the store's own clock until `now` is set. An expiry measured on the real one raced S3's 1 s
    `Last-Modified` resolution and a loaded machine's pauses."""

    def __init__(self) -> None:
        self.now: float | None = None

    def __call__(self, root: ObjectPath) -> float:
        return real_store_time(root) if self.now is None else self.now


@pytest.fixture
def store_clock(monkeypatch: pytest.MonkeyPatch) -> StoreClock:
    clock = StoreClock()
    monkeypatch.setattr(lease_module, "store_time", clock)
    return clock


def last_modified(path: ObjectPath) -> float:
    """An object's `Last-Modified`: when the store says it was written (what a lease's age counts from)."""
    return float(filesystem("s3").info(path.path)["LastModified"].timestamp())


def test_a_second_job_is_refused_and_a_dead_or_expired_lease_is_taken_over(
    s3: S3Server, store_clock: StoreClock
) -> None:
    root = ObjectPath(f"s3://{s3.bucket()}/runs/leased")
    with dataset_lock(root, "diffimax mine first") as lease:  # the store's real clock
        assert lease is not None and lease.conditional
        with pytest.raises(LockedError, match=r"in use by another diffimax job \(pid \d+ .*diffimax mine first"):
            acquire(root, "diffimax mine second")
        with pytest.raises(LockedError):
            check_free(root)
    check_free(root)  # released
    # A lease of a job on another host, renewed 1 s at most: held for that second, expired after it
    # (on the store's clock, set here).
    record = {"pid": 1, "host": "elsewhere", "command": "diffimax mine gone", "since": time.time(), "seconds": 1}
    (root / LEASE_DIR / "00000007.json").put(json.dumps(record).encode())
    written = last_modified(root / LEASE_DIR / "00000007.json")
    for age in (0.0, 0.9):
        store_clock.now = written + age
        with pytest.raises(LockedError, match="elsewhere"):
            acquire(root, "too soon", seconds=30)
    store_clock.now = written + 2.0
    taken = acquire(root, "diffimax mine after", seconds=30)
    assert taken.number == 8
    # The old holder, renewing, finds it has lost the lease.
    old = Lease(root, 7, 1.0, True)
    old.renew()
    assert old.lost is not None and "another job took the lease" in old.lost
    taken.release()
    # A holder on this host whose process is gone holds nothing, however fresh its lease.
    record = {
        "pid": _dead_pid(),
        "host": socket.gethostname(),
        "command": "killed",
        "since": time.time(),
        "seconds": 600,
    }
    (root / LEASE_DIR / "00000009.json").put(json.dumps(record).encode())
    store_clock.now = last_modified(root / LEASE_DIR / "00000009.json")  # renewed this very second
    acquire(root, "resumed", seconds=30).release()


def _dead_pid() -> int:
    child = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    child.start()
    child.join()
    return child.pid or 0


def test_verify_resume_and_repair_on_object_storage(s3: S3Server) -> None:
    url, writer = new_dataset(s3)
    for shard_id, game in ((SHARD, "g1"), (OTHER, "g2")):
        commit_shard(url, shard_id, shard_rows(game), info(shard_id))
    writer.write_manifest({})
    assert verify_dataset(url).problems == []
    record = json.loads((ObjectPath(url) / "shards" / OTHER / "_shard.json").read_bytes())
    damaged = ObjectPath(url) / "shards" / OTHER / record["attempt"] / "positions.parquet"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 3] ^= 0xFF  # one byte inside a page: same size, same footer
    damaged.put(bytes(data))
    assert any(OTHER in problem and "SHA-256" in problem for problem in verify_dataset(url).problems)
    # A corrupted footer is found by every reader's cheap check.
    footer = bytearray(data)
    footer[-20] ^= 0xFF
    damaged.put(bytes(footer))
    with pytest.raises(DamagedDatasetError, match=OTHER):
        check_dataset(url)
    with pytest.raises(DamagedDatasetError, match="--resume --repair"):
        DatasetWriter.reopen(url)
    repaired = DatasetWriter.reopen(url, repair=True)
    assert DatasetReader(url).committed() == {SHARD}
    assert not (ObjectPath(url) / "shards" / OTHER).is_dir()
    commit_shard(url, OTHER, shard_rows("g2"), info(OTHER))
    repaired.write_manifest({})
    assert verify_dataset(url).problems == []
    assert run_query(url, "select count(*) from positions").rows == [(6,)]


def test_a_new_job_refuses_a_prefix_that_is_not_empty(s3: S3Server) -> None:
    url, writer = new_dataset(s3)
    with pytest.raises(OutputError, match="not empty"):
        DatasetWriter.create(url, {})
    writer.discard()  # nothing committed: the prefix is left empty
    assert not ObjectPath(url).is_dir()
    with pytest.raises(OutputError, match="nothing to resume"):
        DatasetWriter.reopen(url)
