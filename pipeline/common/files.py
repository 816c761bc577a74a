"""Files written whole or not at all (the one atomic write every output uses), and their digests."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol


class Readable(Protocol):
    """What `feed_stream` reads: a local file opened "rb", or an object being read."""

    def read(self, size: int = -1, /) -> bytes: ...


class Hashing(Protocol):
    """What `feed_stream` feeds: a hashlib hash, or anything that takes bytes in order as one does."""

    def update(self, data: bytes, /) -> None: ...


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Write `text` (a str as UTF-8, newlines as given; bytes as they are, such as a Parquet file
    built in memory) to `path` through a temporary file beside it and a
    rename, so that a reader, or a crash, never sees half a file; the temporary file is removed
    when the write fails."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        if isinstance(text, bytes):
            temporary.write_bytes(text)
        else:
            with temporary.open("w", encoding="utf-8", newline="") as stream:
                stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


# Bytes in a MiB (sizes on the command line are in MiB: --shard-mb, --table-mb, --max-game-mb).
MIB = 1 << 20


def file_sha256(path: str | os.PathLike[str], chunk_bytes: int = MIB) -> str:
    """The SHA-256 of a file's bytes, hex, read in pieces (a file may be larger than memory)."""
    return files_sha256([path], chunk_bytes)


def files_sha256(paths: Sequence[str | os.PathLike[str]], chunk_bytes: int = MIB) -> str:
    """One SHA-256 of several files' bytes in order, hex (a dataset's files as one input)."""
    digest = hashlib.sha256()
    for path in paths:
        feed_file(digest, path, chunk_bytes)
    return digest.hexdigest()


def feed_file(digest: Hashing, path: str | os.PathLike[str], chunk_bytes: int = MIB) -> int:
    """Add a file's bytes to `digest`, read in pieces (a file may be larger than memory); its size."""
    with open(path, "rb") as stream:
        return feed_stream(digest, stream, chunk_bytes)


def feed_stream(digest: Hashing, stream: Readable, chunk_bytes: int = MIB) -> int:
    """Add the rest of an open binary stream (a local file, an object being read) to `digest`, read
    in pieces; the number of bytes read. The one hashing loop of the project."""
    size = 0
    while piece := stream.read(chunk_bytes):
        digest.update(piece)
        size += len(piece)
    return size
