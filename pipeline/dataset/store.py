"""The Parquet dataset on disk: atomic per-shard commits, resume, and the manifest.

Layout under the output directory:

    shards/<shard_id>/{games,positions,responses,traps,errors}.parquet   committed shards
    shards/<shard_id>/_shard.json                                        the shard's counts
    _staging/                                                            shards being written
    manifest.json                                                        the run (rewritten at the end)

A shard is written completely under `_staging/` and then renamed into `shards/` in one
`os.rename`, so a reader or a resumed job sees a shard entirely or not at all, and a rerun can
never duplicate rows.
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

from schemas.dataset import TABLES, versioned

SHARD_MARKER = "_shard.json"


class OutputError(ValueError):
    """The output directory cannot be used as asked (not empty without --resume, ...)."""


class DatasetStore:
    def __init__(self, root: str | os.PathLike[str], *, resume: bool) -> None:
        self.root = Path(root)
        self.shards = self.root / "shards"
        self.staging = self.root / "_staging"
        if self.root.exists() and not self.root.is_dir():
            raise OutputError(f"output path {str(self.root)!r} exists and is not a directory")
        if not resume and self.root.exists() and any(self.root.iterdir()):
            raise OutputError(
                f"output directory {str(self.root)!r} is not empty: use --resume to continue that run, "
                "or choose a new --out"
            )
        self.shards.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.staging, ignore_errors=True)  # leftovers of an interrupted run
        self.staging.mkdir(parents=True)

    def committed(self) -> set[str]:
        return {path.parent.name for path in self.shards.glob(f"*/{SHARD_MARKER}")}

    def commit(self, shard_id: str, rows: Mapping[str, Iterable[dict[str, Any]]], info: dict[str, Any]) -> None:
        """Write every table of one shard and publish them together."""
        final = self.shards / shard_id
        if final.exists():
            raise OutputError(f"shard {shard_id} is already committed in {str(self.root)!r}")
        temporary = self.staging / f"{shard_id}.{uuid.uuid4().hex[:8]}"
        temporary.mkdir()
        for name in TABLES:
            table = pa.Table.from_pylist(list(rows.get(name, ())), schema=versioned(name))
            pq.write_table(table, temporary / f"{name}.parquet", compression="zstd")
        (temporary / SHARD_MARKER).write_text(json.dumps(info, indent=2, sort_keys=True))
        os.rename(temporary, final)

    def shard_info(self) -> dict[str, dict[str, Any]]:
        return {
            path.parent.name: json.loads(path.read_text()) for path in sorted(self.shards.glob(f"*/{SHARD_MARKER}"))
        }

    def read_table(self, name: str, shard_ids: Iterable[str] | None = None) -> pa.Table:
        ids = sorted(self.committed() if shard_ids is None else shard_ids)
        tables = [pq.read_table(self.shards / shard / f"{name}.parquet") for shard in ids]
        if not tables:
            return versioned(name).empty_table()
        return pa.concat_tables(tables)

    def write_manifest(self, manifest: dict[str, Any]) -> Path:
        path = self.root / "manifest.json"
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str))
        os.replace(temporary, path)
        shutil.rmtree(self.staging, ignore_errors=True)
        return path
