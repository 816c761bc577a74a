"""One job per dataset on object storage: a lease, since no kernel releases a dead job's lock there.

Objects under `PREFIX/_lease/`:

    <n>.json    the n-th lease: who holds it (pid, host, command, since) and for how many seconds
    <n>.beat    rewritten by the holder every `seconds / 4`: its Last-Modified is the last renewal

To take the prefix a job lists `_lease/`, reads the newest lease and its beat, and asks the store
for the time (a probe object's Last-Modified, so that no two machines' clocks are compared): a lease
renewed less than its `seconds` ago is held, and the job refuses at once (LockedError naming the
holder); an older one has expired (its job is dead, or cut off from the store), and the job puts
`<n+1>.json` only if there is none (a conditional put): of two jobs that find the same lease
expired, one wins. A holder on this host whose process is gone holds nothing: a run resumed after a
crash need not wait out the lease.

The holder renews from a thread. A renewal that finds a later lease, or its own `<n>.json` gone or
holding another job's token (the taker deletes the leases before its own, and releases its own when
it ends: numbering may then start again at 0), has lost the lease to another job; one that cannot
reach the store for `seconds` can no longer say it holds it: either sets `lost`, and the job stops
(`pipeline.mine.driver`). A job that was paused (SIGSTOP, a VM suspended) past its lease wakes up
not knowing yet: before anything that could touch another job's objects (removing `job.json`, the
end's leftovers and manifest, a shard's commit from a writer on any node) it asks the store again
(`Tenure.lost`), so a job that lost its lease removes only what it wrote. What remains is the
instant between that answer and the delete or put it allows (S3 has no delete conditional on
another object), milliseconds unless the job is paused right there.

On a store that ignores conditional puts (the lease checks that its own put cannot be repeated)
`conditional` is False: two jobs that start in the same second could both take the prefix, which
the job says in one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pipeline.common.storage import StorageError, filesystem, retried
from pipeline.dataset.lock import Holder, LockedError, check_unlocked, output_lock
from pipeline.dataset.objects import ObjectPath, dataset_path
from search.errors import DiffimaxError

LEASE_DIR: Final = "_lease"
# Seconds a lease lasts without renewal: how long a dead job keeps a prefix from the next one.
LEASE_SECONDS: Final = 60.0
# The environment variable that sets those seconds for the jobs it is set for (a store whose
# requests may stall longer wants more; a test of a lost lease, a few).
LEASE_SECONDS_ENV: Final = "DIFFIMAX_LEASE_SECONDS"
# The shortest lease: the store's Last-Modified counts whole seconds, and the holder renews every
# quarter of its lease.
MIN_LEASE_SECONDS: Final = 2.0
# A lease's number in its name (`00000003.json`).
LEASE_NAME: Final = re.compile(r"([0-9]{8})\.json")


class LeaseSettingError(DiffimaxError, ValueError):
    """`$DIFFIMAX_LEASE_SECONDS` is not a number of seconds a lease can last."""


class LeaseLostError(DiffimaxError, RuntimeError):
    """This job no longer holds its prefix's lease: another job may write there now."""


def lease_seconds() -> float:
    """How long this job's lease lasts without renewal: `$DIFFIMAX_LEASE_SECONDS`, else LEASE_SECONDS."""
    text = os.environ.get(LEASE_SECONDS_ENV, "").strip()
    if not text:
        return LEASE_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not MIN_LEASE_SECONDS <= seconds <= 7 * 86400:  # nan fails too
        raise LeaseSettingError(
            f"{LEASE_SECONDS_ENV}={text[:40]!r} is not a lease length: give seconds from {MIN_LEASE_SECONDS:.0f} "
            "to 604800 (a week), or unset it for the default of 60"
        )
    return seconds


