"""A shard's bytes as its reader loads them (`load_shard`): the bytes a stream shard carries, or a
byte range of a plain file or object read from the input (`read_range`), by the ownership rule of
`pipeline.ingest.sources`. A range is held to the job's pin of its input (`pipeline.ingest.pinned`):
a local file's state and the digest of the shard's own bytes, an object's ETag or generation."""

from __future__ import annotations

from typing import Any, BinaryIO, cast

from pipeline.common.storage import is_object_url
from pipeline.ingest.pinned import FilePin, RangeDigest, check_state
from pipeline.ingest.sources import (
    NEWLINE_GAME_START,
    Shard,
    ShardData,
    SkippedGame,
    cap_reason,
    open_object,
)
from pipeline.ingest.streams import READ_BLOCK


def load_shard(shard: Shard) -> ShardData:
    """The shard's bytes, starting at its first owned game start (or at `start` if it owns none,
    with no data)."""
    if shard.kind == "stream":
        return ShardData(shard.start, shard.data or b"")
    return read_range(shard.source, shard.start, shard.end, shard.max_game_bytes, shard.pin)


def shard_bytes_of(shard: Shard) -> bytes:
    """The bytes of the games the shard owns: read from disk (range) or carried (stream)."""
    return load_shard(shard).data


def read_range(
    path: str, start: int, end: int, max_game_bytes: int | None = None, pin: FilePin | dict[str, Any] | None = None
) -> ShardData:
    """The chunks of an uncompressed file whose first byte lies in `[start, end)`: from the first
    chunk start at or after `start` to the first chunk start at or after `end` (or the end of
    the file). Chunk starts are byte 0 and every line that starts with `[Event `.

    The file is read READ_BLOCK bytes at a time. A chunk above `max_game_bytes` (a game too large,
    `--max-game-mb`) is not kept: it is dropped as it is read, so that what is held stays under the
    range's own games plus one cap whatever the file, and `ShardData.skipped` says where it lay.

    With the job's `pin` of the input, what was read is checked against it before it is returned
    (`search.errors.InputChanged` if it differs): an object is read with its pinned ETag, a local
    file's descriptor must be the pinned file, unwritten since, and the range's bytes its own."""
    if start >= end:
        return ShardData(start, b"")
    object_pin = pin if isinstance(pin, dict) else None
    with open_object(path, object_pin) if is_object_url(path) else open(path, "rb") as opened:
        handle = cast(BinaryIO, opened)
        pinned = RangeDigest(pin, path, start, end) if isinstance(pin, FilePin) else None
        if pinned is not None:
            check_state(handle, pinned.pin, path)
        low = max(0, start - 1)  # one byte back, to see whether `start` begins a line
        handle.seek(low)
        data = _RangeReader(handle, low, max_game_bytes, pinned).read(start, end)
        if pinned is not None:
            pinned.check(handle)
        return data


class _RangeReader:
    """The state of `read_range`: a window of the file, read forward block by block."""

    def __init__(self, handle: BinaryIO, low: int, max_game_bytes: int | None, pinned: RangeDigest | None) -> None:
        self.handle = handle
        self.pinned = pinned  # fed every block read, at its file offset
        self.read_to = low  # the file offset of the next block
        self.cap = max_game_bytes
        self.window = bytearray()  # bytes of the file from `base` on, read and not yet let go
        self.base = low
        self.eof = False

    def more(self) -> bool:
        """Read the next block into the window; False at the end of the file."""
        if self.eof:
            return False
        block = self.handle.read(READ_BLOCK)
        if not block:
            self.eof = True
            return False
        if self.pinned is not None:
            self.pinned.seen(self.read_to, block)
        self.read_to += len(block)
        self.window += block
        return True

    def next_start(self, at: int, before: int | None = None) -> int | None:
        """The first chunk start at or after file offset `at` (a newline before `[Event ` at or
        after `at - 1`), reading on as needed; None at the end of the file, or if there is none
        before `before`. While the chunk it ends grows past the cap, the window keeps only the
        bytes a chunk start may begin in."""
        scan = max(0, at - 1 - self.base)
        while True:
            found = self.window.find(NEWLINE_GAME_START, scan)
            if found >= 0:
                return self.base + found + 1
            scan = max(scan, len(self.window) - len(NEWLINE_GAME_START) + 1)
            if before is not None and self.base + scan >= before - 1:
                return None
            if self.cap is not None and self.base + len(self.window) - at > self.cap + READ_BLOCK:
                self.let_go(self.base + scan)
                scan = 0
            if not self.more():
                return None

    def let_go(self, offset: int) -> None:
        """Forget the window's bytes before file offset `offset`."""
        drop = offset - self.base
        if drop > 0:
            del self.window[:drop]
            self.base = offset

    def read(self, start: int, end: int) -> ShardData:
        if start == 0:
            self.more()
            first: int | None = 0
        else:
            first = self.next_start(start, before=end)
        if first is None or first >= end:
            return ShardData(start, b"")
        kept = bytearray()
        skipped: list[SkippedGame] = []
        chunk = first
        while True:
            following = self.next_start(chunk + 1)
            stop = following if following is not None else self.base + len(self.window)
            if self.cap is not None and stop - chunk > self.cap:
                reason = cap_reason(self.cap, stop - chunk, "the end of the file" if following is None else None)
                skipped.append(SkippedGame(len(kept), chunk, stop - chunk, reason))
            else:
                with memoryview(self.window) as view:
                    kept += view[chunk - self.base : stop - self.base]
            self.let_go(stop)
            if following is None or following >= end:
                return ShardData(first, bytes(kept), tuple(skipped))
            chunk = following


__all__ = ["load_shard", "read_range", "shard_bytes_of"]
