import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from runner import clock
from runner.providers.answers import Capped, Reader
from runner.providers.base import ExecTimeout, SandboxSpec
from runner.providers.local import adapter as local_module


def spec(**overrides):
    return SandboxSpec(
        **{"cpus": 1, "memory_mib": 1024, "label": "bb-test", "lifetime_s": 60, **overrides}
    )


# Generous: under load an exec can take seconds, and no test here is about this limit.
def sh(provider, sandbox, script, timeout=60):
    return provider.exec(sandbox, ["/bin/bash", "-c", script], timeout)


def test_it_isolates_a_sandbox_without_network_and_with_a_read_only_toolchain(local):
    sandbox = local.create(spec())
    result = sh(
        local,
        sandbox,
        "pwd; touch /usr/x 2>&1; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; env",
    )
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "/app"
    assert "Read-only file system" in lines[1]
    assert lines[2:3] == ["lo"]  # only loopback: the network is cut off
    assert "DATABASE_URL" not in result.stdout.decode() and "SECRET" not in result.stdout.decode()


def test_it_keeps_background_processes_between_calls(local):
    sandbox = local.create(spec())
    sh(local, sandbox, "(sleep 30 > /dev/null 2>&1 &); echo started")
    assert b"sleep 30" in sh(local, sandbox, "ps -eo args").stdout


def test_it_returns_from_launching_a_background_command_while_the_command_still_runs(local):
    # The lifecycle's launch (runner/clock.py) must not keep the exec's output open: this adapter
    # reads it to EOF, so a launch holding it lasted as long as the command, and a command longer
    # than the launch's 60 s limit failed its trial (a C build unit under load).
    sandbox = local.create(spec())
    launched = sh(local, sandbox, clock.background_script("sleep 300", "launch"))
    assert launched.exit_code == 0
    finished = clock.background_paths("launch")["rc"]
    assert sh(local, sandbox, f"test ! -e {finished}").exit_code == 0


def test_it_moves_files_in_and_out(local):
    sandbox = local.create(spec())
    local.upload(sandbox, "/app/in.bin", b"\x00\x01" * 5000)
    assert local.download(sandbox, "/app/in.bin") == b"\x00\x01" * 5000


def test_it_ends_a_command_past_its_time_limit(local):
    sandbox = local.create(spec())
    with pytest.raises(ExecTimeout):
        local.exec(sandbox, ["sleep", "60"], timeout=0.2)
    # The kill is sent when the limit passes; under load the process can take a moment to go.
    deadline = time.monotonic() + 20
    while b"sleep 60" in sh(local, sandbox, "ps -eo args").stdout:
        assert time.monotonic() < deadline, "the command outlived its time limit by 20 s"
        time.sleep(0.1)


def test_it_is_gone_after_its_lifetime_even_without_the_runner(local):
    sandbox = local.create(spec(lifetime_s=0.5))
    # The sandbox ends itself at its lifetime: ask until it says so (not a fixed sleep). While
    # it is ending, its agent can refuse the connection first.
    deadline, refusal = time.monotonic() + 30, ""
    while "not running" not in refusal and time.monotonic() < deadline:
        try:
            local.exec(sandbox, ["true"], timeout=60)
        except Exception as exc:  # noqa: BLE001 - the assertion below says which one counts
            refusal = str(exc)
        time.sleep(0.05)
    assert "not running" in refusal
    # Its directory is left for cleanup, which finds it by label.
    assert [s.label for s in local.list_sandboxes("bb-test")] == ["bb-test"]
    local.destroy(local.list_sandboxes()[0])
    assert local.is_gone(sandbox.id) and local.list_sandboxes() == []


def test_it_says_how_the_requested_size_was_enforced(local):
    sandbox = local.create(spec(cpus=1, memory_mib=512))
    facts = sandbox.facts
    assert set(facts["enforced"]) == {"cpus", "memory", "pids"}
    if facts["enforced"]["memory"]:
        result = sh(local, sandbox, "head -c 900m /dev/zero | tail > /dev/null; echo $?")
        assert result.stdout.strip() != b"0" or result.exit_code != 0  # killed at 512 MiB
    else:
        assert any("memory" in note for note in facts["notes"])


def test_it_refuses_images_it_cannot_run(local):
    with pytest.raises(Exception, match="no image"):
        local.create(spec(image="ghcr.io/example/image@sha256:abc"))
    assert local.list_sandboxes() == []


def test_its_doctor_runs_a_real_sandbox(local):
    checks = {check.name: check for check in local.doctor()}
    assert checks["bwrap"].ok and checks["sandbox"].ok, checks["sandbox"].detail


