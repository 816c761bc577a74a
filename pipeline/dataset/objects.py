"""A dataset's objects on object storage, seen as paths: `ObjectPath` answers the few questions the
store, the checks and the readers ask of a `pathlib.Path` (`/`, `name`, `exists`, `is_file`,
`is_dir`, `iterdir`, `stat`, `read_text`, `open`), so that one set of rules (`pipeline.dataset.
integrity`) reads a dataset wherever it lies. Every key it makes stays under the dataset's prefix
(`ObjectUrl.join` refuses `..`, `/` and empty names).

A check of a whole dataset asks about every shard: one request per question would be ~10 per shard,
hours for a month's 180,000 shards. `ObjectPath.snapshot()` lists the prefix once (1,000 keys a
request) and fetches every shard record and every Parquet footer concurrently (fsspec's batched
reads), and the paths derived from it answer from that view. Committed objects never change (a
shard's files are written under a name of their own and committed by a record written last,
`pipeline.dataset.store`), so the view is what a reader then reads.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pipeline.common.storage import (
    ObjectReader,
    ObjectUrl,
    arrow_filesystem,
    filesystem,
    is_object_url,
    parse_url,
    retried,
)

# Bytes read at the end of each Parquet file when a snapshot is taken: a footer and its tail
# (the dataset's footers are a few KiB; a longer one is read whole when it is needed).
TAIL_READ: Final = 64 << 10
# Names whose objects a snapshot reads whole (the shard records, the job and the manifest).
SMALL_NAMES: Final = ("_shard.json", "job.json", "manifest.json")


@dataclass
class View:
    """What one listing of a prefix found, and what was fetched with it."""

    sizes: dict[str, int] = field(default_factory=dict)
    """Every object under the prefix (fsspec path) and its size."""
    prefixes: set[str] = field(default_factory=set)
    """Every prefix with an object under it."""
    small: dict[str, bytes] = field(default_factory=dict)
    """The bytes of the small objects (`SMALL_NAMES`)."""
    tails: dict[str, bytes] = field(default_factory=dict)
    """The last TAIL_READ bytes (or all) of each Parquet object."""


@dataclass(frozen=True)
class ObjectStat:
    st_size: int


class ObjectPath:
    """An object or a prefix, with the part of `pathlib.Path` the dataset code uses."""

    def __init__(self, url: ObjectUrl | str, view: View | None = None) -> None:
        self.url = parse_url(url) if isinstance(url, str) else url
        self.view = view

    # -- naming ------------------------------------------------------------------------------------

    def __truediv__(self, name: str) -> ObjectPath:
        return ObjectPath(self.url.join(name), self.view)

    @property
    def name(self) -> str:
        return self.url.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> ObjectPath:
        key = self.url.key.rsplit("/", 1)[0] if "/" in self.url.key else ""
        return ObjectPath(ObjectUrl(self.url.scheme, self.url.bucket, key), self.view)

    @property
    def path(self) -> str:
        return self.url.path

    def __str__(self) -> str:
        return str(self.url)

    def __repr__(self) -> str:
        return f"ObjectPath({str(self.url)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectPath) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def resolve(self) -> ObjectPath:
        return self

    def relative_to(self, other: ObjectPath) -> str:
        return other.url.relative(self.path)

    # -- questions ---------------------------------------------------------------------------------

    @property
    def fs(self) -> Any:
        return filesystem(self.url.scheme)

    def is_symlink(self) -> bool:
        return False  # object storage has no links

    def is_file(self) -> bool:
        if self.view is not None:
            return self.path in self.view.sizes
        try:
            info: dict[str, Any] = retried(lambda: self.fs.info(self.path), self.url)
        except FileNotFoundError:
            return False
        return info.get("type") == "file"

    def is_dir(self) -> bool:
        if self.view is not None:
            return self.path in self.view.prefixes
        found: bool = retried(lambda: self.fs.isdir(self.path), self.url)
        return found

    def exists(self) -> bool:
        return self.is_file() or self.is_dir()

    def iterdir(self) -> Iterator[ObjectPath]:
        """The objects and prefixes directly under this prefix."""
        if self.view is not None:
            base = self.path + "/"
            names = {
                key[len(base) :].split("/", 1)[0]
                for key in [*self.view.sizes, *self.view.prefixes]
                if key.startswith(base)
            }
        else:
            listed: list[str] = retried(lambda: self._ls(), self.url)
            names = {entry.rstrip("/").rsplit("/", 1)[-1] for entry in listed}
        for name in sorted(names):
            if name:
                yield ObjectPath(
                    ObjectUrl(self.url.scheme, self.url.bucket, f"{self.url.key}/{name}".strip("/")), self.view
                )

    def _ls(self) -> list[str]:
        try:
            entries: list[str] = self.fs.ls(self.path, detail=False)
        except FileNotFoundError:
            return []
        return entries

    def glob(self, pattern: str) -> list[ObjectPath]:
        """The objects under this prefix whose relative key matches `pattern` (fsspec's glob)."""
        found: list[str] = retried(lambda: self.fs.glob(f"{self.path}/{pattern}"), self.url)
        return [
            ObjectPath(ObjectUrl(self.url.scheme, self.url.bucket, key.split("/", 1)[1]), self.view)
            for key in sorted(found)
        ]

    def stat(self) -> ObjectStat:
        if self.view is not None:
            if self.path not in self.view.sizes:
                raise FileNotFoundError(errno.ENOENT, "no such object", str(self))
            return ObjectStat(self.view.sizes[self.path])
        info: dict[str, Any] = retried(lambda: self.fs.info(self.path), self.url)
        if info.get("type") != "file":
            raise FileNotFoundError(errno.ENOENT, "no such object", str(self))
        return ObjectStat(int(info["size"]))

    # -- reading -----------------------------------------------------------------------------------

    def read_bytes(self) -> bytes:
        if self.view is not None and self.path in self.view.small:
            return self.view.small[self.path]
        if self.view is not None and self.path not in self.view.sizes:
            raise FileNotFoundError(errno.ENOENT, "no such object", str(self))
        data: bytes = retried(lambda: self.fs.cat_file(self.path), self.url)
        return data

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def tail(self, length: int) -> tuple[int, bytes]:
        """The object's size and its last `length` bytes (fewer if it is shorter)."""
        size = self.stat().st_size
        if self.view is not None:
            cached = self.view.tails.get(self.path)
            if cached is not None and (len(cached) >= length or len(cached) == size):
                return size, cached[-length:] if length else b""
        start = max(0, size - length)
        data: bytes = retried(lambda: self.fs.cat_file(self.path, start=start, end=size), self.url)
        return size, data

    def open(self, mode: str = "rb") -> ObjectReader:
        if mode != "rb":
            raise ValueError(f"an ObjectPath opens for reading only, not {mode!r}")
        return ObjectReader(self.url)

    def arrow(self) -> tuple[str, Any]:
        """The object as Arrow reads it: its path and the filesystem it is read through."""
        return self.path, arrow_filesystem(self.url.scheme)

    # -- writing (the store's) --------------------------------------------------------------------

    def put(self, data: bytes, *, create: bool = False) -> None:
        """Write the object whole (one PUT); with `create`, only if there is none (a conditional
        put: FileExistsError when the object exists)."""
        mode = "create" if create else "overwrite"
        retried(lambda: self.fs.pipe_file(self.path, data, mode=mode), self.url)

    def delete(self) -> None:
        """Delete the object (nothing when there is none)."""
        with contextlib.suppress(FileNotFoundError):
            retried(lambda: self.fs.rm_file(self.path), self.url)

    def delete_under(self) -> None:
        """Delete every object under this prefix."""
        found: list[str] = retried(lambda: self.fs.find(self.path + "/"), self.url)
        if found:
            retried(lambda: self.fs.rm(found), self.url)

    # -- a view of the whole prefix ----------------------------------------------------------------

    def snapshot(self) -> ObjectPath:
        """This prefix with a `View`: one listing, and the small objects and Parquet tails fetched
        concurrently; the paths derived from the result answer from it."""
        found: dict[str, dict[str, Any]] = retried(lambda: self.fs.find(self.path + "/", detail=True), self.url)
        view = View()
        for key, info in found.items():
            if info.get("type") != "file":
                continue
            view.sizes[key] = int(info.get("size") or 0)
            parts = key.split("/")
            view.prefixes.update("/".join(parts[:end]) for end in range(1, len(parts)))
        small = [key for key in view.sizes if key.rsplit("/", 1)[-1] in SMALL_NAMES]
        tails = [key for key in view.sizes if key.endswith(".parquet")]
        if small:
            fetched: dict[str, Any] = retried(lambda: self.fs.cat(small, on_error="return"), self.url)
            view.small = {key: data for key, data in fetched.items() if isinstance(data, bytes)}
        if tails:
            starts = [max(0, view.sizes[key] - TAIL_READ) for key in tails]
            ends = [view.sizes[key] for key in tails]
            pieces: list[Any] = retried(lambda: self.fs.cat_ranges(tails, starts, ends, on_error="return"), self.url)
            view.tails = {key: data for key, data in zip(tails, pieces, strict=True) if isinstance(data, bytes)}
        return ObjectPath(self.url, view)


# Where a dataset, or one of its files, lies.
Where = Path | ObjectPath


def parquet_schema(path: Where) -> Any:
    """The Arrow schema in a Parquet file's footer: for an object, read from its tail (a snapshot's
    view holds it), else through Arrow over the filesystem."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(path, ObjectPath):
        return pq.read_schema(path)
    size, tail = path.tail(TAIL_READ)
    try:  # Arrow reads only the footer: the tail of a larger file, behind the magic it starts with
        return pq.read_schema(pa.BufferReader(tail if len(tail) == size else b"PAR1" + tail))
    except (pa.ArrowException, OSError):
        name, filesystem = path.arrow()
        return pq.read_schema(name, filesystem=filesystem)


def dataset_path(place: str | os.PathLike[str] | ObjectPath) -> Where:
    """A dataset's root as the dataset code takes it: an `ObjectPath` for an object URL, else a
    `pathlib.Path`."""
    if isinstance(place, ObjectPath):
        return place
    text = os.fspath(place)
    return ObjectPath(text) if is_object_url(text) else Path(text)


__all__ = ["ObjectPath", "ObjectStat", "View", "Where", "dataset_path", "parquet_schema"]
