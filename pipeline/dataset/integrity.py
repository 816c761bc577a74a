"""What a dataset's files must be, and how readers and `diffimax verify` check that they are.

Every Parquet file of a shard is written with page checksums (a CRC-32 of every data and
dictionary page) and recorded in the shard's `_shard.json` and in the manifest: its size, the
SHA-256 of its bytes and the SHA-256 of its footer (the Parquet metadata, which page checksums do
not cover: schema, row-group offsets, statistics).

Three levels of checking, from cheap to complete:

* `check_dataset` (every reader, before it reads): each shard the manifest lists is present, its
  `_shard.json` readable and agreeing with the manifest, each file of the size recorded, with the
  footer recorded, and that footer's Arrow schema the one `schemas.dataset` says
  (`pipeline.dataset.conformance.schema_problem`: a shard re-signed after a column was dropped or
  retyped fails here). A few stats and small reads per shard, whatever the size of the data.
* Page checksums, checked as pages are read (`scan`, and `read_verified`): a changed byte
  inside a page fails the read that meets it, and `locate_damage` then names the file.
* `verify_dataset` (`diffimax verify`, `pipeline.dataset.verify`): the SHA-256 of every file,
  every page checksum, and every value against its column's non-null and range rules
  (`conformance.value_problem`).

A reader never answers from a partial dataset silently: a job that has not finished (no
manifest), a shard that is missing or damaged, is one line that names it and says how to repair
(`DamagedDatasetError`, `IncompleteDatasetError`), unless the caller allows a partial read, and
then `DatasetState.missing` says what is left out.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.files import feed_stream
from pipeline.dataset.conformance import schema_problem
from pipeline.dataset.lock import LOCK_FILE
from pipeline.dataset.objects import ObjectPath, Where, dataset_path, parquet_schema
from schemas.dataset import SCHEMA_VERSION, TABLES, schema_version_of
from search.errors import DiffimaxError

if TYPE_CHECKING:
    import pyarrow.dataset as ds

SHARD_MARKER: Final = "_shard.json"
JOB_FILE: Final = "job.json"
MANIFEST_FILE: Final = "manifest.json"
SHARDS_DIR: Final = "shards"
STAGING_DIR: Final = "_staging"
# What a shard is named (`pipeline.ingest.sources.shard_id_of`): its source's stem, a hash of the
# source, its index. One path component, never `.`, `..` or absolute: a name read from a manifest
# or a directory listing that does not match is refused, never joined to a path.
SHARD_ID: Final = re.compile(r"[A-Za-z0-9_.-]+-[0-9a-f]{8}-[0-9]{6,}")
# The names of a dataset's own directory: none may be a symbolic link (what it points to lies
# outside the directory the user named, and a resumed run with --repair deletes inside `shards`).
OWN_NAMES: Final = (SHARDS_DIR, STAGING_DIR, JOB_FILE, MANIFEST_FILE, LOCK_FILE)
# Those of them that are files.
OWN_FILES: Final = frozenset({JOB_FILE, MANIFEST_FILE, LOCK_FILE})
# The Parquet files of every shard, one per table.
FILES: Final = tuple(f"{name}.parquet" for name in TABLES)
# The name of a shard's attempt on object storage (`pipeline.dataset.store`): its files lie under
# `shards/<id>/<attempt>/`, named by the shard's record; a record naming anything else is refused.
ATTEMPT: Final = re.compile(r"[0-9a-f]{16,32}")
# A Parquet file ends with its footer's length (4 bytes, little-endian) and the magic "PAR1".
TAIL_BYTES: Final = 8
PARQUET_MAGIC: Final = b"PAR1"
# What a damaged file makes Arrow or DuckDB say (lower case): a failed page checksum, a file
# that is not Parquet, metadata that cannot be decoded.
DAMAGE_SIGNS: Final = (
    "crc checksum verification failed",
    "could not verify page integrity",
    "parquet magic bytes not found",
    "couldn't deserialize thrift",
    "invalid parquet file",
    "corrupt",
    "unexpected end of stream",
    "page header",
    "decompress",
    "parquet file size is",
    "is not a 'parquet' file",
)
# How the repair is spelled in every error about a shard.
REPAIR = (
    "repair: run the diffimax mine command that wrote it again with --resume --repair "
    "(or remove {path} and run it with --resume)"
)


class DatasetError(DiffimaxError, ValueError):
    """The directory holds no diffimax dataset, or one that cannot be read as asked."""


class DamagedDatasetError(DatasetError):
    """A committed shard is missing, cut short, changed, or unreadable."""


class IncompleteDatasetError(DatasetError):
    """The dataset's job has not finished (it is running, was interrupted, or is being resumed)."""


