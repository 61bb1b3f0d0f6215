"""`vercel`: Vercel Sandbox (Firecracker microVMs), through Vercel's official Python SDK
(`vercel-sandbox`, pinned in requirements-vercel.txt), unmodified.

The SDK is configured only through its documented settings: a standalone `SyncSandboxClient` with
`SandboxServiceOptions(base_url=, credentials_factory=)` (the token, team and project boxbench was
given; nothing read from the environment or an OIDC token) and an `httpx_client_factory`. The
factory's client is the SDK's own (httpx2) with boxbench's pool (idle connections kept 300 s, as
the methodology asks, where the SDK's default keeps them 5 s) and a guard in its transport: each
request of an adapter call is held to what is left of that call's time limit, and every answer
to the call's byte cap, so neither a hung server nor a hostile answer outlasts the call.

Vercel's API as the SDK speaks it: named sandboxes, each run a session. POST /v3/sandboxes, then
the SDK itself polls GET /v2/sandboxes/{name} every 0.5 s until the session runs (no deadline of
its own: the guard's is CREATE_LIMIT_S). Commands and files go to the session,
/v2/sandboxes/sessions/{id}/cmd and /fs/...; DELETE /v2/sandboxes/{name} ends one.

What the SDK would add on its own (docs/providers.md lists it): a sandbox handle's commands and
files resume a stopped sandbox and replay the call once (lifecycle recovery): the adapter calls
the session handle instead, which never does; a command whose stream breaks after it started is
followed through its logs and wait routes with two retries 0.2 and 0.4 s apart (kept: the
command already ran, and the guard's deadline still holds the whole call); stdin writes are
retried up to 5 times (not used: stdin travels as a file).

- create: `create_sandbox` named `<label>-<12 hex>`, tagged `boxbench-batch=<label>`, with the
  lifetime as its `execution_time_limit` (Vercel stops the session then, even if the runner
  crashed), not persistent, the network policy the benchmark asks for, and the snapshot
  BOXBENCH_VERCEL_SNAPSHOT as its source when set (else Vercel's default image).
- exec: `run_process` on the session, one ndjson stream; its `kill_after` is the time limit, so
  Vercel kills an overdue command (SIGKILL) and the adapter reports ExecTimeout. The SDK hands
  output over as text (UTF-8, invalid bytes replaced). Its command API has no stdin of its own
  here: stdin is uploaded to a temporary file, redirected
  and removed before the command starts.
- files: the session's `fs.write_bytes` (a gzip tar) and `fs.read_bytes`.
- destroy: DELETE with `deleteOrphanSnapshots`; gone once GET answers 404 or a stopped status.
  Listing: `query_sandboxes` by the batch tag; a stopped sandbox costs nothing and is not live.
- snapshot: the session's `snapshot` (files only; Vercel stops the session it snapshots, so the
  next command on the source resumes it first, untimed); restore: a create with the snapshot as
  its source; delete: `delete_snapshot`, gone once `get_snapshot` answers 404 or `deleted`.

Configuration (docs/providers.md): VERCEL_TOKEN or VERCEL_TOKEN_FILE; VERCEL_TEAM_ID;
VERCEL_PROJECT_ID; VERCEL_API_URL (default https://vercel.com/api); BOXBENCH_VERCEL_SNAPSHOT.
"""

from __future__ import annotations

import contextlib
import importlib.util
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from runner.providers.answers import BAD_ANSWER, TOO_LARGE, Capped, Listing, Reader
from runner.providers.base import (
    CredentialsRejected,
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    NotReady,
    ProviderError,
    Sandbox,
    SandboxSpec,
)
from runner.providers.credentials import redact
from runner.providers.http import DETAIL_CHARS, KEEPALIVE_EXPIRY_S, HTTPProvider
from runner.providers.sdk_logs import redact_sdk_logs

