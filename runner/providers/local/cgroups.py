"""The limits of a `local` sandbox: cgroups (v2 cpu.max/memory.max/pids.max, or v1 CFS quota,
memory limit and pids.max) nested under the runner's own cgroup, where the kernel lets us create
them. The memory limit also bounds the sandbox's /app and /tmp, which are tmpfs mounts whose pages
are charged to the memory cgroup of the process that writes them."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from runner import waiting
from runner.providers.base import ProviderError

CFS_PERIOD_US = 100_000
# Tasks (processes and threads) per sandbox: a fork bomb stops here, far below the host's limit.
PIDS_MAX = 1024
CONTROLLERS = ("cpu", "memory", "pids")
LIMIT_KEYS = {"cpu": "cpus", "memory": "memory", "pids": "pids"}
# A busy cgroup is tried again every 5 ms: the kernel frees it within milliseconds of its last
# process dying.
RMDIR_POLL = waiting.every(0.005)


def _own_cgroups() -> dict[str, Path]:
    """The runner's own cgroup per controller: sandboxes nest inside it, within its limits."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            base = Path("/sys/fs/cgroup")
            if not (base / "cgroup.controllers").exists():
                base = Path("/sys/fs/cgroup/unified")
            found["v2"] = base / path.lstrip("/")
        for controller in controllers.split(","):
            if controller in CONTROLLERS:
                found[controller] = Path("/sys/fs/cgroup") / controller / path.lstrip("/")
    return found


def probe_cgroups() -> tuple[dict[str, tuple[str, Path]], dict[str, Any]]:
    """Where the cpu, memory and pids limits can be written, and facts saying what can be
    enforced."""
    own = _own_cgroups()
    places: dict[str, tuple[str, Path]] = {}
    v2 = own.get("v2")
    if v2 is not None:
        try:
            controllers = (v2 / "cgroup.controllers").read_text().split()
        except OSError:
            controllers = []
        for controller in CONTROLLERS:
            if controller in controllers and os.access(v2, os.W_OK):
                places[controller] = ("v2", v2)
    for controller in CONTROLLERS:
        parent = own.get(controller)
        if controller not in places and parent is not None and os.access(parent, os.W_OK):
            places[controller] = ("v1", parent)
    facts: dict[str, Any] = {
        "enforced": {key: name in places for name, key in LIMIT_KEYS.items()},
        "cgroup": {name: version for name, (version, _) in places.items()},
        "notes": [],
    }
    for name, key in LIMIT_KEYS.items():
        if not facts["enforced"][key]:
            facts["notes"].append(
                f"the {name} limit is not enforced: no writable cgroup {name} controller"
            )
    return places, facts


def _cgroup_name(sandbox_id: str) -> str:
    return f"boxbench-{sandbox_id}"


def sandbox_cgroups(sandbox_id: str) -> list[Path]:
    """The sandbox's cgroups that exist now, found by name: creation may have been cut short
    after making them and before recording them in sandbox.json."""
    places, _ = probe_cgroups()
    paths = {parent / _cgroup_name(sandbox_id) for _, parent in places.values()}
    return sorted(path for path in paths if path.exists())


def memory_current(sandbox_id: str) -> int | None:
    """What the sandbox's memory cgroup charges now (v2 memory.current, v1 usage_in_bytes)."""
    for path in sandbox_cgroups(sandbox_id):
        for name in ("memory.current", "memory.usage_in_bytes"):
            with contextlib.suppress(OSError, ValueError):
                return int((path / name).read_text())
    return None


def make_cgroups(
    sandbox_id: str, cpus: int, memory_mib: int, pids_max: int = PIDS_MAX
) -> tuple[list[Path], dict]:
    places, facts = probe_cgroups()
    made: list[Path] = []
    for controller, (version, parent) in places.items():
        path = parent / _cgroup_name(sandbox_id)
        try:
            if path not in made:
                path.mkdir(exist_ok=True)
                made.append(path)
            if version == "v2" and controller == "cpu":
                (path / "cpu.max").write_text(f"{cpus * CFS_PERIOD_US} {CFS_PERIOD_US}")
            elif controller == "pids":
                (path / "pids.max").write_text(str(pids_max))
            elif version == "v2":
                (path / "memory.max").write_text(str(memory_mib * 2**20))
            elif controller == "cpu":
                (path / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
                (path / "cpu.cfs_quota_us").write_text(str(cpus * CFS_PERIOD_US))
            else:
                (path / "memory.limit_in_bytes").write_text(str(memory_mib * 2**20))
        except OSError as exc:
            facts["enforced"][LIMIT_KEYS[controller]] = False
            facts["notes"].append(f"the {controller} limit is not enforced: {path}: {exc.strerror}")
    facts["notes"].append(
        "nproc and /proc/meminfo inside report the host's CPUs and memory, not the limits"
    )
    return made, facts


def join_cgroups_prefix(cgroups: list[Path]) -> list[str]:
    """A /bin/sh prelude that moves itself into the sandbox's cgroups, then execs the command."""
    if not cgroups:
        return []
    script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f/cgroup.procs"; done; '
    script += 'while [ "$1" != -- ]; do shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", *map(str, cgroups), "--"]


def remove_cgroup(path: Path, deadline: float, on_busy=None) -> None:
    """Remove an emptied cgroup by `deadline` (monotonic); `on_busy(path)` runs each time it is
    still busy (a process that joined it late is killed there)."""
    busy: list[OSError] = []

    def removed() -> bool:
        busy.clear()
        try:
            path.rmdir()
        except FileNotFoundError:
            return True
        except OSError as exc:
            # EBUSY until the kernel has finished tearing down the processes inside.
            busy.append(exc)
            if on_busy is not None:
                on_busy(path)
            return False
        return True

    if not waiting.poll_until(removed, deadline - time.monotonic(), RMDIR_POLL):
        raise ProviderError(
            f"cannot remove cgroup {path}: {busy[0].strerror}", operation="destroy"
        ) from None


def empty_cgroup(path: Path) -> None:
    """Kill every process in a sandbox's cgroup: at once through cgroup v2's cgroup.kill (no
    process can fork its way out), else member by member."""
    try:
        (path / "cgroup.kill").write_text("1")
        return
    except OSError:
        pass
    try:
        members = (path / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in members:
        try:
            os.kill(int(pid), 9)
        except (ProcessLookupError, ValueError):
            continue


def describe_limits(facts: dict) -> str:
    parts = []
    for name, key in LIMIT_KEYS.items():
        ok = facts["enforced"][key]
        how = f"enforced (cgroup {facts['cgroup'].get(name, '?')})" if ok else "not enforced"
        parts.append(f"{key}: {how}")
    return "; ".join(parts)


def missing_limits(facts: dict) -> list[str]:
    """The cgroup limits that could not be set up, by name."""
    return [key for key in LIMIT_KEYS.values() if not facts["enforced"][key]]
