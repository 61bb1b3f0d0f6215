"""Snapshot and Restore, and Fork: multi-sandbox benchmarks of a sandbox's copies.

Both start from the trial's own sandbox (made by create, with the untimed readiness check), write a
file of a per-trial token into it untimed, then copy it:

- Snapshot and Restore: `snapshots.create` timed from adapter entry until it returns
  (snapshot_ms); a second file is written into the source; restore timed from adapter entry, and
  the first timed command (`true`, retried with the readiness backoff) sent as soon as restore
  returns: restore_ms runs from restore's adapter entry until that command answers. The metric is
  their sum, snapshot_restore_ms.
- Fork: fork timed from adapter entry, its first timed command sent as soon as fork returns:
  fork_ms runs until that command answers; then a second file is written into the source.

Then the copy's state is verified by a command under the guest clock wrapper (so the monotonic
clock gate catches a restored guest clock that steps): the file written before the copy is there
with its token, the one written after is not. The lifecycle deletes every snapshot and temporary
image and confirms it gone, or the trial is not a success. Sandboxes of one trial are one sample.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from runner.benchmarks.base import (
    BenchmarkDefinition,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)
from runner.outcomes import Clock, Direction, MeasurementKind, Section

STATE_DIR = "/app/boxbench-state"
BEFORE = f"{STATE_DIR}/before"
AFTER = f"{STATE_DIR}/after"


def _definition(slug: str, title: str, description: str, metric: str, capability: str, stages):
    return BenchmarkDefinition(
        slug=slug,
        title=title,
        section=Section.SANDBOX_OPERATIONS,
        description=description,
        metric=metric,
        unit="ms",
        direction=Direction.LOWER,
        clock=Clock.JOB_HOST,
        required_capabilities=("exec", capability),
        stage_names=stages,
        steps_include_create_or_build=True,
        sandboxes_per_trial=2,
        procedure_timeout_s=300,
        lifetime_s=600,
    )


class CopyBenchmark:
    def __init__(self, definition: BenchmarkDefinition, procedure: Callable[[TrialContext], None]):
        self.DEFINITION = definition
        self.procedure = procedure

    def units(self) -> list[UnitDefinition]:
        return [UnitDefinition("default", "Default sandbox")]

    def run(self, ctx: TrialContext) -> None:
        self.procedure(ctx)


def write_state(ctx: TrialContext, path: str, token: str) -> None:
    """Write `token` into `path` in the trial's own sandbox, untimed."""
    made = ctx.exec(
        [
            "/bin/sh",
            "-c",
            'mkdir -p "$1" && printf %s "$2" > "$3" && sync',
            "sh",
            STATE_DIR,
            token,
            path,
        ],
        timeout=60,
    )
    if made.exit_code != 0:
        raise ProviderFailure(
            f"could not write {path} in the source sandbox: {made.stderr[:200]!r}"
        )


def verify_script(token: str) -> str:
    """Exit 0 when the copy holds the file written before and not the one written after; the
    token is hex, so it needs no quoting."""
    return (
        f'[ "$(cat {BEFORE} 2>/dev/null)" = "{token}" ] || '
        f"{{ echo 'the file written before the copy is missing or differs'; exit 3; }}\n"
        f"[ ! -e {AFTER} ] || {{ echo 'the file written after the copy is there'; exit 4; }}\n"
    )


def verify_copy(ctx: TrialContext, copy, token: str) -> None:
    """Check the copy's state under the guest clock wrapper (the clock gate applies)."""
    run = ctx.guest(verify_script(token), timeout=60, sandbox=copy)
    if run.exit_code != 0:
        why = run.stdout.decode(errors="replace").strip() or f"exit code {run.exit_code}"
        raise ProviderFailure(f"the copy's state is wrong: {why}")


def _first_answer(ctx: TrialContext, copy) -> tuple[float, float, float]:
    """(call ms, first-command ms, total ms) of the copy the lifecycle just made: the first
    timed command goes as soon as the call returned, retried with the readiness backoff."""
    started, returned = ctx.create_started, ctx.create_returned
    assert started is not None and returned is not None, "the copy's call stamps both"
    ctx.check_readiness(copy)
    ready = time.monotonic()
    return (returned - started) * 1000, (ready - returned) * 1000, (ready - started) * 1000


def snapshot_restore(ctx: TrialContext) -> None:
    token = uuid.uuid4().hex
    write_state(ctx, BEFORE, token)
    snapshot_id, snapshot_ms = ctx.snapshot(ctx.sandbox, "snapshot_ms")
    write_state(ctx, AFTER, token)
    restored, _ = ctx.restore(snapshot_id, "restore")
    call_ms, first_ms, restore_ms = _first_answer(ctx, restored)
    verify_copy(ctx, restored, token)
    ctx.record("restore_ms", restore_ms, clock=Clock.JOB_HOST)
    ctx.record("snapshot_restore_ms", snapshot_ms + restore_ms, clock=Clock.JOB_HOST)
    ctx.record("snapshot", snapshot_ms, kind=MeasurementKind.STAGE, clock=Clock.JOB_HOST)
    ctx.record("restore", call_ms, kind=MeasurementKind.STAGE, clock=Clock.JOB_HOST)
    ctx.record("first_command", first_ms, kind=MeasurementKind.STAGE, clock=Clock.JOB_HOST)


def fork(ctx: TrialContext) -> None:
    token = uuid.uuid4().hex
    write_state(ctx, BEFORE, token)
    copy, _ = ctx.fork(ctx.sandbox, "fork")
    call_ms, first_ms, fork_ms = _first_answer(ctx, copy)
    write_state(ctx, AFTER, token)
    verify_copy(ctx, copy, token)
    ctx.record("fork_ms", fork_ms, clock=Clock.JOB_HOST)
    ctx.record("fork", call_ms, kind=MeasurementKind.STAGE, clock=Clock.JOB_HOST)
    ctx.record("first_command", first_ms, kind=MeasurementKind.STAGE, clock=Clock.JOB_HOST)


SNAPSHOT_RESTORE = CopyBenchmark(
    _definition(
        "snapshot-restore",
        "Snapshot and Restore",
        "Snapshot a sandbox, restore it as a new one and send the first command at once: "
        "snapshot time plus restore time until that command answers; the restored state is "
        "verified.",
        "snapshot_restore_ms",
        "snapshot",
        ("snapshot", "restore", "first_command"),
    ),
    snapshot_restore,
)
FORK = CopyBenchmark(
    _definition(
        "fork",
        "Fork",
        "Fork a sandbox and send the first command to the copy at once: time until it answers; "
        "the copy's state is verified.",
        "fork_ms",
        "fork",
        ("fork", "first_command"),
    ),
    fork,
)
