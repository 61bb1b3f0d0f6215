"""RL rollouts (R2E-Gym style, boxbench's own units): episodes restored from a prepared task.

A reinforcement-learning rollout restores one prepared task environment many times and runs a
short agent episode in each copy. Per trial, untimed: the unit's pinned source archive is
unpacked into /app of the trial's own sandbox as a git checkout (the DeepSWE preparation,
runner/traces/replay.py), the unit's preparation steps run (a C library built, say), and the
sandbox is snapshotted (the snapshot is deleted and confirmed gone at cleanup).

Timed, on the job host's monotonic clock: EPISODES episodes, EPISODE_CONCURRENCY at a time. One
episode runs from restore's adapter entry until the destroy of its copy returns ("R2E-Gym counts
destroy in its charted total"): restore, the first command sent as soon as restore returns
(retried with the readiness backoff, as on every restored sandbox), the agent's steps (edit, run
a check, read the output: commands of the unit's recorded DeepSWE session, each run in /app under
the guest clock wrapper, so the clock gate catches a restored guest clock that steps), destroy.

A step's exit code must be the one its session recorded; a step that differs means the session
does not replay here: the trial is excluded, as in DeepSWE replay. The episodes of one trial are
one sample (the methodology's multi-sandbox exception): episode_ms is their mean, and
episodes_per_minute the trial's throughput, EPISODES over the span from the first restore to the
last destroy, at EPISODE_CONCURRENCY episodes at a time.

A provider without snapshots is refused (Not Supported): a variant with a fresh create per
episode would be a separate benchmark, never mixed into this one.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from runner.benchmarks.base import (
    BenchmarkDefinition,
    BenchmarkError,
    Excluded,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)
from runner.outcomes import Clock, Direction, MeasurementKind, Section
from runner.traces import replay
from runner.traces.format import TRACES_DIR, TraceError, load_trace
from runner.traces.record import SANDBOX_ARCHIVE
from stats import labels

SLUG = "rl-rollouts"
# The last column of its CSV downloads, as DeepSWE's and CI's say theirs.
NOT_THE_REFERENCE = (
    "boxbench's own RL rollout units, steps of its DeepSWE-style sessions: not R2E-Gym's "
    "environments or rewards"
)
TRIALS = 20
EPISODES = 4
EPISODE_CONCURRENCY = 2
PREPARE_LIMIT_S = 300.0
MISMATCH_EXIT = 97  # the preparation script's "a step exited otherwise than recorded"
STAGES = ("restore", "first_command", "steps", "destroy")
# The steps run as the DeepSWE replay runs its commands: HOME outside /app, no pager, no prompt.
TIMEOUT_CODES = (124, 137)  # timeout(1) stopped the step, or killed it 5 s later
POST_TIMEOUT_CHECK_S = 30.0
STEP_ENVIRONMENT = (
    "export LC_ALL=C.UTF-8 GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat "
    f"PAGER=cat PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 TERM=dumb HOME={replay.HOME}; "
    'mkdir -p "$HOME" && cd /app || exit 125; '
)


@dataclass(frozen=True)
class RolloutUnit:
    """A task environment and its episode, as indices into a recorded DeepSWE session."""

    trace: str  # the session's folder under runner/traces/, also the unit's slug
    title: str
    prepare: tuple[int, ...]  # run once per trial, before the snapshot
    episode: tuple[int, ...]  # run in every restored copy: edit, check, read


UNITS = (
    RolloutUnit(
        "six-ensure-bytearray",
        "six: accept bytearray in ensure_binary (edit, add a test, run it, read the diff)",
        prepare=(),
        episode=(13, 14, 15, 21, 23, 17),
    ),
    RolloutUnit(
        "toolz-dissoc-if",
        "toolz: add dissoc_if (apply a patch, export it, add a test, run it, read the diff)",
        prepare=(),
        episode=(10, 13, 16, 24, 25, 28),
    ),
    RolloutUnit(
        "lz4-c-library",
        "lz4: switch the round trip to LZ4_compress_fast (edit, rebuild, check, read the diff)",
        prepare=tuple(range(8, 22)),
        episode=(23, 24, 25, 26, 35),
    ),
)

DEFINITION = BenchmarkDefinition(
    download_note=NOT_THE_REFERENCE,
    slug=SLUG,
    title="RL rollouts (R2E-Gym style, boxbench units)",
    section=Section.WORKLOAD,
    description=(
        "Mean time of an RL rollout episode: restore a prepared task environment from its "
        "snapshot, run a short agent episode (edit, run a check, read the output), destroy the "
        f"copy; {EPISODES} episodes per trial, {EPISODE_CONCURRENCY} at a time. The tasks are "
        "boxbench's own units, steps of its DeepSWE-style sessions on pinned PyPI sources, not "
        "R2E-Gym's environments: results are not comparable with R2E-Gym's."
    ),
    metric="episode_ms",
    unit="ms",
    direction=Direction.LOWER,
    clock=Clock.JOB_HOST,
    statistic="median",
    cpus=2,
    memory_mib=4096,
    trials_per_unit=TRIALS,
    ranking_floor=labels.declared_floor(TRIALS * len(UNITS)),
    required_capabilities=("exec", "file_transfer", "snapshot"),
    stage_names=STAGES,
    steps_include_create_or_build=True,
    procedure_timeout_s=PREPARE_LIMIT_S + 900.0,
    lifetime_s=1800.0,
    parallel_trials=2,
    # The trial's own sandbox (the snapshot's source) and EPISODE_CONCURRENCY copies at once.
    sandboxes_per_trial=1 + EPISODE_CONCURRENCY,
)


def unit_definition(unit: RolloutUnit) -> dict:
    trace = load_trace(TRACES_DIR / unit.trace / "trace.json")
    for index in (*unit.prepare, *unit.episode):
        if not 0 <= index < len(trace.commands):
            raise TraceError(f"{unit.trace}: rollout step {index} is not a command of the session")
    return {
        "trace": unit.trace,
        "trace_digest": trace.digest(),
        "archive_sha256": trace.repository.sha256,
        "prepare": list(unit.prepare),
        "episode": list(unit.episode),
        "episodes": EPISODES,
        "episode_concurrency": EPISODE_CONCURRENCY,
    }


def units() -> list[UnitDefinition]:
    found = []
    for unit in UNITS:
        definition = unit_definition(unit)
        encoded = json.dumps(definition, sort_keys=True).encode()
        found.append(
            UnitDefinition(unit.trace, unit.title, definition, hashlib.sha256(encoded).hexdigest())
        )
    return found


def run(ctx: TrialContext) -> None:
    unit, trace = _unit(ctx)
    _prepare(ctx, unit, trace)
    snapshot_id, _ = ctx.snapshot(ctx.sandbox, name=None)
    episodes = Episodes(ctx, snapshot_id, [trace.commands[i] for i in unit.episode], unit.episode)
    started = time.monotonic()
    results = episodes.run()
    span_ms = (time.monotonic() - started) * 1000
    ctx.record("episode_ms", _mean([r["episode"] for r in results]), clock=Clock.JOB_HOST)
    ctx.record(
        "episodes_per_minute", len(results) * 60000 / span_ms, unit="1/min", clock=Clock.JOB_HOST
    )
    for stage in STAGES:
        ctx.record(
            stage,
            _mean([r[stage] for r in results]),
            kind=MeasurementKind.STAGE,
            clock=Clock.JOB_HOST,
        )


class Episodes:
    """The trial's episodes, EPISODE_CONCURRENCY at a time; the first failure stops the rest from
    starting and is raised once the running ones have ended."""

    def __init__(self, ctx: TrialContext, snapshot_id: str, steps, indices: tuple[int, ...]):
        self.ctx, self.snapshot_id, self.steps, self.indices = ctx, snapshot_id, steps, indices
        self.failed = threading.Event()

    def run(self) -> list[dict]:
        with ThreadPoolExecutor(EPISODE_CONCURRENCY, thread_name_prefix="episode") as pool:
            futures = [pool.submit(self._guarded, n) for n in range(EPISODES)]
        outcomes = [f.result() for f in futures]
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return [o for o in outcomes if isinstance(o, dict)]

    def _guarded(self, number: int) -> dict | BaseException | None:
        if self.failed.is_set():
            return None
        try:
            return self.episode(number)
        except BaseException as exc:  # noqa: BLE001 - raised by run() in the trial's thread
            self.failed.set()
            return exc

    def episode(self, number: int) -> dict:
        ctx = self.ctx
        ctx.space_create()  # the provider's create rate, before the episode's span opens
        started = time.monotonic()
        copy, restore_ms = ctx.restore(self.snapshot_id, f"restore_{number + 1}", spaced=True)
        returned = time.monotonic()
        ctx.check_readiness(copy)
        answered = time.monotonic()
        for index, step in zip(self.indices, self.steps, strict=True):
            limit = replay.command_limit_s(step.duration_ms)
            command = (
                f"{STEP_ENVIRONMENT}timeout --kill-after=5s {limit:g} "
                f"bash -c {replay.bash_quote(step.command)} < /dev/null"
            )
            ran = ctx.guest(command, timeout=limit + 60, sandbox=copy)
            # The step's own exit 124 is a mismatch; the limit's is a timeout, judged by the spec's
            # post-timeout check.
            if ran.exit_code in TIMEOUT_CODES and ran.wall_ms >= limit * 1000:
                cause = f"episode {number + 1}: step {index} hit its {limit:g} s limit"
                _after_timeout(ctx, copy, cause, ran.exit_code)
            if ran.exit_code != step.exit_code:
                raise Excluded(
                    f"episode {number + 1}: step {index} exited {ran.exit_code}, its session "
                    f"recorded {step.exit_code}: the session does not replay here"
                )
        stepped = time.monotonic()
        destroy_ms = ctx.destroy_sandbox(copy)
        ended = time.monotonic()
        return {
            "episode": (ended - started) * 1000,
            "restore": restore_ms,
            "first_command": (answered - returned) * 1000,
            "steps": (stepped - answered) * 1000,
            "destroy": destroy_ms,
        }


def _after_timeout(ctx: TrialContext, copy, cause: str, code: int) -> None:
    """Excluded while the sandbox still answers the post-timeout check, else the provider's."""
    try:
        answer = ctx.guest("true", timeout=POST_TIMEOUT_CHECK_S, sandbox=copy, check_gate=False)
    except ProviderFailure as exc:
        raise ProviderFailure(f"{cause}; then the sandbox stopped answering: {exc}") from None
    if answer.exit_code != 0:
        raise ProviderFailure(
            f"{cause}; then its post-timeout check `true` exited {answer.exit_code}"
        )
    raise Excluded(
        f"{cause} (exit {code}) while the sandbox still answers: the session does not replay here"
    )


