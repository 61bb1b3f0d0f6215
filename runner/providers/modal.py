"""`modal`: Modal Sandboxes through the `modal` package (gRPC; Modal has no public HTTP API).

The SDK is an optional dependency (requirements-modal.txt, pinned); without it, or without
MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (or their `_FILE`), the provider is refused before a run.
The adapter builds one `modal.Client` per adapter instance for the server named by
MODAL_SERVER_URL (default https://api.modal.com) with the token given here, never the SDK's
`~/.modal.toml`: credentials come only from the environment or `*_FILE`.

Create: `App.lookup(<app>, create_if_missing=True)` and `Image.from_registry(ref).build(app)`
once per adapter, outside the timed create (the account check's listing does it first), then
`Sandbox.create` with tags
`boxbench.batch=<label>` and `boxbench.created=<ISO time>`, `timeout` = the lifetime (Modal
enforces it: the sandbox ends then even if the runner crashed), `cpu` and `memory` as
(request, limit) pairs so the size is a hard limit (Modal's cpu unit is a physical core, two
vCPU), and `block_network` unless the spec asks for the network. The SDK returns a handle as soon
as Modal has accepted the sandbox, before it is scheduled: the first exec waits for scheduling
(the readiness check's first attempt), bounded here by that exec's time limit.

Commands: `Sandbox.exec` through the task command router on the sandbox's worker (the SDK opens
it); stdin is written and closed at once (closed even when empty, so a command never waits for
input); a command past its time limit is killed by Modal at its `timeout` (whole seconds, rounded
up) and reported as ExecTimeout. Files go through exec (`cat`): the SDK's filesystem API runs a
helper binary of Modal's own images, which boxbench's image does not have.

Ending: `terminate`; a sandbox is gone once Modal reports a result for it (terminated, timed out,
failed) or no longer knows it. Listing: `Sandbox.list(app_id=, tags=)` (running sandboxes having at
least those tags) plus each one's tags, so `bench cleanup` sees the label and the creation time.

Snapshots (docs/providers.md): `snapshot_filesystem` (an image, kept SNAPSHOT_TTL_S), restored
by a create from `Image.from_id`; deleted with `modal.experimental.image_delete`, gone once the
image no longer loads. An answer naming the standard image is refused, so cleanup never deletes
it. Modal lists no images by label: boxbench's own ledger lists what `bench cleanup` may delete.
Modal has no fork call: fork is not declared.

Configuration (docs/providers.md): MODAL_TOKEN_ID, MODAL_TOKEN_SECRET (or `_FILE`);
MODAL_SERVER_URL; BOXBENCH_MODAL_APP (default boxbench); BOXBENCH_MODAL_IMAGE (a registry
reference of boxbench's standard image; default boxbench-standard:latest).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
import os
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from runner.providers.answers import AnswerLimits, Capped, Listing, Reader
from runner.providers.base import (
    CredentialsRejected,
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    NotReady,
    Provider,
    ProviderError,
    Sandbox,
    SandboxSpec,
)
from runner.providers.credentials import MissingCredential, credential, redact
from runner.providers.ledger import Ledger
from runner.tasks import images
from runner.tasks.images import BuiltImage

BATCH_TAG = "boxbench.batch"
CREATED_TAG = "boxbench.created"
WORKDIR = "/app"
DEFAULT_SERVER = "https://api.modal.com"
MAX_LIFETIME_S = 24 * 3600  # Modal's longest sandbox timeout
STDIN_CHUNK = 1024 * 1024  # below the SDK's 16 MiB stdin buffer and gRPC's message limits
MISSING_FILE = 44  # the exit code of the download script when the path is not a regular file
SDK_MISSING = "the modal package is not installed: pip install -r requirements-modal.txt"
SNAPSHOT_TIMEOUT_S = 300
SNAPSHOT_TTL_S = 24 * 3600  # kept a day: a trial deletes its own at once


def _drop(record: logging.LogRecord) -> bool:
    return False


# The SDK sends the token as gRPC metadata, and hpack (HTTP/2 header compression, under grpclib)
# logs every header it encodes or decodes at DEBUG: the token in clear, and the encoded header
# blocks. Nothing in those records is worth the leak, so they are dropped wherever they are made.
for _name in ("hpack.hpack", "hpack.table"):
    logging.getLogger(_name).addFilter(_drop)


def _sdk():
    """The `modal` package, imported on first use so the rest of boxbench runs without it."""
    try:
        import modal
    except ImportError:
        raise ProviderError(f"modal: {SDK_MISSING}", code="unconfigured") from None
    return modal


class ModalProvider(Provider):
    slug = "modal"
    stdin_adds_requests = True  # a stdin write and its drain before the end of stdin
    layer_mechanism = "a Modal image: the file-system snapshot of a sandbox of the prepared image"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self.server_url = (
            self.settings.get("server_url") or os.environ.get("MODAL_SERVER_URL") or DEFAULT_SERVER
        ).rstrip("/")
        self.app_name = (
            self.settings.get("app") or os.environ.get("BOXBENCH_MODAL_APP") or "boxbench"
        )
        self.image_ref = (
            self.settings.get("image")
            or os.environ.get("BOXBENCH_MODAL_IMAGE")
            or "boxbench-standard:latest"
        )
        self._problem = None
        self._token_id = self._token_secret = None
        if importlib.util.find_spec("modal") is None:
            self._problem = SDK_MISSING
        else:
            try:
                self._token_id = credential("MODAL_TOKEN_ID", self.settings, "token_id")
                self._token_secret = credential("MODAL_TOKEN_SECRET", self.settings, "token_secret")
            except MissingCredential as exc:
                self._problem = str(exc)
        if self._problem is None:
            missing = [
                f"{name} or {name}_FILE"
                for name, value in (
                    ("MODAL_TOKEN_ID", self._token_id),
                    ("MODAL_TOKEN_SECRET", self._token_secret),
                )
                if not value
            ]
            if missing:
                self._problem = "not configured: set " + ", ".join(missing)
        self._client = self._app = self._image = None
        self._ledger: Ledger | None = None
        self._stack = contextlib.ExitStack()
        self.limits = AnswerLimits.from_settings(self.settings)

    def _reader(self, operation: str) -> Reader:
        return Reader("modal", operation, (self._token_id, self._token_secret))

    def configuration_problem(self) -> str | None:
        return self._problem

    # -- plumbing ---------------------------------------------------------------------------------

    def _call(self, operation: str, fn, data_plane: bool = False):
        """Run one SDK call, its errors mapped to the lifecycle's (every credential removed)."""
        if self._problem:
            raise ProviderError(f"modal {operation}: {self._problem}", operation, "unconfigured")
        modal = _sdk()
        errors = modal.exception
        try:
            return fn()
        except errors.ExecTimeoutError as exc:
            raise ExecTimeout(self._text(operation, exc), operation=operation) from None
        except errors.NotFoundError as exc:
            raise ProviderError(self._text(operation, exc), operation, "not_found") from None
        except errors.ResourceExhaustedError as exc:
            text = self._text(operation, exc, "plan or rate limit")
            raise ProviderError(text, operation, "rate_limited") from None
        except (errors.AuthError, errors.PermissionDeniedError) as exc:
            text = self._text(operation, exc)
            raise CredentialsRejected(text, operation, "unauthorized") from None
        except (
            errors.SandboxTimeoutError,
            errors.SandboxTerminatedError,
            errors.ConflictError,
        ) as exc:
            text = self._text(operation, exc, "the sandbox has ended")
            raise ProviderError(text, operation, "sandbox_gone") from None
        except (
            errors.ServiceError,
            errors.InternalError,
            errors.ConnectionError,
            ConnectionError,
            OSError,
        ) as exc:
            # After the SDK's own retries. On the data plane, an unreachable worker is a
            # sandbox not ready (yet), as for the HTTP adapters.
            kind = NotReady if data_plane else ProviderError
            raise kind(
                self._text(operation, exc), operation=operation, code="unavailable"
            ) from None
        except errors.Error as exc:
            raise ProviderError(self._text(operation, exc), operation, "rejected") from None

    def _text(self, operation: str, exc: BaseException, what: str = "") -> str:
        detail = f"{type(exc).__name__}: {exc}"
        if what:
            detail = f"{what}: {detail}"
        return redact(f"modal {operation}: {detail}", self._token_id, self._token_secret)

    @property
    def client(self):
        if self._client is None:
            modal = _sdk()
            from modal_proto import api_pb2

            client = modal.Client(
                self.server_url, api_pb2.CLIENT_TYPE_CLIENT, (self._token_id, self._token_secret)
            )
            self._client = self._stack.enter_context(client)
        return self._client

    def _app_and_image(self, operation: str):
        if self._app is None:
            modal = _sdk()
            app = self._call(
                operation,
                lambda: modal.App.lookup(self.app_name, create_if_missing=True, client=self.client),
            )
            # Built (looked up, on Modal: pulled once per account) here, outside any timed
            # create: the account check lists sandboxes before the chain's first trial.
            image = modal.Image.from_registry(self.image_ref)
            self._call(operation, lambda: image.build(app))
            self._app, self._image = app, image
        return self._app, self._image

    def _box(self, sandbox: Sandbox | LiveSandbox, operation: str):
        """The SDK's handle of `sandbox`: kept from create, or looked up by id (a sandbox that
        `bench cleanup` listed has none)."""
        handle = getattr(sandbox, "handle", None)
        if handle is None:
            modal = _sdk()
            handle = self._call(
                operation, lambda: modal.Sandbox.from_id(sandbox.id, client=self.client)
            )
            if isinstance(sandbox, Sandbox):
                sandbox.handle = handle
        return handle

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.image and images.built_here(spec.image):
            return self._start("create", _sdk().Image.from_id(spec.image, client=self.client), spec)
        if spec.image:
            raise ProviderError(
                f"modal runs the prepared image {self.image_ref!r}, not image {spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        if spec.layer:
            image = _sdk().Image.from_id(spec.layer, client=self.client)
        else:
            _, image = self._app_and_image("create")
        return self._start("create", image, spec)

    def _start(self, operation: str, image, spec: SandboxSpec) -> Sandbox:
        """A sandbox of `image` (the prepared one, or a snapshot's) for `spec`."""
        if spec.lifetime_s > MAX_LIFETIME_S:
            raise ProviderError(
                f"modal sandboxes live at most 24 h, not {spec.lifetime_s:g} s",
                operation=operation,
                code="unsupported_lifetime",
            )
        modal = _sdk()
        app, _ = self._app_and_image(operation)
        created_at = datetime.now(UTC)
        cores = spec.cpus / 2  # Modal's unit is a physical core: two vCPU
        tags = {BATCH_TAG: spec.label, CREATED_TAG: created_at.isoformat(timespec="seconds")}
        box = self._call(
            operation,
            lambda: modal.Sandbox.create(
                app=app,
                image=image,
                tags=tags,
                timeout=max(1, math.ceil(spec.lifetime_s)),
                cpu=(cores, cores),
                memory=(spec.memory_mib, spec.memory_mib),
                block_network=not spec.network,
                workdir=WORKDIR,
                client=self.client,
            ),
        )
        return Sandbox(
            id=box.object_id,
            label=spec.label,
            created_at=created_at,
            facts={
                "image": self.image_ref,
                "cpus": spec.cpus,
                "memory_mib": spec.memory_mib,
                "enforced": {"cpus": True, "memory": True},
            },
            handle=box,
        )

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        out = (self.limits.output_bytes, "max_output_mib", "the command's stdout")
        return self._run(sandbox, argv, timeout, stdin, workdir, env, "exec", out)

    def _run(self, sandbox, argv, timeout, stdin, workdir, env, operation, out) -> ExecResult:
        """A command, its stdout read up to `out` (cap, setting, what), its stderr up to
        max_output_mib; `operation` names the call in a failure."""
        if not argv:
            raise ProviderError("modal exec: empty argv", operation="exec")
        box = self._box(sandbox, "exec")
        deadline = time.monotonic() + timeout
        limit = max(1, math.ceil(timeout))  # Modal's exec timeout is whole seconds

        def start():
            return box.exec(
                *argv, timeout=limit, workdir=workdir, env=dict(env) if env else None, text=False
            )

        started = _Started(lambda: self._call("exec", start, data_plane=True))
        process = started.result(deadline - time.monotonic())
        if process is None:
            raise ProviderError(
                f"modal exec: the command had not started within {timeout:g} s in {sandbox.id} "
                "(the sandbox was not scheduled, or its worker did not answer)",
                operation="exec",
                code="not_started",
            ) from None

        def finish() -> ExecResult:
            data = stdin or b""
            for at in range(0, len(data), STDIN_CHUNK):
                process.stdin.write(data[at : at + STDIN_CHUNK])
                process.stdin.drain()
            process.stdin.write_eof()
            process.stdin.drain()
            code = process.wait()
            if code == -1 or (time.monotonic() >= deadline and code == 128 + 9):
                raise ExecTimeout(
                    f"modal: command did not return within {timeout:g} s in {sandbox.id}",
                    operation="exec",
                )
            reader = self._reader(operation)
            cap, setting, what = out
            stdout = Capped(reader, cap, what, setting)
            stderr = Capped(
                reader, self.limits.output_bytes, "the command's stderr", "max_output_mib"
            )
            return ExecResult(code, stdout.read(process.stdout), stderr.read(process.stderr))

        return self._call("exec", finish, data_plane=True)

    def upload(self, sandbox, path, data) -> None:
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        result = self.exec(sandbox, ["/bin/sh", "-c", script, "sh", path], 300, stdin=data)
        if result.exit_code != 0:
            raise ProviderError(
                f"modal upload: cannot write {path}: {result.stderr.decode(errors='replace')}",
                operation="upload",
            )

    def download(self, sandbox, path) -> bytes:
        script = f'[ -f "$1" ] || exit {MISSING_FILE}; exec cat -- "$1"'
        argv = ["/bin/sh", "-c", script, "sh", path]
        out = (self.limits.download_bytes, "max_download_mib", f"the file {path}")
        result = self._run(sandbox, argv, 300, None, None, None, "download", out)
        if result.exit_code == MISSING_FILE:
            raise ProviderError(
                f"modal download: {path} is not a file", operation="download", code="not_found"
            )
        if result.exit_code != 0:
            raise ProviderError(
                f"modal download: cannot read {path}: {result.stderr.decode(errors='replace')}",
                operation="download",
            )
        return result.stdout

    def destroy(self, sandbox) -> None:
        try:
            box = self._box(sandbox, "destroy")
            self._call("destroy", box.terminate)
        except ProviderError as exc:
            if exc.code != "not_found":  # gone is gone
                raise

    def is_gone(self, sandbox_id: str) -> bool:
        modal = _sdk()
        try:
            box = self._call(
                "is_gone", lambda: modal.Sandbox.from_id(sandbox_id, client=self.client)
            )
            return self._call("is_gone", box.poll) is not None
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        modal = _sdk()
        app, _ = self._app_and_image("list")
        wanted = {BATCH_TAG: label} if label is not None else None

        def listing() -> list[LiveSandbox]:
            found = []
            # The SDK pages by itself, for as long as the server sends pages.
            guard = Listing(self._reader("list"), self.limits.pages, items_per_page=100)
            for box in modal.Sandbox.list(app_id=app.app_id, tags=wanted, client=self.client):
                guard.item(box.object_id)
                tags = box.get_tags()
                found.append(
                    LiveSandbox(
                        id=box.object_id,
                        label=tags.get(BATCH_TAG, ""),
                        created_at=_timestamp(tags.get(CREATED_TAG)),
                    )
                )
            return found

        return self._call("list", listing)

    # -- task images -----------------------------------------------------------------------------

    def build_task_image(self, task) -> BuiltImage:
        """The task's Dockerfile built as a Modal image (`Image.from_dockerfile`, its folder the
        build context), untimed, its FROM the standard image pointed at this account's reference
        of it (BOXBENCH_MODAL_IMAGE); once per account and task digest in this process. The
        image id is Modal's immutable identifier; sandboxes of any size start from it."""
        return images.build_once(
            f"modal {self.server_url} {self._token_id}",
            images.template_name(task),
            lambda: self._build_image(task),
        )

    def _build_image(self, task) -> BuiltImage:
        modal = _sdk()
        app, _ = self._app_and_image("build task image")
        folder = task.path / "environment"
        with tempfile.TemporaryDirectory(prefix="boxbench-dockerfile-") as scratch:
            # Outside the build context, so the rewritten Dockerfile is not one of its files.
            path = Path(scratch) / "Dockerfile"
            path.write_text(images.dockerfile_on(task, self.image_ref), encoding="utf-8")
            image = modal.Image.from_dockerfile(path, context_dir=folder)

            def build() -> None:
                try:
                    image.build(app)
                except modal.exception.ImageBuildError as exc:
                    # The build itself failed (a step, a base it cannot pull): the task's.
                    said = self._text("build task image", exc)
                    raise images.BuildError(f"Modal's image build failed: {said}") from None

            self._call("build task image", build)
        return BuiltImage(image.object_id, "")

    # -- snapshots --------------------------------------------------------------------------------

    @property
    def snapshot_ledger(self) -> Ledger:
        """boxbench's record of the snapshots it made: Modal lists no images by label."""
        if self._ledger is None:
            self._ledger = Ledger.for_provider("modal-snapshots", self.settings.get("ledger_dir"))
        return self._ledger

    def snapshot(self, sandbox: Sandbox) -> str:
        """`snapshot_filesystem`: an image of the sandbox's file system (no memory), kept for
        SNAPSHOT_TTL_S, so one a crashed trial left behind expires by itself."""
        box = self._box(sandbox, "snapshot")
        image = self._call(
            "snapshot",
            lambda: box.snapshot_filesystem(timeout=SNAPSHOT_TIMEOUT_S, ttl=SNAPSHOT_TTL_S),
        )
        # The SDK itself refuses an answer without an image id (InvalidError: `rejected`).
        image_id = image.object_id
        self._refuse_standard(self._reader("snapshot"), image_id)
        self.snapshot_ledger.created(image_id, sandbox.label, datetime.now(UTC), SNAPSHOT_TTL_S)
        return image_id

    def _refuse_standard(self, reader: Reader, image_id: str) -> None:
        """Every snapshot is deleted after its trial: an answer naming the standard image as a
        snapshot would have that delete take the image every sandbox starts from."""
        _, standard = self._app_and_image(reader.operation)
        if image_id == standard.object_id:
            raise reader.fail(
                f"the snapshot answer names {image_id}, the standard image ({self.image_ref}), "
                "which boxbench never deletes"
            )

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        modal = _sdk()
        # Looked up as Sandbox.create resolves it: a snapshot Modal no longer has is not found.
        image = modal.Image.from_id(snapshot_id, client=self.client)
        sandbox = self._start("restore", image, spec)
        sandbox.facts["restored_from"] = snapshot_id
        return sandbox

    def delete_snapshot(self, snapshot_id: str) -> None:
        modal = _sdk()
        self._refuse_standard(self._reader("delete snapshot"), snapshot_id)
        try:
            self._call(
                "delete snapshot",
                lambda: modal.experimental.image_delete(snapshot_id, client=self.client),
            )
        except ProviderError as exc:
            if exc.code != "not_found":  # gone already (its ttl passed), as a delete wants
                raise
        self.snapshot_ledger.stopped(snapshot_id)

    def snapshot_gone(self, snapshot_id: str) -> bool:
        modal = _sdk()
        app, _ = self._app_and_image("snapshot_gone")
        # An Image cannot be hydrated on demand; `build` loads it (ImageFromId), and rebuilds
        # nothing: NOT_FOUND once Modal deleted it.
        try:
            self._call(
                "snapshot_gone",
                lambda: modal.Image.from_id(snapshot_id, client=self.client).build(app),
            )
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise
        return False

    def list_snapshots(self, label: str | None = None) -> list[LiveSandbox]:
        """Snapshots left behind, for `bench cleanup`: those in the ledger never deleted."""
        return [
            LiveSandbox(entry.id, entry.label, entry.created_at)
            for entry in self.snapshot_ledger.open_entries()
            if label is None or entry.label == label
        ]

    def endpoints(self) -> list[tuple[str, int]]:
        parts = urlsplit(self.server_url)
        return [(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))]

    def doctor(self) -> list[DoctorCheck]:
        if self._problem:
            name = "sdk" if self._problem == SDK_MISSING else "credentials"
            return [DoctorCheck.not_configured(name, self._problem)]
        started = time.monotonic()
        try:
            self._call("doctor", lambda: self.client.hello())
            app, _ = self._app_and_image("doctor")
        except ProviderError as exc:
            return [DoctorCheck("api", False, str(exc))]
        elapsed = (time.monotonic() - started) * 1000
        return [
            DoctorCheck("credentials", True, "MODAL_TOKEN_ID, MODAL_TOKEN_SECRET set"),
            DoctorCheck(
                "api",
                True,
                f"{self.server_url} answered hello and app lookup in "
                f"{elapsed:.0f} ms (app {self.app_name}, {app.app_id})",
            ),
            DoctorCheck("image", True, f"{self.image_ref} (BOXBENCH_MODAL_IMAGE)"),
        ]


class _Started:
    """Starting a command waits for the sandbox to be scheduled, with no bound of the SDK's own,
    so it runs in a daemon thread and the caller stops waiting at the command's time limit. A
    thread left behind ends when the sandbox is scheduled or terminated (the SDK's poll then
    answers), and never holds up the interpreter's exit."""

    def __init__(self, fn):
        self._fn = fn
        self._done = threading.Event()
        self._value = self._error = None
        threading.Thread(target=self._run, name="modal-exec-start", daemon=True).start()

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as it is
            self._error = exc
        finally:
            self._done.set()

    def result(self, seconds: float):
        """The call's value, its exception raised, or None when it did not end in time."""
        if not self._done.wait(max(0.01, seconds)):
            return None
        if self._error is not None:
            raise self._error
        return self._value


def _timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
