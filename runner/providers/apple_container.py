"""`apple-container`: Apple's `container` command-line tool, each sandbox a lightweight VM on
macOS on Apple silicon (github.com/apple/container, docs/command-reference.md).

The tool runs only on macOS on Apple silicon: anywhere else the provider is refused before a run
with the reason, and `bench doctor` says it is not available on this system. Every call is one
run of the CLI (BOXBENCH_APPLE_CONTAINER_CLI, default `container` on PATH), with its exit status
and its `Error: <kind>: "..."` text on stderr classified for the lifecycle.

- create: `container run --detach --rm --name <id>` with the labels `boxbench.batch=<label>`,
  `boxbench.kind=sandbox` and `boxbench.created=<ISO time>`, `--cpus`, `--memory <MiB>M`,
  `--workdir /app`, and `sleep <lifetime>` as the init process: the container stops when it ends
  and `--rm` removes it, so it outlives a crashed runner by at most its lifetime.
- exec: `container exec [--interactive] [--workdir] [--env K=V]... <id> timeout -s KILL <s> argv`;
  the tool's exec has no time limit, so timeout(1) in the container kills the command's whole
  process group at the limit (ExecTimeout); the CLI is also given a grace period past it.
- files: through exec (`cat`), the way every version of the tool can.
- destroy: `container delete --force <id>`; gone once `container inspect` no longer knows it.
- listing: `container list --all --format json`, filtered by the batch label.

The image (BOXBENCH_APPLE_CONTAINER_IMAGE, default the pinned standard image's tag) must have
been loaded with `container image load`; a benchmark's own image reference is used as given.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import time
import uuid
from datetime import UTC, datetime

from runner.providers.base import (
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    NotReady,
    Provider,
    ProviderError,
    Sandbox,
    SandboxSpec,
)

BATCH_LABEL = "boxbench.batch"
KIND_LABEL = "boxbench.kind"
CREATED_LABEL = "boxbench.created"
WORKDIR = "/app"
MISSING_FILE = 44  # the download script's exit status when the path is not a regular file
TIMED_OUT = (124, 128 + 9)  # timeout(1)'s status for an expired command, and for its SIGKILL
CLI_GRACE_S = 15.0  # how long past a command's limit the CLI itself may take
CONTROL_TIMEOUT_S = 120.0  # create, delete, inspect, list
ERROR_LINE = re.compile(r"Error:\s*(?:(?P<kind>[A-Za-z]+):\s*)?(?P<text>.*)", re.S)
# The tool's error kinds (ContainerizationError codes) by what they mean for the lifecycle.
GONE_KINDS = {"notFound"}
STATE_KINDS = {"invalidState", "exists", "invalidArgument"}
TOOL_ERROR = re.compile(rb"^Error: [A-Za-z]+: ")
# The API server (`container system start`) is down or restarting: try again.
UNAVAILABLE = re.compile(r"XPC connection|apiserver|interrupted|Connection invalid", re.I)


def platform_problem(system: str, machine: str) -> str | None:
    if system == "Darwin" and machine == "arm64":
        return None
    return (
        "not available on this system: Apple's container tool runs only on macOS on Apple "
        f"silicon (this is {system} {machine})"
    )


def _standard_tag() -> str:
    from runner.images.build import load_recipe, read_pin

    return load_recipe().tag(read_pin())


class AppleContainerProvider(Provider):
    slug = "apple-container"

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self.cli = (
            self.settings.get("cli")
            or os.environ.get("BOXBENCH_APPLE_CONTAINER_CLI", "").strip()
            or "container"
        )
        self.image = (
            self.settings.get("image")
            or os.environ.get("BOXBENCH_APPLE_CONTAINER_IMAGE", "").strip()
            or _standard_tag()
        )
        system, machine = self.settings.get("platform") or (platform.system(), platform.machine())
        self._problem = platform_problem(system, machine)
        if self._problem is None and shutil.which(self.cli) is None:
            self._problem = (
                f"not configured: the container tool ({self.cli}) is not installed or not on "
                "PATH: install it from github.com/apple/container/releases, then run "
                "`container system start`, or set BOXBENCH_APPLE_CONTAINER_CLI"
            )

    def configuration_problem(self) -> str | None:
        return self._problem

    # -- plumbing ---------------------------------------------------------------------------------

    def _run(
        self,
        operation: str,
        args: list[str],
        timeout: float = CONTROL_TIMEOUT_S,
        stdin: bytes | None = None,
        data_plane: bool = False,
    ) -> subprocess.CompletedProcess:
        """One run of the CLI; a failure raised as the lifecycle's error, the tool's words kept."""
        if self._problem:
            raise ProviderError(
                f"apple-container {operation}: {self._problem}", operation, "unconfigured"
            )
        try:
            done = subprocess.run(
                [self.cli, *args],
                input=stdin if stdin is not None else b"",
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ProviderError(
                f"apple-container {operation}: the container tool did not answer in {timeout:g} s",
                operation,
                "unavailable",
            ) from None
        except OSError as exc:
            raise ProviderError(
                f"apple-container {operation}: cannot run {self.cli}: {exc.strerror}",
                operation,
                "unconfigured",
            ) from None
        if done.returncode != 0 and not data_plane:
            raise self._error(operation, done)
        return done

    def _error(self, operation: str, done: subprocess.CompletedProcess) -> ProviderError:
        text = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
        found = ERROR_LINE.search(text)
        kind = (found.group("kind") or "") if found else ""
        message = f"apple-container {operation}: {text[-2000:]}"
        if kind in GONE_KINDS:
            return ProviderError(message, operation, "not_found")
        if UNAVAILABLE.search(text):
            return ProviderError(message, operation, "unavailable")
        if kind in STATE_KINDS:
            return ProviderError(message, operation, "wrong_state")
        return ProviderError(message, operation, "rejected")

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        name = f"boxbench-{uuid.uuid4().hex[:16]}"
        created_at = datetime.now(UTC)
        image = spec.image or self.image
        args = [
            "run",
            "--detach",
            "--rm",
            "--name",
            name,
            "--label",
            f"{BATCH_LABEL}={spec.label}",
            "--label",
            f"{KIND_LABEL}=sandbox",
            "--label",
            f"{CREATED_LABEL}={created_at.isoformat(timespec='seconds')}",
            "--cpus",
            str(spec.cpus),
            "--memory",
            f"{spec.memory_mib}M",
            "--workdir",
            WORKDIR,
            "--entrypoint",
            "sleep",
            image,
            f"{max(1, int(spec.lifetime_s))}",
        ]
        self._run("create", args, timeout=max(CONTROL_TIMEOUT_S, 300.0))
        return Sandbox(
            id=name,
            label=spec.label,
            created_at=created_at,
            facts={
                "image": image,
                "cpus": spec.cpus,
                "memory_mib": spec.memory_mib,
                # Each container is a VM of exactly this many CPUs and this much memory.
                "enforced": {"cpus": True, "memory": True},
            },
        )

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        if not argv:
            raise ProviderError("apple-container exec: empty argv", operation="exec")
        args = ["exec"]
        if stdin:
            args.append("--interactive")
        if workdir:
            args += ["--workdir", workdir]
        for key, value in (env or {}).items():
            args += ["--env", f"{key}={value}"]
        seconds = max(0.001, float(timeout))
        args += [sandbox.id, "timeout", "-s", "KILL", f"{seconds:.3f}", *argv]
        started = time.monotonic()
        done = self._run("exec", args, timeout=seconds + CLI_GRACE_S, stdin=stdin, data_plane=True)
        if done.returncode != 0 and TOOL_ERROR.match(done.stderr) and not self._running(sandbox):
            # The tool's own failure, not the command's exit status (a command may print the
            # same words: the container's state tells them apart).
            error = self._error("exec", done)
            if error.code == "unavailable":
                raise NotReady(str(error), operation="exec", code="unavailable")
            raise error
        if done.returncode in TIMED_OUT and time.monotonic() - started >= timeout:
            raise ExecTimeout(
                f"apple-container: command did not return within {timeout:g} s in {sandbox.id}",
                operation="exec",
            )
        return ExecResult(done.returncode, done.stdout, done.stderr)

    def _running(self, sandbox) -> bool:
        try:
            done = self._run("exec", ["inspect", sandbox.id])
        except ProviderError:
            return False
        return any(_state(record) == "running" for record in _records(done.stdout, "exec"))

    def upload(self, sandbox, path, data) -> None:
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        result = self.exec(sandbox, ["/bin/sh", "-c", script, "sh", path], 300, stdin=data)
        if result.exit_code != 0:
            raise ProviderError(
                f"apple-container upload: cannot write {path}: "
                f"{result.stderr.decode(errors='replace')}",
                operation="upload",
            )

    def download(self, sandbox, path) -> bytes:
        script = f'[ -f "$1" ] || exit {MISSING_FILE}; exec cat -- "$1"'
        result = self.exec(sandbox, ["/bin/sh", "-c", script, "sh", path], 300)
        if result.exit_code == MISSING_FILE:
            raise ProviderError(
                f"apple-container download: {path} is not a file",
                operation="download",
                code="not_found",
            )
        if result.exit_code != 0:
            raise ProviderError(
                f"apple-container download: cannot read {path}: "
                f"{result.stderr.decode(errors='replace')}",
                operation="download",
            )
        return result.stdout

    def destroy(self, sandbox) -> None:
        try:
            self._run("destroy", ["delete", "--force", sandbox.id])
        except ProviderError as exc:
            if exc.code != "not_found":  # gone is gone
                raise

    def is_gone(self, sandbox_id: str) -> bool:
        try:
            done = self._run("is_gone", ["inspect", sandbox_id])
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise
        return _records(done.stdout, "is_gone") == []

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        done = self._run("list", ["list", "--all", "--format", "json"])
        found = []
        for record in _records(done.stdout, "list"):
            configuration = record.get("configuration") or {}
            labels = configuration.get("labels") or {}
            if labels.get(KIND_LABEL) != "sandbox":
                continue
            if label is not None and labels.get(BATCH_LABEL) != label:
                continue
            found.append(
                LiveSandbox(
                    id=str(configuration.get("id") or record.get("id")),
                    label=labels.get(BATCH_LABEL, ""),
                    created_at=_timestamp(labels.get(CREATED_LABEL)),
                )
            )
        return found

    def doctor(self) -> list[DoctorCheck]:
        if self._problem:
            name = "platform" if self._problem.startswith("not available") else "cli"
            return [DoctorCheck.not_configured(name, self._problem)]
        try:
            version = self._run("doctor", ["--version"]).stdout.decode(errors="replace").strip()
            status = self._run("doctor", ["system", "status"]).stdout.decode(errors="replace")
        except ProviderError as exc:
            return [DoctorCheck("cli", False, f"{exc} (start it: container system start)")]
        return [
            DoctorCheck("cli", True, f"{self.cli}: {version}"),
            DoctorCheck("system", True, status.strip().splitlines()[0] if status.strip() else ""),
            DoctorCheck(
                "image",
                True,
                f"{self.image} (BOXBENCH_APPLE_CONTAINER_IMAGE; load it "
                "with `container image load`)",
            ),
        ]


def _records(output: bytes, operation: str) -> list[dict]:
    """The JSON array the tool prints for `list --format json` and `inspect`."""
    try:
        records = json.loads(output or b"[]")
    except ValueError:
        raise ProviderError(
            f"apple-container {operation}: the tool printed no JSON: "
            f"{shlex.quote(output[:200].decode(errors='replace'))}",
            operation,
            "rejected",
        ) from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ProviderError(
            f"apple-container {operation}: expected a JSON array of containers",
            operation,
            "rejected",
        )
    return records


def _state(record: dict) -> str:
    """A container's state: `status` is text in older releases, {"state": ...} in newer ones."""
    status = record.get("status")
    return str(status.get("state", "") if isinstance(status, dict) else status or "")


def _timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
