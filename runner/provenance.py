"""What code timed a run: the checkout's commit and each adapter's own version (common
methodology, "pinned provider adapters"). Recorded in the manifest when the run is planned.

An adapter is pinned by the SHA-256 of its source files (its module, or every .py file of its
package, plus the shared modules every adapter runs through) and by the version of the client
library it calls; the commit says which boxbench the whole run used, and whether the checkout had
uncommitted changes to the code. Pure apart from reading files and asking git: no Django.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import subprocess
from importlib import metadata
from pathlib import Path

from runner.providers import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
CODE_PATHS = ("runner", "boxbench", "stats", "templates")  # what a dirty checkout would change
# Modules every adapter runs through: a change there changes every adapter's behaviour.
SHARED = ("runner.providers.base", "runner.providers.http", "runner.providers.sdk_logs")
# The client libraries an adapter calls, by adapter key: the provider's SDK first, where it has
# one, then the transport under it. A changed version is a changed adapter in the results series.
CLIENTS = {
    "local": (),
    "docker": ("docker",),
    "remote-docker": ("docker", "paramiko"),
    "opensandbox": ("opensandbox", "httpx"),
    "e2b": ("e2b", "connectrpc", "pyqwest"),
    "daytona": ("daytona", "urllib3", "httpx"),
    "vercel": ("vercel-sandbox", "httpx2"),
    "modal": ("modal", "grpclib"),
    "agentcore": ("boto3", "botocore"),
}
# Adapters over a command-line tool: the command that prints the tool's version, as the client.
TOOLS = {
    "apple-container": ("container", "--version"),
}


def code_commit(root: Path = ROOT) -> dict:
    """{"commit", "dirty"} of the checkout, or {"error"} saying why it is unknown."""
    try:
        head = _git(root, "rev-parse", "HEAD")
        changed = _git(root, "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": f"no git commit for {root}: {exc}"}
    return {"commit": head, "dirty": bool(changed)}


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout.strip()


def adapter_version(adapter: str) -> dict:
    """{"adapter", "source_sha256", "files", "clients": {library: version}} of one adapter key."""
    module_name = REGISTRY[adapter].partition(":")[0]
    files = sorted({*_module_files(module_name), *(f for m in SHARED for f in _module_files(m))})
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    # An adapter that runs its SDK in another mode than the SDK's default says which (SDK_MODE).
    mode = getattr(importlib.import_module(module_name), "SDK_MODE", None)
    return {
        "adapter": adapter,
        "source_sha256": digest.hexdigest(),
        "files": [str(p.relative_to(ROOT)) for p in files],
        "clients": {
            **{name: _installed(name) for name in CLIENTS.get(adapter, ())},
            **({TOOLS[adapter][0]: _tool_version(TOOLS[adapter])} if adapter in TOOLS else {}),
        },
        **({"sdk_mode": mode} if mode else {}),
    }


def _module_files(module_name: str) -> list[Path]:
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise ValueError(f"adapter module {module_name} is not importable")
    origin = Path(spec.origin)
    if spec.submodule_search_locations:  # a package: every source file in it
        return sorted(p for p in origin.parent.rglob("*.py") if "__pycache__" not in p.parts)
    return [origin]


def _tool_version(argv: tuple[str, ...]) -> str:
    """The first line the tool prints for its version, or why there is none."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=10)
    except FileNotFoundError:
        return "not installed"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown: {exc}"
    lines = (done.stdout or done.stderr).strip().splitlines()
    if done.returncode != 0 or not lines:
        return f"unknown: {' '.join(argv)} exited {done.returncode}"
    return lines[0][:200]


def _installed(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"
