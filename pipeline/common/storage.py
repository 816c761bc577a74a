"""Object storage (`s3://`, `gs://`): the one filesystem layer every input, dataset and reader uses
for it, fsspec (s3fs for S3 and any S3-compatible store, gcsfs for Google Cloud Storage).

Why fsspec and not pyarrow's filesystems (measured in docs/results/cluster.md, `benchmarks/bench_storage.py`):
a dataset on object storage is committed without rename (`pipeline.dataset.objects`), which needs a
put that fails when the object exists (S3's `If-None-Match: *`, GCS's `ifGenerationMatch=0`) and
an object's ETag; pyarrow's S3 and GCS filesystems expose neither. Arrow still reads the Parquet
files, through `arrow_filesystem` (fsspec wrapped as an Arrow filesystem), so there is one stack.

Credentials and the endpoint come from each library's standard chain, never from a URL or a flag:
for S3 the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), a profile
(`AWS_PROFILE`, `~/.aws`), an instance or pod role; `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT_URL_S3`) for
any S3-compatible store; for GCS `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's login, the metadata
server, and `STORAGE_EMULATOR_HOST`. Nothing here logs them, an object URL that carries them is
refused, and `redact` takes them out of every message (the CLI passes every error line through it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from search.errors import DiffimaxError, InputChanged

# URL schemes of object storage, and the fsspec protocol that serves each.
PROTOCOLS: Final = {"s3": "s3", "gs": "gcs", "gcs": "gcs"}
# A bucket's name (S3 and GCS rules, loosely: the store refuses the rest itself).
BUCKET: Final = re.compile(r"[a-z0-9][a-z0-9._-]{1,221}[a-z0-9]")
# Seconds waited before each try to resume a read that broke off (as `pipeline.ingest.streams`
# resumes a URL): after the last, the read has failed.
RETRY_DELAYS: Final = (1.0, 2.0, 4.0, 8.0, 16.0)
# Bytes one ranged read asks for.
READ_PIECE: Final = 8 << 20
# The environment variables whose values are secrets (taken out of any message that quotes one).
SECRET_VARIABLES: Final = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID")
# Query parameters of a URL that carry a credential or a signature (pre-signed S3 and GCS URLs, tokens).
SECRET_PARAMETERS: Final = re.compile(
    r"(?i)([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential"
    r"|awsaccesskeyid|signature|sig|token|access_token|key|password|secret)=)[^&\s'\"]*"
)
# The user-information part of a URL (`scheme://user:password@host`).
USER_INFO: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s'\"]+@")


class StorageError(DiffimaxError, RuntimeError):
    """Object storage that cannot be used as asked: a malformed URL, missing credentials, a store
    that cannot be reached or refuses access. One line, its URL redacted."""


def redact(text: str) -> str:
    """`text` with every credential a URL may carry (user information, signatures and tokens in
    its query) and the value of every secret variable of the environment replaced by `***`."""
    text = USER_INFO.sub(r"\1***@", text)
    text = SECRET_PARAMETERS.sub(r"\1***", text)
    for name in SECRET_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= 8:
            text = text.replace(value, "***")
    return text


def is_object_url(name: str) -> bool:
    """Whether `name` is an object-storage URL (`s3://`, `gs://`, `gcs://`)."""
    scheme, sep, _ = name.partition("://")
    return bool(sep) and scheme.lower() in PROTOCOLS


@dataclass(frozen=True)
class ObjectUrl:
    """An object or a prefix of object storage: a bucket and a key (no leading or trailing `/`)."""

    scheme: str
    bucket: str
    key: str

    @property
    def path(self) -> str:
        """The fsspec path: `bucket/key`."""
        return f"{self.bucket}/{self.key}" if self.key else self.bucket

    def url(self) -> str:
        return f"{self.scheme}://{self.path}"

    def join(self, *names: str) -> ObjectUrl:
        """The key of `names` under this one; every name is one safe component (`check_name`)."""
        for name in names:
            check_name(name, self)
        return ObjectUrl(self.scheme, self.bucket, "/".join(part for part in (self.key, *names) if part))

    def relative(self, path: str) -> str:
        """The part of an fsspec `path` below this prefix (StorageError for one outside it)."""
        base = self.path + "/"
        if not path.startswith(base):
            raise StorageError(f"{redact(path)!r} is not under {redact(self.url())!r}")
        return path[len(base) :]

    def __str__(self) -> str:
        return redact(self.url())


def check_name(name: str, under: ObjectUrl | str) -> None:
    """StorageError for a key component that could leave its prefix or name another object:
    empty, `.`, `..`, or holding a `/` or a control character."""
    if not name or name in (".", "..") or "/" in name or any(ord(char) < 32 for char in name):
        raise StorageError(f"{name[:120]!r} is not a name under {str(under)!r}: a key stays under its prefix")


def parse_url(url: str) -> ObjectUrl:
    """The bucket and key of an object URL; StorageError for credentials in it (they come from
    the environment, a profile or a role), a query, or a key with empty, `.` or `..` components."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as error:  # an unbalanced `[`: urllib reads an IPv6 host
        raise StorageError(f"{redact(url)!r} is not an object-storage URL: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in PROTOCOLS:
        raise StorageError(f"{redact(url)!r} is not an object-storage URL (s3://BUCKET/KEY or gs://BUCKET/KEY)")
    shown = redact(url)
    if "@" in parts.netloc:
        raise StorageError(
            f"{shown!r} carries credentials: diffimax never reads them from a URL; give them through the "
            "environment, a profile or an instance role (see docs/cluster.md)"
        )
    if parts.query or parts.fragment:
        raise StorageError(f"{shown!r}: an object URL has no query or fragment")
    bucket = parts.netloc
    if not BUCKET.fullmatch(bucket):
        raise StorageError(f"{shown!r}: {bucket!r} is not a bucket name")
    key = parts.path.strip("/")
    components = key.split("/") if key else []
    for component in components:
        if not component or component in (".", "..") or any(ord(char) < 32 for char in component):
            raise StorageError(f"{shown!r}: a key with an empty, '.' or '..' part is refused")
    return ObjectUrl("gs" if scheme == "gcs" else scheme, bucket, key)


_FILESYSTEMS: dict[tuple[str, ...], Any] = {}
# The variables that choose where a filesystem connects (a change makes a new one).
ENDPOINT_VARIABLES: Final = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "STORAGE_EMULATOR_HOST", "AWS_PROFILE")


