"""Finding PGN inputs and cutting them into shards that workers parse independently.

Inputs are `.pgn`, `.pgn.zst`, `.pgn.gz` and `.pgn.bz2` files, directories (searched recursively
for those), globs, `http(s)://` URLs (streamed, never downloaded whole), and objects of object
storage (`s3://`, `gs://`: an object, a glob of keys or a prefix, `pipeline.ingest.objects`).

Two kinds of shard:

* ``range``: a byte range ``[start, end)`` of an uncompressed file or object. The driver cuts the file
  by arithmetic alone (no I/O, so a 30 GB dump is cut instantly) and the worker reads its own
  range with a seek. Ownership rule, which loses or doubles no game at any boundary: a *chunk*
  starts at byte 0 of the file and at every line that starts with ``[Event `` ; a shard owns
  every chunk whose first byte lies inside ``[start, end)``. The reader seeks to ``start``, skips
  to the first chunk start at or after ``start``, and reads on to the first chunk start at or
  after ``end`` (or the end of the file).
* ``stream``: a piece of a compressed file or a URL, which cannot be seeked. The driver
  decompresses the stream once, cuts it before every ``shard_games``-th ``[Event `` line, and
  the shard carries its bytes. ``start``/``end`` are offsets in the decompressed stream and
  ``first_game`` is the index in the source of the shard's first ``[Event `` game.

Byte offsets are always offsets in the decompressed stream of the source, so a game has the same
offset whichever way its source is cut, and ``(source order, byte offset)`` orders all games.
"""

from __future__ import annotations

import bz2
import contextlib
import glob
import gzip
import hashlib
import os
import re
import stat
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal, cast

from pipeline.common.files import MIB
from pipeline.common.storage import ObjectReader, is_object_url, parse_url, redact
from pipeline.ingest.objects import expand_object_input, object_size
from pipeline.ingest.pinned import FilePin, PinnedFile
from pipeline.ingest.streams import (
    READ_BLOCK as READ_BLOCK,
)
from pipeline.ingest.streams import (
    STREAM_ERRORS,
    HttpBody,
    ZstdStream,
    read_block,
)
from pipeline.ingest.streams import (
    URL_TIMEOUT as URL_TIMEOUT,
)
from search.errors import DiffimaxError

Compression = Literal["none", "zstd", "gzip", "bz2"]
ShardKind = Literal["range", "stream"]

# Supported names, longest first so `.pgn.zst` wins over `.pgn`.
SUFFIXES: tuple[tuple[str, Compression], ...] = (
    (".pgn.zst", "zstd"),
    (".pgn.bz2", "bz2"),
    (".pgn.gz", "gzip"),
    (".pgn", "none"),
)
SUFFIX_LIST = ", ".join(suffix for suffix, _ in SUFFIXES)

# The line that starts a game (and a chunk); PGN export format puts Event first.
GAME_START = b"[Event "
# The same, as found in the middle of data: a game start is the byte after this newline.
NEWLINE_GAME_START = b"\n" + GAME_START
# The largest game a stream may hold, headers and movetext (`--max-game-mb`): a larger one is
# recorded as an error and skipped up to the next game start, so that the reader's memory stays
# bounded whatever the input (a decompression bomb of one endless game or header line). The
# longest real games hold a few thousand plies, under 100 KB.
MAX_GAME_BYTES = MIB
# A stream shard is cut before `shard_games` games or once its complete games pass this many
# bytes, whichever comes first: what the reader holds stays bounded (this, plus one game).
STREAM_SHARD_MAX_BYTES = 64 << 20


class InputError(DiffimaxError, ValueError):
    """An input (file, directory, glob or URL) that names no readable PGN data."""


