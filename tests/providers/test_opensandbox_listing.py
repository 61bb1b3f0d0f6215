"""The opensandbox adapter's listing against a loopback server that answers as OpenSandbox's does
when a container is deleted while the server inspects the ones it listed (Docker runtime):
500 `DOCKER::SANDBOX_QUERY_FAILED`, then the listing again once the delete is done."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from runner.providers import get_provider
from runner.providers.base import NotReady, ProviderError
from runner.providers.fakes.server import FakeHTTPServer, Response
from runner.providers.opensandbox import adapter

VANISHED = {
    "code": "DOCKER::SANDBOX_QUERY_FAILED",
    "message": "Failed to query sandbox containers: 500 Server Error: no such container",
}
# A sandbox as the lifecycle spec describes it: id, status, entrypoint and createdAt are
# required, and OpenSandbox's SDK refuses an item without them.
LISTING = {
    "items": [
        {
            "id": "s1",
            "status": {"state": "Running"},
            "entrypoint": ["sleep", "infinity"],
            "createdAt": "2026-12-05T07:00:00Z",
            "metadata": {"boxbench.batch": "b1"},
        }
    ],
    "pagination": {
        "page": 1,
        "pageSize": 100,
        "totalItems": 1,
        "totalPages": 1,
        "hasNextPage": False,
    },
}


class Server(ThreadingHTTPServer):
    def __init__(self, answers):
        super().__init__(("127.0.0.1", 0), Handler)
        self.answers = list(answers)  # (status, body) per GET, the last one repeated
        self.asked = 0


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        server = self.server
        status, body = server.answers[min(server.asked, len(server.answers) - 1)]
        server.asked += 1
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def serve(monkeypatch):
    monkeypatch.setattr(adapter, "LIST_RETRY_S", 3.0)
    started = []

    def serve(*answers):
        server = Server(answers)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        provider = get_provider("opensandbox", settings={"url": f"127.0.0.1:{server.server_port}"})
        started.append((server, provider))
        return server, provider

    yield serve
    for server, provider in started:
        provider.close()
        server.shutdown()
        server.server_close()


def test_a_listing_that_races_a_delete_is_asked_again(serve):
    server, provider = serve((500, VANISHED), (500, VANISHED), (200, LISTING))
    assert [s.id for s in provider.list_sandboxes("b1")] == ["s1"]
    assert server.asked == 3


def test_a_listing_that_keeps_failing_names_the_servers_code(serve):
    server, provider = serve((500, VANISHED))
    with pytest.raises(ProviderError, match="list: HTTP 500 DOCKER::SANDBOX_QUERY_FAILED"):
        provider.list_sandboxes()
    assert 3 <= server.asked <= 4  # asked again within LIST_RETRY_S, then given up


def test_any_other_server_error_is_not_asked_again(serve):
    server, provider = serve((500, {"code": "DOCKER::SANDBOX_ERROR", "message": "broken"}))
    with pytest.raises(ProviderError, match="SANDBOX_ERROR: broken"):
        provider.list_sandboxes()
    assert server.asked == 1


def test_the_sdk_asks_once_its_own_retries_are_off(serve):
    # OpenSandbox's SDK, left to itself, asks a GET again up to 3 times on 429, 502 and 503 with
    # backoff: inside a timed call, that would be several calls timed as one.
    unavailable = {"code": "SERVER_BUSY", "message": "try later"}
    server, provider = serve((503, unavailable), (200, LISTING))
    with pytest.raises(NotReady, match="list: HTTP 503 SERVER_BUSY"):
        provider.list_sandboxes("b1")
    assert server.asked == 1


def test_calls_share_one_warm_connection_through_the_sdk():
    # The SDK builds its clients on the adapter's transport, which keeps idle connections up to
    # 5 minutes: sequential calls reuse one connection, and one the server dropped is replaced.
    server = FakeHTTPServer(lambda request: Response.json(200, LISTING), 2.0, "os-keepalive")
    server.start()
    provider = get_provider("opensandbox", settings={"url": server.url})
    try:
        for _ in range(5):
            assert [s.id for s in provider.list_sandboxes("b1")] == ["s1"]
        assert server.connections == 1
        assert server.wait_closed(1, 30)  # the server closes the idle connection after 2 s
        assert [s.id for s in provider.list_sandboxes("b1")] == ["s1"]
        assert server.connections == 2
    finally:
        provider.close()
        server.stop()
