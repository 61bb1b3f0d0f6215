"""The provider adapter interface. One module per provider in runner/providers/.

Adapters translate these calls into a backend's API and raise the errors below, so the lifecycle
can classify every failure (not ready, provider failure, timeout, a rejected credential) without
knowing the backend.
Adapters never time anything: the lifecycle times calls from adapter entry on the job host.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime


class ProviderError(Exception):
    """The provider or its sandbox failed (create, exec transport, transfer, destroy...)."""

    def __init__(self, message: str, operation: str = "", code: str = ""):
        super().__init__(message)
        self.operation = operation
        self.code = code


class CredentialsRejected(ProviderError):
    """The provider refused the credential we sent (HTTP 401 or 403, an SDK's auth error).

    Ours, not the provider's (common methodology, "Outcomes"): the credential is part of our
    configuration, so the lifecycle records a benchmark error, which stops the unit on this
    provider for the run instead of charging the provider and refilling a trial that would be
    refused the same way. Every adapter raises this one class; the lifecycle decides the owner.
    """


class NotReady(ProviderError):
    """The sandbox does not accept commands yet (HTTP 502/503/504, refused, reset)."""


class ExecTimeout(ProviderError):
    """A command did not return within its time limit; the sandbox may still answer."""


class NotDeclared(ProviderError):
    """The provider's declaration does not include the operation (snapshot, fork...)."""


@dataclass(frozen=True)
class SandboxSpec:
    cpus: int
    memory_mib: int
    label: str  # the batch label every sandbox of a run carries, for cleanup
    lifetime_s: float  # provider-enforced: the sandbox is gone after this even if we crash
    image: str = ""  # provider-specific image reference; "" is the standard image
    network: bool = False  # benchmarks run with the network cut off unless they say otherwise
    disk_mib: int = 0  # 0: provider default
    # Create's unique per-trial layer (runner/layers.py): a snapshot this adapter made of a sandbox
    # of its standard image. Create starts from it through the provider's own image or template
    # mechanism, the same call a create from the standard image makes.
    layer: str = ""
    # The trial forks this sandbox (Fork): a provider that forks only some sandbox classes starts
    # it in one that can, and every other trial in its default class.
    forks: bool = False


@dataclass
class Sandbox:
    id: str
    label: str
    created_at: datetime | None = None
    # What the sandbox reports and how the request was honoured: cpus, memory_mib,
    # enforced ({"cpus": bool, "memory": bool}) and notes when the kernel cannot enforce a limit.
    facts: dict = field(default_factory=dict)
    # Adapter-private state (process handles, container objects); never serialized.
    handle: object = None
    # Snapshots or temporary images made to build this sandbox (a fork's), which must outlive
    # it: the lifecycle deletes them once the sandbox is gone and confirms them gone.
    made_snapshots: list[str] = field(default_factory=list)


@dataclass
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes


@dataclass
class LiveSandbox:
    id: str
    label: str
    created_at: datetime | None = None


@dataclass
class DoctorCheck:
    name: str
    ok: bool
    detail: str
    # Nothing was checked: an optional provider nobody configured. `detail` says what setting
    # or install would enable it; doctor prints SKIP and counts no failure.
    skipped: bool = False

    @classmethod
    def not_configured(cls, name: str, enable: str) -> DoctorCheck:
        return cls(name, True, enable, skipped=True)

    @property
    def verdict(self) -> str:
        return "SKIP" if self.skipped else "PASS" if self.ok else "FAIL"


class Provider(ABC):
    """A sandbox backend. Instances are cheap; create one per worker."""

    slug: str = ""
    # How Create's unique per-trial layer becomes something create starts from, in the
    # provider's own terms (runner/layers.py); "" for an adapter that builds none.
    layer_mechanism: str = ""
    # Why an adapter without a layer mechanism needs none (no image a create could find cached);
    # "" where a create without the layer would measure something else.
    layer_needless: str = ""
    # A snapshot goes with the sandbox it was taken of: the layer's base sandbox is kept until the
    # trial's cleanup instead of being destroyed before the timed create.
    snapshot_needs_source: bool = False
    # exec's stdin costs requests of its own inside exec (a file the adapter uploads, where its
    # API carries no stdin that survives its transport, or stdin calls of a remote process API):
    # they would count in a guest call's total time, so the lifecycle hands the guest clock's key
    # over by an untimed upload of its own instead (runner/clock.py).
    stdin_adds_requests: bool = False

    def __init__(self, declaration, settings: dict | None = None):
        self.declaration = declaration
        self.settings = settings or {}

    @abstractmethod
    def create(self, spec: SandboxSpec) -> Sandbox: ...

    @abstractmethod
    def exec(
        self,
        sandbox: Sandbox,
        argv: list[str],
        timeout: float,
        stdin: bytes | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run argv in the sandbox. Raise NotReady, ExecTimeout or ProviderError."""

    @abstractmethod
    def upload(self, sandbox: Sandbox, path: str, data: bytes) -> None: ...

    @abstractmethod
    def download(self, sandbox: Sandbox, path: str) -> bytes: ...

    @abstractmethod
    def destroy(self, sandbox: Sandbox) -> None: ...

    @abstractmethod
    def is_gone(self, sandbox_id: str) -> bool:
        """True once the sandbox and everything it held are confirmed deleted."""

    @abstractmethod
    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        """Live sandboxes of this provider's account, optionally only those with `label`."""

    def memory_in_use(self, sandbox: Sandbox) -> int | None:
        """The bytes `sandbox` holds now as the job host counts them (its cgroup: processes,
        tmpfs and the page cache charged to it), where it runs on the job host and the adapter
        can read that; None elsewhere. Density's memory per idle sandbox."""
        return None

    def endpoints(self) -> list[tuple[str, int]]:
        """API endpoints (host, port) for the network-path baseline; none for local backends."""
        return []

    def doctor(self) -> list[DoctorCheck]:
        return []

    def configuration_problem(self) -> str | None:
        """Why this provider cannot run here (credentials unset, SDK not installed), or None.

        A run that includes a provider with a problem is refused before it starts.
        """
        return None

    # Optional operations, present only where the declaration lists them.
    def snapshot(self, sandbox: Sandbox) -> str:
        raise NotDeclared(f"{self.slug} does not declare snapshots", operation="snapshot")

    def check_snapshot(self, sandbox: Sandbox, snapshot_id: str) -> None:
        """Untimed, right after the timed snapshot call: confirm the provider kept the snapshot,
        where its snapshot call can return without it (Daytona). Raises ProviderError."""
        return None  # most snapshot calls answer only once the snapshot is kept

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        raise NotDeclared(f"{self.slug} does not declare restore", operation="restore")

    def delete_snapshot(self, snapshot_id: str) -> None:
        raise NotDeclared(f"{self.slug} does not declare snapshots", operation="snapshot")

    def snapshot_gone(self, snapshot_id: str) -> bool:
        """True once the snapshot (or temporary image) is confirmed deleted: by default, once the
        provider's own listing of snapshots (`list_snapshots`, where it has one) no longer holds
        it."""
        list_snapshots = getattr(self, "list_snapshots", None)
        if list_snapshots is None:
            raise NotDeclared(f"{self.slug} does not declare snapshots", operation="snapshot")
        return all(snapshot.id != snapshot_id for snapshot in list_snapshots())

    def fork(self, sandbox: Sandbox, spec: SandboxSpec) -> Sandbox:
        raise NotDeclared(f"{self.slug} does not declare fork", operation="fork")


def fork_by_snapshot(provider: Provider, sandbox: Sandbox, spec: SandboxSpec) -> Sandbox:
    """A fork made of a snapshot restored at once, for backends with no fork call of their own.

    The snapshot becomes the copy's temporary image: the lifecycle deletes it after the copy.
    """
    snapshot_id = provider.snapshot(sandbox)
    try:
        copy = provider.restore(snapshot_id, spec)
    except BaseException:
        with contextlib.suppress(Exception):
            provider.delete_snapshot(snapshot_id)
        raise
    copy.made_snapshots.append(snapshot_id)
    copy.facts["forked_from"] = sandbox.id
    return copy
