"""Files written whole or not at all (the one atomic write every output uses), and their digests."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


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


def file_sha256(path: str | os.PathLike[str], chunk_bytes: int = 1 << 20) -> str:
    """The SHA-256 of a file's bytes, hex, read in pieces (a file may be larger than memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while piece := stream.read(chunk_bytes):
            digest.update(piece)
    return digest.hexdigest()
