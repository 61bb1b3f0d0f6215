"""What the HTTP adapters share: their configuration, one httpx client per provider, and errors
mapped for the lifecycle.

Configuration: `HTTPProvider` reads the adapter's credential (runner/providers/credentials.py)
and its other required settings once, reports what is missing as the provider's configuration
problem (so planning refuses the run and `bench doctor` shows the line), and refuses every call
while it is unconfigured.

Connections (common methodology): calls reuse a warm connection, and idle client connections stay
open for up to 5 minutes, so sequential calls reuse a warm TLS session. A connection the provider
closed while idle is noticed by httpx before reuse and replaced.

Error mapping: on a sandbox's data plane, HTTP 502, 503 and 504, refused connections and resets
mean "not ready yet" (NotReady, which the readiness check retries); everywhere else they are the
provider's failure; 401 and 403 are CredentialsRejected (ours: runner/providers/base.py).
Every error names the provider, the operation, the HTTP status and the provider's own message,
with any credential removed.

Bounded answers (runner/providers/answers.py): `send` reads every body as a stream and stops at
its cap (a control-plane answer, a download, an answer carrying command output), failing with a
named provider failure; an announced Content-Length above the cap fails before any byte is read.
"""

from __future__ import annotations

import os
import time
from abc import abstractmethod
from urllib.parse import urlsplit

import httpx

from runner.providers.answers import AnswerLimits, Capped, Reader
from runner.providers.base import (
    CredentialsRejected,
    DoctorCheck,
    NotReady,
    Provider,
    ProviderError,
)
from runner.providers.credentials import MissingCredential, credential, redact

KEEPALIVE_EXPIRY_S = 300.0
NOT_READY_STATUS = {502, 503, 504}
DETAIL_CHARS = 300  # of a provider's error message kept in ours


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


class HTTPProvider(Provider):
    """An adapter over a provider's HTTP API, authenticated by one credential.

    A subclass names its credential, sets `api_url` in its constructor and says how `bench doctor`
    probes the API (`_doctor_probe`) and what else it reports (`_doctor_details`).
    """

    credential_variable = ""  # the environment variable (or `<name>_FILE`) holding the credential
    credential_setting = "api_key"  # the constructor setting that may hold it instead
    api_url = ""

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self._key: str | None = None
        self._credential_problem: str | None = None  # a `_FILE` that is unreadable or empty
        try:
            self._key = credential(self.credential_variable, self.settings, self.credential_setting)
        except MissingCredential as exc:
            self._credential_problem = str(exc)
        self._client: httpx.Client | None = None
        self.limits = AnswerLimits.from_settings(self.settings)

    def _setting(self, key: str, variable: str, default: str = "") -> str:
        """A constructor setting, else the environment variable, else the default."""
        return self.settings.get(key) or os.environ.get(variable, "").strip() or default

    def _url(self, key: str, variable: str, default: str) -> str:
        return self._setting(key, variable, default).rstrip("/")

    def _required(self) -> list[tuple[str, str | None]]:
        """(variable, value) for everything the adapter cannot work without, credential first."""
        return [(self.credential_variable, self._key)]

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = make_client()
        return self._client

    def configuration_problem(self) -> str | None:
        if self._credential_problem:
            return self._credential_problem
        missing = [
            f"{name} or {name}_FILE" if name == self.credential_variable else name
            for name, value in self._required()
            if not value
        ]
        return "not configured: set " + ", ".join(missing) if missing else None

    def _refuse_if_unconfigured(self, operation: str) -> None:
        problem = self.configuration_problem()
        if problem:
            raise ProviderError(f"{self.slug} {operation}: {problem}", operation, "unconfigured")

    def endpoints(self) -> list[tuple[str, int]]:
        return [host_port(self.api_url)]

    def doctor(self) -> list[DoctorCheck]:
        problem = self.configuration_problem()
        if problem:
            # An optional provider without an account is no fault of this machine.
            return [DoctorCheck.not_configured("credentials", problem)]
        started = time.monotonic()
        try:
            self._doctor_probe()
        except ProviderError as exc:
            return [DoctorCheck("api", False, str(exc))]
        elapsed = (time.monotonic() - started) * 1000
        names = ", ".join(name for name, _ in self._required())
        return [
            DoctorCheck("credentials", True, f"{names} set"),
            DoctorCheck("api", True, f"{self.api_url} answered a sandbox list in {elapsed:.0f} ms"),
            *self._doctor_details(),
        ]

    @abstractmethod
    def _doctor_probe(self) -> None:
        """One cheap authenticated call (a sandbox list); raises ProviderError when it fails."""

    def _doctor_details(self) -> list[DoctorCheck]:
        return []


def send(
    client: httpx.Client,
    method: str,
    url: str,
    reader: Reader,
    cap: int,
    what: str = "the answer",
    setting: str = "",
    **kwargs,
) -> httpx.Response:
    """`client.request`, but the body is streamed and read up to `cap` bytes (after any
    content decoding, so a compressed answer cannot swell past it). Transport errors are left
    to the caller, which maps them as before."""
    response = client.send(client.build_request(method, url, **kwargs), stream=True)
    try:
        return read_capped(response, reader, cap, what, setting)
    finally:
        response.close()


def read_capped(
    response: httpx.Response, reader: Reader, cap: int, what: str = "the answer", setting: str = ""
) -> httpx.Response:
    """A streamed response read into memory, at most `cap` bytes of body (Content-Length is
    trusted only to fail early, never to size a buffer): the same answer, body read."""
    capped = Capped(reader, cap, what, setting)
    declared = response.headers.get("Content-Length", "")
    capped.announced(int(declared) if declared.strip().isdigit() else None)
    # Without a content encoding there is nothing to decode: the raw stream is cheaper to read.
    encoded = response.headers.get("Content-Encoding", "identity").strip().lower() != "identity"
    body = capped.read(response.iter_bytes() if encoded else response.iter_raw())
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code, headers=headers, content=body, request=response.request
    )


def host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


def transport_error(
    exc: httpx.HTTPError,
    provider: str,
    operation: str,
    data_plane: bool = False,
    secrets: tuple[str | None, ...] = (),
) -> ProviderError:
    kind = type(exc).__name__
    message = f"{provider} {operation}: {kind}: {redact(str(exc), *secrets)}"
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
    detail = _detail(response, secrets)
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
    kind = CredentialsRejected if status in (401, 403) else ProviderError
    return kind(f"{provider} {operation}: HTTP {status}: {detail}", operation=operation, code=code)


def _detail(response: httpx.Response, secrets: tuple[str | None, ...] = ()) -> str:
    """The provider's own message, secrets removed before it is cut to DETAIL_CHARS: cut first,
    a key that straddles the cut would lose its tail and no longer match (most of it shown)."""
    return redact(_message(response), *secrets)[:DETAIL_CHARS]


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or "(empty body)"
    if isinstance(body, dict):
        parts = [str(body.get(k)) for k in ("error_code", "code", "message") if body.get(k)]
        error = body.get("error")
        if isinstance(error, dict):
            parts += [str(error.get(k)) for k in ("code", "message") if error.get(k)]
        elif isinstance(error, str):
            parts.append(error)
        if parts:
            return ": ".join(parts)
    return str(body)
