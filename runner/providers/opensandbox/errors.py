"""OpenSandbox's error answers as adapter errors, so the lifecycle classifies each one right.

The server answers errors as JSON `{"code": "DOCKER::SANDBOX_NOT_FOUND", "message": "..."}`,
FastAPI's validation errors as 422 `{"detail": [{"loc": [...], "msg": "..."}]}`, and execd as
`{"code", "message"}` too. No Django imports: tested directly.

| status | error | outcome (runner/lifecycle.py) |
| --- | --- | --- |
| 401, 403 | CredentialsRejected (runner/providers/base.py) | benchmark error, as on every adapter |
| 400, 422 | RequestRejected | benchmark error: the adapter sent a request the API refuses |
| 404 | SandboxGone (a ProviderError) | provider failure; destroy and is_gone take it as gone |
| 409 | WrongState (a ProviderError) | provider failure: pause of a paused sandbox and the like |
| 502, 503, 504 | NotReady | retried by the readiness check, else a provider failure |
| other | ProviderError | provider failure, naming the server's code |

RequestRejected passes through create as itself (the lifecycle re-raises a TrialOutcome from
create); from exec or a transfer the lifecycle reports it as the provider's, which is why the
message names the status and the server's code either way. A rejected credential is a benchmark
error wherever it happens: the lifecycle decides that for every adapter.
"""

from __future__ import annotations

import json

from runner.benchmarks.base import BenchmarkError
from runner.providers.base import CredentialsRejected, NotReady, ProviderError
from runner.providers.credentials import redact

NOT_READY_STATUS = {502, 503, 504}
__all__ = ["CredentialsRejected", "RequestRejected", "SandboxGone", "WrongState", "error_for"]


class SandboxGone(ProviderError):
    """404: the sandbox (or snapshot, or file) does not exist, or no longer: the TTL removes it."""


class WrongState(ProviderError):
    """409: the operation does not fit the sandbox's state (pause a paused one...)."""


class _Refused(BenchmarkError, ProviderError):
    """A refusal that is ours to fix: a benchmark error to the lifecycle's create, and still a
    ProviderError (operation, code) to callers that catch those, such as `bench cleanup`."""

    def __init__(self, message: str, operation: str = "", code: str = ""):
        Exception.__init__(self, message)
        self.cause = message
        self.operation = operation
        self.code = code


class RequestRejected(_Refused):
    """400/422: the request does not fit the API (a defect of the adapter or of its settings)."""


def error_body(text: str) -> tuple[str, str]:
    """(code, message) from an error body of the server or of execd; raw text when not JSON."""
    try:
        body = json.loads(text)
    except ValueError:
        return "", text.strip()[:500]
    if isinstance(body, dict) and "detail" in body:
        detail = body["detail"]
        if isinstance(detail, list):  # FastAPI validation errors
            parts = []
            for item in detail:
                if isinstance(item, dict):
                    where = ".".join(str(p) for p in item.get("loc", []) if p != "body")
                    parts.append(f"{where or 'request'}: {item.get('msg', item)}")
            return "VALIDATION_ERROR", "; ".join(parts) or str(detail)[:500]
        if isinstance(detail, dict):
            body = detail
        else:
            return "", str(detail)[:500]
    if isinstance(body, dict):
        return str(body.get("code") or ""), str(body.get("message") or body)[:500]
    return "", str(body)[:500]


def error_for(
    operation: str, status: int, text: str, where: str = "", secrets: tuple = ()
) -> Exception:
    """The adapter error for an HTTP error answer of `operation`; `secrets` (the API key, execd's
    token) are removed from the whole answer before error_body cuts its message short."""
    code, message = error_body(redact(text, *secrets))
    label = f" {code}" if code else ""
    suffix = f" ({where})" if where else ""
    described = f"{operation}: HTTP {status}{label}: {message}{suffix}"
    code = code or str(status)
    if status in (401, 403):
        return CredentialsRejected(
            f"{described}; set OPEN_SANDBOX_API_KEY or OPEN_SANDBOX_API_KEY_FILE to the "
            "server's api_key",
            operation,
            code,
        )
    if status in (400, 422):
        return RequestRejected(described, operation, code)
    if status == 404:
        return SandboxGone(described, operation, code)
    if status == 409:
        return WrongState(described, operation, code)
    if status in NOT_READY_STATUS:
        return NotReady(described, operation, code)
    return ProviderError(described, operation, code)