BATCH_TAG = "boxbench-batch"
WORKDIR = "/app"
REQUEST_LIMIT_S = 60.0  # one control-plane or file call
CREATE_LIMIT_S = 300.0  # create, with the SDK's polling until the session runs
GRACE_S = 10.0  # past a command's limit: Vercel's kill and the stream's last lines
KILLED = 137  # a command Vercel killed (128 + SIGKILL)
GONE = {"stopped", "failed", "aborted"}
MIB_PER_VCPU = 2048  # Vercel fixes memory at 2 GB per vCPU
PAGE_SIZE = 50  # the most the SDK asks for in one page
SDK_MISSING = "the vercel-sandbox package is not installed: pip install -r requirements-vercel.txt"


@dataclass(frozen=True)
class _Call:
    """What one adapter call allows every request the SDK sends for it."""

    deadline: float  # monotonic
    limit_s: float
    capped: Capped  # every answer's bytes, counted against the call's cap


_CALL: ContextVar[_Call | None] = ContextVar("boxbench_vercel_call", default=None)


def sdk_installed() -> bool:
    try:
        return importlib.util.find_spec("vercel.sandbox") is not None
    except ModuleNotFoundError:  # no `vercel` namespace at all
        return False


def _guarded_client(fallback: Callable[[], _Call]):
    """The SDK's HTTP client, with boxbench's pool and the per-call guard in its transport.
    `fallback` is the guard of a request sent outside any call's context: the SDK sends an
    upload's body from a thread of its own, which does not inherit the call's."""
    import httpx2

    class Guard(httpx2.BaseTransport):
        def __init__(self):
            limits = httpx2.Limits(max_connections=100, keepalive_expiry=KEEPALIVE_EXPIRY_S)
            self.inner = httpx2.HTTPTransport(limits=limits)

        def handle_request(self, request):
            call = _CALL.get() or fallback()
            left = call.deadline - time.monotonic()
            if left <= 0:
                raise httpx2.ReadTimeout(
                    f"past the call's limit of {call.limit_s:g} s", request=request
                )
            given = request.extensions.get("timeout") or {}
            request.extensions["timeout"] = {
                key: left if given.get(key) is None else min(given[key], left)
                for key in ("connect", "read", "write", "pool")
            }
            response = self.inner.handle_request(request)
            return httpx2.Response(
                response.status_code,
                headers=response.headers,
                stream=Counted(response.stream, call.capped),
                extensions=response.extensions,
            )

        def close(self):
            self.inner.close()

    class Counted(httpx2.SyncByteStream):
        def __init__(self, stream, capped: Capped):
            self.stream, self.capped = stream, capped

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.stream:
                self.capped.count(len(chunk))
                yield chunk

        def close(self):
            self.stream.close()

    # Nothing from the environment (proxies, .netrc) takes part, as in every HTTP adapter.
    return httpx2.Client(
        transport=Guard(), timeout=httpx2.Timeout(REQUEST_LIMIT_S), trust_env=False
    )


class _Sink:
    """A text stream the SDK writes a command's output to, held to the output cap."""

    def __init__(self, capped: Capped):
        self.capped = capped

    def write(self, text: str) -> int:
        self.capped.add(text.encode())
        return len(text)

    def flush(self) -> None:
        pass


