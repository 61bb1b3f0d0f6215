"""`remote-docker` over tcp:// with mutual TLS, against the test Podman service behind a TLS proxy.

Podman's service speaks plain HTTP, so a small proxy on 127.0.0.1 terminates TLS the way a Docker
daemon started with --tlsverify does: it requires a client certificate signed by the test CA.
"""

import select
import socket
import ssl
import subprocess
import threading

import pytest

from runner.declarations import get_declaration
from runner.providers.base import ProviderError, SandboxSpec
from runner.providers.remote_docker import RemoteDockerProvider

pytestmark = pytest.mark.podman


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(directory, name):
    directory.mkdir()
    openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        f"/CN={name}",
        cwd=directory,
    )
    return directory


def issue(ca, directory, subject, extension):
    directory.mkdir()
    (directory / "ext.cnf").write_text(extension + "\n")
    openssl(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "req.csr",
        "-subj",
        f"/CN={subject}",
        cwd=directory,
    )
    openssl(
        "x509",
        "-req",
        "-in",
        "req.csr",
        "-CA",
        str(ca / "ca.pem"),
        "-CAkey",
        str(ca / "ca-key.pem"),
        "-CAcreateserial",
        "-out",
        "cert.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
        cwd=directory,
    )
    (directory / "ca.pem").write_bytes((ca / "ca.pem").read_bytes())
    return directory


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    root = tmp_path_factory.mktemp("tls")
    ca = make_ca(root / "ca", "boxbench test CA")
    server = issue(ca, root / "server", "127.0.0.1", "subjectAltName=IP:127.0.0.1")
    client = issue(ca, root / "client", "boxbench client", "extendedKeyUsage=clientAuth")
    other_ca = make_ca(root / "other-ca", "someone else")
    stranger = issue(other_ca, root / "stranger", "stranger", "extendedKeyUsage=clientAuth")
    (stranger / "ca.pem").write_bytes((ca / "ca.pem").read_bytes())  # trusts our server
    return {"server": server, "client": client, "stranger": stranger}


@pytest.fixture(scope="module")
def tls_engine(podman_socket, certificates):
    """tcp://127.0.0.1:<port>: mutual TLS in front of the Podman socket."""
    context = ssl.create_default_context(
        ssl.Purpose.CLIENT_AUTH, cafile=str(certificates["server"] / "ca.pem")
    )
    context.load_cert_chain(certificates["server"] / "cert.pem", certificates["server"] / "key.pem")
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    unix_path = podman_socket.removeprefix("unix://")
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=relay, args=(connection,), daemon=True).start()

    def relay(connection):
        try:
            client = context.wrap_socket(connection, server_side=True)
        except (ssl.SSLError, OSError):
            connection.close()
            return
        upstream = socket.socket(socket.AF_UNIX)
        upstream.connect(unix_path)
        with client, upstream:
            _pump(client, upstream)

    threading.Thread(target=accept, daemon=True).start()
    yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()


def _pump(client, upstream):
    """Copy bytes both ways in one thread (an SSL socket must not be used from two threads)."""
    client_open = True
    while True:
        if client_open and client.pending():
            ready = [client]
        else:
            watched = [client, upstream] if client_open else [upstream]
            ready, _, _ = select.select(watched, [], [], 60)
            if not ready:
                return
        if client in ready:
            data = client.recv(65536)
            if data:
                upstream.sendall(data)
            else:
                client_open = False
                upstream.shutdown(socket.SHUT_WR)
        if upstream in ready:
            data = upstream.recv(65536)
            if not data:
                return
            client.sendall(data)


def remote(host, cert_path):
    settings = {"host": host, "cert_path": str(cert_path)}
    return RemoteDockerProvider(get_declaration("remote-docker"), settings)


def test_it_runs_a_sandbox_on_a_remote_engine_over_mutual_tls(
    docker_provider, tls_engine, certificates, batch_label
):
    provider = remote(tls_engine, certificates["client"])
    sandbox = provider.create(
        SandboxSpec(cpus=1, memory_mib=2048, label=batch_label, lifetime_s=60)
    )
    try:
        result = provider.exec(sandbox, ["bash", "-c", "echo over tls; exit 3"], timeout=30)
        assert (result.exit_code, result.stdout) == (3, b"over tls\n")
        provider.upload(sandbox, "/app/note.txt", b"remote file")
        assert provider.download(sandbox, "/app/note.txt") == b"remote file"
        assert [s.id for s in provider.list_sandboxes(batch_label)] == [sandbox.id]
    finally:
        provider.destroy(sandbox)
    assert provider.is_gone(sandbox.id)
    checks = {check.name: check for check in provider.doctor()}
    assert f"via {tls_engine}" in checks["engine"].detail
    assert checks["image"].ok
    assert "not visible from here" in checks["storage"].detail


def test_it_cannot_connect_with_a_certificate_the_engine_does_not_trust(tls_engine, certificates):
    provider = remote(tls_engine, certificates["stranger"])
    with pytest.raises(ProviderError, match=f"cannot reach the engine at {tls_engine}") as caught:
        provider.api  # noqa: B018 (connecting is the point)
    assert caught.value.operation == "connect"
