"""A loopback HTTP server (127.0.0.1, a thread) that serves one body and misbehaves on request: it
drops or stalls its first answer, trickles, and answers Range requests well or badly. Every wait in
it is bounded, and `stop` ends them all, so that a stuck test never leaves it behind."""

from __future__ import annotations

import http.server
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

# How the first answer ends after `cut` bytes: closed (a drop), held open sending nothing (a stall,
# until `hold` seconds pass), or sent on one byte every `trickle` seconds (until `hold` seconds pass).
FirstMode = Literal["whole", "drop", "stall", "trickle"]
# How a Range request is answered: 206 from the offset asked; 200 with the whole body (no ranges);
# 206 with another ETag (the content changed); 206 from the wrong offset; 206 that sends no byte.
RangeMode = Literal["ok", "ignore", "etag", "wrong", "empty"]


@dataclass
class Behaviour:
    data: bytes = b""
    etag: str | None = '"v1"'
    first: FirstMode = "whole"
    cut: int = 0
    hold: float = 30.0
    trickle: float = 2.0
    ranges: RangeMode = "ok"
    accept_ranges: str | None = "bytes"
    """The Accept-Ranges header of every answer (None: not sent)."""
    head_stall: float = 0.0
    """Seconds a HEAD request waits before its answer."""
    requests: list[tuple[str | None, str | None]] = field(default_factory=list)
    """(Range, If-Range) of each GET, in order."""
    sent: int = 0
    """Body bytes written to clients so far (a test waits on it, not on a clock)."""


class RangeServer:
    def __init__(self, behaviour: Behaviour, lifetime: float = 240.0) -> None:
        self.behaviour = behaviour
        self.stopping = threading.Event()
        served, stopping = behaviour, self.stopping

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def headers_for(self, status: int, length: int, etag: str | None, extra: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(length))
                if etag is not None:
                    self.send_header("ETag", etag)
                if served.accept_ranges is not None:
                    self.send_header("Accept-Ranges", served.accept_ranges)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Connection", "close")
                self.end_headers()

            def do_HEAD(self) -> None:
                stopping.wait(served.head_stall)
                self.headers_for(200, len(served.data), served.etag, {})

            def do_GET(self) -> None:
                asked = self.headers.get("Range")
                served.requests.append((asked, self.headers.get("If-Range")))
                self.close_connection = True
                data = served.data
                if asked is None or served.ranges == "ignore":
                    self.headers_for(200, len(data), served.etag, {})
                    self.first(data) if len(served.requests) == 1 else self.send(data)
                    return
                start = int(asked.removeprefix("bytes=").rstrip("-"))
                etag = '"v2"' if served.ranges == "etag" else served.etag
                shown = start + 1 if served.ranges == "wrong" else start
                extra = {"Content-Range": f"bytes {shown}-{len(data) - 1}/{len(data)}"}
                self.headers_for(206, len(data) - start, etag, extra)
                if served.ranges != "empty":
                    self.send(data[start:])

            def first(self, data: bytes) -> None:
                """The first answer's body, ended as `served.first` says."""
                if served.first == "whole":
                    self.send(data)
                    return
                self.send(data[: served.cut])
                until = time.monotonic() + served.hold
                if served.first == "stall":
                    stopping.wait(served.hold)
                elif served.first == "trickle":
                    at = served.cut
                    while at < len(data) and time.monotonic() < until and not stopping.wait(served.trickle):
                        if not self.send(data[at : at + 1]):
                            return
                        at += 1

            def send(self, data: bytes) -> bool:
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError:  # the client gave up on this connection
                    return False
                served.sent += len(data)
                return True

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.watchdog = threading.Timer(lifetime, self.stop)  # never outlives a stuck test

    def __enter__(self) -> RangeServer:
        self.thread.start()
        self.watchdog.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        self.watchdog.cancel()
        if self.thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()
