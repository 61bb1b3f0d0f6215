"""The exec helper of a `local` sandbox: the sandbox's main process, run by the system Python.

runner/providers/local/adapter.py reads this file as text and starts it inside bubblewrap
(`python3 -I -S -c <this file> FD LIFETIME TOKEN_FD NPROC`, the token read from a pipe), already
in the sandbox's namespaces,
cgroups, seccomp filter and unprivileged user, so
every command it starts is born there: no `nsenter` and no cgroup migration per exec (on cgroup v1
a migration waits for an RCU grace period, milliseconds under load). Standard library only; nothing
of the project is importable here.

Protocol, one connection per command on the inherited listening socket FD:
  runner -> helper  a 4-byte big-endian length, with the command's stdin, stdout and stderr
                    descriptors attached (SCM_RIGHTS), then that many bytes of JSON
                    {"token": TOKEN, "argv": [...], "env": {...}, "workdir": "/app"}
  helper -> runner  one JSON line {"exit": code} once the command ends (-N: killed by signal N),
                    or {"error": "..."} when it could not be started
  runner -> helper  any byte or EOF before that: kill the command's process group.
The command runs in its own session. The helper is the PID namespace's init (bubblewrap's
--as-pid-1): it reaps every orphan, no process of the sandbox can signal it (a namespace's init
gets only the signals it handles, and it handles none a command could use to end it), and when it
exits, after LIFETIME seconds or when killed from the host, the kernel ends every process of the
namespace, however it was started (setsid, double fork).

The token tells the runner from anyone else who reaches the socket: a sandbox given the network
shares the host's, where the abstract socket's name is listed, and its commands look like the
runner to a peer-credentials check (both are unmapped in the helper's user namespace). NPROC is
the RLIMIT_NPROC every command inherits; the sandbox's pids cgroup is the other fence.
"""

import array
import contextlib
import errno
import hmac
import json
import os
import resource
import selectors
import shutil
import signal
import socket
import struct
import sys
import time

HEADER = struct.Struct("!I")
MAX_REQUEST = 64 * 2**20


def _receive(conn, token):
    """(request, [stdin, stdout, stderr] descriptors) from a new connection; PermissionError
    when it does not carry the runner's token."""
    fds = array.array("i")
    conn.settimeout(10)
    data, ancdata, _, _ = conn.recvmsg(HEADER.size, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    while len(data) < HEADER.size:
        chunk = conn.recv(HEADER.size - len(data))
        if not chunk:
            raise ValueError("connection closed in the request header")
        data += chunk
    (length,) = HEADER.unpack(data)
    if length > MAX_REQUEST or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"bad request: {length} bytes, {len(fds)} descriptors")
    body = b""
    while len(body) < length:
        chunk = conn.recv(min(length - len(body), 2**20))
        if not chunk:
            raise ValueError("connection closed in the request body")
        body += chunk
    conn.settimeout(None)
    request = json.loads(body)
    if not hmac.compare_digest(str(request.get("token", "")), token):
        for fd in fds:
            os.close(fd)
        raise PermissionError("bad token")
    return request, list(fds)


def _search(name, path):
    """The program execvpe would run: the first executable `name` on `path`, else the first
    file of that name (which then fails to start with EACCES: 126, as execvpe's does)."""
    return shutil.which(name, path=path) or shutil.which(name, mode=os.F_OK, path=path)


def _spawn(request, fds):
    """Start the command with its descriptors as 0, 1, 2, in its own session; return its pid,
    or the exit code of a command that could not start (126, 127: the shell's), having written
    why to its stderr. posix_spawn (a vfork, no copy of this process's memory) rather than fork:
    its cost is part of every exec's latency."""
    argv, env, workdir = request["argv"], request["env"], request["workdir"]
    program = argv[0] if "/" in argv[0] else _search(argv[0], env.get("PATH", ""))
    actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in fds if fd > 2]
    try:
        if program is None:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        os.chdir(workdir)  # posix_spawn has no chdir; this helper is single-threaded
        try:
            return os.posix_spawn(
                program, argv, env, file_actions=actions, setsid=True, setsigdef=(signal.SIGPIPE,)
            ), None
        finally:
            os.chdir("/")
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.ENOMEM):
            raise  # no process to start (the sandbox's process limit): as a failed fork was
        where = workdir if exc.filename == workdir else argv[0]
        os.write(fds[2], f"boxbench-exec: {where}: {exc.strerror}\n".encode())
        return None, 127 if isinstance(exc, FileNotFoundError) else 126
    finally:
        for fd in fds:
            os.close(fd)


def _reply(conn, message):
    with contextlib.suppress(OSError):  # the runner gave up on this command: nothing to tell
        conn.sendall(json.dumps(message).encode() + b"\n")
    conn.close()


def _reap(live, statuses):
    """Reap every child that has ended (as the namespace's init, orphans too), keeping the
    status of the commands the runner waits for."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in live:
            statuses[pid] = status


def _ended(events, live, statuses, pid):
    """The command `pid` ended: reap it (unless _reap did) and tell the runner its exit."""
    pidfd, conn = live.pop(pid)
    events.unregister(pidfd)
    os.close(pidfd)
    status = statuses.pop(pid, None)
    if status is None:
        _, status = os.waitpid(pid, 0)
    with contextlib.suppress(KeyError):  # already unregistered by a kill request
        events.unregister(conn)
    _reply(conn, {"exit": os.waitstatus_to_exitcode(status)})


def _kill(events, live, pid):
    """The runner asked to kill the command `pid`, or went away. When the command's end came in
    the same batch of events and was handled first, there is nothing left to kill: its
    connection is closed and its pid may be another process's by now (acting on it killed this
    helper, and so the sandbox, once under load)."""
    if pid not in live:
        return
    _, conn = live[pid]
    events.unregister(conn)
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)


def main():
    listener = socket.socket(fileno=int(sys.argv[1]))
    listener.set_inheritable(False)
    deadline = time.monotonic() + float(sys.argv[2])
    with open(int(sys.argv[3]), "rb") as pipe:  # never on the command line, which anyone reads
        token = pipe.read(256).decode()
    nproc = int(sys.argv[4])
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    # As init, only signals with a handler arrive: SIGINT's default handler would let a command
    # end the sandbox's init, so it has none; SIGCHLD wakes the loop to reap orphans.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    events = selectors.DefaultSelector()
    events.register(listener, selectors.EVENT_READ, ("accept",))
    events.register(wake_read, selectors.EVENT_READ, ("reap",))
    live = {}  # pid -> (pidfd, connection) of each command still running or not yet reaped
    statuses = {}  # pid -> wait status of a command reaped before its pidfd's event was handled
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        for key, _ in events.select(remaining):
            kind = key.data[0]
            if kind == "accept":
                conn, _ = listener.accept()
                try:
                    request, fds = _receive(conn, token)
                    pid, failed = _spawn(request, fds)
                    if pid is None:
                        _reply(conn, {"exit": failed})
                        continue
                    pidfd = os.pidfd_open(pid)
                except PermissionError:
                    conn.close()  # not the runner: no answer
                    continue
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    _reply(conn, {"error": f"{type(exc).__name__}: {exc}"})
                    continue
                live[pid] = (pidfd, conn)
                events.register(pidfd, selectors.EVENT_READ, ("exited", pid))
                events.register(conn, selectors.EVENT_READ, ("kill", pid))
            elif kind == "reap":
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
                _reap(live, statuses)
            elif kind == "exited":
                _ended(events, live, statuses, key.data[1])
            else:  # the runner asked to kill the command, or went away
                _kill(events, live, key.data[1])


if __name__ == "__main__":
    main()