class LinkedDatasetError(DatasetError):
    """A dataset's own directory or file, or a shard's, is a symbolic link, or a manifest names a
    shard outside the dataset: refused, never followed."""


def is_shard_id(name: str) -> bool:
    """Whether `name` is a shard's id (`SHARD_ID`): one path component inside `shards/`."""
    return SHARD_ID.fullmatch(name) is not None


def link_note(path: Where) -> str:
    """`path` as a refusal quotes a symbolic link: where it lies and where it points."""
    if isinstance(path, ObjectPath):
        return f"{str(path)!r} is an object"
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return f"{str(path)!r} is a symbolic link (to {target!r})"


def check_layout(root: Where) -> None:
    """LinkedDatasetError when one of the dataset's own names (`OWN_NAMES`) is a symbolic link:
    diffimax reads and writes only inside the directory the user named, and follows no link out
    of it (the directory itself may be one: the user named it)."""
    for name in OWN_NAMES:
        if (root / name).is_symlink():
            raise LinkedDatasetError(
                f"{link_note(root / name)}: diffimax reads and writes only inside {str(root)!r} and follows no "
                "link out of it; put the directory or file itself there"
            )
        if name in OWN_FILES and (root / name).is_dir():  # a layout we did not make: never read, never replaced
            raise DamagedDatasetError(
                f"{str(root / name)!r} is a directory where the dataset keeps its {name} file: remove or rename it"
            )


@dataclass(frozen=True)
class FileRecord:
    """What a committed Parquet file must be."""

    bytes: int
    """Its size."""
    sha256: str
    """The SHA-256 of its bytes (`verify_dataset` checks it)."""
    footer_sha256: str
    """The SHA-256 of its footer and tail (every reader checks it)."""

    def describe(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "sha256": self.sha256, "footer_sha256": self.footer_sha256}


def file_record(path: Where) -> FileRecord:
    """The record of a Parquet file as it is stored."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        size = feed_stream(digest, handle)
    return FileRecord(size, digest.hexdigest(), footer_digest(path))


def read_tail(path: Where, length: int) -> tuple[int, bytes]:
    """A file's size and its last `length` bytes (an object's from a snapshot's view when it holds them)."""
    if isinstance(path, ObjectPath):
        return path.tail(length)
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - length))
        return size, handle.read(length)


def footer_digest(path: Where) -> str:
    """The SHA-256 of a Parquet file's footer and tail; ValueError when the file has none."""
    size, tail = read_tail(path, TAIL_BYTES)
    length = footer_length(size, tail)
    _, footer = read_tail(path, TAIL_BYTES + length)
    return hashlib.sha256(footer).hexdigest()


def footer_length(size: int, tail: bytes) -> int:
    """The footer length a Parquet file of `size` bytes ending in `tail` declares; ValueError
    when it has no footer."""
    if size < TAIL_BYTES + len(PARQUET_MAGIC):
        raise ValueError(f"{size} bytes is too short for a Parquet file")
    length = int.from_bytes(tail[-TAIL_BYTES:][:4], "little")
    if tail[-len(PARQUET_MAGIC) :] != PARQUET_MAGIC or length > size - TAIL_BYTES - len(PARQUET_MAGIC):
        raise ValueError("its footer is not a Parquet footer")
    return length


