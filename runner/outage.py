"""A provider's backend that cannot be reached: telling it from the adapter's error, and waiting
it out before the chain starts another trial.

A create refused because the backend is away (connection refused or reset, a name that does not
resolve, a connect timeout) is a provider failure like any other and is refilled later. But a
trial started while the backend is still away fails the same way, so refills started at once
spend the unit's 2N attempts within the outage. The chain's workers therefore wait, with
backoff, probing the backend, for at most a bound (BOXBENCH_BACKEND_WAIT_SECONDS), before any
of them starts its next trial. No Django imports: tested directly.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx

from runner import waiting

# errno values of a connection that could not be made or was cut by the other side. A timeout
# without an errno (socket.timeout on a read) is not among them: the backend may be working.
UNREACHABLE_ERRNOS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.ECONNABORTED: "connection aborted",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
    errno.ETIMEDOUT: "connect timed out",
}
# Client errors whose class names say the connection was never made, for clients we do not
# import (the Docker SDK raises requests' errors).
CONNECT_ERROR_NAMES = {
    "requests.exceptions.ConnectionError",
    "urllib3.exceptions.NewConnectionError",
}


def unreachable(error: BaseException | None) -> str | None:
    """Why `error` says the backend cannot be reached ("connection refused", ...), or None when
    it is another failure (an answer the backend gave, a read that timed out after connecting).

    Adapters wrap the transport's error in their own (`raise ProviderError(...) from exc`, or
    `from None`, which keeps it as the context), so the whole chain of causes and contexts is
    read; the most specific reason found wins.
    """
    general = None
    for exc in _causes(error):
        if isinstance(exc, socket.gaierror):
            return "the backend's name does not resolve"
        if isinstance(exc, OSError) and exc.errno in UNREACHABLE_ERRNOS:
            return UNREACHABLE_ERRNOS[exc.errno]
        if isinstance(exc, httpx.ConnectTimeout):
            return "connect timed out"
        if isinstance(exc, httpx.ConnectError) or _named(exc) & CONNECT_ERROR_NAMES:
            general = general or "cannot connect"
        elif isinstance(exc, httpx.RemoteProtocolError):
            # The server went away mid-request (killed, restarting) without answering.
            general = general or "the server closed the connection without answering"
    return general


def _causes(error: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while error is not None and id(error) not in seen and len(seen) < 20:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _named(exc: BaseException) -> set[str]:
    return {f"{cls.__module__}.{cls.__qualname__}" for cls in type(exc).__mro__}


def probe(provider) -> str | None:
    """Ask the backend for its sandboxes (untimed, no sandbox made): None when it answers, even
    with an error of its own; else why it cannot be reached, naming the error."""
    try:
        provider.list_sandboxes()
    except Exception as exc:  # noqa: BLE001 - any answer at all means the backend is back
        reason = unreachable(exc)
        return f"{reason} ({type(exc).__name__}: {exc})" if reason else None
    return None


@dataclass(frozen=True)
class WaitPolicy:
    """Backoff between probes: `first_s`, doubling up to `cap_s`; all waits together at most
    `bound_s`, after which the backend is taken as gone for this chain."""

    bound_s: float = 90.0
    first_s: float = 1.0
    factor: float = 2.0
    cap_s: float = 15.0

    @property
    def backoff(self) -> waiting.Backoff:
        return waiting.Backoff(self.first_s, self.factor, self.cap_s)


@dataclass
class Wait:
    """One wait for the backend, as the manifest keeps it (`backend_waits.<provider>`)."""

    reason: str  # why the create failed
    started_at: float  # epoch seconds
    waited_s: float = 0.0
    probes: int = 0
    back: bool = False
    last_error: str | None = None  # the last probe's answer while it was still away
    abandoned: str | None = None  # why the wait ended early (the run was cancelled)


def wait_for_backend(
    check: Callable[[], str | None],
    reason: str,
    policy: WaitPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
    abandon: Callable[[], str | None] = lambda: None,
) -> Wait:
    """Sleep with backoff, then `check()` the backend, until it answers or `policy.bound_s` of
    waiting has passed. `abandon()` names a reason to stop waiting (checked before each probe)."""
    wait = Wait(reason=reason, started_at=time.time())
    started = monotonic()
    # Its own loop, not waiting.poll_until: it pauses first (a create was just refused), never
    # sleeps past the bound, and keeps each probe as evidence.
    for pause in policy.backoff.pauses():
        left = policy.bound_s - (monotonic() - started)
        if left <= 0:
            break
        sleep(min(pause, left))
        wait.waited_s = round(monotonic() - started, 3)
        wait.abandoned = abandon()
        if wait.abandoned:
            break
        wait.probes += 1
        wait.last_error = check()
        if wait.last_error is None:
            wait.back = True
            break
    wait.waited_s = round(monotonic() - started, 3)
    return wait


class BackendGate:
    """What a chain's workers share about their backend: one waits out an outage at a time,
    the others are held before their next trial until that wait ends, and once a wait has given
    up no worker starts another trial."""

    def __init__(self, wait: Callable[[str], Wait]):
        self._wait = wait
        self._lock = threading.Lock()
        self.gave_up: Wait | None = None

    def wait_out(self, reason: str) -> Wait | None:
        """After a create the backend refused: the wait (back or not); None if an earlier wait
        already gave up, so there is nothing to wait for."""
        with self._lock:
            if self.gave_up is not None:
                return None
            wait = self._wait(reason)
            if not wait.back:
                self.gave_up = wait
            return wait

    def open(self) -> bool:
        """Before a worker's next trial: held while another worker waits; False once a wait gave
        up."""
        with self._lock:
            return self.gave_up is None
