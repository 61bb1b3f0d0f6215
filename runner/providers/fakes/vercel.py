"""A loopback fake of Vercel Sandbox's REST API, as the SDK speaks it (vercel/sandbox
packages/vercel-sandbox/src/api-client/{api-client,validators}.ts).

Every call needs `Authorization: Bearer <token>` and the `teamId` query parameter (403 without,
in Vercel's error body `{"error": {"code", "message"}}`). POST /v1/sandboxes answers at once with
status `pending`; the sandbox is `running` after `create_delay_s` (or `failed` when a failure is
planted), so a client must poll. `timeout` (ms) is enforced: the sandbox is stopped then. Stop
is the only way to end a sandbox; stopped sandboxes stay listed and answer GET with status
`stopped`. Commands: `/cmd` with `wait: true` answers ndjson (the command, then the command with
its exit code), without it the command (exitCode null) at once; `/cmd/{id}?wait=true` blocks;
logs are ndjson. Files: `fs/write` takes a gzip tar extracted under `x-cwd`, `fs/read` answers
404 for a missing file.

Not in the SDK's source, so boxbench's assumption: commands and files on a sandbox that is not
running answer 410 with code `sandbox_stopped`; the edge answers 502 when injected (server.Faults).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import secrets
import tarfile
import time
import uuid
from pathlib import Path

from runner.providers.base import ProviderError
from runner.providers.fakes import hostile
from runner.providers.fakes.backend import Backend, Box, Busy
from runner.providers.fakes.server import FakeHTTPServer, Request, Response

SANDBOX_PATH = re.compile(r"^/v1/sandboxes/([^/]+)(?:/(.+))?$")
COMMAND_PATH = re.compile(r"^cmd/([^/]+)(/logs)?$")
KILL_PATH = re.compile(r"^([^/]+)/kill$")
NDJSON = "application/x-ndjson"


def _read_member(archive: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = archive.extractfile(member)  # a regular file's member always has a handle
    return handle.read() if handle is not None else b""


def error(status: int, code: str, message: str, headers: dict | None = None) -> Response:
    return Response.json(status, {"error": {"code": code, "message": message}}, headers)


class VercelFake:
    def __init__(
        self,
        root: str | Path,
        *,
        create_delay_s: float = 0.2,
        max_concurrent: int = 20,
        create_rate_per_s: float | None = None,
        idle_timeout_s: float = 300.0,
    ):
        self.token = "vcp_" + secrets.token_hex(20)
        self.team_id = "team_" + secrets.token_hex(10)
        self.project_id = "prj_" + secrets.token_hex(10)
        self.root = Path(root)
        self.backend = Backend(
            root, max_concurrent=max_concurrent, create_rate_per_s=create_rate_per_s, prefix="sbx_"
        )
        self.create_delay_s = create_delay_s
        self.fail_next_create = False
        self.records: dict[str, Box] = {}  # every sandbox ever made: stopped ones stay listed
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

    def adapter_settings(self) -> dict:
        return {
            "api_url": self.api.url + "/api",
            "token": self.token,
            "team_id": self.team_id,
            "project_id": self.project_id,
            "poll_interval_s": 0.02,
            "ledger_dir": str(self.root / "ledgers"),
        }

    def hostile(self, mode: str) -> None:
        """Answer as a broken or hostile Vercel would (fakes/hostile.py); the adapter lists from
        its own ledger, so there is no listing to make endless."""
        if mode == hostile.CALM:
            self.api.faults.clear()
        elif mode == "missing_id":
            body = {"sandbox": {"status": "running", "region": "iad1"}}
            self.api.faults.add("POST", "^/api/v1/sandboxes$", status=200, body=body)
        elif mode == "not_json":
            self.api.faults.add("POST", "^/api/v1/sandboxes$", answer=lambda r: hostile.html())
        elif mode == "oversized_download":
            self.api.faults.add("POST", "/fs/read$", answer=lambda r: hostile.oversized_download())
        else:
            raise hostile.unknown(mode, "vercel")

    # -- routing ---------------------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        if (
            request.headers.get("authorization") != f"Bearer {self.token}"
            or request.arg("teamId") != self.team_id
        ):
            return error(403, "forbidden", "Not authorized")
        path = request.path.removeprefix("/api")
        if path == "/v1/sandboxes":
            if request.method == "POST":
                return self.create(request)
            if request.method == "GET":
                return self.list(request)
        match = SANDBOX_PATH.match(path)
        if not match:
            return error(404, "not_found", f"Cannot {request.method} {path}")
        box = self._find(match.group(1))
        if box is None:
            return error(404, "not_found", f"Sandbox {match.group(1)} not found")
        rest = match.group(2)
        if rest is None and request.method == "GET":
            return Response.json(200, {"sandbox": self.dto(box), "routes": []})
        if rest == "stop" and request.method == "POST":
            return self.stop_box(box)
        if self.status(box) != "running":
            return error(410, "sandbox_stopped", f"Sandbox {box.id} is {self.status(box)}")
        if rest == "cmd" and request.method == "POST":
            return self.command(request, box)
        command = COMMAND_PATH.match(rest or "")
        if command and request.method == "GET":
            return self.command_status(request, box, command.group(1), bool(command.group(2)))
        kill = KILL_PATH.match(rest or "")
        if kill and request.method == "POST" and kill.group(1) in box.extra["commands"]:
            return self.kill(request, box, kill.group(1))
        if rest == "fs/write" and request.method == "POST":
            return self.write(request, box)
        if rest == "fs/read" and request.method == "POST":
            target = (request.json() or {}).get("path")
            data = self.backend.read_file(box, target) if isinstance(target, str) else None
            if data is None:
                return error(404, "file_not_found", f"File {target} not found")
            return Response(200, data, {"Content-Type": "application/octet-stream"})
        return error(404, "not_found", f"Cannot {request.method} {path}")

    def _find(self, box_id: str) -> Box | None:
        self.backend.get(box_id)  # retires it if past its timeout
        return self.records.get(box_id)

    def status(self, box: Box) -> str:
        if box.state in ("running", "creating"):
            return box.extra["status"]
        if box.state == "failed":
            return "failed"
        return "stopped"  # stopped by a client, or at its timeout

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, request: Request) -> Response:
        body = request.json()
        if not isinstance(body, dict) or body.get("projectId") != self.project_id:
            return error(400, "bad_request", "projectId must name a project of the team")
        timeout = body.get("timeout", 300_000)
        vcpus = (body.get("resources") or {}).get("vcpus", 2)
        if not isinstance(timeout, int) or timeout < 1 or vcpus not in (1, 2, 4, 8):
            return error(400, "bad_request", "timeout must be milliseconds, vcpus 1, 2, 4 or 8")
        try:
            self.backend.admit()
        except Busy as exc:
            return error(
                429, "too_many_requests", str(exc), {"Retry-After": str(exc.retry_after_s)}
            )
        box = self.backend.reserve(timeout / 1000, cpus=vcpus, memory_mib=vcpus * 2048)
        box.extra.update(
            status="pending",
            body=body,
            commands={},
            timeout=timeout,
            requested=int(time.time() * 1000),
        )
        self.records[box.id] = box
        failure, self.fail_next_create = self.fail_next_create, False
        self.backend.in_background(self._provision, box, failure)
        return Response.json(200, {"sandbox": self.dto(box), "routes": []})

    def _provision(self, box: Box, failure: bool) -> None:
        if not self.backend.sleep_unless_closed(self.create_delay_s):
            return
        if failure:
            box.state = "failed"
            return
        policy = (box.extra["body"].get("networkPolicy") or {}).get("mode", "allow-all")
        try:
            self.backend.start(box, network=policy != "deny-all")
        except ProviderError:
            return
        box.extra["status"] = "running"
        box.extra["started"] = int(time.time() * 1000)

    def stop_box(self, box: Box) -> Response:
        if box.state in ("running", "creating"):
            box.extra["status"] = "stopping"
            self.backend.in_background(self.backend.kill, box, "stopped")
        return Response.json(200, {"sandbox": self.dto(box)})

    def dto(self, box: Box) -> dict:
        created = int(box.created_at.timestamp() * 1000)
        item = {
            "id": box.id,
            "memory": box.memory_mib,
            "vcpus": box.cpus,
            "region": "iad1",
            "runtime": box.extra["body"].get("runtime") or "node22",
            "timeout": box.extra["timeout"],
            "status": self.status(box),
            "requestedAt": box.extra["requested"],
            "createdAt": created,
            "cwd": "/vercel/sandbox",
            "updatedAt": int(time.time() * 1000),
        }
        if "started" in box.extra:
            item["startedAt"] = box.extra["started"]
        if item["status"] == "stopped":
            item["stoppedAt"] = int(time.time() * 1000)
        return item

    def list(self, request: Request) -> Response:
        if request.arg("project") != self.project_id:
            return error(400, "bad_request", "project must name a project of the team")
        for box_id in list(self.records):
            self._find(box_id)
        boxes = sorted(self.records.values(), key=lambda b: b.created_at, reverse=True)
        limit = int(request.arg("limit") or 50)
        page = [self.dto(b) for b in boxes[:limit]]
        return Response.json(
            200, {"sandboxes": page, "pagination": {"count": len(page), "next": None, "prev": None}}
        )

    # -- commands and files ----------------------------------------------------------------------

    def command_dto(self, box: Box, command_id: str) -> dict:
        body, process, started = box.extra["commands"][command_id]
        code = None
        if process.done.is_set():
            code = process.result.exit_code if process.result is not None else -1
            if process.killed:
                code = 137
        return {
            "id": command_id,
            "name": body["command"],
            "args": body.get("args") or [],
            "cwd": body.get("cwd") or "/vercel/sandbox",
            "sandboxId": box.id,
            "exitCode": code,
            "startedAt": started,
        }

    def command(self, request: Request, box: Box) -> Response:
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("command"), str):
            return error(400, "bad_request", "command is required")
        command_id = "cmd_" + uuid.uuid4().hex[:20]
        process = self.backend.spawn(
            box,
            [body["command"], *(body.get("args") or [])],
            env=body.get("env") or None,
            workdir=body.get("cwd"),
        )
        box.extra["commands"][command_id] = (body, process, int(time.time() * 1000))
        if not body.get("wait"):
            return Response.json(200, {"command": self.command_dto(box, command_id)})

        def lines():
            yield json.dumps({"command": self.command_dto(box, command_id)}).encode() + b"\n"
            process.done.wait()
            yield json.dumps({"command": self.command_dto(box, command_id)}).encode() + b"\n"

        return Response(200, lines(), {"Content-Type": NDJSON})

    def command_status(self, request: Request, box: Box, command_id: str, logs: bool) -> Response:
        if command_id not in box.extra["commands"]:
            return error(404, "not_found", f"Command {command_id} not found")
        _, process, _ = box.extra["commands"][command_id]
        if not logs:
            if request.arg("wait") == "true":
                process.done.wait()
            return Response.json(200, {"command": self.command_dto(box, command_id)})

        def lines():
            process.done.wait()
            if process.result is None:
                item = {
                    "stream": "error",
                    "data": {
                        "code": "command_failed",
                        "message": process.error or "the command could not run",
                    },
                }
                yield json.dumps(item).encode() + b"\n"
                return
            for stream in ("stdout", "stderr"):
                data = getattr(process.result, stream).decode(errors="replace")
                for at in range(0, len(data), 4096):
                    item = {"stream": stream, "data": data[at : at + 4096]}
                    yield json.dumps(item).encode() + b"\n"

        return Response(200, lines(), {"Content-Type": NDJSON})

    def kill(self, request: Request, box: Box, command_id: str) -> Response:
        signal = (request.json() or {}).get("signal", 15)
        _, process, _ = box.extra["commands"][command_id]
        if not process.done.is_set():
            self.backend.signal(box, process, {9: "KILL", 15: "TERM"}.get(signal, "KILL"))
        return Response.json(200, {"command": self.command_dto(box, command_id)})

    def write(self, request: Request, box: Box) -> Response:
        if request.headers.get("content-type") != "application/gzip":
            return error(400, "bad_request", "the body must be a gzip tar (application/gzip)")
        directory = request.headers.get("x-cwd") or "/vercel/sandbox"
        try:
            raw = io.BytesIO(gzip.decompress(request.body))
            with tarfile.open(fileobj=raw, mode="r") as archive:
                members = [(m, _read_member(archive, m)) for m in archive if m.isfile()]
        except (OSError, tarfile.TarError, EOFError) as exc:
            return error(400, "bad_request", f"the body is not a gzip tar: {exc}")
        for member, data in members:
            target = str(Path(directory) / member.name)
            problem = self.backend.write_file(box, target, data)
            if problem:
                return error(400, "bad_request", f"cannot write {target}: {problem}")
        return Response.json(200, {})
