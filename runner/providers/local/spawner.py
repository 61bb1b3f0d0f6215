"""The exec helper of a `local` sandbox: the sandbox's main process, run by the system Python.

runner/providers/local/adapter.py reads this file as text and starts it inside bubblewrap
(`python3 -I -S -c <this file> FD LIFETIME`), already in the sandbox's namespaces and cgroups, so
every command it forks is born there: no `nsenter` and no cgroup migration per exec (on cgroup v1
a migration waits for an RCU grace period, milliseconds under load). Standard library only; nothing
of the project is importable here.

Protocol, one connection per command on the inherited listening socket FD:
  runner -> helper  a 4-byte big-endian length, with the command's stdin, stdout and stderr
                    descriptors attached (SCM_RIGHTS), then that many bytes of JSON
                    {"argv": [...], "env": {...}, "workdir": "/app"}
  helper -> runner  one JSON line {"exit": code} once the command ends (-N: killed by signal N),
                    or {"error": "..."} when it could not be started
  runner -> helper  any byte or EOF before that: kill the command's process group.
The command runs in its own session. The helper exits after LIFETIME seconds, which ends the
sandbox: bubblewrap's init loses its child and the kernel ends every process of the PID namespace.
"""

import array
import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

HEADER = struct.Struct("!I")
MAX_REQUEST = 64 * 2**20


def _receive(conn):
    """(request, [stdin, stdout, stderr] descriptors) from a new connection."""
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
    return json.loads(body), list(fds)


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
    own_uid = os.getuid()
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
                creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
                if struct.unpack("3i", creds)[1] != own_uid:
                    conn.close()  # only the runner's user may run commands here
                    continue
                try:
                    request, fds = _receive(conn)
                    pid = _spawn(request, fds)
                    pidfd = os.pidfd_open(pid)
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