class VercelProvider(HTTPProvider):
    slug = "vercel"
    stdin_adds_requests = True
    layer_mechanism = "a Vercel snapshot, the source a create starts from"
    # Deleting a sandbox deletes its snapshots (deleteOrphanSnapshots); the snapshot has stopped
    # the sandbox's session, so keeping it until cleanup costs nothing.
    snapshot_needs_source = True
    credential_variable = "VERCEL_TOKEN"
    credential_setting = "token"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self.api_url = self._url("api_url", "VERCEL_API_URL", "https://vercel.com/api")
        self.base_snapshot = self._setting("snapshot", "BOXBENCH_VERCEL_SNAPSHOT")
        self._team = self._setting("team_id", "VERCEL_TEAM_ID")
        self._project = self._setting("project_id", "VERCEL_PROJECT_ID")
        self._sdk_missing = not sdk_installed()
        self.create_limit_s = float(self.settings.get("create_limit_s", CREATE_LIMIT_S))
        self._sdk_client: Any = None
        self._lock = threading.Lock()
        self._to_resume: set[str] = set()  # sandboxes whose session a snapshot stopped

    def _required(self) -> list[tuple[str, str | None]]:
        return [
            *super()._required(),
            ("VERCEL_TEAM_ID", self._team),
            ("VERCEL_PROJECT_ID", self._project),
        ]

    def configuration_problem(self) -> str | None:
        return SDK_MISSING if self._sdk_missing else super().configuration_problem()

    def _secrets(self) -> tuple:
        return (self._key, self._team)

    def _reader(self, operation: str) -> Reader:
        return Reader("vercel", operation, self._secrets())

    def _sdk(self, operation: str):
        """The SDK's client, made once, after the configuration is checked."""
        self._refuse_if_unconfigured(operation)
        if self._sdk_missing:
            raise ProviderError(f"vercel {operation}: {SDK_MISSING}", operation, "unconfigured")
        for package in ("vercel", "httpx2", "httpcore2"):
            redact_sdk_logs(package, *self._secrets())
        with self._lock:
            if self._sdk_client is None:
                from vercel.sandbox import SandboxCredentials
                from vercel.sandbox.sync import SandboxServiceOptions, SyncSandboxClient

                given = SandboxCredentials(str(self._key), self._team, self._project)
                options = SandboxServiceOptions(
                    base_url=self.api_url,
                    credentials_factory=lambda: given,
                    # The SDK's own bound on a file transfer (default 5 minutes).
                    file_transfer_timeout=timedelta(seconds=REQUEST_LIMIT_S),
                )
                self._sdk_client = SyncSandboxClient.create(
                    options=options,
                    httpx_client_factory=lambda: _guarded_client(self._fallback_call),
                )
            return self._sdk_client

    def _fallback_call(self) -> _Call:
        capped = Capped(self._reader("upload"), self.limits.answer_bytes, "the answer")
        return _Call(time.monotonic() + REQUEST_LIMIT_S, REQUEST_LIMIT_S, capped)

    def _call(
        self,
        operation: str,
        fn,
        *,
        data_plane: bool = False,
        limit_s: float = REQUEST_LIMIT_S,
        cap: int | None = None,
        what: str = "the answer",
        setting: str = "",
    ):
        """One SDK call under one deadline and one byte cap; whatever it raises becomes an
        adapter error naming the call."""
        capped = Capped(self._reader(operation), cap or self.limits.answer_bytes, what, setting)
        token = _CALL.set(_Call(time.monotonic() + limit_s, limit_s, capped))
        try:
            return fn()
        except ProviderError:
            raise
        except Exception as exc:
            raise self._failure(operation, exc, data_plane) from exc
        finally:
            _CALL.reset(token)

    def _failure(self, operation: str, exc: BaseException, data_plane: bool) -> ProviderError:
        """An SDK exception as the adapter error the lifecycle classifies (no credential in it)."""
        import httpx2
        from vercel.sandbox import (
            SandboxApiError,
            SandboxPathNotFoundError,
            SandboxResponseError,
            SandboxStreamError,
            SandboxTerminalStateError,
        )

        reader = self._reader(operation)
        cause = getattr(exc, "cause", None)
        if isinstance(cause, SandboxApiError) and not isinstance(exc, SandboxPathNotFoundError):
            exc = cause  # a failed file write carries the API's answer
        said = redact(f"{type(exc).__name__}: {exc}", *self._secrets())[:DETAIL_CHARS]
        message = f"vercel {operation}: {said}"
        if isinstance(exc, SandboxApiError):
            status = exc.status_code
            if status in (401, 403):
                return CredentialsRejected(message, operation, "unauthorized")
            if status == 429:
                wait = exc.response.headers.get("retry-after")
                told = f" (Retry-After {wait})" if wait else ""
                return ProviderError(message + told, operation, "rate_limited")
            if data_plane and status in (502, 503, 504):
                return NotReady(message, operation, "not_ready")
            if status == 404:
                return ProviderError(message, operation, "not_found")
            if status == 410:
                return ProviderError(message, operation, exc.code or "gone")
            return ProviderError(message, operation, str(status))
        if isinstance(exc, SandboxPathNotFoundError):
            return ProviderError(message, operation, "not_found")
        if isinstance(exc, SandboxResponseError):
            return reader.fail(_unreadable(exc), BAD_ANSWER)
        if isinstance(exc, SandboxStreamError):
            return ProviderError(message, operation, exc.code or "stream_error")
        if isinstance(exc, SandboxTerminalStateError):
            return ProviderError(message, operation, str(exc.status))
        if isinstance(exc, httpx2.TimeoutException):
            return ProviderError(message, operation, "timeout")
        if isinstance(exc, httpx2.TransportError):
            if data_plane:
                return NotReady(message, operation, "not_ready")
            return ProviderError(message, operation, "transport")
        return ProviderError(message, operation, "sdk_error")

    def _session(self, sandbox: Sandbox, operation: str):
        """The session handle of the sandbox: its commands and files never resume or replay."""
        name = sandbox.id
        if name in self._to_resume or getattr(sandbox, "handle", None) is None:
            client = self._sdk(operation)
            resume = name in self._to_resume
            get = client.resume_sandbox if resume else client.get_sandbox
            sandbox.handle = self._call(operation, lambda: get(name=name))
            self._to_resume.discard(name)
        handle: Any = sandbox.handle
        session = handle.current_session
        if session is None:
            raise self._reader(operation).fail(f"sandbox {name} has no current session")
        return session

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.image:
            raise ProviderError(
                f"vercel runs its default image or a prepared snapshot, not image {spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        return self._start("create", spec, spec.layer or self.base_snapshot or None)

    def _start(self, operation: str, spec: SandboxSpec, snapshot_id: str | None) -> Sandbox:
        if spec.memory_mib != spec.cpus * MIB_PER_VCPU:
            raise ProviderError(
                f"vercel fixes memory at 2 GB per vCPU: {spec.cpus} vCPU cannot have "
                f"{spec.memory_mib} MiB",
                operation=operation,
                code="unsupported_size",
            )
        from vercel.sandbox import NetworkPolicy, SandboxResources, SnapshotSource

        client = self._sdk(operation)
        name = f"{spec.label}-{secrets.token_hex(6)}"
        network = NetworkPolicy.allow_all() if spec.network else NetworkPolicy.deny_all()
        created_at = datetime.now(UTC)
        try:
            handle = self._call(
                operation,
                lambda: client.create_sandbox(
                    name=name,
                    source=SnapshotSource(snapshot_id=snapshot_id) if snapshot_id else None,
                    execution_time_limit=max(1.0, spec.lifetime_s),
                    resources=SandboxResources(vcpus=spec.cpus),
                    persistent=False,
                    network_policy=network,
                    tags={BATCH_TAG: spec.label},
                ),
                limit_s=self.create_limit_s,
            )
        except ProviderError:
            # The POST may have made it before the polling failed: by its name, none outlives this.
            with contextlib.suppress(ProviderError):
                self.destroy(Sandbox(id=name, label=spec.label))
            raise
        if handle.name != name:
            raise self._reader(operation).fail(f"the answer names sandbox {handle.name!r}")
        return Sandbox(
            id=name,
            label=spec.label,
            created_at=created_at,
            facts={
                "region": handle.region,
                "image": handle.image,
                "cpus": handle.vcpus,
                "memory_mib": handle.memory,
                "session": handle.current_session_id,
                "enforced": {"cpus": True, "memory": True},
            },
            handle=handle,
        )

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        if not argv:
            raise ProviderError("vercel exec: empty argv", operation="exec")
        session = self._session(sandbox, "exec")
        if stdin is not None:
            stdin_path = f"/tmp/.boxbench-stdin-{uuid.uuid4().hex[:12]}"
            self.upload(sandbox, stdin_path, stdin)
            # Removed once open, before the command starts (the guest clock's key: clock.py).
            script = f'(exec < {stdin_path}; rm -f {stdin_path}; exec "$@"); __rc=$?'
            script += f"; rm -f {stdin_path}; exit $__rc"
            argv = ["/bin/sh", "-c", script, "sh", *argv]
        reader, cap = self._reader("exec"), self.limits.output_bytes
        stdout = _Sink(Capped(reader, cap, "the command's stdout", "max_output_mib"))
        stderr = _Sink(Capped(reader, cap, "the command's stderr", "max_output_mib"))
        started: list = []  # the SDK's process handle, once Vercel says the command runs
        began = time.monotonic()
        try:
            done = self._call(
                "exec",
                lambda: session.run_process(
                    argv[0],
                    list(argv[1:]),
                    cwd=workdir or WORKDIR,
                    env=dict(env or {}),
                    kill_after=timeout,
                    stdout=stdout,
                    stderr=stderr,
                    on_start=started.append,
                ),
                # Before the command starts, a refused or broken connection is readiness.
                data_plane=True,
                limit_s=timeout + GRACE_S,
                cap=self.limits.exec_answer_bytes(),
                what="the command's stream",
                setting="max_output_mib",
            )
        except ProviderError as exc:
            if started and exc.code == TOO_LARGE:
                self._kill(started[0])  # the command may still be writing
            if started and isinstance(exc, NotReady):
                raise ProviderError(str(exc), "exec", "transport") from exc
            if started and exc.code == "timeout":
                self._kill(started[0])
                raise self._overdue(sandbox, timeout) from None
            raise
        if done.returncode == KILLED and time.monotonic() - began >= timeout * 0.99:
            raise self._overdue(sandbox, timeout)
        return ExecResult(done.returncode, stdout.capped.data, stderr.capped.data)

    def _overdue(self, sandbox: Sandbox, timeout: float) -> ExecTimeout:
        return ExecTimeout(
            f"vercel: command did not return within {timeout:g} s in {sandbox.id}",
            operation="exec",
        )

    def _kill(self, process) -> None:
        # The command may have ended meanwhile; the first failure is reported either way.
        with contextlib.suppress(ProviderError):
            self._call("exec", process.kill)

    def upload(self, sandbox, path, data) -> None:
        session = self._session(sandbox, "upload")
        self._call("upload", lambda: session.fs.write_bytes(path, data), data_plane=True)

    def download(self, sandbox, path) -> bytes:
        session = self._session(sandbox, "download")
        return self._call(
            "download",
            lambda: session.fs.read_bytes(path),
            data_plane=True,
            cap=self.limits.download_bytes,
            what=f"the file {path}",
            setting="max_download_mib",
        )

    def destroy(self, sandbox) -> None:
        handle = getattr(sandbox, "handle", None)  # none on a listed sandbox
        if handle is None:
            client = self._sdk("destroy")
            try:
                handle = self._call("destroy", lambda: client.get_sandbox(name=sandbox.id))
            except ProviderError as exc:
                if exc.code == "not_found":
                    return  # gone already: a destroy wants nothing more
                raise
        self._call("destroy", lambda: handle.destroy(delete_orphan_snapshots=True))
        self._to_resume.discard(sandbox.id)

    def is_gone(self, sandbox_id: str) -> bool:
        client = self._sdk("is_gone")
        try:
            found = self._call("is_gone", lambda: client.get_sandbox(name=sandbox_id))
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise
        return _status(found) in GONE

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        from vercel.sandbox import SandboxQueryByCreatedAt, TagFilter

        client = self._sdk("list")
        tag = TagFilter(key=BATCH_TAG, value=label) if label is not None else None
        query = SandboxQueryByCreatedAt(tag=tag)
        listing = Listing(self._reader("list"), self.limits.pages, PAGE_SIZE)

        def walk() -> list[LiveSandbox]:
            found = []
            for item in client.query_sandboxes(query=query, page_size=PAGE_SIZE):
                listing.item(item.name)  # at most max_pages pages' worth, none twice
                if _status(item) in GONE:
                    continue
                tags = item.tags or {}
                found.append(LiveSandbox(item.name, tags.get(BATCH_TAG, ""), _when(item)))
            return found

        return self._call("list", walk)

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot(self, sandbox: Sandbox) -> str:
        session = self._session(sandbox, "snapshot")
        made = self._call("snapshot", session.snapshot)
        self._to_resume.add(sandbox.id)  # Vercel stopped the session it snapshotted
        return made.id

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        sandbox = self._start("restore", spec, snapshot_id)
        sandbox.facts["restored_from"] = snapshot_id
        return sandbox

    def delete_snapshot(self, snapshot_id: str) -> None:
        client = self._sdk("delete snapshot")
        try:
            found = self._call(
                "delete snapshot", lambda: client.get_snapshot(snapshot_id=snapshot_id)
            )
            self._call("delete snapshot", found.delete)
        except ProviderError as exc:
            if exc.code != "not_found":  # gone already: what a delete wants
                raise

    def snapshot_gone(self, snapshot_id: str) -> bool:
        client = self._sdk("snapshot_gone")
        try:
            found = self._call(
                "snapshot_gone", lambda: client.get_snapshot(snapshot_id=snapshot_id)
            )
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise
        return _status(found) == "deleted"

    def list_snapshots(self, label: str | None = None) -> list[LiveSandbox]:
        """Snapshots left behind, for `bench cleanup`: those of the batch's sandboxes (Vercel's
        snapshots carry no tags; a sandbox's name holds its label). A destroyed sandbox takes its
        snapshots with it (deleteOrphanSnapshots)."""
        client = self._sdk("list snapshots")
        listing = Listing(self._reader("list snapshots"), self.limits.pages, PAGE_SIZE)
        names = {s.id: s.label for s in self._all_sandboxes(label)}

        def walk() -> list[LiveSandbox]:
            found = []
            for name, owner in names.items():
                for item in client.query_snapshots(name=name, page_size=PAGE_SIZE):
                    listing.item(item.id)
                    if _status(item) == "created":
                        made = datetime.fromtimestamp(item.created_at / 1000, UTC)
                        found.append(LiveSandbox(item.id, owner, made))
            return found

        return self._call("list snapshots", walk)

    def _all_sandboxes(self, label: str | None) -> list[LiveSandbox]:
        """Every sandbox of the batch (or the project), stopped ones too."""
        from vercel.sandbox import SandboxQueryByCreatedAt, TagFilter

        client = self._sdk("list snapshots")
        tag = TagFilter(key=BATCH_TAG, value=label) if label is not None else None
        listing = Listing(self._reader("list snapshots"), self.limits.pages, PAGE_SIZE)

        def walk() -> list[LiveSandbox]:
            found = []
            query = SandboxQueryByCreatedAt(tag=tag)
            for item in client.query_sandboxes(query=query, page_size=PAGE_SIZE):
                listing.item(item.name)
                found.append(LiveSandbox(item.name, (item.tags or {}).get(BATCH_TAG, "")))
            return found

        return self._call("list snapshots", walk)

    def _doctor_probe(self) -> None:
        client = self._sdk("doctor")
        self._call("doctor", lambda: next(iter(client.query_sandboxes(page_size=1)), None))

    def _doctor_details(self) -> list[DoctorCheck]:
        from importlib import metadata

        source = (
            f"snapshot {self.base_snapshot}"
            if self.base_snapshot
            else "Vercel's default image (BOXBENCH_VERCEL_SNAPSHOT unset)"
        )
        return [
            DoctorCheck("source", True, source),
            DoctorCheck("sdk", True, f"vercel-sandbox {metadata.version('vercel-sandbox')}"),
        ]


def _status(item) -> str:
    """A handle's status as its wire value (the SDK's enums, or a plain string)."""
    status = getattr(item, "status", None)
    return str(getattr(status, "value", status))


def _when(item) -> datetime | None:
    created = getattr(item, "created_at", None)
    return datetime.fromtimestamp(created / 1000, UTC) if isinstance(created, int) else None


def _unreadable(exc: BaseException) -> str:
    """What the SDK could not read in an answer, as boxbench's readers word it."""
    from pydantic import ValidationError

    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        missing = [".".join(map(str, e["loc"])) for e in cause.errors() if e["type"] == "missing"]
        if missing:
            return f"the answer is missing required field {', '.join(missing[:3])}"
        return f"the answer does not fit the SDK's schema: {cause.errors()[0]['msg']}"
    if isinstance(cause, ValueError) and "JSON" in str(exc):
        return "the answer is not JSON"
    return str(exc)
