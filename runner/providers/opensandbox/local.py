"""OpenSandbox's real server on this machine: Podman's Docker-compatible service, the execd image
built from boxbench's standard image plus our execd, and `opensandbox-server`, all on loopback.

Used by `python -m runner.providers.opensandbox serve` (docs/providers.md) and by the tests.

- Podman: `podman --runtime runc system service` on a private socket, with CONTAINERS_CONF naming a
  containers.conf that sets `default_ulimits` for nofile and nproc. The server creates containers
  without ulimits, and Podman's own defaults (nofile 1048576) exceed what runc may set here
  without CAP_SYS_RESOURCE, which fails every container start.
- The execd image: the pinned standard image plus /execd (execd/execd.py) and /bootstrap.sh,
  committed through the Engine API, tagged by the digest of those files and the standard image's.
  Its labels (boxbench.batch, boxbench.kind) pass to the helper containers `sandbox-execd-*` the
  server starts from it, so `bench cleanup` can find the ones a failed create leaves behind. The
  sandboxes themselves run the pinned standard image unchanged: the server copies execd into them.
- The server: its TOML configuration (Docker runtime, bridge network, ports published on
  127.0.0.1, endpoints on 127.0.0.1, SQLite store in the run directory, an API key).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import httpx

from runner import waiting
from runner.providers.tar_upload import Member, unpadded_tar

EXECD_DIR = Path(__file__).resolve().parent / "execd"
EXECD_REPOSITORY = "boxbench-opensandbox-execd"
EXECD_BATCH = "boxbench-opensandbox-execd"  # the batch label helper containers inherit
EXECD_KIND = "opensandbox-execd"
# Below the hard limits a Podman service inherits here (nofile 20000); nproc 65536 still failed.
ULIMITS = ("nofile=8192:8192", "nproc=4096:4096")
SERVER_BINARY = "opensandbox-server"
# Starting the stack: the Podman service's socket is tried every 0.1 s, the server's /health
# (a heavier request) every 0.2 s.
PODMAN_POLL = waiting.every(0.1)
SERVER_POLL = waiting.every(0.2)


class LocalStackError(Exception):
    """A piece of the local stack is missing or did not start; the message says which and how."""


@dataclass
class Process:
    popen: subprocess.Popen
    log: Path

    def stop(self, within_s: float = 15.0) -> None:
        if self.popen.poll() is not None:
            return
        os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout=within_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=5)


def containers_conf(directory: Path) -> Path:
    path = Path(directory) / "containers.conf"
    limits = ", ".join(f'"{limit}"' for limit in ULIMITS)
    path.write_text(f"[containers]\ndefault_ulimits = [{limits}]\n")
    return path


def start_podman(directory: Path, within_s: float = 30.0) -> tuple[Process, str]:
    """Podman on `directory`/podman.sock with the ulimit override: (process, DOCKER_HOST)."""
    podman = shutil.which("podman")
    if podman is None:
        raise LocalStackError("podman is not installed (apt-get install podman runc catatonit)")
    directory = Path(directory)
    socket_path = directory / "podman.sock"
    log = directory / "podman.log"
    env = {**os.environ, "CONTAINERS_CONF": str(containers_conf(directory))}
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            [podman, "--runtime", "runc", "system", "service", "--time=0", f"unix://{socket_path}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    process = Process(popen, log)
    url = f"unix://{socket_path}"

    def answers() -> bool:
        if popen.poll() is not None:
            raise LocalStackError(f"podman system service exited {popen.returncode}: {_tail(log)}")
        return socket_path.exists() and _engine_pings(url)

    if waiting.poll_until(answers, within_s, PODMAN_POLL):
        return process, url
    process.stop()
    raise LocalStackError(
        f"podman system service did not answer within {within_s:g}s: {_tail(log)}"
    )


def _engine_pings(url: str) -> bool:
    try:
        client = docker.APIClient(base_url=url, version="1.41", timeout=2)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - not up yet, whatever the transport says
        return False


def execd_image_tag(standard_image: str) -> str:
    digest = hashlib.sha256(standard_image.encode())
    for name in ("execd.py", "bootstrap.sh"):
        digest.update((EXECD_DIR / name).read_bytes())
    return f"{EXECD_REPOSITORY}:{digest.hexdigest()[:16]}"


def ensure_execd_image(docker_host: str, standard_image: str) -> str:
    """The execd image for `standard_image` on the engine at `docker_host`, built if missing."""
    tag = execd_image_tag(standard_image)
    api = docker.APIClient(base_url=docker_host, version="1.41", timeout=120)
    try:
        try:
            api.inspect_image(tag)
            return tag
        except docker.errors.ImageNotFound:
            pass
        container = api.create_container(standard_image, command=["true"])["Id"]
        try:
            api.put_archive(container, "/", _execd_archive())
            repository, version = tag.split(":")
            api.commit(
                container,
                repository=repository,
                tag=version,
                changes=[
                    f"LABEL boxbench.batch={EXECD_BATCH}",
                    f"LABEL boxbench.kind={EXECD_KIND}",
                ],
            )
            # Podman can ignore the repository it is given on commit: tag explicitly.
            api.tag(api.inspect_image(f"{repository}:{version}")["Id"], repository, version)
        finally:
            api.remove_container(container, force=True)
        return tag
    except docker.errors.DockerException as exc:
        raise LocalStackError(f"cannot build {tag} from {standard_image}: {exc}") from exc
    finally:
        api.close()


def _execd_archive() -> bytes:
    files = (("execd.py", "execd"), ("bootstrap.sh", "bootstrap.sh"))
    return unpadded_tar(
        [Member(name, (EXECD_DIR / source).read_bytes(), 0o755) for source, name in files]
    )


def server_config(
    directory: Path,
    port: int,
    api_key: str,
    execd_image: str,
    max_timeout_s: int = 86400,
) -> Path:
    """The server's TOML file in `directory`: Docker runtime on loopback, SQLite store there too."""
    directory = Path(directory)
    text = f"""\
[server]
host = "127.0.0.1"
port = {int(port)}
api_key = "{api_key}"
eip = "127.0.0.1"
max_sandbox_timeout_seconds = {int(max_timeout_s)}

[log]
level = "INFO"

[runtime]
type = "docker"
execd_image = "{execd_image}"

[store]
type = "sqlite"
path = "{directory / "opensandbox.db"}"

[docker]
network_mode = "bridge"
publish_host = "127.0.0.1"
host_ip = "127.0.0.1"
port_range_min = 40000
port_range_max = 60000
no_new_privileges = true
pids_limit = 4096

[ingress]
mode = "direct"
"""
    path = directory / "sandbox.toml"
    path.write_text(text)
    path.chmod(0o600)  # it holds the API key
    return path


