"""Snapshots of a local sandbox: a plain copy of its writable tree, restored into a fresh sandbox.

A local sandbox writes only to /app, /tmp and /dev/shm, tmpfs mounts inside its own mount
namespace that no host directory holds, so neither a reflink nor an overlay can capture them. A
snapshot is therefore a plain copy: a tar archive of /app and /tmp streamed out through the exec
helper into <root>/ls-<hex>/archive.tar beside a metadata file naming the batch label (so
`bench cleanup` finds it); restore creates a fresh sandbox and unpacks the archive into it. No
memory or processes are kept, and /dev/shm is left out (shared memory of processes that are gone).
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

from runner.providers.base import LiveSandbox, ProviderError, Sandbox

PREFIX = "ls-"
_ID = re.compile(r"^ls-[0-9a-f]{16}$")
TAR_TIMEOUT_S = 300.0
SAVE = ["/bin/sh", "-c", "exec tar -C / -cf - app tmp"]
# The restored sandbox's own /app and /tmp stay as they are (owner, mode): only their contents
# come from the archive.
UNPACK = ["/bin/sh", "-c", "exec tar -C / --no-overwrite-dir -xf -"]


def directory_of(root: Path, snapshot_id: str) -> Path:
    """The snapshot's directory; an id that is not one of ours is refused, so a hostile id can
    never name a path outside the sandbox root."""
    if not _ID.match(snapshot_id):
        raise ProviderError(f"{snapshot_id!r} is not a local snapshot id", operation="snapshot")
    return root / snapshot_id


def save(provider, sandbox: Sandbox) -> str:
    # The archive leaves the sandbox like a download, so it is held to the download cap: a
    # hostile sandbox cannot fill the job host's memory through its snapshot.
    cap = (provider.limits.download_bytes, "max_download_mib", "snapshot")
    result = provider._exec(sandbox, SAVE, TAR_TIMEOUT_S, None, None, None, cap)
    if result.exit_code != 0:
        raise ProviderError(
            f"tar of /app and /tmp failed in {sandbox.id} (exit {result.exit_code}): "
            f"{result.stderr.decode(errors='replace').strip()[:300]}",
            operation="snapshot",
        )
    snapshot_id = PREFIX + uuid.uuid4().hex[:16]
    directory = provider.root / snapshot_id
    meta = {
        "id": snapshot_id,
        "label": sandbox.label,
        "source": sandbox.id,
        "created_at": datetime.now(UTC).isoformat(),
    }
    try:
        directory.mkdir(parents=True)
        # The metadata first: a crash after it leaves a labelled entry for cleanup.
        (directory / "snapshot.json").write_text(json.dumps(meta))
        (directory / "archive.tar").write_bytes(result.stdout)
    except OSError as exc:
        shutil.rmtree(directory, ignore_errors=True)
        raise ProviderError(
            f"cannot store the snapshot in {directory}: {exc.strerror}", operation="snapshot"
        ) from None
    return snapshot_id


def unpack(provider, snapshot_id: str, sandbox: Sandbox) -> None:
    """Unpack the snapshot into a freshly created `sandbox` (the caller destroys it on error)."""
    archive = directory_of(provider.root, snapshot_id) / "archive.tar"
    try:
        data = archive.read_bytes()
    except OSError as exc:
        raise ProviderError(
            f"snapshot {snapshot_id} cannot be read: {exc.strerror}", operation="restore"
        ) from None
    result = provider.exec(sandbox, UNPACK, TAR_TIMEOUT_S, stdin=data)
    if result.exit_code != 0:
        raise ProviderError(
            f"unpacking snapshot {snapshot_id} failed (exit {result.exit_code}): "
            f"{result.stderr.decode(errors='replace').strip()[:300]}",
            operation="restore",
        )


def delete(root: Path, snapshot_id: str) -> None:
    directory = directory_of(root, snapshot_id)
    shutil.rmtree(directory, ignore_errors=True)
    if directory.exists():
        raise ProviderError(f"cannot remove {directory}", operation="delete snapshot")


def gone(root: Path, snapshot_id: str) -> bool:
    return not directory_of(root, snapshot_id).exists()


def listing(root: Path, label: str | None = None) -> list[LiveSandbox]:
    """Every stored snapshot (optionally of one batch label), for `bench cleanup`."""
    found: list[LiveSandbox] = []
    if not root.is_dir():
        return found
    for directory in sorted(root.iterdir()):
        if not _ID.match(directory.name):
            continue
        meta = _read_meta(directory)
        if label is not None and meta.get("label") != label:
            continue
        created = meta.get("created_at")
        try:
            created_at = datetime.fromisoformat(created) if isinstance(created, str) else None
        except ValueError:
            created_at = None
        found.append(LiveSandbox(directory.name, str(meta.get("label", "")), created_at))
    return found


def _read_meta(directory: Path) -> dict:
    try:
        meta = json.loads((directory / "snapshot.json").read_text())
    except (OSError, ValueError):
        return {}  # unreadable: still listed, with no label, so cleanup can remove it
    return meta if isinstance(meta, dict) else {}
