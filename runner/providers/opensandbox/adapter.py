"""The OpenSandbox provider, through OpenSandbox's own Python SDK (`opensandbox`, pinned in
requirements-opensandbox.txt): its lifecycle API (`/v1/sandboxes...`) and each sandbox's execd.

The SDK is configured only through its documented `ConnectionConfigSync`: the server's domain,
the API key, a request timeout, and a transport of our own (one per adapter instance, shared by
every SDK client it builds: idle connections kept up to 5 min, TCP_NODELAY, no proxy). Given a
transport, the SDK installs none of its own, so its retry layer (3 retries of GET/DELETE on 429,
502 and 503, and of any request that failed before it was sent) is absent; its retry policy is
set to `disabled()` as well, its create-latency report to the server (`disable_metrics`) is off,
and create skips its execd health poll. A timed operation is therefore one call as the
methodology defines it. docs/providers.md lists what each SDK call sends.

- create: `SandboxSync.create` with the image, `sleep infinity` as entrypoint, a TTL the server
  enforces (at least 60 s, its minimum), the requested CPUs and memory, the batch label as
  metadata, a fresh execd access token of the sandbox's own in its environment (sent on its
  execd calls) and `skip_health_check`: POST /v1/sandboxes, then the endpoints of execd (44772)
  and of the egress sidecar (18080), which the SDK resolves before it returns (it asks again
  while a Kubernetes server answers 404 POD_IP_NOT_AVAILABLE). Whether execd answers is the
  lifecycle's readiness check: its `true` goes through exec, which raises NotReady on refused or
  reset connections and 502/503/504. A create that fails after the POST is killed by the SDK itself.
- exec: `commands.run` with the argv shell-quoted (execd takes a shell command), the working
  directory (default /app), the environment, and execd's own time limit a little past ours; the
  SDK reads the event stream. A command that outlives its timeout is interrupted
  (`commands.interrupt`) and reported as ExecTimeout. stdin travels as a temporary file, removed
  before the command starts. Long commands run in the background through the lifecycle's own
  script (runner/clock.py).
- files: `files.write_file` (execd's multipart upload) and `files.read_bytes`.
- destroy: `kill_sandbox` (404 counts as gone), tried again for up to 60 s while the server
  refuses or resets the connection (a restart, which its sandboxes outlive); is_gone: the get
  answers 404. The TTL removes a sandbox (404, not Terminated).
- list_sandboxes: `list_sandbox_infos` by metadata `boxbench.batch=<label>`, page by page. A page
  is asked again for up to 5 s while the server answers 500 `SANDBOX_QUERY_FAILED`: on the Docker
  runtime it inspects each container it listed, and one deleted in between fails the listing.
- renew, pause, resume (declared as `pause`), snapshot (`docker commit` on the Docker runtime,
  named with the batch label), restore (create from snapshotId) and delete_snapshot. No fork.
- list_strays/remove_stray: the execd helper containers `sandbox-execd-*` a failed create leaves
  on the engine; only with BOXBENCH_OPENSANDBOX_DOCKER_HOST (the server's engine) set.

Settings (docs/providers.md): OPEN_SANDBOX_DOMAIN (host:port or a URL; default 127.0.0.1:8080),
OPEN_SANDBOX_API_KEY or OPEN_SANDBOX_API_KEY_FILE, BOXBENCH_OPENSANDBOX_IMAGE (default: the
pinned standard image), BOXBENCH_OPENSANDBOX_DOCKER_HOST. Constructor settings (url, api_key,
image, docker_host) win over the environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import secrets
import shlex
import socket
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx

from runner import waiting
from runner.images.build import ImageError, load_recipe, read_pin
from runner.providers.answers import AnswerLimits, Capped, Listing, Reader, command_stdout
from runner.providers.base import (
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    NotDeclared,
    NotReady,
    Provider,
    ProviderError,
    Sandbox,
    SandboxSpec,
)
from runner.providers.credentials import redact
from runner.providers.opensandbox.errors import SandboxGone, error_for
from runner.providers.sdk_logs import redact_sdk_logs

BATCH_KEY = "boxbench.batch"
WORKDIR = "/app"
ENTRYPOINT = ["sleep", "infinity"]
MIN_TTL_S = 60  # the server refuses a timeout below 60 s (422)
DEFAULT_DOMAIN = "127.0.0.1:8080"
API_TIMEOUT_S = 120.0
KEEPALIVE_S = 300.0  # idle connections stay open up to 5 min
# A sandbox or snapshot on its way to a state is asked every 0.1 s, for up to 2 min.
STATE_POLL = waiting.every(0.1)
STATE_WAIT_S = 120.0
EXEC_BACKSTOP_S = 5.0  # execd kills a command this long after the adapter's own timeout
HELPER_PREFIX = "sandbox-execd-"
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
HELPER_KIND = "opensandbox-execd"
# Every sandbox's execd is given a token of its own and refuses calls without it: on a bridge
# network the other sandboxes reach its port, and without a token any of them could run commands
# in it. Its name and header are execd's (OpenSandbox's execd API).
EXECD_TOKEN_ENV = "EXECD_ACCESS_TOKEN"
EXECD_TOKEN_HEADER = "X-EXECD-ACCESS-TOKEN"
# A destroy refused while the server restarts is tried again this long: its sandboxes outlive
# the restart (docs/reliability.md, C5), and a restart here takes seconds.
DESTROY_RETRY_S = 60.0
# A listing that met a container deleted while the server inspected it is asked again this long.
LIST_RETRY_S = 5.0
# Both are tried again after 0.25 s, doubling up to 2 s.
RETRY_BACKOFF = waiting.Backoff(first_s=0.25, factor=2, cap_s=2.0)
SDK_MISSING = (
    "the opensandbox package is not installed: pip install -r requirements-opensandbox.txt"
)


def _not_ready(error: BaseException) -> bool:
    return isinstance(error, NotReady)


def _query_failed(error: BaseException) -> bool:
    return isinstance(error, ProviderError) and error.code.endswith("SANDBOX_QUERY_FAILED")


def credential(name: str, settings_value: str = "") -> str:
    """A secret from the settings, from $NAME, or from the file $NAME_FILE names."""
    if settings_value:
        return settings_value
    value = os.environ.get(name, "")
    if value:
        return value
    path = os.environ.get(f"{name}_FILE", "")
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as exc:
        raise ProviderError(
            f"{name}_FILE={path}: cannot read the key: {exc.strerror}", "config"
        ) from None


def base_url(domain: str) -> str:
    domain = domain.strip().rstrip("/")
    if not domain:
        raise ProviderError("OPEN_SANDBOX_DOMAIN is empty", "config")
    url = domain if "://" in domain else f"http://{domain}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProviderError(f"OPEN_SANDBOX_DOMAIN={domain!r}: use host:port or a URL", "config")
    return url


def sdk_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("opensandbox")
    except metadata.PackageNotFoundError:
        return "not installed"


class OpenSandboxProvider(Provider):
    slug = "opensandbox"
    stdin_adds_requests = True
    layer_mechanism = "an OpenSandbox snapshot (an image commit), the source a create starts from"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        if declaration is not None and getattr(declaration, "provider", None):
            self.slug = declaration.provider
        named = self.settings.get("url") or os.environ.get("OPEN_SANDBOX_DOMAIN")
        self.configured = bool(named)
        self.url = base_url(named or DEFAULT_DOMAIN)
        self._api_key = credential("OPEN_SANDBOX_API_KEY", self.settings.get("api_key", ""))
        self.image_setting = self.settings.get("image") or os.environ.get(
            "BOXBENCH_OPENSANDBOX_IMAGE", ""
        )
        self.docker_host = self.settings.get("docker_host") or os.environ.get(
            "BOXBENCH_OPENSANDBOX_DOCKER_HOST", ""
        )
        self._problem = None if importlib.util.find_spec("opensandbox") else SDK_MISSING
        self._transport: httpx.HTTPTransport | None = None
        self._config = None
        self._manager = None
        self._lock = threading.Lock()
        self.limits = AnswerLimits.from_settings(self.settings)
        self._execd_tokens: dict[str, str] = {}  # sandbox id -> its execd's token

    def __repr__(self) -> str:  # never the key
        return f"OpenSandboxProvider({self.url})"

    def configuration_problem(self) -> str | None:
        return self._problem

    # -- the SDK ------------------------------------------------------------------------------

    @property
    def config(self):
        """The SDK's connection settings, built once per adapter instance."""
        with self._lock:
            if self._config is None:
                if self._problem:
                    raise ProviderError(f"opensandbox: {self._problem}", code="unconfigured")
                from opensandbox.config.connection_sync import ConnectionConfigSync
                from opensandbox.transport import RetryPolicy

                # The SDK logs a failed call with the server's answer, which may echo the key.
                redact_sdk_logs("opensandbox", self._api_key)
                limits = httpx.Limits(keepalive_expiry=KEEPALIVE_S)
                # A request's headers and body leave at once, not after a delayed ACK; no proxy
                # (loopback and self-hosted servers).
                self._transport = httpx.HTTPTransport(limits=limits, socket_options=NODELAY)
                self._config = ConnectionConfigSync(
                    domain=self.url,
                    protocol=urlsplit(self.url).scheme,
                    api_key=self._api_key or None,
                    request_timeout=timedelta(seconds=API_TIMEOUT_S),
                    transport=self._transport,
                    retry_policy=RetryPolicy.disabled(),
                    disable_metrics=True,
                )
            return self._config

    def execd_config(self, token: str):
        """The connection settings of one sandbox: its execd token goes with every call."""
        config = self.config
        return config.model_copy(update={"headers": {**config.headers, EXECD_TOKEN_HEADER: token}})

    @property
    def manager(self):
        config = self.config
        with self._lock:
            if self._manager is None:
                from opensandbox.sync.manager import SandboxManagerSync

                self._manager = SandboxManagerSync.create(connection_config=config)
            return self._manager

    def close(self) -> None:
        with self._lock:
            if self._transport is not None:
                self._transport.close()
            self._transport = self._config = self._manager = None

    def _secrets(self) -> tuple:
        return (self._api_key, *self._execd_tokens.values())

    def _reader(self, operation: str, *secrets: str | None) -> Reader:
        return Reader(self.slug, operation, (*self._secrets(), *secrets))

    def _call(self, operation: str, fn, where: str = ""):
        """One SDK call, its failure as the adapter error for it (the key never shown)."""
        from opensandbox.exceptions import SandboxException

        try:
            return fn()
        except SandboxException as exc:
            raise sdk_failure(operation, exc, where or self.url, self._secrets()) from None

    # -- sandboxes ----------------------------------------------------------------------------

    def image(self) -> str:
        if self.image_setting:
            return self.image_setting
        try:
            return load_recipe().tag(read_pin())
        except ImageError as exc:
            raise ProviderError(f"create: the standard image: {exc}", "create") from exc

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.layer:
            return self._create(spec, {"snapshot_id": spec.layer}, {"unique_layer": spec.layer})
        image = spec.image or self.image()
        return self._create(spec, {"image": image}, {"image": image})

    def _create(self, spec: SandboxSpec, source: dict, facts: dict) -> Sandbox:
        from opensandbox.sync.sandbox import SandboxSync

        ttl = max(MIN_TTL_S, math.ceil(spec.lifetime_s))
        resource = {"cpu": f"{spec.cpus:g}", "memory": f"{spec.memory_mib}Mi"}
        token = secrets.token_urlsafe(24)
        box = self._call(
            "create",
            lambda: SandboxSync.create(
                **source,
                entrypoint=ENTRYPOINT,
                timeout=timedelta(seconds=ttl),
                resource=resource,
                metadata={BATCH_KEY: spec.label},
                env={EXECD_TOKEN_ENV: token},
                connection_config=self.execd_config(token),
                # Readiness is the lifecycle's own check, untimed; see the module docstring.
                skip_health_check=True,
            ),
        )
        self._execd_tokens[box.id] = token
        facts.update(
            {
                "cpus": spec.cpus,
                "memory_mib": spec.memory_mib,
                "resource_limits": resource,
                "lifetime_s": ttl,
                "execd_endpoint": _execd_endpoint(box),
                # No egress sidecar here: bridge networking, not cut off (no network_lockdown).
                "network": "bridge",
            }
        )
        return Sandbox(id=box.id, label=spec.label, facts=facts, handle=box)

    def get(self, sandbox_id: str, operation: str = "get"):
        """The SDK's SandboxInfo of one sandbox (SandboxGone once the server no longer has it)."""
        return self._call(operation, lambda: self.manager.get_sandbox_info(sandbox_id))

    def _wait_state(self, sandbox_id: str, wanted: str, operation: str):
        latest: list = [None]

        def reached() -> bool:
            latest[0] = info = self.get(sandbox_id, operation)
            status = info.status
            if status.state in ("Failed", "Terminated"):
                raise ProviderError(
                    f"{operation}: sandbox {sandbox_id} is {status.state} "
                    f"({status.reason or ''}: {status.message or ''})",
                    operation,
                    code=status.reason or "",
                )
            return status.state == wanted

        if not waiting.poll_until(reached, STATE_WAIT_S, STATE_POLL):
            raise ProviderError(
                f"{operation}: sandbox {sandbox_id} still {latest[0].status.state} after "
                f"{STATE_WAIT_S:g}s",
                operation,
            )
        return latest[0]

    def _box(self, sandbox: Sandbox, operation: str):
        """The SDK's handle of a sandbox; a sandbox known only by its id (a listing's) is
        connected to once, without the SDK's health poll."""
        from opensandbox.sync.sandbox import SandboxSync

        if not isinstance(sandbox.handle, SandboxSync):
            token = self._execd_tokens.get(sandbox.id)
            # A sandbox this adapter did not create: its execd refuses every call but the
            # lifecycle's, which need no token.
            config = self.config if token is None else self.execd_config(token)
            sandbox.handle = self._call(
                operation,
                lambda: SandboxSync.connect(
                    sandbox.id, connection_config=config, skip_health_check=True
                ),
            )
        return sandbox.handle

    def destroy(self, sandbox: Sandbox) -> None:
        with contextlib.suppress(SandboxGone):  # its TTL got there first
            waiting.retry_while(
                _not_ready,
                lambda: self._call("destroy", lambda: self.manager.kill_sandbox(sandbox.id)),
                DESTROY_RETRY_S,
                RETRY_BACKOFF,
                errors=(ProviderError,),
            )
        self._execd_tokens.pop(sandbox.id, None)

    def is_gone(self, sandbox_id: str) -> bool:
        try:
            self.get(sandbox_id, "confirm deletion")
        except SandboxGone:
            return True
        return False

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        from opensandbox.models.sandboxes import SandboxFilter

        metadata = {BATCH_KEY: label} if label else None
        found, page = [], 1
        guard = Listing(self._reader("list"), self.limits.pages)
        while True:
            query = SandboxFilter(metadata=metadata, page=page, page_size=100)
            answer = self._list_page(query)
            for info in answer.sandbox_infos:
                batch = (info.metadata or {}).get(BATCH_KEY)
                if batch is None or (label and batch != label):
                    continue
                found.append(LiveSandbox(info.id, batch, _utc(info.created_at)))
            page += 1
            if not guard.more(answer.pagination.has_next_page and page):
                return found

    def _list_page(self, query):
        return waiting.retry_while(
            _query_failed,
            lambda: self._call("list", lambda: self.manager.list_sandbox_infos(query)),
            LIST_RETRY_S,
            RETRY_BACKOFF,
            errors=(ProviderError,),
        )

    # -- exec ---------------------------------------------------------------------------------

    def exec(
        self,
        sandbox: Sandbox,
        argv: list[str],
        timeout: float,
        stdin: bytes | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        if not argv:
            raise ProviderError("exec needs a command", operation="exec")
        from opensandbox.models.execd import RunCommandOpts

        box = self._box(sandbox, "exec")
        command = shlex.join(argv)
        if stdin is not None:
            path = f"/tmp/.boxbench-stdin-{uuid.uuid4().hex}"
            self._write(box, path, stdin, "exec")
            # Removed once open, before the command starts (the guest clock's key: clock.py).
            command = f"(exec < {path}; rm -f {path}; exec {command}); status=$?; rm -f {path}"
            command += '; exit "$status"'
        opts = RunCommandOpts(
            working_directory=workdir or WORKDIR,
            timeout=timedelta(seconds=math.ceil(timeout + EXEC_BACKSTOP_S)),
            envs=dict(env) if env else None,
        )
        cap = self.limits.output_bytes
        run = _Command(box, command, opts, self._reader("exec"), cap)
        reader = threading.Thread(target=run.run, name="opensandbox-exec", daemon=True)
        reader.start()
        reader.join(timeout)
        if run.overflow is not None:
            run.interrupt()  # the command may still be writing
        elif reader.is_alive():
            run.interrupt()
            reader.join(5)
            raise ExecTimeout(
                f"exec {argv[0]!r} did not return within {timeout:g}s; execd interrupted it",
                operation="exec",
            )
        return run.result(self._secrets())

    # -- files --------------------------------------------------------------------------------

    def upload(self, sandbox: Sandbox, path: str, data: bytes) -> None:
        self._write(self._box(sandbox, "upload"), _absolute(path, "upload"), data, "upload")

    def _write(self, box, path: str, data: bytes, operation: str) -> None:
        where = _execd_endpoint(box)
        self._call(operation, lambda: box.files.write_file(path, data, mode=644), where)

    def download(self, sandbox: Sandbox, path: str) -> bytes:
        path = _absolute(path, "download")
        box = self._box(sandbox, "download")
        capped = Capped(
            self._reader("download"),
            self.limits.download_bytes,
            f"the file {path}",
            "max_download_mib",
        )
        # Streamed, so a file past the cap is never held whole.
        return self._call(
            "download", lambda: capped.read(box.files.read_bytes_stream(path)), _execd_endpoint(box)
        )

    # -- renew, pause, resume -----------------------------------------------------------------

    def renew(self, sandbox: Sandbox, seconds: float) -> datetime:
        """Move the sandbox's expiry to `seconds` from now; the server's new expiry."""
        answer = self._call(
            "renew", lambda: self.manager.renew_sandbox(sandbox.id, timedelta(seconds=seconds))
        )
        return _utc(answer.expires_at) or datetime.now(UTC) + timedelta(seconds=seconds)

    def pause(self, sandbox: Sandbox) -> None:
        self._declared("pause")
        self._call("pause", lambda: self.manager.pause_sandbox(sandbox.id))
        self._wait_state(sandbox.id, "Paused", "pause")

    def resume(self, sandbox: Sandbox) -> None:
        self._declared("pause")
        self._call("resume", lambda: self.manager.resume_sandbox(sandbox.id))
        self._wait_state(sandbox.id, "Running", "resume")
        sandbox.handle = None  # execd's endpoint may change across a pause (the SDK says so)

    def _declared(self, capability: str) -> None:
        capabilities = getattr(self.declaration, "capabilities", ()) or ()
        if self.declaration is not None and capability not in capabilities:
            raise NotDeclared(f"{self.slug} does not declare {capability}", operation=capability)

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self, sandbox: Sandbox) -> str:
        self._declared("snapshot")
        info = self._call(
            "snapshot", lambda: self.manager.create_snapshot(sandbox.id, name=sandbox.label)
        )
        latest = [info]

        def ready() -> bool:
            if latest[0].status.state == "Failed":
                raise _snapshot_failed(latest[0])
            return latest[0].status.state == "Ready"

        def asked_again() -> bool:
            latest[0] = self._call("snapshot", lambda: self.manager.get_snapshot(info.id))
            return ready()

        # The answer to the create is the first look: the next comes after a pause.
        if ready() or waiting.poll_until(asked_again, STATE_WAIT_S, STATE_POLL, ask_first=False):
            return info.id
        raise _snapshot_failed(latest[0])

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        self._declared("snapshot")
        return self._create(spec, {"snapshot_id": snapshot_id}, {"restored_from": snapshot_id})

    def delete_snapshot(self, snapshot_id: str) -> None:
        with contextlib.suppress(SandboxGone):
            self._call("delete snapshot", lambda: self.manager.delete_snapshot(snapshot_id))

    def list_snapshots(self, label: str | None = None) -> list[LiveSandbox]:
        """Snapshots left behind (named with their batch label), for `bench cleanup`."""
        from opensandbox.models.sandboxes import SnapshotFilter

        found, page = [], 1
        guard = Listing(self._reader("list snapshots"), self.limits.pages)
        while True:
            query = SnapshotFilter(name=label or None, page=page, page_size=200)
            answer = self._call("list snapshots", lambda q=query: self.manager.list_snapshots(q))
            for info in answer.snapshot_infos:
                found.append(LiveSandbox(info.id, info.name or "", _utc(info.created_at)))
            page += 1
            if not guard.more(answer.pagination.has_next_page and page):
                return found

    # -- the engine's leftovers ---------------------------------------------------------------

    def list_strays(self) -> list[LiveSandbox]:
        """Execd helper containers (`sandbox-execd-*`, from boxbench's execd image) on the
        server's engine: the server removes each after copying execd out, except when starting it
        failed. Empty without BOXBENCH_OPENSANDBOX_DOCKER_HOST."""
        if not self.docker_host:
            return []
        import docker.errors

        api = self._engine()
        try:
            found = api.containers(all=True, filters={"label": f"boxbench.kind={HELPER_KIND}"})
        except (docker.errors.DockerException, OSError) as exc:
            where = f"BOXBENCH_OPENSANDBOX_DOCKER_HOST={self.docker_host}"
            raise ProviderError(f"list helper containers: {where}: {exc}", "cleanup") from exc
        finally:
            api.close()
        strays = []
        for container in found:
            names = [name.lstrip("/") for name in container.get("Names") or []]
            if not any(name.startswith(HELPER_PREFIX) for name in names):
                continue
            created = container.get("Created")
            numeric = isinstance(created, int | float)
            when = datetime.fromtimestamp(created, UTC) if numeric else None
            label = (container.get("Labels") or {}).get(BATCH_KEY, "")
            strays.append(LiveSandbox(container["Id"], label, when))
        return strays

    def remove_stray(self, stray: LiveSandbox) -> None:
        import docker.errors

        api = self._engine()
        try:
            api.remove_container(stray.id, force=True)
        except docker.errors.NotFound:
            return
        except docker.errors.DockerException as exc:
            raise ProviderError(f"remove {stray.id[:12]}: {exc}", "cleanup") from exc
        finally:
            api.close()

    def _engine(self):
        import docker
        import docker.errors

        try:
            return docker.APIClient(base_url=self.docker_host, version="auto", timeout=60)
        except docker.errors.DockerException as exc:
            raise ProviderError(
                f"BOXBENCH_OPENSANDBOX_DOCKER_HOST={self.docker_host}: {exc}", "cleanup"
            ) from exc

    # -- doctor, baseline ---------------------------------------------------------------------

    def endpoints(self) -> list[tuple[str, int]]:
        parts = urlsplit(self.url)
        return [(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))]

    def doctor(self) -> list[DoctorCheck]:
        if self._problem:
            if not self.configured:
                return [DoctorCheck.not_configured("sdk", self._problem)]
            return [DoctorCheck("sdk", False, self._problem)]
        from opensandbox.models.sandboxes import SandboxFilter

        try:
            self._call("list", lambda: self.manager.list_sandbox_infos(SandboxFilter(page_size=1)))
        except NotReady as exc:
            hint = "set OPEN_SANDBOX_DOMAIN, or start one: "
            hint += "python -m runner.providers.opensandbox serve"
            if not self.configured:
                # Nobody asked for OpenSandbox: as for the cloud providers, not configured is
                # not a failure; a server that was named and does not answer is.
                return [
                    DoctorCheck.not_configured(
                        "server", f"not configured (no server at {self.url}; {hint})"
                    )
                ]
            return [
                DoctorCheck("server", False, f"no OpenSandbox server at {self.url} ({exc}); {hint}")
            ]
        except ProviderError as exc:
            server = DoctorCheck("server", True, f"{self.url} answers (SDK {sdk_version()})")
            return [server, DoctorCheck("api key", False, str(exc))]
        return [
            DoctorCheck("server", True, f"{self.url} answers (SDK {sdk_version()})"),
            DoctorCheck("api key", True, "the server accepts the key"),
        ]


