"""File Upload and File Download: one file of random bytes moved through the adapter's transfer
call, timed from adapter entry on the job host; its SHA-256 digest is verified untimed.

Two units: 8 MiB, the operation's scored default, and a large file (100 MiB, the job host's
setting BOXBENCH_TRANSFER_LARGE_MIB; tests use a few MiB) for the data path, where a provider's
transfer rate rather than its per-call cost decides. Version 2 added the large unit.

Both benchmarks are built from one definition and differ in their direction and procedure.
"""

import hashlib
import os
from collections.abc import Callable

from runner.benchmarks.base import (
    BenchmarkDefinition,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)
from runner.outcomes import Clock, Direction, Section

PAYLOAD_BYTES = 8 * 2**20
DEFAULT_UNIT = "8mib"  # the default plan's: the large unit is in `full`


class FileTransferBenchmark:
    def __init__(self, direction: str, description: str, procedure: Callable[[TrialContext], None]):
        """`direction`: "upload" or "download", which names the slug, title and metric."""
        self.DEFINITION = BenchmarkDefinition(
            slug=f"file-{direction}",
            title=f"File {direction.capitalize()}",
            section=Section.SANDBOX_OPERATIONS,
            description=description,
            metric=f"{direction}_ms",
            unit="ms",
            direction=Direction.LOWER,
            clock=Clock.JOB_HOST,
            version="2",
            required_capabilities=("exec", "file_transfer"),
            procedure_timeout_s=300,
            lifetime_s=600,
        )
        self.procedure = procedure

    def units(self) -> list[UnitDefinition]:
        from django.conf import settings  # the large size is the job host's, read when asked

        large = settings.TRANSFER_LARGE_MIB
        return [
            UnitDefinition(DEFAULT_UNIT, "8 MiB", definition={"bytes": PAYLOAD_BYTES}),
            UnitDefinition(f"{large}mib", f"{large} MiB", definition={"bytes": large * 2**20}),
        ]

    def run(self, ctx: TrialContext) -> None:
        self.procedure(ctx)


def payload(size: int = PAYLOAD_BYTES) -> tuple[bytes, str]:
    """Incompressible bytes, so no transport can shrink them."""
    data = os.urandom(size)
    return data, hashlib.sha256(data).hexdigest()


def guest_sha256(ctx, path: str) -> str:
    result = ctx.exec(["/usr/bin/sha256sum", "--", path], timeout=120)
    if result.exit_code != 0:
        raise ProviderFailure(f"sha256sum {path} failed: {result.stderr[:200]!r}")
    return result.stdout.split()[0].decode()


def upload(ctx: TrialContext) -> None:
    """Send the file into /app, timed as upload_ms."""
    data, digest = payload(ctx.unit.definition.get("bytes", PAYLOAD_BYTES))
    ctx.upload("/app/upload.bin", data, name="upload_ms")
    if guest_sha256(ctx, "/app/upload.bin") != digest:
        raise ProviderFailure("the uploaded file's SHA-256 digest does not match what was sent")


def download(ctx: TrialContext) -> None:
    """Write the file in the sandbox untimed, then fetch it, timed as download_ms."""
    size = ctx.unit.definition.get("bytes", PAYLOAD_BYTES)
    made = ctx.exec(
        ["/bin/sh", "-c", f"head -c {int(size)} /dev/urandom > /app/download.bin && sync"],
        timeout=120,
    )
    if made.exit_code != 0:
        raise ProviderFailure(f"could not write the file to download: {made.stderr[:200]!r}")
    expected = guest_sha256(ctx, "/app/download.bin")
    data = ctx.download("/app/download.bin", name="download_ms")
    if len(data) != size or hashlib.sha256(data).hexdigest() != expected:
        raise ProviderFailure("the downloaded file differs from the one in the sandbox")


UPLOAD = FileTransferBenchmark(
    "upload", "Upload one file of random bytes (8 MiB; 100 MiB) to /app.", upload
)
DOWNLOAD = FileTransferBenchmark(
    "download",
    "Download one file of random bytes (8 MiB; 100 MiB) written in the sandbox.",
    download,
)
