"""How the container providers find their engine and classify its failures."""

import http.server
import json
import socket
import threading

import pytest

from runner.declarations import get_declaration
from runner.providers.base import NotReady, ProviderError, Sandbox, SandboxSpec
from runner.providers.docker import DockerProvider
from runner.providers.remote_docker import RemoteDockerProvider


def docker_provider(**settings):
    return DockerProvider(get_declaration("docker"), settings)


def remote_provider(**settings):
    return RemoteDockerProvider(get_declaration("remote-docker"), settings)


class EngineStub(http.server.BaseHTTPRequestHandler):
    """An engine that answers every request with one HTTP status (502 while starting, say)."""

    status = 503
    message = ""

    def do_POST(self):
        body = json.dumps({"message": self.message or f"stub answers {self.status}"}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_DELETE = do_POST  # noqa: N815 - http.server's handler names

    def log_message(self, *args):
        pass


@pytest.fixture
def engine_stub():
    servers = []

    def start(status, message=""):
        handler = type("Handler", (EngineStub,), {"status": status, "message": message})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"tcp://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


SANDBOX = Sandbox(id="0" * 64, label="bb-test")


@pytest.mark.parametrize("status", [502, 503, 504])
def test_it_calls_a_gateway_or_unavailable_answer_not_ready(engine_stub, status):
    provider = docker_provider(host=engine_stub(status), api_version="1.41")
    with pytest.raises(NotReady, match=f"exec: HTTP {status}: stub answers {status}") as caught:
        provider.exec(SANDBOX, ["true"], timeout=5)
    assert (caught.value.operation, caught.value.code) == ("exec", str(status))


def test_an_engine_answer_without_its_id_is_a_named_provider_failure(engine_stub):
    """A remote engine is as hostile as any provider: a 201 without the exec's `Id`."""
    provider = docker_provider(host=engine_stub(201, "created, but no Id"), api_version="1.41")
    with pytest.raises(ProviderError, match=r"docker exec: the engine's answer has no `Id`") as e:
        provider.exec(SANDBOX, ["true"], timeout=5)
    assert (e.value.operation, e.value.code) == ("exec", "bad_answer")


def test_it_calls_other_engine_errors_provider_errors_naming_the_operation(engine_stub):
    provider = docker_provider(host=engine_stub(500), api_version="1.41")
    with pytest.raises(ProviderError, match="upload: HTTP 500") as caught:
        provider.upload(SANDBOX, "/app/x", b"data")
    assert not isinstance(caught.value, NotReady)
    spec = SandboxSpec(cpus=1, memory_mib=2048, label="bb-test", lifetime_s=60)
    with pytest.raises(ProviderError, match="create: HTTP 500"):
        provider.create(spec)


def test_it_calls_a_refused_or_reset_connection_not_ready():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now: connections are refused
    provider = docker_provider(host=f"tcp://127.0.0.1:{port}", api_version="1.41")
    with pytest.raises(NotReady, match="exec: connection failed"):
        provider.exec(SANDBOX, ["true"], timeout=5)


def test_it_says_where_it_looked_when_no_engine_socket_exists(monkeypatch, tmp_path):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr("runner.providers.docker.LOCAL_SOCKETS", (f"{tmp_path}/none.sock",))
    with pytest.raises(ProviderError, match="no engine socket found; set DOCKER_HOST"):
        docker_provider().base_url()


def test_it_prefers_its_settings_to_docker_host(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///from/environment.sock")
    assert docker_provider().base_url() == "unix:///from/environment.sock"
    assert docker_provider(host="unix:///from/settings.sock").base_url() == (
        "unix:///from/settings.sock"
    )


def test_it_rejects_a_bad_ulimit_setting_naming_the_variable(monkeypatch):
    monkeypatch.setenv("BOXBENCH_DOCKER_NOFILE", "lots")
    with pytest.raises(ProviderError, match="BOXBENCH_DOCKER_NOFILE must be a positive whole"):
        docker_provider()


def test_it_needs_a_remote_host_and_names_the_variable(monkeypatch):
    monkeypatch.delenv("BOXBENCH_REMOTE_DOCKER_HOST", raising=False)
    with pytest.raises(ProviderError, match="set BOXBENCH_REMOTE_DOCKER_HOST to ssh://"):
        remote_provider().base_url()
    with pytest.raises(ProviderError, match="use ssh://user@host or tcp://host:port"):
        remote_provider(host="http://example.invalid").base_url()


def test_it_refuses_a_remote_tcp_engine_without_tls(monkeypatch, tmp_path):
    monkeypatch.delenv("BOXBENCH_REMOTE_DOCKER_CERT_PATH", raising=False)
    provider = remote_provider(host="tcp://127.0.0.1:2376")
    with pytest.raises(ProviderError, match="needs TLS; set BOXBENCH_REMOTE_DOCKER_CERT_PATH"):
        provider.api  # noqa: B018 (connecting is the point)
    (tmp_path / "ca.pem").write_text("not used")
    provider = remote_provider(host="tcp://127.0.0.1:2376", cert_path=str(tmp_path))
    with pytest.raises(ProviderError, match="missing cert.pem, key.pem"):
        provider.api  # noqa: B018


def test_it_reaches_an_ssh_host_without_tls_certificates(monkeypatch):
    seen = {}

    class Recorder:
        def __init__(self, **kwargs):
            seen.update(kwargs)

    monkeypatch.setattr("runner.providers.docker.EngineClient", Recorder)
    remote_provider(host="ssh://builder@gpu-box.example.com").api  # noqa: B018
    assert seen["base_url"] == "ssh://builder@gpu-box.example.com"
    assert seen["tls"] is False  # SSH authenticates and encrypts; no certificates needed


def test_it_reports_an_unconfigured_remote_engine_as_nothing_to_check(monkeypatch):
    monkeypatch.delenv("BOXBENCH_REMOTE_DOCKER_HOST", raising=False)
    [check] = remote_provider().doctor()
    assert (check.name, check.ok, check.verdict) == ("engine", True, "SKIP")
    assert "not configured (set BOXBENCH_REMOTE_DOCKER_HOST)" in check.detail


def test_it_fails_the_doctor_check_when_the_engine_is_unreachable(tmp_path):
    [check] = docker_provider(host=f"unix://{tmp_path}/absent.sock").doctor()
    assert (check.name, check.ok) == ("engine", False)
    assert f"cannot reach the engine at unix://{tmp_path}/absent.sock" in check.detail


class NoInitStub(EngineStub):
    """Podman without its init binary: it answers /version, and every create is a 500."""

    status = 500
    message = "container-init binary not found on the host: /usr/libexec/podman/catatonit"

    def do_GET(self):
        if not self.path.endswith("/version"):
            return super().do_GET()
        body = json.dumps({"ApiVersion": "1.41", "Components": [{"Name": "Podman Engine"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())


def test_it_names_the_package_when_podman_has_no_init_binary():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoInitStub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"tcp://127.0.0.1:{server.server_address[1]}"
    try:
        provider = docker_provider(host=host, api_version="1.41")
        spec = SandboxSpec(cpus=1, memory_mib=2048, label="bb-test", lifetime_s=60)
        with pytest.raises(ProviderError, match="apt-get install catatonit") as caught:
            provider.create(spec)
        assert caught.value.operation == "create"
    finally:
        server.shutdown()
        server.server_close()


class ImageListStub(EngineStub):
    """Podman listing images while another client removes one: a 500 naming the vanished file,
    `failures` times, then the listing."""

    failures = 1
    asked = 0

    def do_GET(self):
        cls = type(self)
        cls.asked += 1
        if cls.asked <= cls.failures:
            self.status = 500
            self.message = (
                'locating item named "manifest" for image with ID "42963366" (consider removing '
                "the image to resolve the issue): file does not exist"
            )
            return super().do_GET()
        body = json.dumps([{"Id": "sha256:" + "a" * 64, "Created": 0, "Labels": LABELS}]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


LABELS = {"boxbench.batch": "bb-test", "boxbench.kind": "snapshot"}


@pytest.fixture
def image_list_stub():
    servers = []

    def start(failures):
        handler = type("Handler", (ImageListStub,), {"failures": failures, "asked": 0})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return handler, f"tcp://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_it_lists_snapshots_again_when_an_image_vanished_while_listed(image_list_stub):
    handler, url = image_list_stub(failures=2)
    [snapshot] = docker_provider(host=url, api_version="1.41").list_snapshots("bb-test")
    assert snapshot.id == "sha256:" + "a" * 64
    assert handler.asked == 3


def test_a_listing_that_keeps_failing_is_a_provider_error_naming_it(image_list_stub):
    handler, url = image_list_stub(failures=100)
    with pytest.raises(ProviderError, match="list snapshots: HTTP 500: .*file does not exist"):
        docker_provider(host=url, api_version="1.41").list_snapshots("bb-test")
    assert 2 <= handler.asked < 10
