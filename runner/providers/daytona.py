"""`daytona`: Daytona sandboxes over its REST API and each sandbox's toolbox API.

API (Bearer token): POST /sandbox from the prepared snapshot (which fixes the size), labelled
`boxbench.batch=<label>`; create then polls GET /sandbox/{id} until `started` (the SDK's
backoff: 0.1 s, x1.1, capped at 1 s), failing on `error` or `build_failed`. Lifetime: Daytona has
no absolute time-to-live, so the sandbox gets `autoStopInterval` = its lifetime in minutes and
`autoDeleteInterval` 0 (deleted when it stops): Daytona removes it at most that long after the
last activity, even if the runner crashed. DELETE /sandbox/{id}; gone = 404 or `destroyed`.
GET /sandbox?labels=<JSON> lists by label.

Commands: the toolbox API at the DTO's `toolboxProxyUrl` + `/{id}`. `/process/execute` merges
stdout and stderr and stops a command after 10 s unless told otherwise, so every command runs
through a session instead (one per sandbox, made on first use): synchronously when its time limit
is at most SYNC_LIMIT_S, otherwise with `runAsync` and polling of the command's status and logs.
A command past its limit is killed by deleting its session. Stdin is uploaded to a temporary file
and redirected. Files: /files/upload (multipart) and /files/download.

Configuration (docs/providers.md): DAYTONA_API_KEY or DAYTONA_API_KEY_FILE; DAYTONA_API_URL
(default https://app.daytona.io/api); DAYTONA_TOOLBOX_URL (the toolbox proxy's origin when it
is not the API's: the key goes to no other origin, whatever an answer names); DAYTONA_TARGET
(region, default us);
BOXBENCH_DAYTONA_SNAPSHOT (default boxbench-standard).
"""

from __future__ import annotations

import contextlib
import math
import shlex
import time
import uuid
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx
import msgspec

from runner import waiting
from runner.providers.answers import TOO_LARGE, Reader
from runner.providers.base import (
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    ProviderError,
    Sandbox,
    SandboxSpec,
)
from runner.providers.http import HTTPProvider, send, status_error, transport_error

BATCH_KEY = "boxbench.batch"
WORKDIR = "/app"
SYNC_LIMIT_S = 60.0  # above this a command runs with runAsync: no HTTP call waits that long
STARTED = "started"
FAILED = {"error", "build_failed"}
CREATE_LIMIT_S = 300.0
# A background command's status: after 50 ms, then 1.5 times longer each time, at most 1 s apart.
COMMAND_POLL = waiting.Backoff(first_s=0.05, factor=1.5, cap_s=1.0)


# The answers the adapter reads (Daytona's SandboxDto and the toolbox's session answers); anything
# else in them is ignored.
class _Sandbox(msgspec.Struct):
    id: str
    state: str = ""
    error_reason: str | None = msgspec.field(name="errorReason", default=None)
    toolbox_proxy_url: str | None = msgspec.field(name="toolboxProxyUrl", default=None)
    snapshot: str | None = None
    target: str | None = None
    cpu: float | None = None
    memory: float | None = None
    labels: dict[str, str] | None = None
    created_at: str | None = msgspec.field(name="createdAt", default=None)


class _Outcome(msgspec.Struct):
    """A session command's answer: its exit code and output, or (run async) its id."""

    cmd_id: str | None = msgspec.field(name="cmdId", default=None)
    exit_code: int | None = msgspec.field(name="exitCode", default=None)
    stdout: str | None = None
    stderr: str | None = None


