"""`bench cleanup` removes leftover containers and snapshot images by batch label and age."""

import io
import uuid

import pytest
from django.core.management import call_command

from boxbench.cli import cleanup as cleanup_command
from runner.providers.base import SandboxSpec

pytestmark = pytest.mark.podman


def cleanup(*args):
    out = io.StringIO()
    call_command("bench", "cleanup", "--provider", "docker", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def leftovers(docker_provider, podman_socket, monkeypatch):
    """A sandbox and a snapshot image left behind by a crashed run (a boxbench batch label)."""
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    label = f"bb-crashed-{uuid.uuid4().hex[:8]}"
    # The engine's storage is the machine's: touch only this test's leftovers, never the live
    # sandboxes of a run going on beside the tests.
    monkeypatch.setattr(cleanup_command, "OUR_LABELS", (label,))
    spec = SandboxSpec(cpus=1, memory_mib=2048, label=label, lifetime_s=120)
    sandbox = docker_provider.create(spec)
    snapshot_id = docker_provider.snapshot(sandbox)
    yield label, sandbox.id, snapshot_id
    if not docker_provider.is_gone(sandbox.id):
        docker_provider.destroy(sandbox)
    docker_provider.delete_snapshot(snapshot_id)


def test_it_keeps_leftovers_younger_than_the_max_age(docker_provider, leftovers):
    label, sandbox_id, snapshot_id = leftovers
    output = cleanup("--max-age", "60")
    assert sandbox_id not in output and snapshot_id not in output
    assert {s.id for s in docker_provider.list_sandboxes(label)} == {sandbox_id}


def test_it_lists_then_removes_leftover_containers_and_snapshot_images(docker_provider, leftovers):
    label, sandbox_id, snapshot_id = leftovers
    listed = cleanup("--max-age", "0", "--dry-run")
    assert f"would remove docker {sandbox_id} label={label}" in listed
    assert f"would remove docker {snapshot_id} label={label}" in listed
    assert docker_provider.list_snapshots(label) != []
    removed = cleanup("--max-age", "0")
    assert f"removed docker {sandbox_id}" in removed and f"removed docker {snapshot_id}" in removed
    assert docker_provider.list_sandboxes(label) == []
    assert docker_provider.list_snapshots(label) == []


def test_it_skips_an_unreachable_engine_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    output = cleanup("--max-age", "0", "--dry-run")
    assert "skipped docker: connect: " in output and "absent.sock" in output
