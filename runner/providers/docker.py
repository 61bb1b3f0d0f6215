"""The Docker Engine API provider: a local Docker daemon, Podman's Docker-compatible service, or a
Docker host you control over ssh:// or tcp:// with TLS (`remote-docker`, remote_docker.py).

Each sandbox is one container (its limits and hardening in docker_hardening.py): network none,
the requested CPUs and memory, a pids limit, explicit nofile and nproc limits, never privileged,
only the capabilities the standard image's commands need, no new privileges, a seccomp profile of
our own (docker_seccomp.py), a user namespace of its own where asked (BOXBENCH_DOCKER_USERNS), a
bounded writable layer where the engine enforces one, the batch label, and
`sleep <lifetime>` as its main process with auto-remove, so a container outlives a crashed runner
by at most its lifetime. Commands run through exec; files move as tar archives; snapshots are
image commits (filesystem only, no memory), and a fork is a commit restored at once.

Configuration (docs/providers.md): `docker` reads DOCKER_HOST, DOCKER_TLS_VERIFY and
DOCKER_CERT_PATH like the docker CLI, and without DOCKER_HOST finds the Docker or Podman socket;
`remote-docker` reads BOXBENCH_REMOTE_DOCKER_HOST and BOXBENCH_REMOTE_DOCKER_CERT_PATH.
Both read BOXBENCH_DOCKER_NOFILE, BOXBENCH_DOCKER_NPROC and BOXBENCH_DOCKER_DISK_MIB. Settings
passed to the constructor (host, cert_path, tls_verify, nofile, nproc, disk_mib, api_version) win
over the environment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import math
import os
import re
import shutil
import tarfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import docker
import docker.errors
import paramiko
import requests.exceptions

from runner import waiting
from runner.images.build import ImageError, Recipe, load_recipe, read_pin
from runner.providers import docker_exec_stream as exec_stream
from runner.providers import docker_hardening as hardening
from runner.providers.answers import MIB, TOO_LARGE, AnswerLimits, Capped, Reader
from runner.providers.base import (
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    NotReady,
    Provider,
    ProviderError,
    Sandbox,
    SandboxSpec,
    fork_by_snapshot,
)
from runner.providers.docker_seccomp import engine_name
from runner.providers.tar_upload import Member, unpadded_tar

# Container and image labels: the batch label for cleanup, and what kind of object it is.
BATCH_LABEL = "boxbench.batch"
KIND_LABEL = "boxbench.kind"  # sandbox | snapshot | standard-image
ROOTFS_LABEL = "boxbench.rootfs"  # the standard image's pinned rootfs digest
EXEC_MARKER = "BOXBENCH_EXEC"  # in the environment of every exec'd process, to kill it on timeout

# What the engine's transports raise: the SDK, HTTP, and paramiko for ssh:// engines.
ENGINE_ERRORS = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
    paramiko.SSHException,
    OSError,
)

WORKDIR = "/app"
TAR_ROOM = MIB  # an archive of one file: its headers (long names, PAX records) and padding
DEFAULT_NOFILE = 8192  # below the 20000 hard limit a Podman service often inherits
DEFAULT_NPROC = 4096
# Requests other than a running exec give up after this long; exec waits follow their own timeout.
API_TIMEOUT_S = 120
# An exec's output can end a moment before the engine records its exit code: asked every 10 ms
# for up to 2 s (it was 100 asks, which a loaded engine could stretch well past one second).
EXIT_CODE_POLL = waiting.every(0.01)
EXIT_CODE_WAIT_S = 2.0
# A container being removed (auto-remove raced a destroy) is asked after every 20 ms.
REMOVAL_POLL = waiting.every(0.02)
# Podman reads every image's files while it lists images: one another client removes meanwhile
# turns the whole listing into a 500 naming the vanished file. A listing is safe to ask again.
RELIST = waiting.Backoff(first_s=0.1, factor=2.0)
RELIST_WITHIN_S = 2.0
MIN_FREE_BYTES = 5 * 1024**3
NOT_READY_STATUS = {502, 503, 504}
# Written by `./boxbench.sh run` (relative to BOXBENCH_VAR_DIR): the engine socket it started.
ENGINE_RECORD = "engine-socket"
LOCAL_SOCKETS = (
    "/var/run/docker.sock",
    "/run/podman/podman.sock",
    "{xdg}/podman/podman.sock",
    "{xdg}/docker.sock",
)
# Kills every process carrying the exec's marker (the command and its children) from inside.
KILL_SCRIPT = (
    "for e in /proc/[0-9]*/environ; do p=${e#/proc/}; p=${p%/environ}; "
    'grep -qzx "$1" "$e" 2>/dev/null && kill -KILL "$p" 2>/dev/null; done; true'
)


def recorded_engine() -> tuple[str, str]:
    """The engine socket `./boxbench.sh run` started and recorded in var/engine-socket, so that
    commands in another shell find it: (url, "") while the socket exists, else ("", why not)."""
    from django.conf import settings as django_settings

    record = Path(django_settings.VAR_DIR) / ENGINE_RECORD
    try:
        url = record.read_text().strip()
    except OSError:
        return "", ""
    path = url.removeprefix("unix://")
    if url.startswith("unix://") and os.path.exists(path):
        return url, ""
    return "", (
        f"; {record} names {url}, which is not there: the Podman service `./boxbench.sh run` "
        f"started has stopped. Start it again with `./boxbench.sh run`, or set "
        f"DOCKER_HOST=unix://<socket of a running engine>"
    )


class EngineClient(docker.APIClient):
    """The Engine API client, deaf to requests' environment settings.

    requests lets REQUESTS_CA_BUNDLE replace the CA a client was given (the engine's, from
    DOCKER_CERT_PATH), and an engine connection never goes through an HTTP proxy.
    """

    @property
    def trust_env(self):
        return False

    @trust_env.setter
    def trust_env(self, value):
        pass  # requests.Session.__init__ sets it; the engine connection ignores the environment


class DockerProvider(Provider):
    """`docker`: the engine on this machine (Docker, or Podman's Docker-compatible service)."""

    slug = "docker"
    stdin_adds_requests = True
    layer_mechanism = "an image commit: the pinned base image plus one layer"
    host_variable = "DOCKER_HOST"
    cert_path_variable = "DOCKER_CERT_PATH"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        if declaration is not None and getattr(declaration, "provider", None):
            self.slug = declaration.provider
        self.nofile = hardening.limit_setting(
            self.settings, "nofile", "BOXBENCH_DOCKER_NOFILE", DEFAULT_NOFILE
        )
        self.nproc = hardening.limit_setting(
            self.settings, "nproc", "BOXBENCH_DOCKER_NPROC", DEFAULT_NPROC
        )
        self.disk_mib = hardening.limit_setting(
            self.settings, "disk_mib", "BOXBENCH_DOCKER_DISK_MIB", hardening.DEFAULT_DISK_MIB
        )
        self._disk_bound: tuple[int | None] | None = None  # asked of the engine once
        self.userns = self.settings.get("userns", os.environ.get("BOXBENCH_DOCKER_USERNS", ""))
        self._client: docker.APIClient | None = None
        self._lock = threading.Lock()
        self.limits = AnswerLimits.from_settings(self.settings)

    def _reader(self, operation: str) -> Reader:
        return Reader(self.slug, operation)

    # -- connection ---------------------------------------------------------------------------

    def base_url(self) -> str:
        """Where the engine listens, from the settings, the environment, or the usual sockets."""
        url = self.settings.get("host") or os.environ.get(self.host_variable, "")
        if url:
            return url
        recorded, note = recorded_engine()
        if recorded:
            return recorded
        xdg = os.environ.get("XDG_RUNTIME_DIR", f"/run/user/{os.getuid()}")
        for candidate in LOCAL_SOCKETS:
            path = candidate.format(xdg=xdg)
            if os.path.exists(path):
                return f"unix://{path}"
        raise ProviderError(
            f"{self.slug}: no engine socket found; set {self.host_variable} "
            f"(looked in {', '.join(c.format(xdg=xdg) for c in LOCAL_SOCKETS)}){note}",
            operation="connect",
        )

    def tls_config(self, url: str) -> docker.tls.TLSConfig | bool:
        """TLS for tcp:// engines from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, as the CLI does."""
        cert_path = self.settings.get("cert_path") or os.environ.get(self.cert_path_variable, "")
        verify = self.settings.get("tls_verify", os.environ.get("DOCKER_TLS_VERIFY", "")) not in (
            "",
            "0",
            False,
        )
        if not url.startswith(("tcp://", "https://")) or not (cert_path or verify):
            return False
        return tls_from_directory(
            cert_path or str(Path.home() / ".docker"), self.cert_path_variable
        )

    @property
    def api(self) -> EngineClient:
        with self._lock:
            if self._client is None:
                url = self.base_url()
                try:
                    self._client = EngineClient(
                        base_url=url,
                        version=self.settings.get("api_version", "auto"),
                        timeout=API_TIMEOUT_S,
                        tls=self.tls_config(url),
                        # paramiko, not the ssh binary: docker-py's ssh-binary transport starts
                        # an ssh process for every request, so no call would find a warm one.
                        use_ssh_client=False,
                    )
                except ENGINE_ERRORS as exc:
                    raise _classify(exc, "connect", f"cannot reach the engine at {url}") from exc
            return self._client

    @functools.cached_property
    def engine(self) -> str:
        """Docker or Podman: their APIs take the seccomp profile differently."""
        return engine_name(self._call("create", lambda: self.api.version()))

    def close(self) -> None:
        """Close the engine connections (for ssh:// engines, the SSH connection too)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _call(self, operation: str, call, what: str = ""):
        try:
            return call()
        except ENGINE_ERRORS as exc:
            raise _classify(exc, operation, what) from exc

    # -- the standard image -------------------------------------------------------------------

    def standard_image(self) -> tuple[str, str]:
        """(engine reference, pinned rootfs digest) of the standard image."""
        recipe = load_recipe()
        digest = read_pin()
        return recipe.tag(digest), digest

    def disk_bound_mib(self) -> int | None:
        """The writable layer's bound a create asks for, None where the engine cannot enforce
        one (docker_hardening.py); the engine is asked once."""
        if self._disk_bound is None:
            try:
                info = self._call("create", lambda: self.api.info())
            except ProviderError:
                return None  # the create's own answer says what is wrong with the engine
            self._disk_bound = (self.disk_mib if hardening.can_bound_disk(info) else None,)
        return self._disk_bound[0]

    def image_status(self, recipe: Recipe, digest: str) -> dict | None:
        """The engine's record of the standard image for `digest`, or None when it is absent.

        Raises ImageError when the tag exists but holds a different rootfs (someone re-tagged it).
        """
        try:
            info = self.api.inspect_image(recipe.tag(digest))
        except docker.errors.NotFound:
            return None
        except ENGINE_ERRORS as exc:
            raise _classify(exc, "image inspect") from exc
        labels = (info.get("Config") or {}).get("Labels") or {}
        layers = (info.get("RootFS") or {}).get("Layers") or []
        if labels.get(ROOTFS_LABEL) != digest:
            raise ImageError(
                f"{recipe.tag(digest)} on {self.base_url()} is labelled rootfs "
                f"{labels.get(ROOTFS_LABEL)!r}, not the pinned {digest}; remove it, prepare again"
            )
        return {"id": info["Id"], "layers": layers, "size": info.get("Size")}

    def import_image(self, recipe: Recipe, tar_path: Path, digest: str) -> str:
        """Import a rootfs tarball as the standard image, tagged and labelled with its digest."""
        changes = [f"WORKDIR {recipe.workdir}"]
        changes += [f"ENV {name}={value}" for name, value in recipe.env.items()]
        changes += [f"LABEL {ROOTFS_LABEL}={digest}", f"LABEL {KIND_LABEL}=standard-image"]
        changes.append('CMD ["/bin/bash"]')
        answer = self._call(
            "image import",
            lambda: self.api.import_image_from_file(str(tar_path), changes=changes),
        )
        image_id = _imported_id(answer)
        # Tagged apart from the import: Podman's import ignores the tag it is given (uses latest).
        repository, tag = recipe.tag(digest).split(":")
        self._call("image tag", lambda: self.api.tag(image_id, repository, tag))
        return image_id

    # -- sandboxes ----------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.layer or spec.image:
            image = spec.layer or spec.image
            image_digest = _digest_in_reference(image)
        else:
            image, image_digest = self.standard_image()
        lifetime = max(1, math.ceil(spec.lifetime_s))
        disk_mib = self.disk_bound_mib()
        host_config = self.api.create_host_config(
            **hardening.host_options(
                spec, nofile=self.nofile, nproc=self.nproc, engine=self.engine, disk_mib=disk_mib
            )
        )
        userns = hardening.user_namespace(self.engine, self.userns)
        if userns:  # set past the SDK, which knows only "host"
            host_config["UsernsMode"] = userns
        labels = {BATCH_LABEL: spec.label, KIND_LABEL: "sandbox"}
        try:
            created = self._call(
                "create",
                lambda: self.api.create_container(
                    image,
                    command=["sleep", str(lifetime)],  # the provider-enforced lifetime
                    labels=labels,
                    working_dir=WORKDIR,
                    host_config=host_config,
                ),
                _image_hint(image, spec.image),
            )
        except ProviderError as exc:
            raise hardening.with_hint(exc) from exc.__cause__
        container_id = self._reader("create").key(created, "Id", what="the engine's answer")
        try:
            self._call("create", lambda: self.api.start(container_id))
            info = self._call("create", lambda: self.api.inspect_container(container_id))
        except ProviderError as exc:
            self._remove_quietly(container_id)
            raise hardening.with_hint(exc) from exc.__cause__
        host = info.get("HostConfig") or {}
        cpus = (host.get("NanoCpus") or 0) / 1_000_000_000
        memory_mib = (host.get("Memory") or 0) // (1024 * 1024)
        pids = host.get("PidsLimit") or 0
        facts = {
            "cpus": cpus,
            "memory_mib": memory_mib,
            "pids_limit": pids,
            "enforced": {
                "cpus": cpus == spec.cpus,
                "memory": memory_mib == spec.memory_mib,
                "pids": pids == self.nproc,
                "disk": disk_mib is not None,
            },
            "disk_mib": disk_mib,
            "image": image,
            "image_digest": image_digest,
            "lifetime_s": lifetime,
            "network": "bridge" if spec.network else "none",
            "userns": userns or "engine's",
        }
        warnings = [w for w in created.get("Warnings") or [] if w]
        if warnings:
            facts["notes"] = warnings
        return Sandbox(
            id=container_id,
            label=spec.label,
            created_at=_parse_time(info.get("Created")),
            facts=facts,
        )

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
        token = uuid.uuid4().hex
        environment = {**(env or {}), EXEC_MARKER: token}
        if stdin is not None:
            # Half-closing an exec's stdin does not survive TLS and SSH transports; a file does.
            stdin_file = f"/tmp/.boxbench-stdin-{token}"
            self._put_file(sandbox.id, stdin_file, stdin, "exec")
            # Opened, then removed before the command starts: stdin can carry a secret (the guest
            # clock's key) that the command's programs must not find in /tmp. The last rm is for
            # a redirection that failed.
            script = '(exec < "$0"; rm -f "$0"; exec "$@"); status=$?; rm -f "$0"; exit $status'
            argv = ["sh", "-c", script, stdin_file, *argv]
        created = self._call(
            "exec",
            lambda: self.api.exec_create(
                sandbox.id, argv, workdir=workdir or WORKDIR, environment=environment
            ),
        )
        exec_id = self._reader("exec").key(created, "Id", what="the engine's answer")
        response = self._call("exec", lambda: self._start_exec(exec_id))
        outcome: dict = {}
        stdout, stderr = exec_stream.outputs(self._reader("exec"), self.limits.output_bytes)

        def read_all():
            try:
                exec_stream.read_frames(response.raw._fp.fp, stdout, stderr)
            except Exception as exc:  # noqa: BLE001 - handed to the caller's thread below
                outcome["error"] = exc

        reader = threading.Thread(target=read_all, name=f"exec-{exec_id[:12]}", daemon=True)
        reader.start()
        reader.join(timeout)
        error = outcome.get("error")
        if reader.is_alive() or getattr(error, "code", "") == TOO_LARGE:
            self._kill_exec(sandbox.id, f"{EXEC_MARKER}={token}")  # past its time, or its cap
            reader.join(5)
            exec_stream.hang_up(response)
            if isinstance(error, ProviderError):
                raise error
            raise ExecTimeout(
                f"exec {argv[0]!r} did not return within {timeout:g}s; its processes were killed",
                operation="exec",
            )
        _close_exec(response)
        if error is not None:
            raise _classify(error, "exec")
        return ExecResult(
            exit_code=self._exit_code(exec_id),
            stdout=bytes(stdout.data),
            stderr=bytes(stderr.data),
        )

    def _start_exec(self, exec_id: str):
        """Start an exec and return its HTTP response, left open for reading its output.

        docker-py's own exec_start reads the raw socket and so loses output that arrived with the
        response headers (Podman sends both at once for short commands): read_all reads the
        response's buffered file instead (docker-py 7.x internals).
        """
        api = self.api
        response = api._post_json(
            api._url("/exec/{0}/start", exec_id),
            headers={"Connection": "Upgrade", "Upgrade": "tcp"},
            data={"Tty": False, "Detach": False},
            stream=True,
        )
        api._raise_for_status(response)
        api._disable_socket_timeout(api._get_raw_response_socket(response))
        return response

    def _exit_code(self, exec_id: str) -> int:
        # The output can end a moment before the engine records the exit code.
        info: dict = {}

        def recorded() -> bool:
            info.clear()
            info.update(self._call("exec", lambda: self.api.exec_inspect(exec_id)))
            return not info.get("Running") and info.get("ExitCode") is not None

        if waiting.poll_until(recorded, EXIT_CODE_WAIT_S, EXIT_CODE_POLL):
            return self._reader("exec").key(info, "ExitCode", int, "the exec's state")
        raise ProviderError(f"exec {exec_id[:12]}: the engine never reported an exit code", "exec")

    def _kill_exec(self, container_id: str, marker: str) -> None:
        try:
            killer = self.api.exec_create(container_id, ["sh", "-c", KILL_SCRIPT, "sh", marker])
            self.api.exec_start(self._reader("exec").key(killer, "Id", what="the engine's answer"))
        except (*ENGINE_ERRORS, ProviderError):
            pass  # the sandbox may be gone; the timeout is reported either way

    def upload(self, sandbox: Sandbox, path: str, data: bytes) -> None:
        self._put_file(sandbox.id, path, data, "upload")

    def _put_file(self, container_id: str, path: str, data: bytes, operation: str) -> None:
        directory, name = os.path.split(_absolute(path, operation))
        if not name:
            raise ProviderError(f"{operation}: {path!r} names a directory, not a file", operation)
        archive = unpadded_tar([Member(name, data, 0o644, int(time.time()))])
        self._call(
            operation,
            lambda: self.api.put_archive(container_id, directory or "/", archive),
            f"(does {directory} exist in the sandbox?)",
        )

    def download(self, sandbox: Sandbox, path: str) -> bytes:
        path = _absolute(path, "download")
        cap = self.limits.download_bytes
        # The archive holds the file and its tar headers (TAR_ROOM): a file past the cap fails
        # while the archive streams in, never held whole.
        capped = Capped(
            self._reader("download"), cap + TAR_ROOM, f"the archive of {path}", "max_download_mib"
        )

        def fetch():
            chunks, _ = self.api.get_archive(sandbox.id, path)
            return capped.read(chunks)

        archive = self._call("download", fetch, f"(does {path} exist in the sandbox?)")
        # Read as the plain tar it must be ("r:"): nothing is expanded before sizes are checked.
        try:
            tar = tarfile.open(fileobj=io.BytesIO(archive), mode="r:")  # noqa: SIM115
        except tarfile.TarError as exc:
            raise ProviderError(
                f"download: the engine's archive of {path} is not a plain tar ({exc})",
                operation="download",
            ) from None
        with tar:
            members = tar.getmembers()
            if len(members) != 1 or not members[0].isfile():
                raise ProviderError(f"download: {path} is not a regular file", operation="download")
            if members[0].size > cap:
                capped.cap, capped.what = cap, f"the file {path}"
                raise capped.too_large(members[0].size)
            handle = tar.extractfile(members[0])  # a regular file's member always has one
            return handle.read() if handle is not None else b""

    def memory_in_use(self, sandbox: Sandbox) -> int | None:
        try:  # the engine's one-shot stats: the container's cgroup usage
            usage = self.api.stats(sandbox.id, stream=False)["memory_stats"]["usage"]
        except (*ENGINE_ERRORS, KeyError, TypeError):
            return None
        return usage if isinstance(usage, int) and usage >= 0 else None

    def destroy(self, sandbox: Sandbox) -> None:
        # Returns once the engine has removed the container; confirming it gone (is_gone) is the
        # lifecycle's untimed step.
        try:
            self.api.remove_container(sandbox.id, force=True, v=True)
        except docker.errors.APIError as exc:
            if _no_such_container(exc):
                return  # auto-remove got there first
            if exc.status_code != 409:
                raise _classify(exc, "destroy") from exc
            # 409: auto-remove is already removing it; destroy ends when that has.
            self._wait_gone(sandbox.id, "destroy")
        except ENGINE_ERRORS as exc:
            raise _classify(exc, "destroy") from exc

    def is_gone(self, sandbox_id: str) -> bool:
        try:
            self.api.inspect_container(sandbox_id)
        except docker.errors.APIError as exc:
            if _no_such_container(exc):
                return True
            raise _classify(exc, "confirm deletion") from exc
        except ENGINE_ERRORS as exc:
            raise _classify(exc, "confirm deletion") from exc
        return False

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        filters = {"label": f"{BATCH_LABEL}={label}" if label else BATCH_LABEL}
        found = self._call("list", lambda: self.api.containers(all=True, filters=filters))
        return [_live(c) for c in found if _kind(c) == "sandbox"]

    def _wait_gone(self, container_id: str, operation: str, within_s: float = 30.0) -> None:
        if not waiting.poll_until(lambda: self.is_gone(container_id), within_s, REMOVAL_POLL):
            raise ProviderError(
                f"{operation}: container {container_id[:12]} still exists after {within_s:g}s",
                operation=operation,
            )

    def _remove_quietly(self, container_id: str) -> None:
        # Best effort: cleanup by label catches what this misses.
        with contextlib.suppress(*ENGINE_ERRORS):
            self.api.remove_container(container_id, force=True)

    # -- snapshots: image commits --------------------------------------------------------------

    def snapshot(self, sandbox: Sandbox) -> str:
        tag = uuid.uuid4().hex[:16]
        changes = [f"LABEL {BATCH_LABEL}={sandbox.label}", f"LABEL {KIND_LABEL}=snapshot"]
        answer = self._call(
            "snapshot",
            lambda: self.api.commit(
                sandbox.id, repository="boxbench-snapshot", tag=tag, changes=changes
            ),
        )
        image_id = self._reader("snapshot").key(answer, "Id", what="the engine's answer")
        return image_id if image_id.startswith("sha256:") else f"sha256:{image_id}"

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        sandbox = self.create(dataclasses.replace(spec, image=snapshot_id))
        sandbox.facts["restored_from"] = snapshot_id
        return sandbox

    def delete_snapshot(self, snapshot_id: str) -> None:
        try:
            self.api.remove_image(snapshot_id, force=True)
        except docker.errors.NotFound:
            return
        except ENGINE_ERRORS as exc:
            raise _classify(exc, "delete snapshot") from exc

    def snapshot_gone(self, snapshot_id: str) -> bool:
        try:
            self.api.inspect_image(snapshot_id)
        except docker.errors.NotFound:
            return True
        except ENGINE_ERRORS as exc:
            raise _classify(exc, "confirm snapshot deletion") from exc
        return False

    def fork(self, sandbox: Sandbox, spec: SandboxSpec) -> Sandbox:
        # The Engine API cannot clone a running container: a commit restored at once, whose
        # image the lifecycle deletes after the copy (filesystem only, no processes).
        return fork_by_snapshot(self, sandbox, spec)

    def list_snapshots(self, label: str | None = None) -> list[LiveSandbox]:
        """Snapshot images left behind, for `bench cleanup` (delete each with delete_snapshot)."""
        # One label per query: Podman 4.3 answers nothing when given two label filters.
        filters = {"label": f"{BATCH_LABEL}={label}" if label else BATCH_LABEL}
        found = self._call(
            "list snapshots",
            lambda: waiting.retry_while(
                _vanished_while_listed,
                lambda: self.api.images(filters=filters),
                RELIST_WITHIN_S,
                RELIST,
                errors=(docker.errors.APIError,),
            ),
        )
        return [_live(image) for image in found if _kind(image) == "snapshot"]

    # -- doctor --------------------------------------------------------------------------------

    def doctor(self) -> list[DoctorCheck]:
        try:
            url = self.base_url()
        except ProviderError as exc:
            # Named, or recorded by `./boxbench.sh run` and since stopped: wrong. Else none here.
            named = self.settings.get("host") or os.environ.get(self.host_variable)
            if named or recorded_engine()[1]:
                return [DoctorCheck("engine", False, str(exc))]
            return [DoctorCheck.not_configured("engine", str(exc))]
        try:
            version = self._call("doctor", lambda: self.api.version())
            info = self._call("doctor", lambda: self.api.info())
        except ProviderError as exc:
            return [DoctorCheck("engine", False, str(exc))]
        engine = engine_name(version)
        checks = [
            DoctorCheck(
                "engine",
                True,
                f"{engine} {version.get('Version', '?')} via {url} "
                f"({info.get('NCPU', '?')} CPU, {_gib(info.get('MemTotal'))} GiB)",
            ),
            DoctorCheck(
                "api",
                True,
                f"API {self.api.api_version} (server {version.get('ApiVersion', '?')}, "
                f"oldest {version.get('MinAPIVersion', '?')})",
            ),
        ]
        checks.append(self._doctor_image())
        checks.append(self._doctor_space(url, info))
        checks.append(DoctorCheck("disk bound", *hardening.disk_check_text(info, self.disk_mib)))
        checks.append(hardening.userns_check(engine, info, self.userns))
        return checks

    def _doctor_image(self) -> DoctorCheck:
        name = "image"
        try:
            recipe, digest = load_recipe(), read_pin()
            status = self.image_status(recipe, digest)
        except (ImageError, ProviderError) as exc:
            return DoctorCheck(name, False, str(exc))
        if status is None:
            return DoctorCheck(
                name, False, f"{recipe.tag(digest)} missing; run `manage.py bench image prepare`"
            )
        layer = "layer matches" if status["layers"] == [digest] else f"layers {status['layers']}"
        return DoctorCheck(name, True, f"{recipe.tag(digest)} rootfs {digest} ({layer})")

    def _doctor_space(self, url: str, info: dict) -> DoctorCheck:
        name = "storage"
        root = info.get("DockerRootDir") or ""
        if url.startswith("unix://") and root and os.path.isdir(root):
            free = shutil.disk_usage(root).free
            ok = free >= MIN_FREE_BYTES
            return DoctorCheck(name, ok, f"{_gib(free)} GiB free in {root}")
        return DoctorCheck(
            name, True, f"free space of {root or 'the engine storage'} is not visible from here"
        )


def tls_from_directory(directory: str, variable: str) -> docker.tls.TLSConfig:
    files = {name: os.path.join(directory, name) for name in ("ca.pem", "cert.pem", "key.pem")}
    missing = [name for name, path in files.items() if not os.path.isfile(path)]
    if missing:
        raise ProviderError(
            f"{variable}={directory}: missing {', '.join(missing)}", operation="connect"
        )
    return docker.tls.TLSConfig(
        client_cert=(files["cert.pem"], files["key.pem"]), ca_cert=files["ca.pem"], verify=True
    )


def _no_such_container(exc: docker.errors.APIError) -> bool:
    # Podman answers 500 "does not exist in database" while auto-remove is under way.
    return isinstance(exc, docker.errors.NotFound) or "no such container" in str(exc).lower()


def _vanished_while_listed(exc: BaseException) -> bool:
    explanation = str(getattr(exc, "explanation", "") or "").lower()
    return getattr(exc, "status_code", None) == 500 and "does not exist" in explanation


def _close_exec(response) -> None:
    """Close a finished exec's connection: a hijacked connection is never reused."""
    with contextlib.suppress(*ENGINE_ERRORS):
        response.close()


def _classify(exc: Exception, operation: str, what: str = "") -> ProviderError:
    """Engine and transport errors as provider errors; not-ready signals as NotReady."""
    suffix = f" {what}" if what else ""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, docker.errors.APIError):
        status = exc.status_code or 0
        detail = exc.explanation or str(exc)
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        kind = NotReady if status in NOT_READY_STATUS else ProviderError
        return kind(f"{operation}: HTTP {status}: {detail}{suffix}", operation, code=str(status))
    if isinstance(exc, requests.exceptions.ConnectionError | ConnectionError):
        return NotReady(f"{operation}: connection failed: {exc}{suffix}", operation)
    return ProviderError(f"{operation}: {exc}{suffix}", operation)


