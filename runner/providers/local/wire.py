"""The runner's side of a `local` sandbox's pipes and sockets: bubblewrap's start-up reports and
one command's exchange with the exec helper (spawner.py documents the protocol)."""

from __future__ import annotations

import array
import json
import os
import select
import selectors
import socket
import subprocess
import time


def read_all(fd: int, timeout: float) -> bytes:
    """Read until EOF or a complete line, whichever comes first, within `timeout`."""
    data = b""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return data
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            return data
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk
        if data.startswith(b"ready\n"):
            return data


def fds_payload(*fds: int) -> bytes:
    return array.array("i", fds).tobytes()


def exchange(conn: socket.socket, ours: list[int], stdin: bytes, deadline: float, outputs):
    """Feed stdin, collect stdout and stderr into `outputs` (two Capped) to their ends, and
    return the helper's reply.

    `ours` is [stdin writer, stdout reader, stderr reader]; each is closed (set to -1 in place)
    when done. Raises subprocess.TimeoutExpired at `deadline`, ProviderError past a cap.
    """
    chunks = {ours[1]: outputs[0], ours[2]: outputs[1]}
    reply = b""
    events = selectors.DefaultSelector()
    if stdin:
        os.set_blocking(ours[0], False)
        events.register(ours[0], selectors.EVENT_WRITE, "stdin")
    else:
        os.close(ours[0])
        ours[0] = -1
    events.register(ours[1], selectors.EVENT_READ, "out")
    events.register(ours[2], selectors.EVENT_READ, "out")
    events.register(conn, selectors.EVENT_READ, "reply")
    sent = 0
    reply_done = False
    with events:
        while events.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired("exec", 0)
            for key, _ in events.select(remaining):
                if key.data == "stdin":
                    try:
                        sent += os.write(key.fd, stdin[sent : sent + 65536])
                    except BrokenPipeError:
                        sent = len(stdin)  # the command stopped reading: like communicate()
                    if sent >= len(stdin):
                        events.unregister(key.fd)
                        os.close(key.fd)
                        ours[0] = -1
                elif key.data == "out":
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        chunks[key.fd].add(chunk)
                    else:
                        events.unregister(key.fd)
                else:
                    try:
                        chunk = conn.recv(4096)
                    except ConnectionResetError:  # the helper died mid-command (a destroy)
                        chunk = b""  # as its end of file: no reply
                    reply += chunk
                    if not chunk or reply.endswith(b"\n"):
                        events.unregister(conn)
                        reply_done = bool(chunk)
    return json.loads(reply) if reply_done else None
