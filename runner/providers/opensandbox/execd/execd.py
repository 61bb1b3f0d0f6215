#!/usr/bin/python3
"""boxbench's execd: a daemon that speaks OpenSandbox's published execd API (specs/execd-api.yaml).

OpenSandbox's own execd image is not reachable from the job hosts, so the OpenSandbox server is run
with this one instead: the server copies `/execd` and `/bootstrap.sh` out of the execd image into
every sandbox and starts the sandbox with bootstrap.sh, which starts this daemon on port 44772.
Written from the API spec only; the standard library only (it runs on the sandbox's python3).

Endpoints:
- GET /ping: 200 while the daemon runs;
- POST /command {command, cwd?, background?, timeout? (ms), envs?}: runs `command` with bash in a
  session of its own and streams events as `text/event-stream`, each a JSON object followed by a
  blank line: init (text = the command id), stdout, stderr, ping (keep-alive while quiet), then
  execution_complete (exit 0, execution_time in ms) or error {ename: CommandExecError, evalue:
  the exit code}. Output bytes that are not UTF-8 travel as surrogate escapes (\\udcXX), so a
  client decoding with `surrogateescape` gets the exact bytes back;
- DELETE /command?id=: kills the command's process group;
- GET /command/status/{id}, GET /command/{id}/logs?cursor=N (header EXECD-COMMANDS-TAIL-CURSOR);
- POST /files/upload (multipart: a `metadata` JSON part {path, mode?} before each `file` part);
- GET /files/download?path= (one `Range: bytes=a-b` honoured: 206, or 416), GET /files/info,
  DELETE /files;
- /proxy/{port}/...: forwarded to 127.0.0.1:{port}; the daemon's own port is served in place.

Errors are JSON {"code", "message"}. Every request but /ping needs the header X-EXECD-ACCESS-TOKEN
holding EXECD_ACCESS_TOKEN, forwarded ones too; without that variable the daemon does not start:
on a bridge network the other sandboxes reach its port. The variable is taken out of the
environment the commands get (the sandbox's own commands can still read it in /proc, which opens
them nothing: the adapter gives each sandbox a token of its own).
"""

import contextlib
import hmac
import http.client
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PORT = int(os.environ.get("EXECD_PORT", "44772"))
TOKEN = os.environ.pop("EXECD_ACCESS_TOKEN", "")
PING_EVERY_S = 5.0
CHUNK = 65536
SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
PROXY = re.compile(r"^/proxy/(\d+)(/.*)?$")
COMMANDS: dict[str, "Command"] = {}
COMMANDS_LOCK = threading.Lock()


def now_ms():
    return int(time.time() * 1000)


def iso(epoch):
    return datetime.fromtimestamp(epoch, UTC).isoformat() if epoch else None


def text_of(data):
    return data.decode("utf-8", "surrogateescape")


