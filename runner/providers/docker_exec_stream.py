"""An exec's output from a Docker engine (runner/providers/docker.py): its multiplexed frames
read within caps (runner/providers/answers.py), and its hijacked connection cut short."""

from __future__ import annotations

import contextlib
import socket
import struct

from runner.providers.answers import Capped, Reader, command_stdout

FRAME_PIECE = 64 * 1024  # an exec's output is read this much at a time


def outputs(reader: Reader, cap: int) -> tuple[Capped, Capped]:
    """Where an exec's stdout and stderr go, each up to `cap` bytes (max_output_mib); stdout to
    its sink instead inside `answers.stdout_streamed_to` (output-stream)."""
    err = Capped(reader, cap, "the command's stderr", "max_output_mib")
    return command_stdout(reader, cap), err


def read_frames(stream, out: Capped, err: Capped) -> None:
    """Demultiplex an exec's output into `out` and `err`: 8-byte headers (stream id, length) each
    before its data, read in pieces so a frame's announced length never sizes a buffer."""
    while True:
        header = stream.read(8)
        if len(header) < 8:
            return
        kind, length = struct.unpack(">BxxxL", header)
        into = err if kind == 2 else out
        while length:
            data = stream.read(min(length, FRAME_PIECE))
            if not data:
                return
            into.add(data)
            length -= len(data)


def hang_up(response) -> None:
    """Close an exec's connection so a reader blocked on it wakes up."""
    with contextlib.suppress(OSError, AttributeError):
        response.raw._fp.fp.raw._sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(Exception):
        response.close()
