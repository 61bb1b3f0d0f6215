"""A loopback fake of Daytona: the REST API (the models of libs/api-client-python) and the
toolbox API behind the sandbox's `toolboxProxyUrl` (apps/daemon/pkg/toolbox/docs/swagger.yaml),
from daytonaio/daytona.

Both take `Authorization: Bearer <key>`. POST /sandbox answers at once with state `creating`;
the sandbox goes through `pulling_snapshot` to `started` after `create_delay_s` (or to `error`
when a create failure is planted), so a client must poll. The toolbox answers 502 until the
sandbox is started. `/process/execute` merges stdout and stderr and kills the command after its
`timeout` (10 s when none is given), answering 408. Sessions run commands with separate stdout
and stderr, synchronously or with `runAsync`. `autoStopInterval` minutes without toolbox
activity stop the sandbox, and with `autoDeleteInterval` 0 it is deleted then (404 afterwards).

Snapshots and forks (apps/api/src/sandbox, v0.190.0: sandbox.service.ts createSnapshotFromSandbox
and forkSandbox, snapshot.controller.ts): `POST /sandbox/{id}/snapshot {name}` answers the sandbox
in state `snapshotting` and makes the snapshot in the background; the sandbox goes back to
`started` either way, and a snapshot that could not be made (its name taken) is simply never
listed, as with Daytona's runners. `GET /snapshots/{idOrName}`, `GET /snapshots?page&limit`,
`DELETE /snapshots/{uuid}` (400 for an id that is not a UUID, 403 for a general snapshot; the
snapshot is `removing`, then gone). A create naming a made snapshot starts from its files.
`POST /sandbox/{id}/fork {name}` answers the new sandbox in state `creating` (422 unless the
source's class is linux-vm or windows, 400 unless it is started); it copies the source's labels.
The fake copies files only, through the local provider's snapshots (a tar of /app and /tmp).

Limits, as Daytona answers them (`documented_limits()`, which demo runs enforce): the Tier 1
organization's compute pool of 10 vCPU and 10 GiB, which running sandboxes count against (a create
past it is refused 403 "Total memory limit exceeded. Maximum allowed: 10GiB.", the API's
ForbiddenException), and 600 creates per 60 s (429 with Retry-After).
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path

from runner.providers.base import ProviderError
from runner.providers.fakes import hostile
from runner.providers.fakes.backend import Backend, Box, Busy, CreateWindow
from runner.providers.fakes.server import FakeHTTPServer, Request, Response

SANDBOX_PATH = re.compile(r"^/sandbox/([^/]+)(/snapshot|/fork)?$")
SNAPSHOT_PATH = re.compile(r"^/snapshots/([^/]+)$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
FORKABLE = ("linux-vm", "windows")
FORK_SNAPSHOT = "boxbench-fork"  # a prepared linux-vm snapshot, when a test declares one
TOOLBOX_PATH = re.compile(r"^/toolbox/([^/]+)(/.*)$")
SESSION_PATH = re.compile(r"^/process/session/([^/]+)(?:/(exec)|/command/([^/]+)(/logs)?)?$")
DEFAULT_EXEC_TIMEOUT_S = 10


def api_error(status: int, message: str, headers: dict | None = None) -> Response:
    """NestJS's error body, as the Daytona API sends it."""
    names = {
        400: "Bad Request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not Found",
        422: "Unprocessable Entity",
        429: "Too Many Requests",
    }
    body = {"statusCode": status, "message": message, "error": names.get(status, "Error")}
    return Response.json(status, body, headers)


def toolbox_error(status: int, code: str, message: str, request: Request) -> Response:
    """The daemon's ErrorResponse (libs/common-go/pkg/errors)."""
    return Response.json(
        status,
        {
            "statusCode": status,
            "message": message,
            "code": code,
            "timestamp": datetime.now(UTC).isoformat(),
            "path": request.path,
            "method": request.method,
        },
    )


@dataclass
class Snapshot:
    """A snapshot of a sandbox: a copy of its files (the local provider's snapshot)."""

    name: str
    local: str | None  # None: a prepared snapshot, which holds no files of a sandbox
    source: str | None
    cpu: int
    memory_gib: int
    sandbox_class: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    state: str = "active"
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def dto(self) -> dict:
        made = self.created_at.isoformat().replace("+00:00", "Z")
        return {
            "id": self.id,
            "organizationId": "fake-org",
            "general": False,
            "name": self.name,
            "imageName": None,
            "state": self.state,
            "size": 0.1,
            "entrypoint": None,
            "cpu": self.cpu,
            "gpu": 0,
            "mem": self.memory_gib,
            "disk": 3,
            "errorReason": None,
            "createdAt": made,
            "updatedAt": made,
            "lastUsedAt": made,
            "sourceSandboxId": self.source,
            "sandboxClass": self.sandbox_class,
        }


