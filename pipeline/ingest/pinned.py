"""What a shard's reader holds a local input to while it reads it: the content the job pinned at
its start (`pipeline.ingest.pins`), so that an input replaced or rewritten mid-job ends the job
(`search.errors.InputChanged`) instead of mixing two contents in one dataset.

A local file's pin (`FilePin`) is what its descriptor said when the job hashed it (`FileState`:
device, inode, size, modification time) and the SHA-256 of each of its blocks. A reader checks
the state of its own descriptor when it opens the file and again once it has read: a file moved
over the path is another inode, a rewrite changes the size or the modification time. It also
checks the digest of every block it uses: a range shard's block is its own byte range (the blocks
are cut at the shard size), a stream's blocks are STREAM_BLOCK bytes of the compressed file, each
checked before a byte of it is decompressed. So an edit in place that keeps the size and puts the
modification time back (`touch -d`) is still found in every byte a shard owns; what no check
sees is such an edit of the few bytes a range shard reads past its end to finish its last game
(the next shard, which owns them, finds it). An object's pin (its ETag or generation) and a
URL's (ETag, Last-Modified, length) are checked where they are opened
(`pipeline.common.storage.ObjectReader`, `pipeline.ingest.streams.HttpBody`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import BinaryIO, Final

from search.errors import InputChanged

# Bytes of a compressed local file whose digest its stream reader checks before decoding them:
# what the reader holds at once, and 32 bytes of pin per block (240 KB for a 30 GB file).
STREAM_BLOCK: Final = 4 << 20


@dataclass(frozen=True)
class FileState:
    """What a file's descriptor says of it: which file it is, its size and when it was last written."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, descriptor: int) -> FileState:
        status = os.fstat(descriptor)
        return cls(status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)

    def describe(self) -> str:
        return f"inode {self.inode}, {self.size:,} bytes, modified at {self.mtime_ns} ns"


@dataclass(frozen=True)
class FilePin:
    """A local file as the job pinned it: its state, and the SHA-256 of each of its `block_bytes`
    blocks from block `first` on (a range shard carries its own block only)."""

    state: FileState
    block_bytes: int
    digests: tuple[str, ...]
    first: int = 0

    def block(self, index: int) -> FilePin:
        """The pin a reader of block `index` alone needs."""
        return FilePin(self.state, self.block_bytes, self.digests[index : index + 1], index)

    def digest_of(self, index: int) -> str | None:
        position = index - self.first
        return self.digests[position] if 0 <= position < len(self.digests) else None


class BlockDigests:
    """A file's whole SHA-256 and its blocks' digests, fed its bytes in order (`update`), as
    `pipeline.common.files.feed_stream` feeds a hash."""

    def __init__(self, block_bytes: int) -> None:
        self.block_bytes = block_bytes
        self.whole = hashlib.sha256()
        self.block = hashlib.sha256()
        self.filled = 0  # bytes of the current block
        self.digests: list[str] = []

    def update(self, data: bytes) -> None:
        self.whole.update(data)
        with memoryview(data) as view:
            while len(view):
                taken = view[: self.block_bytes - self.filled]
                self.block.update(taken)
                self.filled += len(taken)
                view = view[len(taken) :]
                if self.filled == self.block_bytes:
                    self.close_block()

    def close_block(self) -> None:
        self.digests.append(self.block.hexdigest())
        self.block, self.filled = hashlib.sha256(), 0

    def finish(self) -> tuple[str, ...]:
        """Every block's digest, the last (shorter) one included."""
        if self.filled:
            self.close_block()
        return tuple(self.digests)


def check_state(handle: BinaryIO, pin: FilePin, source: str) -> None:
    """InputChanged if the open file is not the one pinned, or was written since."""
    now = FileState.of(handle.fileno())
    if now != pin.state:
        raise InputChanged.of(source, pin.state.describe(), now.describe())


class RangeDigest:
    """The digest of a range shard's own bytes `[start, end)`, fed every block its reader reads
    (`seen`), checked against the pin once the reader is done (`check`)."""

    def __init__(self, pin: FilePin, source: str, start: int, end: int) -> None:
        self.pin, self.source = pin, source
        self.start, self.end = start, end
        self.digest = hashlib.sha256()
        self.reached = start  # the file offset up to which the range's bytes were fed

    def seen(self, offset: int, block: bytes) -> None:
        """`block` was read at file `offset`."""
        low, high = max(offset, self.reached), min(offset + len(block), self.end)
        if low < high:
            self.digest.update(block[low - offset : high - offset])
            self.reached = high

    def check(self, handle: BinaryIO) -> None:
        """Read what the reader left unread of the range, then InputChanged if the file is no
        longer the one pinned or the range's bytes are not those pinned."""
        if self.reached < self.end:
            handle.seek(self.reached)
            self.seen(self.reached, handle.read(self.end - self.reached))
        check_state(handle, self.pin, self.source)
        index = self.start // self.pin.block_bytes
        pinned = self.pin.digest_of(index)
        if self.start % self.pin.block_bytes or pinned is None:
            raise ValueError(f"no pinned block starts at byte {self.start} of {self.source!r}")  # a caller's bug
        if self.digest.hexdigest() != pinned:
            raise InputChanged.of(
                self.source,
                f"bytes {self.start:,}-{self.end:,} with SHA-256 {pinned[:12]}…",
                f"SHA-256 {self.digest.hexdigest()[:12]}…",
            )


class PinnedFile:
    """A local file read forward, block by block, each block's bytes handed out only once its
    digest and the descriptor's state are the pin's (a stream reader's raw input)."""

    def __init__(self, handle: BinaryIO, pin: FilePin, source: str) -> None:
        self.handle, self.pin, self.source = handle, pin, source
        self.index = 0  # the next block's index
        self.buffer = b""
        self.served = 0  # bytes of `buffer` handed out
        check_state(handle, pin, source)

    def read(self, size: int = -1) -> bytes:
        if self.served >= len(self.buffer):
            self.buffer, self.served = self.next_block(), 0
        end = len(self.buffer) if size is None or size < 0 else self.served + size
        piece = self.buffer[self.served : end]
        self.served += len(piece)
        return piece

    read1 = read

    def next_block(self) -> bytes:
        block = self.handle.read(self.pin.block_bytes)
        check_state(self.handle, self.pin, self.source)
        pinned = self.pin.digest_of(self.index)
        if block or pinned is not None:
            found = hashlib.sha256(block).hexdigest()
            if found != pinned:
                at = self.index * self.pin.block_bytes
                was = "no block" if pinned is None else f"SHA-256 {pinned[:12]}…"
                raise InputChanged.of(self.source, f"{was} at byte {at:,}", f"SHA-256 {found[:12]}…")
        self.index += 1
        return block

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.handle.close()


__all__ = ["STREAM_BLOCK", "BlockDigests", "FilePin", "FileState", "PinnedFile", "RangeDigest", "check_state"]
