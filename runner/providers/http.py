"""What the HTTP adapters share: one httpx client per provider, and errors mapped for the lifecycle.

Connections (common methodology): calls reuse a warm connection, and idle client connections stay
open for up to 5 minutes, so sequential calls reuse a warm TLS session. A connection the provider
closed while idle is noticed by httpx before reuse and replaced.

Error mapping: on a sandbox's data plane, HTTP 502, 503 and 504, refused connections and resets
mean "not ready yet" (NotReady, which the readiness check retries); everywhere else they are the
provider's failure. Every error names the provider, the operation, the HTTP status and the
provider's own message, with any credential removed.
"""

from __future__ import annotations

import httpx

from runner.providers.base import NotReady, ProviderError
from runner.providers.credentials import redact

KEEPALIVE_EXPIRY_S = 300.0
NOT_READY_STATUS = {502, 503, 504}


def make_client(timeout_s: float = 60.0, connect_s: float = 10.0) -> httpx.Client:
    return httpx.Client(
        timeout=httpx.Timeout(timeout_s, connect=connect_s),
        limits=httpx.Limits(
            max_connections=64, max_keepalive_connections=32, keepalive_expiry=KEEPALIVE_EXPIRY_S
        ),
        # Credentials travel only in each request's own headers; nothing from the environment
        # (proxies, .netrc) takes part.
        trust_env=False,
        follow_redirects=False,
    )


def transport_error(
    exc: httpx.HTTPError, provider: str, operation: str, data_plane: bool = False
) -> ProviderError:
    kind = type(exc).__name__
    message = f"{provider} {operation}: {kind}: {exc}"
    if data_plane and isinstance(
        exc, httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError
    ):
        return NotReady(message, operation=operation, code="transport")
    return ProviderError(message, operation=operation, code="transport")


def status_error(
    response: httpx.Response,
    provider: str,
    operation: str,
    *,
    data_plane: bool = False,
    secrets: tuple[str | None, ...] = (),
) -> ProviderError:
    status = response.status_code
    detail = redact(_detail(response), *secrets)
    if data_plane and status in NOT_READY_STATUS:
        return NotReady(
            f"{provider} {operation}: HTTP {status}: {detail}",
            operation=operation,
            code=str(status),
        )
    if status == 429:
        retry = response.headers.get("Retry-After")
        wait = f" (Retry-After {retry} s)" if retry else ""
        return ProviderError(
            f"{provider} {operation}: rate or plan limit, HTTP 429{wait}: {detail}",
            operation=operation,
            code="rate_limited",
        )
    code = {401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict"}.get(
        status, "server_error" if status >= 500 else "rejected"
    )
    return ProviderError(
        f"{provider} {operation}: HTTP {status}: {detail}", operation=operation, code=code
    )


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:300] or "(empty body)"
    if isinstance(body, dict):
        parts = [str(body.get(k)) for k in ("error_code", "code", "message") if body.get(k)]
        error = body.get("error")
        if isinstance(error, dict):
            parts += [str(error.get(k)) for k in ("code", "message") if error.get(k)]
        elif isinstance(error, str):
            parts.append(error)
        if parts:
            return ": ".join(parts)[:300]
    return str(body)[:300]
