"""`remote-docker` over ssh://, through a private sshd on 127.0.0.1 in front of the test Podman.

The adapter opens one SSH connection (paramiko) and runs `docker system dial-stdio` on the remote
host for each HTTP connection (here: this machine, with DOCKER_HOST pointing at the test Podman
socket through sshd's SetEnv). HOME points at a test directory whose .ssh/config and known_hosts
name the test key and host key, so the test touches neither ~/.ssh nor the system's sshd.
"""

import os
import shutil
import socket
import subprocess
import time

import pytest

from runner.declarations import get_declaration
from runner.providers.base import ProviderError, SandboxSpec
from runner.providers.remote_docker import RemoteDockerProvider

pytestmark = pytest.mark.podman

SSHD = "/usr/sbin/sshd"
needs_ssh = pytest.mark.skipif(
    not (os.path.exists(SSHD) and shutil.which("docker")),
    reason="needs sshd (openssh-server) and the docker CLI, which runs `docker system dial-stdio` "
    "on the remote side",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def ssh_engine(podman_socket, tmp_path_factory):
    """ssh://root@127.0.0.1:<port> whose `docker` reaches the test Podman service."""
    directory = tmp_path_factory.mktemp("ssh")
    for name in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(directory / name)],
            check=True,
        )
    (directory / "authorized_keys").write_text((directory / "client_key.pub").read_text())
    port = free_port()
    (directory / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {directory}/host_key\n"
        f"AuthorizedKeysFile {directory}/authorized_keys\nPidFile {directory}/sshd.pid\n"
        "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nUsePAM no\n"
        f"SetEnv DOCKER_HOST={podman_socket}\n"
    )
    host_key = (directory / "host_key.pub").read_text().split()
    home = directory / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    (home / ".ssh" / "config").write_text(
        f"Host 127.0.0.1\n  IdentityFile {directory}/client_key\n"
    )
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
    sshd = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(directory / "sshd_config")],
        stdout=subprocess.DEVNULL,
        stderr=open(directory / "sshd.log", "wb"),  # noqa: SIM115 (closed with the process)
    )
    try:
        deadline = time.monotonic() + 10
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if time.monotonic() > deadline or sshd.poll() is not None:
                pytest.fail(f"sshd did not start: {(directory / 'sshd.log').read_text()}")
            time.sleep(0.05)
        yield {"url": f"ssh://root@127.0.0.1:{port}", "home": home}
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)


@needs_ssh
def test_it_runs_a_sandbox_on_a_remote_engine_over_ssh(
    docker_provider, ssh_engine, batch_label, monkeypatch
):
    monkeypatch.setenv("HOME", str(ssh_engine["home"]))
    provider = RemoteDockerProvider(get_declaration("remote-docker"), {"host": ssh_engine["url"]})
    sandbox = provider.create(
        SandboxSpec(cpus=1, memory_mib=2048, label=batch_label, lifetime_s=60)
    )
    try:
        result = provider.exec(sandbox, ["bash", "-c", "echo over ssh; exit 4"], timeout=30)
        assert (result.exit_code, result.stdout) == (4, b"over ssh\n")
        provider.upload(sandbox, "/app/note.txt", b"through a tunnel")
        assert provider.download(sandbox, "/app/note.txt") == b"through a tunnel"
    finally:
        provider.destroy(sandbox)
    assert provider.is_gone(sandbox.id)
    engine = next(check for check in provider.doctor() if check.name == "engine")
    assert engine.ok and f"via {ssh_engine['url']}" in engine.detail
    provider.close()


@needs_ssh
def test_it_cannot_connect_when_the_ssh_login_is_refused(ssh_engine, monkeypatch):
    monkeypatch.setenv("HOME", str(ssh_engine["home"]))
    url = ssh_engine["url"].replace("root@", "nobody-here@")
    provider = RemoteDockerProvider(get_declaration("remote-docker"), {"host": url})
    with pytest.raises(ProviderError, match=f"cannot reach the engine at {url}"):
        provider.api  # noqa: B018 (connecting is the point)
