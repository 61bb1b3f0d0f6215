"""The `local` adapter: bubblewrap sandboxes on the job host, commands started by the exec helper
inside each (spawner.py). The package docstring describes the design."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from runner import waiting
from runner.providers.answers import AnswerLimits, Capped, Reader, command_stdout
from runner.providers.base import (
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    Provider,
    ProviderError,
    Sandbox,
    SandboxSpec,
    fork_by_snapshot,
)
from runner.providers.local import snapshots
from runner.providers.local.cgroups import (
    PIDS_MAX,
    describe_limits,
    empty_cgroup,
    join_cgroups_prefix,
    make_cgroups,
    memory_current,
    missing_limits,
    probe_cgroups,
    remove_cgroup,
    sandbox_cgroups,
)
from runner.providers.local.etc import SANDBOX_GID, SANDBOX_UID, minimal_etc
from runner.providers.local.seccomp import compiled_filter, filter_fd
from runner.providers.local.toolchain import host_toolchain_identity, toolchain_binds
from runner.providers.local.wire import exchange, fds_payload, read_all

SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The exec helper runs on the host's Python, bound read-only into the sandbox with /usr.
PYTHON = "/usr/bin/python3"
SPAWNER = (Path(__file__).with_name("spawner.py")).read_text()
HEADER = struct.Struct("!I")
SHM_MIB = 64  # /dev/shm, as Docker's default
START_TIMEOUT_S = 30.0
GONE_TIMEOUT_S = 10.0
# Killing a sandbox's processes and removing its cgroups: again every 5 ms, since the kernel
# tears a killed process down within milliseconds.
KILL_POLL = waiting.every(0.005)


class LocalProvider(Provider):
    slug = "local"
    layer_needless = (
        "local has no image: each sandbox binds the host toolchain, so no create can find one "
        "cached"
    )

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        root = self.settings.get("root")
        if root is None:
            from django.conf import settings as django_settings

            root = django_settings.LOCAL_SANDBOX_ROOT
        self.root = Path(root)
        self.limits = AnswerLimits.from_settings(self.settings)
        allow = self.settings.get("allow_unlimited")
        if allow is None:
            from django.conf import settings as django_settings

            # Scripts that run without Django's settings (bench/) get the safe default.
            configured = django_settings.configured
            allow = configured and django_settings.LOCAL_ALLOW_UNLIMITED
        # The operator's explicit override: run sandboxes whose cgroup limits cannot be set up.
        self.allow_unlimited = bool(allow)
        # A cap on every sandbox's /app (MiB): the storage an operator gives the sandboxes, and
        # how the storage-full tests make a small one.
        app_mib = self.settings.get("app_mib")
        if app_mib is not None and (not isinstance(app_mib, int) or app_mib < 1):
            raise ValueError(f"local: app_mib must be a whole number of MiB >= 1, got {app_mib!r}")
        self.app_mib_cap: int | None = app_mib
        # The tasks a sandbox may hold (pids cgroup and RLIMIT_NPROC): lower only where a test
        # of the fence wants a fork bomb stopped sooner.
        pids_max = self.settings.get("pids_max", PIDS_MAX)
        if not isinstance(pids_max, int) or isinstance(pids_max, bool) or pids_max < 16:
            raise ValueError(f"local: pids_max must be a whole number >= 16, got {pids_max!r}")
        self.pids_max: int = pids_max
        self.bwrap = shutil.which("bwrap")
        self.python = PYTHON if os.access(PYTHON, os.X_OK) else None
        # A root runner starts bubblewrap as the unprivileged sandbox user; any other runner
        # starts it as itself, which is not root either.
        self.setpriv = shutil.which("setpriv") if os.geteuid() == 0 else None

    def standard_image(self) -> tuple[str, str]:
        """(description, digest) of what every local sandbox runs: the host toolchain."""
        return host_toolchain_identity()

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if self.bwrap is None or self.python is None:
            raise ProviderError(
                f"bubblewrap (bwrap) and {PYTHON} must be installed for the local provider",
                operation="create",
                code="missing_tool",
            )
        if os.geteuid() == 0 and self.setpriv is None:
            raise ProviderError(
                "setpriv (util-linux) must be installed: a root runner drops to the sandbox "
                "user with it",
                operation="create",
                code="missing_tool",
            )
        compiled_filter()  # ProviderError naming libseccomp when it is missing
        if self.root.is_dir():
            self.expire()
        if spec.image:
            raise ProviderError(
                f"the local provider runs the host toolchain and has no image {spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        sandbox_id = "lb-" + uuid.uuid4().hex[:16]
        directory = self.root / sandbox_id
        try:
            # Only the runner's user may read a sandbox's metadata (its helper's token).
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.root.chmod(0o700)
            directory.mkdir(mode=0o700)
        except OSError as exc:
            raise ProviderError(
                f"cannot make the sandbox directory {directory}: {exc.strerror}", operation="create"
            ) from None
        created_at = datetime.now(UTC)
        meta = {
            "id": sandbox_id,
            "label": spec.label,
            "created_at": created_at.isoformat(),
            "expires_at": created_at.timestamp() + spec.lifetime_s,
            "lifetime_s": spec.lifetime_s,
            "cpus": spec.cpus,
            "memory_mib": spec.memory_mib,
            "pid": None,
            "pid_start": None,
            "cgroups": [],
            # Abstract Unix socket of the exec helper (no path-length limit, nothing to delete).
            "socket": f"boxbench-{sandbox_id}-{uuid.uuid4().hex[:8]}",
            # Every request carries it: the helper answers no one else (spawner.py).
            "token": secrets.token_hex(16),
        }
        try:
            # Written before the process starts, so a crash in between leaves a labelled entry.
            _write_meta(directory, meta)
        except OSError as exc:
            # Full storage, most likely: an unlabelled directory left here would read as a
            # foreign sandbox and refuse the next run.
            shutil.rmtree(directory, ignore_errors=True)
            raise ProviderError(
                f"cannot write the sandbox's metadata in {directory}: {exc.strerror}",
                operation="create",
            ) from None
        try:
            cgroups, facts = make_cgroups(sandbox_id, spec.cpus, spec.memory_mib, self.pids_max)
            meta["cgroups"] = [str(path) for path in cgroups]
            _write_meta(directory, meta)
            self._check_limits(facts)
            own = self._sandbox_facts(spec)
            facts["notes"].append(own.pop("note"))
            facts.update(own)
            pid = self._start(directory, sandbox_id, spec, cgroups, meta)
            meta["pid"], meta["pid_start"] = pid, _start_time(pid)
            _write_meta(directory, meta)
        except Exception:
            self._remove(directory, meta)
            raise
        return Sandbox(
            id=sandbox_id,
            label=spec.label,
            created_at=created_at,
            facts=facts,
            handle=meta,
        )

    def _check_limits(self, facts: dict) -> None:
        """A sandbox without its cgroup limits could take the host's memory, processes or CPU:
        refused unless the operator set the documented override."""
        missing = missing_limits(facts)
        if not missing:
            return
        if self.allow_unlimited:
            facts["notes"].append(
                f"BOXBENCH_LOCAL_ALLOW_UNLIMITED is set: running without the {', '.join(missing)} "
                "limit(s)"
            )
            return
        raise ProviderError(
            f"cannot set up the sandbox's {', '.join(missing)} limit(s): "
            + "; ".join(note for note in facts["notes"] if "not enforced" in note)
            + " (BOXBENCH_LOCAL_ALLOW_UNLIMITED=1 runs sandboxes without them)",
            operation="create",
            code="limits_unavailable",
        )

    def _sandbox_facts(self, spec: SandboxSpec) -> dict:
        uid = SANDBOX_UID if self.setpriv else os.geteuid()
        app_mib, tmp_mib = tmpfs_sizes(spec, self.app_mib_cap)
        note = (
            f"commands run as host uid {uid} without capabilities or new privileges, under a "
            "seccomp filter, with no nested user namespace and at most "
            f"{self.pids_max} tasks; /app ({app_mib} MiB), /tmp ({tmp_mib} MiB) and /dev/shm "
            f"({SHM_MIB} MiB) are tmpfs mounts counted against the memory limit, the rest of the "
            "tree is read-only"
        )
        return {"uid": uid, "app_mib": app_mib, "tmp_mib": tmp_mib, "note": note}

    def _start(
        self, directory: Path, sandbox_id: str, spec: SandboxSpec, cgroups: list[Path], meta: dict
    ) -> int:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind("\0" + meta["socket"])
        listener.listen(64)  # commands queue here until the helper accepts them
        info_read, info_write = os.pipe()
        ready_read, ready_write = os.pipe()
        token_read, token_write = os.pipe()
        os.write(token_write, meta["token"].encode())  # 32 bytes: within any pipe's buffer
        os.close(token_write)
        etc_args, etc_fds = minimal_etc(spec.network)
        seccomp = filter_fd()
        user = [str(self.setpriv), f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}"]
        user += ["--clear-groups", "--"]
        uid = SANDBOX_UID if self.setpriv else os.geteuid()
        app_mib, tmp_mib = tmpfs_sizes(spec, self.app_mib_cap)
        argv = [
            *join_cgroups_prefix(cgroups),
            *(user if self.setpriv else []),
            str(self.bwrap),
            "--unshare-all",
            *(["--share-net"] if spec.network else []),
            # Its own user namespace, mapping only the sandbox user, with no nested one allowed.
            "--unshare-user",
            "--disable-userns",
            "--uid",
            str(uid),
            "--gid",
            str(SANDBOX_GID if self.setpriv else os.getegid()),
            "--cap-drop",
            "ALL",
            "--new-session",
            # The exec helper is the namespace's init: the sandbox ends with it (spawner.py).
            "--as-pid-1",
            "--seccomp",
            str(seccomp),
            "--hostname",
            "sandbox",
            *toolchain_binds(),
            *etc_args,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            # Sized tmpfs mounts: their pages count against the sandbox's memory cgroup.
            "--size",
            str(SHM_MIB * 2**20),
            "--perms",
            "1777",
            "--tmpfs",
            "/dev/shm",
            "--size",
            str(tmp_mib * 2**20),
            "--perms",
            "1777",
            "--tmpfs",
            "/tmp",
            "--size",
            str(app_mib * 2**20),
            "--tmpfs",
            "/app",
            # The Harbor task format's fixed paths (Terminal-Bench tasks copy their oracle and
            # verifier there and write the reward under /logs): links into /tmp, as the root
            # stays read-only.
            *_harbor_links(),
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
            "--chdir",
            "/app",
            "--setenv",
            "PATH",
            SANDBOX_PATH,
            # Names the sandbox on bubblewrap's command line, where destroy looks for it.
            "--setenv",
            "BOXBENCH_SANDBOX",
            sandbox_id,
            "--info-fd",
            str(info_write),
            "--",
            # bash, not dash: dash cannot redirect to descriptors above 9.
            "/bin/bash",
            "-c",
            f"echo ready >&{ready_write}; exec {ready_write}>&-; "
            f'exec {PYTHON} -I -S -c "$2" {listener.fileno()} "$1" {token_read} {self.pids_max}',
            "sh",
            f"{spec.lifetime_s:.3f}",
            SPAWNER,
        ]
        with open(directory / "bwrap.log", "wb") as log:
            try:
                bwrap = subprocess.Popen(
                    argv,
                    pass_fds=(
                        info_write,
                        ready_write,
                        token_read,
                        listener.fileno(),
                        seccomp,
                        *etc_fds,
                    ),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                    env={"PATH": SANDBOX_PATH},
                )
                # bubblewrap is this process's child for the sandbox's whole life, and whoever
                # destroys the sandbox (perhaps another provider object, after a restart) kills
                # it by pid: a waiting thread reaps it whenever it ends, so it never lingers as
                # a zombie.
                threading.Thread(target=bwrap.wait, name="bwrap-reaper", daemon=True).start()
            finally:
                for fd in (info_write, ready_write, token_read, seccomp, *etc_fds):
                    os.close(fd)
                listener.close()  # the helper holds it now
        try:
            info = read_all(info_read, START_TIMEOUT_S)
            ready = read_all(ready_read, START_TIMEOUT_S)
        finally:
            os.close(info_read)
            os.close(ready_read)
        if not ready.startswith(b"ready"):
            error = (directory / "bwrap.log").read_text(errors="replace").strip()
            raise ProviderError(
                f"bubblewrap did not start the sandbox: {error or 'no error output'}",
                operation="create",
            )
        try:
            return int(json.loads(info)["child-pid"])
        except (ValueError, KeyError) as exc:
            raise ProviderError(
                f"bubblewrap reported no sandbox pid ({exc}): {info[:200]!r}", operation="create"
            ) from None

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        cap = (self.limits.output_bytes, "max_output_mib", "exec")
        return self._exec(sandbox, argv, timeout, stdin, workdir, env, cap)

    def _exec(self, sandbox, argv, timeout, stdin, workdir, env, cap) -> ExecResult:
        """exec, its stdout and stderr each held to `cap` (bytes, setting, operation): a
        command that writes more is killed, so a hostile one cannot fill the job host's memory."""
        meta = self._meta_of(sandbox, "exec")
        # The sandbox sees only this environment, never the runner's (which holds secrets).
        environment = {"PATH": SANDBOX_PATH, "HOME": "/app", "LANG": "C.UTF-8", **(env or {})}
        request = json.dumps(
            {
                "token": meta.get("token", ""),
                "argv": argv,
                "env": environment,
                "workdir": workdir or "/app",
            }
        )
        deadline = time.monotonic() + timeout
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        ours = [stdin_w, stdout_r, stderr_r]
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                conn.connect("\0" + meta["socket"])
                conn.sendmsg(
                    [HEADER.pack(len(request.encode()))],
                    [
                        (
                            socket.SOL_SOCKET,
                            socket.SCM_RIGHTS,
                            fds_payload(stdin_r, stdout_w, stderr_w),
                        )
                    ],
                )
                conn.sendall(request.encode())
            except OSError as exc:
                if not _alive(meta["pid"], meta["pid_start"]):
                    raise ProviderError(f"sandbox {sandbox.id} is not running", "exec") from None
                raise ProviderError(f"cannot reach sandbox {sandbox.id}: {exc}", "exec") from None
            finally:
                for fd in (stdin_r, stdout_w, stderr_w):  # the command holds them now
                    os.close(fd)
            reader = Reader(self.slug, cap[2])
            out = Capped(reader, cap[0], "the command's stdout", cap[1])
            if cap[2] == "exec":  # streamed to its sink where the caller asks (output-stream)
                out = command_stdout(reader, cap[0])
            outputs = (out, Capped(reader, cap[0], "the command's stderr", cap[1]))
            try:
                reply = exchange(conn, ours, stdin or b"", deadline, outputs)
            except ProviderError:
                with contextlib.suppress(OSError):
                    conn.send(b"k")  # past its cap: the helper kills the command's group
                raise
            stdout, stderr = (output.data for output in outputs)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                conn.send(b"k")  # the helper kills the command's process group
            raise ExecTimeout(
                f"command did not return within {timeout:g} s in sandbox {sandbox.id}",
                operation="exec",
            ) from None
        finally:
            conn.close()
            for fd in ours:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if reply is None:
            raise ProviderError(f"sandbox {sandbox.id} stopped answering", operation="exec")
        if "error" in reply:
            raise ProviderError(f"cannot start {argv[0]!r}: {reply['error']}", operation="exec")
        return ExecResult(exit_code=reply["exit"], stdout=stdout, stderr=stderr)

    def upload(self, sandbox, path, data) -> None:
        result = self.exec(sandbox, ["/bin/sh", "-c", 'cat > "$1"', "sh", path], 300, stdin=data)
        if result.exit_code != 0:
            raise ProviderError(
                f"upload to {path} failed: {result.stderr.decode(errors='replace').strip()}",
                operation="upload",
            )

    def download(self, sandbox, path) -> bytes:
        cap = (self.limits.download_bytes, "max_download_mib", "download")
        result = self._exec(sandbox, ["/bin/cat", "--", path], 300, None, None, None, cap)
        if result.exit_code != 0:
            raise ProviderError(
                f"download of {path} failed: {result.stderr.decode(errors='replace').strip()}",
                operation="download",
            )
        return result.stdout

    def memory_in_use(self, sandbox) -> int | None:
        return memory_current(sandbox.id)

    def destroy(self, sandbox) -> None:
        directory = self.root / sandbox.id
        meta = _read_meta(directory)
        if meta is None:
            if directory.exists():
                shutil.rmtree(directory, ignore_errors=True)
            return
        self._remove(directory, meta)

    def _remove(self, directory: Path, meta: dict) -> None:
        """Kill every process of the sandbox, again until none is left, then remove its cgroups
        and directory; ProviderError naming what is left when that fails within the limit.

        Its processes are the recorded init pid and whatever is in its cgroups. When creation
        was cut short (a killed worker) before the pid was recorded, also those whose command
        line names its directory or cgroups (bubblewrap, the prelude joining the cgroups):
        otherwise its cgroups stay busy and it lives on until its lifetime ends. Killing is
        repeated because a process being set up can fork after one pass has listed its cgroup.
        """
        cgroups = [Path(c) for c in meta.get("cgroups", [])]
        cgroups += [c for c in sandbox_cgroups(meta["id"]) if c not in cgroups]
        known: dict[int, int | None] = {}
        if meta.get("pid"):
            known[meta["pid"]] = meta.get("pid_start")
        deadline = time.monotonic() + GONE_TIMEOUT_S
        search = not meta.get("pid")
        alive: list[int] = []

        def all_dead() -> bool:
            for found in _processes_of(directory, cgroups, by_command_line=search):
                if found not in known:
                    # No start time: already gone, and its pid may be reused by now.
                    started = _start_time(found)
                    if started is not None:
                        known[found] = started
            alive[:] = [process for process, started in known.items() if _alive(process, started)]
            for process in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process, signal.SIGKILL)
            return not alive

        if not waiting.poll_until(all_dead, GONE_TIMEOUT_S, KILL_POLL):
            states = ", ".join(f"{p} ({_state(p)})" for p in alive[:10])
            raise ProviderError(
                f"sandbox {meta['id']}: process(es) {states} still alive "
                f"{GONE_TIMEOUT_S:g} s after SIGKILL",
                operation="destroy",
            )
        for cgroup in cgroups:
            remove_cgroup(cgroup, deadline, on_busy=_kill_members)
        shutil.rmtree(directory, ignore_errors=True)
        if directory.exists():
            raise ProviderError(f"cannot remove {directory}", operation="destroy")

    def is_gone(self, sandbox_id: str) -> bool:
        directory = self.root / sandbox_id
        meta = _read_meta(directory)
        if meta is not None:
            if meta.get("pid") and _alive(meta["pid"], meta.get("pid_start")):
                return False
            if any(Path(cgroup).exists() for cgroup in meta.get("cgroups", [])):
                return False
        return not directory.exists()

    def expire(self, now: float | None = None) -> list[str]:
        """The host-side expiry: end every process of each sandbox whose lifetime has passed
        (`expires_at`), whatever became of its helper, and return their ids. The directory stays
        for destroy or `bench cleanup`. Run by every listing and create."""
        now = time.time() if now is None else now
        ended: list[str] = []
        for directory in sorted(self.root.glob("lb-*")):
            meta = _read_meta(directory)
            if meta is None or not isinstance(meta.get("expires_at"), int | float):
                continue
            if meta["expires_at"] > now:
                continue
            if meta.get("pid") and _alive(meta["pid"], meta.get("pid_start")):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(meta["pid"], signal.SIGKILL)  # the namespace's init: it takes all
            for cgroup in meta.get("cgroups", []):
                empty_cgroup(Path(cgroup))
            ended.append(directory.name)
        return ended

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        """Every sandbox directory, running or expired: an expired one still holds disk."""
        found: list[LiveSandbox] = []
        if not self.root.is_dir():
            return found
        self.expire()
        for directory in sorted(self.root.iterdir()):
            if not directory.name.startswith("lb-"):
                continue
            meta = _read_meta(directory) or {"label": "", "created_at": None}
            if label is not None and meta["label"] != label:
                continue
            created = meta.get("created_at")
            found.append(
                LiveSandbox(
                    id=directory.name,
                    label=meta["label"],
                    created_at=datetime.fromisoformat(created) if created else None,
                )
            )
        return found

    # -- snapshots: a plain copy of the writable tree (snapshots.py) ----------------------------

    def snapshot(self, sandbox: Sandbox) -> str:
        return snapshots.save(self, sandbox)

    def restore(self, snapshot_id: str, spec: SandboxSpec) -> Sandbox:
        snapshots.directory_of(self.root, snapshot_id)  # a hostile id is refused before create
        sandbox = self.create(spec)
        try:
            snapshots.unpack(self, snapshot_id, sandbox)
        except BaseException:
            with contextlib.suppress(Exception):
                self.destroy(sandbox)
            raise
        sandbox.facts["restored_from"] = snapshot_id
        return sandbox

    def delete_snapshot(self, snapshot_id: str) -> None:
        snapshots.delete(self.root, snapshot_id)

    def snapshot_gone(self, snapshot_id: str) -> bool:
        return snapshots.gone(self.root, snapshot_id)

    def list_snapshots(self, label: str | None = None) -> list[LiveSandbox]:
        return snapshots.listing(self.root, label)

    def fork(self, sandbox: Sandbox, spec: SandboxSpec) -> Sandbox:
        return fork_by_snapshot(self, sandbox, spec)

    def doctor(self) -> list[DoctorCheck]:
        """What the provider needs, and which of the sandbox's protections and limits hold."""
        checks = [
            DoctorCheck(
                "bwrap", self.bwrap is not None, self.bwrap or "apt-get install bubblewrap"
            ),
            DoctorCheck(
                "python3", self.python is not None, self.python or f"{PYTHON} (the exec helper)"
            ),
            DoctorCheck(
                "root",
                os.geteuid() == 0,
                "running as root" if os.geteuid() == 0 else "namespaces and cgroups need root",
            ),
        ]
        if os.geteuid() == 0:
            checks.append(
                DoctorCheck(
                    "sandbox user",
                    self.setpriv is not None,
                    f"commands run as uid {SANDBOX_UID} ({self.setpriv})"
                    if self.setpriv
                    else "setpriv (util-linux) is missing",
                )
            )
        try:
            compiled_filter()
            checks.append(DoctorCheck("seccomp", True, "filter built with libseccomp"))
        except ProviderError as exc:
            checks.append(DoctorCheck("seccomp", False, str(exc)))
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            free = shutil.disk_usage(self.root).free / 2**30
            checks.append(DoctorCheck("sandbox root", True, f"{self.root} ({free:.1f} GiB free)"))
        except OSError as exc:
            checks.append(DoctorCheck("sandbox root", False, f"{self.root}: {exc.strerror}"))
        _, facts = probe_cgroups()
        missing = missing_limits(facts)
        detail = describe_limits(facts)
        if missing and self.allow_unlimited:
            detail += "; BOXBENCH_LOCAL_ALLOW_UNLIMITED is set: sandboxes run without them"
        elif missing:
            detail += "; creates fail until they can be set (or BOXBENCH_LOCAL_ALLOW_UNLIMITED=1)"
        checks.append(DoctorCheck("size limits", not missing or self.allow_unlimited, detail))
        if all(check.ok for check in checks):
            checks.append(self._smoke_test())
        return checks

    def _smoke_test(self) -> DoctorCheck:
        """Create a sandbox, read from inside which protections hold, destroy it."""
        spec = SandboxSpec(cpus=1, memory_mib=512, label="boxbench-doctor", lifetime_s=30)
        probe = (
            "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
            "test -e /etc/shadow && echo shadow-visible; "
            "unshare -U true 2> /dev/null && echo userns-allowed; "
            "touch /usr/.probe 2> /dev/null && echo usr-writable; true"
        )
        started = time.monotonic()
        try:
            sandbox = self.create(spec)
            try:
                result = self.exec(sandbox, ["/bin/bash", "-c", probe], timeout=10)
            finally:
                self.destroy(sandbox)
        except ProviderError as exc:
            return DoctorCheck("sandbox", False, f"create/exec/destroy failed: {exc}")
        elapsed = (time.monotonic() - started) * 1000
        seen = _probe_findings(result.stdout.decode(errors="replace"))
        return DoctorCheck(
            "sandbox",
            result.exit_code == 0 and not seen["problems"],
            f"create, probe, destroy in {elapsed:.0f} ms: "
            + "; ".join(seen["problems"] or seen["holds"]),
        )

    def _meta_of(self, sandbox: Sandbox, operation: str) -> dict:
        meta = sandbox.handle if isinstance(sandbox.handle, dict) else None
        meta = meta or _read_meta(self.root / sandbox.id)
        if meta is None or not meta.get("pid"):
            raise ProviderError(f"sandbox {sandbox.id} does not exist", operation=operation)
        return meta