class _Command:
    """One `commands.run`, in a thread of its own (the caller times it out)."""

    def __init__(self, box, command: str, opts, reader: Reader, cap: int):
        self.box, self.command, self.opts = box, command, opts
        self.command_id: str | None = None
        self.execution: Any = None
        self.failure: Exception | None = None
        # Output is gathered here, not by the SDK, up to max_output_mib a stream.
        self.stdout = command_stdout(reader, cap)  # or its sink, for output-stream
        self.stderr = Capped(reader, cap, "the command's stderr", "max_output_mib")
        self.overflow: ProviderError | None = None

    def run(self) -> None:
        from opensandbox.models.execd_sync import ExecutionHandlersSync

        handlers = ExecutionHandlersSync(
            on_init=self._started,
            on_stdout=lambda message: self._gather(self.stdout, message),
            on_stderr=lambda message: self._gather(self.stderr, message),
            skip_accumulation=True,
        )
        try:
            self.execution = self.box.commands.run(self.command, opts=self.opts, handlers=handlers)
        except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
            self.failure = exc

    def _started(self, init) -> None:
        self.command_id = init.id

    def _gather(self, into: Capped, message) -> None:
        try:
            into.add(_bytes(message.text))
        except ProviderError as exc:
            self.overflow = exc  # raising ends the SDK's reading of the stream
            raise

    def interrupt(self) -> None:
        from opensandbox.exceptions import SandboxException

        if self.command_id:
            # The sandbox may be gone: a timeout either way.
            with contextlib.suppress(SandboxException):
                self.box.commands.interrupt(self.command_id)

    def result(self, secrets: tuple) -> ExecResult:
        from opensandbox.exceptions import SandboxException

        where = _execd_endpoint(self.box)
        if self.overflow is not None:
            raise self.overflow
        if isinstance(self.failure, SandboxException):
            failure = sdk_failure("exec", self.failure, where, secrets)
            if self.command_id and isinstance(failure, NotReady):
                # The stream broke after execd had started the command: not a readiness matter.
                failure = ProviderError(f"exec: the execd stream broke: {failure}", "exec")
            raise failure
        if self.failure is not None:
            raise self.failure
        execution = self.execution
        error = execution.error
        if error is not None and error.name != "CommandExecError":
            raise ProviderError(f"exec: execd error {error.name}: {error.value}", "exec")
        if error is not None:
            try:
                exit_code = int(str(error.value).strip())
            except ValueError:
                raise ProviderError(
                    f"exec: exit code {error.value!r} is not a number", "exec"
                ) from None
        elif execution.complete is not None:
            exit_code = 0
        else:
            raise ProviderError("exec: the execd stream ended without an exit status", "exec")
        return ExecResult(
            exit_code=exit_code,
            stdout=bytes(self.stdout.data),
            stderr=bytes(self.stderr.data),
        )


