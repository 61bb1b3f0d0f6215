"""Hostile commands in a real `local` sandbox, each refused.

Every command here is bounded on its own (a fixed number of forks, a fixed number of bytes), so a
sandbox whose limits failed could not hurt the machine running the tests either: the test would
fail, not the host.
"""

import contextlib
import errno
import json
import os
import re
import select
import socket
import subprocess
from pathlib import Path

import pytest

from runner.declarations import get_declaration
from runner.providers.base import ProviderError, Sandbox, SandboxSpec
from runner.providers.local import LocalProvider
from runner.providers.local import adapter as local_module
from runner.providers.local.cgroups import PIDS_MAX
from runner.providers.local.etc import FIXED, SANDBOX_UID
from runner.providers.seccomp_rules import REFUSED
from tests.support.reliability import wait_for


def spec(**overrides):
    return SandboxSpec(
        **{"cpus": 1, "memory_mib": 1024, "label": "bb-hostile", "lifetime_s": 120, **overrides}
    )


def sh(provider, sandbox, script, timeout=120):
    return provider.exec(sandbox, ["/bin/bash", "-c", script], timeout)


def python(provider, sandbox, source, timeout=120):
    result = provider.exec(sandbox, ["/usr/bin/python3", "-I", "-c", source], timeout)
    assert result.exit_code == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode()


def test_it_cannot_read_the_hosts_shadow_file_or_other_etc_files(local):
    assert Path("/etc/shadow").exists()  # on the host, so its absence inside means something
    sandbox = local.create(spec())
    result = sh(local, sandbox, "cat /etc/shadow")
    assert result.exit_code != 0 and b"No such file" in result.stderr
    listed = set(sh(local, sandbox, "ls /etc").stdout.decode().split())
    assert {"passwd", "group", "ld.so.cache", "os-release"} <= listed
    assert not listed & {"shadow", "gshadow", "ssh", "sudoers", "environment", "machine-id"}
    assert b"sandbox:x:65534" in sh(local, sandbox, "cat /etc/passwd").stdout


def test_its_commands_run_as_an_unprivileged_host_user_without_capabilities(local):
    sandbox = local.create(spec())
    status = sh(local, sandbox, "id -u; grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status")
    fields = dict(line.split(":", 1) for line in status.stdout.decode().splitlines()[1:])
    assert status.stdout.split()[0] == str(SANDBOX_UID).encode()
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert fields[cap].strip() == "0000000000000000", cap
    assert fields["NoNewPrivs"].strip() == "1" and fields["Seccomp"].strip() == "2"
    # Seen from the host: every process of the sandbox belongs to the unprivileged user.
    sh(local, sandbox, "(sleep 100 > /dev/null 2>&1 &)")
    members = set()
    for cgroup in sandbox.handle["cgroups"]:
        members.update(Path(cgroup, "cgroup.procs").read_text().split())
    assert len(members) >= 3  # bubblewrap, the exec helper, sleep
    for pid in members:
        uids = Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[:4]
        assert uids == [str(SANDBOX_UID)] * 4, (pid, uids)


def test_it_refuses_writes_outside_app_and_tmp(local):
    sandbox = local.create(spec())
    places = "/x /usr/x /etc/x /dev/x /proc/x /sys/x /bin/x /app/x /tmp/x /dev/shm/x"
    result = sh(local, sandbox, f"for p in {places}; do touch $p 2> /dev/null && echo $p; done")
    assert result.stdout.decode().split() == ["/app/x", "/tmp/x", "/dev/shm/x"]
    assert local.root.joinpath(sandbox.id).is_dir()
    assert not list(local.root.joinpath(sandbox.id).rglob("x"))  # /app is not on the host disk


