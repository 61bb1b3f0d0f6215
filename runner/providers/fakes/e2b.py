"""A loopback fake of E2B: the control plane (spec/openapi.yml) and envd behind the sandbox proxy
(spec/envd/envd.yaml, process.proto over Connect), from e2b-dev/E2B.

Two servers, as the SDK sees them: the API (`X-API-Key`) and the sandbox proxy, which routes by
the `E2b-Sandbox-Id` and `E2b-Sandbox-Port: 49983` headers to the sandbox's envd
(`X-Access-Token`). Create returns 201 once the sandbox exists; the proxy answers 502 until its
envd is up (`ready_delay_s`). 429 with Retry-After at the concurrency or creation-rate cap, the
concurrency refusal in E2B's own words; `documented_limits()` are the Hobby plan's (its
declaration), which demo runs enforce. A sandbox past its timeout is gone: the API answers 404,
the proxy 502.

Snapshots and forks, as E2B's SDK sends them (its generated client, e2b/api/client/api/): `POST
/sandboxes/{id}/snapshots` makes a snapshot template (201 SnapshotInfo; a name already taken gets
a new build of the same template, so the same snapshot id), which `POST /v2/sandboxes` accepts
as its templateID; `GET /snapshots` lists them, paged by `X-Next-Token`; `DELETE
/templates/{id}` removes one (204, then 404). `POST /sandboxes/{id}/fork` answers 201 with one
result per fork, a sandbox or an error (429 at the concurrency cap); the source keeps running.
E2B keeps memory too; the fake copies only files, through the local provider's snapshots (a tar
of /app and /tmp, runner/providers/local/snapshots.py), so a copy starts with no processes.

Template builds from a Dockerfile (`Template.build`: POST /v3/templates, the COPY files through
presigned uploads, the build's steps, its status polled) are served by fakes/e2b_templates.py;
a built template is a templateID create accepts, at the size its build asked for.
"""

from __future__ import annotations

import base64
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from urllib.parse import unquote

from runner.providers.base import ProviderError
from runner.providers.fakes import connect, hostile
from runner.providers.fakes.backend import Backend, Box, Busy, declared_limits
from runner.providers.fakes.e2b_templates import TemplateBuilds, new_template_id
from runner.providers.fakes.server import FakeHTTPServer, Request, Reset, Response

ENVD_PORT = "49983"
# A current envd, as a template built today runs: E2B's SDK refuses to choose stdin (the
# `stdin` field of a process start) below 0.3.0, and sends uploads as octet-stream from 0.5.7.
ENVD_VERSION = "0.6.4"
SANDBOX_PATH = re.compile(r"^/sandboxes/([^/]+)(/timeout|/fork|/snapshots)?$")
TEMPLATE_PATH = re.compile(r"^/templates/([^/]+)$")
CHUNK = 64 * 1024
TEAM = "boxbench-fake"  # the team's slug, which namespaces a named snapshot
# A template name or id, optionally `namespace/`-qualified and `:tag`-ged (E2B's id.ParseName).
TEMPLATE_REF = re.compile(r"^(?:([a-z0-9_-]+)/)?([a-z0-9_-]+)(?::([a-z0-9_.-]+))?$")
DEFAULT_TAG = "default"
MAX_FORK_COUNT = 100  # the API's cap per request (its SDK sends at most 20)


def error(status: int, message: str, headers: dict | None = None, **extra) -> Response:
    return Response.json(status, {"code": status, "message": message, **extra}, headers)


