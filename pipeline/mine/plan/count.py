"""Step 1 of a plan: the games of each source, counted, or estimated from a large source's prefix."""

from __future__ import annotations

import bz2
import contextlib
import gzip
from collections.abc import Iterator, Sequence
from typing import BinaryIO, cast

from pipeline.common.progress import Progress
from pipeline.common.storage import is_object_url, redact
from pipeline.ingest.sources import (
    NEWLINE_GAME_START,
    compression_of,
    is_url,
    open_object,
    open_stream,
    source_size,
)
from pipeline.ingest.streams import READ_BLOCK, ZstdStream, read_block
from pipeline.mine.plan.records import PlanError, SourceCount

# Sources up to this size on disk are counted game by game (about 1 s per 30 MB of .pgn.zst here).
COUNT_EXACT_BYTES = 1 << 30
# Bytes on disk read at the start of a larger source to estimate its games per byte.
PREFIX_BYTES = 64 << 20


class _CountingReader:
    """A binary file that counts the bytes read from it, in reads of at most READ_BLOCK."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        block = self._raw.read(READ_BLOCK if size < 0 else min(size, READ_BLOCK))
        self.consumed += len(block)
        return block

    read1 = read

    def readable(self) -> bool:
        return True


@contextlib.contextmanager
def _decompressed(path: str) -> Iterator[tuple[BinaryIO, _CountingReader]]:
    """The decompressed stream of a local source or an object, and the counter of its bytes on disk."""
    compression = compression_of(path)
    with open_object(path) if is_object_url(path) else open(path, "rb") as handle:
        raw = _CountingReader(cast(BinaryIO, handle))
        stream: BinaryIO
        if compression == "zstd":
            stream = cast(BinaryIO, ZstdStream(cast(BinaryIO, raw)))
        elif compression == "gzip":
            stream = cast(BinaryIO, gzip.GzipFile(fileobj=cast(BinaryIO, raw), mode="rb"))
        elif compression == "bz2":
            stream = cast(BinaryIO, bz2.BZ2File(cast(BinaryIO, raw), mode="rb"))
        else:
            stream = cast(BinaryIO, raw)
        yield stream, raw


def prefix_games(path: str, disk_bytes: int = PREFIX_BYTES) -> tuple[int, int]:
    """Games (`[Event ` lines) starting in the first `disk_bytes` bytes on disk of a source, and the
    bytes on disk that were read for them."""
    count = 0
    previous = b"\n"
    tail = len(NEWLINE_GAME_START) - 1
    with _decompressed(path) as (stream, raw):
        while raw.consumed < disk_bytes:
            block = stream.read(READ_BLOCK)
            if not block:
                break
            joined = previous[-tail:] + block
            count += joined.count(NEWLINE_GAME_START)
            previous = joined
        return count, raw.consumed


def count_sources(sources: Sequence[str], max_games: int | None, progress: Progress) -> list[SourceCount]:
    """Count the games of each source (or estimate a large one's), in input order, up to `max_games`."""
    counts: list[SourceCount] = []
    left = max_games
    for source in sources:
        if is_url(source):
            raise PlanError(
                f"cannot plan {redact(source)!r}: plan reads files and objects (download it, or plan on a copy)"
            )
        size = source_size(source)
        compressed = compression_of(source) != "none"
        if left is not None and left <= 0:
            counts.append(SourceCount(source, size, 0, True, 0, 0, compressed))
            continue
        if size <= COUNT_EXACT_BYTES:
            games = count_games(source)
            counted, sampleable = True, games
        else:
            in_prefix, read = prefix_games(source)
            games = round(in_prefix * size / max(1, read))
            counted, sampleable = False, in_prefix
            progress.say(
                f"plan: {redact(source)}: {size / 1e9:.1f} GB, ~{games:,} games (estimated from its "
                f"first {read >> 20} MiB)"
            )
        games_read = games if left is None else min(games, left)
        if left is not None:
            left -= games_read
        counts.append(SourceCount(source, size, games, counted, games_read, min(sampleable, games_read), compressed))
    return counts


def count_games(path: str) -> int:
    """Lines that start with `[Event ` in a source (any supported compression, or a URL): the
    plain count the shard tests and benchmarks check against."""
    count = 0
    previous = b"\n"
    with open_stream(path) as stream:
        while block := read_block(stream):
            joined = previous[-len(NEWLINE_GAME_START) + 1 :] + block
            count += joined.count(NEWLINE_GAME_START)
            previous = joined if len(block) < len(NEWLINE_GAME_START) else block
    return count