class Command:
    """One command: its process, its events for a live stream, its output for the logs."""

    def __init__(self, request):
        self.id = uuid.uuid4().hex
        self.events = queue.Queue()
        self.output = bytearray()
        self.lock = threading.Lock()
        self.started = time.time()
        self.finished = None
        self.exit_code = None
        self.error = None
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in (request.get("envs") or {}).items()})
        self.process = subprocess.Popen(
            [SHELL, "-c", request["command"]],
            cwd=request.get("cwd") or None,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a process group to kill on interrupt or timeout
        )
        readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, "stdout"), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, "stderr"), daemon=True),
        ]
        for reader in readers:
            reader.start()
        timeout_ms = request.get("timeout") or 0
        threading.Thread(target=self._wait, args=(readers, timeout_ms), daemon=True).start()

    def _read(self, pipe, kind):
        fd = pipe.fileno()
        while True:
            data = os.read(fd, CHUNK)
            if not data:
                break
            with self.lock:
                self.output += data
            self.events.put({"type": kind, "text": text_of(data), "timestamp": now_ms()})
        pipe.close()

    def _wait(self, readers, timeout_ms):
        try:
            self.process.wait(timeout=timeout_ms / 1000 if timeout_ms else None)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
        for reader in readers:
            reader.join()  # the output ends when every holder of the pipes has closed them
        code = self.process.returncode
        self.exit_code = 128 - code if code < 0 else code  # killed by signal N: 128 + N
        self.finished = time.time()
        elapsed = int((self.finished - self.started) * 1000)
        if self.exit_code == 0:
            event = {"type": "execution_complete", "execution_time": elapsed}
        else:
            self.error = {"ename": "CommandExecError", "evalue": str(self.exit_code)}
            event = {"type": "error", "error": {**self.error, "traceback": []}}
        event["timestamp"] = now_ms()
        self.events.put(event)
        self.events.put(None)

    def kill(self):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def status(self):
        return {
            "id": self.id,
            "running": self.finished is None,
            "exit_code": self.exit_code,
            "error": self.error["evalue"] if self.error else None,
            "started_at": iso(self.started),
            "finished_at": iso(self.finished),
        }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client reuses its connection between calls
    server_version = "boxbench-execd/1"
    # Small event frames go out at once: with Nagle's algorithm each would wait for the client's
    # delayed ACK (~40 ms).
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PUT(self):
        self.dispatch("PUT")

    def dispatch(self, method):
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        proxied = PROXY.match(path)
        port = PORT
        if proxied:
            port, path = int(proxied.group(1)), proxied.group(2) or "/"
        given = self.headers.get("X-EXECD-ACCESS-TOKEN", "").encode()
        if (path != "/ping" or port != PORT) and not hmac.compare_digest(given, TOKEN.encode()):
            return self.fail(401, "UNAUTHORIZED", "missing or wrong X-EXECD-ACCESS-TOKEN")
        if port != PORT:
            return self.forward(method, port, path, url.query)
        try:
            route = ROUTES.get((method, path))
            if route is not None:
                return route(self, query)
            for (verb, pattern), handler in PATTERN_ROUTES:
                match = pattern.match(path)
                if verb == method and match:
                    return handler(self, query, *match.groups())
            self.fail(404, "NOT_FOUND", f"no route {method} {path}")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except BadRequest as exc:
            self.fail(400, "INVALID_REQUEST", str(exc))
        except FileNotFoundError as exc:
            self.fail(404, "FILE_NOT_FOUND", f"{exc.filename}: no such file or directory")
        except OSError as exc:
            self.fail(500, "RUNTIME_ERROR", f"{exc.filename or ''}: {exc.strerror or exc}")

    # -- plumbing ----------------------------------------------------------------------------

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(length) if length else b""

    def json_body(self):
        try:
            value = json.loads(self.body() or b"{}")
        except ValueError as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise BadRequest("the body must be a JSON object")
        return value

    def send(self, status, data=b"", content_type="application/json", headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, status, value):
        self.send(status, json.dumps(value).encode())

    def fail(self, status, code, message):
        self.send_json(status, {"code": code, "message": message})

    def start_stream(self, content_type="text/event-stream"):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def event(self, value):
        # ensure_ascii: surrogate escapes of non-UTF-8 output survive as \\udcXX.
        self.chunk(json.dumps(value, ensure_ascii=True).encode() + b"\n\n")

    # -- commands ----------------------------------------------------------------------------

    def run_command(self, query):
        request = self.json_body()
        if not isinstance(request.get("command"), str) or not request["command"].strip():
            raise BadRequest("command must be a non-empty string")
        cwd = request.get("cwd")
        if cwd and not os.path.isdir(cwd):
            raise BadRequest(f"cwd {cwd!r} is not a directory")
        try:
            command = Command(request)
        except OSError as exc:
            return self.fail(500, "RUNTIME_ERROR", f"cannot start the command: {exc}")
        with COMMANDS_LOCK:
            COMMANDS[command.id] = command
        self.start_stream()
        self.event({"type": "init", "text": command.id, "timestamp": now_ms()})
        if request.get("background"):
            return self.end_stream()
        while True:
            try:
                event = command.events.get(timeout=PING_EVERY_S)
            except queue.Empty:
                self.event({"type": "ping", "text": "pong", "timestamp": now_ms()})
                continue
            if event is None:
                return self.end_stream()
            self.event(event)

    def interrupt_command(self, query):
        command = self.find_command((query.get("id") or [""])[0])
        if command is None:
            return self.fail(404, "COMMAND_NOT_FOUND", "no command with that id")
        command.kill()
        self.send(200)

    def command_status(self, query, command_id):
        command = self.find_command(command_id)
        if command is None:
            return self.fail(404, "COMMAND_NOT_FOUND", f"no command {command_id}")
        self.send_json(200, command.status())

    def command_logs(self, query, command_id):
        command = self.find_command(command_id)
        if command is None:
            return self.fail(404, "COMMAND_NOT_FOUND", f"no command {command_id}")
        try:
            cursor = int((query.get("cursor") or ["0"])[0])
        except ValueError:
            raise BadRequest("cursor must be a whole number") from None
        with command.lock:
            data = bytes(command.output[max(cursor, 0) :])
            tail = len(command.output)
        self.send(200, data, "text/plain; charset=utf-8", {"EXECD-COMMANDS-TAIL-CURSOR": str(tail)})

    def find_command(self, command_id):
        with COMMANDS_LOCK:
            return COMMANDS.get(command_id)

    # -- files -------------------------------------------------------------------------------

    def upload(self, query):
        content_type = self.headers.get("Content-Type", "")
        match = re.search(r'boundary="?([^";]+)"?', content_type)
        if not content_type.startswith("multipart/form-data") or not match:
            raise BadRequest("expected multipart/form-data with a boundary")
        metadata = None
        written = []
        for headers, content in multipart_parts(self.body(), match.group(1).encode()):
            name = re.search(r'name="([^"]*)"', headers.get("content-disposition", ""))
            name = name.group(1) if name else ""
            if name == "metadata":
                try:
                    metadata = json.loads(content)
                except ValueError:
                    raise BadRequest("the metadata part is not JSON") from None
                if not isinstance(metadata, dict) or not metadata.get("path"):
                    raise BadRequest("the metadata part needs a path")
            elif name == "file":
                if metadata is None:
                    raise BadRequest("each file part needs a metadata part before it")
                written.append(write_file(metadata, content))
                metadata = None
        if not written:
            raise BadRequest("no file part")
        self.send(200)

    def download(self, query):
        path = required(query, "path")
        with open(path, "rb") as handle:
            data = handle.read()
        wanted = self.headers.get("Range")
        if not wanted:
            return self.send(200, data, "application/octet-stream", disposition(path))
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted.strip())
        size = len(data)
        if match and match.group(1):
            start = int(match.group(1))
            end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
        elif match and match.group(2):
            start, end = max(size - int(match.group(2)), 0), size - 1
        else:
            start, end = size, -1
        if start >= size or end < start:
            return self.fail(416, "RANGE_NOT_SATISFIABLE", f"{wanted} of {size} bytes")
        headers = {"Content-Range": f"bytes {start}-{end}/{size}", **disposition(path)}
        self.send(206, data[start : end + 1], "application/octet-stream", headers)

    def info(self, query):
        answer = {}
        for path in query.get("path") or []:
            stat = os.stat(path)
            answer[path] = {
                "path": path,
                "size": stat.st_size,
                "modified_at": iso(stat.st_mtime),
                "created_at": iso(stat.st_ctime),
                "owner": str(stat.st_uid),
                "group": str(stat.st_gid),
                "mode": int(oct(stat.st_mode & 0o777)[2:]),
            }
        if not answer:
            raise BadRequest("path is required")
        self.send_json(200, answer)

    def remove(self, query):
        for path in query.get("path") or []:
            if os.path.lexists(path):
                os.unlink(path)
        self.send(200)

    def ping(self, query):
        self.send(200)

    # -- /proxy/{port} -----------------------------------------------------------------------

    def forward(self, method, port, path, query_text):
        target = path + (f"?{query_text}" if query_text else "")
        # The token stays here: the service behind the port is the sandbox's code.
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in HOP_HEADERS and k.lower() != "x-execd-access-token"
        }
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        try:
            connection.request(method, target, body=self.body(), headers=headers)
            answer = connection.getresponse()
        except OSError as exc:
            connection.close()
            return self.fail(502, "PROXY_ERROR", f"127.0.0.1:{port}: {exc}")
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in HOP_HEADERS and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while data := answer.read1(CHUNK):
            self.chunk(data)
        self.end_stream()
        connection.close()


HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "upgrade", "host"}


class BadRequest(Exception):
    pass


def required(query, name):
    values = query.get(name) or []
    if not values or not values[0]:
        raise BadRequest(f"{name} is required")
    return values[0]


def disposition(path):
    return {"Content-Disposition": f'attachment; filename="{os.path.basename(path)}"'}


def multipart_parts(body, boundary):
    """(lower-cased headers, content) of each part, bytes exact."""
    delimiter = b"--" + boundary
    for piece in body.split(delimiter)[1:]:
        if piece.startswith(b"--"):
            break
        head, _, content = piece.partition(b"\r\n\r\n")
        headers = {}
        for line in head.split(b"\r\n"):
            name, sep, value = line.decode("latin-1").partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        yield headers, content[:-2] if content.endswith(b"\r\n") else content


def write_file(metadata, content):
    path = metadata["path"]
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    partial = f"{path}.execd-{uuid.uuid4().hex[:8]}"
    with open(partial, "wb") as handle:
        handle.write(content)
    mode = metadata.get("mode")
    os.chmod(partial, int(str(mode), 8) if mode not in (None, "") else 0o644)
    if metadata.get("owner") or metadata.get("group"):
        shutil.chown(partial, metadata.get("owner") or None, metadata.get("group") or None)
    os.replace(partial, path)  # readers never see a half-written file
    return path


ROUTES = {
    ("GET", "/ping"): Handler.ping,
    ("POST", "/command"): Handler.run_command,
    ("DELETE", "/command"): Handler.interrupt_command,
    ("POST", "/files/upload"): Handler.upload,
    ("GET", "/files/download"): Handler.download,
    ("GET", "/files/info"): Handler.info,
    ("DELETE", "/files"): Handler.remove,
}
PATTERN_ROUTES = [
    (("GET", re.compile(r"^/command/status/([^/]+)$")), Handler.command_status),
    (("GET", re.compile(r"^/command/([^/]+)/logs$")), Handler.command_logs),
]


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main():
    if not TOKEN:
        sys.exit("execd: EXECD_ACCESS_TOKEN is not set; refusing to serve unauthenticated calls")
    host = os.environ.get("EXECD_HOST", "0.0.0.0")
    server = Server((host, PORT), Handler)
    print(f"execd listening on {host}:{PORT}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
