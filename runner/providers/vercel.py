"""`vercel`: Vercel Sandbox (Firecracker microVMs) over its REST API.

API (vercel/sandbox packages/vercel-sandbox/src/api-client), `Authorization: Bearer <token>` and
the team id as the `teamId` query parameter of every call: POST /v1/sandboxes answers with status
`pending`; create polls GET /v1/sandboxes/{id} until `running` (failing on `failed` or
`aborted`). The sandbox gets `timeout` = its lifetime in milliseconds, which Vercel enforces: it
is stopped then, even if the runner crashed. There are no labels, no metadata filter and no
delete, only POST /v1/sandboxes/{id}/stop, and stopped sandboxes stay listed. So boxbench keeps
its own ledger (runner/providers/ledger.py) of what it created; `list_sandboxes` and `bench
cleanup` work from it, and a sandbox counts as gone once its status is stopped, failed or aborted.

Commands: POST /v1/sandboxes/{id}/cmd. A command whose time limit is at most SYNC_LIMIT_S runs
with `wait: true` (an ndjson answer: the command, then the command with its exit code); a longer
one runs in the background (no `wait`) and is polled with GET …/cmd/{cmdId}. Output comes from GET
…/cmd/{cmdId}/logs (ndjson lines with `stream` stdout, stderr or error). A command past its limit
is killed with POST /v1/sandboxes/{id}/{cmdId}/kill. The command API has no stdin, so stdin is
uploaded to a temporary file and redirected. Files: POST …/fs/write (a gzip tar extracted in the
directory named by `x-cwd`) and POST …/fs/read (404 when missing).

The team id is not a secret like the token, but it names the account: it is redacted from every
error message and from httpx's request log lines (which carry the URL at INFO).

Configuration (docs/providers.md): VERCEL_TOKEN or VERCEL_TOKEN_FILE; VERCEL_TEAM_ID;
VERCEL_PROJECT_ID; VERCEL_API_URL (default https://vercel.com/api); BOXBENCH_VERCEL_SNAPSHOT
(a snapshot holding boxbench's standard toolchain; without it, the runtime image).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import math
import tarfile
import time
import uuid
from datetime import UTC, datetime

import httpx
import msgspec

from runner import waiting
from runner.providers.answers import BAD_ANSWER, TOO_LARGE, Capped, Reader
from runner.providers.base import (
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    ProviderError,
    Sandbox,
    SandboxSpec,
)
from runner.providers.credentials import redact
from runner.providers.http import HTTPProvider, read_capped, send, status_error, transport_error
from runner.providers.ledger import Ledger

WORKDIR = "/app"
SYNC_LIMIT_S = 60.0  # above this a command runs in the background: no HTTP call waits that long
RUNNING = "running"
FAILED = {"failed", "aborted"}
GONE = {"stopped", "failed", "aborted"}
CREATE_LIMIT_S = 300.0
# A background command's status: after 50 ms, then 1.5 times longer each time, at most 1 s apart.
COMMAND_POLL = waiting.Backoff(first_s=0.05, factor=1.5, cap_s=1.0)
MIB_PER_VCPU = 2048  # Vercel fixes memory at 2 GB per vCPU
RUNTIME = "python3.13"


# The answers the adapter reads (the api-client's schemas); anything else in them is ignored.
class _Box(msgspec.Struct):
    id: str
    status: str = ""
    region: str | None = None
    runtime: str | None = None
    vcpus: float | None = None
    memory: float | None = None


class _BoxAnswer(msgspec.Struct):
    sandbox: _Box


class _Command(msgspec.Struct):
    id: str
    exit_code: int | None = msgspec.field(name="exitCode", default=None)


class _CommandAnswer(msgspec.Struct):
    command: _Command


class _LogError(msgspec.Struct):
    code: str | int | None = None
    message: str | None = None


class _LogLine(msgspec.Struct):
    stream: str = ""
    data: str | _LogError | None = None


class _RedactURLs(logging.Filter):
    """Removes the team id from httpx's request log lines (they carry the full URL)."""

    def __init__(self):
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            cleaned = redact(message, *self.secrets)
            if cleaned != message:
                record.msg, record.args = cleaned, ()
        return True


_URL_FILTER = _RedactURLs()
for _name in ("httpx", "httpcore"):
    logging.getLogger(_name).addFilter(_URL_FILTER)


