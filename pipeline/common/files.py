"""Writing a file whole or not at all: the one atomic write every output uses."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` (UTF-8, newlines as given) to `path` through a temporary file beside it and a
    rename, so that a reader, or a crash, never sees half a file; the temporary file is removed
    when the write fails."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


def write_atomic_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """`write_atomic` for bytes (a Parquet file built in memory)."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target