@dataclass(frozen=True)
class Tenure:
    """Which lease a job holds (its number, and the token its record carries): what the job, or a
    writer of it on any node, checks against the store before it touches what another job might
    own. Small and picklable: it travels with each shard's write task."""

    number: int
    token: str

    def lost(self, root: ObjectPath) -> str | None:
        """Why this lease is no longer held, as the store says now (None: it still is). Two requests:
        a listing of `_lease/` (a later lease) and this lease's record (gone, or another job's)."""
        leases = root / LEASE_DIR
        fs = filesystem(root.url.scheme)
        try:
            listed: list[str] = retried(lambda: fs.find(leases.path + "/"), leases.url)
        except FileNotFoundError:
            listed = []
        numbers = [int(found[1]) for key in listed if (found := LEASE_NAME.fullmatch(key.rsplit("/", 1)[-1]))]
        later = [number for number in numbers if number > self.number]
        if later or self.record_token(root) != self.token:
            return f"another job took the lease on {root} (this one was not renewed in time)"
        return None

    def record_token(self, root: ObjectPath) -> str | None:
        """The token in this lease's record now (None: no record, or not a lease record)."""
        try:
            data: Any = json.loads((root / LEASE_DIR / f"{self.number:08d}.json").read_bytes())
        except (FileNotFoundError, ValueError):
            return None
        token = data.get("token") if isinstance(data, dict) else None
        return token if isinstance(token, str) else None


@dataclass
class Found:
    """The newest lease of a prefix, as a contender sees it."""

    number: int
    holder: Holder | None
    seconds: float
    age: float
    """Seconds since its last renewal, on the store's clock."""

    @property
    def alive(self) -> bool:
        if self.holder is not None and self.holder.host == socket.gethostname():
            try:
                os.kill(self.holder.pid, 0)
            except ProcessLookupError:
                return False  # its job is gone from this host
            except PermissionError:
                pass
        return self.age <= self.seconds


def _record(holder: Holder, seconds: float, token: str) -> bytes:
    return json.dumps(
        {
            "pid": holder.pid,
            "host": holder.host,
            "command": holder.command,
            "since": holder.since,
            "seconds": seconds,
            "token": token,
        }
    ).encode()


def _modified(info: dict[str, Any]) -> float:
    stamp = info.get("LastModified") or info.get("updated") or info.get("mtime")
    if stamp is not None and hasattr(stamp, "timestamp"):
        return float(stamp.timestamp())
    if isinstance(stamp, str):
        from datetime import datetime

        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    raise StorageError(f"the store gives no modification time for its objects ({sorted(info)[:6]})")


def store_time(root: ObjectPath) -> float:
    """The store's clock: the Last-Modified of an object written now (then deleted)."""
    probe = root / LEASE_DIR / f"probe-{uuid.uuid4().hex}"
    probe.put(b"")
    try:
        return _modified(retried(lambda: probe.fs.info(probe.path), probe.url))
    finally:
        probe.delete()


