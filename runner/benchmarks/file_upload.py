"""File Upload: send an 8 MiB file into /app, timed from adapter entry; verified untimed."""

from runner.benchmarks._transfer import PAYLOAD_BYTES, guest_sha256, payload
from runner.benchmarks.base import (
    BenchmarkDefinition,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)

DEFINITION = BenchmarkDefinition(
    slug="file-upload",
    title="File Upload",
    section="sandbox_operations",
    description="Upload one 8 MiB file of random bytes to /app.",
    metric="upload_ms",
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
    data, digest = payload(ctx.unit.definition.get("bytes", PAYLOAD_BYTES))
    ctx.upload("/app/upload.bin", data, name="upload_ms")
    if guest_sha256(ctx, "/app/upload.bin") != digest:
        raise ProviderFailure("the uploaded file's SHA-256 digest does not match what was sent")
