"""The Parquet dataset, on disk or on object storage: atomic per-shard commits, the job's identity,
resume, the manifest.

Layout under the output directory:

    job.json                                                             the job's identity (written first)
    shards/<shard_id>/{games,positions,responses,traps,errors}.parquet   committed shards
    shards/<shard_id>/_shard.json                                        the shard's counts and file records
    _staging/                                                            shards being written
    manifest.json                                                        the finished run, every shard's records
    .lock                                                                the job's lock (`pipeline.dataset.lock`)

A shard is written completely under `_staging/`, its files with page checksums and flushed to
disk, and then renamed into `shards/` in one `os.rename`, so a reader or a resumed job sees a
shard entirely or not at all, and a rerun can never duplicate rows. `_shard.json` records each
file's size and digests (`pipeline.dataset.integrity`), and the manifest, written when the job
ends (and removed while a resumed run works), records every shard's: what readers check against.
`DatasetReader` only reads; `DatasetWriter` is the one thing that writes, and `commit_shard` what
the writer tasks call, on any node that sees the dataset.

**On object storage** (`s3://BUCKET/PREFIX`, `gs://...`) there is no rename, atomic or not. A shard
is committed instead by one small object written last (the commit protocol, docs/mining.md):

    shards/<shard_id>/<attempt>/{games,...}.parquet   staged: the attempt's own name, 32 hex digits
    shards/<shard_id>/_shard.json                     the commit: counts, the attempt, file records

The writer uploads its Parquet files under an attempt-unique prefix, each whole in one PUT, then
puts `_shard.json` with a condition: only if there is none (S3 `If-None-Match: *`, GCS
`ifGenerationMatch=0`). The first attempt to get there commits the shard; any other finds the
record and deletes its own files. Readers trust only shards with a record, and read exactly the
files it names, of the sizes and footers it records: an attempt killed mid-upload, or one that
lost, is invisible, never half a shard. `--resume`, and the end of the job, delete such leftovers.
One job per prefix holds a lease (`pipeline.dataset.lease`). An attempt's name starts with its run's
token (`attempt_id`), so that a run can tell its own attempts from any other's: a job that lost
its lease (paused past it, while another job took the prefix) removes only its own, commits no
shard, writes no manifest, and leaves `job.json` alone unless its lease and the object it put are
both still its own (`DatasetWriter.discard`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.files import write_atomic
from pipeline.dataset.integrity import (
    FILES,
    JOB_FILE,
    MANIFEST_FILE,
    SHARD_MARKER,
    SHARDS_DIR,
    STAGING_DIR,
    DamagedDatasetError,
    LinkedDatasetError,
    bytes_record,
    check_layout,
    committed_ids,
    damaged_error,
    file_record,
    files_dir,
    first_line,
    is_shard_id,
    manifest_records,
    read_json,
    read_verified,
    shard_problem,
    snapshot_of,
)
from pipeline.dataset.lease import LEASE_DIR, Lease, LeaseLostError, Tenure
from pipeline.dataset.lock import LOCK_FILE, check_out_path
from pipeline.dataset.objects import ObjectPath, Where, dataset_path
from schemas.dataset import TABLES, versioned
from search.errors import DiffimaxError


class OutputError(DiffimaxError, ValueError):
    """The output directory cannot be used as asked (not empty without --resume, ...)."""


class DatasetReader:
    """A dataset directory or prefix, read only: committed shards, their counts and tables, the job."""

    def __init__(self, root: str | os.PathLike[str] | ObjectPath) -> None:
        self.root: Where = dataset_path(root)
        self.shards = self.root / SHARDS_DIR

    @property
    def remote(self) -> bool:
        """The dataset is on object storage."""
        return isinstance(self.root, ObjectPath)

    def committed(self) -> set[str]:
        return set(committed_ids(snapshot_of(self.root) / SHARDS_DIR))

    def shard_info(self) -> dict[str, dict[str, Any]]:
        """Every committed shard's `_shard.json`; DamagedDatasetError names one that is unreadable."""
        info = {}
        shards = snapshot_of(self.root) / SHARDS_DIR
        for shard_id in committed_ids(shards):
            path = shards / shard_id / SHARD_MARKER
            data = read_json(path)
            if not isinstance(data, dict):
                raise DamagedDatasetError(f"cannot read {str(path)!r}: not a shard record")
            info[shard_id] = data
        return info

    def damaged(self) -> dict[str, str]:
        """The entries of `shards/` that fail the cheap check (`pipeline.dataset.integrity.shard_problem`:
        presence, `_shard.json`, sizes, footers, no symbolic link) against the manifest's records
        where it lists them, else their own `_shard.json`, and why. A directory without
        `_shard.json` counts: it would block the shard's publication. An entry not named as a
        shard is refused (LinkedDatasetError): no run made it, and none deletes it. On object
        storage a shard without its record is an attempt never committed, not a damaged shard."""
        root = snapshot_of(self.root)
        shards = root / SHARDS_DIR
        check_layout(root)
        if not shards.is_dir():
            return {}
        listed = manifest_records(root)
        entries: list[Where] = sorted(shards.iterdir(), key=str)
        strangers = [path for path in entries if not is_shard_id(path.name)]
        if strangers:
            raise LinkedDatasetError(
                f"{str(strangers[0])!r} is not a shard of this dataset: move it out of {str(shards)!r} "
                "(nothing was changed)"
            )
        if isinstance(root, ObjectPath):
            entries = [path for path in entries if (path / SHARD_MARKER).is_file()]
        found = {path.name: shard_problem(shards, path.name, listed.get(path.name)) for path in entries}
        return {shard: problem for shard, problem in found.items() if problem is not None}

    def read_table(self, name: str, shard_ids: Iterable[str] | None = None) -> pa.Table:
        """Table `name` of the shards `shard_ids` (default: every committed one), every page's
        checksum verified as it is read."""
        ids = sorted(self.committed() if shard_ids is None else shard_ids)
        tables = []
        for shard in ids:
            directory = self.shards / shard
            try:
                path = files_dir(directory, read_json(directory / SHARD_MARKER)) / f"{name}.parquet"
                tables.append(read_verified(path))
            except (pa.ArrowException, OSError, ValueError) as error:
                problem = f"{name}.parquet fails its page checksums ({first_line(error)})"
                raise damaged_error(self.root, shard, problem) from None
        if not tables:
            return versioned(name).empty_table()
        return pa.concat_tables(tables)

    def job(self) -> dict[str, Any] | None:
        """The identity the job was started with (None for a directory without one)."""
        path = self.root / JOB_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise OutputError(f"cannot read {str(path)!r}: {error}") from None
        if not isinstance(data, dict):
            raise OutputError(f"{str(path)!r} is not a job identity")
        return data


