"""Forward-only byte streams of the inputs: an HTTP body read as it arrives and resumed with Range
requests where it breaks off (`HttpBody`), and zstd decompression fed in bounded pieces
(`ZstdStream`). `pipeline.ingest.sources.open_stream` stacks them; nothing here knows of PGN."""

from __future__ import annotations

import contextlib
import http.client
import re
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, BinaryIO

import zstandard

from pipeline.common.files import MIB
from pipeline.common.storage import describe_pin
from search.errors import InputChanged

# Decompressed bytes read per call while streaming.
READ_BLOCK = MIB
# Seconds a URL may send nothing before its connection is given up (`--url-timeout`), and resumed.
URL_TIMEOUT = 60.0
# Seconds waited before each try to resume a URL that broke off (a Range request): the k-th try
# since the last byte arrived waits RESUME_DELAYS[k]; after the last, the stream has failed.
RESUME_DELAYS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)
# Compressed bytes fed to the zstd decoder at a time: zstd expands a byte to at most ~32 KiB (an
# RLE block), so one piece's output stays under ~128 MiB whatever the input (a decompression bomb
# fed at once would come out whole: 6 GiB from 196 KB), at ~1 us of Python per piece.
ZSTD_PIECE = 4096
# zstd window the decoder accepts (Lichess dumps are written with long windows).
ZSTD_MAX_WINDOW = 1 << 31


class StreamBroken(OSError):
    """A URL's body broke off (a stall past the timeout, a connection closed short of its length)
    and could not be resumed: the message says where, why, and why it was not resumed."""


# A Content-Range header of a 206 answer: first and last byte, and the total (or `*`).
_CONTENT_RANGE = re.compile(r"\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*", re.IGNORECASE)
# HTTP statuses worth trying again when a resume is refused (the server busy or overloaded).
_TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class HttpBody:
    """An HTTP response body, read as it arrives (`read1`), resumed where it broke off.

    A connection that closes before Content-Length bytes raises IncompleteRead (`HTTPResponse.read1`
    would just end, and the loss go unseen); no byte for `timeout` seconds raises TimeoutError.
    Either is resumed with an HTTP Range request for the bytes from the offset reached on
    (`bytes=N-`), after a wait of RESUME_DELAYS[k] for the k-th try since the last byte arrived, so
    at most len(RESUME_DELAYS) tries per point of the body. A resumed answer is taken only if it is
    a 206 whose Content-Range starts at that offset and has the first answer's total length, and
    whose ETag and Last-Modified are the first answer's (sent as If-Range too): anything else means
    the server cannot resume, or the content changed, and raises StreamBroken. The offsets are in
    the bytes as served (compressed, for a `.pgn.zst`), so a resume is invisible to the decoder.

    With the job's `pin` of the URL (`pipeline.ingest.pins.url_pin`: the length, ETag and
    Last-Modified a HEAD gave at the job's start), the body is asked for with `If-Match` (a strong
    ETag) or `If-Unmodified-Since`, and its answer's headers must be the pinned ones where both
    give them: else InputChanged (a server that gives neither cannot be held to anything)."""

    def __init__(
        self,
        url: str,
        timeout: float = URL_TIMEOUT,
        delays: Sequence[float] | None = None,
        pin: dict[str, Any] | None = None,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.delays = tuple(RESUME_DELAYS if delays is None else delays)
        self.position = 0  # bytes of the body delivered
        self.failures = 0  # tries to resume since the last byte arrived
        self.resumes = 0  # resumed answers taken
        self.response: http.client.HTTPResponse = open_pinned(url, timeout, pin or {})
        headers = self.response.headers
        self.total = self.response.length  # None: no Content-Length
        self.etag: str | None = headers.get("ETag")
        self.last_modified: str | None = headers.get("Last-Modified")
        self.ranges = (headers.get("Accept-Ranges") or "").strip().lower() != "none"

    def read1(self, size: int = -1) -> bytes:
        while True:
            try:
                block = self.response.read1(size)
                if not block and self.response.length:
                    raise http.client.IncompleteRead(b"", self.response.length)
            except (OSError, http.client.HTTPException) as failure:
                if isinstance(failure, StreamBroken):
                    raise
                self.resume(failure)
                continue
            if block:
                self.position += len(block)
                self.failures = 0
            return block

    read = read1

    def close(self) -> None:
        self.response.close()

    def resume(self, failure: BaseException) -> None:
        """Open the body again from `position` on, or raise StreamBroken saying why not."""
        broke = f"{type(failure).__name__}: {failure} at byte {self.position:,} of the body"
        with contextlib.suppress(Exception):
            self.response.close()
        if not self.ranges:
            raise StreamBroken(f"{broke}; not resumed: the server does not accept Range requests") from failure
        last = ""
        while self.failures < len(self.delays):
            time.sleep(self.delays[self.failures])
            self.failures += 1
            request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.position}-"})
            validator = self.etag if self.etag and not self.etag.startswith("W/") else self.last_modified
            if validator:
                request.add_header("If-Range", validator)
            try:
                response = urllib.request.urlopen(request, timeout=self.timeout)
            except urllib.error.HTTPError as error:
                error.close()
                if error.code not in _TRANSIENT_STATUSES:
                    raise StreamBroken(
                        f"{broke}; not resumed: HTTP {error.code} {error.reason} to a Range request"
                    ) from failure
                last = f"HTTP {error.code} {error.reason}"
                continue
            except (urllib.error.URLError, OSError) as error:
                last = f"{type(error).__name__}: {error}"
                continue
            refused = self.refusal(response)
            if refused is not None:
                response.close()
                raise StreamBroken(f"{broke}; not resumed: {refused}") from failure
            self.response = response
            self.resumes += 1
            return
        raise StreamBroken(f"{broke}; not resumed after {len(self.delays)} tries ({last})") from failure

    def refusal(self, response: http.client.HTTPResponse) -> str | None:
        """Why a resumed answer cannot continue the body (None if it can)."""
        headers = response.headers
        for name, was in (("ETag", self.etag), ("Last-Modified", self.last_modified)):
            now = headers.get(name)
            if was is not None and now is not None and now != was:
                return f"the content changed since the download started ({name} was {was!r}, now {now!r})"
        if response.status != 206:
            return f"the server answered a Range request with {response.status}, not 206 (Partial Content)"
        found = _CONTENT_RANGE.fullmatch(headers.get("Content-Range") or "")
        if found is None:
            return f"a 206 answer without a readable Content-Range ({headers.get('Content-Range')!r})"
        first, last, total = int(found[1]), int(found[2]), found[3]
        expected = "*" if self.total is None else str(self.total)
        if first != self.position or (self.total is not None and (total != expected or last != int(expected) - 1)):
            return (
                f"Content-Range {headers.get('Content-Range')!r} does not continue the body "
                f"(bytes {self.position}-… of {expected} expected)"
            )
        return None


