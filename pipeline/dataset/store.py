"""The Parquet dataset on disk: atomic per-shard commits, the job's identity, resume, the manifest.

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
`DatasetReader` only reads; `DatasetWriter` is the one thing that writes.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
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
    check_layout,
    committed_ids,
    damaged_error,
    file_record,
    first_line,
    is_shard_id,
    manifest_records,
    read_json,
    shard_problem,
)
from pipeline.dataset.lock import LOCK_FILE, check_out_path
from schemas.dataset import TABLES, versioned
from search.errors import DiffimaxError


class OutputError(DiffimaxError, ValueError):
    """The output directory cannot be used as asked (not empty without --resume, ...)."""


class DatasetReader:
    """A dataset directory, read only: committed shards, their counts and tables, the job."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.shards = self.root / SHARDS_DIR

    def committed(self) -> set[str]:
        return set(committed_ids(self.shards))

    def shard_info(self) -> dict[str, dict[str, Any]]:
        """Every committed shard's `_shard.json`; DamagedDatasetError names one that is unreadable."""
        info = {}
        for shard_id in committed_ids(self.shards):
            path = self.shards / shard_id / SHARD_MARKER
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
        shard is refused (LinkedDatasetError): no run made it, and none deletes it."""
        check_layout(self.root)
        if not self.shards.is_dir():
            return {}
        listed = manifest_records(self.root)
        entries = sorted(self.shards.iterdir())
        strangers = [path for path in entries if not is_shard_id(path.name)]
        if strangers:
            raise LinkedDatasetError(
                f"{str(strangers[0])!r} is not a shard of this dataset: move it out of {str(self.shards)!r} "
                "(nothing was changed)"
            )
        found = {path.name: shard_problem(self.shards, path.name, listed.get(path.name)) for path in entries}
        return {shard: problem for shard, problem in found.items() if problem is not None}

    def read_table(self, name: str, shard_ids: Iterable[str] | None = None) -> pa.Table:
        """Table `name` of the shards `shard_ids` (default: every committed one), every page's
        checksum verified as it is read."""
        ids = sorted(self.committed() if shard_ids is None else shard_ids)
        tables = []
        for shard in ids:
            path = self.shards / shard / f"{name}.parquet"
            try:
                tables.append(pq.read_table(path, page_checksum_verification=True))
            except (pa.ArrowException, OSError) as error:
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
            data = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise OutputError(f"cannot read {str(path)!r}: {error}") from None
        if not isinstance(data, dict):
            raise OutputError(f"{str(path)!r} is not a job identity")
        return data


def table_of(name: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """The rows of table `name` as an Arrow table of the dataset's schema."""
    return pa.Table.from_pylist(list(rows), schema=versioned(name))


def check_output(root: str | os.PathLike[str], *, resume: bool) -> None:
    """Refuse an output path that cannot be used, without creating or changing anything."""
    path = Path(root)
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


def stage_shard(
    root: str | os.PathLike[str],
    shard_id: str,
    rows: Mapping[str, Iterable[Mapping[str, Any]] | list[pa.Table]],
    info: dict[str, Any],
) -> Path:
    """Write every table of one shard under the dataset's `_staging/` (a directory of its own, so
    that a retried writer never meets a half-written attempt) and return where; nothing is part of
    the dataset until `DatasetWriter.publish`. Any process on the dataset's machine may call it. A
    table comes as its rows, or as Arrow tables of its rows in order (`table_of`: a caller that
    converts as it goes never holds a whole shard's rows as Python objects)."""
    temporary = Path(root) / "_staging" / f"{shard_id}.{uuid.uuid4().hex[:8]}"
    try:
        temporary.mkdir()
        files = {}
        for name, file in zip(TABLES, FILES, strict=True):
            given = list(rows.get(name, ()))
            if given and all(isinstance(part, pa.Table) for part in given):
                table = pa.concat_tables(given).combine_chunks()
            else:
                table = table_of(name, given)
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


