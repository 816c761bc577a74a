"""A real S3 endpoint on 127.0.0.1 for the tests: moto's standalone server (`moto[server]`, the S3
API over HTTP, a dev dependency) in a process of its own, and a loopback TCP proxy in front of it
that drops a connection on request (the fault a long read must survive).

`s3_server()` starts the server and sets the standard variables every client reads
(`AWS_ENDPOINT_URL`, test credentials, the region), so that `diffimax`, its Ray workers and its
subprocesses all reach it through the standard chain, as they would a real store."""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# The credentials of the local server (moto accepts any): what the standard chain finds.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "diffimaxtestkey",
    "AWS_SECRET_ACCESS_KEY": "diffimax-test-secret-0123456789",
    "AWS_DEFAULT_REGION": "us-east-1",
}
# Seconds the server may take to say where it listens.
START_SECONDS = 30.0


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen[bytes]
    buckets: list[str] = field(default_factory=list)

    def bucket(self, prefix: str = "diffimax") -> str:
        """A new, empty bucket."""
        import boto3

        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        boto3.client("s3", endpoint_url=self.endpoint).create_bucket(Bucket=name)
        self.buckets.append(name)
        return name

    def client(self) -> object:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint)


def _moto_command() -> list[str]:
    executable = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if executable is not None:
        return [executable]
    return [sys.executable, "-m", "moto.server"]


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 (a free port), the environment pointed at it for the block."""
    process = subprocess.Popen(
        [*_moto_command(), "-H", "127.0.0.1", "-p", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert process.stdout is not None
    endpoint = None
    deadline = time.monotonic() + START_SECONDS
    seen = b""
    while time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            seen += os.read(process.stdout.fileno(), 4096)
            found = re.search(rb"Running on (http://127\.0\.0\.1:\d+)", seen)
            if found:
                endpoint = found[1].decode()
                break
    if endpoint is None:
        process.kill()
        raise RuntimeError(f"moto's S3 server did not start: {seen.decode(errors='replace')[-500:]}")
    drain = threading.Thread(target=_drain, args=(process,), daemon=True)
    drain.start()
    saved = {name: os.environ.get(name) for name in [*CREDENTIALS, "AWS_ENDPOINT_URL"]}
    os.environ.update(CREDENTIALS)
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    try:
        yield S3Server(endpoint, process)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _drain(process: subprocess.Popen[bytes]) -> None:
    """Read the server's log as it comes (a full pipe would stop it), and drop it."""
    assert process.stdout is not None
    with contextlib.suppress(OSError, ValueError):
        while process.stdout.read(65536):
            pass


class DroppingProxy:
    """A TCP proxy on 127.0.0.1 in front of `target` ("http://127.0.0.1:PORT"): it forwards every
    connection, and while `drop_after` is set, closes the next connection whose answer passes that
    many bytes (both ends, mid-body), then forwards normally again. `drops` counts them."""

    def __init__(self, target: str, lifetime: float = 300.0) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.5)
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.drop_after: int | None = None
        self.drops = 0
        self.lock = threading.Lock()
        self.deadline = time.monotonic() + lifetime
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set() and time.monotonic() < self.deadline:
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._pipe, args=(client,), daemon=True).start()

    def _pipe(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError), client, socket.create_connection(self.target, timeout=30) as server:
            answered = 0
            while not self.stopped.is_set() and time.monotonic() < self.deadline:
                ready, _, _ = select.select([client, server], [], [], 0.5)
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    if end is server:
                        answered += len(data)
                        with self.lock:
                            if self.drop_after is not None and answered > self.drop_after:
                                self.drop_after = None
                                self.drops += 1
                                client.sendall(data[: len(data) // 2])
                                return
                        client.sendall(data)
                    else:
                        server.sendall(data)

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()
        self.thread.join(5)


__all__ = ["CREDENTIALS", "DroppingProxy", "S3Server", "s3_server"]
