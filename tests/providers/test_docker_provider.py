"""The `docker` provider against a real Podman service (tests/support/podman.py)."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from runner.images.build import read_pin
from runner.providers.base import ExecTimeout, ProviderError, Sandbox, SandboxSpec

pytestmark = pytest.mark.podman


def spec(label, **overrides):
    values = {"cpus": 1, "memory_mib": 2048, "label": label, "lifetime_s": 120}
    return SandboxSpec(**{**values, **overrides})


@pytest.fixture
def sandbox(docker_provider, batch_label):
    created = docker_provider.create(spec(batch_label))
    yield created
    docker_provider.destroy(created)


def sh(provider, sandbox, script, timeout=30, **kwargs):
    return provider.exec(sandbox, ["bash", "-c", script], timeout=timeout, **kwargs)


def test_it_creates_a_sandbox_of_the_requested_size_with_no_network(docker_provider, batch_label):
    sandbox = docker_provider.create(spec(batch_label, cpus=2, memory_mib=4096))
    try:
        facts = sandbox.facts
        assert (facts["cpus"], facts["memory_mib"]) == (2, 4096)
        # The disk's bound holds only on overlay over XFS (test_docker_disk_bound.py).
        assert facts["enforced"] == {"cpus": True, "memory": True, "pids": True, "disk": False}
        assert facts["image_digest"] == read_pin()
        assert sandbox.created_at is not None
        limits = sh(
            docker_provider,
            sandbox,
            "ls /sys/class/net; cat /sys/fs/cgroup/memory/memory.limit_in_bytes "
            "/sys/fs/cgroup/memory.max 2>/dev/null; ulimit -n; ulimit -u; pwd",
        )
        lines = limits.stdout.decode().split()
        assert lines[0] == "lo"  # no interface but loopback
        assert str(4096 * 1024 * 1024) in lines
        assert lines[-3:] == [str(docker_provider.nofile), str(docker_provider.nproc), "/app"]
    finally:
        docker_provider.destroy(sandbox)


def test_its_containers_are_unprivileged_with_few_capabilities_and_the_default_seccomp(
    docker_provider, sandbox
):
    host = docker_provider.api.inspect_container(sandbox.id)["HostConfig"]
    assert host["Privileged"] is False
    assert host["PidsLimit"] == docker_provider.nproc and host["Memory"] == 2048 * 2**20
    assert "no-new-privileges" in " ".join(host["SecurityOpt"] or [])
    assert "unconfined" not in " ".join(host["SecurityOpt"] or [])
    status = sh(
        docker_provider, sandbox, "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status"
    )
    fields = dict(line.split(":\t") for line in status.stdout.decode().splitlines())
    capabilities = int(fields["CapBnd"], 16)
    # CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7.
    assert capabilities == sum(1 << bit for bit in (0, 1, 3, 4, 5, 6, 7))
    assert fields["CapEff"] == fields["CapBnd"]
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2"  # the engine's profile
    # The kernel answers with the profile's refusals and the dropped capabilities.
    refused = sh(docker_provider, sandbox, "unshare -Ur true; mknod /app/null c 1 3; echo done")
    assert b"Operation not permitted" in refused.stderr and refused.stdout == b"done\n"
    assert b"mknod" in refused.stderr


def test_it_stops_a_fork_bomb_at_the_containers_pids_limit(docker_provider, sandbox):
    # Bounded: at most 1.5 times the limit, each child a sleep that ends by itself.
    bomb = (
        "import os\nstarted = 0\n"
        f"for _ in range({docker_provider.nproc * 3 // 2}):\n"
        "    try:\n        pid = os.fork()\n"
        "    except OSError as exc:\n        print('refused', exc.errno)\n        break\n"
        "    if pid == 0:\n        os.execv('/bin/sleep', ['sleep', '30'])\n"
        "    started += 1\nprint('started', started)\n"
    )
    out = docker_provider.exec(sandbox, ["python3", "-c", bomb], timeout=120).stdout.split()
    assert out[:2] == [b"refused", b"11"] and int(out[3]) < docker_provider.nproc


def test_it_runs_commands_with_their_exit_code_output_env_workdir_and_stdin(
    docker_provider, sandbox
):
    result = sh(
        docker_provider,
        sandbox,
        'echo out; echo "$GREETING" >&2; pwd; exit 7',
        env={"GREETING": "hi"},
    )
    assert (result.exit_code, result.stdout, result.stderr) == (7, b"out\n/app\n", b"hi\n")
    assert docker_provider.exec(sandbox, ["pwd"], timeout=10, workdir="/tmp").stdout == b"/tmp\n"
    echoed = docker_provider.exec(sandbox, ["sha256sum"], timeout=10, stdin=b"\x00\x01boxbench")
    assert echoed.stdout.startswith(b"6d37bed0c4671a5a")
    assert sh(docker_provider, sandbox, "ls /tmp").stdout == b""  # the stdin file is gone


def test_it_kills_a_command_that_outlives_its_timeout(docker_provider, sandbox):
    # Its own end is the command's (300 s); the call must end at its 1 s limit instead. The
    # deadline is generous: on a loaded machine the kill itself can take seconds.
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(sh, docker_provider, sandbox, "sleep 300 & sleep 301", timeout=1)
        with pytest.raises(ExecTimeout, match="within 1s"):
            call.result(timeout=120)
    survivors = sh(docker_provider, sandbox, "ps -eo args | grep -c '^sleep 30[01]' || true")
    assert survivors.stdout == b"0\n"
    assert docker_provider.exec(sandbox, ["true"], timeout=10).exit_code == 0


def test_it_uploads_and_downloads_files_as_archives(docker_provider, sandbox):
    payload = bytes(range(256)) * 4096  # 1 MiB, every byte value
    docker_provider.upload(sandbox, "/app/data.bin", payload)
    assert docker_provider.download(sandbox, "/app/data.bin") == payload
    assert sh(docker_provider, sandbox, "stat -c %s data.bin").stdout == b"1048576\n"
    with pytest.raises(ProviderError, match="download.*/app/missing"):
        docker_provider.download(sandbox, "/app/missing")
    with pytest.raises(ProviderError, match="not a regular file"):
        docker_provider.download(sandbox, "/app")


def test_it_destroys_a_sandbox_and_confirms_it_gone(docker_provider, batch_label):
    sandbox = docker_provider.create(spec(batch_label))
    assert not docker_provider.is_gone(sandbox.id)
    docker_provider.destroy(sandbox)
    assert docker_provider.is_gone(sandbox.id)
    docker_provider.destroy(sandbox)  # a second destroy finds nothing and does not fail


def test_it_removes_the_container_when_its_lifetime_ends(docker_provider, batch_label):
    sandbox = docker_provider.create(spec(batch_label, lifetime_s=1))
    deadline = time.monotonic() + 20
    while not docker_provider.is_gone(sandbox.id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert docker_provider.is_gone(sandbox.id)


def test_it_lists_live_sandboxes_by_batch_label(docker_provider, batch_label, sandbox):
    other = docker_provider.create(spec(f"{batch_label}-other"))
    try:
        listed = docker_provider.list_sandboxes(batch_label)
        assert [(s.id, s.label) for s in listed] == [(sandbox.id, batch_label)]
        assert listed[0].created_at is not None
        everything = {s.id for s in docker_provider.list_sandboxes()}
        assert {sandbox.id, other.id} <= everything
    finally:
        docker_provider.destroy(other)


def test_it_snapshots_by_commit_restores_and_deletes_the_image(
    docker_provider, batch_label, sandbox
):
    docker_provider.upload(sandbox, "/app/state.txt", b"before snapshot")
    snapshot_id = docker_provider.snapshot(sandbox)
    assert [s.id for s in docker_provider.list_snapshots(batch_label)] == [snapshot_id]
    restored = docker_provider.restore(snapshot_id, spec(batch_label))
    try:
        assert docker_provider.download(restored, "/app/state.txt") == b"before snapshot"
        assert restored.facts["restored_from"] == snapshot_id
    finally:
        docker_provider.destroy(restored)
    docker_provider.delete_snapshot(snapshot_id)
    assert docker_provider.list_snapshots(batch_label) == []
    docker_provider.delete_snapshot(snapshot_id)  # already gone: no error


def test_it_names_the_operation_and_the_image_when_create_fails(docker_provider, batch_label):
    with pytest.raises(ProviderError, match="create.*image boxbench-no-such-image") as caught:
        docker_provider.create(spec(batch_label, image="boxbench-no-such-image:1"))
    assert caught.value.operation == "create"
    assert docker_provider.list_sandboxes(batch_label) == []


def test_it_reports_an_exec_in_a_destroyed_sandbox_as_a_provider_error(
    docker_provider, batch_label
):
    sandbox = docker_provider.create(spec(batch_label))
    docker_provider.destroy(sandbox)
    with pytest.raises(ProviderError) as caught:
        docker_provider.exec(Sandbox(id=sandbox.id, label=batch_label), ["true"], timeout=5)
    assert caught.value.operation == "exec"


def test_it_reports_engine_version_image_and_free_space_in_doctor(docker_provider):
    checks = {check.name: check for check in docker_provider.doctor()}
    assert set(checks) == {"engine", "api", "image", "storage", "disk bound", "user namespace"}
    # The disk's bound holds only on overlay over XFS (test_docker_disk_bound.py), and a
    # container's root is host root by default (test_docker_userns.py).
    hardening = {"disk bound", "user namespace"}
    assert all(check.ok for name, check in checks.items() if name not in hardening), checks
    assert checks["engine"].detail.startswith("Podman ")
    assert "unix://" in checks["engine"].detail
    assert read_pin() in checks["image"].detail
    assert "GiB free" in checks["storage"].detail


def test_it_keeps_every_byte_of_large_interleaved_output(docker_provider, sandbox):
    script = "for i in 1 2 3; do head -c 1000000 /dev/zero | tr '\\0' o; echo e$i >&2; done"
    result = sh(docker_provider, sandbox, script)
    assert result.stdout == b"o" * 3_000_000
    assert result.stderr == b"e1\ne2\ne3\n"


def test_it_reports_what_the_containers_cgroup_holds(docker_provider, sandbox):
    before = docker_provider.memory_in_use(sandbox)
    sh(docker_provider, sandbox, "head -c 20000000 /dev/urandom > /tmp/fill")
    after = docker_provider.memory_in_use(sandbox)
    assert before is not None and before > 0
    # /tmp's pages are charged to it (the page cache may keep a little less than the file).
    assert after is not None and after - before >= 15_000_000
    assert docker_provider.memory_in_use(Sandbox("no-such-container", "bb-none")) is None