def filesystem(scheme: str) -> Any:
    """The fsspec filesystem of a scheme, one per process, with no listing cache (a listing must
    see what another node just committed)."""
    protocol = PROTOCOLS[scheme]
    key = (protocol, str(os.getpid()), *(os.environ.get(name, "") for name in ENDPOINT_VARIABLES))
    found = _FILESYSTEMS.get(key)
    if found is None:
        if protocol == "s3":
            import s3fs

            found = s3fs.S3FileSystem(
                skip_instance_cache=True,
                use_listings_cache=False,
                config_kwargs={
                    "connect_timeout": 20,
                    "read_timeout": 60,
                    "retries": {"max_attempts": 4, "mode": "standard"},
                },
            )
        else:
            import gcsfs

            found = gcsfs.GCSFileSystem(skip_instance_cache=True, use_listings_cache=False)
        _FILESYSTEMS[key] = found
    return found


def arrow_filesystem(scheme: str) -> Any:
    """The same filesystem as Arrow reads through (`pyarrow.fs.PyFileSystem` over fsspec)."""
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    return PyFileSystem(FSSpecHandler(filesystem(scheme)))


def _cause_names(error: BaseException) -> list[str]:
    names: list[str] = []
    seen: BaseException | None = error
    while seen is not None and len(names) < 8:
        names.append(type(seen).__name__)
        seen = seen.__cause__ or seen.__context__
    return names


def is_transient(error: BaseException) -> bool:
    """Whether a failed call is worth trying again: a dropped or refused connection, a timeout,
    a store that is busy (not a missing object, a refusal, or a failed condition)."""
    if isinstance(error, (FileNotFoundError, PermissionError, FileExistsError, IsADirectoryError)):
        return False
    names = " ".join(_cause_names(error))
    if any(word in names for word in ("Expired", "NoCredentials", "PartialCredentials")):
        return False
    transient = (
        "Timeout",
        "Connection",
        "ClientPayload",
        "ServerDisconnected",
        "IncompleteRead",
        "ResponseStreamingError",
        "ProtocolError",
        "ReadError",
    )
    if any(word in names for word in transient):
        return True
    return isinstance(error, OSError) and error.errno in (errno.EAGAIN, errno.EBUSY, errno.ECONNRESET, errno.EPIPE)


def storage_problem(error: BaseException, url: ObjectUrl | str) -> StorageError:
    """The one line for a call on `url` that failed for a reason the user can act on."""
    names = " ".join(_cause_names(error))
    where = str(url)
    if "NoCredentials" in names or "PartialCredentials" in names or "DefaultCredentialsError" in names:
        why = (
            "no credentials found: set them in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "or GOOGLE_APPLICATION_CREDENTIALS), a profile, or an instance role"
        )
    elif isinstance(error, PermissionError):
        why = "access denied: the credentials found may not do this"
    elif "EndpointConnection" in names or "ClientConnector" in names or "ConnectionError" in names:
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        why = f"cannot reach the store{f' at {redact(endpoint)}' if endpoint else ''}"
    else:
        lines = str(error).strip().splitlines()
        why = " ".join(lines[0].split())[:200] if lines else type(error).__name__
    return StorageError(redact(f"{where}: {why}"))


@contextlib.contextmanager
def storage_errors(url: ObjectUrl | str) -> Iterator[None]:
    """Errors of the store in the block become one StorageError line naming `url`; a missing
    object (FileNotFoundError) and a failed condition (FileExistsError) pass through as they are."""
    try:
        yield
    except (FileNotFoundError, FileExistsError, StorageError):
        raise
    except Exception as error:
        if isinstance(error, DiffimaxError):
            raise
        if (
            isinstance(error, (OSError, ConnectionError, TimeoutError))
            or "botocore" in type(error).__module__
            or ("google" in type(error).__module__)
        ):
            raise storage_problem(error, url) from None
        raise