# -- helpers --------------------------------------------------------------------------------------


def _probe_findings(text: str) -> dict[str, list[str]]:
    """What the doctor's probe shows: the protections that hold, and the problems."""
    lines = text.split()
    holds: list[str] = []
    problems: list[str] = []
    uid = lines[0] if lines else "?"
    (holds if uid not in ("0", "?") else problems).append(f"commands run as uid {uid}")
    for name, good, says in (
        ("CapEff:", "0000000000000000", "no capabilities"),
        ("NoNewPrivs:", "1", "no new privileges"),
        ("Seccomp:", "2", "seccomp filter"),
    ):
        value = lines[lines.index(name) + 1] if name in lines[:-1] else "?"
        (holds if value == good else problems).append(f"{says} ({name} {value})")
    for word, says in (
        ("shadow-visible", "the host's /etc/shadow is visible"),
        ("userns-allowed", "a nested user namespace was allowed"),
        ("usr-writable", "/usr is writable"),
    ):
        if word in lines:
            problems.append(says)
    return {"holds": holds, "problems": problems}


HARBOR_PATHS = ("/logs", "/solution", "/tests")


def _harbor_links() -> list[str]:
    links = []
    for path in HARBOR_PATHS:
        links += ["--symlink", f"/tmp/.harbor{path}", path]
    return links


