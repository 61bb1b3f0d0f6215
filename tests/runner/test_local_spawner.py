"""The `local` sandbox's exec helper (runner/providers/local/spawner.py), driven directly: it
runs inside every sandbox, and its death ends the sandbox."""

import errno
import json
import os
import selectors
import socket
import subprocess

import pytest

from runner.providers.local import spawner


def test_a_kill_request_after_its_command_was_reaped_in_the_same_batch_is_a_no_op():
    # Under load, one select() can return both a command's end and the runner's kill request
    # (a download past its cap). The end is handled first: the command is reaped and its
    # connection answered and closed; the kill that follows must not touch either.
    events = selectors.DefaultSelector()
    conn, runner = socket.socketpair()
    child = subprocess.Popen(["true"])
    pidfd = os.pidfd_open(child.pid)
    live = {child.pid: (pidfd, conn)}
    events.register(pidfd, selectors.EVENT_READ, ("exited", child.pid))
    events.register(conn, selectors.EVENT_READ, ("kill", child.pid))
    runner.send(b"k")
    ready = set()
    while len(ready) < 2:
        ready |= {key.data[0] for key, _ in events.select(30)}
    spawner._ended(events, live, {}, child.pid)
    spawner._kill(events, live, child.pid)
    assert live == {} and events.get_map() == {}
    assert json.loads(runner.recv(100)) == {"exit": 0}
    child.returncode = 0  # reaped by the helper's waitpid
    runner.close()


def test_a_kill_request_kills_the_running_commands_group_and_its_end_is_still_told():
    events = selectors.DefaultSelector()
    conn, runner = socket.socketpair()
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    pidfd = os.pidfd_open(child.pid)
    live = {child.pid: (pidfd, conn)}
    events.register(pidfd, selectors.EVENT_READ, ("exited", child.pid))
    events.register(conn, selectors.EVENT_READ, ("kill", child.pid))
    spawner._kill(events, live, child.pid)
    assert [key.data[0] for key, _ in events.select(30)] == ["exited"]
    spawner._ended(events, live, {}, child.pid)
    child.returncode = -9
    assert json.loads(runner.recv(100)) == {"exit": -9}
    runner.close()


def test_a_command_the_init_reaped_with_the_orphans_still_has_its_exit_told():
    # As the namespace's init the helper reaps every child on SIGCHLD; a command reaped there
    # before its own end event keeps its status for that event.
    events = selectors.DefaultSelector()
    conn, runner = socket.socketpair()
    child = subprocess.Popen(["sh", "-c", "exit 3"])
    orphan = subprocess.Popen(["true"])  # a child no command waits for
    pidfd = os.pidfd_open(child.pid)
    live, statuses = {child.pid: (pidfd, conn)}, {}
    events.register(pidfd, selectors.EVENT_READ, ("exited", child.pid))
    events.select(30)
    os.waitid(os.P_PID, orphan.pid, os.WEXITED | os.WNOWAIT)
    spawner._reap(live, statuses)
    child.returncode = orphan.returncode = 0  # both reaped by the helper
    assert list(statuses) == [child.pid]
    spawner._ended(events, live, statuses, child.pid)
    assert json.loads(runner.recv(100)) == {"exit": 3}
    assert statuses == {} and live == {}
    runner.close()


def _null_fds():
    return [os.open(os.devnull, os.O_RDWR) for _ in range(3)]


def test_a_spawn_refused_for_want_of_processes_is_the_helpers_failure_not_an_exit_code(
    monkeypatch, tmp_path
):
    # At the sandbox's process limit posix_spawn fails with EAGAIN: no command ran, so the
    # runner must hear a failure to start (a provider failure), never an exit code that reads
    # as the command's own.
    monkeypatch.chdir(tmp_path)  # _spawn changes directory, as the single-threaded helper may

    def refused(*args, **kwargs):
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "posix_spawn", refused)
    request = {"argv": ["/bin/true"], "env": {"PATH": "/usr/bin:/bin"}, "workdir": str(tmp_path)}
    with pytest.raises(OSError) as caught:
        spawner._spawn(request, _null_fds())
    assert caught.value.errno == errno.EAGAIN


def test_a_program_that_cannot_run_is_the_commands_exit_126_as_a_shell_says(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    request = {"argv": [str(script)], "env": {"PATH": "/usr/bin:/bin"}, "workdir": str(tmp_path)}
    assert spawner._spawn(request, _null_fds()) == (None, 126)
