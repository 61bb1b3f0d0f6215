"""A real Podman service for the container tests, started and stopped by the tests: a pytest
plugin (tests/conftest.py loads it), so every folder that needs the service shares one per
session and worker.

Podman serves the Docker Engine API on a private socket (`podman --runtime runc system service`);
the standard image is prepared once per machine (the rootfs tarball is cached in var/images/ and
the engine keeps the image), so only the first session on a new machine pays for debootstrap.
"""

import os
import shutil
import signal
import subprocess
import time
import uuid

import pytest
import requests
from django.conf import settings

from runner.images.prepare import prepare_image
from runner.providers import get_provider
from runner.providers.base import Sandbox
from tests.support.providers import NO_PODMAN

PODMAN = shutil.which("podman")
needs_podman = pytest.mark.skipif(PODMAN is None, reason=NO_PODMAN)


@pytest.fixture(scope="session")
def podman_socket(tmp_path_factory):
    if PODMAN is None:
        pytest.skip(NO_PODMAN)
    directory = tmp_path_factory.mktemp("podman")
    socket_path = directory / "podman.sock"
    log_path = directory / "service.log"
    with open(log_path, "wb") as log:
        service = subprocess.Popen(
            [PODMAN, "--runtime", "runc", "system", "service", "--time=0", f"unix://{socket_path}"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"unix://{socket_path}"
    try:
        _wait_for_service(service, socket_path, log_path)
        yield url
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        try:
            service.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(service.pid, signal.SIGKILL)
            service.wait(timeout=5)


def _wait_for_service(service, socket_path, log_path, within_s=30.0):
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if service.poll() is not None:
            pytest.fail(
                f"podman system service exited {service.returncode}: {log_path.read_text()}"
            )
        if socket_path.exists() and _pings(socket_path):
            return
        time.sleep(0.1)
    pytest.fail(
        f"podman system service did not answer within {within_s:g}s: {log_path.read_text()}"
    )


def _pings(socket_path) -> bool:
    import docker

    try:
        client = docker.APIClient(base_url=f"unix://{socket_path}", version="1.41", timeout=2)
        return client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return False


@pytest.fixture(scope="session")
def docker_provider(podman_socket):
    """The `docker` provider on the test Podman service, with the pinned standard image present."""
    provider = get_provider("docker", settings={"host": podman_socket})
    prepare_image(provider, settings.VAR_DIR / "images", log=lambda message: None)
    return provider


@pytest.fixture
def batch_label(docker_provider):
    """A fresh batch label; whatever a test leaves under it is removed afterwards."""
    label = f"pytest-{uuid.uuid4().hex[:12]}"
    yield label
    for sandbox in docker_provider.list_sandboxes(label):
        docker_provider.destroy(Sandbox(id=sandbox.id, label=label))
    for snapshot in docker_provider.list_snapshots(label):
        docker_provider.delete_snapshot(snapshot.id)
