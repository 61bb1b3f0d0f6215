"""Raw HTTP against a real server: what bytes it sends back, whatever a client library hides
(http.client and httpx never read a body after HEAD)."""

import socket


def raw_request(port: int, method: str, path: str) -> tuple[str, bytes]:
    """The status line and headers, and every byte the server sent after them."""
    # A guard against a hang, not a measure of speed: the first request renders the page, which
    # took over 10 s on a two-core machine at a load average of 10.
    with socket.create_connection(("127.0.0.1", port), timeout=120) as conn:
        conn.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return head.decode("latin-1"), body


def header(head: str, name: str) -> str | None:
    for line in head.split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    return None


def check_methods(port: int) -> None:
    """HEAD: GET's headers, no body; OPTIONS and TRACE: 405, no page."""
    get_head, get_body = raw_request(port, "GET", "/methodology/")
    assert get_head.startswith("HTTP/1.1 200") and get_body
    head, body = raw_request(port, "HEAD", "/methodology/")
    assert head.startswith("HTTP/1.1 200"), head
    assert body == b""
    assert "script-src 'self'" in header(head, "Content-Security-Policy")
    length = header(head, "Content-Length")
    assert length is None or int(length) == int(header(get_head, "Content-Length"))
    for method in ("OPTIONS", "TRACE"):
        head, body = raw_request(port, method, "/methodology/")
        assert head.startswith("HTTP/1.1 405"), head
        assert header(head, "Allow") == "GET, HEAD, POST"
        assert b"<html" not in body
