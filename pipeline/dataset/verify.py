"""The complete check of a dataset (`diffimax verify`): the SHA-256 of every file against its
record, every page checksum, and every value against its column's rules, on disk or on object
storage (`pipeline.dataset.integrity` holds the cheap check every reader makes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipeline.dataset.conformance import value_problem
from pipeline.dataset.duck import require_dataset
from pipeline.dataset.integrity import (
    FILES,
    MANIFEST_FILE,
    SHARD_MARKER,
    SHARDS_DIR,
    FileRecord,
    check_layout,
    committed_ids,
    file_record,
    files_dir,
    first_line,
    is_shard_id,
    listed_records,
    listed_shards,
    read_json,
    read_verified,
    shard_problem,
    shard_records,
    snapshot_of,
)
from pipeline.dataset.objects import ObjectPath, Where, dataset_path


@dataclass
class VerifyReport:
    """What `verify_dataset` found."""

    root: Where
    shards: int = 0
    files: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)
    """One line per damaged, missing or unlisted shard."""

    def summary(self) -> str:
        head = f"{self.shards} shards, {self.files} files, {self.bytes:,} bytes checked (SHA-256 and page checksums)"
        return head + (f": {len(self.problems)} problem(s)" if self.problems else ": all intact")


def verify_dataset(root: str | Where) -> VerifyReport:
    """Every digest and every page checksum of every shard (the manifest's, or for a job that
    has not finished, each committed shard's own `_shard.json`). The dataset's own names must not
    be symbolic links (`check_layout`: LinkedDatasetError), nor may the manifest name a shard
    outside it; a shard directory or file that is a link, or an entry of `shards/` that is no
    shard, is a problem. A place that holds no dataset is DatasetError."""
    require_dataset(dataset_path(root))
    base = snapshot_of(root)
    check_layout(base)
    shards = base / SHARDS_DIR
    report = VerifyReport(base)
    entries: list[Where] = list(shards.iterdir()) if shards.is_dir() else []
    on_disk = {path.name for path in entries if path.is_dir() or path.is_symlink()}
    if isinstance(base, ObjectPath):  # a shard with no record is an attempt never committed: not there
        on_disk = set(committed_ids(shards)) | {name for name in on_disk if not is_shard_id(name)}
    listed: dict[str, Any] | None = None
    if (base / MANIFEST_FILE).is_file():
        listed = listed_shards(base / MANIFEST_FILE, read_json(base / MANIFEST_FILE))
        if listed is None:
            report.problems.append(f"{MANIFEST_FILE} holds no file records (mined before them): nothing to verify")
            return report
    else:
        report.problems.append(f"no {MANIFEST_FILE}: the job has not finished; its committed shards are checked")
    names = sorted(listed) if listed is not None else committed_ids(shards)
    for shard_id in names:
        report.shards += 1
        expected = listed_records(listed[shard_id]) if listed is not None else None
        problem = shard_problem(shards, shard_id, expected) or deep_problem(shards / shard_id, report, expected)
        if problem is not None:
            report.problems.append(f"shard {shard_id}: {problem}")
    for extra in sorted(on_disk - set(names)):
        if not is_shard_id(extra):
            report.problems.append(f"{extra[:120]!r} in shards/ is not a shard")
            continue
        where = MANIFEST_FILE if listed is not None else "a record"
        report.problems.append(f"shard {extra}: in shards/ but not in {where}")
    return report


def deep_problem(directory: Where, report: VerifyReport, expected: Mapping[str, FileRecord] | None) -> str | None:
    """The digests and page checksums of one shard that passed the cheap check."""
    info = read_json(directory / SHARD_MARKER)
    records = dict(expected) if expected is not None else shard_records(info)
    where = files_dir(directory, info)
    for name in FILES:
        path = where / name
        report.files += 1
        report.bytes += path.stat().st_size
        record = (records or {}).get(name)
        if record is not None and file_record(path).sha256 != record.sha256:
            return f"{name} has changed (its SHA-256 differs from the one recorded)"
        try:
            data = read_verified(path)
        except (pa.ArrowException, OSError) as error:
            return f"{name} fails its page checksums ({first_line(error)})"
        problem = value_problem(data, name.removesuffix(".parquet"), name)
        if problem is not None:
            return problem
    return None


__all__ = ["VerifyReport", "deep_problem", "verify_dataset"]
