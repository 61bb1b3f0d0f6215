"""`daytona`: Daytona sandboxes through Daytona's official Python SDK (`daytona`, pinned in
requirements-daytona.txt), unmodified.

The SDK is configured only through its documented `DaytonaConfig`: the API key, `api_url`,
`target`, and `use_deprecated_polling=True` (state waits poll GET /sandbox/{id} instead of
listening on Daytona's socket.io event stream; see below). Its control plane is Daytona's REST API
(Bearer key): POST /sandbox from the prepared snapshot, GET and DELETE /sandbox/{id}, GET /sandbox
by labels (cursor pages). Its data plane is the toolbox API at the sandbox's `toolboxProxyUrl` +
`/{id}`: commands through urllib3 (the generated toolbox client), files through an httpx client
of the SDK's own (`/files/bulk-upload`, `/files/bulk-download`, multipart).

What the SDK does on its own (docs/providers.md lists it, with what the adapter does about it):
- create waits for `started` by polling: at once, then every 0.1 s for 5 s, then 1.1 times longer
  each time up to 1 s. Daytona's create is that whole wait (adapter entry to `started`), as before.
  The SDK's own timeout (`timeout=`) is a SIGALRM in the main thread, a timer thread elsewhere;
- the command channel (urllib3) retries a request whose connection the server closed before it
  answered (RemoteDisconnected, up to 3 times, any method), and urllib3's default 3 connect
  retries on the API; the file channel (httpx) retries a connection that could not be made
  (3 times). None of these can be switched off through the SDK's documented configuration: a
  retry happens only when nothing reached the provider, so the timed call is still one request
  as far as the provider saw, and the time it took is inside the timed span;
- the file channel's pool keeps an idle connection 5 s (httpx's default keep-alive expiry) and
  opens a new one after that; the command channel keeps its connections open.

The key goes only to origins the operator configured: the API's (DAYTONA_API_URL) and the
toolbox proxy's when it lives elsewhere (DAYTONA_TOOLBOX_URL). The SDK sends it to whatever
`toolboxProxyUrl` the API names, so a sandbox whose toolbox is anywhere else is refused (and
deleted) before any toolbox call.

Snapshots and forks (docs/providers.md): `Sandbox.create_snapshot(name)`, the name carrying the
batch label and creation time (Daytona's snapshots have no labels), then read back untimed
(`check_snapshot`), since the SDK returns whether or not Daytona kept it; restore is a create
from it; delete by the id in the answer for that name, never for another; `Sandbox.fork`,
offered by Daytona for VM sandboxes only.

Commands run in a session (one per sandbox, made on first use), each in a subshell so nothing
leaks between commands: synchronously when its time limit is at most SYNC_LIMIT_S, otherwise with
`run_async` and polling of the command's status, then its logs. A command past its limit is killed
by deleting its session. Stdin is uploaded to a temporary file and redirected.

Configuration (docs/providers.md): DAYTONA_API_KEY or DAYTONA_API_KEY_FILE; DAYTONA_API_URL
(default https://app.daytona.io/api); DAYTONA_TOOLBOX_URL; DAYTONA_TARGET (region, default us);
BOXBENCH_DAYTONA_SNAPSHOT (default boxbench-standard); BOXBENCH_DAYTONA_FORK_SNAPSHOT (Fork's
linux-vm snapshot, default the standard one).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import re
import shlex
import threading
import time
import uuid
import warnings
from datetime import UTC, datetime
from urllib.parse import urlsplit

from runner import waiting
from runner.providers import snapshot_names
from runner.providers.answers import BAD_ANSWER, TOO_LARGE, Capped, Reader
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

BATCH_KEY = "boxbench.batch"
CREATE_KEY = "boxbench.create"
WORKDIR = "/app"
SYNC_LIMIT_S = 60.0  # above this a command runs with run_async: no HTTP call waits that long
CREATE_LIMIT_S = 300.0
REQUEST_TIMEOUT_S = 60.0
LIST_PAGE = 100
# A background command's status: after 50 ms, then 1.5 times longer each time, at most 1 s apart.
COMMAND_POLL = waiting.Backoff(first_s=0.05, factor=1.5, cap_s=1.0)
SDK_MISSING = "the daytona package is not installed: pip install -r requirements-daytona.txt"
# The SDK's packages whose log records could carry the key.
# Daytona's refusal of a sandbox its organization's compute pool cannot hold ("Total memory limit
# exceeded. Maximum allowed: 10GiB."; older APIs said "quota"): a quota answer, so rate_limited.
QUOTA_REFUSAL = re.compile(r"Total (CPU|memory|disk) (limit|quota) exceeded", re.IGNORECASE)
SDK_PACKAGES = ("daytona", "daytona_api_client", "daytona_toolbox_api_client")

# How the SDK waits for a state (started, a snapshot done), recorded in every run's manifest
# (runner/provenance.py): its deprecated polling of GET /sandbox/{id}, not its default socket.io
# event stream, which the loopback fake does not serve yet.
POLLING = "deprecated polling"
SDK_MODE = POLLING


class DaytonaProvider(HTTPProvider):
    slug = "daytona"
    stdin_adds_requests = True
    layer_mechanism = "a Daytona snapshot (an image) of a sandbox of the prepared snapshot"
    credential_variable = "DAYTONA_API_KEY"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self.api_url = self._url("api_url", "DAYTONA_API_URL", "https://app.daytona.io/api")
        self.target = self._setting("target", "DAYTONA_TARGET", "us")
        self.base_snapshot = self._setting(
            "snapshot", "BOXBENCH_DAYTONA_SNAPSHOT", "boxbench-standard"
        )
        # Daytona forks only VM sandboxes, and a sandbox's class is its snapshot's: Fork's source
        # sandbox alone starts from this linux-vm snapshot, so no other benchmark leaves the
        # default class. Unset, Fork uses the standard snapshot too.
        self.fork_snapshot = self._setting(
            "fork_snapshot", "BOXBENCH_DAYTONA_FORK_SNAPSHOT", self.base_snapshot
        )
        toolbox = self._url("toolbox_url", "DAYTONA_TOOLBOX_URL", "")
        self.key_origins = {_origin(self.api_url)} | ({_origin(toolbox)} if toolbox else set())
        self._sdk_missing = importlib.util.find_spec("daytona") is None
        self._client = None
        self._client_lock = threading.Lock()

    def configuration_problem(self) -> str | None:
        return SDK_MISSING if self._sdk_missing else super().configuration_problem()

    def _daytona(self, operation: str):
        """The SDK's client, made once per adapter (one connection pool per provider chain)."""
        self._refuse_if_unconfigured(operation)
        for package in SDK_PACKAGES:
            redact_sdk_logs(package, self._key)
        with self._client_lock:
            if self._client is None:
                import daytona

                config = daytona.DaytonaConfig(
                    api_key=self._key,
                    api_url=self.api_url,
                    target=self.target,
                    use_deprecated_polling=SDK_MODE == POLLING,
                )
                with warnings.catch_warnings():
                    # Polling is deprecated in favour of the event stream, which the fake lacks.
                    warnings.simplefilter("ignore", DeprecationWarning)
                    self._client = self._call(operation, lambda: daytona.Daytona(config))
            return self._client

    def _reader(self, operation: str) -> Reader:
        return Reader("daytona", operation, (self._key,))

    def _call(self, operation: str, fn, data_plane: bool = False):
        """One SDK call; whatever it raises becomes an adapter error without the key."""
        try:
            return fn()
        except ProviderError:
            raise
        except Exception as exc:
            raise self._failure(operation, exc, data_plane) from exc

    def _failure(self, operation: str, exc: Exception, data_plane: bool) -> ProviderError:
        from daytona import (
            DaytonaAuthenticationError,
            DaytonaConnectionError,
            DaytonaError,
            DaytonaNotFoundError,
            DaytonaRateLimitError,
            DaytonaTimeoutError,
        )

        status = getattr(exc, "status_code", None)
        said = redact(f"{type(exc).__name__}: {exc}", self._key)[:DETAIL_CHARS]
        message = f"daytona {operation}: " + (f"HTTP {status}: " if status else "") + said
        if status in (400, 403) and QUOTA_REFUSAL.search(str(exc)):
            # The organization's compute pool is full: the account's limit, not the key's.
            return ProviderError(message, operation, "rate_limited")
        if isinstance(exc, DaytonaAuthenticationError) or status in (401, 403):
            return CredentialsRejected(message, operation, "unauthorized")
        if isinstance(exc, DaytonaRateLimitError) or status == 429:
            headers = getattr(exc, "headers", None) or {}
            retry = next((v for k, v in dict(headers).items() if k.lower() == "retry-after"), None)
            wait = f" (Retry-After {retry} s)" if retry else ""
            return ProviderError(message + wait, operation, "rate_limited")
        transport = isinstance(exc, DaytonaConnectionError) or _transport_cause(exc)
        if data_plane and (status in (502, 503, 504) or transport):
            return NotReady(message, operation, "not_ready")
        if isinstance(exc, DaytonaNotFoundError) or status == 404:
            return ProviderError(message, operation, "not_found")
        if isinstance(exc, DaytonaTimeoutError):
            return ProviderError(message, operation, "timeout")
        if transport:
            return ProviderError(message, operation, "transport")
        unread = _unread_answer(exc)
        if unread:
            return self._reader(operation).fail(unread, BAD_ANSWER)
        if not isinstance(exc, DaytonaError) or not status:
            return ProviderError(message, operation, BAD_ANSWER)
        return ProviderError(message, operation, str(status))

    def _box(self, sandbox: Sandbox, operation: str):
        """The SDK's handle of the sandbox (fetched once when known only by its id)."""
        if not isinstance(sandbox.handle, dict) or sandbox.handle.get("box") is None:
            client = self._daytona(operation)
            box = self._call(
                operation, lambda: client.get(sandbox.id, request_timeout=REQUEST_TIMEOUT_S)
            )
            self._check_toolbox(box, operation)
            sandbox.handle = {"box": box, "session": None}
        return self._handle(sandbox)["box"]

    @staticmethod
    def _handle(sandbox: Sandbox) -> dict:
        assert isinstance(sandbox.handle, dict)
        return sandbox.handle

    def _check_toolbox(self, box, operation: str) -> None:
        """Refuse a toolbox the key may not go to, before the SDK calls it."""
        url = getattr(box, "toolbox_proxy_url", None) or ""
        if not url:
            raise self._reader(operation).fail("the sandbox answer has no toolboxProxyUrl")
        if _origin(url) not in self.key_origins:
            raise ProviderError(
                f"daytona {operation}: the answer names toolbox {_origin(url)!r}, which is not "
                "the configured API or toolbox origin; the key is not sent there (set "
                "DAYTONA_TOOLBOX_URL if it is Daytona's)",
                operation,
                code="foreign_origin",
            )

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.image:
            raise ProviderError(
                f"daytona runs the prepared snapshot {self.base_snapshot!r}, "
                f"not image {spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        standard = self.fork_snapshot if spec.forks else self.base_snapshot
        return self._start("create", spec.layer or standard, spec)

    def _start(self, operation: str, snapshot: str, spec: SandboxSpec) -> Sandbox:
        """A started sandbox of Daytona snapshot `snapshot` (the prepared one, or one that
        `snapshot` made) for `spec`."""
        import daytona

        client = self._daytona(operation)
        create_label = uuid.uuid4().hex
        params = daytona.CreateSandboxFromSnapshotParams(
            snapshot=snapshot,
            # The second label finds this sandbox again should the SDK's wait fail.
            labels={BATCH_KEY: spec.label, CREATE_KEY: create_label},
            network_block_all=not spec.network,
            # Daytona has no absolute time-to-live: stopped after this many idle minutes, and
            # deleted when stopped.
            auto_stop_interval=max(1, math.ceil(spec.lifetime_s / 60)),
            auto_delete_interval=0,
        )
        # One POST, then the SDK's wait for `started`. The SDK deletes nothing when the wait
        # fails: the adapter finds the sandbox by its create label and deletes it.
        try:
            box = self._call(operation, lambda: client.create(params, timeout=CREATE_LIMIT_S))
        except ProviderError as exc:
            self._delete_labelled(client, create_label)
            state = _failed_state(str(exc))
            if state:
                exc.code = state
                exc.args = (f"{exc}; the sandbox reached state {state}",)
            raise
        return self._sandbox(operation, box, spec)

    def _sandbox(self, operation: str, box, spec: SandboxSpec) -> Sandbox:
        """The started sandbox `box` as the lifecycle holds it; deleted if its toolbox is one the
        key may not go to."""
        try:
            self._check_toolbox(box, operation)
        except ProviderError:
            with contextlib.suppress(Exception):
                box.delete(timeout=REQUEST_TIMEOUT_S)
            raise
        return Sandbox(
            id=box.id,
            label=spec.label,
            created_at=datetime.now(UTC),
            facts={
                "snapshot": box.snapshot,
                "sandbox_class": getattr(box, "sandbox_class", None),
                "target": box.target,
                "cpu": box.cpu,
                "memory_gib": box.memory,
                "enforced": {"cpus": True, "memory": True},
                "sdk": f"daytona {_installed('daytona')}",
            },
            handle={"box": box, "session": None},
        )

    def _delete_labelled(self, client, create_label: str) -> None:
        import daytona

        query = daytona.ListSandboxesQuery(labels={CREATE_KEY: create_label}, limit=10)
        with contextlib.suppress(Exception):
            for box in client.list(query, request_timeout=REQUEST_TIMEOUT_S):
                box.delete(timeout=REQUEST_TIMEOUT_S)

    def _session(self, sandbox: Sandbox) -> str:
        box = self._box(sandbox, "exec")
        handle = self._handle(sandbox)
        session = handle["session"]
        if not session:
            session = f"boxbench-{uuid.uuid4().hex[:12]}"
            self._call(
                "exec",
                lambda: box.process.create_session(session, request_timeout=REQUEST_TIMEOUT_S),
                data_plane=True,
            )
            handle["session"] = session
        return session

    def _drop_session(self, sandbox: Sandbox) -> None:
        """Delete the session, which kills its commands; the next exec makes a new one."""
        box = self._box(sandbox, "exec")
        handle = self._handle(sandbox)
        session, handle["session"] = handle["session"], None
        if session:
            with contextlib.suppress(Exception):
                box.process.delete_session(session, request_timeout=REQUEST_TIMEOUT_S)

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        if not argv:
            raise ProviderError("daytona exec: empty argv", operation="exec")
        from daytona import DaytonaTimeoutError, SessionExecuteRequest

        command = shlex.join(argv)
        if env:
            command = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " "
            command += shlex.join(argv)
        stdin_path = None
        if stdin is not None:
            stdin_path = f"/tmp/.boxbench-stdin-{uuid.uuid4().hex[:12]}"
            self.upload(sandbox, stdin_path, stdin)
            # Removed once open, before the command starts (the guest clock's key: clock.py).
            command = f"{{ exec < {stdin_path}; rm -f {stdin_path}; exec {command}; }}"
        # A subshell, so nothing a command does (cd, exported variables) leaks into the session.
        command = f"(cd {shlex.quote(workdir or WORKDIR)} && {command})"
        if stdin_path:
            command += f"; __rc=$?; rm -f {stdin_path}; exit $__rc"
            command = f"bash -c {shlex.quote(command)}"
        box = self._box(sandbox, "exec")
        session = self._session(sandbox)
        deadline = time.monotonic() + timeout
        run_async = timeout > SYNC_LIMIT_S
        request = SessionExecuteRequest(command=command, run_async=run_async)
        overdue = ExecTimeout(
            f"daytona: command did not return within {timeout:g} s in {sandbox.id}",
            operation="exec",
        )
        try:
            # The SDK waits its `timeout` (whole seconds) plus 5 s for the answer: a command
            # that answers after its limit is still a timeout, one that never answers is killed.
            outcome = box.process.execute_session_command(
                session, request, timeout=None if run_async else max(1, math.ceil(timeout))
            )
        except DaytonaTimeoutError:
            self._drop_session(sandbox)
            raise overdue from None
        except Exception as exc:
            raise self._failure("exec", exc, data_plane=True) from exc
        if not run_async and time.monotonic() > deadline:
            raise overdue
        if outcome.exit_code is None:
            if not outcome.cmd_id:
                raise self._reader("exec").fail(
                    "the command answer has neither `exitCode` nor `cmdId`"
                )
            outcome = self._await(sandbox, box, session, outcome.cmd_id, deadline, timeout)
        stdout = self._capped(sandbox, outcome.stdout, "stdout")
        stderr = self._capped(sandbox, outcome.stderr, "stderr")
        return ExecResult(int(outcome.exit_code or 0), stdout, stderr)

    def _capped(self, sandbox: Sandbox, text: str | None, stream: str) -> bytes:
        """A command's output within max_output_mib (the SDK reads each answer whole)."""
        data = (text or "").encode()
        cap = self.limits.output_bytes
        if len(data) > cap:
            self._drop_session(sandbox)  # the command may still be writing
            raise self._reader("exec").fail(
                f"the command's {stream} is larger than the cap of {cap} bytes; "
                "setting max_output_mib",
                TOO_LARGE,
            )
        return data

    def _await(self, sandbox, box, session, command_id, deadline, timeout):
        status: list = []

        def exited() -> bool:
            status[:] = [
                self._call(
                    "exec",
                    lambda: box.process.get_session_command(
                        session, command_id, request_timeout=REQUEST_TIMEOUT_S
                    ),
                )
            ]
            return status[0].exit_code is not None

        if waiting.poll_until(exited, deadline - time.monotonic(), COMMAND_POLL):
            logs = self._call(
                "exec",
                lambda: box.process.get_session_command_logs(
                    session, command_id, request_timeout=REQUEST_TIMEOUT_S
                ),
            )
            logs.exit_code = status[0].exit_code
            return logs
        self._drop_session(sandbox)
        raise ExecTimeout(
            f"daytona: command did not return within {timeout:g} s in {sandbox.id}",
            operation="exec",
        )

    def upload(self, sandbox, path, data) -> None:
        box = self._box(sandbox, "upload")
        self._call(
            "upload",
            lambda: box.fs.upload_file(bytes(data), path, timeout=int(REQUEST_TIMEOUT_S)),
            data_plane=True,
        )

    def download(self, sandbox, path) -> bytes:
        box = self._box(sandbox, "download")
        capped = Capped(
            self._reader("download"),
            self.limits.download_bytes,
            f"the file {path}",
            "max_download_mib",
        )

        def read() -> bytes:
            # Streamed, so a file past the cap costs at most the cap in memory.
            chunks = box.fs.download_file_stream(path, timeout=int(REQUEST_TIMEOUT_S))
            try:
                return capped.read(chunks)
            finally:
                chunks.close()

        return self._call("download", read, data_plane=True)

    def destroy(self, sandbox) -> None:
        """One DELETE through the SDK's handle (a sandbox known by its id only is fetched first;
        its toolbox is never called, so its origin does not matter here)."""
        client = self._daytona("destroy")
        handle = getattr(sandbox, "handle", None)
        box = handle.get("box") if isinstance(handle, dict) else None
        try:
            if box is None:
                box = self._call(
                    "destroy", lambda: client.get(sandbox.id, request_timeout=REQUEST_TIMEOUT_S)
                )
            self._call("destroy", lambda: box.delete(timeout=REQUEST_TIMEOUT_S))
        except ProviderError as exc:
            if exc.code != "not_found":
                raise

    def is_gone(self, sandbox_id: str) -> bool:
        client = self._daytona("is_gone")
        try:
            box = self._call(
                "is_gone", lambda: client.get(sandbox_id, request_timeout=REQUEST_TIMEOUT_S)
            )
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise
        return str(getattr(box.state, "value", box.state)) == "destroyed"

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        import daytona

        client = self._daytona("list")
        query = daytona.ListSandboxesQuery(
            labels={BATCH_KEY: label} if label is not None else None, limit=LIST_PAGE
        )
        # The SDK walks the cursor pages inside its iterator: at most max_pages pages of it.
        most = self.limits.pages * LIST_PAGE
        found: list[LiveSandbox] = []

        def walk() -> list[LiveSandbox]:
            for count, item in enumerate(client.list(query, request_timeout=REQUEST_TIMEOUT_S)):
                if count >= most:
                    raise self._reader("list").fail(
                        f"the sandbox list goes on past {self.limits.pages} pages; "
                        "setting max_pages",
                        "endless_listing",
                    )
                state = str(getattr(item.state, "value", item.state))
                if state not in ("destroyed", "destroying"):
                    labels = item.labels or {}
                    found.append(
                        LiveSandbox(item.id, labels.get(BATCH_KEY, ""), _timestamp(item.created_at))
                    )
            return found

        return self._call("list", walk)

    # -- snapshots and forks ---------------------------------------------------------------------

    def snapshot(self, sandbox: Sandbox) -> str:
        """Daytona's snapshot of the sandbox (its file system; the sandbox is `snapshotting`
        meanwhile, then back to `started`), known by the name given it, which is its id here."""
        box = self._box(sandbox, "snapshot")
        name = snapshot_names.make(sandbox.label)
        self._call("snapshot", lambda: box.create_snapshot(name, timeout=CREATE_LIMIT_S))
        return name

    def check_snapshot(self, sandbox: Sandbox, snapshot_id: str) -> None:
        """Untimed, after the timed call: the SDK returns once the sandbox leaves
        `snapshotting`, whether or not Daytona kept a snapshot (a failed one only puts the
        sandbox back), so it must be there, made of this sandbox (a name taken meanwhile names
        another's), and active. A GET, never inside the timed span."""
        name = snapshot_id
        made = self._own_snapshot("snapshot", name)
        if made.source_sandbox_id not in (None, sandbox.id):
            raise self._reader("snapshot").fail(
                f"snapshot {name} was made of sandbox {made.source_sandbox_id}, not {sandbox.id}"
            )
        state = str(getattr(made.state, "value", made.state))
        if state != "active":
            raise ProviderError(
                f"daytona snapshot: {name} is {state}, not active: {made.error_reason or ''}",
                "snapshot",
                code=state,
            )

    def _own_snapshot(self, operation: str, name: str):
        """The snapshot named `name` (GET /snapshots/{name}); an answer for any other snapshot is
        refused, so no delete can be turned onto one boxbench did not make (its prepared one)."""
        client = self._daytona(operation)
        made = self._call(operation, lambda: client.snapshot.get(name))
        if made.name != name or made.general:
            raise self._reader(operation).fail(
                f"asked for snapshot {name!r}, the answer is {'a general' if made.general else ''}"
                f" snapshot {made.name!r}"
            )
        return made

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        sandbox = self._start("restore", snapshot_id, spec)
        sandbox.facts["restored_from"] = snapshot_id
        return sandbox

    def delete_snapshot(self, snapshot_id: str) -> None:
        client = self._daytona("delete snapshot")
        try:
            made = self._own_snapshot("delete snapshot", snapshot_id)
            # By the id in the answer: the SDK's delete by name would look the name up again.
            self._call("delete snapshot", lambda: client.snapshot.delete(made))
        except ProviderError as exc:
            if exc.code != "not_found":  # gone already, as a delete wants
                raise

    def snapshot_gone(self, snapshot_id: str) -> bool:
        try:
            self._own_snapshot("snapshot_gone", snapshot_id)
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise
        return False  # still listed, `removing` included

    def list_snapshots(self, label: str | None = None) -> list[LiveSandbox]:
        """Snapshots left behind, for `bench cleanup`: those `snapshot` named, with the batch
        label and creation time read back from the name (Daytona's snapshots carry no labels);
        a snapshot named otherwise has no label, and general (Daytona's own) ones are skipped."""
        client = self._daytona("list snapshots")
        found: list[LiveSandbox] = []
        page = 1
        while True:
            answer = self._call(
                "list snapshots", lambda at=page: client.snapshot.list(page=at, limit=LIST_PAGE)
            )
            for item in answer.items:
                named = snapshot_names.read(item.name)
                # Known by its name, as `snapshot` returned it.
                live = LiveSandbox(item.name, *(named or ("", None)))
                if not item.general and (label is None or live.label == label):
                    found.append(live)
            if page >= answer.total_pages:
                return found
            if page >= self.limits.pages:
                raise self._reader("list snapshots").fail(
                    f"the snapshot list goes on past {self.limits.pages} pages; setting max_pages",
                    "endless_listing",
                )
            page += 1

    def fork(self, sandbox: Sandbox, spec: SandboxSpec) -> Sandbox:
        """Daytona's fork (a copy-on-write clone of a running VM sandbox: Daytona forks only the
        linux-vm and windows classes), named so that a fork whose wait fails can be found and
        deleted; it carries the source's labels, the batch label among them."""
        box = self._box(sandbox, "fork")
        name = f"{spec.label}-fork-{uuid.uuid4().hex[:12]}"
        try:
            made = self._call("fork", lambda: box.fork(name=name, timeout=CREATE_LIMIT_S))
        except ProviderError:
            client = self._daytona("fork")
            with contextlib.suppress(Exception):
                client.get(name, request_timeout=REQUEST_TIMEOUT_S).delete(
                    timeout=REQUEST_TIMEOUT_S
                )
            raise
        copy = self._sandbox("fork", made, spec)
        copy.facts["forked_from"] = sandbox.id
        return copy

    def endpoints(self) -> list[tuple[str, int]]:
        return [host_port(url) for url in sorted(self.key_origins)]

    def _doctor_probe(self) -> None:
        import daytona

        client = self._daytona("doctor")
        query = daytona.ListSandboxesQuery(labels={BATCH_KEY: "-"}, limit=1)
        self._call("doctor", lambda: next(iter(client.list(query)), None))

    def _doctor_details(self) -> list[DoctorCheck]:
        return [
            DoctorCheck("snapshot", True, f"{self.base_snapshot} in target {self.target}"),
            DoctorCheck("sdk", True, f"daytona {_installed('daytona')}"),
        ]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def _timestamp(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _failed_state(message: str) -> str | None:
    """The state a failed create ended in, from the SDK's wording ("entered error state: X")."""
    found = re.search(r"entered error state: (?:SandboxState\.)?(\w+)", message)
    return found.group(1).lower() if found else None


def _unread_answer(exc: BaseException) -> str | None:
    """What was wrong with an answer the SDK's models refused (it wraps pydantic's error): not
    JSON at all, or a required field missing or of the wrong type."""
    from pydantic import ValidationError

    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, ValidationError):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return None
    errors = seen.errors()
    if errors and not errors[0]["loc"]:
        return f"the answer is not JSON (or not a JSON object): {str(errors[0]['input'])[:120]!r}"
    missing = [e for e in errors if e.get("input") is None]
    first = (missing or errors)[0] if errors else None
    field = ".".join(str(part) for part in first["loc"]) if first else "?"
    if missing:
        return f"the answer is missing required field `{field}`"
    return f"the answer's field `{field}` has the wrong type"


def _transport_cause(exc: BaseException) -> bool:
    """Whether a connection failure (refused, reset) lies under the SDK's exception."""
    seen = exc.__cause__ or exc.__context__
    while seen is not None:
        if isinstance(seen, OSError) or type(seen).__module__.startswith(("urllib3", "httpx")):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _installed(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"
