"""An image build as the fakes run one: on a sandbox of the local provider started from the base
(fresh for the provider's standard image, else the base build's files), step by step, RUN with
bash in the WORKDIR with the ENV so far, COPY from files the client uploaded, then the sandbox's
files kept as a local snapshot the fake's creates start from.

What the local sandboxes keep of a build is the local provider's snapshot (/app and /tmp:
runner/providers/local/snapshots.py); a RUN writing elsewhere fails as a RUN does, and the fake
answers a failed build in its provider's shape. USER is recorded but not switched (the local
sandboxes have one user).
"""

from __future__ import annotations

import posixpath
import shlex
import uuid

from runner.providers.base import ProviderError, SandboxSpec

STEP_LIMIT_S = 600.0


class StepFailed(Exception):
    """A build step failed; `step` names it as the provider does (its number)."""

    def __init__(self, message: str, step: str):
        super().__init__(message)
        self.step = step


class FakeBuild:
    """One build's sandbox and state; `finish()` keeps its files and ends it."""

    def __init__(self, local, base_files: str | None, cpus: int, memory_mib: int, name: str):
        self.local = local
        self.sandbox = None
        spec = SandboxSpec(cpus, memory_mib, f"fake-build-{name}"[:60], 3600)
        try:
            self.sandbox = local.restore(base_files, spec) if base_files else local.create(spec)
        except ProviderError as exc:
            raise StepFailed(f"the build's sandbox did not start: {exc}", "base") from None
        self.cwd = "/"
        self.env: dict[str, str] = {}

    def workdir(self, path: str, step: str) -> None:
        self.cwd = posixpath.normpath(posixpath.join(self.cwd, path))
        self.run(f"mkdir -p {shlex.quote(self.cwd)}", step, cwd="/")

    def run(self, command: str, step: str, cwd: str | None = None) -> None:
        ran = self.local.exec(
            self.sandbox,
            ["/bin/bash", "-c", command],
            STEP_LIMIT_S,
            workdir=cwd or self.cwd,
            env=dict(self.env),
        )
        if ran.exit_code != 0:
            said = (ran.stderr or ran.stdout).decode(errors="replace").strip()[-300:]
            raise StepFailed(
                f"failed to run command '{command[:120]}': exit status {ran.exit_code}: {said}",
                step,
            )

    def copy(self, archive: bytes, source: str, destination: str, step: str) -> None:
        """COPY `source` (a path in the tar.gz `archive` of uploaded files) to `destination`,
        a folder's contents into the folder, as Docker's COPY does."""
        destination = posixpath.join(self.cwd, destination) + ("/" * destination.endswith("/"))
        staging = f"/tmp/.fake-build-{uuid.uuid4().hex}"
        self.local.upload(self.sandbox, f"{staging}.tar.gz", archive)
        script = (
            f"mkdir -p {staging} && tar -xzf {staging}.tar.gz -C {staging} && "
            f"s={staging}/{shlex.quote(source.rstrip('/') or '.')}; "
            f"d={shlex.quote(destination)}; "
            'if [ -d "$s" ]; then mkdir -p "$d" && cp -a "$s/." "$d/"; '
            'elif [ "${d%/}" != "$d" ]; then mkdir -p "$d" && cp -a "$s" "$d"; '
            'else mkdir -p "$(dirname "$d")" && cp -a "$s" "$d"; fi; '
            f"rc=$?; rm -rf {staging} {staging}.tar.gz; exit $rc"
        )
        self.run(script, step, cwd="/")

    def finish(self) -> str:
        """The built files as a local snapshot; the sandbox is ended either way."""
        try:
            return self.local.snapshot(self.sandbox)
        finally:
            self.close()

    def close(self) -> None:
        if self.sandbox is not None:
            self.local.destroy(self.sandbox)
            self.sandbox = None