def _unit(ctx: TrialContext):
    unit = next((u for u in UNITS if u.trace == ctx.unit.slug), None)
    if unit is None:
        raise BenchmarkError(f"{ctx.unit.slug} is not a unit of {SLUG}")
    try:
        definition = unit_definition(unit)
        trace = load_trace(TRACES_DIR / unit.trace / "trace.json")
    except TraceError as exc:
        raise BenchmarkError(str(exc)) from None
    encoded = json.dumps(definition, sort_keys=True).encode()
    if ctx.unit.digest and hashlib.sha256(encoded).hexdigest() != ctx.unit.digest:
        raise BenchmarkError(f"unit {unit.trace} changed since the run was planned")
    return unit, trace


def _prepare(ctx: TrialContext, unit: RolloutUnit, trace) -> None:
    """Untimed: the task's checkout in /app, then its preparation steps, each as recorded."""
    ctx.upload(SANDBOX_ARCHIVE, trace.archive_path.read_bytes())
    script = replay.prepare_script(trace, SANDBOX_ARCHIVE)
    for index in unit.prepare:
        command = trace.commands[index]
        script += (
            f"rc=0; ( {STEP_ENVIRONMENT}bash -c {replay.bash_quote(command.command)} ) "
            "< /dev/null > /dev/null 2>&1 || rc=$?\n"
            f'[ "$rc" = {command.exit_code} ] || '
            f'{{ echo "step {index} exited $rc, its session recorded {command.exit_code}"; '
            f"exit {MISMATCH_EXIT}; }}\n"
        )
    # A build can run for tens of seconds (lz4's library): in the background, polled, as the
    # methodology runs every long command, so no gateway cuts a long synchronous call.
    prepared = ctx.background(script, timeout=PREPARE_LIMIT_S, check_gate=False)
    if prepared.exit_code == MISMATCH_EXIT:
        why = prepared.stdout.decode(errors="replace").strip()[-300:]
        raise Excluded(f"preparing {unit.trace}: {why}: the session does not replay here")
    if prepared.exit_code != 0:
        error = prepared.stderr.decode(errors="replace").strip()[-500:]
        raise BenchmarkError(f"preparing {unit.trace} in /app failed: {error}")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
