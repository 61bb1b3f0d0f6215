"""The seccomp profile of every `docker` sandbox: the same refusals as `local`'s filter
(seccomp_rules.py) in the engine's JSON format, instead of the engine's default profile.

The engine's default lets a container's root `unshare` a user namespace (and, inside it, hold
every capability: nf_tables and keyrings in reach) and allows ptrace and the keyring calls. This
profile refuses new namespaces of every kind (`unshare`, `setns`, and `clone` with a namespace
flag, whose flags the filter can read), the keyring calls, ptrace and process_vm_readv/writev,
with EPERM; clone3 answers ENOSYS so the C library falls back to clone. Everything else is
allowed, as in the local filter.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

from runner.providers.seccomp_rules import NAMESPACE_FLAGS, REFUSED

ARCHITECTURES = ("SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64")


def engine_name(version: dict) -> str:
    """Docker or Podman, from the engine's /version answer."""
    for component in version.get("Components") or []:
        if component.get("Name") in ("Podman Engine", "Engine"):
            return "Podman" if "Podman" in component["Name"] else "Docker"
    return "Docker"


def profile() -> dict:
    refuse = {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}
    rules: list[dict] = [{"names": list(REFUSED), **refuse}]
    rules += [
        {
            "names": ["clone"],
            **refuse,
            "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}],
        }
        for flag in NAMESPACE_FLAGS
    ]
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": list(ARCHITECTURES),
        "syscalls": rules,
    }


@functools.cache
def security_opt(engine: str) -> tuple[str, ...]:
    """The container's security options: no new privileges, and this profile. Docker's API
    takes the profile itself (JSON); Podman's reads it from a file on the engine's machine, so
    for Podman it is written once per content under the temporary directory (a Podman reached
    over ssh must find the same file there, or its creates fail naming the path)."""
    text = json.dumps(profile(), separators=(",", ":"), sort_keys=True)
    if engine != "Podman":
        return ("no-new-privileges", f"seccomp={text}")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"boxbench-seccomp-{digest}.json"
    if not path.is_file() or path.read_text() != text:
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(text)
        partial.chmod(0o644)
        partial.replace(path)
    return ("no-new-privileges", f"seccomp={path}")