def test_its_commands_are_born_in_the_sandbox_cgroups(local):
    sandbox = local.create(spec())
    cgroups = [Path(path) for path in sandbox.handle["cgroups"]]
    if not cgroups:
        pytest.skip("no writable cgroup controller on this host")

    def members():
        return [len((path / "cgroup.procs").read_text().split()) for path in cgroups]

    before = members()
    sh(local, sandbox, "(sleep 30 > /dev/null 2>&1 &)")
    assert members() == [n + 1 for n in before]  # forked inside: no migration needed


def test_it_streams_large_input_and_output_whole_and_apart(local):
    sandbox = local.create(spec())
    data = bytes(range(256)) * 8192  # 2 MiB
    result = local.exec(sandbox, ["/bin/bash", "-c", "cat; echo err >&2"], 60, stdin=data)
    assert (result.exit_code, result.stdout, result.stderr) == (0, data, b"err\n")


def test_it_reports_exit_codes_signals_and_commands_it_cannot_start(local):
    sandbox = local.create(spec())
    assert sh(local, sandbox, "exit 7").exit_code == 7
    assert sh(local, sandbox, "kill -KILL $$").exit_code == -9
    missing = local.exec(sandbox, ["/no/such/tool"], 60)
    assert missing.exit_code == 127 and b"/no/such/tool" in missing.stderr
    elsewhere = local.exec(sandbox, ["pwd"], 60, workdir="/tmp")
    assert elsewhere.stdout == b"/tmp\n"
    unknown = local.exec(sandbox, ["no-such-tool"], 60)
    assert unknown.exit_code == 127 and b"no-such-tool" in unknown.stderr
    sh(local, sandbox, "printf 'echo hi' > /tmp/plain && chmod -x /tmp/plain")
    assert local.exec(sandbox, ["/tmp/plain"], 60).exit_code == 126
    nowhere = local.exec(sandbox, ["pwd"], 60, workdir="/no/such/dir")
    assert nowhere.exit_code == 127 and b"/no/such/dir" in nowhere.stderr
    # A command starts with SIGPIPE at its default, as from a shell: `yes` ends quietly.
    piped = sh(local, sandbox, "yes | head -n 1")
    assert (piped.exit_code, piped.stdout, piped.stderr) == (0, b"y\n", b"")


def test_it_says_a_destroyed_sandbox_is_not_running(local):
    sandbox = local.create(spec())
    local.destroy(sandbox)
    with pytest.raises(Exception, match="not running"):
        local.exec(sandbox, ["true"], timeout=60)


def processes_binding(directory):
    """Pids of processes whose command line names the sandbox (bubblewrap and its init)."""
    marker = directory.name.encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


class WorkerKilled(BaseException):
    """Like SIGKILL for the worker: no `except Exception` cleanup runs."""


def test_it_destroys_a_sandbox_whose_creation_was_cut_short_before_its_pid_was_recorded(
    local, monkeypatch
):
    def killed(pid):
        raise WorkerKilled

    # bubblewrap is running; the worker dies before writing the init pid into sandbox.json.
    monkeypatch.setattr(local_module, "_start_time", killed)
    with pytest.raises(WorkerKilled):
        local.create(spec(lifetime_s=600))
    monkeypatch.undo()
    [half] = local.list_sandboxes("bb-test")
    directory = local.root / half.id
    meta = local_module._read_meta(directory)
    assert meta["pid"] is None and processes_binding(directory)

    local.destroy(half)

    assert processes_binding(directory) == []  # not left running until its lifetime ends
    assert all(not Path(cgroup).exists() for cgroup in meta["cgroups"])
    assert local.is_gone(half.id) and local.list_sandboxes() == []


def test_it_sees_a_process_that_exited_between_reads_as_gone(monkeypatch):
    child = subprocess.Popen(["true"])
    started = local_module._start_time(child.pid)
    child.wait()
    assert local_module._alive(child.pid, started) is False
    # A dying process's stat file can be empty or cut short: gone, never an exception.
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "")
    assert local_module._alive(1, None) is False
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "1 (init) S 0")
    assert local_module._alive(1, None) is False