def flush_to_disk(path: Path) -> None:
    """`fsync` a file or a directory, so that a rename published after it survives a crash."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class DatasetWriter(DatasetReader):
    """The one writer of a dataset directory. `create` makes a new one (with its job identity);
    `reopen` continues one (for --resume), clearing what an interrupted run left in staging."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.staging = self.root / STAGING_DIR
        self.created = False  # this writer made the directory (so `discard` may remove it)

    @classmethod
    def create(cls, root: str | os.PathLike[str], job: dict[str, Any]) -> DatasetWriter:
        check_output(root, resume=False)
        writer = cls(root)
        writer.created = not writer.root.exists()
        writer.shards.mkdir(parents=True, exist_ok=True)
        writer.staging.mkdir()
        writer._write_json(JOB_FILE, job)
        return writer

    @classmethod
    def reopen(cls, root: str | os.PathLike[str], *, repair: bool = False) -> DatasetWriter:
        """Continue a run (its lock held): leftovers of an interrupted run are cleared, and the
        manifest goes until the run ends, so that no reader takes the dataset for a finished one.
        A damaged shard (`damaged`) refuses the run in one line, changing nothing, unless `repair`:
        then it is removed, and the run mines it again."""
        check_output(root, resume=True)
        writer = cls(root)
        damaged = writer.damaged()  # refuses a linked layout, and any entry of shards/ no run made
        if damaged and not repair:
            shard_id, problem = next(iter(damaged.items()))
            more = f" ({len(damaged) - 1} more damaged shard(s))" if len(damaged) > 1 else ""
            raise damaged_error(writer.root, shard_id, problem + more)
        shutil.rmtree(writer.staging, ignore_errors=True)  # leftovers of an interrupted run
        writer.shards.mkdir(exist_ok=True)
        writer.staging.mkdir()
        (writer.root / MANIFEST_FILE).unlink(missing_ok=True)
        for shard_id in damaged:
            writer.remove_shard(shard_id)
        return writer

    def remove_shard(self, shard_id: str) -> None:
        """Take a damaged shard out of the dataset (`--repair`), so that the run mines it again:
        renamed into staging first (one step), then deleted. A symbolic link or a file in its
        place is unlinked: what a link points to is never followed, let alone deleted."""
        if not is_shard_id(shard_id):
            raise LinkedDatasetError(f"{shard_id[:120]!r} is not a shard id: nothing removed")
        path = self.shards / shard_id
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
            return
        aside = self.staging / f"{shard_id}.removed.{uuid.uuid4().hex[:8]}"
        os.rename(path, aside)
        shutil.rmtree(aside, ignore_errors=True)

    def commit(
        self, shard_id: str, rows: Mapping[str, Iterable[Mapping[str, Any]] | list[pa.Table]], info: dict[str, Any]
    ) -> None:
        """Write every table of one shard and publish them together (`stage_shard`, then `publish`)."""
        if os.path.lexists(self.shards / shard_id):
            raise OutputError(f"shard {shard_id} is already committed in {str(self.root)!r}")
        self.publish(shard_id, stage_shard(self.root, shard_id, rows, info))

    def publish(self, shard_id: str, staged: str | os.PathLike[str]) -> None:
        """Make a shard written by `stage_shard` part of the dataset, in one `os.rename`."""
        final = self.shards / shard_id
        if os.path.lexists(final):  # a dangling link too: never renamed over, never followed
            raise OutputError(f"shard {shard_id} is already committed in {str(self.root)!r}")
        os.rename(staged, final)
        flush_to_disk(self.shards)

    def write_manifest(self, manifest: dict[str, Any]) -> Path:
        """The finished run's manifest, with every committed shard's file records (what readers
        check the dataset against)."""
        shards = {shard: {"files": info.get("files")} for shard, info in self.shard_info().items()}
        path = self._write_json(MANIFEST_FILE, {**manifest, "shards": shards})
        shutil.rmtree(self.staging, ignore_errors=True)
        return path

    def discard(self) -> None:
        """Undo `create` when nothing was committed: a failed first run leaves no directory
        behind that would refuse the corrected command."""
        if self.committed():
            return
        for name in (JOB_FILE, MANIFEST_FILE, LOCK_FILE):
            (self.root / name).unlink(missing_ok=True)
        shutil.rmtree(self.staging, ignore_errors=True)
        shutil.rmtree(self.shards, ignore_errors=True)
        if self.created:
            with_contents = any(self.root.iterdir()) if self.root.exists() else True
            if not with_contents:
                self.root.rmdir()

    def _write_json(self, name: str, data: dict[str, Any]) -> Path:
        return write_atomic(self.root / name, json.dumps(data, indent=2, sort_keys=True, default=str))