def table_of(name: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """The rows of table `name` as an Arrow table of the dataset's schema."""
    return pa.Table.from_pylist(list(rows), schema=versioned(name))


def check_output(root: str | os.PathLike[str] | ObjectPath, *, resume: bool) -> None:
    """Refuse an output path that cannot be used, without creating or changing anything."""
    place = dataset_path(root)
    if isinstance(place, ObjectPath):
        check_object_output(place, resume=resume)
        return
    path = place
    check_out_path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"output path {str(path)!r} exists and is not a directory")
    if resume:
        if path.is_dir():
            check_layout(path)
        if not path.is_dir() or not (path / JOB_FILE).is_file():
            raise OutputError(f"nothing to resume in {str(path)!r}: no {JOB_FILE} (start the run without --resume)")
        return
    if path.exists() and any(entry.name != LOCK_FILE for entry in path.iterdir()):
        raise OutputError(
            f"output directory {str(path)!r} is not empty: use --resume to continue that run, or choose a new --out"
        )
    parent = path.resolve().parent
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise OutputError(f"cannot create output directory {str(path)!r}: {str(parent)!r} is not writable")


def check_object_output(root: ObjectPath, *, resume: bool) -> None:
    """`check_output` on object storage: a resumed run needs the job's identity; a new one an
    empty prefix (a lease of a job that has not written yet aside)."""
    if resume:
        if not (root / JOB_FILE).is_file():
            raise OutputError(f"nothing to resume in {str(root)!r}: no {JOB_FILE} (start the run without --resume)")
        return
    if any(entry.name != LEASE_DIR for entry in root.iterdir()):
        raise OutputError(f"{str(root)!r} is not empty: use --resume to continue that run, or choose a new --out")