def test_every_sandbox_holds_at_most_1024_tasks_by_its_cgroup_and_its_nproc(local):
    sandbox = local.create(spec())
    assert sandbox.facts["enforced"]["pids"] and f"at most {PIDS_MAX} tasks" in str(sandbox.facts)
    assert pids_max_of(sandbox) == str(PIDS_MAX) == "1024"
    assert sh(local, sandbox, "ulimit -u").stdout.strip() == str(PIDS_MAX).encode()


# The fence is the same at any bound (the cgroup's pids.max and RLIMIT_NPROC, both from the
# setting); at 1024 the bomb's forks and execs took 11 s on two cores at a load of 13, at 128 1.5 s.
BOMB_PIDS = 128


def test_it_stops_a_fork_bomb_at_its_process_limit(tmp_path):
    settings = {"root": tmp_path / "sandboxes", "pids_max": BOMB_PIDS}
    bounded = LocalProvider(get_declaration("local"), settings)
    sandbox = bounded.create(spec(memory_mib=2048))
    try:
        assert sandbox.facts["enforced"]["pids"] and pids_max_of(sandbox) == str(BOMB_PIDS)
        # At most 1.5 times the limit, each child a sleep that ends by itself: bounded either way.
        bomb = f"""
import os
started = 0
for _ in range({BOMB_PIDS * 3 // 2}):
    try:
        pid = os.fork()
    except OSError as exc:
        print("refused", exc.errno)
        break
    if pid == 0:
        # Off the command's output: the exec ends when its last holder closes it, not at 60 s.
        null = os.open("/dev/null", os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.execv("/bin/sleep", ["sleep", "60"])
    started += 1
print("started", started)
"""
        out = python(bounded, sandbox, bomb).split()
        assert out[:2] == ["refused", str(errno.EAGAIN)]
        assert int(out[3]) < BOMB_PIDS
        assert sh(bounded, sandbox, "ulimit -u").stdout.strip() == str(BOMB_PIDS).encode()
    finally:
        bounded.destroy(sandbox)


def test_a_process_limit_below_what_a_sandbox_needs_is_refused_by_name(tmp_path):
    for wrong in (8, "64", 12.5, True):
        said = f"local: pids_max must be a whole number >= 16, got {wrong!r}"
        with pytest.raises(ValueError, match=re.escape(said)):
            LocalProvider(get_declaration("local"), {"root": tmp_path, "pids_max": wrong})


def pids_max_of(sandbox: Sandbox) -> str:
    pids_cgroup = next(Path(c) for c in sandbox.handle["cgroups"] if Path(c, "pids.max").exists())
    return (pids_cgroup / "pids.max").read_text().strip()


def test_it_stops_filling_app_tmp_and_shm_at_their_sizes(local):
    sandbox = local.create(spec(memory_mib=1024, disk_mib=64))
    result = sh(
        local,
        sandbox,
        "for d in /app /tmp /dev/shm; do head -c 400m /dev/zero > $d/fill; echo $d $?; "
        "du -sm $d/fill; rm $d/fill; done",
    )
    lines = result.stdout.decode().split()
    assert lines[0:2] == ["/app", "1"] and int(lines[2]) <= 64
    assert lines[4:6] == ["/tmp", "1"] and int(lines[6]) <= 256
    assert lines[8:10] == ["/dev/shm", "1"] and int(lines[10]) <= 64
    assert result.stderr.count(b"No space left on device") == 3
    assert sh(local, sandbox, "echo alive").stdout == b"alive\n"  # nothing was OOM-killed


def test_it_refuses_new_namespaces(local):
    sandbox = local.create(spec())
    for command in ("unshare -Ur true", "unshare -U true", "unshare -n true", "unshare -m true"):
        result = sh(local, sandbox, command)
        assert result.exit_code != 0, command
        assert b"Operation not permitted" in result.stderr, (command, result.stderr)


def syscall_numbers(names):
    import pyseccomp

    return {name: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) for name in names}


