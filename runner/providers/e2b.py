"""`e2b`: E2B Firecracker sandboxes, through E2B's official Python SDK (`e2b`, pinned in
requirements-e2b.txt), unmodified.

The SDK is configured only through its documented settings, passed on every call: the API key,
`api_url` and `sandbox_url` when set (else the SDK derives both from `domain`), `retries=0` and a
request timeout. Its control plane is E2B's REST API (spec/openapi.yml in e2b-dev/E2B, `X-API-Key`:
POST /v2/sandboxes, GET and DELETE /sandboxes/{id}, GET /v2/sandboxes by metadata); its data plane
is envd on port 49983 behind the sandbox proxy, over Connect RPC in JSON (commands) and REST
(files), authenticated by the sandbox's access token.

What the SDK would add on its own (docs/providers.md lists it): control-plane retries (3, on 429,
502, 503, 504), off with `retries=0`; retries of a connection that could not be established
(`E2B_CONNECTION_RETRIES`, default 3, read once when the SDK is first imported), set to 0 here
before that import; a health probe of the sandbox after a command stream fails at the transport,
kept (it only words the error); its connection pool, process-wide, idle connections kept 300 s.

- create: `Sandbox.create` with the template, the lifetime as `timeout` (E2B kills the sandbox
  then, even if the runner crashed), the batch label as metadata `boxbench.batch` and
  `allow_internet_access` as the benchmark asks: one POST, answered once the VM has booted.
- exec: `commands.run` in the background (the SDK runs the argv, shell-quoted, under `/bin/bash
  -l -c`), stdin sent and closed, then `wait`; its `timeout` bounds the whole stream, after which
  the command is killed (`commands.kill`, SIGKILL) and reported as ExecTimeout. The SDK hands
  output over as text (UTF-8, invalid bytes replaced): exact bytes travel through files.
- files: `files.write` and `files.read(format="bytes")`.
- destroy: `Sandbox.kill`; gone once `get_info` answers not found. Listing: `Sandbox.list` by
  metadata, running and paused, page by page.
- snapshot: `Sandbox.create_snapshot` (E2B's default, memory and files; the source keeps running),
  named `<batch label>-<epoch seconds>-<6 hex>`: E2B gives a name already taken a new build of
  the same snapshot, so each must be unique, and the listing (`Sandbox.list_snapshots`) has no
  labels or creation times but the name. restore: `Sandbox.create` with the snapshot id as its
  template. delete: `Sandbox.delete_snapshot`; gone once the listing by that id no longer holds it.
- fork: `Sandbox.fork` with count 1: one POST answering a list of one sandbox or one error; the
  fork carries the source's metadata (its batch label), and leaves no snapshot of its own.

Configuration (docs/providers.md): E2B_API_KEY or E2B_API_KEY_FILE; E2B_DOMAIN (default
e2b.app), or E2B_API_URL and E2B_SANDBOX_URL; BOXBENCH_E2B_TEMPLATE, the template built from
boxbench's standard image (default boxbench-standard).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shlex
import time
from datetime import datetime
from typing import Any

from runner.providers import snapshot_names
from runner.providers.answers import (
    BAD_ANSWER,
    TOO_LARGE,
    Capped,
    Listing,
    Reader,
    command_stdout,
)
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
from runner.providers.http import DETAIL_CHARS, HTTPProvider, host_port
from runner.providers.sdk_logs import redact_sdk_logs
from runner.tasks import images
from runner.tasks.images import BuiltImage

BATCH_KEY = "boxbench.batch"
WORKDIR = "/app"
REQUEST_TIMEOUT_S = 60.0
SDK_MISSING = "the e2b package is not installed: pip install -r requirements-e2b.txt"


def _sdk():
    """The `e2b` package, imported on first use with its connection retries off: the SDK reads
    E2B_CONNECTION_RETRIES once, when it is first imported."""
    os.environ["E2B_CONNECTION_RETRIES"] = "0"
    import e2b

    return e2b


def sdk_retries() -> int:
    """The connection retries the imported SDK runs with (0 unless it was imported first
    elsewhere with another E2B_CONNECTION_RETRIES)."""
    from e2b.api import client_sync

    return int(client_sync.connection_retries)


class E2BProvider(HTTPProvider):
    slug = "e2b"
    stdin_adds_requests = True  # SendInput and CloseStdin, two calls to envd
    layer_mechanism = (
        "an E2B snapshot, which E2B keeps as a template (memory and files: E2B has no "
        "file-system-only snapshot)"
    )
    credential_variable = "E2B_API_KEY"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self.domain = self._setting("domain", "E2B_DOMAIN", "e2b.app")
        self.api_url = self._url("api_url", "E2B_API_URL", f"https://api.{self.domain}")
        self.sandbox_url = self._setting("sandbox_url", "E2B_SANDBOX_URL").rstrip("/")
        self.template = self._setting("template", "BOXBENCH_E2B_TEMPLATE", "boxbench-standard")
        self._sdk_missing = importlib.util.find_spec("e2b") is None

    def configuration_problem(self) -> str | None:
        return SDK_MISSING if self._sdk_missing else super().configuration_problem()

    def _params(self, operation: str) -> dict:
        """The SDK's connection settings for one call."""
        self._refuse_if_unconfigured(operation)
        redact_sdk_logs("e2b", self._key)
        params: dict[str, Any] = {
            "api_key": self._key,
            "domain": self.domain,
            "api_url": self.api_url,
            "retries": 0,
            "request_timeout": REQUEST_TIMEOUT_S,
        }
        if self.sandbox_url:
            params["sandbox_url"] = self.sandbox_url
        return params

    def _reader(self, operation: str, *secrets: str | None) -> Reader:
        return Reader("e2b", operation, (self._key, *secrets))

    def _call(self, operation: str, fn, data_plane: bool = False, secrets: tuple = ()):
        """One SDK call; whatever it raises becomes an adapter error (the SDK lets some answers
        it cannot read escape as KeyError or a JSON error: still the provider's failure)."""
        try:
            return fn()
        except ProviderError:
            raise
        except Exception as exc:
            raise self._failure(operation, exc, data_plane, secrets) from exc

    def _failure(self, operation: str, exc, data_plane: bool, secrets: tuple) -> ProviderError:
        """An SDK exception as the adapter error the lifecycle classifies (no credential in it)."""
        import e2b

        status = _status(exc)
        text = f"{type(exc).__name__}: {exc}"
        reader = self._reader(operation, *secrets)
        if isinstance(exc, json.JSONDecodeError):
            # The SDK's generated client decodes every answer before it looks at it: a body that
            # is not JSON escapes as this, with the body itself as its document.
            return reader.fail(f"the answer is not JSON: {reader.preview(exc.doc)}", BAD_ANSWER)
        if isinstance(exc, KeyError):
            # ...and one without a field its model requires escapes as a KeyError.
            return reader.fail(f"the answer is missing required field {exc}", BAD_ANSWER)
        said = redact(text, self._key, *secrets)[:DETAIL_CHARS]
        message = f"e2b {operation}: " + (f"HTTP {status}: " if status else "") + said
        if status in (401, 403):
            return CredentialsRejected(message, operation, "unauthorized")
        if status == 429:
            return ProviderError(message, operation, "rate_limited")
        transport = _transport_cause(exc)
        if data_plane and (
            isinstance(exc, e2b.SandboxUnreachableException)
            or status in (502, 503, 504)
            or transport
        ):
            return NotReady(message, operation, "not_ready")
        if isinstance(exc, e2b.NotFoundException) or status == 404:
            return ProviderError(message, operation, "not_found")
        if transport:
            return ProviderError(message, operation, "transport")
        if isinstance(exc, e2b.TimeoutException):
            return ProviderError(message, operation, "timeout")
        if not isinstance(exc, e2b.SandboxException | e2b.ServiceBusyException):
            return ProviderError(message, operation, BAD_ANSWER)
        return ProviderError(message, operation, str(status or "sdk_error"))

    def _box(self, sandbox: Sandbox, operation: str):
        """The SDK's handle of the sandbox (connected to once when known only by its id)."""
        e2b = _sdk()
        if not isinstance(sandbox.handle, e2b.Sandbox):
            params = self._params(operation)
            sandbox.handle = self._call(
                operation, lambda: e2b.Sandbox.connect(sandbox.id, **params), data_plane=True
            )
        return sandbox.handle

    def _token(self, box) -> str:
        """The sandbox's envd access token, which the SDK holds; kept out of its log records."""
        token = str(getattr(box, "_envd_access_token", "") or "")
        redact_sdk_logs("e2b", token)
        return token

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.image and images.built_here(spec.image):
            return self._start("create", spec.image, spec)
        if spec.image:
            raise ProviderError(
                f"e2b runs the prepared template {self.template!r}, not image {spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        return self._start("create", spec.layer or self.template, spec)

    def _start(self, operation: str, template: str, spec: SandboxSpec) -> Sandbox:
        """A sandbox of `template` (a template name or a snapshot id) for `spec`."""
        e2b = _sdk()
        params = self._params(operation)
        box = self._call(
            operation,
            lambda: e2b.Sandbox.create(
                template=template,
                timeout=_timeout_s(spec),
                metadata={BATCH_KEY: spec.label},
                allow_internet_access=spec.network,
                **params,
            ),
        )
        return self._sandbox(operation, box, spec, template)

    def _sandbox(self, operation: str, box, spec: SandboxSpec, template: str) -> Sandbox:
        return Sandbox(
            id=_required(self._reader(operation), box.sandbox_id, "sandbox id"),
            label=spec.label,
            facts={
                "template": template,
                "envd_version": str(getattr(box, "_envd_version", "")),
                "enforced": {"cpus": True, "memory": True},
                "sdk_connection_retries": sdk_retries(),
            },
            handle=box,
        )

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        if not argv:
            raise ProviderError("e2b exec: empty argv", operation="exec")
        e2b = _sdk()
        box = self._box(sandbox, "exec")
        secrets = (self._token(box),)
        # The SDK keeps no output here (retain_output=False): each chunk comes to a buffer with a
        # cap, so a command that floods its output costs at most max_output_mib.
        reader = self._reader("exec", *secrets)
        cap = self.limits.output_bytes
        stdout = command_stdout(reader, cap)  # or its sink, for output-stream
        stderr = Capped(reader, cap, "the command's stderr", "max_output_mib")
        started = time.monotonic()
        handle = self._call(
            "exec",
            lambda: box.commands.run(
                shlex.join(argv),
                background=True,
                envs=dict(env) if env else None,
                cwd=workdir or WORKDIR,
                stdin=stdin is not None,
                timeout=timeout,
                request_timeout=REQUEST_TIMEOUT_S,
                retain_output=False,
            ),
            data_plane=True,
            secrets=secrets,
        )
        try:
            if stdin is not None:
                if stdin:
                    handle.send_stdin(stdin)
                handle.close_stdin()
            done = handle.wait(
                on_stdout=lambda text: stdout.add(text.encode()),
                on_stderr=lambda text: stderr.add(text.encode()),
            )
        except e2b.CommandExitException as exited:
            done = exited
        except ProviderError as exc:
            if exc.code == TOO_LARGE:
                self._kill(box, handle.pid)  # the command may still be writing
            raise
        except e2b.TimeoutException as exc:
            overdue = (
                not isinstance(
                    exc, e2b.SandboxNotRunningException | e2b.SandboxUnreachableException
                )
                and time.monotonic() - started >= timeout * 0.99
            )
            if not overdue:
                raise self._failure("exec", exc, False, secrets) from exc
            self._kill(box, handle.pid)
            raise ExecTimeout(
                f"e2b: command did not return within {timeout:g} s in sandbox {sandbox.id}",
                operation="exec",
            ) from None
        except Exception as exc:
            # After the start event: the command ran, so a broken stream is not a readiness matter.
            raise self._failure("exec", exc, False, secrets) from exc
        if getattr(done, "error", None):
            said = redact(str(done.error), self._key, *secrets)[:DETAIL_CHARS]
            raise ProviderError(f"e2b exec: {said}", "exec", code="exec_error")
        return ExecResult(int(done.exit_code), bytes(stdout.data), bytes(stderr.data))

    def _kill(self, box, pid) -> None:
        e2b = _sdk()
        # The command may have ended meanwhile; the timeout is reported either way.
        with contextlib.suppress(e2b.SandboxException, e2b.ServiceBusyException):
            box.commands.kill(pid)

    def upload(self, sandbox, path, data) -> None:
        box = self._box(sandbox, "upload")
        self._call(
            "upload",
            lambda: box.files.write(path, data),
            data_plane=True,
            secrets=(self._token(box),),
        )

    def download(self, sandbox, path) -> bytes:
        box = self._box(sandbox, "download")
        secrets = (self._token(box),)
        capped = Capped(
            self._reader("download", *secrets),
            self.limits.download_bytes,
            f"the file {path}",
            "max_download_mib",
        )

        def read() -> bytes:
            # Streamed, so a file past the cap costs at most the cap in memory.
            with box.files.read(path, format="stream") as chunks:
                return capped.read(chunks)

        return self._call("download", read, data_plane=True, secrets=secrets)

    def destroy(self, sandbox) -> None:
        e2b = _sdk()
        params = self._params("destroy")
        self._call("destroy", lambda: e2b.Sandbox.kill(sandbox.id, **params))

    def is_gone(self, sandbox_id: str) -> bool:
        e2b = _sdk()
        params = self._params("is_gone")
        try:
            self._call("is_gone", lambda: e2b.Sandbox.get_info(sandbox_id, **params))
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise
        return False

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        e2b = _sdk()
        params = self._params("list")
        query = e2b.SandboxQuery(
            metadata={BATCH_KEY: label} if label is not None else None,
            state=[e2b.SandboxState.RUNNING, e2b.SandboxState.PAUSED],
        )
        pages = e2b.Sandbox.list(query=query, limit=100, **params)
        listing = Listing(self._reader("list"), self.limits.pages)
        found = []
        while True:
            for item in self._call("list", pages.next_items):
                metadata = item.metadata or {}
                found.append(
                    LiveSandbox(item.sandbox_id, metadata.get(BATCH_KEY, ""), item.started_at)
                )
            # At most max_pages pages, and never a next-page token seen before.
            if not listing.more(pages.next_token if pages.has_next else None):
                return found

    # -- task images -----------------------------------------------------------------------------

    def build_task_image(self, task) -> BuiltImage:
        """The task's Dockerfile built as an E2B template (`Template.build`), untimed, at the
        task's declared size (an E2B template fixes its sandboxes' vCPU and memory); once per
        account and task digest in this process, and E2B's own layer cache after that."""
        # Per account: the API and a digest of its key (templates belong to the key's team).
        account = hashlib.sha256(str(self._key).encode()).hexdigest()[:16]
        name = images.template_name(task)
        return images.build_once(
            f"e2b {self.api_url} {account}", name, lambda: self._build_template(task, name)
        )

    def _build_template(self, task, name: str):
        e2b = _sdk()
        params = self._params("build task image")
        folder = task.path / "environment"
        try:
            template = e2b.Template(file_context_path=str(folder)).from_dockerfile(
                (folder / "Dockerfile").read_text(encoding="utf-8")
            )
        except ValueError as exc:  # the SDK's DockerfileSyntaxError: what its builder refuses
            raise images.BuildError(
                f"E2B's template builder refuses the Dockerfile: {exc}"
            ) from None
        if images.names_standard(task):
            # from_dockerfile reads every FROM as a registry image; the standard image is this
            # account's template of it (BOXBENCH_E2B_TEMPLATE), so the build starts from that,
            # as the SDK's from_template would.
            template._template._base_template = self.template
            template._template._base_image = None
        try:
            info = e2b.Template.build(
                template, name, cpu_count=task.cpus, memory_mb=task.memory_mib, **params
            )
            return BuiltImage(info.template_id, info.build_id)
        except e2b.BuildException as exc:
            if _status(exc) or _transport_cause(exc):
                raise self._failure("build task image", exc, False, ()) from exc
            raise images.BuildError(f"E2B's build of template {name} failed: {exc}") from None
        except Exception as exc:
            raise self._failure("build task image", exc, False, ()) from exc

    # -- snapshots and forks ---------------------------------------------------------------------

    def snapshot(self, sandbox: Sandbox) -> str:
        e2b = _sdk()
        params = self._params("snapshot")
        name = snapshot_names.make(sandbox.label)
        info = self._call(
            "snapshot", lambda: e2b.Sandbox.create_snapshot(sandbox.id, name=name, **params)
        )
        return _required(self._reader("snapshot"), info.snapshot_id, "snapshot id")

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        sandbox = self._start("restore", snapshot_id, spec)
        sandbox.facts["restored_from"] = snapshot_id
        return sandbox

    def delete_snapshot(self, snapshot_id: str) -> None:
        e2b = _sdk()
        params = self._params("delete snapshot")
        # The SDK answers False for a snapshot E2B no longer has: gone, as a delete wants.
        self._call("delete snapshot", lambda: e2b.Sandbox.delete_snapshot(snapshot_id, **params))

    def snapshot_gone(self, snapshot_id: str) -> bool:
        found = self._snapshots("snapshot_gone", name=snapshot_id)
        return all(info.snapshot_id != snapshot_id for info in found)

    def list_snapshots(self, label: str | None = None) -> list[LiveSandbox]:
        """Snapshots left behind, for `bench cleanup`: those named by `snapshot`, with the batch
        label and creation time read back from the name (any other has no label: not ours)."""
        found = []
        for info in self._snapshots("list snapshots"):
            label_made = _snapshot_name(info.names)
            live = LiveSandbox(info.snapshot_id, *(label_made or ("", None)))
            if label is None or live.label == label:
                found.append(live)
        return found

    def _snapshots(self, operation: str, name: str | None = None) -> list:
        """Every snapshot of the account (or of that name or id), page by page."""
        e2b = _sdk()
        params = self._params(operation)
        pages = e2b.Sandbox.list_snapshots(name=name, limit=100, **params)
        listing = Listing(self._reader(operation), self.limits.pages)
        found = []
        while True:
            found += self._call(operation, pages.next_items)
            if not listing.more(pages.next_token if pages.has_next else None):
                return found

    def fork(self, sandbox: Sandbox, spec: SandboxSpec) -> Sandbox:
        e2b = _sdk()
        params = self._params("fork")
        forks = self._call(
            "fork",
            lambda: e2b.Sandbox.fork(sandbox.id, timeout=_timeout_s(spec), count=1, **params),
        )
        if len(forks) != 1:
            for made in forks:  # none of them is the one fork asked for: none may outlive this
                if isinstance(made, e2b.Sandbox):
                    with contextlib.suppress(ProviderError):
                        self.destroy(Sandbox(made.sandbox_id, spec.label))
            raise self._reader("fork").fail(f"the answer holds {len(forks)} forks, not 1")
        [made] = forks
        if isinstance(made, Exception):
            raise self._failure("fork", made, False, ())
        copy = self._sandbox("fork", made, spec, self.template)
        copy.facts["forked_from"] = sandbox.id
        return copy

    def endpoints(self) -> list[tuple[str, int]]:
        return [host_port(self.api_url), host_port(self.sandbox_url or f"https://{self.domain}")]

    def _doctor_probe(self) -> None:
        e2b = _sdk()
        params = self._params("doctor")
        self._call("doctor", e2b.Sandbox.list(limit=1, **params).next_items)

    def _doctor_details(self) -> list[DoctorCheck]:
        import e2b

        version = getattr(e2b, "__version__", "") or _installed("e2b")
        return [
            DoctorCheck("template", True, f"{self.template} (BOXBENCH_E2B_TEMPLATE)"),
            DoctorCheck("sdk", True, f"e2b {version}, connection retries {sdk_retries()}"),
        ]


def _timeout_s(spec: SandboxSpec) -> int:
    """The lifetime as E2B's `timeout`: whole seconds, rounded up."""
    return max(1, int(-(-spec.lifetime_s // 1)))


def _required(reader: Reader, value, what: str) -> str:
    """An id the answer must hold: a string, not empty."""
    if not isinstance(value, str):
        raise reader.fail(f"the {what} in the answer is a {type(value).__name__}, not a string")
    if not value:
        raise reader.fail(f"the {what} in the answer is empty")
    return value


def _snapshot_name(names) -> tuple[str, datetime] | None:
    """The batch label and creation time in the name `snapshot` gave, among a snapshot's full
    names (`<team>/<name>:<tag>`), or None for a snapshot named otherwise."""
    for full in names or []:
        named = snapshot_names.read(str(full).rpartition("/")[2].partition(":")[0])
        if named:
            return named
    return None


def _status(exc: BaseException) -> int | None:
    """The HTTP status behind an SDK exception: its own, or the one its class stands for."""
    import e2b

    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    for kind, code in (
        (e2b.AuthenticationException, 401),
        (e2b.RateLimitException, 429),
        (e2b.ServiceBusyException, 503),
    ):
        if isinstance(exc, kind):
            return code
    return None


def _transport_cause(exc: BaseException) -> bool:
    """Whether a connection failure (refused, reset) lies under the SDK's exception."""
    seen = exc.__cause__ or exc.__context__
    while seen is not None:
        if isinstance(seen, OSError) or type(seen).__module__.startswith(("pyqwest", "httpx")):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _installed(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"
