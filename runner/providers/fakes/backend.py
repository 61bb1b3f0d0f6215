"""What stands behind every fake: real sandboxes from the local provider, with the cloud's rules.

Each fake sandbox is a bubblewrap sandbox made through runner.providers.local's public adapter, so
its commands, files, /proc/uptime and $EPOCHREALTIME are real. On top, the backend keeps what a
cloud control plane keeps: metadata, a lifetime after which the sandbox is gone (a reaper thread
destroys it, and its id answers 404 from then on), a moment before which the data plane is not
ready (the fake answers 502 until then), a concurrency cap and a create-rate cap (Busy, which
each fake answers as its provider does: status, body, Retry-After), and a table of running
processes so a client can signal one by its number. A box can start from one of the local
provider's snapshots (a copy of another's files), for a fake's snapshots and forks.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from runner.declarations import get_declaration
from runner.providers.base import ExecResult, ProviderError, Sandbox, SandboxSpec
from runner.providers.local import LocalProvider

# Room for the fake's own bookkeeping after the lifetime it enforces: the local sandbox must not
# end on its own before the reaper has marked it expired.
LOCAL_MARGIN_S = 30.0


# A create arriving this much early against the rate window is still admitted: a client pacing at
# exactly the documented rate reaches the server with jitter (two trials' creates spaced 1 s
# apart by the chain arrived 0.7 s apart on two cores at a load of 15), and must not be refused
# for it; at most half the spacing the window allows, so creates sent at once are still refused.
ARRIVAL_JITTER_S = 0.5


class Busy(Exception):
    """A plan limit was hit: `kind` is "concurrency" or "rate", `limit` the number in force."""

    def __init__(self, message: str, retry_after_s: int, kind: str = "rate", limit: float = 0):
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.kind = kind
        self.limit = limit


@dataclass(frozen=True)
class CreateWindow:
    """At most `count` creates in any `window_s` seconds, as providers state their rates."""

    count: int
    window_s: float

    @classmethod
    def per_second(cls, rate: float) -> CreateWindow:
        """A rate given per second: under one a second, one create per 1/rate seconds."""
        return cls(int(rate), 1.0) if rate >= 1 else cls(1, 1.0 / rate)

    def words(self) -> str:
        if self.window_s == 1.0:
            return f"{self.count}/s"
        return f"{self.count} per {self.window_s:g} s"


@dataclass
class FakeProcess:
    number: int
    argv: list[str]
    pidfile: str
    done: threading.Event = field(default_factory=threading.Event)
    result: ExecResult | None = None
    error: str | None = None
    stdin: bytearray = field(default_factory=bytearray)
    stdin_closed: threading.Event = field(default_factory=threading.Event)
    killed: bool = False


@dataclass
class Box:
    id: str
    label: str
    metadata: dict
    created_at: datetime
    expires_at: float  # epoch seconds
    ready_at: float  # monotonic: the data plane answers 502 until then
    cpus: int
    memory_mib: int
    local: Sandbox | None = None
    state: str = "running"  # running | stopped | expired | failed
    processes: dict[int, FakeProcess] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # per-fake fields (tokens, session tables)


def declared_limits(slug: str) -> dict:
    """A fake's `max_concurrent` and `create_rate_per_s`: the limits its provider's declaration
    documents (None where it documents none)."""
    declaration = get_declaration(slug)
    return {
        "max_concurrent": declaration.concurrent_sandboxes,
        "create_rate_per_s": declaration.create_rate_per_s,
    }


class Backend:
    def __init__(
        self,
        root: str | Path,
        *,
        ready_delay_s: float = 0.0,
        max_concurrent: int | None = 20,
        create_rate_per_s: float | None = None,
        create_window: CreateWindow | None = None,
        prefix: str = "fk",
    ):
        self.local = LocalProvider(get_declaration("local"), {"root": str(root)})
        self.ready_delay_s = ready_delay_s
        self.max_concurrent = max_concurrent  # None: no cap of the fake's own
        self.create_window = create_window
        if create_rate_per_s:
            self.create_window = CreateWindow.per_second(create_rate_per_s)
        self.prefix = prefix
        self.boxes: dict[str, Box] = {}
        self.gone: dict[str, str] = {}  # id -> why (killed, expired)
        self._admitted: list[float] = []  # monotonic instants of the creates in the window
        self.clock = time.monotonic  # what the rate window reads (a test sets the time)
        self._numbers = itertools.count(1000)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._background: list[threading.Thread] = []
        self._reaper = threading.Thread(target=self._reap, name="fake-reaper", daemon=True)
        self._reaper.start()

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def create_rate_per_s(self) -> float | None:
        window = self.create_window
        return window.count / window.window_s if window else None

    @create_rate_per_s.setter
    def create_rate_per_s(self, rate: float | None) -> None:
        self.create_window = CreateWindow.per_second(rate) if rate else None

    def running(self) -> list[Box]:
        """The boxes holding a place: a box still being created holds one too (Modal's create
        returns first)."""
        with self._lock:
            return [b for b in self.boxes.values() if b.state in ("running", "creating")]

    def admit(self) -> None:
        """Raise Busy at the concurrency or creation-rate cap (checked before any work)."""
        with self._lock:
            most = self.max_concurrent
            if most is not None and len(self.running()) >= most:
                raise Busy(f"concurrent sandbox limit of {most} reached", 30, "concurrency", most)
            now = self.clock()
            window = self.create_window
            if window:
                jitter = min(ARRIVAL_JITTER_S, window.window_s / window.count / 2)
                since = now - window.window_s + jitter
                self._admitted = [t for t in self._admitted if t > since]
                if len(self._admitted) >= window.count:
                    wait = self._admitted[0] + window.window_s - now
                    # Modal's words; the other fakes' providers give none that boxbench has read.
                    message = f"Sandbox creation rate limit ({window.words()}) exceeded"
                    raise Busy(message, max(1, math.ceil(wait)), "rate", window.count)
            self._admitted.append(now)

    def reserve(
        self,
        lifetime_s: float,
        label: str = "",
        metadata: dict | None = None,
        cpus: int = 2,
        memory_mib: int = 4096,
        box_id: str | None = None,
    ) -> Box:
        """A new box record, not yet backed by a local sandbox (see start); `box_id` when the
        provider lets the client name it (Vercel's named sandboxes)."""
        box = Box(
            id=box_id or f"{self.prefix}{uuid.uuid4().hex[:18]}",
            label=label,
            metadata=dict(metadata or {}),
            created_at=datetime.now(UTC),
            expires_at=time.time() + lifetime_s,
            ready_at=time.monotonic() + self.ready_delay_s,
            cpus=cpus,
            memory_mib=memory_mib,
            state="creating",
        )
        with self._lock:
            self.boxes[box.id] = box
        return box

    def start(self, box: Box, network: bool = False, snapshot: str | None = None) -> None:
        """Make the local sandbox behind `box`, holding the files of the local provider's
        `snapshot` when given; on failure the box is marked failed and raised."""
        lifetime = max(1.0, box.expires_at - time.time()) + LOCAL_MARGIN_S
        spec = SandboxSpec(
            cpus=box.cpus,
            memory_mib=box.memory_mib,
            label=f"fake-{box.label}"[:60],
            lifetime_s=lifetime,
            network=network,
        )
        try:
            if snapshot is None:
                box.local = self.local.create(spec)
            else:
                box.local = self.local.restore(snapshot, spec)
        except ProviderError:
            box.state = "failed"
            raise
        with self._lock:
            if box.state == "creating":
                box.state = "running"

    def get(self, box_id: str) -> Box | None:
        with self._lock:
            box = self.boxes.get(box_id)
        if box is None:
            return None
        live = box.state in ("running", "creating")
        if live and time.time() >= box.expires_at:
            self._retire(box, "expired")
            return None
        return box

    def set_timeout(self, box: Box, seconds: float) -> None:
        box.expires_at = time.time() + seconds

    def kill(self, box: Box, why: str = "killed") -> None:
        self._retire(box, why)

    def stop(self, box: Box) -> None:
        """Stop without forgetting (Vercel): the record stays listed as stopped."""
        self._destroy_local(box)
        box.state = "stopped"

    def _retire(self, box: Box, why: str) -> None:
        with self._lock:
            if self.boxes.pop(box.id, None) is None:
                return
            self.gone[box.id] = why
        self._destroy_local(box)
        box.state = why

    def _destroy_local(self, box: Box) -> None:
        for process in list(box.processes.values()):
            process.killed = True
        if box.local is not None:
            # On failure the local sandbox still ends on its own at its lifetime.
            with contextlib.suppress(ProviderError):
                self.local.destroy(box.local)
            box.local = None

    def _reap(self) -> None:
        while not self._stop.wait(0.2):
            now = time.time()
            with self._lock:
                expired = [
                    b
                    for b in self.boxes.values()
                    if b.state in ("running", "creating") and now >= b.expires_at
                ]
            for box in expired:
                self._retire(box, "expired")

    def in_background(self, target, *args) -> None:
        """Run `target(*args)` on a thread of its own, as a provider answers before its work is
        done (provisioning, a stop). close() waits for these threads, so none of them makes a
        sandbox in a directory its test has already removed."""
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._background = [t for t in self._background if t.is_alive()] + [thread]
        thread.start()

    def sleep_unless_closed(self, seconds: float) -> bool:
        """Sleep `seconds`; False at once when the backend closes meanwhile."""
        return not self._stop.wait(seconds)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            background = list(self._background)
        for thread in background:
            thread.join(60)
        with self._lock:
            boxes = list(self.boxes.values())
        for box in boxes:
            self._retire(box, "killed")

    # -- data plane ----------------------------------------------------------------------------

    def ready(self, box: Box) -> bool:
        return box.state == "running" and box.local is not None and time.monotonic() >= box.ready_at

    def spawn(
        self,
        box: Box,
        argv: list[str],
        *,
        env=None,
        workdir=None,
        stdin: bool = False,
        timeout_s: float = 3600.0,
    ) -> FakeProcess:
        """Start argv in a thread; its number can be signalled. With stdin, it waits for the
        input to be closed first (the fake feeds the whole input at once)."""
        number = next(self._numbers)
        pidfile = f"/tmp/.fake-pid-{number}"
        process = FakeProcess(number=number, argv=argv, pidfile=pidfile)
        if not stdin:
            process.stdin_closed.set()
        box.processes[number] = process
        # The command records its pid (a process-group leader: the local helper starts each
        # command in a session of its own) so a signal reaches it and its children.
        wrapped = ["/bin/sh", "-c", f'echo $$ > {pidfile}; exec "$@"', "sh", *argv]

        def run():
            try:
                process.stdin_closed.wait()
                local = box.local
                if local is None or process.killed:
                    raise ProviderError("the sandbox is gone")
                process.result = self.local.exec(
                    local,
                    wrapped,
                    timeout=timeout_s,
                    stdin=bytes(process.stdin) or None,
                    workdir=workdir,
                    env=env,
                )
            except ProviderError as exc:
                process.error = str(exc)
            finally:
                process.done.set()
                box.processes.pop(number, None)

        threading.Thread(target=run, name=f"fake-proc-{number}", daemon=True).start()
        return process

    def signal(self, box: Box, process: FakeProcess, signal_name: str = "KILL") -> None:
        process.killed = True
        if box.local is None:
            return
        # The whole process group: the command and everything it started.
        script = f'p=$(cat {process.pidfile} 2>/dev/null) && kill -s {signal_name} -- -"$p"'
        with contextlib.suppress(ProviderError):
            self.local.exec(box.local, ["/bin/bash", "-c", script + " 2>/dev/null; true"], 10)

    def run(
        self,
        box: Box,
        argv: list[str],
        timeout_s: float,
        *,
        env=None,
        workdir=None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        if box.local is None:
            raise ProviderError("the sandbox is gone")
        return self.local.exec(box.local, argv, timeout_s, stdin=stdin, workdir=workdir, env=env)

    def write_file(self, box: Box, path: str, data: bytes) -> str | None:
        """None on success, else the error text."""
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        result = self.run(box, ["/bin/sh", "-c", script, "sh", path], 300, stdin=data)
        return None if result.exit_code == 0 else result.stderr.decode(errors="replace").strip()

    def read_file(self, box: Box, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist or is not a regular file."""
        script = '[ -f "$1" ] || exit 44; exec cat -- "$1"'
        result = self.run(box, ["/bin/sh", "-c", script, "sh", path], 300)
        return result.stdout if result.exit_code == 0 else None
