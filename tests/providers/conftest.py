"""OpenSandbox's real server for the provider tests: Podman with the ulimit override, the
standard image, the execd image and `opensandbox-server` on loopback, started once per session
(runner/providers/opensandbox/local.py), and a private server a test may stop and start. Skipped
only where podman is missing; a missing opensandbox-server fails (requirements-opensandbox.txt
installs it). The Podman service and the `docker` provider are tests/support/podman.py's."""

import secrets
import shutil
import uuid

import pytest
from django.conf import settings

from runner.providers.base import Sandbox
from runner.providers.opensandbox import local
from tests.support.providers import NO_PODMAN, PrivateServer, provider_for


@pytest.fixture(scope="session")
def opensandbox_stack(tmp_path_factory):
    if shutil.which("podman") is None:
        pytest.skip(NO_PODMAN)
    directory = tmp_path_factory.mktemp("opensandbox")
    stack = local.start_stack(
        directory, local.free_port(), secrets.token_urlsafe(16), settings.VAR_DIR / "images"
    )
    yield stack
    stack.stop()


@pytest.fixture(scope="session")
def opensandbox(opensandbox_stack):
    provider = provider_for(opensandbox_stack)
    yield provider
    provider.close()


@pytest.fixture
def os_label(opensandbox):
    """A fresh batch label; whatever a test leaves under it is removed afterwards."""
    label = f"pytest-{uuid.uuid4().hex[:12]}"
    yield label
    for sandbox in opensandbox.list_sandboxes(label):
        opensandbox.destroy(Sandbox(id=sandbox.id, label=label))
    for snapshot in opensandbox.list_snapshots(label):
        opensandbox.delete_snapshot(snapshot.id)


@pytest.fixture
def server(opensandbox_stack, tmp_path):
    server = PrivateServer(opensandbox_stack, tmp_path)
    server.start()
    provider = server.provider()
    label = f"pytest-{uuid.uuid4().hex[:12]}"
    server.label = label
    yield server
    for sandbox in provider.list_sandboxes(label):
        provider.destroy(sandbox)
    provider.close()
    server.stop()