@dataclass(frozen=True)
class Shard:
    """One independent piece of work: the games of one source between two game boundaries."""

    shard_id: str
    """`{source stem}-{sha1(source)[:8]}-{index:06d}`: the same inputs and shard sizes give the same
    ids in every run, which is what resume relies on."""
    source: str
    """Absolute path or URL of the input file."""
    index: int
    """Position of the shard within its source, from 0."""
    kind: ShardKind
    """``range`` (a byte range of a local uncompressed file) or ``stream`` (carries its bytes)."""
    start: int
    """First byte (range: in the file; stream: in the decompressed stream)."""
    end: int
    """One past the last byte owned (range) or held (stream)."""
    first_game: int
    """Stream shards: index in the source of the shard's first game; range shards: -1 (unknown)."""
    data: bytes | None = field(default=None, repr=False)
    """Stream shards: the decompressed bytes ``[start, end)``; range shards: None."""
    source_index: int = 0
    """Position of the source among the expanded inputs: the first key of the global game order."""
    stream_error: str | None = None
    """Set on the last shard of a stream that broke off (truncated or corrupt compressed data, a
    dropped connection): what went wrong. The shard holds everything read before it."""
    skipped: str | None = None
    """Set on the shard of one game too large to read (`MAX_GAME_BYTES`): why. The shard holds no
    bytes; `[start, end)` is where the game lay in the stream."""
    max_game_bytes: int | None = None
    """Range shards: the largest game read (`--max-game-mb`); a larger one is left out as it is
    read (`ShardData.skipped`). None: no cap."""
    pin: FilePin | dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """Range shards: what their reader holds the input to (`pipeline.ingest.pinned`): the file's
    state and the digest of the shard's own block, or the object's pin. None: nothing pinned."""


@dataclass(frozen=True)
class ShardData:
    """The bytes of a shard, from its first owned game start on."""

    offset: int
    """Offset of ``data[0]`` in the (decompressed) source."""
    data: bytes
    skipped: tuple[SkippedGame, ...] = ()
    """Range shards: the games too large to read (`--max-game-mb`), cut out of `data`, in order."""


@dataclass(frozen=True)
class SkippedGame:
    """A game of a range shard above the cap, left out of its `ShardData`."""

    at: int
    """Where in `ShardData.data` it was cut out (the games before it end there)."""
    offset: int
    """Its first byte in the source."""
    size: int
    """Its bytes, up to the next game start or the end of the file."""
    reason: str
    """The error row's reason."""


def cap_reason(cap: int, skipped: int, until: str | None = None) -> str:
    """Why a game was skipped: the reason of its error row."""
    return (
        f"game larger than the {cap:,}-byte cap (--max-game-mb): {skipped:,} bytes skipped "
        f"up to {until or 'the next game start'}"
    )


def is_url(name: str) -> bool:
    return name[:8].lower().startswith(("http://", "https://"))


def name_path(name: str) -> str:
    """The path of a URL or object URL, else `name` itself; InputError for a URL urllib cannot read."""
    if not (is_url(name) or is_object_url(name)):
        return name
    try:
        return urllib.parse.urlsplit(name).path
    except ValueError as error:  # an unbalanced `[`: urllib reads an IPv6 host
        raise InputError(f"unreadable input URL {redact(name)!r}: {error}") from None


def compression_of(name: str) -> Compression:
    """The compression named by a file name, URL path or object key; InputError if it is not a PGN name."""
    lowered = name_path(name).lower()
    for suffix, compression in SUFFIXES:
        if lowered.endswith(suffix):
            return compression
    raise InputError(f"unsupported input {redact(name)!r}: expected a name ending in {SUFFIX_LIST}")


def source_stem(source: str) -> str:
    """The file name without its PGN suffix, safe for ids: `lichess_db_2013-01`."""
    base = name_path(source).rstrip("/").rsplit("/", 1)[-1]
    lowered = base.lower()
    for suffix, _ in SUFFIXES:
        if lowered.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", base) or "source"


def shard_id_of(source: str, index: int) -> str:
    """A shard's id: the same for the same source however its URL's credentials change."""
    digest = hashlib.sha1(redact(source).encode("utf-8")).hexdigest()[:8]
    return f"{source_stem(source)}-{digest}-{index:06d}"


def _is_pgn_name(name: str) -> bool:
    return name.lower().endswith(tuple(suffix for suffix, _ in SUFFIXES))


def _walk(directory: str) -> list[str]:
    """PGN files under a directory, recursively, sorted by path."""
    found: list[str] = []
    for root, _, files in os.walk(directory):
        found.extend(os.path.join(root, name) for name in files if _is_pgn_name(name))
    return sorted(found)


def _readable(path: str, named_by: str) -> str:
    if not os.access(path, os.R_OK):
        raise InputError(f"cannot read {path!r} (from input {named_by!r})")
    if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe, a device: a second reading finds nothing
        raise InputError(
            f"{path!r} (from input {named_by!r}) is not a regular file (a named pipe?): a job reads each input "
            "more than once (its digest, which --resume checks, then its games); save it to a file first"
        )
    return os.path.abspath(path)


