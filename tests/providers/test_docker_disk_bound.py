"""A `docker` sandbox's writable layer: bounded where the engine enforces a size (overlay over XFS
with project quotas), and said to be unbounded, by the sandbox's facts and the doctor, where it
cannot (this machine's Podman: overlay over ext4)."""

import pytest

from runner.providers import docker_hardening as hardening
from runner.providers import get_provider
from runner.providers.base import SandboxSpec

XFS = {"Driver": "overlay", "DriverStatus": [["Backing Filesystem", "xfs"]]}
EXT4 = {"Driver": "overlay", "DriverStatus": [["Backing Filesystem", "extfs"]]}
SPEC = SandboxSpec(cpus=1, memory_mib=512, label="t", lifetime_s=60)


def test_only_overlay_over_xfs_is_asked_for_a_size():
    assert hardening.can_bound_disk(XFS)
    assert hardening.can_bound_disk({**XFS, "Driver": "overlay2"})
    assert not hardening.can_bound_disk(EXT4)
    assert not hardening.can_bound_disk({**XFS, "Driver": "vfs"})
    assert not hardening.can_bound_disk({})


def test_the_host_config_asks_for_the_size_only_where_it_holds():
    common = {"nofile": 64, "nproc": 64, "engine": "docker"}
    bounded = hardening.host_options(SPEC, disk_mib=300, **common)
    assert bounded["storage_opt"] == {"size": "300M"}
    assert "storage_opt" not in hardening.host_options(SPEC, disk_mib=None, **common)


def test_the_doctor_says_what_holds():
    assert hardening.disk_check_text(XFS, 300) == (
        True,
        "each sandbox's writable layer is bounded to 300 MiB (XFS quota)",
    )
    bounded, text = hardening.disk_check_text(EXT4, 300)
    assert not bounded and "overlay storage on extfs" in text and "fill" in text


@pytest.mark.podman
def test_a_command_cannot_write_past_the_bound_or_the_sandbox_says_it_is_unbounded(
    podman_socket, batch_label
):
    """The attack: fill the writable layer. Where the engine bounds it, the write stops at the
    bound; where it cannot, the sandbox's facts and the doctor name the missing bound."""
    provider = get_provider("docker", settings={"host": podman_socket, "disk_mib": 64})
    sandbox = provider.create(SandboxSpec(cpus=1, memory_mib=512, label=batch_label, lifetime_s=60))
    try:
        info = provider.api.info()
        doctor = {check.name: check for check in provider.doctor()}
        if hardening.can_bound_disk(info):
            assert sandbox.facts["enforced"]["disk"] and sandbox.facts["disk_mib"] == 64
            fill = ["dd", "if=/dev/zero", "of=/app/fill", "bs=1M", "count=96"]
            result = provider.exec(sandbox, fill, 60)
            assert result.exit_code != 0 and b"No space left" in result.stderr
            assert doctor["disk bound"].ok
        else:
            assert sandbox.facts["enforced"]["disk"] is False
            assert sandbox.facts["disk_mib"] is None
            assert not doctor["disk bound"].ok
            assert "no bound on a sandbox's writable layer" in doctor["disk bound"].detail
    finally:
        provider.destroy(sandbox)
