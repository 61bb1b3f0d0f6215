"""The Connect protocol's JSON framing (connectrpc.com/docs/protocol), as E2B's envd speaks it:
the E2B fake's side of it (the adapter reaches envd through E2B's SDK and its connectrpc client).

A streaming message is an envelope: one flag byte, a 4-byte big-endian length, then the payload.
Flag 0x02 marks the end-of-stream message, a JSON object holding `error` (a Connect error:
`code`, `message`) or nothing. Unary calls are plain JSON bodies with an HTTP status. In JSON,
protobuf `bytes` fields are base64 and field names are lowerCamelCase; fields at their default
value (0, false, "") are left out, so a reader must default them.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Iterator

END_STREAM = 0x02
_HEADER = struct.Struct(">BI")
STREAM_CONTENT_TYPE = "application/connect+json"
# The largest envelope a reader accepts: envd sends output in small chunks, so a length past this
# is a broken or hostile stream, refused before its bytes are gathered.
MAX_ENVELOPE = 16 * 1024 * 1024

# Connect error codes and the HTTP status a unary error carries (protocol spec, "Error Codes").
HTTP_STATUS = {
    "canceled": 499,
    "unknown": 500,
    "invalid_argument": 400,
    "deadline_exceeded": 504,
    "not_found": 404,
    "already_exists": 409,
    "permission_denied": 403,
    "resource_exhausted": 429,
    "failed_precondition": 400,
    "aborted": 409,
    "out_of_range": 400,
    "unimplemented": 501,
    "internal": 500,
    "unavailable": 503,
    "data_loss": 500,
    "unauthenticated": 401,
}


class FramingError(ValueError):
    """The bytes are not a well-formed Connect envelope stream."""


def envelope(message: dict, flags: int = 0) -> bytes:
    payload = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(flags, len(payload)) + payload


def end_stream(error: dict | None = None) -> bytes:
    return envelope({"error": error} if error else {}, END_STREAM)


def read_envelopes(
    chunks: Iterable[bytes], max_length: int = MAX_ENVELOPE
) -> Iterator[tuple[int, dict]]:
    """(flags, message) for each envelope in a byte stream that arrives in arbitrary chunks."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= _HEADER.size:
            flags, length = _HEADER.unpack_from(buffer)
            if length > max_length:
                raise FramingError(f"an envelope announces {length} bytes, past {max_length}")
            if len(buffer) < _HEADER.size + length:
                break
            payload = buffer[_HEADER.size : _HEADER.size + length]
            buffer = buffer[_HEADER.size + length :]
            try:
                message = json.loads(payload or b"{}")
            except ValueError as exc:
                raise FramingError(f"an envelope's payload is not JSON: {exc}") from None
            if not isinstance(message, dict):
                raise FramingError("an envelope's payload is not a JSON object")
            yield flags, message
    if buffer:
        raise FramingError(f"the stream ended inside an envelope ({len(buffer)} bytes left)")


def parse_single(body: bytes) -> dict:
    """The one message of a server-streaming request body."""
    messages = list(read_envelopes([body]))
    if len(messages) != 1 or messages[0][0] & END_STREAM:
        raise FramingError(f"expected one request message, got {len(messages)}")
    return messages[0][1]