def bytes_record(data: bytes) -> FileRecord:
    """The record of a Parquet file held in memory (written to object storage from there)."""
    length = footer_length(len(data), data[-TAIL_BYTES:])
    footer = hashlib.sha256(data[len(data) - TAIL_BYTES - length :]).hexdigest()
    return FileRecord(len(data), hashlib.sha256(data).hexdigest(), footer)


def record_of(data: Any) -> FileRecord | None:
    """A file record read back from JSON (None when it is not one)."""
    if not isinstance(data, Mapping):
        return None
    size, sha, footer = data.get("bytes"), data.get("sha256"), data.get("footer_sha256")
    if not (isinstance(size, int) and isinstance(sha, str) and isinstance(footer, str)):
        return None
    return FileRecord(size, sha, footer)


# ---------------------------------------------------------------------------------------------
# The cheap check


@dataclass
class DatasetState:
    """What a reader may read: the shards that passed the check, and what it leaves out."""

    root: Where
    shards: list[str]
    """Readable shards, sorted."""
    dirs: dict[str, Where] = field(default_factory=dict)
    """Where each readable shard's files lie (`files_dir`)."""
    missing: list[str] = field(default_factory=list)
    """One line per shard or part that is left out (empty for a whole dataset)."""
    finished: bool = True
    """The job finished (its manifest exists)."""
    verified: bool = True
    """The manifest carries file records (a dataset mined before them is read as it is found)."""

    def add(self, shard_id: str) -> None:
        """A shard that passed the check: readable, its files where its record says."""
        self.shards.append(shard_id)
        directory = self.root / SHARDS_DIR / shard_id
        self.dirs[shard_id] = files_dir(directory, read_json(directory / SHARD_MARKER))

    @property
    def partial(self) -> bool:
        return bool(self.missing) or not self.finished

    def note(self) -> str:
        """One line on what a partial read leaves out."""
        if not self.partial:
            return f"dataset {str(self.root)!r} is complete ({len(self.shards)} shards)"
        parts = [] if self.finished else ["its job has not finished (no manifest.json)"]
        if self.missing:
            parts.append(f"{len(self.missing)} shard(s) left out: " + "; ".join(self.missing[:3]))
            if len(self.missing) > 3:
                parts[-1] += f"; and {len(self.missing) - 3} more"
        return f"partial dataset {str(self.root)!r}, {len(self.shards)} shards read: " + ", ".join(parts)


def read_json(path: Where) -> Any:
    """A JSON file's data; DamagedDatasetError (naming the file) when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise DamagedDatasetError(f"cannot read {str(path)!r}: {reason}") from None


def shard_records(info: Any) -> dict[str, FileRecord] | None:
    """The file records of a `_shard.json`'s data (None for a shard written before them)."""
    files = info.get("files") if isinstance(info, Mapping) else None
    if files is None:
        return None
    if not isinstance(files, Mapping):
        return {}
    records = {name: record_of(data) for name, data in files.items()}
    return {name: record for name, record in records.items() if record is not None}


def listed_records(entry: Any) -> dict[str, FileRecord] | None:
    """The file records the manifest lists for one shard (None for a shard mined before them)."""
    files = entry.get("files") if isinstance(entry, Mapping) else {}
    if files is None:
        return None
    if not isinstance(files, Mapping):
        return {}
    return {name: record for name, data in files.items() if (record := record_of(data)) is not None}


