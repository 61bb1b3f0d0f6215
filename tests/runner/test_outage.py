"""Telling an unreachable backend from the adapter's error, and waiting it out (runner/outage)."""

import errno
import socket
import threading

import httpx
import pytest
import requests

from runner import outage
from runner.providers.base import NotReady, ProviderError, SandboxSpec
from runner.providers.http import transport_error
from runner.providers.opensandbox.adapter import OpenSandboxProvider
from tests.runner.faults import closed_port


def wrapped(cause: BaseException, message="create: the adapter's words") -> ProviderError:
    """An adapter's error raised `from` the transport's, as the adapters do."""
    try:
        raise ProviderError(message, "create") from cause
    except ProviderError as exc:
        return exc


def test_it_reads_a_refused_connection_from_the_real_opensandbox_adapter():
    adapter = OpenSandboxProvider(None, {"url": f"http://127.0.0.1:{closed_port()}"})
    with pytest.raises(NotReady) as refused:
        adapter.create(SandboxSpec(1, 512, "bb-outage", 60, image="any"))
    assert outage.unreachable(refused.value) == "connection refused"
    assert outage.probe(adapter).startswith("connection refused (NotReady: list: http://127.0.0.1:")


def test_it_reads_a_refused_connection_as_the_cloud_adapters_raise_it():
    # e2b, daytona and vercel map httpx's error and raise it `from None`: the cause is hidden
    # from tracebacks, but still the error's context.
    def create():
        try:
            httpx.post(f"http://127.0.0.1:{closed_port()}/sandboxes", timeout=5)
        except httpx.HTTPError as exc:
            raise transport_error(exc, "e2b", "create") from None

    with pytest.raises(ProviderError, match="Connection refused") as mapped:
        create()
    assert outage.unreachable(mapped.value) == "connection refused"


def test_it_reads_a_refused_connection_through_requests_as_the_docker_sdk_raises_it():
    with pytest.raises(requests.ConnectionError) as refused:
        requests.get(f"http://127.0.0.1:{closed_port()}/version", timeout=5)
    assert outage.unreachable(wrapped(refused.value)) == "connection refused"


@pytest.mark.parametrize(
    ("cause", "reason"),
    [
        (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), "connection reset"),
        (OSError(errno.EHOSTUNREACH, "No route to host"), "host unreachable"),
        (OSError(errno.ETIMEDOUT, "Connection timed out"), "connect timed out"),
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "does not resolve"),
        (httpx.ConnectTimeout("timed out"), "connect timed out"),
        (httpx.ConnectError("no errno given"), "cannot connect"),
        (httpx.RemoteProtocolError("Server disconnected"), "closed the connection"),
    ],
)
def test_it_names_each_way_a_backend_cannot_be_reached(cause, reason):
    assert reason in outage.unreachable(wrapped(cause))


@pytest.mark.parametrize(
    "error",
    [
        ProviderError("create timed out after 0.3 s", "create", "timeout"),  # made it, then slow
        NotReady("create: HTTP 503: starting", "create", "503"),  # the backend answered
        wrapped(httpx.ReadTimeout("timed out")),  # connected; the answer was slow
        wrapped(TimeoutError("timed out")),  # a read timeout has no errno
        wrapped(OSError(errno.ENOSPC, "No space left on device")),
        RuntimeError("socket closed"),
        None,
    ],
)
def test_other_failures_are_not_an_unreachable_backend(error):
    assert outage.unreachable(error) is None


def test_a_cycle_of_causes_ends():
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    assert outage.unreachable(first) is None


class Clock:
    """Sleeps that move a clock on instead of waiting."""

    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def wait(clock, back_at: float, bound_s=90.0, abandon=lambda: None) -> outage.Wait:
    def check():
        return None if clock.now >= back_at else "connection refused (NotReady: list)"

    return outage.wait_for_backend(
        check,
        "connection refused",
        outage.WaitPolicy(bound_s=bound_s),
        sleep=clock.sleep,
        monotonic=clock.monotonic,
        abandon=abandon,
    )


def test_it_waits_with_backoff_until_the_backend_answers():
    clock = Clock()
    result = wait(clock, back_at=60.0)
    assert clock.sleeps == [1, 2, 4, 8, 15, 15, 15]  # doubling, capped at 15 s
    assert (result.back, result.probes, result.waited_s) == (True, 7, 60.0)
    assert result.last_error is None and result.reason == "connection refused"


def test_it_gives_up_at_its_bound_when_the_backend_never_answers():
    clock = Clock()
    result = wait(clock, back_at=float("inf"), bound_s=90.0)
    assert sum(clock.sleeps) == 90.0 and clock.sleeps[-1] == 15
    assert (result.back, result.probes, result.waited_s) == (False, 9, 90.0)
    assert result.last_error == "connection refused (NotReady: list)"

    short = wait(Clock(), back_at=float("inf"), bound_s=5.0)
    assert (short.back, short.probes, short.waited_s) == (False, 3, 5.0)  # 1 + 2 + 2
    none = wait(Clock(), back_at=0.0, bound_s=0)  # a bound of 0: no wait, and the chain stops
    assert (none.back, none.probes, none.waited_s) == (False, 0, 0.0)


def test_a_cancelled_run_ends_the_wait_instead_of_its_next_probe():
    clock = Clock()
    result = wait(
        clock, back_at=float("inf"), abandon=lambda: "cancelled" if clock.now > 5 else None
    )
    assert (result.back, result.abandoned, result.probes, result.waited_s) == (
        False,
        "cancelled",
        2,
        7.0,
    )  # probes at 1 s and 3 s; cancelled by 7 s


def test_the_gate_holds_the_other_workers_while_one_waits_and_stops_them_once_it_gave_up():
    waiting, release = threading.Event(), threading.Event()

    def never_back(reason):
        waiting.set()
        assert release.wait(60)
        return outage.Wait(reason=reason, started_at=0.0, waited_s=90.0, probes=9, back=False)

    gate = outage.BackendGate(never_back)
    assert gate.open()
    waiter = threading.Thread(target=gate.wait_out, args=("connection refused",))
    waiter.start()
    assert waiting.wait(60)
    opened = []
    other = threading.Thread(target=lambda: opened.append(gate.open()))
    other.start()
    other.join(0.3)
    assert other.is_alive()  # held: it starts no trial while the wait runs
    release.set()
    other.join(60)
    waiter.join(60)
    assert opened == [False] and gate.gave_up.probes == 9
    assert gate.wait_out("connection refused") is None  # nothing more to wait for


def test_the_gate_stays_open_after_the_backend_came_back():
    gate = outage.BackendGate(
        lambda reason: outage.Wait(reason=reason, started_at=0.0, probes=1, back=True)
    )
    assert gate.wait_out("connection refused").back
    assert gate.open() and gate.gave_up is None