def test_it_destroys_a_sandbox_whose_creation_was_cut_short_before_its_cgroups_were_recorded(
    local, monkeypatch
):
    def killed(*args):
        raise WorkerKilled

    def write_before_cgroups(directory, meta):
        if not meta["cgroups"]:
            _real_write(directory, meta)

    # The cgroups exist (and may hold a limit), sandbox.json does not list them yet.
    monkeypatch.setattr(local_module, "_write_meta", write_before_cgroups)
    monkeypatch.setattr(local_module.LocalProvider, "_start", killed)
    with pytest.raises(WorkerKilled):
        local.create(spec(lifetime_s=600))
    monkeypatch.undo()
    [half] = local.list_sandboxes("bb-test")
    made = local_module.sandbox_cgroups(half.id)
    if not made:
        pytest.skip("no writable cgroup on this host")
    assert local_module._read_meta(local.root / half.id)["cgroups"] == []

    local.destroy(half)

    assert all(not cgroup.exists() for cgroup in made)
    assert local.is_gone(half.id) and local.list_sandboxes() == []


_real_write = local_module._write_meta


def test_it_kills_processes_that_appear_after_its_first_pass(local, monkeypatch):
    sandbox = local.create(spec(lifetime_s=600))
    # A process outside the namespace's init, in the sandbox's cgroups: the init's death does
    # not take it along, so only the cgroup shows it.
    cgroups = local_module._read_meta(local.root / sandbox.id)["cgroups"]
    if not cgroups:
        pytest.skip("no writable cgroup on this host: processes cannot be found by cgroup")
    joined = local_module.join_cgroups_prefix([Path(c) for c in cgroups])
    stray = subprocess.Popen([*joined, "sleep", "600"], start_new_session=True)
    procs = Path(cgroups[0]) / "cgroup.procs"
    deadline = time.monotonic() + 30
    while str(stray.pid) not in procs.read_text().split() and time.monotonic() < deadline:
        time.sleep(0.01)
    real = local_module._processes_of
    passes = {"n": 0}

    def late(directory, groups, *, by_command_line):
        passes["n"] += 1
        found = real(directory, groups, by_command_line=by_command_line)
        return found - {stray.pid} if passes["n"] == 1 else found

    monkeypatch.setattr(local_module, "_processes_of", late)
    local.destroy(sandbox)
    assert stray.wait(timeout=10) == -9
    assert passes["n"] >= 2 and local.is_gone(sandbox.id)


def test_it_kills_a_process_that_joins_a_cgroup_after_its_last_pass(local, monkeypatch):
    sandbox = local.create(spec(lifetime_s=600))
    cgroups = local_module._read_meta(local.root / sandbox.id)["cgroups"]
    if not cgroups:
        pytest.skip("no writable cgroup on this host")
    joined = local_module.join_cgroups_prefix([Path(c) for c in cgroups])
    strays = []
    real_remove = local_module.remove_cgroup

    def join_first(path, deadline, on_busy=None):
        if not strays:  # between the last pass and the removal
            strays.append(subprocess.Popen([*joined, "sleep", "600"], start_new_session=True))
            while str(strays[0].pid) not in (path / "cgroup.procs").read_text().split():
                time.sleep(0.01)
        real_remove(path, deadline, on_busy)

    monkeypatch.setattr(local_module, "remove_cgroup", join_first)
    local.destroy(sandbox)
    assert strays[0].wait(timeout=10) == -9 and local.is_gone(sandbox.id)


def test_it_reports_a_process_it_cannot_kill(local, monkeypatch):
    sandbox = local.create(spec(lifetime_s=600))
    monkeypatch.setattr(local_module, "GONE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(local_module.os, "kill", lambda pid, sig: None)  # as if stuck in D state
    with pytest.raises(local_module.ProviderError, match=r"still alive 0.3 s after SIGKILL"):
        local.destroy(sandbox)
    monkeypatch.undo()
    local.destroy(sandbox)
    assert local.is_gone(sandbox.id)


def test_a_helper_that_dies_mid_command_is_no_reply_not_a_connection_reset():
    # The runner's end of the helper's connection, and pipes whose writers are already closed.
    conn, helper = socket.socketpair()
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    for fd in (stdin_r, out_w, err_w):
        os.close(fd)
    # A helper that dies (its sandbox destroyed) with a kill request unread resets the
    # connection: the exec must hear "no reply" (a provider failure), not an OSError.
    conn.send(b"k")
    helper.close()
    outputs = tuple(Capped(Reader("local", "exec"), 1024, name, "max_output_mib") for name in "oe")
    ours = [stdin_w, out_r, err_r]
    try:
        assert local_module.exchange(conn, ours, b"", time.monotonic() + 30, outputs) is None
    finally:
        conn.close()
        for fd in ours[1:]:
            os.close(fd)