def manifest_records(root: Where) -> dict[str, Mapping[str, FileRecord] | None]:
    """The file records the manifest lists per shard; empty without a readable manifest (a
    resumed run rewrites it, so an unreadable one is no reason to refuse the run)."""
    try:
        manifest = read_json(root / MANIFEST_FILE) if (root / MANIFEST_FILE).is_file() else {}
    except DamagedDatasetError:
        return {}
    listed = manifest.get("shards") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict):
        return {}
    return {shard_id: listed_records(entry) for shard_id, entry in listed.items()}


def files_dir(directory: Where, info: Any) -> Where:
    """Where a shard's files lie: its directory, or on object storage the attempt its record
    names (`ATTEMPT`; ValueError for a name that is none)."""
    attempt = info.get("attempt") if isinstance(info, Mapping) else None
    if attempt is None:
        return directory
    if not isinstance(attempt, str) or not ATTEMPT.fullmatch(attempt):
        raise ValueError(f"its {SHARD_MARKER} names {str(attempt)[:40]!r}, which is no attempt of a shard")
    return directory / attempt


def shard_problem(shards: Where, shard_id: str, expected: Mapping[str, FileRecord] | None = None) -> str | None:
    """What is wrong with one committed shard, cheaply (presence, `_shard.json`, sizes, footers),
    against `expected` (the manifest's records) or else its own `_shard.json`; None if nothing.
    A symbolic link, the shard's or one of its files', is a problem: never followed."""
    if not is_shard_id(shard_id):
        return "it is not named as a shard"
    directory = shards / shard_id
    if directory.is_symlink():
        return "its directory is a symbolic link"
    if not directory.is_dir():
        return "its directory is missing"
    linked = [name for name in (SHARD_MARKER, *FILES) if (directory / name).is_symlink()]
    if linked:
        return f"{linked[0]} is a symbolic link"
    try:
        info = read_json(directory / SHARD_MARKER)
    except DamagedDatasetError:
        return f"its {SHARD_MARKER} is missing or unreadable"
    own = shard_records(info)
    if not isinstance(info, dict) or (own is not None and set(own) != set(FILES)):
        return f"its {SHARD_MARKER} is not a shard record"
    if info.get("shard_id", shard_id) != shard_id:
        return f"its {SHARD_MARKER} names another shard ({str(info.get('shard_id'))[:80]!r})"
    if expected is not None and own is not None and own != dict(expected):
        return f"its {SHARD_MARKER} does not match the manifest"
    try:
        where = files_dir(directory, info)
    except ValueError as error:
        return str(error)
    records = dict(expected) if expected is not None else own
    if records is None:  # written before file records: presence and schemas are all there is to check
        missing = [name for name in FILES if not (where / name).is_file()]
        if missing:
            return f"{missing[0]} is missing"
    for table, name in zip(TABLES, FILES, strict=True):
        problem = (None if records is None else file_problem(where / name, records.get(name))) or schema_problem(
            where / name, table
        )
        if problem is not None:
            return problem
    return None


def file_problem(path: Where, record: FileRecord | None) -> str | None:
    """What is wrong with one file against its record (size and footer), or None."""
    if record is None:
        return f"{path.name} has no record"
    try:
        size = path.stat().st_size
    except OSError:
        return f"{path.name} is missing"
    if size != record.bytes:
        return f"{path.name} holds {size:,} bytes where its record says {record.bytes:,}"
    try:
        footer = footer_digest(path)
    except (OSError, ValueError) as error:
        return f"{path.name} is unreadable ({error})"
    if footer != record.footer_sha256:
        return f"{path.name} has another footer than the one recorded"
    return None


def damaged_error(root: Where, shard_id: str, problem: str) -> DamagedDatasetError:
    """The one line about a damaged shard: which, what, and how to repair it."""
    path = str(root / "shards" / shard_id)
    return DamagedDatasetError(
        f"shard {shard_id} of {str(root)!r} is damaged: {problem}; " + REPAIR.format(path=repr(path))
    )