@dataclass
class Snapshot:
    """A snapshot template: its files are the local provider's snapshot `local`."""

    template_id: str
    alias: str | None  # the name it was made with, without the team's namespace
    local: str
    source: str  # the sandbox it was taken from
    cpus: int
    memory_mib: int
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def names(self) -> list[str]:
        return [f"{TEAM}/{self.alias}"] if self.alias else []

    @property
    def snapshot_id(self) -> str:
        """E2B's id of a snapshot: its namespaced name when it has one, else its template id,
        with the tag."""
        return f"{(self.names or [self.template_id])[0]}:{DEFAULT_TAG}"

    def info(self) -> dict:
        return {"snapshotID": self.snapshot_id, "names": self.names}

    def known_as(self, name: str) -> bool:
        """Whether `name` (a name or an id, optionally qualified by namespace and tag) is this
        snapshot."""
        ref = TEMPLATE_REF.match(name.strip().lower())
        if ref is None or ref.group(3) not in (None, DEFAULT_TAG):
            return False
        namespace, identifier = ref.group(1), ref.group(2)
        if namespace is not None:
            return namespace == TEAM and identifier == self.alias
        return identifier in (self.template_id, self.alias)


def refusal(exc: Busy) -> Response:
    """E2B's 429: its API's wording at the concurrency cap (e2b-dev/infra's orchestrator)."""
    message = str(exc)
    if exc.kind == "concurrency":
        message = (
            f"you have reached the maximum number of concurrent E2B sandboxes ({exc.limit:g}). "
            "If you need more, please contact us at 'https://e2b.dev/docs/getting-help'"
        )
    return error(429, message, {"Retry-After": str(exc.retry_after_s)})


