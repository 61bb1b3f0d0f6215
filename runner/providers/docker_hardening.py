"""What a `docker` sandbox's container is allowed: the host configuration create asks for.

Network none unless asked, the requested CPUs and memory (no swap beyond it), explicit nofile and
nproc limits (Podman needs them) and a pids limit, never privileged, only the capabilities the
standard image's commands need, our own seccomp profile (docker_seccomp.py), auto-remove, an init
as PID 1, a user namespace of its own where asked (Podman), and a bound on the writable layer
where the engine can enforce one.

Under rootful Podman a container's root is host uid 0. Podman can give each container a user
namespace of its own (`userns=auto`, BOXBENCH_DOCKER_USERNS=auto) from the subordinate ids of the
`containers` user in /etc/subuid and /etc/subgid, which `./boxbench.sh run` adds: the container's
root is then an unprivileged host uid, and files the image owns by root stay root's inside. It is
not the default: Podman 4.3 commits such a container's files with their host ids, and an image
holding ids past 65536 cannot start in any user namespace, so snapshots, forks and create's
per-trial layer would all fail. Docker remaps only for the whole daemon (`userns-remap` in
daemon.json). The doctor says which holds.

The writable layer's bound is the engine's `size` storage option: overlay over XFS mounted with
project quotas (Docker's overlay2, Podman's overlay). On any other backing filesystem the engine
refuses the option, so it is not asked; the sandbox's facts then say the disk is not bounded, and
the doctor says why (docs/providers.md).
"""

from __future__ import annotations

import os

from docker.types import Ulimit

from runner.providers.base import DoctorCheck, ProviderError, SandboxSpec
from runner.providers.docker_seccomp import security_opt

# What the standard image's commands need as the container's root: file ownership and modes
# (package managers, tar, git checkouts as another user), signals and user switching. The
# engines' defaults also grant MKNOD, NET_RAW, NET_BIND_SERVICE, SETFCAP, SETPCAP, SYS_CHROOT
# and AUDIT_WRITE, which no benchmark uses.
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID")
# The writable layer's bound, where the engine enforces one: room for the disk benchmarks' files
# and a DeepSWE checkout with its build, far below a job host's disk.
DEFAULT_DISK_MIB = 20 * 1024


def user_namespace(engine: str, setting: str) -> str | None:
    """The user namespace mode a create asks for (None: the engine's own), from the setting."""
    if setting not in ("", "auto"):
        raise ProviderError(
            f"BOXBENCH_DOCKER_USERNS must be empty or auto, not {setting!r}", "config"
        )
    if setting and engine != "Podman":
        raise ProviderError(
            "BOXBENCH_DOCKER_USERNS=auto needs Podman; Docker remaps every container or none "
            "(userns-remap in daemon.json)",
            "config",
        )
    return setting or None


def userns_check(engine: str, info: dict, setting: str) -> DoctorCheck:
    """The doctor's line on whether a container's root is host root."""
    name = "user namespace"
    if setting == "auto" and engine == "Podman":
        return DoctorCheck(
            name, True, "each sandbox in a user namespace of its own (snapshots fail on Podman 4.3)"
        )
    if any("name=userns" in str(option) for option in info.get("SecurityOptions") or []):
        return DoctorCheck(name, True, "the daemon remaps every container (userns-remap)")
    fix = (
        "BOXBENCH_DOCKER_USERNS=auto remaps it, but Podman 4.3 commits the remapped ids, so "
        "snapshots, forks and create's per-trial layer then fail"
        if engine == "Podman"
        else "set userns-remap in the daemon's daemon.json"
    )
    return DoctorCheck(name, False, f"a container's root is host root: {fix}")


def with_hint(error: ProviderError) -> ProviderError:
    """Name the fix when a create failed for want of the init binary or of subordinate ids."""
    text = str(error)
    if "container-init" in text:
        hint = " (Podman runs --init with catatonit: apt-get install catatonit)"
    elif "subuid" in text or "subgid" in text or "available IDs" in text:
        hint = (
            " (Podman gives each sandbox a user namespace from the subordinate ids of the "
            "`containers` user: ./boxbench.sh run adds them, or add "
            "containers:2147483647:2147483648 to /etc/subuid and /etc/subgid)"
        )
    else:
        return error
    return ProviderError(f"{error}{hint}", error.operation, error.code)


def limit_setting(settings: dict, key: str, variable: str, default: int) -> int:
    """A positive whole number from the constructor's settings, else $variable, else `default`."""
    raw = settings.get(key, os.environ.get(variable, default))
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if value <= 0:
        raise ProviderError(f"{variable} must be a positive whole number, got {raw!r}", "config")
    return value


def host_options(
    spec: SandboxSpec, *, nofile: int, nproc: int, engine: str, disk_mib: int | None
) -> dict:
    """Keyword arguments of the SDK's create_host_config for one sandbox; `disk_mib` None where
    the engine cannot bound the writable layer."""
    options: dict[str, object] = {
        "network_mode": "bridge" if spec.network else "none",
        "nano_cpus": int(spec.cpus * 1_000_000_000),
        "mem_limit": spec.memory_mib * 1024 * 1024,
        "memswap_limit": spec.memory_mib * 1024 * 1024,  # no swap beyond the requested memory
        "ulimits": [
            Ulimit(name="nofile", soft=nofile, hard=nofile),
            Ulimit(name="nproc", soft=nproc, hard=nproc),
        ],
        # The pids cgroup is the fence a fork bomb meets: RLIMIT_NPROC does not bind the
        # container's root, whom the kernel exempts.
        "pids_limit": nproc,
        "privileged": False,
        "cap_drop": ["ALL"],
        "cap_add": list(CAPABILITIES),
        "security_opt": list(security_opt(engine)),  # our own profile (docker_seccomp.py)
        "auto_remove": True,
        "init": True,  # a real PID 1 reaps the orphans of killed commands
    }
    if disk_mib is not None:
        options["storage_opt"] = {"size": f"{disk_mib}M"}
    return options


def backing_filesystem(info: dict) -> str:
    """The filesystem under the engine's overlay storage, from its /info answer ("" unknown)."""
    for entry in info.get("DriverStatus") or []:
        if isinstance(entry, list | tuple) and len(entry) == 2 and entry[0] == "Backing Filesystem":
            return str(entry[1])
    return ""


def can_bound_disk(info: dict) -> bool:
    """Whether the engine can enforce a size on a container's writable layer: overlay storage over
    XFS (which must be mounted with pquota; an engine that finds it is not refuses the create,
    naming the option)."""
    driver = str(info.get("Driver") or "")
    return driver in ("overlay", "overlay2") and backing_filesystem(info) == "xfs"


def disk_check_text(info: dict, disk_mib: int) -> tuple[bool, str]:
    """The doctor's line on the writable layer's bound: (bounded, what holds)."""
    if can_bound_disk(info):
        return True, f"each sandbox's writable layer is bounded to {disk_mib} MiB (XFS quota)"
    found = f"{info.get('Driver') or 'unknown'} storage on {backing_filesystem(info) or 'unknown'}"
    return False, (
        f"no bound on a sandbox's writable layer: {found}, and only overlay over XFS with pquota "
        "enforces one; a command can fill the engine's disk (see docs/providers.md)"
    )
