"""The OpenSandbox provider: its lifecycle API (`/v1/sandboxes...`) and each sandbox's execd.

One httpx client per adapter instance, with keep-alive up to 5 min (the methodology's Connections
rule), for both planes; the API key goes only on lifecycle calls, never to a sandbox's execd.

- create: POST /v1/sandboxes with the image, `sleep infinity` as entrypoint, a TTL the server
  enforces (at least 60 s, its minimum), the requested CPUs and memory and the batch label as
  metadata. 202 answers `Running` on the Docker runtime and `Pending` elsewhere: the adapter polls
  GET until `Running`, then looks up execd's endpoint (port 44772, `host:port/proxy/44772` in
  bridge mode) and returns. Whether execd answers is the lifecycle's readiness check: its `true`
  goes through exec, which raises NotReady on refused or reset connections and 502/503/504.
- exec: POST {execd}/command with the argv shell-quoted (execd takes a shell command), the working
  directory (default /app) and the environment; the event stream gives stdout, stderr and the exit
  code (`error` CommandExecError with the code, or `execution_complete` for 0). A command that
  outlives its timeout is interrupted (DELETE /command?id=) and reported as ExecTimeout. stdin
  travels as a temporary file. Long commands run in the background through the lifecycle's own
  script (runner/clock.py), as on every provider.
- files: execd's /files/upload (multipart: metadata, then file) and /files/download.
- destroy: DELETE (404 counts as gone), tried again for up to 60 s while the server refuses or
  resets the connection (a restart, which its sandboxes outlive); is_gone: GET answers 404. The
  TTL removes a sandbox (GET then answers 404, not Terminated).
- list_sandboxes: GET /v1/sandboxes?metadata=boxbench.batch=<label>, page by page. A page is
  asked again for up to 5 s while the server answers 500 `SANDBOX_QUERY_FAILED`: on the Docker
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
import json
import math
import os
import shlex
import socket
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, urlsplit

import httpx

from runner.images.build import ImageError, load_recipe, read_pin
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
from runner.providers.opensandbox.errors import SandboxGone, error_for

BATCH_KEY = "boxbench.batch"
EXECD_PORT = 44772
WORKDIR = "/app"
ENTRYPOINT = ["sleep", "infinity"]
MIN_TTL_S = 60  # the server refuses a timeout below 60 s (422)
DEFAULT_DOMAIN = "127.0.0.1:8080"
API_TIMEOUT_S = 120.0
KEEPALIVE_S = 300.0  # idle connections stay open up to 5 min
STATE_POLL_S = 0.1
STATE_WAIT_S = 120.0
EXEC_BACKSTOP_S = 5.0  # execd kills a command this long after the adapter's own timeout
HELPER_PREFIX = "sandbox-execd-"
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
HELPER_KIND = "opensandbox-execd"
# A destroy refused while the server restarts is tried again this long: its sandboxes outlive
# the restart (docs/reliability.md, C5), and a restart here takes seconds.
DESTROY_RETRY_S = 60.0
# A listing that met a container deleted while the server inspected it is asked again this long.
LIST_RETRY_S = 5.0


def _again_while(retryable, within_s: float, call):
    """`call()`, called again with backoff (0.25 s doubling to 2 s) while it raises a
    ProviderError that `retryable` accepts, for at most `within_s`; then that error."""
    deadline = time.monotonic() + within_s
    wait = 0.25
    while True:
        try:
            return call()
        except ProviderError as exc:
            if not retryable(exc) or time.monotonic() + wait > deadline:
                raise
        time.sleep(wait)
        wait = min(wait * 2, 2.0)


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


class OpenSandboxProvider(Provider):
    slug = "opensandbox"

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
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the key
        return f"OpenSandboxProvider({self.url})"

    # -- transport ----------------------------------------------------------------------------

    @property
    def client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                limits = httpx.Limits(keepalive_expiry=KEEPALIVE_S)
                self._client = httpx.Client(
                    timeout=httpx.Timeout(API_TIMEOUT_S, connect=10.0),
                    limits=limits,
                    # A request's headers and body leave at once, not after a delayed ACK.
                    transport=httpx.HTTPTransport(limits=limits, socket_options=NODELAY),
                    trust_env=False,  # loopback and self-hosted servers: no proxy in between
                )
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _secrets(self) -> tuple:
        return (self._api_key,)

    def _headers(self) -> dict:
        return {"OPEN-SANDBOX-API-KEY": self._api_key} if self._api_key else {}

    def _api(self, method: str, path: str, operation: str, expect=(200,), **kwargs):
        """One lifecycle API call; the answer, or the adapter error for its status."""
        try:
            response = self.client.request(
                method, f"{self.url}/v1{path}", headers=self._headers(), **kwargs
            )
        except httpx.TransportError as exc:
            raise _transport_error(operation, exc, self.url) from exc
        if response.status_code not in expect:
            raise error_for(operation, response.status_code, response.text, secrets=self._secrets())
        return response

    # -- sandboxes ----------------------------------------------------------------------------

    def image(self) -> str:
        if self.image_setting:
            return self.image_setting
        try:
            return load_recipe().tag(read_pin())
        except ImageError as exc:
            raise ProviderError(f"create: the standard image: {exc}", "create") from exc

    def create(self, spec: SandboxSpec) -> Sandbox:
        image = spec.image or self.image()
        return self._create(spec, {"image": {"uri": image}}, {"image": image})

    def _create(self, spec: SandboxSpec, source: dict, facts: dict) -> Sandbox:
        ttl = max(MIN_TTL_S, math.ceil(spec.lifetime_s))
        payload = {
            **source,
            "entrypoint": ENTRYPOINT,
            "timeout": ttl,
            "resourceLimits": {"cpu": f"{spec.cpus:g}", "memory": f"{spec.memory_mib}Mi"},
            "metadata": {BATCH_KEY: spec.label},
        }
        answer = self._api("POST", "/sandboxes", "create", (202, 200, 201), json=payload).json()
        sandbox_id = answer.get("id") or ""
        if not sandbox_id:
            raise ProviderError(f"create: no sandbox id in the answer {answer!r:.200}", "create")
        try:
            first_state = (answer.get("status") or {}).get("state", "")
            info = answer
            if first_state != "Running":
                info = self._wait_state(sandbox_id, "Running", "create")
            endpoint = self._endpoint(sandbox_id)
        except Exception:
            self._delete_quietly(sandbox_id)
            raise
        facts.update(
            {
                "cpus": spec.cpus,
                "memory_mib": spec.memory_mib,
                "resource_limits": payload["resourceLimits"],
                "state_at_create": first_state,
                "lifetime_s": ttl,
                "expires_at": answer.get("expiresAt"),
                "execd_endpoint": endpoint["url"],
                # No egress sidecar here: bridge networking, not cut off (no network_lockdown).
                "network": "bridge",
            }
        )
        return Sandbox(
            id=sandbox_id,
            label=spec.label,
            created_at=_parse_time(info.get("createdAt") or answer.get("createdAt")),
            facts=facts,
            handle=endpoint,
        )

    def get(self, sandbox_id: str, operation: str = "get") -> dict:
        return self._api("GET", f"/sandboxes/{_seg(sandbox_id)}", operation).json()

    def _wait_state(self, sandbox_id: str, wanted: str, operation: str) -> dict:
        deadline = time.monotonic() + STATE_WAIT_S
        while True:
            info = self.get(sandbox_id, operation)
            status = info.get("status") or {}
            state = status.get("state", "")
            if state == wanted:
                return info
            if state in ("Failed", "Terminated"):
                raise ProviderError(
                    f"{operation}: sandbox {sandbox_id} is {state} "
                    f"({status.get('reason', '')}: {status.get('message', '')})",
                    operation,
                    code=status.get("reason", ""),
                )
            if time.monotonic() > deadline:
                raise ProviderError(
                    f"{operation}: sandbox {sandbox_id} still {state} after {STATE_WAIT_S:g}s",
                    operation,
                )
            time.sleep(STATE_POLL_S)

    def _endpoint(self, sandbox_id: str) -> dict:
        answer = self._api(
            "GET", f"/sandboxes/{_seg(sandbox_id)}/endpoints/{EXECD_PORT}", "endpoint"
        ).json()
        endpoint = answer.get("endpoint") or ""
        if not endpoint:
            raise ProviderError(f"endpoint: no execd endpoint in {answer!r:.200}", "endpoint")
        url = endpoint if "://" in endpoint else f"{urlsplit(self.url).scheme}://{endpoint}"
        return {"url": url.rstrip("/"), "headers": dict(answer.get("headers") or {})}

    def _execd(self, sandbox: Sandbox) -> dict:
        if not isinstance(sandbox.handle, dict):
            sandbox.handle = self._endpoint(sandbox.id)
        return sandbox.handle

    def destroy(self, sandbox: Sandbox) -> None:
        with contextlib.suppress(SandboxGone):  # its TTL got there first
            _again_while(
                lambda e: isinstance(e, NotReady),
                DESTROY_RETRY_S,
                lambda: self._api(
                    "DELETE", f"/sandboxes/{_seg(sandbox.id)}", "destroy", (204, 200)
                ),
            )

    def _delete_quietly(self, sandbox_id: str) -> None:
        with contextlib.suppress(Exception):  # best effort: cleanup by label catches the rest
            self._api("DELETE", f"/sandboxes/{_seg(sandbox_id)}", "destroy", (204, 200))

    def is_gone(self, sandbox_id: str) -> bool:
        try:
            self.get(sandbox_id, "confirm deletion")
        except SandboxGone:
            return True
        return False

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        params = [("pageSize", "100")]
        if label:
            params.append(("metadata", f"{BATCH_KEY}={label}"))
        found, page = [], 1
        while True:
            answer = self._list_page([*params, ("page", str(page))])
            for item in answer.get("items") or []:
                batch = (item.get("metadata") or {}).get(BATCH_KEY)
                if batch is None or (label and batch != label):
                    continue
                found.append(LiveSandbox(item["id"], batch, _parse_time(item.get("createdAt"))))
            if not (answer.get("pagination") or {}).get("hasNextPage"):
                return found
            page += 1

    def _list_page(self, params: list) -> dict:
        return _again_while(
            lambda e: e.code.endswith("SANDBOX_QUERY_FAILED"),
            LIST_RETRY_S,
            lambda: self._api("GET", "/sandboxes", "list", params=params).json(),
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
        endpoint = self._execd(sandbox)
        command = shlex.join(argv)
        if stdin is not None:
            path = f"/tmp/.boxbench-stdin-{uuid.uuid4().hex}"
            self._upload(endpoint, path, stdin, "exec")
            command = f'{command} < {path}; status=$?; rm -f {path}; exit "$status"'
        body = {
            "command": command,
            "cwd": workdir or WORKDIR,
            "background": False,
            "timeout": math.ceil((timeout + EXEC_BACKSTOP_S) * 1000),
        }
        if env:
            body["envs"] = dict(env)
        stream = _ExecStream(self.client, endpoint, body)
        reader = threading.Thread(target=stream.run, name="opensandbox-exec", daemon=True)
        reader.start()
        reader.join(timeout)
        if reader.is_alive():
            self._interrupt(endpoint, stream.command_id)
            stream.hang_up()
            reader.join(5)
            raise ExecTimeout(
                f"exec {argv[0]!r} did not return within {timeout:g}s; execd interrupted it",
                operation="exec",
            )
        return stream.result()

    def _interrupt(self, endpoint: dict, command_id: str | None) -> None:
        if not command_id:
            return
        with contextlib.suppress(httpx.HTTPError):  # the sandbox may be gone; timeout either way
            self.client.delete(
                f"{endpoint['url']}/command",
                params={"id": command_id},
                headers=endpoint["headers"],
                timeout=10,
            )

    # -- files --------------------------------------------------------------------------------

    def upload(self, sandbox: Sandbox, path: str, data: bytes) -> None:
        self._upload(self._execd(sandbox), _absolute(path, "upload"), data, "upload")

    def _upload(self, endpoint: dict, path: str, data: bytes, operation: str) -> None:
        metadata = json.dumps({"path": path, "mode": 644})
        files = [
            ("metadata", ("metadata", metadata.encode(), "application/json")),
            ("file", (os.path.basename(path) or "file", data, "application/octet-stream")),
        ]
        self._execd_call(endpoint, "POST", "/files/upload", operation, files=files)

    def download(self, sandbox: Sandbox, path: str) -> bytes:
        path = _absolute(path, "download")
        answer = self._execd_call(
            self._execd(sandbox), "GET", "/files/download", "download", params={"path": path}
        )
        return answer.content

    def _execd_call(self, endpoint: dict, method: str, path: str, operation: str, **kwargs):
        try:
            response = self.client.request(
                method, f"{endpoint['url']}{path}", headers=endpoint["headers"], **kwargs
            )
        except httpx.TransportError as exc:
            raise _transport_error(operation, exc, endpoint["url"]) from exc
        if response.status_code not in (200, 206):
            secrets = (*self._secrets(), *endpoint["headers"].values())
            raise error_for(operation, response.status_code, response.text, secrets=secrets)
        return response

    # -- renew, pause, resume -----------------------------------------------------------------

    def renew(self, sandbox: Sandbox, seconds: float) -> datetime:
        """Move the sandbox's expiry to `seconds` from now; the server's new expiry."""
        wanted = datetime.now(UTC) + timedelta(seconds=seconds)
        answer = self._api(
            "POST",
            f"/sandboxes/{_seg(sandbox.id)}/renew-expiration",
            "renew",
            json={"expiresAt": wanted.isoformat().replace("+00:00", "Z")},
        ).json()
        return _parse_time(answer.get("expiresAt")) or wanted

    def pause(self, sandbox: Sandbox) -> None:
        self._declared("pause")
        self._api("POST", f"/sandboxes/{_seg(sandbox.id)}/pause", "pause", (202, 200, 204))
        self._wait_state(sandbox.id, "Paused", "pause")

    def resume(self, sandbox: Sandbox) -> None:
        self._declared("pause")
        self._api("POST", f"/sandboxes/{_seg(sandbox.id)}/resume", "resume", (202, 200, 204))
        self._wait_state(sandbox.id, "Running", "resume")

    def _declared(self, capability: str) -> None:
        capabilities = getattr(self.declaration, "capabilities", ()) or ()
        if self.declaration is not None and capability not in capabilities:
            raise NotDeclared(f"{self.slug} does not declare {capability}", operation=capability)

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self, sandbox: Sandbox) -> str:
        self._declared("snapshot")
        answer = self._api(
            "POST",
            f"/sandboxes/{_seg(sandbox.id)}/snapshots",
            "snapshot",
            (202, 200, 201),
            json={"name": sandbox.label},
        ).json()
        snapshot_id = answer.get("id") or ""
        deadline = time.monotonic() + STATE_WAIT_S
        while True:
            status = answer.get("status") or {}
            state = status.get("state", "")
            if state == "Ready":
                return snapshot_id
            if state == "Failed" or time.monotonic() > deadline:
                raise ProviderError(
                    f"snapshot {snapshot_id}: {state or 'no state'} "
                    f"({status.get('reason', '')}: {status.get('message', '')})",
                    "snapshot",
                    code=status.get("reason", ""),
                )
            time.sleep(STATE_POLL_S)
            answer = self._api("GET", f"/snapshots/{_seg(snapshot_id)}", "snapshot").json()

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        self._declared("snapshot")
        return self._create(spec, {"snapshotId": snapshot_id}, {"restored_from": snapshot_id})

    def delete_snapshot(self, snapshot_id: str) -> None:
        try:
            self._api("DELETE", f"/snapshots/{_seg(snapshot_id)}", "delete snapshot", (204, 200))
        except SandboxGone:
            return

    def list_snapshots(self, label: str | None = None) -> list[LiveSandbox]:
        """Snapshots left behind (named with their batch label), for `bench cleanup`."""
        params = [("pageSize", "200")] + ([("name", label)] if label else [])
        found, page = [], 1
        while True:
            answer = self._api(
                "GET", "/snapshots", "list snapshots", params=[*params, ("page", str(page))]
            ).json()
            for item in answer.get("items") or []:
                created = _parse_time(item.get("createdAt"))
                found.append(LiveSandbox(item["id"], item.get("name") or "", created))
            if not (answer.get("pagination") or {}).get("hasNextPage"):
                return found
            page += 1

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
        try:
            response = self.client.get(f"{self.url}/health", timeout=5)
        except httpx.HTTPError as exc:
            hint = "set OPEN_SANDBOX_DOMAIN, or start one: "
            hint += "python -m runner.providers.opensandbox serve"
            if not self.configured:
                # Nobody asked for OpenSandbox: as for the cloud providers, not configured is
                # not a failure; a server that was named and does not answer is.
                return [
                    DoctorCheck("server", True, f"not configured (no server at {self.url}; {hint})")
                ]
            return [
                DoctorCheck("server", False, f"no OpenSandbox server at {self.url} ({exc}); {hint}")
            ]
        checks = [DoctorCheck("server", response.status_code == 200, f"{self.url}/health")]
        try:
            self._api("GET", "/sandboxes", "list", params={"pageSize": "1"})
            checks.append(DoctorCheck("api key", True, "the server accepts the key"))
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            checks.append(DoctorCheck("api key", False, str(exc)))
        return checks


class _ExecStream:
    """One POST /command, read to its end in a thread of its own (the caller times it out)."""

    def __init__(self, client: httpx.Client, endpoint: dict, body: dict):
        self.client, self.endpoint, self.body = client, endpoint, body
        self.command_id: str | None = None
        self.stdout: list[bytes] = []
        self.stderr: list[bytes] = []
        self.exit_code: int | None = None
        self.failure: Exception | None = None
        self.events = 0
        self._response: httpx.Response | None = None

    def run(self) -> None:
        url = f"{self.endpoint['url']}/command"
        try:
            with self.client.stream(
                "POST",
                url,
                json=self.body,
                headers=self.endpoint["headers"],
                # The caller bounds the whole call; a quiet command sends pings meanwhile.
                timeout=httpx.Timeout(None, connect=10.0),
            ) as response:
                self._response = response
                if response.status_code != 200:
                    response.read()
                    self.failure = error_for(
                        "exec",
                        response.status_code,
                        response.text,
                        secrets=tuple(self.endpoint["headers"].values()),
                    )
                    return
                for line in response.iter_lines():
                    self._take(line)
        except httpx.TransportError as exc:
            if self.events:
                self.failure = ProviderError(
                    f"exec: the execd stream broke after {self.events} event(s): {exc}", "exec"
                )
            else:
                self.failure = _transport_error("exec", exc, self.endpoint["url"])
        except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
            self.failure = exc

    def _take(self, line: str) -> None:
        line = line.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        if not line:
            return
        try:
            event = json.loads(line)
        except ValueError:
            message = f"exec: execd sent {line[:120]!r}, not a JSON event"
            raise ProviderError(message, "exec") from None
        self.events += 1
        kind = event.get("type")
        if kind == "init":
            self.command_id = event.get("text")
        elif kind == "stdout":
            self.stdout.append(_bytes(event.get("text", "")))
        elif kind == "stderr":
            self.stderr.append(_bytes(event.get("text", "")))
        elif kind == "execution_complete":
            if self.exit_code is None:
                self.exit_code = 0
        elif kind == "error":
            error = event.get("error") or {}
            if error.get("ename") == "CommandExecError":
                try:
                    self.exit_code = int(str(error.get("evalue", "")).strip())
                except ValueError:
                    self.failure = ProviderError(
                        f"exec: exit code {error.get('evalue')!r} is not a number", "exec"
                    )
            else:
                self.failure = ProviderError(
                    f"exec: execd error {error.get('ename')}: {error.get('evalue')}", "exec"
                )

    def hang_up(self) -> None:
        if self._response is not None:
            with contextlib.suppress(Exception):
                self._response.close()

    def result(self) -> ExecResult:
        if self.failure is not None:
            raise self.failure
        if self.exit_code is None:
            raise ProviderError(
                f"exec: the execd stream ended without an exit status ({self.events} event(s))",
                "exec",
            )
        return ExecResult(
            exit_code=self.exit_code, stdout=b"".join(self.stdout), stderr=b"".join(self.stderr)
        )


def _bytes(text: str) -> bytes:
    # execd sends non-UTF-8 output as surrogate escapes; another execd may send U+FFFD instead.
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _transport_error(operation: str, exc: Exception, where: str) -> ProviderError:
    """Refused, reset or timed-out connections: not ready (the readiness check retries them)."""
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.RemoteProtocolError):
        return NotReady(f"{operation}: {where}: {type(exc).__name__}: {exc}", operation)
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        return NotReady(f"{operation}: {where}: connection reset: {exc}", operation)
    return ProviderError(f"{operation}: {where}: {type(exc).__name__}: {exc}", operation)


def _absolute(path: str, operation: str) -> str:
    if not path:
        raise ProviderError(f"{operation}: empty path", operation=operation)
    if path.endswith("/"):
        raise ProviderError(f"{operation}: {path!r} names a directory, not a file", operation)
    return path if path.startswith("/") else f"{WORKDIR}/{path}"


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def _parse_time(value) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