def sdk_failure(operation: str, exc, where: str, secrets: tuple) -> Exception:
    """The adapter error for an exception of the SDK: an API answer by its status and body (as
    errors.error_for classes them), a transport failure by its kind (refused or reset: NotReady),
    anything else a ProviderError; the credentials removed from every message."""
    from opensandbox.exceptions import SandboxApiException

    status = getattr(exc, "status_code", None) if isinstance(exc, SandboxApiException) else None
    if status:
        body = exc.response_body
        text = body.decode("utf-8", "replace") if body else str(exc)
        return error_for(operation, status, text, secrets=secrets)
    cause = exc.__cause__
    while cause is not None and not isinstance(cause, httpx.TransportError):
        cause = cause.__cause__
    if cause is not None:
        return _transport_error(operation, cause, where, secrets)
    return ProviderError(f"{operation}: {redact(str(exc), *secrets)[:500]}", operation)


def _execd_endpoint(box) -> str:
    """execd's address as the SDK resolved it at create (no lookup of its own)."""
    service = box.commands
    return str(getattr(getattr(service, "execd_endpoint", None), "endpoint", "") or "")


def _bytes(text: str) -> bytes:
    # execd sends non-UTF-8 output as surrogate escapes; another execd may send U+FFFD instead.
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _transport_error(operation: str, exc: Exception, where: str, secrets: tuple = ()):
    """Refused, reset or timed-out connections: not ready (the readiness check retries them)."""
    text = redact(str(exc), *secrets)
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.RemoteProtocolError):
        return NotReady(f"{operation}: {where}: {type(exc).__name__}: {text}", operation)
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        return NotReady(f"{operation}: {where}: connection reset: {text}", operation)
    return ProviderError(f"{operation}: {where}: {type(exc).__name__}: {text}", operation)


def _absolute(path: str, operation: str) -> str:
    if not path:
        raise ProviderError(f"{operation}: empty path", operation=operation)
    if path.endswith("/"):
        raise ProviderError(f"{operation}: {path!r} names a directory, not a file", operation)
    return path if path.startswith("/") else f"{WORKDIR}/{path}"


def _snapshot_failed(info) -> ProviderError:
    status = info.status
    return ProviderError(
        f"snapshot {info.id}: {status.state or 'no state'} "
        f"({status.reason or ''}: {status.message or ''})",
        "snapshot",
        code=status.reason or "",
    )


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)
