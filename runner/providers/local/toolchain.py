"""The host toolchain every `local` sandbox runs: how it is bound in, and its identity digest."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from runner.providers.base import ProviderError

OS_RELEASE = Path("/etc/os-release")
DPKG_STATUS = Path("/var/lib/dpkg/status")


def host_toolchain_identity(
    os_release: Path = OS_RELEASE, dpkg_status: Path = DPKG_STATUS
) -> tuple[str, str]:
    """The local provider's "image": the job host's /usr (and a few /etc files), read-only.

    Digest: SHA-256 of /etc/os-release followed by the sorted `package version architecture`
    lines of every installed dpkg package, so an upgrade of any package (or of the OS) gives a
    new digest and an unchanged host keeps its digest. Without a dpkg database the digest covers
    os-release alone, and the description says so.
    """
    try:
        release = os_release.read_text(errors="replace")
    except OSError as exc:
        raise ProviderError(
            f"cannot read {os_release} for the host toolchain identity: {exc.strerror}",
            operation="image",
        ) from None
    try:
        packages = _installed_packages(dpkg_status.read_text(errors="replace"))
    except OSError:
        packages = None
    digest = hashlib.sha256(release.encode())
    for line in packages or []:
        digest.update(b"\n" + line.encode())
    name = _os_release_field(release, "PRETTY_NAME") or "unknown OS"
    counted = f"{len(packages)} dpkg packages" if packages is not None else f"no {dpkg_status}"
    return f"host toolchain: {name}, {counted}", "sha256:" + digest.hexdigest()


def _installed_packages(status: str) -> list[str]:
    """Sorted `name version architecture` of the installed packages in a dpkg status file."""
    found = []
    for stanza in status.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line[:1].isspace():
                fields[key] = value.strip()
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            found.append(
                f"{fields['Package']} {fields.get('Version', '')} {fields.get('Architecture', '')}"
            )
    return sorted(found)


def _os_release_field(text: str, key: str) -> str:
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip().strip('"')
    return ""


def toolchain_binds() -> list[str]:
    """Bind the host toolchain read-only, mirroring /bin, /lib... whether links or directories.
    /etc is not among them: etc.py builds a minimal one."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return args
