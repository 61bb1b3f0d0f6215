"""A fault-injecting wrapper around a real provider: every call reaches the real `local`
sandbox unless a fault is armed, so each lifecycle rule is proved against real sandboxes."""

import dataclasses
import socket
import threading
import time

from runner.providers.base import ExecResult, ExecTimeout, NotReady, Provider, ProviderError
from runner.providers.opensandbox.adapter import OpenSandboxProvider


class FaultyProvider(Provider):
    slug = "faulty"

    def __init__(self, inner, **faults):
        super().__init__(inner.declaration, {})
        self.inner = inner
        # Create's layer: the wrapper passes no snapshot through, so it builds none.
        self.layer_needless = inner.layer_needless or "a fault-injecting wrapper builds no layers"
        self.stdin_adds_requests = inner.stdin_adds_requests
        self.create_errors = faults.get("create_errors", 0)  # first N creates raise
        self.create_error_code = faults.get("create_error_code", "")
        self.not_ready = faults.get("not_ready", 0)  # first N execs answer NotReady
        self.hang_on = faults.get("hang_on")  # exec whose argv contains this string hangs
        self.step_clock_ms = faults.get("step_clock_ms", 0)  # shift the guest wall clock
        self.destroy_errors = faults.get("destroy_errors", 0)
        self.never_gone = faults.get("never_gone", False)
        self.create_delay_s = faults.get("create_delay_s", 0)  # every create hangs this long
        self.destroy_delay_s = faults.get("destroy_delay_s", 0)
        # Every create waits for this event (a test sets it): a create hung until released.
        self.create_gate: threading.Event | None = faults.get("create_gate")
        self.create_returned = threading.Event()  # set when a create has returned a sandbox
        # An adapter defect: the first N calls of an operation raise this non-ProviderError.
        self.crash = faults.get("crash")  # (operation, exception)
        self.crashes = faults.get("crashes", 1)
        self.calls = []

    def _maybe_crash(self, operation):
        if self.crash and self.crash[0] == operation and self.crashes:
            self.crashes -= 1
            raise self.crash[1]

    def create(self, spec):
        self.calls.append("create")
        self._maybe_crash("create")
        time.sleep(self.create_delay_s)
        if self.create_gate is not None and not self.create_gate.wait(60):
            raise ProviderError("injected create hang was never released", "create")
        if self.create_errors:
            self.create_errors -= 1
            raise ProviderError("injected create error", "create", self.create_error_code)
        sandbox = self.inner.create(spec)
        self.create_returned.set()
        return sandbox

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None):
        self.calls.append("exec")
        self._maybe_crash("exec")
        if self.not_ready:
            self.not_ready -= 1
            raise NotReady("injected HTTP 503", "exec")
        if self.hang_on and any(self.hang_on in part for part in argv):
            time.sleep(min(timeout, 0.2))
            raise ExecTimeout(f"injected hang past {timeout} s", "exec")
        result = self.inner.exec(sandbox, argv, timeout, stdin, workdir, env)
        if self.step_clock_ms and b"__SANDBOX_CLOCK" in result.stderr:
            result = ExecResult(
                result.exit_code, result.stdout, _step(result.stderr, self.step_clock_ms)
            )
        return result

    def upload(self, sandbox, path, data):
        return self.inner.upload(sandbox, path, data)

    def download(self, sandbox, path):
        return self.inner.download(sandbox, path)

    def destroy(self, sandbox):
        self.calls.append("destroy")
        self._maybe_crash("destroy")
        time.sleep(self.destroy_delay_s)
        if self.destroy_errors:
            self.destroy_errors -= 1
            raise ProviderError("injected destroy error", "destroy")
        return self.inner.destroy(sandbox)

    def is_gone(self, sandbox_id):
        return False if self.never_gone else self.inner.is_gone(sandbox_id)

    def list_sandboxes(self, label=None):
        self._maybe_crash("list")
        return self.inner.list_sandboxes(label)


def _step(stderr: bytes, ms: float) -> bytes:
    """Move the trailer's end wall-clock reading by `ms`, as a guest clock step would."""
    head, _, trailer = stderr.rpartition(b"__SANDBOX_CLOCK ")
    fields = trailer.split()  # the call's key, then wall start, wall end, uptime start and end
    fields[-3] = f"{float(fields[-3]) + ms / 1000:.6f}".encode()
    return head + b"__SANDBOX_CLOCK " + b" ".join(fields) + b"\n"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed): connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class BackendOutage(FaultyProvider):
    """`local`, whose backend goes away for `down_s` (on `clock`) from the first create on: while
    it is away, create and list go to a real OpenSandbox adapter aimed at a closed loopback port,
    so they raise exactly what that adapter raises when its server refuses connections."""

    def __init__(self, inner, clock, down_s: float, **faults):
        super().__init__(inner, **faults)
        self.clock, self.down_s = clock, down_s
        self.away = OpenSandboxProvider(None, {"url": f"http://127.0.0.1:{closed_port()}"})
        self.down_from: float | None = None
        self.refused = {"create": 0, "list": 0}
        self.created = 0
        self.on_refused_list = None  # called at each refused list (a probe during the wait)

    def _down(self) -> bool:
        return self.down_from is not None and self.clock() < self.down_from + self.down_s

    def create(self, spec):
        if self.down_from is None:
            self.down_from = self.clock()
        if self._down():
            self.refused["create"] += 1
            return self.away.create(dataclasses.replace(spec, image="refused"))
        sandbox = super().create(spec)
        self.created += 1
        return sandbox

    def list_sandboxes(self, label=None):
        if self._down():
            self.refused["list"] += 1
            if self.on_refused_list is not None:
                self.on_refused_list()
            return self.away.list_sandboxes(label)
        return super().list_sandboxes(label)