def expand_inputs(inputs: Sequence[str]) -> list[str]:
    """Absolute paths and URLs of every PGN source named by `inputs`, in input order (directories
    and globs sorted by path), each once. Touches no network: a URL is checked by name only.

    Raises InputError, naming the input, for a missing file, a directory or glob with no PGN file,
    or a name without a supported suffix."""
    if isinstance(inputs, str):
        inputs = [inputs]
    if not inputs:
        raise InputError("no inputs given")
    sources: list[str] = []
    for item in inputs:
        if is_url(item):
            compression_of(item)
            sources.append(item)
        elif is_object_url(item):
            objects = expand_object_input(item, _is_pgn_name)
            if not objects:
                raise InputError(f"no PGN objects ({SUFFIX_LIST}) at {redact(item)!r}")
            sources.extend(obj for obj in objects if compression_of(obj))  # a named object's suffix checked
        elif any(char in item for char in "*?["):
            matches: list[str] = []
            for match in sorted(glob.glob(item, recursive=True)):
                if os.path.isdir(match):
                    matches.extend(_walk(match))
                elif _is_pgn_name(match):
                    matches.append(match)
            if not matches:
                raise InputError(f"no PGN files ({SUFFIX_LIST}) match {item!r}")
            sources.extend(_readable(match, item) for match in matches)
        elif os.path.isdir(item):
            files = _walk(item)
            if not files:
                raise InputError(f"no PGN files ({SUFFIX_LIST}) under directory {item!r}")
            sources.extend(_readable(path, item) for path in files)
        elif os.path.exists(item):
            compression_of(item)
            sources.append(_readable(item, item))
        else:
            raise InputError(f"no such file: {item!r}")
    return list(dict.fromkeys(sources))


