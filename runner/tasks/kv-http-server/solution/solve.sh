#!/bin/bash
set -euo pipefail
cat > /app/kv_server.py <<'PY'
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STORE = {}


class Handler(BaseHTTPRequestHandler):
    def _answer(self, status, body=b"", kind="application/octet-stream"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/stats":
            return self._answer(200, json.dumps({"keys": len(STORE)}).encode(), "application/json")
        key = self.path.removeprefix("/kv/")
        if self.path.startswith("/kv/") and key in STORE:
            return self._answer(200, STORE[key])
        return self._answer(404)

    def do_PUT(self):
        length = int(self.headers.get("Content-Length", 0))
        STORE[self.path.removeprefix("/kv/")] = self.rfile.read(length)
        self._answer(201)

    def do_DELETE(self):
        STORE.pop(self.path.removeprefix("/kv/"), None)
        self._answer(204)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
PY
