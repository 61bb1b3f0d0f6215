"""Output Stream: a command writes 1 GiB to stdout through the provider's exec stream, timed on
the job host's clock (MiB/s), every byte counted and checked as it arrives, none held.

A provider whose SDK buffers a command's output, or throttles its stream, shows it here. The
bytes are random, as base64 lines (some exec streams carry text only, OpenSandbox's for one),
written untimed to a file in the sandbox by python3 (the standard image's), which prints their
CRC-32; the timed command is `cat` of that file, so the figure is the exec stream's, not the
guest's random-number generator (the file is in the guest's page cache). The
job host counts what arrives and keeps a running CRC-32 of it, chunk by chunk
(runner/providers/answers.py `stdout_streamed_to`): a cheap check, so the check is not what the
figure measures (SHA-256 runs at a tenth of CRC-32's speed on a two-core job host), and it
catches a lost, repeated or altered chunk. Only adapters whose exec streams declare
`output_stream`; others would gather the 1 GiB and fail at their output cap.

The size is the job host's setting BOXBENCH_OUTPUT_STREAM_MIB (1024; tests use a few MiB).
"""

from __future__ import annotations

import time
import zlib

from runner.benchmarks.base import BenchmarkDefinition, ProviderFailure, TrialContext
from runner.benchmarks.base import UnitDefinition as Unit
from runner.outcomes import Clock, Direction, Section
from runner.providers.answers import TOO_LARGE, stdout_streamed_to
from runner.providers.base import ProviderError

PATH = "/app/stream.bin"

DEFINITION = BenchmarkDefinition(
    slug="output-stream",
    title="Output Stream",
    section=Section.SANDBOX_OPERATIONS,
    description=(
        "A command writes 1 GiB of random text to stdout through the exec stream: MiB/s as "
        "the job host receives it, every byte checked."
    ),
    metric="stream_mib_s",
    unit="MiB/s",
    direction=Direction.HIGHER,
    clock=Clock.JOB_HOST,
    version="1",
    required_capabilities=("exec", "output_stream"),
    procedure_timeout_s=900,
    lifetime_s=1500,
)

# Writes N bytes of random base64 lines (76 characters and a newline) to the file and prints
# their CRC-32 (argv: path, N).
WRITE_FILE = """
import base64, os, sys, zlib
path, left, crc = sys.argv[1], int(sys.argv[2]), 0
with open(path, "wb") as f:
    while left:
        chunk = base64.encodebytes(os.urandom(57 * 13617))[:left]
        f.write(chunk)
        crc = zlib.crc32(chunk, crc)
        left -= len(chunk)
print(crc)
"""


def units() -> list[Unit]:
    from django.conf import settings  # the size is the job host's setting, read when asked

    mib = settings.OUTPUT_STREAM_MIB
    size = f"{mib // 1024} GiB" if mib % 1024 == 0 else f"{mib} MiB"
    return [Unit(f"{mib}mib", f"{size} to stdout", definition={"bytes": mib * 2**20})]


class StreamCheck:
    """What the job host received: a count and a running CRC-32, nothing kept."""

    def __init__(self, expected_bytes: int):
        self.expected = expected_bytes
        self.size = 0
        self.crc = 0

    def __call__(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.expected:
            message = f"the command's stdout passed the {self.expected} bytes it writes"
            raise ProviderError(message, "exec", TOO_LARGE)
        self.crc = zlib.crc32(chunk, self.crc)


def run(ctx: TrialContext) -> None:
    size = int(ctx.unit.definition["bytes"])
    made = ctx.exec(["python3", "-I", "-c", WRITE_FILE, PATH, str(size)], timeout=600)
    if made.exit_code != 0 or not made.stdout.strip().isdigit():
        said = (made.stderr or made.stdout)[:200]
        raise ProviderFailure(f"could not write the {size} bytes to stream: {said!r}")
    expected_crc = int(made.stdout.strip())
    check = StreamCheck(size)
    started = time.monotonic()
    with stdout_streamed_to(check):
        result = ctx.exec(["/bin/cat", PATH], timeout=600)
    seconds = time.monotonic() - started
    if result.exit_code != 0:
        raise ProviderFailure(f"cat {PATH} exited {result.exit_code}: {result.stderr[:200]!r}")
    if check.size != size:
        raise ProviderFailure(f"the stream delivered {check.size} of the {size} bytes written")
    if check.crc != expected_crc:
        raise ProviderFailure("the streamed bytes differ from the file's (CRC-32 mismatch)")
    ctx.record("stream_ms", round(seconds * 1000, 3), clock=Clock.JOB_HOST)
    ctx.record("stream_mib_s", size / 2**20 / seconds, unit="MiB/s", clock=Clock.JOB_HOST)