def newest(root: ObjectPath) -> Found | None:
    """The newest lease under `root` and how long ago it was renewed (None: there is none)."""
    leases = root / LEASE_DIR
    fs = filesystem(root.url.scheme)
    try:
        listed: dict[str, dict[str, Any]] = retried(lambda: fs.find(leases.path + "/", detail=True), leases.url)
    except FileNotFoundError:
        return None
    numbers = sorted(int(found[1]) for key in listed if (found := LEASE_NAME.fullmatch(key.rsplit("/", 1)[-1])))
    if not numbers:
        return None
    number = numbers[-1]
    record_key = f"{leases.path}/{number:08d}.json"
    beat_key = f"{leases.path}/{number:08d}.beat"
    renewed = _modified(listed.get(beat_key) or listed[record_key])
    try:
        data: Any = json.loads((leases / f"{number:08d}.json").read_bytes())
        holder = Holder(int(data["pid"]), str(data["host"]), str(data["command"]), float(data["since"]))
        seconds = float(data["seconds"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        holder, seconds = None, LEASE_SECONDS
    return Found(number, holder, seconds, store_time(root) - renewed)


class Lease:
    """A held lease: renewed from a thread until `release`; `lost` says why it is no longer held."""

    def __init__(self, root: ObjectPath, number: int, seconds: float, conditional: bool, token: str = "") -> None:
        self.root = root
        self.number = number
        self.tenure = Tenure(number, token)
        self.seconds = seconds
        self.conditional = conditional
        self.lost: str | None = None
        self.renewed = time.monotonic()
        self.done = threading.Event()
        self.beat = root / LEASE_DIR / f"{number:08d}.beat"
        self.thread = threading.Thread(target=self._renew_until_released, name="diffimax-lease", daemon=True)

    def _renew_until_released(self) -> None:
        while not self.done.wait(self.seconds / 4):
            try:
                self.renew()
            except Exception as error:  # the store unreachable: held only while the lease lasts
                if time.monotonic() - self.renewed > self.seconds:
                    self.lost = f"the lease on {self.root} could not be renewed for {self.seconds:.0f} s ({error})"
                    return

    def renew(self) -> None:
        if self.confirm() is not None:
            return
        self.beat.put(b"")
        self.renewed = time.monotonic()

    def confirm(self) -> str | None:
        """Ask the store whether this job still holds the lease, now: None if it does, else why not
        (also set as `lost`, which stops the job). What the job calls right before touching an
        object another job could own; a renewal calls it too."""
        if self.lost is None:
            self.lost = self.tenure.lost(self.root)
            if self.lost is not None:
                self.done.set()
        return self.lost

    def check(self) -> None:
        """LeaseLostError unless this job still holds the lease (`confirm`)."""
        why = self.confirm()
        if why is not None:
            raise LeaseLostError(why)

    def release(self) -> None:
        self.done.set()
        if self.thread.is_alive():
            self.thread.join(30)
        # Its own record and beat only, and only while the record is its own: a later job that
        # found the prefix free may have started numbering again from this very number.
        with contextlib.suppress(Exception):
            if self.tenure.record_token(self.root) == self.tenure.token:
                self.beat.delete()
                (self.root / LEASE_DIR / f"{self.number:08d}.json").delete()


def in_use(root: ObjectPath, found: Found) -> LockedError:
    who = found.holder.describe() if found.holder is not None else "a job that has not said who it is"
    return LockedError(
        f"{str(root)!r} is in use by another diffimax job ({who}; its lease renewed {found.age:.0f} s ago, "
        f"expires after {found.seconds:.0f} s without renewal): wait for it to end or stop it, or choose another --out"
    )


def acquire(root: ObjectPath, command: str | None = None, seconds: float = LEASE_SECONDS) -> Lease:
    """Take the prefix's lease (LockedError if a live one is held), and start renewing it."""
    found = newest(root)
    if found is not None and found.alive:
        raise in_use(root, found)
    number = 0 if found is None else found.number + 1
    holder = Holder(os.getpid(), socket.gethostname(), (command or " ".join(sys.argv))[:500], time.time())
    record = root / LEASE_DIR / f"{number:08d}.json"
    token = uuid.uuid4().hex
    data = _record(holder, seconds, token)
    try:
        record.put(data, create=True)
    except FileExistsError:
        taken = newest(root)
        raise in_use(root, taken if taken is not None else Found(number, None, seconds, 0.0)) from None
    try:
        record.put(data, create=True)
        conditional = False  # the store let the same object be created twice: it ignores the condition
    except FileExistsError:
        conditional = True
    lease = Lease(root, number, seconds, conditional, token)
    lease.beat.put(b"")
    for older in range(max(0, number - 4), number):  # the expired leases before it
        (root / LEASE_DIR / f"{older:08d}.json").delete()
        (root / LEASE_DIR / f"{older:08d}.beat").delete()
    lease.thread.start()
    return lease


@contextlib.contextmanager
def dataset_lock(out: str | os.PathLike[str] | ObjectPath, command: str | None = None) -> Iterator[Lease | None]:
    """One job per output: the lease of a prefix on object storage (yielded, for `lost`), or the
    lock of a local directory (`pipeline.dataset.lock.output_lock`; None is yielded)."""
    place = dataset_path(out)
    if isinstance(place, ObjectPath):
        lease = acquire(place, command, lease_seconds())
        try:
            yield lease
        finally:
            lease.release()
        return
    with output_lock(place, command):
        yield None


def check_free(out: str | os.PathLike[str] | ObjectPath) -> None:
    """LockedError if another job holds the output (its lease, or its directory's lock); changes nothing."""
    place = dataset_path(out)
    if isinstance(place, ObjectPath):
        found = newest(place)
        if found is not None and found.alive:
            raise in_use(place, found)
        return
    check_unlocked(Path(place))


__all__ = [
    "LEASE_DIR",
    "LEASE_SECONDS",
    "LEASE_SECONDS_ENV",
    "Lease",
    "LeaseLostError",
    "LeaseSettingError",
    "Tenure",
    "acquire",
    "check_free",
    "dataset_lock",
    "lease_seconds",
    "newest",
    "store_time",
]