def committed_ids(shards: Where) -> list[str]:
    """The ids of the shard directories under `shards` that hold a `_shard.json`, sorted; an entry
    not named as a shard is no shard (`verify` names it), a symbolic link is one whose check fails."""
    if not shards.is_dir():
        return []
    return sorted(path.name for path in shards.iterdir() if is_shard_id(path.name) and (path / SHARD_MARKER).exists())


def listed_shards(manifest_path: Where, manifest: Any) -> dict[str, Any] | None:
    """The manifest's shards (None for a manifest written before file records); a name that is no
    shard id (`../../elsewhere/shards/x`, an absolute path) is refused, never joined to a path."""
    listed = manifest.get("shards") if isinstance(manifest, dict) else None
    if listed is None:
        return None
    if not isinstance(listed, dict):
        raise DamagedDatasetError(f"{str(manifest_path)!r} is not a manifest: its shards are not a mapping")
    for shard_id in listed:
        if not is_shard_id(shard_id):
            raise LinkedDatasetError(
                f"{str(manifest_path)!r} lists {shard_id[:120]!r}, which is not a shard id: a manifest names only "
                "shards inside its dataset; repair: run the diffimax mine command that wrote it again with --resume"
            )
    return listed


def check_version(root: Where, shard_ids: list[str]) -> None:
    """Refuse a dataset written under another schema version (its first shard's games file says
    which), in one line that says what to do; a shard of another version among others of this one
    is damage (`shard_problem`)."""
    for shard_id in shard_ids:
        if not is_shard_id(shard_id):
            continue
        directory = root / SHARDS_DIR / shard_id
        try:
            path = files_dir(directory, read_json(directory / SHARD_MARKER)) / FILES[0]
            if path.is_symlink() or not path.is_file():
                continue
            version = schema_version_of(parquet_schema(path))
        except (pa.ArrowException, OSError, ValueError, DamagedDatasetError):
            continue  # damage: `shard_problem` names it
        if version != SCHEMA_VERSION:
            raise DatasetError(
                f"dataset {str(root)!r} has schema version {version}; this diffimax reads version {SCHEMA_VERSION} "
                "(duplicate games kept once): mine it again into a new --out"
            )


def check_dataset(root: str | Where, *, allow_partial: bool = False) -> DatasetState:
    """The cheap check every reader makes before it reads: the dataset's own names (`check_layout`),
    the manifest, and each shard it lists (`shard_problem`). Raises IncompleteDatasetError or
    DamagedDatasetError for the first problem, unless `allow_partial`: then the state lists what is
    left out. A dataset on object storage is checked on one snapshot (`ObjectPath.snapshot`)."""
    base = snapshot_of(root)
    check_layout(base)
    shards = base / SHARDS_DIR
    manifest_path = base / MANIFEST_FILE
    committed = committed_ids(shards)
    if not manifest_path.is_file():
        if not allow_partial:
            raise IncompleteDatasetError(
                f"dataset {str(base)!r} is incomplete: its job has not finished ({len(committed)} shards committed, "
                f"no {MANIFEST_FILE}); finish it with the diffimax mine command that wrote it and --resume, "
                "or read what is there with --allow-partial"
            )
        state = DatasetState(base, [], finished=False)
        check_version(base, committed[:1])
        for shard_id in committed:
            problem = shard_problem(shards, shard_id)
            if problem is None:
                state.add(shard_id)
            else:
                state.missing.append(f"{shard_id} ({problem})")
        return state
    listed = listed_shards(manifest_path, read_json(manifest_path))
    check_version(base, sorted(listed or committed)[:1])
    verified = listed is not None
    if listed is None:  # a dataset mined before file records: read what is committed
        listed = {shard_id: {"files": None} for shard_id in committed}
    state = DatasetState(base, [], verified=verified)
    for shard_id in sorted(listed):
        problem = shard_problem(shards, shard_id, listed_records(listed[shard_id]))
        if problem is None:
            state.add(shard_id)
        elif allow_partial:
            state.missing.append(f"{shard_id} ({problem})")
        else:
            raise damaged_error(base, shard_id, problem)
    return state