def test_its_seccomp_filter_refuses_keyrings_bpf_io_uring_mounts_modules_and_ptrace(local):
    # Every refusal the filter is built from that this architecture has (umount, stime and vm86
    # exist on 32-bit x86 only), called with zero arguments: harmless without the filter for an
    # unprivileged user, and some (ptrace's PTRACE_TRACEME, unshare(0), iopl(0)) even succeed
    # there, so EPERM is the filter's answer.
    known = syscall_numbers([*REFUSED, "clone3", "getpid"])
    numbers = {name: number for name, number in known.items() if number >= 0}
    refused = [name for name in REFUSED if name in numbers]
    probe = f"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
found = {{}}
for name, number in {json.dumps(numbers)}.items():
    ctypes.set_errno(0)
    result = libc.syscall(number, 0, 0, 0, 0, 0, 0)
    found[name] = ctypes.get_errno() if result == -1 else "ok"
print(json.dumps(found))
"""
    sandbox = local.create(spec())
    found = json.loads(python(local, sandbox, probe))
    assert {name: found[name] for name in refused} == {name: errno.EPERM for name in refused}
    assert found["clone3"] == errno.ENOSYS  # so the C library falls back to clone
    assert found["getpid"] == "ok"
    assert sh(local, sandbox, "(sleep 1 &); echo forked").stdout == b"forked\n"


def test_it_cannot_reach_the_network(local):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        sandbox = local.create(spec())
        result = sh(
            local,
            sandbox,
            f"echo hi > /dev/tcp/127.0.0.1/{port} && echo reached-host; "
            "echo hi > /dev/tcp/1.1.1.1/53 && echo reached-outside; "
            "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
            timeout=60,
        )
        assert result.stdout.split() == [b"lo"]
        assert b"Connection refused" in result.stderr
        assert b"Network is unreachable" in result.stderr
        readable, _, _ = select.select([listener], [], [], 0)
        assert readable == []  # nothing connected to the host's port


def test_it_cannot_see_host_processes(local):
    with subprocess.Popen(["sleep", "123.25"]) as host_process:
        try:
            sandbox = local.create(spec())
            result = sh(local, sandbox, "ps -eo pid,args --no-headers")
        finally:
            host_process.kill()
    commands = [line.split(None, 1)[1] for line in result.stdout.decode().splitlines()]
    assert len(commands) <= 4, commands  # bubblewrap's init, the exec helper, bash, ps
    assert not any("123.25" in command or "pytest" in command for command in commands)


def test_its_exec_helper_answers_only_requests_carrying_the_token(local):
    sandbox = local.create(spec())
    forged = Sandbox(sandbox.id, sandbox.label, handle={**sandbox.handle, "token": "0" * 32})
    with pytest.raises(ProviderError, match="stopped answering"):
        local.exec(forged, ["touch", "/app/ran"], 60)
    assert sh(local, sandbox, "test -e /app/ran").exit_code == 1


def test_a_create_that_cannot_set_its_limits_fails_naming_them(local, monkeypatch):
    made, tried = local_module.make_cgroups, []

    def without_pids(sandbox_id, cpus, memory_mib, pids_max):
        tried.append(sandbox_id)
        cgroups, facts = made(sandbox_id, cpus, memory_mib, pids_max)
        facts["enforced"]["pids"] = False
        facts["notes"].append("the pids limit is not enforced: no writable cgroup pids controller")
        return cgroups, facts

    monkeypatch.setattr(local_module, "make_cgroups", without_pids)
    with pytest.raises(ProviderError, match="pids limit.*BOXBENCH_LOCAL_ALLOW_UNLIMITED") as error:
        local.create(spec())
    assert error.value.code == "limits_unavailable"
    assert local.list_sandboxes() == [] and local_module.sandbox_cgroups(tried[0]) == []

    local.allow_unlimited = True  # the operator's documented override
    sandbox = local.create(spec())
    assert any("BOXBENCH_LOCAL_ALLOW_UNLIMITED" in note for note in sandbox.facts["notes"])
    assert sh(local, sandbox, "echo ok").stdout == b"ok\n"


def test_its_doctor_says_which_protections_and_limits_hold(local):
    checks = {check.name: check for check in local.doctor()}
    assert checks["size limits"].ok and "pids: enforced" in checks["size limits"].detail
    assert checks["seccomp"].ok
    detail = checks["sandbox"].detail
    assert checks["sandbox"].ok, detail
    for words in ("uid 65534", "no capabilities", "no new privileges", "seccomp filter"):
        assert words in detail


def test_the_doctors_probe_names_each_protection_that_fails():
    seen = local_module._probe_findings(
        "0\nCapEff:\t000001ffffffffff\nNoNewPrivs:\t0\nSeccomp:\t0\nshadow-visible\n"
        "userns-allowed\nusr-writable\n"
    )
    assert seen["holds"] == []
    assert len(seen["problems"]) == 7
    assert "the host's /etc/shadow is visible" in seen["problems"]


def _members(sandbox):
    found = set()
    for cgroup in sandbox.handle["cgroups"]:
        with contextlib.suppress(FileNotFoundError):
            found.update(Path(cgroup, "cgroup.procs").read_text().split())
    return found


ESCAPE = "setsid bash -c '(sleep 600 &)' > /dev/null 2>&1 < /dev/null; echo planted"


def test_a_process_that_leaves_its_session_ends_with_the_sandboxs_lifetime(local):
    sandbox = local.create(spec(lifetime_s=4))
    assert sh(local, sandbox, ESCAPE).stdout == b"planted\n"
    assert _members(sandbox)
    wait_for(lambda: not _members(sandbox), 60, "empty cgroup after the lifetime")


def test_a_command_cannot_end_the_sandboxs_init_early(local):
    sandbox = local.create(spec())
    sh(local, sandbox, "kill -KILL 1; kill -INT 1; kill -TERM 1; kill -HUP 1")
    assert sh(local, sandbox, "echo alive").stdout == b"alive\n"


def test_the_host_side_expiry_ends_every_process_once_the_lifetime_has_passed(local):
    sandbox = local.create(spec(lifetime_s=600))
    assert sh(local, sandbox, ESCAPE).stdout == b"planted\n"
    expires_at = sandbox.handle["expires_at"]
    assert local.expire(now=expires_at - 1) == [] and _members(sandbox)
    assert local.expire(now=expires_at + 1) == [sandbox.id]
    wait_for(lambda: not _members(sandbox), 30, "empty cgroup after the expiry")
    assert local.root.joinpath(sandbox.id).is_dir()  # left for destroy or bench cleanup


def test_no_other_local_user_can_read_the_exec_helpers_token(local):
    sandbox = local.create(spec())
    token = sandbox.handle["token"].encode()
    assert local.root.stat().st_mode & 0o777 == 0o700
    assert local.root.joinpath(sandbox.id).stat().st_mode & 0o777 == 0o700
    assert local.root.joinpath(sandbox.id, "sandbox.json").stat().st_mode & 0o777 == 0o600
    members = _members(sandbox)
    assert members
    for pid in members:  # every process of the sandbox, bubblewrap included
        assert token not in Path(f"/proc/{pid}/cmdline").read_bytes(), pid
    assert sh(local, sandbox, "echo answered").stdout == b"answered\n"


def test_it_reads_fixed_copies_of_the_files_operators_keep_credentials_in(local):
    sandbox = local.create(spec())
    for name, text in FIXED.items():
        assert sh(local, sandbox, f"cat /etc/{name}").stdout.decode() == text, name
    # Nothing of the runner's environment or working directory reaches a process inside.
    environ = sh(local, sandbox, "cat /proc/[0-9]*/environ 2> /dev/null | tr '\\0' '\\n'")
    assert os.getcwd().encode() not in environ.stdout
    assert b"PWD=/app" in environ.stdout and b"PYTEST" not in environ.stdout