def table_bytes(name: str, given: list[Any]) -> pa.Table:
    """Table `name` of one shard from its rows, or from Arrow tables of its rows in order."""
    if given and all(isinstance(part, pa.Table) for part in given):
        return pa.concat_tables(given).combine_chunks()
    return table_of(name, given)


def stage_shard(
    root: str | os.PathLike[str],
    shard_id: str,
    rows: Mapping[str, Iterable[Mapping[str, Any]] | list[pa.Table]],
    info: dict[str, Any],
) -> Path:
    """Write every table of one shard under the dataset's `_staging/` (a directory of its own, so
    that a retried writer never meets a half-written attempt) and return where; nothing is part of
    the dataset until `publish`. A table comes as its rows, or as Arrow tables of its rows in order
    (`table_of`: a caller that converts as it goes never holds a whole shard's rows as Python
    objects)."""
    temporary = Path(root) / STAGING_DIR / f"{shard_id}.{uuid.uuid4().hex[:8]}"
    try:
        temporary.mkdir()
        files = {}
        for name, file in zip(TABLES, FILES, strict=True):
            table = table_bytes(name, list(rows.get(name, ())))
            pq.write_table(table, temporary / file, compression="zstd", write_page_checksum=True)
            files[file] = file_record(temporary / file).describe()
        (temporary / SHARD_MARKER).write_text(json.dumps({**info, "files": files}, indent=2, sort_keys=True))
        for file in [*FILES, SHARD_MARKER]:
            flush_to_disk(temporary / file)
        flush_to_disk(temporary)
    except OSError as error:  # a full disk, a directory gone: one line, and no half-written shard left
        shutil.rmtree(temporary, ignore_errors=True)
        raise OutputError(f"cannot write shard {shard_id} under {str(root)!r}: {error.strerror or error}") from None
    return temporary


def publish(root: Path, shard_id: str, staged: str | os.PathLike[str]) -> bool:
    """Make a shard written by `stage_shard` part of the dataset, in one `os.rename`; False (and
    the staged copy removed) when another attempt published it first."""
    shards = root / SHARDS_DIR
    final = shards / shard_id
    if os.path.lexists(final):  # a dangling link too: never renamed over, never followed
        shutil.rmtree(staged, ignore_errors=True)
        if final.is_symlink() or not (final / SHARD_MARKER).is_file():
            raise OutputError(f"shard {shard_id} is already in {str(root)!r} and is not a shard: nothing published")
        return False
    try:
        os.rename(staged, final)
    except OSError as error:
        if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        shutil.rmtree(staged, ignore_errors=True)  # another attempt's rename came first
        return False
    flush_to_disk(shards)
    return True


def parquet_bytes(table: pa.Table) -> bytes:
    """A table as one Parquet file in memory, written as on disk (zstd, page checksums)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_page_checksum=True)
    data: bytes = sink.getvalue().to_pybytes()
    return data


# Hex digits of the run's token that start each of its attempts' names (`attempt_id`); the rest
# of the 32 are the attempt's own.
RUN_DIGITS = 16


def attempt_id(run: str | None) -> str:
    """A new attempt's name: 32 hex digits, the first RUN_DIGITS the run's (`DatasetWriter.token`)
    when it is given, so that the run can find its own attempts and no other's."""
    own = uuid.uuid4().hex
    return own if run is None else run[:RUN_DIGITS] + own[RUN_DIGITS:]


def is_run_attempt(name: str, run: str) -> bool:
    """Whether an attempt's name is one of run `run`'s (`attempt_id`)."""
    return len(name) == 32 and name.startswith(run[:RUN_DIGITS])


