"""File Download: fetch an 8 MiB file from /app, timed from adapter entry; verified untimed."""

import hashlib

from runner.benchmarks._transfer import PAYLOAD_BYTES, guest_sha256
from runner.benchmarks.base import (
    BenchmarkDefinition,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)

DEFINITION = BenchmarkDefinition(
    slug="file-download",
    title="File Download",
    section="sandbox_operations",
    description="Download one 8 MiB file of random bytes written in the sandbox.",
    metric="download_ms",
    unit="ms",
    direction="lower",
    clock="job_host",
    required_capabilities=("exec", "file_transfer"),
    procedure_timeout_s=300,
    lifetime_s=600,
)


def units() -> list[UnitDefinition]:
    return [UnitDefinition("8mib", "8 MiB", definition={"bytes": PAYLOAD_BYTES})]


def run(ctx: TrialContext) -> None:
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
