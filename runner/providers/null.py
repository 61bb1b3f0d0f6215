"""The null adapter: sandboxes that cost nothing, for measuring the runner itself.

Create, exec, transfers and destroy return at once, so a trial on it spends only what the
control plane spends: the claim, the heartbeat, the lifecycle's own steps, the write of the
trial with its measurements and evidence, and the tally the database keeps beside it
(bench/bench_control_plane.py, docs/performance.md). Nothing runs: every command exits 0 with
no output, and a command in the guest clock wrapper (runner/clock.py) gets the wrapper's trailer,
with the call's key read from its stdin as the wrapper reads it, and two equal readings: a
runtime of 0 that passes the clock gate. The placement probe gets the facts of the size asked
for. So benchmarks made of `true` calls (latency-per-call) complete;
one that reads what its commands print fails as the benchmark's error.

The null provider is never offered: a plan that does not name it leaves it out, the admin's
start form and the public catalog do not list it, and a run that names it is marked a demo run,
which is never published (runner/declarations.py BENCH_ONLY).

Its sandboxes live in this process's memory, one account per process: each job host sees its
own, so a leftover or live-sandbox check on one host never counts another's.
"""

from __future__ import annotations

import itertools
import threading
import time
from datetime import UTC, datetime

from runner.clock import TRAILER
from runner.placement import PLACEMENT_PROBE
from runner.providers.base import (
    DoctorCheck,
    ExecResult,
    LiveSandbox,
    Provider,
    ProviderError,
    Sandbox,
    SandboxSpec,
)

_WRAPPED = TRAILER.decode()
_ids = itertools.count(1)
_lock = threading.Lock()
# id -> (label, created at, spec, files): the process's account.
_live: dict[str, tuple[str, datetime, SandboxSpec, dict[str, bytes]]] = {}


class NullProvider(Provider):
    slug = "null"
    layer_needless = "the null adapter starts no image: no cache could answer its create"

    def create(self, spec: SandboxSpec) -> Sandbox:
        sandbox_id = f"null-{next(_ids)}"
        created = datetime.now(UTC)
        with _lock:
            _live[sandbox_id] = (spec.label, created, spec, {})
        facts = {
            "cpus": spec.cpus,
            "memory_mib": spec.memory_mib,
            "enforced": {"cpus": False, "memory": False},
            "notes": ["the null adapter runs nothing: no limit to enforce"],
        }
        return Sandbox(id=sandbox_id, label=spec.label, created_at=created, facts=facts)

    def exec(
        self,
        sandbox: Sandbox,
        argv: list[str],
        timeout: float,
        stdin: bytes | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        spec = self._entry(sandbox.id, "exec")[2]
        script = argv[-1] if argv else ""
        if _WRAPPED in script:
            # The wrapper reads the call's key from the first line of its stdin.
            key = (stdin or b"").split(b"\n", 1)[0].decode(errors="replace")
            return ExecResult(0, b"", _trailer(key))
        if script == PLACEMENT_PROBE:
            facts = f"nproc={spec.cpus}\nmem_total_kib={spec.memory_mib * 1024}\nkernel=null\n"
            return ExecResult(0, facts.encode(), b"")
        return ExecResult(0, b"", b"")

    def upload(self, sandbox: Sandbox, path: str, data: bytes) -> None:
        files = self._entry(sandbox.id, "upload")[3]
        with _lock:
            files[path] = bytes(data)

    def download(self, sandbox: Sandbox, path: str) -> bytes:
        files = self._entry(sandbox.id, "download")[3]
        with _lock:
            data = files.get(path)
        if data is None:
            raise ProviderError(f"{sandbox.id}: no file {path} was uploaded", "download")
        return data

    def destroy(self, sandbox: Sandbox) -> None:
        with _lock:
            _live.pop(sandbox.id, None)

    def is_gone(self, sandbox_id: str) -> bool:
        with _lock:
            return sandbox_id not in _live

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        with _lock:
            entries = list(_live.items())
        return [
            LiveSandbox(id=sandbox_id, label=entry[0], created_at=entry[1])
            for sandbox_id, entry in entries
            if label is None or entry[0] == label
        ]

    def doctor(self) -> list[DoctorCheck]:
        return [
            DoctorCheck(
                "null", True, "runs nothing: for measuring the runner itself, never published"
            )
        ]

    def _entry(self, sandbox_id: str, operation: str):
        with _lock:
            entry = _live.get(sandbox_id)
        if entry is None:
            raise ProviderError(f"sandbox {sandbox_id} does not exist", operation)
        return entry


def _trailer(key: str) -> bytes:
    """The clock wrapper's trailer, with the call's key, for a command that took no time: both
    readings of each clock are equal (uptime in /proc/uptime's two decimals), so the runtime is 0
    and the gate passes."""
    wall = f"{time.time():.6f}"
    uptime = f"{time.monotonic():.2f}"
    return f"\n{_WRAPPED} {key} {wall} {wall} {uptime} {uptime}\n".encode()
