"""A loopback fake of Vercel Sandbox's API as its Python SDK speaks it (`vercel-sandbox` 0.10.0:
vercel/sandbox/_internal/api_client.py for the routes and bodies, its pydantic payload models for
the answers).

Sandboxes are named; each run of one is a session (a microVM). Every call needs `Authorization:
Bearer <token>` (401 without one, 403 with a wrong one) and the `teamId` query parameter (403 for
another team), and errors come in Vercel's body `{"error": {"code", "message"}}`.

- POST /v3/sandboxes answers at once, sandbox and session `pending`; the session is `running`
  after `create_delay_s` (or `failed` when a failure is planted), so a client polls GET
  /v2/sandboxes/{name}. The session's `timeout` (ms) is enforced: it is stopped then. At the plan
  limits it answers 429 with Retry-After; `documented_limits()` are the Hobby plan's (10 at once,
  40 vCPU allocated per 10 minutes, so 20 sandboxes of 2 vCPU), which demo runs enforce.
- GET /v2/sandboxes lists by project, newest first, `tags=key:value` filtering, paged by `cursor`;
  DELETE /v2/sandboxes/{name} stops its session and forgets the sandbox (404 from then on), with
  the snapshots taken of it when `deleteOrphanSnapshots=true`. `resume=true` on GET starts a new
  session of a stopped sandbox, from its current snapshot when it has one.
- Sessions: GET, POST …/stop, POST …/snapshot (the files become a snapshot and the session stops,
  as Vercel's snapshots do), `cmd` (with `wait` and `logs`: one ndjson stream of the command, its
  output, then the command with its exit code; without: the command at once), `cmd/{id}` (`wait`
  blocks), `cmd/{id}/logs`, `cmd/{id}/kill`, `fs/read` (404 `file_not_found`), `fs/write` (a gzip
  tar under `x-cwd`), `fs/mkdir`. A command's `timeout` (ms) kills it with SIGKILL. Calls on a
  session that is not running answer 410 `sandbox_stopped`.
- Snapshots: GET /v2/sandboxes/snapshots (by project, `name` = the sandbox's), GET and DELETE
  /v2/sandboxes/snapshots/{id}; a restore is a create with source `{type: snapshot, snapshotId}`.

Not in the SDK's source, so boxbench's assumptions: the exit code of a killed command is 137; a
deleted snapshot answers 404; stdin (`attachStdin`) is not served (400).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import secrets
import tarfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from posixpath import join as posix_join

from runner.providers.base import ProviderError
from runner.providers.fakes import hostile
from runner.providers.fakes.backend import Backend, Box, Busy, CreateWindow, FakeProcess
from runner.providers.fakes.server import FakeHTTPServer, Request, Response

SANDBOX_PATH = re.compile(r"^/v2/sandboxes/([^/]+)$")
SESSION_PATH = re.compile(r"^/v2/sandboxes/sessions/([^/]+)(?:/(.+))?$")
SNAPSHOT_PATH = re.compile(r"^/v2/sandboxes/snapshots/([^/]+)$")
COMMAND_PATH = re.compile(r"^cmd/([^/]+)(/logs|/kill)?$")
NDJSON = "application/x-ndjson"
HOME = "/vercel/sandbox"
KILLED = 137  # 128 + SIGKILL
LIVE = {"pending", "running", "stopping", "snapshotting"}


def error(status: int, code: str, message: str, headers: dict | None = None) -> Response:
    return Response.json(status, {"error": {"code": code, "message": message}}, headers)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _line(item: dict) -> bytes:
    return json.dumps(item).encode() + b"\n"


def _page(request: Request, key: str, found: list) -> Response:
    """One page of a listing: `limit` items (1 to 100) from `cursor`, an offset."""
    try:
        limit = int(request.arg("limit") or 50)
        start = int(request.arg("cursor") or 0)
    except ValueError:
        return error(400, "bad_request", "limit and cursor must be integers")
    if not 1 <= limit <= 100 or start < 0:
        return error(400, "bad_request", "limit must be between 1 and 100")
    page = found[start : start + limit]
    more = start + limit < len(found)
    pagination = {"count": len(page), "next": str(start + limit) if more else None, "prev": None}
    return Response.json(200, {key: page, "pagination": pagination})


def _member_bytes(archive: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = archive.extractfile(member)  # a regular file's member always has a handle
    return handle.read() if handle is not None else b""


@dataclass
class Session:
    """One run of a sandbox: the backend box (a local sandbox) from its start to its stop."""

    id: str
    name: str
    box: Box
    requested: int
    commands: dict[str, tuple[dict, FakeProcess, int]] = field(default_factory=dict)
    started: int | None = None
    stopped: int | None = None
    provisioned: threading.Event = field(default_factory=threading.Event)


@dataclass
class Record:
    """A named sandbox, which outlives its sessions."""

    name: str
    body: dict
    tags: dict
    vcpus: int
    timeout: int
    created: int
    sessions: list[Session] = field(default_factory=list)
    current_snapshot: str | None = None

    @property
    def session(self) -> Session:
        return self.sessions[-1]


@dataclass
class Snapshot:
    id: str
    sandbox: str
    session: str
    local: str  # the local provider's snapshot that holds the files
    size: int
    created: int
    vcpus: int

    def payload(self, status: str = "created") -> dict:
        return {
            "id": self.id,
            "sourceSessionId": self.session,
            "region": "iad1",
            "status": status,
            "sizeBytes": self.size,
            "createdAt": self.created,
            "updatedAt": self.created,
        }


class VercelFake:
    @staticmethod
    def documented_limits() -> dict:
        """Hobby (runner/provider_declarations/vercel.yaml), its vCPU allocation as creates of
        2 vCPU."""
        return {"max_concurrent": 10, "create_window": CreateWindow(20, 600.0)}

    def __init__(
        self,
        root: str | Path,
        *,
        create_delay_s: float = 0.2,
        max_concurrent: int | None = 20,
        create_rate_per_s: float | None = None,
        create_window: CreateWindow | None = None,
        idle_timeout_s: float = 300.0,
    ):
        self.token = "vcp_" + secrets.token_hex(20)
        self.team_id = "team_" + secrets.token_hex(10)
        self.project_id = "prj_" + secrets.token_hex(10)
        self.root = Path(root)
        self.backend = Backend(
            root,
            max_concurrent=max_concurrent,
            create_rate_per_s=create_rate_per_s,
            create_window=create_window,
            prefix="sbx_",
        )
        self.create_delay_s = create_delay_s
        self.fail_next_create = False
        self.records: dict[str, Record] = {}  # by name; a deleted sandbox is forgotten
        self.sessions: dict[str, Session] = {}
        self.snapshots: dict[str, Snapshot] = {}
        self._lock = threading.RLock()
        self.api = FakeHTTPServer(self.handle, idle_timeout_s, "vercel-api")

    @property
    def api_key(self) -> str:  # the name the shared tests plant a key under
        return self.token

    @api_key.setter
    def api_key(self, value: str) -> None:
        self.token = value

    def start(self) -> VercelFake:
        self.api.start()
        return self

    def stop(self) -> None:
        self.api.stop()
        self.backend.close()
        for snapshot in list(self.snapshots.values()):
            self.backend.local.delete_snapshot(snapshot.local)

    def adapter_settings(self) -> dict:
        return {
            "api_url": self.api.url + "/api",
            "token": self.token,
            "team_id": self.team_id,
            "project_id": self.project_id,
        }

    def hostile(self, mode: str) -> None:
        """Answer as a broken or hostile Vercel would (fakes/hostile.py)."""
        if mode == hostile.CALM:
            self.api.faults.clear()
        elif mode == "endless_listing":
            self.api.faults.add(
                "GET", "^/api/v2/sandboxes$", times=hostile.PAGES, answer=self._endless_page
            )
        elif mode == "missing_id":
            body = {"sandbox": {"status": "running", "region": "iad1"}, "routes": []}
            self.api.faults.add("POST", "^/api/v3/sandboxes$", status=200, body=body)
        elif mode == "not_json":
            self.api.faults.add("POST", "^/api/v3/sandboxes$", answer=lambda r: hostile.html())
        elif mode == "oversized_download":
            self.api.faults.add("POST", "/fs/read$", answer=lambda r: hostile.oversized_download())
        else:
            raise hostile.unknown(mode, "vercel")

    def _endless_page(self, request: Request) -> Response:
        # A full page of fresh sandboxes: the SDK stops at an empty page even when a cursor
        # follows, and a client that bounds items rather than pages must see them add up.
        names = [
            "sbx-" + hostile.fresh_token()[:12] for _ in range(int(request.arg("limit") or 50))
        ]
        items = [{"name": n, "currentSessionId": "sess_" + n, "status": "running"} for n in names]
        pagination = {"count": len(items), "next": hostile.fresh_token(), "prev": None}
        return Response.json(200, {"sandboxes": items, "pagination": pagination})

    # -- routing ---------------------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        given = request.headers.get("authorization")
        if not given:
            return error(401, "unauthorized", "Missing Authorization header")
        if given != f"Bearer {self.token}":
            return error(403, "forbidden", "Not authorized: the token is invalid")
        if request.arg("teamId") != self.team_id:
            return error(403, "forbidden", "Not authorized for this team")
        return self._route(request, request.path.removeprefix("/api"), request.method)

    def _route(self, request: Request, path: str, method: str) -> Response:
        if path == "/v3/sandboxes" and method == "POST":
            with self._lock:
                return self.create(request)
        if path == "/v2/sandboxes" and method == "GET":
            return self.list_sandboxes(request)
        if path == "/v2/sandboxes/snapshots" and method == "GET":
            return self.list_snapshots(request)
        if match := SNAPSHOT_PATH.match(path):
            return self.snapshot_route(method, match.group(1))
        if match := SESSION_PATH.match(path):
            session = self.sessions.get(match.group(1))
            if session is None:
                return error(404, "not_found", f"Session {match.group(1)} not found")
            return self.session_route(request, session, match.group(2) or "")
        if match := SANDBOX_PATH.match(path):
            record = self._find(match.group(1))
            if record is None or request.arg("projectId") != self.project_id:
                return error(404, "not_found", f"Sandbox {match.group(1)} not found")
            if method == "GET":
                return self.get(request, record)
            if method == "DELETE":
                with self._lock:
                    return self.delete(request, record)
        return error(404, "not_found", f"Cannot {method} {path}")

    def _find(self, name: str) -> Record | None:
        record = self.records.get(name)
        if record is not None:
            self.backend.get(record.session.box.id)  # retires it if past its timeout
        return record

    def status(self, session: Session) -> str:
        box = session.box
        if box.state in ("running", "creating"):
            return box.extra["status"]
        return "failed" if box.state == "failed" else "stopped"

    # -- payloads --------------------------------------------------------------------------------

    def session_payload(self, session: Session) -> dict:
        record = self.records.get(session.name)
        box, status = session.box, self.status(session)
        item = {
            "id": session.id,
            "sourceSandboxName": session.name,
            "projectId": self.project_id,
            "status": status,
            "cwd": HOME,
            "region": "iad1",
            "memory": box.memory_mib,
            "vcpus": box.cpus,
            "timeout": record.timeout if record else 0,
            "requestedAt": session.requested,
        }
        if session.started is not None:
            item["startedAt"] = session.started
        if status not in LIVE:
            session.stopped = session.stopped or _now_ms()
            item["stoppedAt"] = session.stopped
        return item

    def sandbox_payload(self, record: Record) -> dict:
        session = record.session
        item = {
            "name": record.name,
            "currentSessionId": session.id,
            "status": self.status(session),
            "persistent": bool(record.body.get("persistent", False)),
            "projectId": self.project_id,
            "cwd": HOME,
            "region": "iad1",
            "memory": record.vcpus * 2048,
            "vcpus": record.vcpus,
            "timeout": record.timeout,
            "networkPolicy": {"mode": self._network(record.body)},
            "createdAt": record.created,
            "updatedAt": _now_ms(),
            "tags": record.tags,
        }
        if record.current_snapshot:
            item["currentSnapshotId"] = record.current_snapshot
        return item

    def answer(self, record: Record, **more) -> Response:
        body = {
            "sandbox": self.sandbox_payload(record),
            "session": self.session_payload(record.session),
            "routes": [],
            **more,
        }
        return Response.json(200, body)

    @staticmethod
    def _network(body: dict) -> str:
        policy = body.get("networkPolicy")
        return policy.get("mode", "allow-all") if isinstance(policy, dict) else "allow-all"

    # -- sandboxes -------------------------------------------------------------------------------

    def create(self, request: Request) -> Response:
        body = request.json()
        if not isinstance(body, dict) or body.get("projectId") != self.project_id:
            return error(400, "bad_request", "projectId must name a project of the team")
        name = body.get("name") or "sbx-" + secrets.token_hex(8)
        timeout = body.get("timeout", 300_000)
        vcpus = (body.get("resources") or {}).get("vcpus", 2)
        tags = body.get("tags") or {}
        if not isinstance(timeout, int) or timeout < 1 or vcpus not in (1, 2, 4, 8):
            return error(400, "bad_request", "timeout must be milliseconds, vcpus 1, 2, 4 or 8")
        if not isinstance(tags, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in tags.items()
        ):
            return error(400, "bad_request", "tags must map strings to strings")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name):
            return error(400, "bad_request", f"invalid sandbox name {name!r}")
        if name in self.records:
            return error(409, "conflict", f"Sandbox {name} already exists")
        source = body.get("source")
        snapshot = None
        if source is not None:
            if not isinstance(source, dict) or source.get("type") != "snapshot":
                return error(400, "bad_request", "the fake serves only snapshot sources")
            snapshot = self.snapshots.get(str(source.get("snapshotId")))
            if snapshot is None:
                return error(404, "not_found", f"Snapshot {source.get('snapshotId')} not found")
        record = Record(name, body, dict(tags), vcpus, timeout, _now_ms())
        if snapshot is not None:
            record.current_snapshot = snapshot.id
        try:
            self._start_session(record, snapshot)
        except Busy as exc:
            return error(
                429, "too_many_requests", str(exc), {"Retry-After": str(exc.retry_after_s)}
            )
        self.records[name] = record
        return self.answer(record)

    def _start_session(self, record: Record, snapshot: Snapshot | None) -> Session:
        self.backend.admit()
        box = self.backend.reserve(
            record.timeout / 1000,
            cpus=record.vcpus,
            memory_mib=record.vcpus * 2048,
            box_id=record.name,
        )
        box.extra["status"] = "pending"
        session = Session("sess_" + secrets.token_hex(10), record.name, box, _now_ms())
        record.sessions.append(session)
        self.sessions[session.id] = session
        failure, self.fail_next_create = self.fail_next_create, False
        local = snapshot.local if snapshot else None
        self.backend.in_background(self._provision, record, session, failure, local)
        return session

    def _provision(self, record: Record, session: Session, failure: bool, local) -> None:
        try:
            self._boot(record, session, failure, local)
        finally:
            session.provisioned.set()

    def _boot(self, record: Record, session: Session, failure: bool, local) -> None:
        if not self.backend.sleep_unless_closed(self.create_delay_s):
            return
        box = session.box
        if failure:
            box.state = "failed"
            return
        try:
            self.backend.start(box, self._network(record.body) != "deny-all", local)
        except ProviderError:
            return
        box.extra["status"] = "running"
        session.started = _now_ms()

    def get(self, request: Request, record: Record) -> Response:
        """The sandbox; with `resume=true`, a stopped one gets a new session first, answered once
        it runs (the SDK's resume does not poll, and replays a call on it at once)."""
        with self._lock:
            if request.arg("resume") != "true" or self.status(record.session) in LIVE:
                return self.answer(record)
            snapshot = self.snapshots.get(record.current_snapshot or "")
            try:
                session = self._start_session(record, snapshot)
            except Busy as exc:
                return error(
                    429, "too_many_requests", str(exc), {"Retry-After": str(exc.retry_after_s)}
                )
        session.provisioned.wait(60)
        return self.answer(record, resumed=True)

    def delete(self, request: Request, record: Record) -> Response:
        self._stop(record.session)
        del self.records[record.name]
        if request.arg("deleteOrphanSnapshots") == "true":
            for snapshot in [s for s in self.snapshots.values() if s.sandbox == record.name]:
                self._forget_snapshot(snapshot)
        return Response.json(200, {"sandbox": self.sandbox_payload(record)})

    def _stop(self, session: Session) -> None:
        box = session.box
        if box.state in ("running", "creating"):
            box.extra["status"] = "stopping"
            self.backend.in_background(self.backend.kill, box, "stopped")

    def list_sandboxes(self, request: Request) -> Response:
        if request.arg("project") != self.project_id:
            return error(400, "bad_request", "project must name a project of the team")
        wanted = request.arg("tags")
        if wanted is not None and ":" not in wanted:
            return error(400, "bad_request", "tags must be key:value")
        key, _, value = (wanted or "").partition(":")
        found = [
            self.sandbox_payload(r)
            for r in sorted(self.records.values(), key=lambda r: r.created, reverse=True)
            if self._find(r.name) is not None and (wanted is None or r.tags.get(key) == value)
        ]
        return _page(request, "sandboxes", found)

    # -- sessions --------------------------------------------------------------------------------

    def session_route(self, request: Request, session: Session, rest: str) -> Response:
        method = request.method
        record = self.records.get(session.name)
        if rest == "" and method == "GET":
            return Response.json(200, {"session": self.session_payload(session)})
        if rest == "stop" and method == "POST":
            self._stop(session)
            body = {"session": self.session_payload(session)}
            if record is not None:
                body["sandbox"] = self.sandbox_payload(record)
            return Response.json(200, body)
        self.backend.get(session.box.id)  # retires it if past its timeout
        if self.status(session) != "running":
            return error(410, "sandbox_stopped", f"Session {session.id} is {self.status(session)}")
        if rest == "snapshot" and method == "POST" and record is not None:
            with self._lock:
                return self.snapshot(record, session)
        if rest == "cmd" and method == "POST":
            return self.command(request, session)
        if rest == "cmd" and method == "GET":
            items = [self.command_payload(session, c) for c in session.commands]
            return Response.json(200, {"commands": items})
        if (match := COMMAND_PATH.match(rest)) and match.group(1) in session.commands:
            command_id, action = match.group(1), match.group(2)
            if action is None and method == "GET":
                return self.command_status(request, session, command_id)
            if action == "/logs" and method == "GET":
                return Response(200, self._logs(session, command_id), {"Content-Type": NDJSON})
            if action == "/kill" and method == "POST":
                return self.kill(request, session, command_id)
        if rest == "fs/read" and method == "POST":
            return self.read(request, session)
        if rest == "fs/write" and method == "POST":
            return self.write(request, session)
        if rest == "fs/mkdir" and method == "POST":
            return self.mkdir(request, session)
        return error(404, "not_found", f"Cannot {method} {request.path}")

    def snapshot(self, record: Record, session: Session) -> Response:
        box = session.box
        if box.local is None:  # running, so backed by a local sandbox unless it just ended
            return error(410, "sandbox_stopped", f"Session {session.id} is stopping")
        box.extra["status"] = "snapshotting"
        try:
            local = self.backend.local.snapshot(box.local)
        except ProviderError:
            box.extra["status"] = "running"
            return error(500, "internal_server_error", "Could not create the snapshot")
        made = Snapshot(
            "snap_" + secrets.token_hex(10),
            record.name,
            session.id,
            local,
            sum(p.stat().st_size for p in self._local_files(local)),
            _now_ms(),
            record.vcpus,
        )
        self.snapshots[made.id] = made
        record.current_snapshot = made.id
        # Vercel stops the session it snapshots; the sandbox resumes from the snapshot.
        self.backend.kill(box, "stopped")
        body = {"snapshot": made.payload(), "session": self.session_payload(session)}
        return Response.json(200, body)

    def _local_files(self, local: str) -> list[Path]:
        from runner.providers.local import snapshots

        directory = snapshots.directory_of(self.backend.local.root, local)
        return [p for p in directory.rglob("*") if p.is_file()]

    # -- commands and files ----------------------------------------------------------------------

    def command_payload(self, session: Session, command_id: str) -> dict:
        body, process, started = session.commands[command_id]
        code = None
        if process.done.is_set():
            code = process.result.exit_code if process.result is not None else -1
            if process.killed:
                code = KILLED
        return {
            "id": command_id,
            "name": body["command"],
            "args": body.get("args") or [],
            "cwd": body.get("cwd") or HOME,
            "sessionId": session.id,
            "exitCode": code,
            "startedAt": started,
        }

    def command(self, request: Request, session: Session) -> Response:
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("command"), str):
            return error(400, "bad_request", "command is required")
        args, env, limit = body.get("args") or [], body.get("env") or {}, body.get("timeout")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            return error(400, "bad_request", "args must be strings")
        if not isinstance(env, dict) or (limit is not None and not isinstance(limit, int)):
            return error(400, "bad_request", "env must be an object, timeout milliseconds")
        if body.get("attachStdin"):
            return error(400, "bad_request", "the fake does not serve attachStdin")
        command_id = "cmd_" + uuid.uuid4().hex[:20]
        process = self.backend.spawn(
            session.box, [body["command"], *args], env=env or None, workdir=body.get("cwd")
        )
        session.commands[command_id] = (body, process, _now_ms())
        if limit is not None:
            timer = threading.Timer(limit / 1000, self._overdue, (session, process))
            timer.daemon = True
            timer.start()
        wait = body.get("wait") or request.arg("wait") == "true"
        logs = body.get("logs") or request.arg("logs") == "true"
        if not wait:
            return Response.json(200, {"command": self.command_payload(session, command_id)})

        def lines():
            yield _line({"command": self.command_payload(session, command_id)})
            if logs:
                yield from self._logs(session, command_id)
            else:
                process.done.wait()
            yield _line({"command": self.command_payload(session, command_id)})

        return Response(200, lines(), {"Content-Type": NDJSON})

    def _overdue(self, session: Session, process: FakeProcess) -> None:
        if not process.done.is_set():
            self.backend.signal(session.box, process, "KILL")

    def command_status(self, request: Request, session: Session, command_id: str) -> Response:
        process = session.commands[command_id][1]
        if request.arg("wait") == "true":
            process.done.wait()
        return Response.json(200, {"command": self.command_payload(session, command_id)})

    def _logs(self, session: Session, command_id: str):
        process = session.commands[command_id][1]
        process.done.wait()
        if process.result is None:
            failure = {"code": "command_failed", "message": process.error or "could not run"}
            yield _line({"stream": "error", "data": failure})
            return
        for stream in ("stdout", "stderr"):
            data = getattr(process.result, stream).decode(errors="replace")
            for at in range(0, len(data), 4096):
                yield _line({"stream": stream, "data": data[at : at + 4096]})

    def kill(self, request: Request, session: Session, command_id: str) -> Response:
        signal = (request.json() or {}).get("signal", 15)
        process = session.commands[command_id][1]
        if not process.done.is_set():
            name = {9: "KILL", 15: "TERM"}.get(signal, "KILL")
            self.backend.signal(session.box, process, name)
        return Response.json(200, {"command": self.command_payload(session, command_id)})

    def _path(self, body) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("path"), str):
            return None
        cwd = body.get("cwd")
        return posix_join(cwd if isinstance(cwd, str) else HOME, body["path"])

    def read(self, request: Request, session: Session) -> Response:
        target = self._path(request.json())
        if target is None:
            return error(400, "bad_request", "path is required")
        data = self.backend.read_file(session.box, target)
        if data is None:
            return error(404, "file_not_found", f"File {target} not found")
        return Response(200, data, {"Content-Type": "application/octet-stream"})

    def write(self, request: Request, session: Session) -> Response:
        if request.headers.get("content-type") != "application/gzip":
            return error(400, "bad_request", "the body must be a gzip tar (application/gzip)")
        directory = request.headers.get("x-cwd") or HOME
        try:
            raw = io.BytesIO(gzip.decompress(request.body))
            with tarfile.open(fileobj=raw, mode="r") as archive:
                members = [(m, _member_bytes(archive, m)) for m in archive if m.isfile()]
        except (OSError, tarfile.TarError, EOFError) as exc:
            return error(400, "bad_request", f"the body is not a gzip tar: {exc}")
        for member, data in members:
            target = posix_join(directory, member.name)
            problem = self.backend.write_file(session.box, target, data)
            if problem:
                return error(400, "bad_request", f"cannot write {target}: {problem}")
        return Response.json(200, {})

    def mkdir(self, request: Request, session: Session) -> Response:
        target = self._path(request.json())
        if target is None:
            return error(400, "bad_request", "path is required")
        made = self.backend.run(session.box, ["mkdir", "-p", "--", target], 30)
        if made.exit_code != 0:
            return error(400, "bad_request", f"cannot make {target}")
        return Response.json(200, {})

    # -- snapshots -------------------------------------------------------------------------------

    def list_snapshots(self, request: Request) -> Response:
        if request.arg("project") != self.project_id:
            return error(400, "bad_request", "project must name a project of the team")
        name = request.arg("name")
        found = [
            s.payload()
            for s in sorted(self.snapshots.values(), key=lambda s: s.created, reverse=True)
            if name is None or s.sandbox == name
        ]
        return _page(request, "snapshots", found)

    def snapshot_route(self, method: str, snapshot_id: str) -> Response:
        snapshot = self.snapshots.get(snapshot_id)
        if snapshot is None:
            return error(404, "not_found", f"Snapshot {snapshot_id} not found")
        if method == "GET":
            return Response.json(200, {"snapshot": snapshot.payload()})
        if method == "DELETE":
            with self._lock:
                self._forget_snapshot(snapshot)
            return Response.json(200, {"snapshot": snapshot.payload("deleted")})
        return error(404, "not_found", f"Cannot {method} this snapshot")

    def _forget_snapshot(self, snapshot: Snapshot) -> None:
        if self.snapshots.pop(snapshot.id, None) is not None:
            self.backend.local.delete_snapshot(snapshot.local)
