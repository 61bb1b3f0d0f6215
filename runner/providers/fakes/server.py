"""The loopback HTTP/1.1 server every fake runs on: routing, keep-alive, faults, a request log.

Keep-alive is HTTP/1.1's default; a connection idle for `idle_timeout_s` is closed by the server
(the socket timeout of the handler), the way a provider's load balancer drops idle connections.
A route returns a Response whose body is bytes or an iterator of bytes; an iterator is sent with
chunked transfer encoding (Connect server streams, ndjson logs), flushed chunk by chunk.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes
    connection: int  # which TCP connection carried it (1, 2, ...), to observe keep-alive
    at: float = field(default_factory=time.monotonic)

    def json(self):
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default


@dataclass
class Response:
    status: int
    body: bytes | Iterable[bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, status: int, data, headers: dict | None = None) -> Response:
        return cls(
            status,
            json.dumps(data).encode(),
            {"Content-Type": "application/json", **(headers or {})},
        )


@dataclass
class Fault:
    """One injected failure: the next `times` requests matching `method` and `path` (a regex
    searched in the path) get `status` with `body` and `headers`, or a connection `reset`, or
    the Response `answer` makes for the request (a hostile answer: fakes/hostile.py), or wait
    `delay_s` first and are then served normally."""

    method: str
    path: str
    times: int = 1
    status: int | None = None
    body: dict | bytes | None = None
    headers: dict = field(default_factory=dict)
    reset: bool = False
    delay_s: float = 0.0
    answer: Callable[[Request], Response] | None = None


class Faults:
    def __init__(self):
        self._items: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, method: str, path: str, **kwargs) -> Fault:
        fault = Fault(method.upper(), path, **kwargs)
        with self._lock:
            self._items.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self._items:
                if fault.method in (method, "*") and re.search(fault.path, path):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._items.remove(fault)
                    return fault
        return None


class FakeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, app: Callable[[Request], Response], idle_timeout_s: float, name: str):
        self.app = app
        self.idle_timeout_s = idle_timeout_s
        self.name = name
        self.faults = Faults()
        self.requests: list[Request] = []
        self.connections = 0
        self.closed = 0  # connections the server has closed (idle, or the client hung up)
        self._lock = threading.Lock()
        self._closing = threading.Condition(self._lock)
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> None:
        threading.Thread(target=self.serve_forever, name=f"fake-{self.name}", daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def shutdown_request(self, request):
        # Counted once the socket is shut, not when the handler returns: a test that waits for
        # an idle drop and then calls again must find the connection closed, not closing.
        try:
            super().shutdown_request(request)
        finally:
            self.connection_closed()

    def handle_error(self, request, client_address):
        pass  # a client that hung up (a timed-out exec) is not the fake's error

    def next_connection(self) -> int:
        with self._lock:
            self.connections += 1
            return self.connections

    def log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def connection_closed(self) -> None:
        with self._closing:
            self.closed += 1
            self._closing.notify_all()

    def wait_closed(self, count: int, timeout_s: float) -> bool:
        """Whether `count` connections have been closed within `timeout_s` (for idle drops)."""
        with self._closing:
            return self._closing.wait_for(lambda: self.closed >= count, timeout_s)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeHTTPServer

    def setup(self):
        self.timeout = self.server.idle_timeout_s
        super().setup()
        # Headers and body leave in separate writes: with Nagle's algorithm the second waits for
        # the client's delayed ACK (about 40 ms on Linux), which would dwarf the fake's own cost.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection_no = self.server.next_connection()

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass  # tests read server.requests; nothing goes to stderr

    def do_GET(self):
        self._dispatch()

    do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_GET  # noqa: N815

    def _dispatch(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self._read_chunked()
        parts = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            connection=self.connection_no,
        )
        self.server.log(request)
        fault = self.server.faults.take(request.method, request.path)
        if fault is not None:
            if fault.delay_s:
                time.sleep(fault.delay_s)
            if fault.reset:
                self._reset()
                return
            if fault.answer is not None:
                self._send(fault.answer(request))
                return
            if fault.status is not None:
                data = fault.body if fault.body is not None else {}
                if isinstance(data, bytes):
                    response = Response(fault.status, data, dict(fault.headers))
                else:
                    response = Response.json(fault.status, data, fault.headers)
                self._send(response)
                return
        try:
            response = self.server.app(request)
        except Exception as exc:  # noqa: BLE001 - a bug in a fake answers 500, visibly
            response = Response.json(500, {"code": 500, "message": f"fake error: {exc!r}"})
        self._send(response)

    def _read_chunked(self) -> bytes:
        data = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if isinstance(response.body, bytes | bytearray):
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                try:
                    self.wfile.write(response.body)
                except OSError:
                    self.close_connection = True  # the client gave up waiting
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in response.body:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True  # the client went away mid-stream
        except _Reset:
            self._reset()

    def _reset(self) -> None:
        """Close with RST: the client sees a connection reset, not an orderly end."""
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        self.close_connection = True


class _Reset(Exception):
    """Raised by a streaming body to cut its connection with a reset (a dropped stream)."""


Reset = _Reset