def commit_objects(
    root: ObjectPath,
    shard_id: str,
    rows: Mapping[str, Iterable[Mapping[str, Any]] | list[pa.Table]],
    info: dict[str, Any],
    *,
    run: str | None = None,
    tenure: Tenure | None = None,
) -> bool:
    """Commit one shard on object storage (the protocol in the module's docstring): its files
    under an attempt of its own (named for `run`), then its record, put only if there is none.
    False (and this attempt's files deleted) when another attempt committed the shard first. With
    `tenure`, the record is put only while that lease is still held: LeaseLostError (this attempt's
    files deleted) when another job has taken the prefix, whose leftovers are not this job's to
    add to."""
    if not is_shard_id(shard_id):
        raise LinkedDatasetError(f"{shard_id[:120]!r} is not a shard id: nothing written")
    attempt = attempt_id(run)
    directory = root / SHARDS_DIR / shard_id
    staged = directory / attempt
    files = {}
    for name, file in zip(TABLES, FILES, strict=True):
        data = parquet_bytes(table_bytes(name, list(rows.get(name, ()))))
        files[file] = bytes_record(data).describe()
        (staged / file).put(data)
    record = json.dumps({**info, "attempt": attempt, "files": files}, indent=2, sort_keys=True).encode()
    lost = tenure.lost(root) if tenure is not None else None  # asked last: the window is one PUT
    if lost is not None:
        staged.delete_under()
        raise LeaseLostError(f"{lost}: shard {shard_id} not committed")
    try:
        (directory / SHARD_MARKER).put(record, create=True)
    except FileExistsError:
        staged.delete_under()
        return False
    return True


def commit_shard(
    root: str | ObjectPath,
    shard_id: str,
    rows: Mapping[str, Iterable[Mapping[str, Any]] | list[pa.Table]],
    info: dict[str, Any],
    *,
    run: str | None = None,
    tenure: Tenure | None = None,
) -> bool:
    """Write one shard and make it part of the dataset, from any process that sees the dataset
    (a writer task on any node): staged and renamed on disk, or committed by its record on object
    storage (`commit_objects`: an attempt of run `run`, while the job's lease `tenure` is held).
    False when another attempt of the shard committed it first (its rows are the same)."""
    place = dataset_path(root)
    if isinstance(place, ObjectPath):
        return commit_objects(place, shard_id, rows, info, run=run, tenure=tenure)
    if os.path.lexists(place / SHARDS_DIR / shard_id):
        return False
    return publish(place, shard_id, stage_shard(place, shard_id, rows, info))


