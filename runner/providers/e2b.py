"""`e2b`: E2B Firecracker sandboxes, over E2B's REST control plane and each sandbox's envd.

Control plane (spec/openapi.yml in e2b-dev/E2B), `X-API-Key`: POST /sandboxes (201 once the VM
has booted; no cpu or memory fields: a template fixes its size), GET and DELETE
/sandboxes/{id}, GET /v2/sandboxes filtered by metadata. Every sandbox carries the batch label as
metadata `boxbench.batch` and a `timeout` (seconds) that E2B enforces: it is killed then, even if
the runner crashed.

Data plane: envd on port 49983 behind the sandbox proxy (`https://sandbox.<domain>`, routed by the
`E2b-Sandbox-Id` and `E2b-Sandbox-Port` headers), authenticated by the sandbox's
`X-Access-Token`. Commands go through Connect RPC `process.Process/Start` (a server stream of
start, data, keepalive and end events, framed by runner/providers/connect.py), stdin through
`SendInput` and `CloseStdin`, a command past its time limit is killed with `SendSignal`; files
through envd's `/files`.

Configuration (docs/providers.md): E2B_API_KEY or E2B_API_KEY_FILE; E2B_DOMAIN (default
e2b.app), or E2B_API_URL and E2B_SANDBOX_URL; BOXBENCH_E2B_TEMPLATE, the template built from
boxbench's standard image (default boxbench-standard).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import math
import time
from datetime import UTC, datetime
from urllib.parse import quote

import httpx
import msgspec

from runner.providers import connect
from runner.providers.answers import BAD_ANSWER, TOO_LARGE, Capped, Listing, Reader
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
from runner.providers.http import (
    DETAIL_CHARS,
    HTTPProvider,
    host_port,
    read_capped,
    send,
    status_error,
    transport_error,
)

ENVD_PORT = 49983
BATCH_KEY = "boxbench.batch"
WORKDIR = "/app"
KEEPALIVE_S = 5  # envd sends a keepalive event this often while a command runs
MIN_ENVD = (0, 1, 0)


# The answers the adapter reads (spec/openapi.yml; envd's process.proto in protojson, where a
# field at its default value is left out). Anything else in them is ignored.
class _Created(msgspec.Struct):
    sandbox_id: str = msgspec.field(name="sandboxID")
    template_id: str = msgspec.field(name="templateID", default="")
    envd_version: str = msgspec.field(name="envdVersion", default="")
    envd_access_token: str | None = msgspec.field(name="envdAccessToken", default=None)


class _Detail(msgspec.Struct):
    envd_access_token: str | None = msgspec.field(name="envdAccessToken", default=None)


class _Listed(msgspec.Struct):
    sandbox_id: str = msgspec.field(name="sandboxID")
    metadata: dict[str, str] | None = None
    started_at: str | None = msgspec.field(name="startedAt", default=None)


class _Start(msgspec.Struct):
    pid: int


class _Data(msgspec.Struct):
    stdout: str = ""
    stderr: str = ""


class _End(msgspec.Struct):
    exit_code: int = msgspec.field(name="exitCode", default=0)
    exited: bool = False
    error: str | None = None


class _Event(msgspec.Struct):
    start: _Start | None = None
    data: _Data | None = None
    end: _End | None = None


class _Message(msgspec.Struct):
    event: _Event = msgspec.field(default_factory=_Event)


class E2BProvider(HTTPProvider):
    slug = "e2b"
    credential_variable = "E2B_API_KEY"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        domain = self._setting("domain", "E2B_DOMAIN", "e2b.app")
        self.api_url = self._url("api_url", "E2B_API_URL", f"https://api.{domain}")
        self.sandbox_url = self._url("sandbox_url", "E2B_SANDBOX_URL", f"https://sandbox.{domain}")
        self.template = self._setting("template", "BOXBENCH_E2B_TEMPLATE", "boxbench-standard")

    # -- plumbing ---------------------------------------------------------------------------------

    def _reader(self, operation: str, *secrets: str | None) -> Reader:
        return Reader("e2b", operation, (self._key, *secrets))

    def _api(self, method: str, path: str, operation: str, ok=(200,), **kwargs) -> httpx.Response:
        self._refuse_if_unconfigured(operation)
        headers = {"X-API-Key": self._key, **kwargs.pop("headers", {})}
        try:
            response = send(
                self.client, method, self.api_url + path, self._reader(operation),
                self.limits.answer_bytes, headers=headers, **kwargs,
            )  # fmt: skip
        except httpx.HTTPError as exc:
            raise transport_error(exc, "e2b", operation, secrets=(self._key,)) from None
        if response.status_code not in ok:
            raise status_error(response, "e2b", operation, secrets=(self._key,))
        return response

    def _envd_headers(self, sandbox: Sandbox) -> dict:
        token = self._token(sandbox)
        return {
            "E2b-Sandbox-Id": sandbox.id,
            "E2b-Sandbox-Port": str(ENVD_PORT),
            "X-Access-Token": token,
        }

    def _token(self, sandbox: Sandbox) -> str:
        handle = sandbox.handle if isinstance(sandbox.handle, dict) else {}
        if not handle.get("token"):
            answer = self._api("GET", f"/sandboxes/{sandbox.id}", "exec").content
            detail = self._reader("exec").json(answer, _Detail, "the sandbox answer")
            handle = {"token": detail.envd_access_token or ""}
            sandbox.handle = handle
        return handle["token"]

    def _envd(
        self, method, path, sandbox, operation, ok=(200,), cap=None, what="the answer", **kwargs
    ) -> httpx.Response:
        headers = {**self._envd_headers(sandbox), **kwargs.pop("headers", {})}
        reader = self._reader(operation, headers["X-Access-Token"])
        setting = "max_download_mib" if cap else ""
        try:
            response = send(
                self.client, method, self.sandbox_url + path, reader,
                cap or self.limits.answer_bytes, what, setting, headers=headers, **kwargs,
            )  # fmt: skip
        except httpx.HTTPError as exc:
            raise transport_error(
                exc,
                "e2b",
                operation,
                data_plane=True,
                secrets=(self._key, headers["X-Access-Token"]),
            ) from None
        if response.status_code not in ok:
            raise status_error(
                response,
                "e2b",
                operation,
                data_plane=True,
                secrets=(self._key, headers["X-Access-Token"]),
            )
        return response

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.image:
            raise ProviderError(
                f"e2b runs the prepared template {self.template!r}, not image {spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        body = {
            "templateID": self.template,
            "timeout": max(1, math.ceil(spec.lifetime_s)),
            "metadata": {BATCH_KEY: spec.label},
            "secure": True,
            "allow_internet_access": spec.network,
            "autoPause": False,
        }
        answer = self._api("POST", "/sandboxes", "create", ok=(201,), json=body).content
        created = self._reader("create").json(answer, _Created)
        sandbox = Sandbox(
            id=created.sandbox_id,
            label=spec.label,
            created_at=datetime.now(UTC),
            facts={
                "template": created.template_id or self.template,
                "envd_version": created.envd_version,
                "enforced": {"cpus": True, "memory": True},
            },
            handle={"token": created.envd_access_token or ""},
        )
        if _version(created.envd_version) < MIN_ENVD:
            self.destroy(sandbox)
            raise ProviderError(
                f"e2b create: envd {created.envd_version!r} is older than 0.1.0",
                operation="create",
                code="old_envd",
            )
        return sandbox

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        if not argv:
            raise ProviderError("e2b exec: empty argv", operation="exec")
        request = {
            "process": {
                "cmd": argv[0],
                "args": list(argv[1:]),
                "envs": dict(env or {}),
                "cwd": workdir or WORKDIR,
            },
            "stdin": stdin is not None,
        }
        headers = {
            **self._envd_headers(sandbox),
            "Content-Type": connect.STREAM_CONTENT_TYPE,
            "Connect-Protocol-Version": "1",
            "Keepalive-Ping-Interval": str(KEEPALIVE_S),
        }
        deadline = time.monotonic() + timeout
        # A read waits at most until the deadline, and never longer than three keepalives.
        read_s = max(0.05, min(timeout, 3 * KEEPALIVE_S))
        reader = self._reader("exec", headers["X-Access-Token"])
        cap = self.limits.output_bytes
        stdout = Capped(reader, cap, "the command's stdout", "max_output_mib")
        stderr = Capped(reader, cap, "the command's stderr", "max_output_mib")
        pid = None
        result: ExecResult | None = None
        ended = False
        try:
            with self.client.stream(
                "POST",
                self.sandbox_url + "/process.Process/Start",
                content=connect.envelope(request),
                headers=headers,
                timeout=httpx.Timeout(read_s, connect=10.0),
            ) as response:
                if response.status_code != 200:
                    answer = read_capped(response, reader, self.limits.answer_bytes)
                    raise status_error(
                        answer, "e2b", "exec", data_plane=True,
                        secrets=(self._key, headers["X-Access-Token"]),
                    )  # fmt: skip
                for flags, message in connect.read_envelopes(response.iter_bytes()):
                    if flags & connect.END_STREAM:
                        error = message.get("error")
                        if error:
                            said = str(error)
                            if isinstance(error, dict):
                                said = f"{error.get('code')}: {error.get('message', '')}"
                            said = redact(said, self._key, headers["X-Access-Token"])
                            raise ProviderError(
                                f"e2b exec: envd ended the stream: {said[:DETAIL_CHARS]}",
                                operation="exec",
                                code=str(isinstance(error, dict) and error.get("code") or ""),
                            )
                        ended = True  # read on to the end of the body: the connection stays warm
                        continue
                    event = reader.convert(message, _Message, "an envd event").event
                    if event.start is not None:
                        pid = event.start.pid
                        if stdin is not None:
                            self._feed(sandbox, pid, stdin)
                    elif event.data is not None:
                        stdout.add(_base64(reader, event.data.stdout))
                        stderr.add(_base64(reader, event.data.stderr))
                    elif event.end is not None:
                        end = event.end
                        if end.error:
                            said = redact(end.error, self._key, headers["X-Access-Token"])
                            raise ProviderError(
                                f"e2b exec: {said[:DETAIL_CHARS]}", "exec", code="exec_error"
                            )
                        exit_code = end.exit_code
                        if not end.exited and exit_code == 0:
                            exit_code = -1  # ended by a signal: no exit code
                        result = ExecResult(exit_code, bytes(stdout.data), bytes(stderr.data))
                    if time.monotonic() > deadline:
                        raise _Overdue()
                if not ended:
                    raise ProviderError("e2b exec: the stream ended with no end message", "exec")
        except _Overdue:
            self._kill(sandbox, pid)
            raise ExecTimeout(
                f"e2b: command did not return within {timeout:g} s in sandbox {sandbox.id}",
                operation="exec",
            ) from None
        except httpx.ReadTimeout:
            if time.monotonic() >= deadline - 0.01 or read_s >= timeout:
                self._kill(sandbox, pid)
                raise ExecTimeout(
                    f"e2b: command did not return within {timeout:g} s in sandbox {sandbox.id}",
                    operation="exec",
                ) from None
            raise ProviderError(
                f"e2b exec: envd sent nothing for {read_s:g} s (no keepalive)", operation="exec"
            ) from None
        except connect.FramingError as exc:
            self._kill(sandbox, pid)
            raise ProviderError(
                f"e2b exec: malformed Connect stream: {exc}", "exec", code=BAD_ANSWER
            ) from None
        except ProviderError as exc:
            if exc.code == TOO_LARGE:
                self._kill(sandbox, pid)  # the command may still be writing
            raise
        except httpx.HTTPError as exc:
            raise transport_error(
                exc,
                "e2b",
                "exec",
                data_plane=pid is None,
                secrets=(self._key, self._token(sandbox)),
            ) from None
        if result is None:
            raise ProviderError("e2b exec: the stream ended without an end event", "exec")
        return result

    def _unary(self, sandbox: Sandbox, method: str, body: dict, operation: str) -> None:
        self._envd(
            "POST", f"/process.Process/{method}", sandbox, operation, json=body,
            headers={"Connect-Protocol-Version": "1"},
        )  # fmt: skip

    def _feed(self, sandbox: Sandbox, pid, data: bytes) -> None:
        selector = {"pid": pid}
        if data:
            stdin = base64.b64encode(data).decode()
            message = {"process": selector, "input": {"stdin": stdin}}
            self._unary(sandbox, "SendInput", message, "exec")
        self._unary(sandbox, "CloseStdin", {"process": selector}, "exec")

    def _kill(self, sandbox: Sandbox, pid) -> None:
        if pid is None:
            return
        # The command may have ended meanwhile; the timeout is reported either way.
        with contextlib.suppress(ProviderError):
            message = {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}
            self._unary(sandbox, "SendSignal", message, "exec")

    def upload(self, sandbox, path, data) -> None:
        self._envd(
            "POST", f"/files?path={quote(path)}", sandbox, "upload",
            files={"file": (path.rsplit("/", 1)[-1] or "file", data, "application/octet-stream")},
        )  # fmt: skip

    def download(self, sandbox, path) -> bytes:
        return self._envd(
            "GET", f"/files?path={quote(path)}", sandbox, "download",
            cap=self.limits.download_bytes, what=f"the file {path}",
        ).content  # fmt: skip

    def destroy(self, sandbox) -> None:
        self._api("DELETE", f"/sandboxes/{sandbox.id}", "destroy", ok=(204, 404))

    def is_gone(self, sandbox_id: str) -> bool:
        response = self._api("GET", f"/sandboxes/{sandbox_id}", "is_gone", ok=(200, 404))
        return response.status_code == 404

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        params = {"state": "running,paused", "limit": "100"}
        if label is not None:
            params["metadata"] = f"{quote(BATCH_KEY, safe='')}={quote(label, safe='')}"
        found, token = [], None
        reader = self._reader("list")
        listing = Listing(reader, self.limits.pages)
        while True:
            page = dict(params, **({"nextToken": token} if token else {}))
            response = self._api("GET", "/v2/sandboxes", "list", params=page)
            for item in reader.json(response.content, list[_Listed], "the sandbox list"):
                found.append(
                    LiveSandbox(
                        id=item.sandbox_id,
                        label=(item.metadata or {}).get(BATCH_KEY, ""),
                        created_at=_timestamp(item.started_at),
                    )
                )
            token = response.headers.get("X-Next-Token")
            if not listing.more(token):
                return found

    def endpoints(self) -> list[tuple[str, int]]:
        return [host_port(self.api_url), host_port(self.sandbox_url)]

    def _doctor_probe(self) -> None:
        self._api("GET", "/v2/sandboxes", "doctor", params={"limit": "1"})

    def _doctor_details(self) -> list[DoctorCheck]:
        return [DoctorCheck("template", True, f"{self.template} (BOXBENCH_E2B_TEMPLATE)")]


class _Overdue(Exception):
    pass


def _base64(reader: Reader, text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise reader.fail(f"envd sent output that is not base64: {reader.preview(text)}") from None


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.lstrip("v").split(".")[:3])
    except ValueError:
        return (0, 0, 0)


def _timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