def tmpfs_sizes(spec: SandboxSpec, app_cap_mib: int | None = None) -> tuple[int, int]:
    """(MiB of /app, MiB of /tmp): together with /dev/shm within the memory limit, so filling
    them ends in "no space left" rather than the sandbox's OOM killer (unless disk_mib asks
    for more than the memory). The provider's `app_mib` setting caps /app."""
    app_mib = spec.disk_mib or spec.memory_mib // 2
    if app_cap_mib is not None:
        app_mib = min(app_mib, app_cap_mib)
    return app_mib, spec.memory_mib // 4


def _write_meta(directory: Path, meta: dict) -> None:
    tmp = directory / "sandbox.json.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with open(fd, "w") as out:
        out.write(json.dumps(meta))
    tmp.replace(directory / "sandbox.json")


def _read_meta(directory: Path) -> dict | None:
    try:
        return json.loads((directory / "sandbox.json").read_text())
    except (OSError, ValueError):
        return None


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, from one read; None once the
    process is gone (a dying process can also answer ESRCH, or an empty file)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields if len(fields) > 19 else None


def _processes_of(directory: Path, cgroups: list[Path], *, by_command_line: bool) -> set[int]:
    """Processes of a sandbox found without its recorded pid: those in its cgroups and, with
    `by_command_line`, any whose command line names its id (bubblewrap and the namespace's
    init) or one of its cgroups (the prelude that moves itself into them)."""
    found: set[int] = set()
    for cgroup in cgroups:
        with contextlib.suppress(OSError, ValueError):
            found.update(int(pid) for pid in (cgroup / "cgroup.procs").read_text().split())
    if by_command_line:
        names = {directory.name.encode(), *(str(c).encode() for c in cgroups)}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if names & set((entry / "cmdline").read_bytes().split(b"\0")):
                        found.add(int(entry.name))
    found.discard(os.getpid())
    return found


def _kill_members(cgroup: Path) -> None:
    """Kill whatever is in a cgroup now: a process can join after the last pass found none."""
    with contextlib.suppress(OSError, ValueError):
        for pid in (cgroup / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def _state(pid: int) -> str:
    """A process's state letter for a report (D: uninterruptible, the usual reason it lingers)."""
    fields = _stat(pid)
    return fields[0] if fields else "gone"


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks, so a reused pid is never mistaken for ours."""
    fields = _stat(pid)
    return None if fields is None else int(fields[19])


def _alive(pid: int, pid_start: int | None) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and pid_start in (None, int(fields[19]))