def flush_to_disk(path: Path) -> None:
    """`fsync` a file or a directory, so that a rename published after it survives a crash."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


# The file a run leaves in `_staging/` to say it is running (`DatasetWriter.run_marker`): a writer on
# a node that does not see it does not see this directory (`sees_run`).
RUN_MARKER = "run-{token}"


def sees_run(root: str, token: str) -> bool:
    """Whether this process sees the dataset the run `token` writes (a local directory seen from
    another node may be another directory of the same name): always, on object storage."""
    place = dataset_path(root)
    if isinstance(place, ObjectPath):
        return True
    return (place / STAGING_DIR / RUN_MARKER.format(token=token)).is_file()


class DatasetWriter(DatasetReader):
    """The one writer of a dataset directory or prefix. `create` makes a new one (with its job
    identity); `reopen` continues one (for --resume), clearing what an interrupted run left."""

    def __init__(self, root: str | os.PathLike[str] | ObjectPath) -> None:
        super().__init__(root)
        self.staging = self.root / STAGING_DIR
        self.created = False  # this writer made the directory (so `discard` may remove it)
        self.token = uuid.uuid4().hex  # this run's (`sees_run`, and its attempts' names: `attempt_id`)
        # On object storage: the job's lease, checked before anything another job could own is
        # touched (set by the job once it holds it), and the `job.json` this writer put.
        self.lease: Lease | None = None
        self.job_bytes: bytes | None = None

    @classmethod
    def create(cls, root: str | os.PathLike[str] | ObjectPath, job: dict[str, Any]) -> DatasetWriter:
        check_output(root, resume=False)
        writer = cls(root)
        if isinstance(writer.root, ObjectPath):
            writer.created = True
            writer.job_bytes = json_bytes(job)
            (writer.root / JOB_FILE).put(writer.job_bytes, create=True)
            return writer
        writer.created = not writer.root.exists()
        writer.root.joinpath(SHARDS_DIR).mkdir(parents=True, exist_ok=True)
        writer.root.joinpath(STAGING_DIR).mkdir()
        writer.mark_run()
        writer._write_json(JOB_FILE, job)
        return writer

    @classmethod
    def reopen(
        cls, root: str | os.PathLike[str] | ObjectPath, *, repair: bool = False, lease: Lease | None = None
    ) -> DatasetWriter:
        """Continue a run (its lock held, or its `lease` on object storage): leftovers of an
        interrupted run are cleared, and the manifest goes until the run ends, so that no reader
        takes the dataset for a finished one. A damaged shard (`damaged`) refuses the run in one
        line, changing nothing, unless `repair`: then it is removed, and the run mines it again."""
        check_output(root, resume=True)
        writer = cls(root)
        writer.lease = lease
        damaged = writer.damaged()  # refuses a linked layout, and any entry of shards/ no run made
        if damaged and not repair:
            shard_id, problem = next(iter(damaged.items()))
            more = f" ({len(damaged) - 1} more damaged shard(s))" if len(damaged) > 1 else ""
            raise damaged_error(writer.root, shard_id, problem + more)
        if isinstance(writer.root, ObjectPath):
            writer.check_lease()  # a job paused since it took the lease: that may be another's manifest
            (writer.root / MANIFEST_FILE).delete()
            for shard_id in damaged:
                writer.remove_shard(shard_id)
            writer.clear_leftovers()
            return writer
        shutil.rmtree(writer.root / STAGING_DIR, ignore_errors=True)  # leftovers of an interrupted run
        writer.root.joinpath(SHARDS_DIR).mkdir(exist_ok=True)
        writer.root.joinpath(STAGING_DIR).mkdir()
        writer.mark_run()
        (writer.root / MANIFEST_FILE).unlink(missing_ok=True)
        for shard_id in damaged:
            writer.remove_shard(shard_id)
        return writer

    def mark_run(self) -> None:
        """Say in `_staging/` that this run writes here (`sees_run`)."""
        if isinstance(self.root, Path):
            (self.root / STAGING_DIR / RUN_MARKER.format(token=self.token)).touch()

    def remove_shard(self, shard_id: str) -> None:
        """Take a damaged shard out of the dataset (`--repair`), so that the run mines it again.
        On disk: renamed into staging first (one step), then deleted; a symbolic link or a file in
        its place is unlinked: what a link points to is never followed, let alone deleted. On
        object storage: its record first (the shard is no longer committed), then its objects."""
        if not is_shard_id(shard_id):
            raise LinkedDatasetError(f"{shard_id[:120]!r} is not a shard id: nothing removed")
        if isinstance(self.root, ObjectPath):
            (self.root / SHARDS_DIR / shard_id / SHARD_MARKER).delete()
            (self.root / SHARDS_DIR / shard_id).delete_under()
            return
        path = self.root / SHARDS_DIR / shard_id
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
            return
        aside = self.root / STAGING_DIR / f"{shard_id}.removed.{uuid.uuid4().hex[:8]}"
        os.rename(path, aside)
        shutil.rmtree(aside, ignore_errors=True)

    def clear_leftovers(self, *, own_only: bool = False) -> None:
        """Delete what no shard's record names: attempts killed mid-upload, or that lost (object
        storage; on disk they are under `_staging/`, removed whole). With `own_only`, this run's
        attempts only (`attempt_id`): what a job that may have lost its lease may still remove."""
        if not isinstance(self.root, ObjectPath):
            return
        for attempt in self.uncommitted_attempts():
            if not own_only or is_run_attempt(attempt.name, self.token):
                ObjectPath(attempt.url).delete_under()

    def uncommitted_attempts(self) -> Iterator[ObjectPath]:
        """The attempts under `shards/` that no shard's record names (object storage)."""
        assert isinstance(self.root, ObjectPath)
        shards = self.root.snapshot() / SHARDS_DIR
        if not shards.is_dir():
            return
        for directory in shards.iterdir():
            if not is_shard_id(directory.name):
                continue
            marker = directory / SHARD_MARKER
            keep = None
            if marker.is_file():
                try:
                    keep = files_dir(directory, read_json(marker)).name
                except (DamagedDatasetError, ValueError):
                    continue  # a damaged record: --repair's to remove
            yield from (attempt for attempt in directory.iterdir() if attempt.name not in (SHARD_MARKER, keep))

    def check_lease(self) -> None:
        """LeaseLostError when this job has lost its prefix's lease (asked of the store now)."""
        if self.lease is not None:
            self.lease.check()

    def commit(
        self, shard_id: str, rows: Mapping[str, Iterable[Mapping[str, Any]] | list[pa.Table]], info: dict[str, Any]
    ) -> None:
        """Write every table of one shard and make it part of the dataset (`commit_shard`)."""
        root = self.root if isinstance(self.root, ObjectPath) else str(self.root)
        tenure = self.lease.tenure if self.lease is not None else None
        if not commit_shard(root, shard_id, rows, info, run=self.token, tenure=tenure):
            raise OutputError(f"shard {shard_id} is already committed in {str(self.root)!r}")

    def write_manifest(self, manifest: dict[str, Any]) -> Where:
        """The finished run's manifest, with every committed shard's file records (what readers
        check the dataset against)."""
        shards = {shard: {"files": info.get("files")} for shard, info in self.shard_info().items()}
        if isinstance(self.root, ObjectPath):
            self.check_lease()  # another job's leftovers may be its attempts in flight
            self.clear_leftovers()
            self.check_lease()  # nor is the manifest this job's to write any more
            path = self.root / MANIFEST_FILE
            path.put(json_bytes({**manifest, "shards": shards}))
            return path
        written = self._write_json(MANIFEST_FILE, {**manifest, "shards": shards})
        shutil.rmtree(self.root / STAGING_DIR, ignore_errors=True)
        return written

    def discard(self) -> None:
        """Undo `create` when nothing was committed: a failed first run leaves no directory
        behind that would refuse the corrected command. On object storage only what this run
        wrote: its attempts no record names, then `job.json` (and a manifest) if nothing is
        committed, this writer put that very `job.json`, and its lease is still its own. A job
        that lost its lease to another (paused past it) thus leaves the other's `job.json` and
        staged attempts alone."""
        if isinstance(self.root, ObjectPath):
            self.clear_leftovers(own_only=True)
            if not self.committed() and self.owns_job_file():
                for name in (JOB_FILE, MANIFEST_FILE):
                    (self.root / name).delete()
            return
        if self.committed():
            return
        for name in (JOB_FILE, MANIFEST_FILE, LOCK_FILE):
            (self.root / name).unlink(missing_ok=True)
        shutil.rmtree(self.root / STAGING_DIR, ignore_errors=True)
        shutil.rmtree(self.root / SHARDS_DIR, ignore_errors=True)
        if self.created:
            with_contents = any(self.root.iterdir()) if self.root.exists() else True
            if not with_contents:
                self.root.rmdir()

    def owns_job_file(self) -> bool:
        """Whether `job.json` on object storage is this writer's to remove: the one it put (its
        bytes: the job's creation time is in them), and the job's lease still held (asked last)."""
        if not self.created or self.job_bytes is None:
            return False
        try:
            if (self.root / JOB_FILE).read_bytes() != self.job_bytes:
                return False
        except FileNotFoundError:
            return False
        return self.lease is None or self.lease.confirm() is None

    def _write_json(self, name: str, data: dict[str, Any]) -> Path:
        assert isinstance(self.root, Path)
        return write_atomic(self.root / name, json.dumps(data, indent=2, sort_keys=True, default=str))


def json_bytes(data: dict[str, Any]) -> bytes:
    return json.dumps(data, indent=2, sort_keys=True, default=str).encode()
