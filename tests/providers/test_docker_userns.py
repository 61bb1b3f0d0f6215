"""Under Podman, asked for (BOXBENCH_DOCKER_USERNS=auto), a `docker` sandbox runs in a user
namespace of its own: the container's root is not host root, so what escapes the container's file
view is an unprivileged host user's. Not the default: Podman 4.3 commits such a container's files
with their host ids, and the snapshot then cannot start (the last test shows it)."""

import pytest

from runner.providers import docker_hardening as hardening
from runner.providers import get_provider
from runner.providers.base import ProviderError, SandboxSpec


def test_a_user_namespace_is_asked_only_of_podman_and_only_when_set():
    assert hardening.user_namespace("Podman", "auto") == "auto"
    assert hardening.user_namespace("Podman", "") is None
    with pytest.raises(ProviderError, match="needs Podman"):
        hardening.user_namespace("Docker", "auto")
    with pytest.raises(ProviderError, match="empty or auto"):
        hardening.user_namespace("Podman", "host")


def test_the_doctor_says_whether_a_containers_root_is_host_root():
    assert hardening.userns_check("Podman", {}, "auto").ok
    podman = hardening.userns_check("Podman", {}, "")
    assert not podman.ok and "Podman 4.3 commits the remapped ids" in podman.detail
    remapped = {"SecurityOptions": ["name=seccomp,profile=default", "name=userns"]}
    assert hardening.userns_check("Docker", remapped, "").ok
    plain = hardening.userns_check("Docker", {"SecurityOptions": ["name=seccomp"]}, "")
    assert not plain.ok and "userns-remap" in plain.detail


def test_a_create_refused_for_want_of_subordinate_ids_names_the_fix():
    refused = ProviderError(
        'create: HTTP 500: cannot find mappings for user "containers": no subuid ranges found',
        "create",
    )
    hinted = hardening.with_hint(refused)
    assert "containers:2147483647:2147483648" in str(hinted) and hinted.operation == "create"
    other = ProviderError("create: HTTP 500: no such image", "create")
    assert hardening.with_hint(other) is other


@pytest.fixture
def remapped(podman_socket):
    return get_provider("docker", settings={"host": podman_socket, "userns": "auto"})


@pytest.mark.podman
def test_the_containers_root_is_not_host_root(remapped, batch_label):
    docker_provider = remapped
    spec = SandboxSpec(cpus=1, memory_mib=512, label=batch_label, lifetime_s=60)
    sandbox = docker_provider.create(spec)
    try:
        assert sandbox.facts["userns"] == "auto"
        seen = docker_provider.exec(sandbox, ["sh", "-c", "id -u; cat /proc/self/uid_map"], 30)
        inside, first_map = seen.stdout.decode().splitlines()[:2]
        start, host, count = (int(n) for n in first_map.split())
        # Root inside, as the standard image's commands expect; an unprivileged uid outside.
        assert inside == "0" and start == 0
        assert host != 0 and count < 2**32 - 1
        # The image's root-owned files stay root's inside: the image is mapped, not copied.
        owner = docker_provider.exec(sandbox, ["stat", "-c", "%u", "/usr/bin"], 30)
        assert owner.stdout.strip() == b"0"
    finally:
        docker_provider.destroy(sandbox)


@pytest.mark.podman
def test_its_snapshot_cannot_start_on_this_podman(remapped, docker_provider, batch_label):
    """Why the user namespace is not the default: the commit keeps the host ids of the files the
    container wrote, past any user namespace's size."""
    spec = SandboxSpec(cpus=1, memory_mib=512, label=batch_label, lifetime_s=60)
    sandbox = remapped.create(spec)
    try:
        remapped.exec(sandbox, ["touch", "/app/written"], 30)
        snapshot = remapped.snapshot(sandbox)
    finally:
        remapped.destroy(sandbox)
    try:
        with pytest.raises(ProviderError, match="bigger than the maximum"):
            remapped.restore(snapshot, spec)
    finally:
        docker_provider.delete_snapshot(snapshot)