def retried(call: Any, url: ObjectUrl | str, delays: Sequence[float] = RETRY_DELAYS) -> Any:
    """`call()`, tried again after each delay while it fails for a transient reason; a failure
    that is not (or the last) becomes a StorageError naming `url` (`storage_errors`)."""
    failures = 0
    while True:
        try:
            return call()
        except Exception as error:
            if failures < len(delays) and is_transient(error):
                time.sleep(delays[failures])
                failures += 1
                continue
            with storage_errors(url):
                raise


def object_info(url: ObjectUrl) -> dict[str, Any]:
    """The store's description of one object (its `size`, and an `ETag` or a `generation`);
    FileNotFoundError when there is none."""
    fs = filesystem(url.scheme)
    info: dict[str, Any] = retried(lambda: fs.info(url.path), url)
    if info.get("type") != "file":
        raise FileNotFoundError(errno.ENOENT, "not an object", url.url())
    return info


def object_pin(url: ObjectUrl) -> dict[str, Any]:
    """What pins an object's content: its size and its ETag (S3) or generation (GCS)."""
    return pin_of_info(object_info(url))


def pin_of_info(info: dict[str, Any]) -> dict[str, Any]:
    """The pin of an object the store described (`object_info`, or an open file's details)."""
    pin: dict[str, Any] = {"bytes": int(info["size"])}
    for name in ("ETag", "etag", "generation", "VersionId"):
        if info.get(name):
            pin[name.lower()] = str(info[name])
    return pin


def describe_pin(pin: dict[str, Any]) -> str:
    """A pin in words: an object's size and what names its version, or a URL's headers."""
    size = pin.get("bytes")
    named = [f"{name} {value}" for name, value in pin.items() if name != "bytes" and value is not None]
    return ", ".join(([f"{size:,} bytes"] if isinstance(size, int) else []) + named) or "no validator"


class ObjectReader:
    """An object read forward (or from a seek) in ranged reads, each resumed where it broke off:
    a dropped connection or a timeout is tried again at the byte reached, after RETRY_DELAYS, so
    a long stream survives a drop as an HTTP one does (`pipeline.ingest.streams.HttpBody`).

    Every ranged read asks for the ETag the object had when it was opened (s3fs sends `If-Match`),
    so an object replaced while it is read fails the read (InputChanged for a job's pinned input,
    else StorageError), never mixes contents;
    with the job's `pin` (`object_pin`), the object opened must be the one pinned, or InputChanged."""

    def __init__(
        self, url: ObjectUrl, delays: Sequence[float] = RETRY_DELAYS, pin: dict[str, Any] | None = None
    ) -> None:
        self.url = url
        self.pin = pin
        self.delays = tuple(delays)
        self.fs = filesystem(url.scheme)
        self.position = 0
        self.resumes = 0
        self.handle: Any = None
        self.handle = retried(self._open, url, self.delays)
        self.size = int(self.handle.size)

    def _open(self) -> Any:
        handle = self.fs.open(self.url.path, "rb", cache_type="none", block_size=READ_PIECE)
        if self.pin is not None:
            now = pin_of_info(handle.details)
            if now != self.pin:
                handle.close()
                raise InputChanged.of(str(self.url), describe_pin(self.pin), describe_pin(now))
        handle.seek(self.position)
        return handle

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.position, os.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        self.handle.seek(self.position)
        return self.position

    def tell(self) -> int:
        return self.position

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes (at most READ_PIECE at a time); b"" at the end."""
        wanted = READ_PIECE if size is None or size < 0 else min(size, READ_PIECE)
        failures = 0
        while True:
            try:
                block: bytes = self.handle.read(wanted)
            except Exception as error:
                if "FileExpired" in " ".join(_cause_names(error)):  # its If-Match failed: another ETag
                    if self.pin is None:  # not a job's input (a dataset's file)
                        raise StorageError(f"{self.url}: the object changed while it was read") from None
                    refused = "another ETag (the store refused If-Match)"
                    raise InputChanged.of(str(self.url), describe_pin(self.pin), refused) from None
                if failures < len(self.delays) and is_transient(error):
                    time.sleep(self.delays[failures])
                    failures += 1
                    with contextlib.suppress(Exception):
                        self.handle.close()
                    self.handle = retried(self._open, self.url, self.delays)
                    self.resumes += 1
                    continue
                with storage_errors(self.url):
                    raise
            self.position += len(block)
            return block

    read1 = read

    def close(self) -> None:
        if self.handle is not None:
            with contextlib.suppress(Exception):
                self.handle.close()

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "ObjectReader",
    "ObjectUrl",
    "StorageError",
    "arrow_filesystem",
    "check_name",
    "describe_pin",
    "filesystem",
    "is_object_url",
    "is_transient",
    "object_info",
    "object_pin",
    "parse_url",
    "pin_of_info",
    "redact",
    "retried",
    "storage_errors",
    "storage_problem",
]
