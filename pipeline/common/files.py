"""Files written whole or not at all (the one atomic write every output uses), never through a
link, and their digests.

Every file the project writes is refused when its name is a symbolic link, a hard link (a second
name of a file elsewhere: O_NOFOLLOW cannot see one) or a directory (`check_write_target`, one
line). Writing through either kind of link would overwrite a file the user never named; a
directory in a file's place is a layout we did not make. The check is also the lock file's
(`pipeline.dataset.lock`), so there is one rule for both.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

from search.errors import DiffimaxError


class UnsafeTarget(DiffimaxError, ValueError):
    """A file the project would write is a link (symbolic or hard), a directory or not a regular
    file: never followed, never overwritten."""


def unsafe_reason(status: os.stat_result) -> str | None:
    """Why a file with this `lstat` (or `fstat`) may not be written through, in words; None when it
    is a regular file of one name."""
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link: diffimax never writes through one (what it points to would be overwritten)"
    if stat.S_ISDIR(status.st_mode):
        return "is a directory, where diffimax writes a file"
    if not stat.S_ISREG(status.st_mode):
        return "is not a regular file"
    if status.st_nlink > 1:
        return (
            f"is a hard link ({status.st_nlink} names for one file): diffimax never writes through it "
            "(the other names' file would be overwritten)"
        )
    return None


def check_write_target(path: str | os.PathLike[str]) -> None:
    """UnsafeTarget, in one line, when `path` exists and is not a regular file of one name (see
    the module docstring); nothing when it is one, or does not exist yet."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    reason = unsafe_reason(status)
    if reason is not None:
        raise UnsafeTarget(f"{str(path)!r} {reason}; remove it, or choose another name")


# How a temporary file beside a target is made: new (never an existing name, a planted link
# included), never through a link.
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A new temporary file beside `path`, open for writing; when the block ends without an error
    it replaces `path` in one rename (a reader, or a crash, never sees half a file), else it is
    removed. `path` is checked first (`check_write_target`). The rename replaces a name, never
    writes through it, so a link planted after the check is replaced, not followed."""
    target = Path(path)
    check_write_target(target)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        descriptor = os.open(temporary, NEW_FILE_FLAGS, 0o644)
    except FileExistsError:  # a leftover of a killed writer with our pid, or a planted name: removing a name is safe
        try:
            os.unlink(temporary)
        except IsADirectoryError:
            raise UnsafeTarget(f"{str(temporary)!r} is a directory, where diffimax writes a file; remove it") from None
        descriptor = os.open(temporary, NEW_FILE_FLAGS, 0o644)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            yield stream
        try:
            os.replace(temporary, target)
        except IsADirectoryError:
            raise UnsafeTarget(f"{str(target)!r} is a directory, where diffimax writes a file; remove it") from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


class Readable(Protocol):
    """What `feed_stream` reads: a local file opened "rb", or an object being read."""

    def read(self, size: int = -1, /) -> bytes: ...


class Hashing(Protocol):
    """What `feed_stream` feeds: a hashlib hash, or anything that takes bytes in order as one does."""

    def update(self, data: bytes, /) -> None: ...


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Write `text` (a str as UTF-8, newlines as given; bytes as they are, such as a Parquet file
    built in memory) to `path` whole or not at all, never through a link (`replacing`)."""
    with replacing(path) as stream:
        stream.write(text.encode("utf-8") if isinstance(text, str) else text)
    return Path(path)


# Bytes in a MiB (sizes on the command line are in MiB: --shard-mb, --table-mb, --max-game-mb).
MIB = 1 << 20
# MiB in a TiB: the most memory one setting may ask (a table, an engine's hash, one game).
TIB_IN_MIB = 1 << 20


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