class DaytonaFake:
    @staticmethod
    def documented_limits() -> dict:
        """Tier 1 (runner/provider_declarations/daytona.yaml): the pool, not a count, limits
        sandboxes."""
        return {
            "max_concurrent": None,
            "compute_pool": (10, 10),
            "create_window": CreateWindow(600, 60.0),
        }

    def __init__(
        self,
        root: str | Path,
        *,
        create_delay_s: float = 0.2,
        max_concurrent: int | None = 20,
        create_rate_per_s: float | None = None,
        create_window: CreateWindow | None = None,
        compute_pool: tuple[int, int] | None = None,
        idle_timeout_s: float = 300.0,
        snapshots: dict | None = None,
        sandbox_class: str = "linux-vm",
    ):
        self.api_key = "dtn_" + secrets.token_hex(20)
        self.backend = Backend(
            root,
            max_concurrent=max_concurrent,
            create_rate_per_s=create_rate_per_s,
            create_window=create_window,
            prefix="",
        )
        self.compute_pool = compute_pool  # the organization's (vCPU, memory GiB), or no pool
        self.create_delay_s = create_delay_s
        # name: (cpu, memory GiB), or (cpu, memory GiB, class) for one of another class.
        self.snapshots = snapshots or {"boxbench-standard": (2, 4)}
        # The prepared snapshots' class unless one names its own: linux-vm, the class Daytona
        # forks.
        self.sandbox_class = sandbox_class
        # Every snapshot of the organization by name: the prepared ones, and those of sandboxes.
        self.catalog = {
            name: Snapshot(name, None, None, size[0], size[1], (*size, sandbox_class)[2])
            for name, size in self.snapshots.items()
        }
        self._lock = threading.Lock()
        self.fail_next_create: str | None = None  # "error" or "build_failed"
        self.api = FakeHTTPServer(self.handle_api, idle_timeout_s, "daytona-api")
        self.toolbox = FakeHTTPServer(self.handle_toolbox, idle_timeout_s, "daytona-toolbox")

    def start(self) -> DaytonaFake:
        self.api.start()
        self.toolbox.start()
        return self

    def stop(self) -> None:
        self.api.stop()
        self.toolbox.stop()
        self.backend.close()

    def adapter_settings(self) -> dict:
        return {
            "api_url": self.api.url + "/api",
            "api_key": self.api_key,
            "toolbox_url": self.toolbox.url + "/toolbox",
            "snapshot": next(iter(self.snapshots)),
            **({"fork_snapshot": FORK_SNAPSHOT} if FORK_SNAPSHOT in self.snapshots else {}),
            "poll_interval_s": 0.02,
        }

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.api_key}"

    def hostile(self, mode: str) -> None:
        """Answer as a broken or hostile Daytona would (fakes/hostile.py); its sandbox list is
        one page, so it has no endless listing."""
        if mode == hostile.CALM:
            self.api.faults.clear()
            self.toolbox.faults.clear()
        elif mode == "missing_id":
            self.api.faults.add("POST", "^/api/sandbox$", status=200, body={"state": "started"})
        elif mode == "not_json":
            self.api.faults.add("POST", "^/api/sandbox$", answer=lambda r: hostile.html())
        elif mode == "oversized_download":
            self.toolbox.faults.add(
                "POST", "/files/bulk-download$", answer=lambda r: _oversized_part()
            )
        else:
            raise hostile.unknown(mode, "daytona")

    # -- API ------------------------------------------------------------------------------------

    def handle_api(self, request: Request) -> Response:
        if not self._authorized(request):
            return api_error(401, "Unauthorized")
        path = request.path.removeprefix("/api")
        if path == "/sandbox" and request.method == "POST":
            return self.create(request)
        if path == "/sandbox" and request.method == "GET":
            return self.list(request)
        if path == "/snapshots" and request.method == "GET":
            return self.list_snapshots(request)
        named = SNAPSHOT_PATH.match(path)
        if named and request.method in ("GET", "DELETE"):
            return self.snapshot_call(request.method, named.group(1))
        match = SANDBOX_PATH.match(path)
        if match:
            box = self.find(match.group(1))
            if box is None:
                return api_error(404, f"Sandbox with ID or name {match.group(1)} not found")
            if match.group(2) == "/snapshot" and request.method == "POST":
                return self.snapshot(request, box)
            if match.group(2) == "/fork" and request.method == "POST":
                return self.fork(request, box)
            if match.group(2):
                return api_error(404, f"Cannot {request.method} {request.path}")
            if request.method == "GET":
                return Response.json(200, self.dto(box))
            if request.method == "DELETE":
                box.extra["state"] = "destroying"
                self.backend.in_background(self.backend.kill, box)
                return Response.json(200, self.dto(box))
        return api_error(404, f"Cannot {request.method} {request.path}")

    def beyond_pool(self, cpu: int, memory_gib: int) -> str | None:
        """Daytona's refusal of a sandbox its organization's pool cannot hold, or None."""
        if self.compute_pool is None:
            return None
        running = self.backend.running()
        most_cpu, most_gib = self.compute_pool
        if sum(b.cpus for b in running) + cpu > most_cpu:
            return f"Total CPU limit exceeded. Maximum allowed: {most_cpu}."
        if sum(b.memory_mib for b in running) / 1024 + memory_gib > most_gib:
            return f"Total memory limit exceeded. Maximum allowed: {most_gib}GiB."
        return None

    def create(self, request: Request) -> Response:
        body = request.json()
        if not isinstance(body, dict):
            return api_error(400, "request body must be a CreateSandbox object")
        snapshot = body.get("snapshot") or next(iter(self.snapshots))
        made = self.find_snapshot(snapshot)
        if made is None:
            return api_error(
                400, f"Snapshot {snapshot} not found. Did you add it through the Daytona Dashboard?"
            )
        if made.state != "active":
            return api_error(400, f"Snapshot {snapshot} is {made.state}")
        size = (made.cpu, made.memory_gib)
        labels = body.get("labels") or {}
        stop_min = body.get("autoStopInterval", 15)
        if not isinstance(labels, dict) or not isinstance(stop_min, int) or stop_min < 0:
            return api_error(400, "labels must be a string map, autoStopInterval minutes >= 0")
        beyond = self.beyond_pool(*size)
        if beyond:
            return api_error(403, beyond)
        try:
            self.backend.admit()
        except Busy as exc:
            return api_error(429, str(exc), {"Retry-After": str(exc.retry_after_s)})
        lifetime = stop_min * 60 if stop_min else 365 * 86400
        box = self.backend.reserve(
            lifetime,
            label=labels.get("boxbench.batch", ""),
            metadata=labels,
            cpus=size[0],
            memory_mib=size[1] * 1024,
        )
        box.extra.update(
            state="creating",
            snapshot=snapshot,
            body=body,
            stop_min=stop_min,
            target=body.get("target") or "us",
            sessions={},
            sandbox_class=made.sandbox_class,
        )
        failure, self.fail_next_create = self.fail_next_create, None
        self.backend.in_background(self._provision, box, failure, made.local)
        return Response.json(200, self.dto(box))

    def _provision(self, box: Box, failure: str | None, files: str | None = None) -> None:
        if not self.backend.sleep_unless_closed(self.create_delay_s / 2):
            return
        box.extra["state"] = "pulling_snapshot"
        if not self.backend.sleep_unless_closed(self.create_delay_s / 2):
            return
        if failure:
            box.extra.update(state=failure, error="planted failure: the runner could not start it")
            box.state = "failed"
            return
        try:
            network = not box.extra["body"].get("networkBlockAll", False)
            self.backend.start(box, network, files)
        except ProviderError as exc:
            box.extra.update(state="error", error=str(exc))
            return
        box.extra["state"] = "started"

    def dto(self, box: Box) -> dict:
        created = box.created_at.isoformat().replace("+00:00", "Z")
        body = box.extra["body"]
        return {
            "id": box.id,
            "organizationId": "fake-org",
            "name": body.get("name") or box.id,
            "snapshot": box.extra["snapshot"],
            "user": body.get("user") or "daytona",
            "env": body.get("env") or {},
            "labels": box.metadata,
            "public": False,
            "networkBlockAll": bool(body.get("networkBlockAll", False)),
            "kvm": False,
            "target": box.extra["target"],
            "cpu": box.cpus,
            "gpu": 0,
            "memory": box.memory_mib // 1024,
            "disk": body.get("disk") or 3,
            "state": box.extra["state"],
            "errorReason": box.extra.get("error"),
            "autoStopInterval": box.extra["stop_min"],
            "autoDeleteInterval": body.get("autoDeleteInterval", -1),
            "createdAt": created,
            "updatedAt": created,
            "sandboxClass": box.extra["sandbox_class"],
            "toolboxProxyUrl": self.toolbox.url + "/toolbox",
        }

    def list(self, request: Request) -> Response:
        try:
            wanted = json.loads(request.arg("labels") or "{}")
        except ValueError:
            return api_error(400, "labels must be JSON-encoded")
        boxes = [
            b
            for b in list(self.backend.boxes.values())
            if all(b.metadata.get(k) == v for k, v in wanted.items())
        ]
        # ListSandboxesResponse: one page of items and the next page's cursor (none: the fake
        # never holds more than a page).
        return Response.json(200, {"items": [self.dto(b) for b in boxes], "nextCursor": None})

    # -- snapshots and forks -------------------------------------------------------------------

    def find(self, ref: str) -> Box | None:
        """A sandbox by id or name, as the API looks one up."""
        box = self.backend.get(ref)
        if box is None:
            named = [b for b in list(self.backend.boxes.values()) if b.extra["body"].get("name")]
            box = next((b for b in named if b.extra["body"]["name"] == ref), None)
            box = self.backend.get(box.id) if box is not None else None
        return box

    def find_snapshot(self, ref: str, by_id: bool = False) -> Snapshot | None:
        with self._lock:
            found = [
                s for s in self.catalog.values() if s.id == ref or (not by_id and s.name == ref)
            ]
        return found[0] if found else None

    def snapshot(self, request: Request, box: Box) -> Response:
        body = request.json()
        name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str) or not name.strip():
            return api_error(400, "name must be a string")
        state = box.extra["state"]
        if state not in ("started", "stopped") or box.local is None:
            return api_error(
                400, "Sandbox must be in started or stopped state to create a snapshot"
            )
        box.extra["state"] = "snapshotting"
        self.backend.in_background(self._snapshot, box, name, state)
        return Response.json(200, self.dto(box))

    def _snapshot(self, box: Box, name: str, state: str) -> None:
        """Copy the files, keep the snapshot unless its name is taken, and put the sandbox back
        in its state either way (Daytona's runner only logs a failed snapshot)."""
        local = None
        with contextlib.suppress(ProviderError):
            if box.local is not None:  # not killed meanwhile
                local = self.backend.local.snapshot(box.local)
        with self._lock:
            kept = local is not None and name not in self.catalog
            if kept:
                self.catalog[name] = Snapshot(
                    name,
                    local,
                    box.id,
                    box.cpus,
                    box.memory_mib // 1024,
                    box.extra["sandbox_class"],
                )
        if local is not None and not kept:
            self.backend.local.delete_snapshot(local)
        if box.extra["state"] == "snapshotting":
            box.extra["state"] = state

    def list_snapshots(self, request: Request) -> Response:
        try:
            page, limit = int(request.arg("page") or 1), int(request.arg("limit") or 100)
        except ValueError:
            return api_error(400, "page and limit must be integers")
        if page < 1 or not 1 <= limit <= 200:
            return api_error(400, "page must be at least 1, limit between 1 and 200")
        with self._lock:
            found = sorted(self.catalog.values(), key=lambda s: s.created_at, reverse=True)
        pages = max(1, -(-len(found) // limit))
        items = [s.dto() for s in found[(page - 1) * limit : page * limit]]
        answer = {"items": items, "total": len(found), "page": page, "totalPages": pages}
        return Response.json(200, answer)

    def snapshot_call(self, method: str, ref: str) -> Response:
        """GET by id or name; DELETE by id only (the API parses it as a UUID)."""
        if method == "DELETE" and not UUID.match(ref):
            return api_error(400, "Validation failed (uuid is expected)")
        made = self.find_snapshot(ref, by_id=method == "DELETE")
        if made is None:
            return api_error(404, f"Snapshot {ref} not found")
        if method == "GET":
            return Response.json(200, made.dto())
        made.state = "removing"
        self.backend.in_background(self._remove, made)
        return Response(200)

    def _remove(self, made: Snapshot) -> None:
        with self._lock:
            self.catalog.pop(made.name, None)
        if made.local is not None:
            self.backend.local.delete_snapshot(made.local)

    def fork(self, request: Request, source: Box) -> Response:
        body = request.json() if request.body else {}
        name = body.get("name") if isinstance(body, dict) else 0
        if name is not None and not isinstance(name, str):
            return api_error(400, "name must be a string")
        if source.extra["sandbox_class"] not in FORKABLE:
            return api_error(422, "Forking is not supported for this sandbox")
        if source.extra["state"] != "started" or source.local is None:
            return api_error(400, "Sandbox must be in started state to fork")
        try:
            self.backend.admit()
        except Busy as exc:
            return api_error(429, str(exc), {"Retry-After": str(exc.retry_after_s)})
        try:
            local = self.backend.local.snapshot(source.local)
        except ProviderError as exc:
            return api_error(500, f"Failed to fork sandbox: {exc}")
        box = self.backend.reserve(
            max(1.0, source.expires_at - time.time()),
            label=source.label,
            metadata=source.metadata,
            cpus=source.cpus,
            memory_mib=source.memory_mib,
        )
        box.extra.update(
            {k: source.extra[k] for k in ("snapshot", "stop_min", "target", "sandbox_class")},
            state="creating",
            body={**source.extra["body"], "name": name},
            sessions={},
        )
        self.backend.in_background(self._fork, box, local)
        return Response.json(200, self.dto(box))

    def _fork(self, box: Box, local: str) -> None:
        try:
            self._provision(box, None, local)
        finally:
            self.backend.local.delete_snapshot(local)

    # -- toolbox ---------------------------------------------------------------------------------

    def handle_toolbox(self, request: Request) -> Response:
        match = TOOLBOX_PATH.match(request.path)
        if not match:
            return toolbox_error(404, "NOT_FOUND", "no such route", request)
        if not self._authorized(request):
            return toolbox_error(401, "UNAUTHORIZED", "invalid credentials", request)
        box = self.backend.get(match.group(1))
        if box is None or box.extra.get("state") != "started" or not self.backend.ready(box):
            return Response(502, b"Bad Gateway", {"Content-Type": "text/plain"})
        if box.extra["stop_min"]:  # activity postpones the auto-stop
            self.backend.set_timeout(box, box.extra["stop_min"] * 60)
        path = match.group(2)
        if path == "/process/execute" and request.method == "POST":
            return self.execute(request, box)
        if path.startswith("/process/session"):
            return self.session(request, box, path)
        if path == "/files/bulk-upload" and request.method == "POST":
            return self.bulk_upload(request, box)
        if path == "/files/bulk-download" and request.method == "POST":
            return self.bulk_download(request, box)
        return toolbox_error(404, "NOT_FOUND", f"no route {request.method} {path}", request)

    def bulk_upload(self, request: Request, box: Box) -> Response:
        """Multipart fields `files[i].path` and parts `files[i].file`, as the SDK sends them."""
        fields = _multipart(request.headers.get("content-type", ""), request.body)
        paths = {k[: -len(".path")]: v for k, v in fields.items() if k.endswith(".path")}
        if not paths:
            return toolbox_error(400, "BAD_REQUEST", "no files[i].path fields", request)
        for key, target in paths.items():
            data = fields.get(key + ".file")
            if data is None:
                return toolbox_error(400, "BAD_REQUEST", f"{key}.file is missing", request)
            problem = self.backend.write_file(box, target.decode(errors="replace"), data)
            if problem:
                return toolbox_error(400, "BAD_REQUEST", problem, request)
        return Response(200)

    def bulk_download(self, request: Request, box: Box) -> Response:
        """A multipart answer: a `file` part per path found, an `error` part (JSON) otherwise."""
        paths = (request.json() or {}).get("paths")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            return toolbox_error(400, "BAD_REQUEST", "paths must be a list of strings", request)
        boundary = secrets.token_hex(16)
        body = bytearray()
        for path in paths:
            data = self.backend.read_file(box, path)
            if data is None:
                name, kind = "error", "application/json"
                data = json.dumps(
                    {
                        "message": f"file not found: {path}",
                        "statusCode": 404,
                        "code": "FILE_NOT_FOUND",
                    }
                ).encode()
            else:
                name, kind = "file", "application/octet-stream"
            body += (
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                f'filename="{path}"\r\nContent-Type: {kind}\r\n\r\n'
            ).encode()
            body += data + b"\r\n"
        body += f"--{boundary}--\r\n".encode()
        content_type = f"multipart/form-data; boundary={boundary}"
        return Response(200, bytes(body), {"Content-Type": content_type})

    def execute(self, request: Request, box: Box) -> Response:
        body = request.json() or {}
        command = body.get("command")
        if not isinstance(command, str) or not command.strip():
            return toolbox_error(
                400, "BAD_REQUEST", "command cannot be empty or whitespace-only", request
            )
        timeout = body.get("timeout") or DEFAULT_EXEC_TIMEOUT_S
        process = self.backend.spawn(
            box,
            ["/bin/sh", "-c", "exec 2>&1\n" + command],
            env=body.get("envs") or None,
            workdir=body.get("cwd"),
        )
        if not process.done.wait(timeout):
            self.backend.signal(box, process)
            process.done.wait(10)
            return toolbox_error(408, "REQUEST_TIMEOUT", "command execution timeout", request)
        if process.result is None:
            return Response.json(200, {"exitCode": -1, "result": process.error or ""})
        result = process.result
        merged = (result.stdout + result.stderr).decode(errors="replace")
        return Response.json(200, {"exitCode": result.exit_code, "result": merged})

    def session(self, request: Request, box: Box, path: str) -> Response:
        sessions = box.extra["sessions"]
        if path == "/process/session" and request.method == "POST":
            session_id = (request.json() or {}).get("sessionId")
            if not session_id or session_id in sessions:
                return toolbox_error(
                    409 if session_id else 400,
                    "CONFLICT" if session_id else "BAD_REQUEST",
                    "session exists or has no id",
                    request,
                )
            sessions[session_id] = {}
            return Response(201)
        match = SESSION_PATH.match(path)
        if not match or match.group(1) not in sessions:
            return toolbox_error(404, "NOT_FOUND", "session not found", request)
        commands = sessions[match.group(1)]
        if match.group(2) and request.method == "POST":
            body = request.json() or {}
            if not isinstance(body.get("command"), str):
                return toolbox_error(400, "BAD_REQUEST", "command is required", request)
            command_id = str(uuid.uuid4())
            process = self.backend.spawn(box, ["/bin/sh", "-c", body["command"]])
            commands[command_id] = (body["command"], process)
            if body.get("runAsync") or body.get("async"):
                return Response.json(202, {"cmdId": command_id})
            process.done.wait()
            return Response.json(200, {"cmdId": command_id, **self._outcome(process)})
        if match.group(3) and request.method == "GET":
            if match.group(3) not in commands:
                return toolbox_error(404, "NOT_FOUND", "command not found", request)
            command, process = commands[match.group(3)]
            outcome = self._outcome(process)
            if match.group(4):
                outcome.pop("exitCode", None)
                return Response.json(200, outcome)
            item = {"id": match.group(3), "command": command}
            if "exitCode" in outcome:
                item["exitCode"] = outcome["exitCode"]
            return Response.json(200, item)
        if not match.group(2) and request.method == "DELETE":
            for _, process in sessions.pop(match.group(1)).values():
                if not process.done.is_set():
                    self.backend.signal(box, process)
            return Response(204)
        return toolbox_error(404, "NOT_FOUND", f"no route {request.method} {path}", request)

    @staticmethod
    def _outcome(process) -> dict:
        if not process.done.is_set():
            return {"output": "", "stdout": "", "stderr": ""}
        result = process.result
        if result is None:
            return {"exitCode": -1, "output": "", "stdout": "", "stderr": process.error or ""}
        stdout = result.stdout.decode(errors="replace")
        stderr = result.stderr.decode(errors="replace")
        return {
            "exitCode": result.exit_code,
            "output": stdout + stderr,
            "stdout": stdout,
            "stderr": stderr,
        }


def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    """A multipart/form-data body's parts by field name."""
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    found: dict[str, bytes] = {}
    if not message.is_multipart():
        return found
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            found[name] = payload
    return found


def _oversized_part() -> Response:
    """The bulk download's multipart answer with one `file` part of hostile.OVERSIZED bytes."""
    boundary = "boxbench-oversized"

    def body():
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            'filename="/tmp/anything"\r\nContent-Type: application/octet-stream\r\n\r\n'
        ).encode()
        yield from hostile.oversized_body()
        yield f"\r\n--{boundary}--\r\n".encode()

    return Response(200, body(), {"Content-Type": f"multipart/form-data; boundary={boundary}"})