class VercelProvider(HTTPProvider):
    slug = "vercel"
    credential_variable = "VERCEL_TOKEN"
    credential_setting = "token"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self.api_url = self._url("api_url", "VERCEL_API_URL", "https://vercel.com/api")
        self.base_snapshot = self._setting("snapshot", "BOXBENCH_VERCEL_SNAPSHOT")
        self.poll_interval_s = float(self.settings.get("poll_interval_s", 0.25))
        self._ledger_dir = self.settings.get("ledger_dir")
        self._ledger: Ledger | None = None
        self._team = self._setting("team_id", "VERCEL_TEAM_ID")
        self._project = self._setting("project_id", "VERCEL_PROJECT_ID")
        if self._team:
            _URL_FILTER.secrets.add(self._team)

    def _required(self) -> list[tuple[str, str | None]]:
        return [
            *super()._required(),
            ("VERCEL_TEAM_ID", self._team),
            ("VERCEL_PROJECT_ID", self._project),
        ]

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            self._ledger = Ledger.for_provider(self.slug, self._ledger_dir)
        return self._ledger

    def _secrets(self) -> tuple:
        return (self._key, self._team)

    def _reader(self, operation: str) -> Reader:
        return Reader("vercel", operation, self._secrets())

    def _request(
        self,
        method,
        path,
        operation,
        data_plane=False,
        stream=False,
        cap=None,
        setting="",
        **kwargs,
    ):
        self._refuse_if_unconfigured(operation)
        headers = {"Authorization": f"Bearer {self._key}", **kwargs.pop("headers", {})}
        params = {"teamId": self._team, **kwargs.pop("params", {})}
        url = self.api_url + path
        try:
            if stream:
                request = self.client.build_request(
                    method, url, headers=headers, params=params, **kwargs
                )
                return self.client.send(request, stream=True)
            return send(
                self.client,
                method,
                url,
                self._reader(operation),
                cap or self.limits.answer_bytes,
                setting=setting,
                headers=headers,
                params=params,
                **kwargs,
            )
        except httpx.HTTPError as exc:
            raise transport_error(
                exc, "vercel", operation, data_plane=data_plane, secrets=self._secrets()
            ) from None

    def _call(self, method, path, operation, ok=(200,), data_plane=False, **kwargs):
        response = self._request(method, path, operation, data_plane, **kwargs)
        if response.status_code not in ok:
            raise status_error(
                response, "vercel", operation, data_plane=data_plane, secrets=self._secrets()
            )
        return response

    def _read(self, response: httpx.Response, kind, operation: str):
        return self._reader(operation).json(response.content, kind)

    def _box(self, sandbox_id: str, operation: str, ok=(200,)) -> httpx.Response:
        return self._call("GET", f"/v1/sandboxes/{sandbox_id}", operation, ok)

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.image:
            raise ProviderError(
                f"vercel runs its {RUNTIME} runtime or a prepared snapshot, not image "
                f"{spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        if spec.memory_mib != spec.cpus * MIB_PER_VCPU:
            raise ProviderError(
                f"vercel fixes memory at 2 GB per vCPU: {spec.cpus} vCPU cannot have "
                f"{spec.memory_mib} MiB",
                operation="create",
                code="unsupported_size",
            )
        body = {
            "projectId": self._project,
            "timeout": max(1000, math.ceil(spec.lifetime_s * 1000)),
            "resources": {"vcpus": spec.cpus},
            "runtime": RUNTIME,
            "networkPolicy": {"mode": "allow-all" if spec.network else "deny-all"},
        }
        if self.base_snapshot:
            body["source"] = {"type": "snapshot", "snapshotId": self.base_snapshot}
        created = self._call("POST", "/v1/sandboxes", "create", json=body)
        dto = self._read(created, _BoxAnswer, "create").sandbox
        sandbox_id = dto.id
        created_at = datetime.now(UTC)
        self.ledger.created(sandbox_id, spec.label, created_at, spec.lifetime_s)
        latest = [dto]

        def running() -> bool:
            status = latest[0].status
            if status in FAILED or status in GONE:
                raise ProviderError(
                    f"vercel create: sandbox {sandbox_id} reached status {status}",
                    operation="create",
                    code=status,
                )
            return status == RUNNING

        def asked_again() -> bool:
            latest[0] = self._read(self._box(sandbox_id, "create"), _BoxAnswer, "create").sandbox
            return running()

        # Polled from poll_interval_s, 1.5 times longer each time, at most 1 s apart.
        poll = waiting.Backoff(first_s=self.poll_interval_s, factor=1.5, cap_s=1.0)
        # The answer to the POST is the first look: the next comes after a pause.
        if not (
            running() or waiting.poll_until(asked_again, CREATE_LIMIT_S, poll, ask_first=False)
        ):
            with contextlib.suppress(ProviderError):
                self._call("POST", f"/v1/sandboxes/{sandbox_id}/stop", "create")
            raise ProviderError(
                f"vercel create: {sandbox_id} not running after {CREATE_LIMIT_S:g} s "
                f"(status {latest[0].status})",
                operation="create",
                code="create_timeout",
            )
        dto = latest[0]
        return Sandbox(
            id=sandbox_id,
            label=spec.label,
            created_at=created_at,
            facts={
                "region": dto.region,
                "runtime": dto.runtime,
                "cpus": dto.vcpus,
                "memory_mib": dto.memory,
                "enforced": {"cpus": True, "memory": True},
            },
        )

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        if not argv:
            raise ProviderError("vercel exec: empty argv", operation="exec")
        stdin_path = None
        if stdin is not None:
            stdin_path = f"/tmp/.boxbench-stdin-{uuid.uuid4().hex[:12]}"
            self.upload(sandbox, stdin_path, stdin)
            script = f'"$@" < {stdin_path}; __rc=$?; rm -f {stdin_path}; exit $__rc'
            argv = ["/bin/sh", "-c", script, "sh", *argv]
        body = {
            "command": argv[0],
            "args": list(argv[1:]),
            "cwd": workdir or WORKDIR,
            "env": dict(env or {}),
            "sudo": False,
        }
        path = f"/v1/sandboxes/{sandbox.id}/cmd"
        deadline = time.monotonic() + timeout
        if timeout <= SYNC_LIMIT_S:
            command_id, exit_code = self._run_waiting(sandbox, path, body, timeout)
        else:
            response = self._call("POST", path, "exec", data_plane=True, json=body)
            command_id = self._read(response, _CommandAnswer, "exec").command.id
            exit_code = self._await(sandbox, command_id, deadline, timeout)
        stdout, stderr = self._logs(sandbox, command_id)
        return ExecResult(exit_code, stdout, stderr)

    def _run_waiting(self, sandbox, path, body, timeout) -> tuple[str, int]:
        """POST with wait: the first ndjson line names the command, the second ends it."""
        response = self._request(
            "POST",
            path,
            "exec",
            data_plane=True,
            stream=True,
            json={**body, "wait": True},
            timeout=httpx.Timeout(timeout + 1.0, connect=10.0),
        )
        command_id = None
        reader = self._reader("exec")
        try:
            if response.status_code != 200:
                answer = read_capped(response, reader, self.limits.answer_bytes)
                raise status_error(
                    answer, "vercel", "exec", data_plane=True, secrets=self._secrets()
                )
            if response.headers.get("content-type") != "application/x-ndjson":
                raise ProviderError(
                    "vercel exec: expected a stream of command data (application/x-ndjson)",
                    operation="exec",
                    code=BAD_ANSWER,
                )
            lines = _lines(
                response.iter_bytes(),
                Capped(reader, self.limits.answer_bytes, "the command stream"),
            )
            command_id = reader.json(next(lines), _CommandAnswer, "the command stream").command.id
            exit_code = None
            # Read to the end even after the exit code: closing a stream that is not drained
            # closes its connection, and the next call would pay for a new one.
            for line in lines:
                if line.strip() and exit_code is None:
                    finished = reader.json(line, _CommandAnswer, "the command stream").command
                    exit_code = finished.exit_code
            if exit_code is not None:
                return command_id, exit_code
            raise ProviderError(
                f"vercel exec: the command stream of {command_id} ended without an exit code",
                operation="exec",
            )
        except httpx.ReadTimeout:
            if command_id:
                self._kill(sandbox, command_id)
            raise ExecTimeout(
                f"vercel: command did not return within {timeout:g} s in {sandbox.id}",
                operation="exec",
            ) from None
        except (httpx.HTTPError, StopIteration) as exc:
            raise ProviderError(
                f"vercel exec: the command stream broke off: {type(exc).__name__}",
                operation="exec",
                code="transport",
            ) from None
        finally:
            response.close()

    def _await(self, sandbox, command_id, deadline, timeout) -> int:
        path = f"/v1/sandboxes/{sandbox.id}/cmd/{command_id}"
        command: list[_Command] = []

        def exited() -> bool:
            answer = self._call("GET", path, "exec", data_plane=True)
            command[:] = [self._read(answer, _CommandAnswer, "exec").command]
            return command[0].exit_code is not None

        if waiting.poll_until(exited, deadline - time.monotonic(), COMMAND_POLL):
            return int(command[0].exit_code or 0)
        self._kill(sandbox, command_id)
        raise ExecTimeout(
            f"vercel: command did not return within {timeout:g} s in {sandbox.id}",
            operation="exec",
        )

    def _kill(self, sandbox, command_id) -> None:
        with contextlib.suppress(ProviderError):
            self._call(
                "POST", f"/v1/sandboxes/{sandbox.id}/{command_id}/kill", "exec", json={"signal": 9}
            )

    def _logs(self, sandbox, command_id) -> tuple[bytes, bytes]:
        limits, reader = self.limits, self._reader("exec")
        try:
            response = self._call(
                "GET",
                f"/v1/sandboxes/{sandbox.id}/cmd/{command_id}/logs",
                "exec",
                data_plane=True,
                cap=limits.exec_answer_bytes(),
                setting="max_output_mib",
            )
            out = {
                stream: Capped(
                    reader, limits.output_bytes, f"the command's {stream}", "max_output_mib"
                )
                for stream in ("stdout", "stderr")
            }
            for line in response.content.splitlines():
                if not line.strip():
                    continue
                item = reader.json(line, _LogLine, "a log line")
                if item.stream == "error":
                    error = item.data if isinstance(item.data, _LogError) else _LogError()
                    raise ProviderError(
                        f"vercel exec: log stream error {error.code}: {error.message}",
                        operation="exec",
                        code=str(error.code or "stream_error"),
                    )
                if item.stream in out:
                    if not isinstance(item.data, str):
                        raise reader.fail(f"a {item.stream} log line's `data` is not a string")
                    out[item.stream].add(item.data.encode())
        except ProviderError as exc:
            if exc.code == TOO_LARGE:
                self._kill(sandbox, command_id)  # the command may still be writing
            raise
        return bytes(out["stdout"].data), bytes(out["stderr"].data)

    def upload(self, sandbox, path, data) -> None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            member = tarfile.TarInfo(path.lstrip("/"))
            member.size, member.mode, member.mtime = len(data), 0o644, int(time.time())
            archive.addfile(member, io.BytesIO(data))
        self._call(
            "POST",
            f"/v1/sandboxes/{sandbox.id}/fs/write",
            "upload",
            data_plane=True,
            content=gzip.compress(buffer.getvalue(), mtime=0),
            headers={"Content-Type": "application/gzip", "x-cwd": "/"},
        )

    def download(self, sandbox, path) -> bytes:
        return self._call(
            "POST",
            f"/v1/sandboxes/{sandbox.id}/fs/read",
            "download",
            data_plane=True,
            json={"path": path},
            cap=self.limits.download_bytes,
            setting="max_download_mib",
        ).content

    def destroy(self, sandbox) -> None:
        response = self._call("POST", f"/v1/sandboxes/{sandbox.id}/stop", "destroy", ok=(200, 404))
        if response.status_code == 404 or self._status(response, "destroy") in GONE:
            self.ledger.stopped(sandbox.id)

    def is_gone(self, sandbox_id: str) -> bool:
        response = self._box(sandbox_id, "is_gone", ok=(200, 404))
        gone = response.status_code == 404 or self._status(response, "is_gone") in GONE
        if gone:
            self.ledger.stopped(sandbox_id)
        return gone

    def _status(self, response: httpx.Response, operation: str) -> str:
        return self._read(response, _BoxAnswer, operation).sandbox.status

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        """The ledger's sandboxes not yet confirmed stopped, each checked with the API (one the
        provider stopped at its timeout is recorded as stopped here and not listed)."""
        found = []
        for entry in self.ledger.open_entries():
            if label is not None and entry.label != label:
                continue
            if self.is_gone(entry.id):
                continue
            found.append(LiveSandbox(id=entry.id, label=entry.label, created_at=entry.created_at))
        return found

    def _doctor_probe(self) -> None:
        self._call(
            "GET", "/v1/sandboxes", "doctor", params={"project": self._project, "limit": "1"}
        )

    def _doctor_details(self) -> list[DoctorCheck]:
        return [
            DoctorCheck(
                "ledger",
                True,
                f"{len(self.ledger.open_entries())} open entries in {self.ledger.path}",
            ),
            DoctorCheck(
                "source",
                True,
                self.base_snapshot
                and f"snapshot {self.base_snapshot}"
                or f"runtime {RUNTIME} (BOXBENCH_VERCEL_SNAPSHOT unset)",
            ),
        ]


def _lines(chunks, capped: Capped):
    """The lines of an ndjson stream as they arrive, all of it within `capped`'s cap."""
    pending = b""
    for chunk in chunks:
        capped.add(chunk)
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from complete
    if pending:
        yield pending
