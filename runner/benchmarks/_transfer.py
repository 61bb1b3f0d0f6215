"""Shared by file_upload and file_download: a payload and its integrity check."""

import hashlib
import os

from runner.benchmarks.base import ProviderFailure

PAYLOAD_BYTES = 8 * 2**20


def payload(size: int = PAYLOAD_BYTES) -> tuple[bytes, str]:
    """Incompressible bytes, so no transport can shrink them."""
    data = os.urandom(size)
    return data, hashlib.sha256(data).hexdigest()


def guest_sha256(ctx, path: str) -> str:
    result = ctx.exec(["/usr/bin/sha256sum", "--", path], timeout=120)
    if result.exit_code != 0:
        raise ProviderFailure(f"sha256sum {path} failed: {result.stderr[:200]!r}")
    return result.stdout.split()[0].decode()
