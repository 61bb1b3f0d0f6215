"""Tar archives for the Docker Engine API's PUT /containers/{id}/archive, cut where they end.

Python's tarfile ends an archive with two zero blocks, then pads it to a 10 KiB record. Podman's
copier reads up to the two blocks and closes its pipe, so the padding the engine is still
passing on meets a closed pipe: an HTTP 500 "passing bulk input to subprocess: write |1: broken
pipe", at random and more often on a loaded host (containers/buildah#6573, seen with Podman
4.3). Docker reads the padding too. Without it, nothing is left to write once the copier stops.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    name: str
    data: bytes
    mode: int = 0o644
    mtime: int = 0


def unpadded_tar(members: list[Member]) -> bytes:
    """A tar (GNU format) of `members`, ending at its two end-of-archive blocks."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for member in members:
            info = tarfile.TarInfo(member.name)
            info.size, info.mode, info.mtime = len(member.data), member.mode, member.mtime
            tar.addfile(info, io.BytesIO(member.data))
    # tarfile's offset is past the end-of-archive blocks and before the record padding.
    return buffer.getvalue()[: tar.offset]
