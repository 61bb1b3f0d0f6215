"""Hostile answers a loopback fake can be told to give, so tests prove that every adapter bounds
what it reads (runner/providers/answers.py): each fake's `hostile(mode)` plants one of MODES as
faults on its own servers, in its provider's own shapes.

- `endless_listing`: each listing page names a fresh next page, PAGES times over;
- `missing_id`: the next create answers success without the sandbox's id;
- `not_json`: the next create answers success with an HTML page;
- `oversized_download`: the next download answers OVERSIZED bytes;
and CALM takes back whatever is still planted. Both sizes are far past any bound a test sets, yet
finite: an adapter without its bound then fails its test instead of hanging it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from runner.providers.fakes.server import Response

MODES = ("endless_listing", "missing_id", "not_json", "oversized_download")
CALM = "calm"
PAGES = 200
OVERSIZED = 64 * 1024 * 1024
CHUNK = 64 * 1024
HTML = (
    b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
    b"<body><h1>Bad Gateway</h1><p>upstream sent an invalid response</p></body></html>"
)


class UnknownMode(ValueError):
    pass


def unknown(mode: str, fake: str) -> UnknownMode:
    return UnknownMode(f"{fake} has no hostile mode {mode!r} (modes: {', '.join(MODES)})")


def oversized_body() -> Iterator[bytes]:
    """OVERSIZED bytes, sent chunk by chunk without a Content-Length."""
    chunk = b"\0" * CHUNK
    for _ in range(OVERSIZED // CHUNK):
        yield chunk


def oversized_download(content_type: str = "application/octet-stream") -> Response:
    return Response(200, oversized_body(), {"Content-Type": content_type})


def html(status: int = 200) -> Response:
    return Response(status, HTML, {"Content-Type": "text/html"})


def fresh_token() -> str:
    return uuid.uuid4().hex
