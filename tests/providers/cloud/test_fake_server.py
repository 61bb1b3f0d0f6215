"""The loopback fakes' HTTP server: what a test may rely on when it waits for an idle drop."""

import select
import socket
import socketserver

import pytest

from runner.providers.fakes.server import FakeHTTPServer, Response


def test_a_connection_counted_closed_is_already_shut_for_the_client(monkeypatch):
    # A slow shutdown makes the race wide: the count used to rise when the handler returned,
    # before the socket was shut, so a test that called again at once could meet a connection
    # still closing ("Server disconnected without sending a response").
    shutdown = socketserver.TCPServer.shutdown_request

    def slow_shutdown(self, request):
        select.select([], [], [], 0.5)
        shutdown(self, request)

    monkeypatch.setattr(socketserver.TCPServer, "shutdown_request", slow_shutdown)
    server = FakeHTTPServer(lambda request: Response.json(200, {}), 0.2, "closing")
    server.start()
    try:
        client = socket.create_connection(("127.0.0.1", server.server_address[1]))
        client.sendall(b"GET / HTTP/1.1\r\nHost: fake\r\n\r\n")
        assert client.recv(4096).startswith(b"HTTP/1.1 200")
        assert server.wait_closed(1, 30)
        # The rest of the answer may still be queued behind the status line; once it is read,
        # a shut socket answers end-of-file at once, an open one would block.
        client.setblocking(False)
        while True:
            try:
                chunk = client.recv(4096)
            except BlockingIOError:
                pytest.fail("a connection counted closed is still open for the client")
            if not chunk:
                break
        client.close()
    finally:
        server.stop()
