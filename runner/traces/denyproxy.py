"""The loopback deny proxy that runs inside the sandbox during a trace replay.

Started untimed before the first command, it answers every request (any method, CONNECT
included) with HTTP 403, so a command that reaches for the network through HTTP_PROXY,
HTTPS_PROXY or PIP_INDEX_URL fails at once instead of waiting for a timeout - the offline posture of
upstream DeepSWE's evaluation. Standard library only: it runs on the sandbox's python3.

    python3 denyproxy.py --port-file PATH [--port N]

It binds 127.0.0.1 (port 0 picks a free one), writes the port to PATH once it is listening, and
logs one line per refused request on standard error.
"""

from __future__ import annotations

import argparse
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b"boxbench deny proxy: network access is blocked during trace replay\n"


class DenyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def deny(self):
        self.send_response(403, "Forbidden")
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(BODY)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(BODY)
        self.close_connection = True

    def __getattr__(self, name):
        # Every method (GET, POST, CONNECT, PROPFIND...) gets the same answer.
        if name.startswith("do_"):
            return self.deny
        raise AttributeError(name)

    def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's signature
        sys.stderr.write(f"denied {self.command} {self.path}\n")


def serve(port: int, port_file: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), DenyHandler)
    server.daemon_threads = True
    # Written atomically: the replay script starts as soon as the file has content.
    partial = port_file + ".tmp"
    with open(partial, "w") as handle:
        handle.write(f"{server.server_address[1]}\n")
    os.replace(partial, port_file)
    server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Answer every HTTP request with 403.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args(argv)
    serve(args.port, args.port_file)


if __name__ == "__main__":
    main()