def server_binary() -> str:
    """opensandbox-server beside this Python, else on PATH."""
    beside = Path(sys.executable).parent / SERVER_BINARY
    if beside.exists():
        return str(beside)
    found = shutil.which(SERVER_BINARY)
    if found is None:
        raise LocalStackError(
            "opensandbox-server is not installed: pip install -r requirements-opensandbox.txt"
        )
    return found


def start_server(
    directory: Path, config: Path, docker_host: str, port: int, within_s: float = 60.0
) -> Process:
    """Start opensandbox-server with `config` against `docker_host`; return once /health answers."""
    directory = Path(directory)
    log = directory / f"server-{port}.log"
    env = {**os.environ, "DOCKER_HOST": docker_host}
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            [server_binary(), "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=directory,
            start_new_session=True,
        )
    process = Process(popen, log)
    url = f"http://127.0.0.1:{port}/health"

    def healthy() -> bool:
        if popen.poll() is not None:
            raise LocalStackError(f"opensandbox-server exited {popen.returncode}: {_tail(log)}")
        try:
            return httpx.get(url, timeout=2, trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False

    if waiting.poll_until(healthy, within_s, SERVER_POLL):
        return process
    process.stop()
    raise LocalStackError(f"opensandbox-server did not answer within {within_s:g}s: {_tail(log)}")


@dataclass
class Stack:
    """A running server (and the Podman service it drives, when the stack started one)."""

    url: str
    api_key: str
    docker_host: str
    execd_image: str
    standard_image: str
    server: Process
    podman: Process | None = None

    def stop(self) -> None:
        self.server.stop()
        if self.podman is not None:
            self.podman.stop()


def start_stack(
    directory: Path,
    port: int,
    api_key: str,
    images_dir: Path,
    docker_host: str = "",
    log=lambda message: None,
) -> Stack:
    """Podman (unless `docker_host` names an engine), the standard image, the execd image and
    the server, in that order; everything a failure leaves running is stopped."""
    from runner.images.prepare import prepare_image
    from runner.providers import get_provider

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    podman = None
    if not docker_host:
        podman, docker_host = start_podman(directory)
        log(f"podman service on {docker_host} (ulimits from {directory / 'containers.conf'})")
    try:
        engine = get_provider("docker", settings={"host": docker_host})
        prepared = prepare_image(engine, images_dir, log=log)
        engine.close()
        execd_image = ensure_execd_image(docker_host, prepared.tag)
        log(f"execd image {execd_image} (from {prepared.tag})")
        config = server_config(directory, port, api_key, execd_image)
        server = start_server(directory, config, docker_host, port)
    except BaseException:
        if podman is not None:
            podman.stop()
        raise
    log(f"opensandbox-server on http://127.0.0.1:{port} (log {server.log})")
    return Stack(
        f"http://127.0.0.1:{port}", api_key, docker_host, execd_image, prepared.tag, server, podman
    )


class DemoServer:
    """OpenSandbox's stand-in for demo mode (runner/providers/demo.py): no fake, its real server on
    this machine, started for the demo run and stopped after it. It drives the engine that
    BOXBENCH_OPENSANDBOX_DOCKER_HOST names (one whose containers get nofile and nproc ulimits runc
    can set), otherwise a Podman service of its own started with that override."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.api_key = secrets.token_urlsafe(24)
        self.stack: Stack | None = None

    def start(self) -> DemoServer:
        from django.conf import settings

        docker_host = os.environ.get("BOXBENCH_OPENSANDBOX_DOCKER_HOST", "")
        images = Path(settings.VAR_DIR) / "images"
        self.stack = start_stack(
            self.directory, free_port(), self.api_key, images, docker_host=docker_host
        )
        return self

    def adapter_settings(self) -> dict:
        stack = self.stack
        assert stack is not None, "start() comes before adapter_settings()"
        return {"url": stack.url, "api_key": self.api_key, "docker_host": stack.docker_host}

    def stop(self) -> None:
        if self.stack is not None:
            self.stack.stop()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