class E2BFake:
    @staticmethod
    def documented_limits() -> dict:
        """The limits of the plan boxbench tests: 20 at once, 1 create a second (Hobby)."""
        return declared_limits("e2b")

    def __init__(
        self,
        root: str | Path,
        *,
        ready_delay_s: float = 0.0,
        max_concurrent: int | None = 20,
        create_rate_per_s: float | None = None,
        idle_timeout_s: float = 300.0,
        templates: dict | None = None,
    ):
        self.api_key = "e2b_" + secrets.token_hex(20)
        self.backend = Backend(
            root,
            ready_delay_s=ready_delay_s,
            max_concurrent=max_concurrent,
            create_rate_per_s=create_rate_per_s,
            prefix="i",
        )
        self.templates = templates or {"boxbench-standard": (2, 4096)}
        self.api = FakeHTTPServer(self.handle_api, idle_timeout_s, "e2b-api")
        self.proxy = FakeHTTPServer(self.handle_proxy, idle_timeout_s, "e2b-sandbox")
        self.cut_streams = 0  # the next N process streams are reset after their start event
        self.snapshots: dict[str, Snapshot] = {}  # by template id
        self.template_builds = TemplateBuilds(self)
        self._lock = threading.Lock()

    def start(self) -> E2BFake:
        self.api.start()
        self.proxy.start()
        return self

    def stop(self) -> None:
        self.api.stop()
        self.proxy.stop()
        self.backend.close()
        for snapshot in list(self.snapshots.values()):
            self.backend.local.delete_snapshot(snapshot.local)
        for build in list(self.template_builds.builds.values()):
            if build.local:
                self.backend.local.delete_snapshot(build.local)

    def adapter_settings(self) -> dict:
        return {
            "api_url": self.api.url,
            "sandbox_url": self.proxy.url,
            "api_key": self.api_key,
            "template": next(iter(self.templates)),
        }

    def hostile(self, mode: str) -> None:
        """Answer as a broken or hostile E2B would (fakes/hostile.py)."""
        if mode == hostile.CALM:
            self.api.faults.clear()
            self.proxy.faults.clear()
        elif mode == "endless_listing":
            self.api.faults.add(
                "GET",
                "^/v2/sandboxes$",
                times=hostile.PAGES,
                answer=lambda r: Response.json(200, [], {"X-Next-Token": hostile.fresh_token()}),
            )
        elif mode == "missing_id":
            body = {"templateID": next(iter(self.templates)), "envdVersion": ENVD_VERSION}
            self.api.faults.add("POST", "^/v2/sandboxes$", status=201, body=body)
        elif mode == "not_json":
            self.api.faults.add("POST", "^/v2/sandboxes$", answer=lambda r: hostile.html(201))
        elif mode == "oversized_download":
            self.proxy.faults.add("GET", "^/files$", answer=lambda r: hostile.oversized_download())
        else:
            raise hostile.unknown(mode, "e2b")

    # -- control plane -------------------------------------------------------------------------

    def handle_api(self, request: Request) -> Response:
        uploaded = self.template_builds.handle_upload(request)
        if uploaded is not None:
            return uploaded
        if request.headers.get("x-api-key") != self.api_key:
            return error(401, "Invalid API key, it must start with 'e2b_' prefix")
        answer = self.template_builds.handle(request)
        if answer is not None:
            return answer
        # POST /v2/sandboxes is the create E2B's SDK sends (2.x; the spec's NewSandboxV2, always
        # secured); POST /sandboxes (NewSandbox) is the older one, still served.
        if request.method == "POST" and request.path in ("/v2/sandboxes", "/sandboxes"):
            return self.create(request)
        if request.method == "GET" and request.path == "/v2/sandboxes":
            return self.list(request)
        if request.method == "GET" and request.path == "/snapshots":
            return self.list_snapshots(request)
        template = TEMPLATE_PATH.match(request.path)
        if template and request.method == "DELETE":
            return self.delete_template(unquote(template.group(1)))
        match = SANDBOX_PATH.match(request.path)
        if match:
            box = self.backend.get(match.group(1))
            if box is None or box.state not in ("running", "creating"):
                return error(
                    404,
                    f"sandbox \"{match.group(1)}\" doesn't exist or you don't have access to it",
                )
            if match.group(2) == "/snapshots" and request.method == "POST":
                return self.snapshot(request, box)
            if match.group(2) == "/fork" and request.method == "POST":
                return self.fork(request, box)
            if match.group(2) == "/timeout" and request.method == "POST":
                body = request.json() or {}
                timeout = body.get("timeout")
                if not isinstance(timeout, int) or timeout < 0:
                    return error(400, "timeout must be a whole number of seconds >= 0")
                self.backend.set_timeout(box, timeout)
                return Response(204)
            if not match.group(2) and request.method == "GET":
                return Response.json(200, self.detail(box))
            if not match.group(2) and request.method == "DELETE":
                self.backend.kill(box)
                return Response(204)
        return error(404, f"no route {request.method} {request.path}")

    def create(self, request: Request) -> Response:
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("templateID"), str):
            return error(400, "request body must be a NewSandbox with a templateID")
        size = self.templates.get(body["templateID"])
        snapshot = self.find_snapshot(body["templateID"])
        built = self.template_builds.template(body["templateID"])
        files = snapshot.local if snapshot else built.local if built else None
        if snapshot is not None:
            size = (snapshot.cpus, snapshot.memory_mib)
        elif built is not None:
            size = (built.cpus, built.memory_mib)
        if size is None:
            return error(404, f"template '{body['templateID']}' not found")
        timeout = body.get("timeout", 15)
        metadata = body.get("metadata") or {}
        if not isinstance(timeout, int) or timeout < 0 or not isinstance(metadata, dict):
            return error(400, "timeout must be an integer >= 0 and metadata a string map")
        try:
            self.backend.admit()
        except Busy as exc:
            return refusal(exc)
        box = self.backend.reserve(
            timeout,
            label=metadata.get("boxbench.batch", ""),
            metadata=metadata,
            cpus=size[0],
            memory_mib=size[1],
        )
        network = bool(body.get("allow_internet_access", True))
        box.extra.update(template=body["templateID"], token=secrets.token_hex(16), network=network)
        try:
            self.backend.start(box, network, files)
        except ProviderError as exc:
            self.backend.kill(box, "failed")
            problem = f"failed to create sandbox: {exc}"
            return error(500, problem, error_code="sandbox_create_failed")
        return Response.json(201, self.created(box))

    def created(self, box: Box) -> dict:
        return {
            "templateID": box.extra["template"],
            "sandboxID": box.id,
            "clientID": "fake",
            "envdVersion": ENVD_VERSION,
            "envdAccessToken": box.extra["token"],
            "domain": None,
        }

    def detail(self, box: Box, listed: bool = False) -> dict:
        item = {
            "templateID": box.extra["template"],
            "sandboxID": box.id,
            "clientID": "fake",
            "startedAt": box.created_at.isoformat().replace("+00:00", "Z"),
            "endAt": datetime.fromtimestamp(box.expires_at, UTC).isoformat().replace("+00:00", "Z"),
            "cpuCount": box.cpus,
            "memoryMB": box.memory_mib,
            "diskSizeMB": 10240,
            "metadata": box.metadata,
            "state": "running",
            "envdVersion": ENVD_VERSION,
        }
        if not listed:
            item["envdAccessToken"] = box.extra["token"]
        return item

    def list(self, request: Request) -> Response:
        wanted = {}
        for pair in (request.arg("metadata") or "").split("&"):
            key, sep, value = pair.partition("=")
            if sep:
                wanted[unquote(key)] = unquote(value)
        states = (request.arg("state") or "running").split(",")
        try:
            limit = int(request.arg("limit") or 100)
        except ValueError:
            return error(400, "limit must be an integer")
        if not 1 <= limit <= 100:
            return error(400, "limit must be between 1 and 100")
        boxes = sorted(
            (b for b in list(self.backend.boxes.values()) if b.state == "running"),
            key=lambda b: b.created_at,
            reverse=True,
        )
        if "running" not in states:
            boxes = []
        boxes = [b for b in boxes if all(b.metadata.get(k) == v for k, v in wanted.items())]
        start = int(request.arg("nextToken") or 0)
        page = boxes[start : start + limit]
        headers = {"X-Total-Running": str(len(boxes))}
        if start + limit < len(boxes):
            headers["X-Next-Token"] = str(start + limit)
        return Response.json(200, [self.detail(b, listed=True) for b in page], headers)

    # -- snapshots and forks -------------------------------------------------------------------

    def find_snapshot(self, name: str) -> Snapshot | None:
        with self._lock:
            return next((s for s in self.snapshots.values() if s.known_as(name)), None)

    def snapshot(self, request: Request, box: Box) -> Response:
        body = request.json()
        if not isinstance(body, dict):
            return error(400, "Error when parsing request: the body is not a JSON object")
        name, memory = body.get("name"), body.get("memory", True)
        if not isinstance(memory, bool):
            return error(400, "Error when parsing request: memory must be a boolean")
        # E2B reads a name in lower case.
        ref = TEMPLATE_REF.match(name.strip().lower()) if isinstance(name, str) else None
        if name is not None and ref is None:
            return error(400, f"Invalid name: invalid template ID: {name}")
        if ref is not None and ref.group(1) not in (None, TEAM):
            return error(400, f"namespace '{ref.group(1)}' does not match the team's '{TEAM}'")
        if box.local is None:
            return error(409, f"Sandbox '{box.id}' cannot be snapshotted while in 'creating' state")
        try:
            local = self.backend.local.snapshot(box.local)
        except ProviderError:
            return error(500, "Error creating snapshot template")
        alias = ref.group(2) if ref is not None else None
        with self._lock:
            # A name already taken gets a new build of the same template: the same id.
            taken = next((s for s in self.snapshots.values() if alias and s.alias == alias), None)
            made = Snapshot(
                taken.template_id if taken else new_template_id(),
                alias,
                local,
                box.id,
                box.cpus,
                box.memory_mib,
            )
            self.snapshots[made.template_id] = made
        if taken is not None:
            self.backend.local.delete_snapshot(taken.local)
        return Response.json(201, made.info())

    def list_snapshots(self, request: Request) -> Response:
        try:
            limit = int(request.arg("limit") or 100)
            start = int(request.arg("nextToken") or 0)
        except ValueError:
            return error(400, "Invalid next token or limit")
        if not 1 <= limit <= 100:
            return error(400, "limit must be between 1 and 100")
        source, name = request.arg("sandboxID"), request.arg("name")
        with self._lock:
            found = sorted(self.snapshots.values(), key=lambda s: s.created_at, reverse=True)
        found = [
            s
            for s in found
            if (not source or s.source == source) and (not name or s.known_as(name))
        ]
        headers = {"X-Next-Token": str(start + limit)} if start + limit < len(found) else {}
        return Response.json(200, [s.info() for s in found[start : start + limit]], headers)

    def delete_template(self, name: str) -> Response:
        if TEMPLATE_REF.match(name.strip().lower()) is None:
            return error(400, f"Invalid template ID: {name}")
        snapshot = self.find_snapshot(name)
        if snapshot is None:
            return error(404, f"template '{name}' not found")
        with self._lock:
            self.snapshots.pop(snapshot.template_id, None)
        self.backend.local.delete_snapshot(snapshot.local)
        return Response(204)

    def fork(self, request: Request, box: Box) -> Response:
        body = request.json() if request.body else {}
        if not isinstance(body, dict):
            return error(400, "Error when parsing request: the body is not a JSON object")
        timeout, count = body.get("timeout", 15), body.get("count", 1)
        if not isinstance(timeout, int) or timeout < 0 or not isinstance(count, int):
            return error(400, "Error when parsing request: timeout and count must be integers")
        if count < 1 or count > MAX_FORK_COUNT:
            return error(400, f"Count must be between 1 and {MAX_FORK_COUNT}")
        most = self.backend.max_concurrent
        if most is not None and count >= most:
            # The source keeps its own place, so this many forks could never all run.
            return error(
                400, f"Count must be lower than the maximum number of concurrent sandboxes ({most})"
            )
        if box.local is None:
            return error(409, f"Sandbox '{box.id}' cannot be forked while in 'creating' state")
        try:
            local = self.backend.local.snapshot(box.local)
        except ProviderError:
            return error(500, "Error forking sandbox")
        try:
            results = [self.fork_one(box, local, timeout) for _ in range(count)]
        finally:
            self.backend.local.delete_snapshot(local)
        return Response.json(201, results)

    def fork_one(self, source: Box, local: str, timeout: int) -> dict:
        """One fork's result: the sandbox, or the error that kept it from starting."""
        try:
            self.backend.admit()
        except Busy as exc:
            return {"error": {"code": 429, "message": str(exc)}}
        box = self.backend.reserve(
            timeout,
            label=source.label,
            metadata=source.metadata,
            cpus=source.cpus,
            memory_mib=source.memory_mib,
        )
        box.extra.update(
            template=source.extra["template"],
            token=secrets.token_hex(16),
            network=source.extra["network"],
        )
        try:
            self.backend.start(box, box.extra["network"], local)
        except ProviderError as exc:
            self.backend.kill(box, "failed")
            return {"error": {"code": 500, "message": f"failed to create sandbox: {exc}"}}
        return {"sandbox": self.created(box)}

    # -- sandbox proxy and envd -----------------------------------------------------------------

    def handle_proxy(self, request: Request) -> Response:
        sandbox_id = request.headers.get("e2b-sandbox-id", "")
        if request.headers.get("e2b-sandbox-port") != ENVD_PORT:
            return error(400, "missing or unsupported E2b-Sandbox-Port header")
        box = self.backend.get(sandbox_id)
        if box is None or not self.backend.ready(box):
            # The proxy's answer while the VM's envd is not up yet, or once the sandbox is gone.
            return error(
                502, "The sandbox is not running or is not reachable", sandboxId=sandbox_id
            )
        if request.path == "/health":
            return Response(204)
        if request.headers.get("x-access-token") != box.extra["token"]:
            return error(401, "invalid access token")
        if request.path == "/files":
            return self.files(request, box)
        if request.path.startswith("/process.Process/"):
            return self.process(request, box, request.path.rsplit("/", 1)[1])
        return error(404, f"no route {request.path}")

    def files(self, request: Request, box: Box) -> Response:
        path = request.arg("path")
        if not path or not path.startswith("/"):
            return error(400, f"path '{path}' must be absolute")
        if request.method == "GET":
            data = self.backend.read_file(box, path)
            if data is None:
                return error(404, f"path '{path}' does not exist")
            return Response(200, data, {"Content-Type": "application/octet-stream"})
        if request.method != "POST":
            return error(405, "method not allowed")
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            data = _multipart_file(content_type, request.body)
            if data is None:
                return error(400, "multipart body has no 'file' part")
        else:
            data = request.body
        problem = self.backend.write_file(box, path, data)
        if problem is not None:
            return error(500, f"error writing file '{path}': {problem}")
        name = path.rsplit("/", 1)[-1]
        return Response.json(200, [{"path": path, "name": name, "type": "file"}])

    def process(self, request: Request, box: Box, method: str) -> Response:
        if method == "Start":
            if request.headers.get("content-type") != connect.STREAM_CONTENT_TYPE:
                return Response(415, b"", {"Accept-Post": connect.STREAM_CONTENT_TYPE})
            try:
                message = connect.parse_single(request.body)
            except connect.FramingError as exc:
                return _connect_error("invalid_argument", str(exc))
            return self.start_process(request, box, message)
        if request.headers.get("content-type") != "application/json":
            return Response(415, b"", {"Accept-Post": "application/json"})
        body = request.json() or {}
        pid = ((body.get("process") or {}).get("pid")) or 0
        process = box.processes.get(pid)
        if method not in ("SendInput", "CloseStdin", "SendSignal"):
            return _connect_error("unimplemented", f"process.Process/{method} is not served here")
        if process is None:
            return _connect_error("not_found", f"process with pid {pid} not found")
        if method == "SendInput":
            data = ((body.get("input") or {}).get("stdin")) or ""
            process.stdin.extend(base64.b64decode(data))
        elif method == "CloseStdin":
            process.stdin_closed.set()
        else:
            signal = {"SIGNAL_SIGKILL": "KILL", "SIGNAL_SIGTERM": "TERM"}.get(
                str(body.get("signal"))
            )
            if signal is None:
                return _connect_error("invalid_argument", f"unknown signal {body.get('signal')!r}")
            self.backend.signal(box, process, signal)
            process.stdin_closed.set()
        return Response.json(200, {})

    def start_process(self, request: Request, box: Box, message: dict) -> Response:
        config = message.get("process") or {}
        if not config.get("cmd"):
            return _connect_error("invalid_argument", "process.cmd is required")
        argv = [config["cmd"], *config.get("args", [])]
        try:
            interval = max(0.05, float(request.headers.get("keepalive-ping-interval", "50")))
        except ValueError:
            interval = 50.0
        process = self.backend.spawn(
            box,
            argv,
            env=config.get("envs") or None,
            workdir=config.get("cwd"),
            stdin=bool(message.get("stdin", True)),
        )
        with self._lock:
            cut = self.cut_streams > 0
            self.cut_streams -= cut

        def events():
            yield connect.envelope({"event": {"start": {"pid": process.number}}})
            if cut:
                raise Reset()
            while not process.done.wait(interval):
                yield connect.envelope({"event": {"keepalive": {}}})
            if process.result is None:
                yield connect.end_stream({"code": "unavailable", "message": process.error or ""})
                return
            for stream in ("stdout", "stderr"):
                data = getattr(process.result, stream)
                for at in range(0, len(data), CHUNK):
                    chunk = base64.b64encode(data[at : at + CHUNK]).decode()
                    yield connect.envelope({"event": {"data": {stream: chunk}}})
            code = process.result.exit_code
            end = {"exited": True, "status": f"exit status {code}"}
            if process.killed:
                end = {"status": "signal: killed"}
                code = -1
            if code:
                end["exitCode"] = code  # protojson leaves out a zero exit code
            yield connect.envelope({"event": {"end": end}})
            yield connect.end_stream()

        return Response(200, events(), {"Content-Type": connect.STREAM_CONTENT_TYPE})


def _connect_error(code: str, message: str) -> Response:
    return Response.json(connect.HTTP_STATUS[code], {"code": code, "message": message})


def _multipart_file(content_type: str, body: bytes) -> bytes | None:
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            payload = part.get_payload(decode=True)
            return payload if isinstance(payload, bytes) else None
    return None