class DaytonaProvider(HTTPProvider):
    slug = "daytona"
    credential_variable = "DAYTONA_API_KEY"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self.api_url = self._url("api_url", "DAYTONA_API_URL", "https://app.daytona.io/api")
        self.target = self._setting("target", "DAYTONA_TARGET", "us")
        self.base_snapshot = self._setting(
            "snapshot", "BOXBENCH_DAYTONA_SNAPSHOT", "boxbench-standard"
        )
        self.poll_interval_s = float(self.settings.get("poll_interval_s", 0.1))
        # The key goes only to origins the operator configured: the API's, and the toolbox
        # proxy's when it lives elsewhere (DAYTONA_TOOLBOX_URL), never to one an answer names.
        toolbox = self._url("toolbox_url", "DAYTONA_TOOLBOX_URL", "")
        self.key_origins = {_origin(self.api_url)} | ({_origin(toolbox)} if toolbox else set())

    def _reader(self, operation: str) -> Reader:
        return Reader("daytona", operation, (self._key,))

    def _call(
        self, method, url, operation, ok=(200,), data_plane=False, cap=None, setting="", **kwargs
    ):
        self._refuse_if_unconfigured(operation)
        headers = {"Authorization": f"Bearer {self._key}", **kwargs.pop("headers", {})}
        reader, cap = self._reader(operation), cap or self.limits.answer_bytes
        try:
            response = send(
                self.client, method, url, reader, cap, setting=setting, headers=headers, **kwargs
            )
        except httpx.HTTPError as exc:
            raise transport_error(
                exc, "daytona", operation, data_plane=data_plane, secrets=(self._key,)
            ) from None
        if response.status_code not in ok:
            raise status_error(
                response, "daytona", operation, data_plane=data_plane, secrets=(self._key,)
            )
        return response

    def _api(self, method, path, operation, ok=(200,), **kwargs) -> httpx.Response:
        return self._call(method, self.api_url + path, operation, ok, **kwargs)

    def _sandbox(self, method, path, operation, **kwargs) -> _Sandbox:
        answer = self._api(method, path, operation, **kwargs).content
        return self._reader(operation).json(answer, _Sandbox, "the sandbox answer")

    def _toolbox(self, sandbox, method, path, operation, ok=(200,), **kwargs) -> httpx.Response:
        base = self._handle(sandbox)["toolbox"]
        return self._call(method, f"{base}/{sandbox.id}{path}", operation, ok, True, **kwargs)

    def _command(self, sandbox, method, path, **kwargs) -> _Outcome:
        """A session command's answer, its output within max_output_mib."""
        limits = self.limits
        response = self._toolbox(
            sandbox, method, path, "exec", cap=limits.exec_answer_bytes(),
            setting="max_output_mib", **kwargs,
        )  # fmt: skip
        reader = self._reader("exec")
        outcome = reader.json(response.content, _Outcome, "the command answer")
        for stream in ("stdout", "stderr"):
            if len((getattr(outcome, stream) or "").encode()) > limits.output_bytes:
                raise reader.fail(
                    f"the command's {stream} is larger than the cap of {limits.output_bytes} "
                    "bytes; setting max_output_mib",
                    TOO_LARGE,
                )
        return outcome

    def _handle(self, sandbox: Sandbox) -> dict:
        if not isinstance(sandbox.handle, dict) or not sandbox.handle.get("toolbox"):
            dto = self._sandbox("GET", f"/sandbox/{sandbox.id}", "exec")
            sandbox.handle = {"toolbox": self._toolbox_url(dto, "exec"), "session": None}
        return sandbox.handle

    def _toolbox_url(self, dto: _Sandbox, operation: str) -> str:
        """The answer's toolboxProxyUrl, refused unless its origin is one the key may go to."""
        url = dto.toolbox_proxy_url
        if not url:
            raise ProviderError(
                f"daytona {operation}: the sandbox answer has no toolboxProxyUrl", operation
            )
        if _origin(url) not in self.key_origins:
            raise ProviderError(
                f"daytona {operation}: the answer names toolbox {_origin(url)!r}, which is not "
                "the configured API or toolbox origin; the key is not sent there (set "
                "DAYTONA_TOOLBOX_URL if it is Daytona's)",
                operation,
                code="foreign_origin",
            )
        return url.rstrip("/")

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.image:
            raise ProviderError(
                f"daytona runs the prepared snapshot {self.base_snapshot!r}, "
                f"not image {spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        body = {
            "snapshot": self.base_snapshot,
            "labels": {BATCH_KEY: spec.label},
            "target": self.target,
            "networkBlockAll": not spec.network,
            "autoStopInterval": max(1, math.ceil(spec.lifetime_s / 60)),
            "autoDeleteInterval": 0,
        }
        dto = self._sandbox("POST", "/sandbox", "create", json=body)
        sandbox_id = dto.id
        latest = [dto]

        def started() -> bool:
            state = latest[0].state
            if state in FAILED:
                with contextlib.suppress(ProviderError):
                    self._api("DELETE", f"/sandbox/{sandbox_id}", "create", ok=(200, 404))
                raise ProviderError(
                    f"daytona create: sandbox {sandbox_id} reached state {state}: "
                    f"{latest[0].error_reason or 'no reason given'}",
                    operation="create",
                    code=state,
                )
            return state == STARTED

        def asked_again() -> bool:
            latest[0] = self._sandbox("GET", f"/sandbox/{sandbox_id}", "create")
            return started()

        # The SDK's backoff: from poll_interval_s, 1.1 times longer each time, at most 1 s apart.
        poll = waiting.Backoff(first_s=self.poll_interval_s, factor=1.1, cap_s=1.0)
        # The answer to the POST is the first look: the next comes after a pause.
        if not (
            started() or waiting.poll_until(asked_again, CREATE_LIMIT_S, poll, ask_first=False)
        ):
            raise ProviderError(
                f"daytona create: {sandbox_id} not started after {CREATE_LIMIT_S:g} s "
                f"(state {latest[0].state})",
                operation="create",
                code="create_timeout",
            )
        dto = latest[0]
        try:
            toolbox = self._toolbox_url(dto, "create")
        except ProviderError:
            with contextlib.suppress(ProviderError):
                self._api("DELETE", f"/sandbox/{sandbox_id}", "create", ok=(200, 204, 404))
            raise
        return Sandbox(
            id=sandbox_id,
            label=spec.label,
            created_at=datetime.now(UTC),
            facts={
                "snapshot": dto.snapshot,
                "target": dto.target,
                "cpu": dto.cpu,
                "memory_gib": dto.memory,
                "enforced": {"cpus": True, "memory": True},
            },
            handle={"toolbox": toolbox, "session": None},
        )

    def _session(self, sandbox: Sandbox) -> str:
        handle = self._handle(sandbox)
        if not handle.get("session"):
            session = f"boxbench-{uuid.uuid4().hex[:12]}"
            self._toolbox(
                sandbox, "POST", "/process/session", "exec", ok=(200, 201),
                json={"sessionId": session},
            )  # fmt: skip
            handle["session"] = session
        return handle["session"]

    def _drop_session(self, sandbox: Sandbox) -> None:
        """Delete the session, which kills its commands; the next exec makes a new one."""
        handle = self._handle(sandbox)
        session, handle["session"] = handle.get("session"), None
        if session:
            with contextlib.suppress(ProviderError):
                self._toolbox(sandbox, "DELETE", f"/process/session/{session}", "exec",
                              ok=(200, 204, 404))  # fmt: skip

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        if not argv:
            raise ProviderError("daytona exec: empty argv", operation="exec")
        command = shlex.join(argv)
        if env:
            command = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " "
            command += shlex.join(argv)
        stdin_path = None
        if stdin is not None:
            stdin_path = f"/tmp/.boxbench-stdin-{uuid.uuid4().hex[:12]}"
            self.upload(sandbox, stdin_path, stdin)
            command += f" < {stdin_path}"
        # A subshell, so nothing a command does (cd, exported variables) leaks into the session.
        command = f"(cd {shlex.quote(workdir or WORKDIR)} && {command})"
        if stdin_path:
            command += f"; __rc=$?; rm -f {stdin_path}; exit $__rc"
            command = f"bash -c {shlex.quote(command)}"
        session = self._session(sandbox)
        deadline = time.monotonic() + timeout
        path = f"/process/session/{session}"
        run_async = timeout > SYNC_LIMIT_S
        try:
            outcome = self._command(
                sandbox, "POST", f"{path}/exec", ok=(200, 202),
                json={"command": command, "runAsync": run_async},
                timeout=httpx.Timeout(timeout + 1.0 if not run_async else 30.0, connect=10.0),
            )  # fmt: skip
        except ProviderError as exc:
            if "ReadTimeout" in str(exc):
                self._drop_session(sandbox)
                raise ExecTimeout(
                    f"daytona: command did not return within {timeout:g} s in {sandbox.id}",
                    operation="exec",
                ) from None
            if exc.code == TOO_LARGE:
                self._drop_session(sandbox)  # the command may still be writing
            raise
        if outcome.exit_code is None:
            if not outcome.cmd_id:
                raise self._reader("exec").fail(
                    "the command answer has neither `exitCode` nor `cmdId`"
                )
            outcome = self._await(sandbox, path, outcome.cmd_id, deadline, timeout)
        return ExecResult(
            int(outcome.exit_code or 0),
            (outcome.stdout or "").encode(),
            (outcome.stderr or "").encode(),
        )

    def _await(self, sandbox, path, command_id, deadline, timeout) -> _Outcome:
        status: list[_Outcome] = []

        def exited() -> bool:
            status[:] = [self._command(sandbox, "GET", f"{path}/command/{command_id}")]
            return status[0].exit_code is not None

        if waiting.poll_until(exited, deadline - time.monotonic(), COMMAND_POLL):
            logs = self._command(sandbox, "GET", f"{path}/command/{command_id}/logs")
            logs.exit_code = status[0].exit_code
            return logs
        self._drop_session(sandbox)
        raise ExecTimeout(
            f"daytona: command did not return within {timeout:g} s in {sandbox.id}",
            operation="exec",
        )

    def upload(self, sandbox, path, data) -> None:
        self._toolbox(
            sandbox, "POST", "/files/upload", "upload", params={"path": path},
            files={"file": (path.rsplit("/", 1)[-1] or "file", data, "application/octet-stream")},
        )  # fmt: skip

    def download(self, sandbox, path) -> bytes:
        return self._toolbox(
            sandbox, "GET", "/files/download", "download", params={"path": path},
            cap=self.limits.download_bytes, setting="max_download_mib",
        ).content  # fmt: skip

    def destroy(self, sandbox) -> None:
        self._api("DELETE", f"/sandbox/{sandbox.id}", "destroy", ok=(200, 204, 404))

    def is_gone(self, sandbox_id: str) -> bool:
        response = self._api("GET", f"/sandbox/{sandbox_id}", "is_gone", ok=(200, 404))
        if response.status_code == 404:
            return True
        reader = self._reader("is_gone")
        return reader.json(response.content, _Sandbox, "the sandbox answer").state == "destroyed"

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        params = {"labels": _json({BATCH_KEY: label})} if label is not None else {}
        found = []
        answer = self._api("GET", "/sandbox", "list", params=params).content
        for item in self._reader("list").json(answer, list[_Sandbox], "the sandbox list"):
            if item.state in ("destroyed", "destroying"):
                continue
            found.append(
                LiveSandbox(
                    id=item.id,
                    label=(item.labels or {}).get(BATCH_KEY, ""),
                    created_at=_timestamp(item.created_at),
                )
            )
        return found

    def _doctor_probe(self) -> None:
        self._api("GET", "/sandbox", "doctor", params={"labels": _json({BATCH_KEY: "-"})})

    def _doctor_details(self) -> list[DoctorCheck]:
        return [DoctorCheck("snapshot", True, f"{self.base_snapshot} in target {self.target}")]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def _timestamp(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _json(value) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))