def _absolute(path: str, operation: str) -> str:
    if not path:
        raise ProviderError(f"{operation}: empty path", operation=operation)
    return path if path.startswith("/") else f"{WORKDIR}/{path}"


def _image_hint(image: str, requested: str) -> str:
    if requested:
        return f"(image {image})"
    return f"(standard image {image}: run `manage.py bench image prepare` if it is missing)"


def _digest_in_reference(reference: str) -> str:
    if "@sha256:" in reference:
        return reference.split("@", 1)[1]
    return reference if reference.startswith("sha256:") else ""


def _imported_id(answer) -> str:
    """The image id from the engine's import progress messages (JSON lines)."""
    text = answer.decode() if isinstance(answer, bytes) else str(answer)
    for line in reversed(text.strip().splitlines()):
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("error"):
            raise ProviderError(f"image import: {message['error']}", operation="image import")
        for key in ("id", "status"):
            value = message.get(key) or ""
            if value.startswith("sha256:"):
                return value
    raise ProviderError(
        f"image import: no image id in the engine's answer {text[:200]!r}", "image import"
    )


def _kind(entry: dict) -> str:
    return (entry.get("Labels") or {}).get(KIND_LABEL, "")


def _live(entry: dict) -> LiveSandbox:
    labels = entry.get("Labels") or {}
    created = entry.get("Created")
    when = datetime.fromtimestamp(created, UTC) if isinstance(created, int | float) else None
    return LiveSandbox(id=entry["Id"], label=labels.get(BATCH_LABEL, ""), created_at=when)


def _parse_time(value) -> datetime | None:
    """Engine timestamps carry nanoseconds, which datetime cannot hold: keep microseconds."""
    if not value:
        return None
    text = re.sub(r"(\.\d{6})\d+", r"\1", str(value))
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _gib(value) -> str:
    return f"{value / 1024**3:.1f}" if isinstance(value, int | float) else "?"