# ---------------------------------------------------------------------------------------------
# Reading with page checksums


def snapshot_of(root: str | Where) -> Where:
    """A dataset's root as checks read it: a local path, or an object prefix's snapshot."""
    base = dataset_path(root)
    return base.snapshot() if isinstance(base, ObjectPath) and base.view is None else base


def scan(files: Sequence[Where], schema: pa.Schema) -> ds.Dataset:
    """The files of one table as an Arrow dataset whose every page is checked as it is read."""
    # Imported here: pyarrow.dataset brings pandas (0.3 CPU-s), and every Ray worker of a job
    # imports this module to write its shards, which never scans.
    import pyarrow.dataset as ds

    # Every page's checksum verified as it is read.
    scan_format = ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(page_checksum_verification=True)
    )
    if files and isinstance(files[0], ObjectPath):
        _, filesystem = files[0].arrow()
        paths = [path.path for path in files if isinstance(path, ObjectPath)]
        return ds.dataset(paths, schema=schema, format=scan_format, filesystem=filesystem)
    return ds.dataset([str(path) for path in files], schema=schema, format=scan_format)


def read_verified(path: Where, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file, every page checked as it is read."""
    if isinstance(path, ObjectPath):
        name, filesystem = path.arrow()
        return pq.read_table(name, columns=columns, page_checksum_verification=True, filesystem=filesystem)
    return pq.read_table(path, columns=columns, page_checksum_verification=True)


def is_damage(error: BaseException) -> bool:
    """Whether an error from Arrow or DuckDB says that a file is damaged."""
    if not isinstance(error, (duckdb.Error, pa.ArrowException, OSError)):
        return False
    text = str(error).lower()
    return any(sign in text for sign in DAMAGE_SIGNS)


def locate_damage(
    root: Where, shard_ids: list[str], dirs: Mapping[str, Where] | None = None
) -> DamagedDatasetError | None:
    """The first shard whose files fail their page checksums or cannot be read (every page of the
    dataset is read: called only once a read has failed); `dirs` where each shard's files lie."""
    for shard_id in shard_ids:
        for name in FILES:
            path = (dirs or {}).get(shard_id, root / SHARDS_DIR / shard_id) / name
            try:
                read_verified(path)
            except (pa.ArrowException, OSError) as error:
                return damaged_error(root, shard_id, f"{name} fails its page checksums ({first_line(error)})")
    return None


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return " ".join(lines[0].split())[:200] if lines else type(error).__name__


@contextlib.contextmanager
def damage_named(state: DatasetState) -> Iterator[None]:
    """A read that fails on a damaged file becomes one line naming its shard (`locate_damage`)."""
    try:
        yield
    except (duckdb.Error, pa.ArrowException, OSError) as error:
        if not is_damage(error):
            raise
        located = locate_damage(state.root, state.shards, state.dirs)
        if located is None:
            raise DamagedDatasetError(f"cannot read {str(state.root)!r}: {first_line(error)}") from None
        raise located from None


__all__ = [
    "FILES",
    "JOB_FILE",
    "MANIFEST_FILE",
    "OWN_NAMES",
    "SHARDS_DIR",
    "SHARD_ID",
    "SHARD_MARKER",
    "STAGING_DIR",
    "DamagedDatasetError",
    "DatasetError",
    "DatasetState",
    "FileRecord",
    "IncompleteDatasetError",
    "LinkedDatasetError",
    "check_dataset",
    "check_layout",
    "check_version",
    "committed_ids",
    "damage_named",
    "damaged_error",
    "file_record",
    "first_line",
    "is_damage",
    "is_shard_id",
    "link_note",
    "listed_shards",
    "locate_damage",
    "manifest_records",
    "read_verified",
    "scan",
    "shard_problem",
]
