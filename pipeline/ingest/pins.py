"""What an input is, pinned: the content a job's rows were mined from, so that `--resume` can
refuse an input that changed since (`pipeline.mine.config.check_resume`).

A local file is pinned by its size and the SHA-256 of its bytes (read once, before the job starts:
a file that grows, shrinks or changes in place, even by one byte, no longer matches). A URL is
pinned by what its server says of it, without reading the body: its length, ETag and
Last-Modified, where given (a server that gives none cannot be pinned; its pin is empty). An
object of object storage is pinned by its size and the ETag (S3) or generation (GCS) its store
gives it, without reading it (a month's input is read once, by the job).

The same pass gives what each shard's reader holds the input to while the job runs
(`pipeline.ingest.pinned`, `read_pin`): a local file's state and its blocks' digests, an object's
or a URL's pin as recorded. A change mid-job then ends the job instead of mixing two contents.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any, Final

from pipeline.common.files import feed_stream
from pipeline.common.storage import describe_pin, is_object_url, object_pin, parse_url, redact
from pipeline.ingest.pinned import STREAM_BLOCK, BlockDigests, FilePin, FileState
from pipeline.ingest.sources import InputError, compression_of, is_url
from pipeline.ingest.streams import URL_TIMEOUT

# The response headers that pin a URL's content.
URL_HEADERS: Final = ("Content-Length", "ETag", "Last-Modified")


def input_pin(source: str, url_timeout: float = URL_TIMEOUT) -> dict[str, Any]:
    """The pin of one expanded input: {"bytes", "sha256"} of a local file, the headers of a URL
    (asked within `url_timeout` seconds, the job's --url-timeout)."""
    return pin_input(source, url_timeout)[0]


def pin_input(
    source: str, url_timeout: float = URL_TIMEOUT, shard_bytes: int = STREAM_BLOCK
) -> tuple[dict[str, Any], FilePin | dict[str, Any]]:
    """The pin of one expanded input (`input_pin`, what `job.json` records) and what its readers
    hold it to (a local file's `FilePin`, its blocks cut at `shard_bytes` for a plain file, at
    STREAM_BLOCK for a compressed one; an object's or a URL's pin itself)."""
    if is_url(source):
        pin = url_pin(source, url_timeout)
        return pin, pin
    if is_object_url(source):
        try:
            pin = object_pin(parse_url(source))
        except FileNotFoundError:
            raise InputError(f"cannot read {redact(source)!r}: no such object") from None
        return pin, pin
    block_bytes = shard_bytes if compression_of(source) == "none" else STREAM_BLOCK
    digests = BlockDigests(block_bytes)
    try:
        with open(source, "rb") as handle:
            before = FileState.of(handle.fileno())
            size = feed_stream(digests, handle)
            after = FileState.of(handle.fileno())
    except OSError as error:
        raise InputError(f"cannot read {source!r}: {error.strerror or error}") from None
    if before != after or size != after.size:
        raise InputError(
            f"{source!r} changed while the job pinned it (was {before.describe()}, now {after.describe()})"
        )
    return {"bytes": size, "sha256": digests.whole.hexdigest()}, FilePin(after, block_bytes, digests.finish())


def url_pin(url: str, timeout: float = URL_TIMEOUT) -> dict[str, Any]:
    """A URL's length, ETag and Last-Modified (a HEAD request; None for those not given). A
    server that refuses HEAD gives an empty pin: the stream's own errors still stop the job."""
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            headers = response.headers
    except urllib.error.HTTPError as error:
        if error.code in (403, 405, 501):  # HEAD not allowed: nothing to pin by
            return {}
        raise InputError(f"cannot open {redact(url)!r}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        raise InputError(redact(f"cannot open {url!r}: {error}")) from None
    return {name.lower(): headers.get(name) for name in URL_HEADERS}


def changed_input(sources: list[str], was: list[Any], now: list[Any]) -> str | None:
    """The first input whose pin differs, described in words (None if every pin matches)."""
    for source, before, after in zip(sources, was, now, strict=False):
        if before != after:
            return f"{redact(source)!r} changed since the run started (was {describe(before)}, now {describe(after)})"
    if len(was) != len(now):
        return f"the inputs were {len(was)}, now {len(now)}"
    return None


def describe(pin: Any) -> str:
    if isinstance(pin, dict) and "sha256" in pin:
        return f"{pin.get('bytes'):,} bytes, SHA-256 {str(pin['sha256'])[:12]}…"
    if isinstance(pin, dict):  # an object's size and version, a URL's headers
        return describe_pin(pin)
    return repr(pin)


__all__ = ["changed_input", "input_pin", "pin_input", "url_pin"]