def open_pinned(url: str, timeout: float, pin: dict[str, Any]) -> http.client.HTTPResponse:
    """The URL's answer, asked for under the pin's conditions and checked against the pin."""
    request = urllib.request.Request(url)
    etag, modified = pin.get("etag"), pin.get("last-modified")
    if etag and not str(etag).startswith("W/"):
        request.add_header("If-Match", etag)
    elif modified:
        request.add_header("If-Unmodified-Since", modified)
    try:
        response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        if error.code != 412:  # Precondition Failed: not the pinned content
            raise
        error.close()
        refused = "another version (the server refused the condition)"
        raise InputChanged.of(url, describe_pin(pin), refused) from None
    now = {name: response.headers.get(name) for name in pin}
    if any(pin[name] is not None and now[name] is not None and now[name] != pin[name] for name in pin):
        response.close()
        raise InputChanged.of(url, describe_pin(pin), describe_pin(now))
    return response


class ZstdStream:
    """Zstandard decompression of a binary stream of any number of frames, as it arrives. Unlike
    `zstandard`'s stream reader it raises EOFError when the input ends inside a frame (a
    truncated file or download), instead of ending quietly."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        self._frame = self._decompressor.decompressobj()
        self._inside = False  # input of an unfinished frame has been fed
        self._pending = b""  # input read; fed up to `_fed`
        self._fed = 0

    def read1(self, size: int = -1) -> bytes:
        """The output of the next piece of input that produces any (possibly more than `size`:
        at most ZSTD_PIECE input bytes' worth, so that a bomb's output comes in bounded pieces);
        b"" at the end of the input."""
        while True:
            if self._fed >= len(self._pending):
                self._pending, self._fed = read_block(self._raw), 0
            chunk = self._pending[self._fed : self._fed + ZSTD_PIECE]
            self._fed += len(chunk)
            if not chunk:
                if self._inside:
                    raise EOFError("zstd stream ended inside a frame (truncated)")
                return b""
            output: list[bytes] = []
            while chunk:
                output.append(self._frame.decompress(chunk))
                self._inside = True
                if self._frame.eof:
                    chunk = self._frame.unused_data
                    self._frame = self._decompressor.decompressobj()
                    self._inside = False
                else:
                    chunk = b""
            data = b"".join(output)
            if data:
                return data

    read = read1


def read_block(stream: BinaryIO) -> bytes:
    """Up to READ_BLOCK bytes, whatever is available without waiting for more (`read1`), so a slow
    URL yields its first shards early; b"" at the end. Decoder and network errors propagate."""
    read1 = getattr(stream, "read1", None)
    block: bytes = read1(READ_BLOCK) if read1 is not None else stream.read(READ_BLOCK)
    return block


# What a broken stream raises: zstd/gzip/bz2 decoder errors, truncation, a dropped connection.
STREAM_ERRORS: tuple[type[BaseException], ...] = (
    zstandard.ZstdError,
    EOFError,
    OSError,
    ValueError,
    http.client.HTTPException,
)
