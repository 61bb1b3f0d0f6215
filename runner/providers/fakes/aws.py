"""What every loopback fake of an AWS service needs, driven by the service model botocore ships.

- `Operations` finds the operation a request names (HTTP method and the model's request URI),
  reads its input from the URI, headers, query string and JSON body as the model places them,
  and checks it against the input shape: required members, types, lengths, ranges, patterns and
  enums. botocore checks only some of these on the client (required members and types, not
  patterns or maximum lengths): the service checks all of them, so the fake does too, and a
  request the real service would reject is rejected with its ValidationException.
- `verify_sigv4` recomputes a request's Signature Version 4 with the fake's secret key, so a
  wrong key, secret or region is refused as AWS refuses it.
- `event_stream` frames events in the `application/vnd.amazon.eventstream` encoding that an
  event-stream output (InvokeCodeInterpreter's) is read from.
- `error` answers a modelled error the way rest-json services do (`x-amzn-ErrorType`).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import botocore.session

from runner.providers.fakes.server import Request, Response

_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, ?SignedHeaders=(?P<signed>[^,]+), ?"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


class Rejected(Exception):
    """A request the service refuses: an HTTP status, an error code and the service's message."""

    def __init__(self, status: int, code: str, message: str, extra: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra or {}


def error(status: int, code: str, message: str, extra: dict | None = None) -> Response:
    return Response.json(
        status, {"message": message, **(extra or {})}, {"x-amzn-ErrorType": f"{code}:http://"}
    )


def timestamp(moment: datetime) -> str:
    """An ISO 8601 timestamp as AWS writes them (`timestampFormat: iso8601`)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Call:
    operation: str
    params: dict = field(default_factory=dict)


class Operations:
    """The operations of one service model, matched and read as the service reads them."""

    def __init__(self, service: str):
        self.model = botocore.session.get_session().get_service_model(service)
        self._routes = []
        for name in self.model.operation_names:
            operation = self.model.operation_model(name)
            uri = operation.http["requestUri"]
            path, _, fixed_query = uri.partition("?")
            pattern = re.sub(
                r"\\\{(\w+)(\\\+)?\\\}", lambda m: f"(?P<{m.group(1)}>[^/]+)", re.escape(path)
            )
            self._routes.append((operation.http["method"], re.compile(f"^{pattern}$"), operation))

    def read(self, request: Request) -> Call:
        """The operation and its validated input; Rejected when the service would refuse it."""
        match, operation = self._route(request)
        shape = operation.input_shape
        params: dict = {}
        body = {}
        if request.body:
            try:
                body = json.loads(request.body)
            except ValueError:
                raise Rejected(
                    400, "ValidationException", "the body is not JSON", {"reason": "CannotParse"}
                ) from None
            if not isinstance(body, dict):
                raise Rejected(
                    400,
                    "ValidationException",
                    "the body is not a JSON object",
                    {"reason": "CannotParse"},
                )
        problems: list[tuple[str, str]] = []
        for name, member in shape.members.items() if shape is not None else ():
            where = member.serialization.get("location")
            wire = member.serialization.get("name", name)
            if where == "uri":
                value = match.group(wire) if wire in match.groupdict() else None
            elif where == "header":
                value = request.headers.get(wire.lower())
            elif where == "querystring":
                value = request.arg(wire)
            else:
                value = body.get(name)
            if value is None:
                continue
            params[name] = _decode(member, value, name, problems)
        if shape is not None:
            unknown = sorted(
                set(body)
                - {n for n, m in shape.members.items() if not m.serialization.get("location")}
            )
            problems += [(n, "is not a member of the request") for n in unknown]
            _check(shape, params, "", problems)
        if problems:
            raise Rejected(
                400,
                "ValidationException",
                "; ".join(f"{path or 'request'} {why}" for path, why in problems),
                {
                    "reason": "FieldValidationFailed",
                    "fieldList": [{"name": p or "request", "message": w} for p, w in problems],
                },
            )
        return Call(operation.name, params)

    def _route(self, request: Request):
        for method, pattern, operation in self._routes:
            match = pattern.match(request.path)
            if match and method == request.method:
                return match, operation
        raise Rejected(404, "UnknownOperationException", f"{request.method} {request.path}")

    def output(self, operation: str, data: dict) -> dict:
        """`data` checked against the operation's output shape: a fake that would answer what
        the service never answers fails loudly instead of teaching the adapter wrong habits."""
        problems: list[tuple[str, str]] = []
        _check(self.model.operation_model(operation).output_shape, data, "", problems)
        if problems:
            raise AssertionError(f"the fake's {operation} answer breaks the model: {problems}")
        return data


def _decode(shape, value, path, problems):
    """A wire value as the model's type (headers and query strings arrive as text)."""
    kind = shape.type_name
    if isinstance(value, str) and kind in ("integer", "long"):
        try:
            return int(value)
        except ValueError:
            problems.append((path, f"must be a whole number, got {value!r}"))
            return value
    if kind == "blob" and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            problems.append((path, "must be base64"))
            return value
    if kind == "structure" and isinstance(value, dict):
        out = {}
        for name, member_value in value.items():
            member = shape.members.get(name)
            if member is None:
                problems.append((f"{path}.{name}", "is not a member"))
                continue
            out[name] = _decode(member, member_value, f"{path}.{name}", problems)
        return out
    if kind == "list" and isinstance(value, list):
        return [_decode(shape.member, v, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    return value


_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "long": int,
    "boolean": bool,
    "double": (int, float),
    "float": (int, float),
    "blob": bytes,
    "structure": dict,
    "list": list,
    "map": dict,
    "timestamp": (str, int, float, datetime),
}


def _check(shape, value, path, problems) -> None:
    """Every constraint the model states for `value` (the service's own validation)."""
    if shape is None:
        return
    kind = shape.type_name
    wanted = _TYPES.get(kind)
    bad_bool = isinstance(value, bool) and kind in ("integer", "long", "double", "float")
    if wanted is not None and (not isinstance(value, wanted) or bad_bool):
        problems.append((path, f"must be of type {kind}"))
        return
    meta = shape.metadata
    size = len(value) if kind in ("string", "blob", "list", "map") else value
    if kind in ("string", "blob", "list", "map", "integer", "long", "double", "float"):
        what = "length" if kind in ("string", "blob", "list", "map") else "value"
        if "min" in meta and size < meta["min"]:
            problems.append((path, f"{what} must be at least {meta['min']}"))
        if "max" in meta and size > meta["max"]:
            problems.append((path, f"{what} must be at most {meta['max']}"))
    if kind == "string" and "pattern" in meta and not re.fullmatch(meta["pattern"], value):
        problems.append((path, f"must match the pattern {meta['pattern']}"))
    if kind == "string" and shape.enum and value not in shape.enum:
        problems.append((path, f"must be one of {', '.join(shape.enum)}"))
    if kind == "structure":
        for name in shape.required_members:
            if name not in value:
                problems.append((f"{path}.{name}".lstrip("."), "is required"))
        for name, member_value in value.items():
            if name in shape.members:
                _check(shape.members[name], member_value, f"{path}.{name}".lstrip("."), problems)
    elif kind == "list":
        for i, item in enumerate(value):
            _check(shape.member, item, f"{path}[{i}]", problems)


def verify_sigv4(
    request: Request, host: str, access_key: str, secret_key: str, region: str, service: str
) -> None:
    """Raise Rejected unless `request` carries a valid Signature Version 4 of these keys."""
    found = _AUTH.match(request.headers.get("authorization", ""))
    if found is None:
        raise Rejected(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
    if found["key"] != access_key:
        raise Rejected(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        )
    if found["region"] != region or found["service"] != service:
        raise Rejected(
            403,
            "InvalidSignatureException",
            f"Credential should be scoped to a valid region and to {service}.",
        )
    signed = found["signed"].split(";")
    query = urlencode([(k, v) for k, values in request.query.items() for v in values])
    url = f"http://{host}{quote(request.path, safe='/~')}" + (f"?{query}" if query else "")
    rebuilt = botocore.awsrequest.AWSRequest(
        method=request.method,
        url=url,
        headers={name: request.headers.get(name, "") for name in signed},
        data=request.body,
    )
    rebuilt.context["timestamp"] = request.headers.get("x-amz-date", "")
    signer = botocore.auth.SigV4Auth(
        botocore.credentials.Credentials(access_key, secret_key), service, region
    )
    canonical = signer.canonical_request(rebuilt)
    expected = signer.signature(signer.string_to_sign(rebuilt, canonical), rebuilt)
    if expected != found["signature"]:
        raise Rejected(
            403,
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you "
            "provided. Check your AWS Secret Access Key and signing method.",
        )


def event_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One message of the event-stream encoding: prelude, its CRC, string headers, payload,
    and the CRC of everything before it."""
    encoded = b""
    for name, value in headers.items():
        name_bytes, value_bytes = name.encode(), value.encode()
        encoded += struct.pack("!B", len(name_bytes)) + name_bytes
        encoded += struct.pack("!BH", 7, len(value_bytes)) + value_bytes  # 7: string
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    message = prelude + struct.pack("!I", binascii.crc32(prelude)) + encoded + payload
    return message + struct.pack("!I", binascii.crc32(message))


def event(event_type: str, data: dict) -> bytes:
    return event_message(
        {":message-type": "event", ":event-type": event_type, ":content-type": "application/json"},
        json.dumps(data).encode(),
    )


def exception_event(code: str, message: str) -> bytes:
    return event_message(
        {
            ":message-type": "exception",
            ":exception-type": code,
            ":content-type": "application/json",
        },
        json.dumps({"message": message}).encode(),
    )
