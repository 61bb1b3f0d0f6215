"""The exec helper of a `local` sandbox: the sandbox's main process, run by the system Python.

runner/providers/local/adapter.py reads this file as text and starts it inside bubblewrap
(`python3 -I -S -c <this file> FD LIFETIME TOKEN NPROC`), already in the sandbox's namespaces,
cgroups, seccomp filter and unprivileged user, so
every command it forks is born there: no `nsenter` and no cgroup migration per exec (on cgroup v1
a migration waits for an RCU grace period, milliseconds under load). Standard library only; nothing
of the project is importable here.

Protocol, one connection per command on the inherited listening socket FD:
  runner -> helper  a 4-byte big-endian length, with the command's stdin, stdout and stderr
                    descriptors attached (SCM_RIGHTS), then that many bytes of JSON
                    {"token": TOKEN, "argv": [...], "env": {...}, "workdir": "/app"}
  helper -> runner  one JSON line {"exit": code} once the command ends (-N: killed by signal N),
                    or {"error": "..."} when it could not be started
  runner -> helper  any byte or EOF before that: kill the command's process group.
The command runs in its own session. The helper exits after LIFETIME seconds, which ends the
sandbox: bubblewrap's init loses its child and the kernel ends every process of the PID namespace.

The token tells the runner from anyone else who reaches the socket: a sandbox given the network
shares the host's, where the abstract socket's name is listed, and its commands look like the
runner to a peer-credentials check (both are unmapped in the helper's user namespace). NPROC is
the RLIMIT_NPROC every command inherits; the sandbox's pids cgroup is the other fence.
"""

import array
import contextlib
import hmac
import json
import os
import resource
import selectors
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


def _spawn(request, fds):
    """Fork the command with its descriptors as 0, 1, 2, in its own session; return its pid."""
    argv, env, workdir = request["argv"], request["env"], request["workdir"]
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.chdir(workdir)
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            where = workdir if exc.filename == workdir else argv[0]
            os.write(2, f"boxbench-exec: {where}: {exc.strerror}\n".encode())
            os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
        os._exit(127)  # not reached: execvpe replaced this process
    for fd in fds:
        os.close(fd)
    return pid


def _reply(conn, message):
    with contextlib.suppress(OSError):  # the runner gave up on this command: nothing to tell
        conn.sendall(json.dumps(message).encode() + b"\n")
    conn.close()


def main():
    listener = socket.socket(fileno=int(sys.argv[1]))
    listener.set_inheritable(False)
    deadline = time.monotonic() + float(sys.argv[2])
    token = sys.argv[3]
    nproc = int(sys.argv[4])
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    events = selectors.DefaultSelector()
    events.register(listener, selectors.EVENT_READ, ("accept",))
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
                    pid = _spawn(request, fds)
                    pidfd = os.pidfd_open(pid)
                except PermissionError:
                    conn.close()  # not the runner: no answer
                    continue
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    _reply(conn, {"error": f"{type(exc).__name__}: {exc}"})
                    continue
                events.register(pidfd, selectors.EVENT_READ, ("exited", pid, conn))
                events.register(conn, selectors.EVENT_READ, ("kill", pid, pidfd))
            elif kind == "exited":
                _, pid, conn = key.data
                events.unregister(key.fileobj)
                os.close(key.fileobj)
                _, status = os.waitpid(pid, 0)
                with contextlib.suppress(KeyError):  # already unregistered by a kill request
                    events.unregister(conn)
                _reply(conn, {"exit": os.waitstatus_to_exitcode(status)})
            else:  # the runner asked to kill the command, or went away
                _, pid, _ = key.data
                events.unregister(key.fileobj)
                for kill in (os.killpg, os.kill):
                    with contextlib.suppress(OSError):
                        kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