@contextlib.contextmanager
def open_stream(
    source: str, url_timeout: float = URL_TIMEOUT, pin: FilePin | dict[str, Any] | None = None
) -> Iterator[BinaryIO]:
    """The decompressed bytes of a source as a forward-only binary stream. A URL is fetched with
    urllib and decompressed as it arrives (`HttpBody`: a break is resumed with Range requests, below
    the decompressor); InputError if it cannot be opened. With the job's `pin` of the source, its
    bytes are checked against it as they are read (`search.errors.InputChanged` if they differ)."""
    compression = compression_of(source)
    with contextlib.ExitStack() as stack:
        raw: BinaryIO
        if is_url(source):
            try:
                body = HttpBody(source, url_timeout, pin=pin if isinstance(pin, dict) else None)
            except urllib.error.HTTPError as error:
                raise InputError(f"cannot open {source!r}: HTTP {error.code} {error.reason}") from error
            except (urllib.error.URLError, OSError) as error:
                raise InputError(f"cannot open {source!r}: {error}") from error
            stack.callback(body.close)
            raw = cast(BinaryIO, body)
        elif is_object_url(source):
            raw = cast(BinaryIO, stack.enter_context(open_object(source, pin if isinstance(pin, dict) else None)))
        else:
            try:
                raw = stack.enter_context(open(source, "rb"))
            except OSError as error:
                raise InputError(f"cannot open {source!r}: {error.strerror}") from error
            if isinstance(pin, FilePin):
                raw = cast(BinaryIO, PinnedFile(raw, pin, source))
        stream: BinaryIO
        if compression == "zstd":
            stream = cast(BinaryIO, ZstdStream(raw))
        elif compression == "gzip":
            stream = cast(BinaryIO, stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb")))
        elif compression == "bz2":
            stream = cast(BinaryIO, stack.enter_context(bz2.BZ2File(raw, mode="rb")))
        else:
            stream = raw
        yield stream


def iter_shards(
    inputs: Sequence[str],
    *,
    shard_bytes: int = 32 << 20,
    shard_games: int = 2000,
    max_game_bytes: int = MAX_GAME_BYTES,
    url_timeout: float = URL_TIMEOUT,
) -> Iterator[Shard]:
    """Every shard of every input, lazily and in input order.

    The inputs are expanded (and checked) before the first shard. An uncompressed local file is
    cut into range shards of `shard_bytes` with no I/O; a compressed file or a URL is read once
    here and cut into stream shards of `shard_games` games. An empty file has no shard. A stream
    that breaks off ends with a shard that holds what was read and says why in `stream_error`."""
    if shard_bytes < 1 or shard_games < 1:
        raise ValueError(f"shard sizes must be positive: shard_bytes={shard_bytes}, shard_games={shard_games}")
    sources = expand_inputs(inputs)
    for source_index, source in enumerate(sources):
        yield from source_shards(
            source,
            source_index,
            shard_bytes=shard_bytes,
            shard_games=shard_games,
            max_game_bytes=max_game_bytes,
            url_timeout=url_timeout,
        )


def is_stream(source: str) -> bool:
    """Whether a source is read as a stream (compressed, or a URL) rather than cut into byte ranges."""
    return is_url(source) or compression_of(source) != "none"


def source_shards(
    source: str,
    source_index: int,
    *,
    shard_bytes: int,
    shard_games: int,
    max_game_bytes: int = MAX_GAME_BYTES,
    url_timeout: float = URL_TIMEOUT,
    pin: FilePin | dict[str, Any] | None = None,
) -> Iterator[Shard]:
    """The shards of one expanded source (`iter_shards` for one input): range shards of a plain
    local file, cut with no I/O, or the stream shards of a compressed file or a URL, read as they
    are cut (a game above `max_game_bytes` becomes a shard of its own that says it was skipped).
    `pin` (`pipeline.ingest.pins.pin_input`) is what every read of the source is held to."""
    if is_stream(source):
        return stream_shards(source, source_index, shard_games, max_game_bytes, url_timeout, pin)
    return _range_shards(source, source_index, shard_bytes, max_game_bytes, pin)


def plain_bytes(inputs: Sequence[str]) -> int | None:
    """Bytes to read when every input is a plain .pgn file or object (known before reading, as an
    ETA needs them); else None."""
    total = 0
    for item in expand_inputs(inputs):
        if is_stream(item):
            return None
        total += source_size(item)
    return total or None


def source_size(source: str) -> int:
    """The bytes of a local file or an object (a URL's are not known before it is read)."""
    return object_size(source) if is_object_url(source) else os.path.getsize(source)


def open_object(source: str, pin: dict[str, Any] | None = None) -> ObjectReader:
    """An object of object storage as a seekable binary stream, held to the job's `pin` of it when
    given (`ObjectReader`); InputError if there is none."""
    try:
        return ObjectReader(parse_url(source), pin=pin)
    except FileNotFoundError:
        raise InputError(f"cannot open {redact(source)!r}: no such object") from None


def _range_shards(
    source: str, source_index: int, shard_bytes: int, max_game_bytes: int, pin: FilePin | dict[str, Any] | None
) -> Iterator[Shard]:
    """Cut by the pinned size when there is a pin: the shards are those of the content pinned."""
    if isinstance(pin, FilePin):
        size = pin.state.size
    else:
        size = int(pin["bytes"]) if pin and "bytes" in pin else source_size(source)
    for index, start in enumerate(range(0, size, shard_bytes)):
        end = min(size, start + shard_bytes)
        yield Shard(
            shard_id_of(source, index),
            source,
            index,
            "range",
            start,
            end,
            -1,
            None,
            source_index,
            max_game_bytes=max_game_bytes,
            pin=pin.block(index) if isinstance(pin, FilePin) else pin,
        )


class _StreamCutter:
    """The state of `stream_shards`: the bytes read and not yet cut into a shard."""

    def __init__(self, source: str, source_index: int, shard_games: int, max_game_bytes: int) -> None:
        self.source, self.source_index = source, source_index
        self.shard_games, self.max_game_bytes = shard_games, max_game_bytes
        self.buffer = bytearray()
        self.offset = 0  # stream offset of buffer[0]
        self.starts: list[int] = []  # game starts in buffer, ascending
        self.scan = 0  # where the next search for a game start begins
        self.index = 0  # the next shard's index
        self.games = 0  # games in earlier shards
        self.checked_first = False  # whether the stream's first bytes were checked for a game start
        self.skipping: int | None = None  # stream offset of a game too large, while it is skipped

    def shard(self, end: int, games: int, stream_error: str | None = None) -> Shard:
        """The next shard, of buffer[:end] holding `games` game starts; buffer is advanced past it."""
        with memoryview(self.buffer) as view:
            data = bytes(view[:end])
        shard = Shard(
            shard_id_of(self.source, self.index),
            self.source,
            self.index,
            "stream",
            self.offset,
            self.offset + end,
            self.games,
            data,
            self.source_index,
            stream_error,
        )
        del self.buffer[:end]
        self.starts = [start - end for start in self.starts[games:]]
        self.scan = max(0, self.scan - end)
        self.offset += end
        self.index += 1
        self.games += games
        return shard

    def feed(self, block: bytes) -> Iterator[Shard]:
        """The shards complete once `block` is added."""
        self.buffer += block
        if not self.checked_first and len(self.buffer) >= len(GAME_START):
            self.checked_first = True
            if self.buffer.startswith(GAME_START):
                self.starts.insert(0, 0)
        while True:
            found = self.buffer.find(NEWLINE_GAME_START, self.scan)
            if found < 0:
                self.scan = max(self.scan, len(self.buffer) - len(NEWLINE_GAME_START) + 1)
                break
            start = found + 1
            self.scan = start
            previous = self.starts[-1] if self.starts else 0
            if self.skipping is not None or start - previous > self.max_game_bytes:
                yield from self.skip(previous, start)
            else:
                self.starts.append(start)
            while len(self.starts) > self.shard_games:
                yield self.shard(self.starts[self.shard_games], self.shard_games)
            if len(self.starts) > 1 and self.starts[-1] > STREAM_SHARD_MAX_BYTES:  # many large games
                yield self.shard(self.starts[-1], len(self.starts) - 1)
        if self.skipping is not None:
            self.drop()
        elif len(self.buffer) - (self.starts[-1] if self.starts else 0) > self.max_game_bytes:
            yield from self.complete_games()  # the last game passed the cap before its end was seen
            self.skipping = self.offset
            self.drop()

    def complete_games(self) -> Iterator[Shard]:
        """The complete games before the last game start, as a shard (none if there are none)."""
        last = self.starts[-1] if self.starts else 0
        if last > 0:
            yield self.shard(last, len(self.starts) - 1)

    def drop(self) -> None:
        """While a game is skipped, only the bytes a game start may begin in are kept."""
        drop = max(0, len(self.buffer) - len(NEWLINE_GAME_START))
        del self.buffer[:drop]
        self.scan = max(0, self.scan - drop)
        self.offset += drop

    def skip(self, previous: int, start: int) -> Iterator[Shard]:
        """A game start at buffer[start] ends a game too large, which began at buffer[previous]
        (or at `skipping`, if it passed the cap earlier): the complete games before it, then the
        skipped game, become shards; the next game starts at buffer[0]."""
        if self.skipping is None:
            yield from self.complete_games()
            start -= previous
            self.skipping = self.offset
        skipped = self.offset + start - self.skipping
        reason = cap_reason(self.max_game_bytes, skipped)
        yield Shard(
            shard_id_of(self.source, self.index),
            self.source,
            self.index,
            "stream",
            self.skipping,
            self.offset + start,
            self.games,
            b"",
            self.source_index,
            skipped=reason,
        )
        del self.buffer[:start]
        self.starts = [0]
        self.scan = max(0, self.scan - start)
        self.offset += start
        self.index += 1
        self.games += 1
        self.skipping = None

    def rest(self, error: str | None) -> Iterator[Shard]:
        """What is left at the end of the stream (`error`: why it broke off)."""
        if self.skipping is not None:
            reason = f"game larger than the {self.max_game_bytes:,}-byte cap (--max-game-mb), at the end of the stream"
            end = self.offset + len(self.buffer)
            yield Shard(
                shard_id_of(self.source, self.index),
                self.source,
                self.index,
                "stream",
                self.skipping,
                end,
                self.games,
                b"",
                self.source_index,
                error,
                skipped=reason,
            )
        elif self.buffer or error is not None:
            yield self.shard(len(self.buffer), len(self.starts), stream_error=error)


def stream_shards(
    source: str,
    source_index: int,
    shard_games: int,
    max_game_bytes: int = MAX_GAME_BYTES,
    url_timeout: float = URL_TIMEOUT,
    pin: FilePin | dict[str, Any] | None = None,
) -> Iterator[Shard]:
    """Cut the decompressed stream before every `shard_games`-th game start. The first shard also
    holds whatever precedes the first game. A game above `max_game_bytes` is skipped up to the
    next game start and becomes a shard of its own, with no bytes, that says so (`Shard.skipped`):
    the bytes held stay under `max_game_bytes` plus `shard_games` games whatever the stream."""
    cutter = _StreamCutter(source, source_index, shard_games, max_game_bytes)
    error: str | None = None
    with open_stream(source, url_timeout, pin) as stream:
        while True:
            try:
                block = read_block(stream)
            except STREAM_ERRORS as failure:
                error = f"{type(failure).__name__}: {failure}"
                block = b""
            if not block:
                break
            yield from cutter.feed(block)
    yield from cutter.rest(error)
