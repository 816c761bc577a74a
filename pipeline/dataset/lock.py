"""One job per output directory: an exclusive lock on `OUT/.lock`, held for the whole job.

The lock is `fcntl.flock` on a file inside the directory: the kernel releases it when its holder
ends, however it ends (an exception, a signal, SIGKILL), so a lock can never outlive its job on
this machine, and a second job that finds it held refuses at once, in one line that names the
holder (its pid, host and command, which the holder writes into the file). Where the filesystem
has no `flock` the holder's record decides: a record of a live process on this host is a held
lock, anything else a stale one, taken over.

The holder removes the file as it releases the lock, so a finished job leaves no `.lock` behind.
That is safe because a job that takes the lock checks that the file it locked is still the one
of that name (`_lock_file`): a job that opened the file before its holder removed it, and locked
it after, would otherwise hold a lock on a file no other job can see, beside the next job's lock
on a new file of the same name. It opens the name again instead.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pipeline.common.files import UnsafeTarget, unsafe_reason
from search.errors import DiffimaxError

LOCK_FILE: Final = ".lock"
# What `flock` raises where the filesystem cannot lock (an old NFS mount, some FUSE filesystems).
NO_LOCKING: Final = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})


class LockedError(DiffimaxError, RuntimeError):
    """Another job holds the directory's lock."""


class LockFileError(UnsafeTarget):
    """The lock file is a link (symbolic or hard) or not a regular file: never followed, never truncated."""


class OutputPathError(DiffimaxError, ValueError):
    """An output directory that cannot be made where the user named it (a dangling link)."""


def check_out_path(root: Path) -> None:
    """OutputPathError for a symbolic link that points nowhere: what to do about it is the user's
    choice (make its target, or name another directory), not a guess of ours."""
    if root.is_symlink() and not root.exists():
        raise OutputPathError(
            f"output directory {str(root)!r} is a symbolic link to {os.readlink(root)!r}, which does not exist: "
            "create that directory, or choose another --out"
        )


# Times a job opens the lock file again when the file it locked was removed under it (each time,
# a holder released the lock between the open and the lock: a race of microseconds).
REOPENS: Final = 20
# How the lock file is opened: never through a symbolic link (its target would be truncated).
OPEN_FLAGS: Final = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _open_lock(path: Path, *, create: bool) -> int:
    """The lock file's descriptor, opened without following a link (`OPEN_FLAGS`); LockFileError
    for a link or anything but a regular file, in one line."""
    try:
        descriptor = os.open(path, OPEN_FLAGS | (os.O_CREAT if create else 0), 0o644)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EISDIR) or path.is_symlink():
            reason = unsafe_reason(os.lstat(path))
            raise LockFileError(f"{str(path)!r} {reason or 'cannot be opened'}; remove it") from None
        raise
    reason = unsafe_reason(os.fstat(descriptor))  # the file opened, not a name checked before
    if reason is not None:
        os.close(descriptor)
        raise LockFileError(f"{str(path)!r} {reason}; remove it")
    return descriptor


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as the holder recorded it."""

    pid: int
    host: str
    command: str
    since: float

    def describe(self) -> str:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid} on {self.host}, since {started}: {self.command}"


def _holder_of(text: str) -> Holder | None:
    try:
        data: Any = json.loads(text)
        return Holder(int(data["pid"]), str(data["host"]), str(data["command"]), float(data["since"]))
    except (ValueError, KeyError, TypeError):
        return None


def _is_alive(holder: Holder) -> bool:
    """Whether a holder recorded on this host is still running (another host's cannot be told)."""
    if holder.host != socket.gethostname():
        return True
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return holder.pid != os.getpid()


@contextlib.contextmanager
def output_lock(directory: str | os.PathLike[str], command: str | None = None) -> Iterator[Path]:
    """Hold `directory`'s lock (the directory is created if missing) for the block; LockedError,
    naming the holder, if another job holds it. Yields the lock file's path. A directory the lock
    created and the block left empty (a job that failed before writing) is removed with its lock
    file: a failed run leaves nothing behind."""
    root = Path(directory)
    check_out_path(root)
    created = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_FILE
    descriptor = _lock_file(path, root)
    try:
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.time(),
            "command": command
            or " ".join(os.path.basename(arg) if i == 0 else arg for i, arg in enumerate(sys.argv))[:500],
        }
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, json.dumps(record).encode(), 0)
        try:
            yield path
        finally:
            with contextlib.suppress(OSError):  # the directory may be gone (a failed first run removes it)
                os.ftruncate(descriptor, 0)
                if _is_open_file(descriptor, path):  # removed while held: see the module docstring
                    path.unlink()
    finally:
        os.close(descriptor)  # releases the lock
        if created:
            with contextlib.suppress(OSError):
                if not any(os.scandir(root)):
                    root.rmdir()


def _is_open_file(descriptor: int, path: Path) -> bool:
    """Whether `path` names the file open as `descriptor` (not a file put there since)."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _lock_file(path: Path, root: Path) -> int:
    """The descriptor of `path`, created if missing and locked (LockedError if another job holds
    it), and still the file of that name: opened again if its holder removed it in between."""
    for _ in range(REOPENS):
        descriptor = _open_lock(path, create=True)
        try:
            _acquire(descriptor, root)
            if _is_open_file(descriptor, path):
                return descriptor
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)
    raise LockedError(f"{str(root)!r}: its lock file was replaced {REOPENS} times while this job took it; try again")


def check_unlocked(directory: str | os.PathLike[str]) -> None:
    """LockedError if another job holds `directory`'s lock; creates nothing (a directory or lock
    file that does not exist is not locked). For checks made before the lock is taken."""
    path = Path(directory) / LOCK_FILE
    try:
        descriptor = os.open(path, OPEN_FLAGS)
    except OSError:
        return  # missing, or a link (which `output_lock` refuses)
    try:
        _acquire(descriptor, Path(directory))
    finally:
        os.close(descriptor)  # releases what `_acquire` took


def _acquire(descriptor: int, root: Path) -> None:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        holder = _holder_of(os.pread(descriptor, 4096, 0).decode("utf-8", "replace"))
    except OSError as error:
        if error.errno not in NO_LOCKING:
            raise
        holder = _holder_of(os.pread(descriptor, 4096, 0).decode("utf-8", "replace"))
        if holder is None or not _is_alive(holder):
            return  # stale: its holder is gone
    who = holder.describe() if holder is not None else "a job that has not said who it is yet"
    raise LockedError(
        f"{str(root)!r} is in use by another diffimax job ({who}): "
        "wait for it to end or stop it, or choose another --out"
    )


__all__ = [
    "LOCK_FILE",
    "Holder",
    "LockFileError",
    "LockedError",
    "OutputPathError",
    "check_out_path",
    "check_unlocked",
    "output_lock",
]
