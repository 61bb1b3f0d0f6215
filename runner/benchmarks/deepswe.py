"""DeepSWE-style trace replay (spec: deepswe.txt): tool time of a replayed agent session.

Not the reference workload: the spec's ten datacurve traces on pinned per-task images cannot be
obtained here, so this benchmark replays boxbench's own units, agent-style sessions authored on
pinned PyPI source archives (runner/traces/). Its slug, title and description say so, so its
results cannot be mistaken for the reference set's.

Per trial, untimed: upload the unit's pinned archive, unpack it into /app as a git repository with a
fixed identity (runner/traces/replay.py, prepare_script), upload the loopback deny proxy. Timed:
one background script that starts the proxy, then runs every command in /app between two guest
clock readings as `timeout --kill-after=5s LIMIT bash -c CMD` (the spec's per-command limit, inside
the measured span). Then the records are read back, the patch digest checked, and the Failures
table applied: a command the limit stopped ends the trial, excluded while the sandbox still
answers `true`, a provider failure once it does not. Tool time (sum of command runtimes) is the
main metric; the per-stage sums (Read, Write, Install, Build, Test) are the stacked bar's stages.
"""

from __future__ import annotations

from runner.benchmarks.base import (
    BenchmarkDefinition,
    BenchmarkError,
    Excluded,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)
from runner.outcomes import (
    Clock,
    ClockGate,
    Direction,
    EvidenceKind,
    MeasurementKind,
    Outcome,
    Section,
)
from runner.traces import classify, guard, replay
from runner.traces.format import (
    TRACES_DIR,
    TraceError,
    check_members,
    load_all,
    load_trace,
    trace_folders,
)
from runner.traces.record import DENYPROXY, SANDBOX_ARCHIVE
from stats import labels

SLUG = "deepswe-boxbench"
TRIALS = 20
REPLAY_LIMIT_S = 600.0  # "Command replay: 10 min"
PREPARE_LIMIT_S = 300.0
POST_TIMEOUT_CHECK_S = 30.0
# The one-line form of what the description says, carried by the benchmark's CSV downloads.
NOT_THE_REFERENCE = (
    "boxbench's own units on pinned PyPI sources, not the reference DeepSWE set: "
    "not comparable with the reference"
)

DEFINITION = BenchmarkDefinition(
    download_note=NOT_THE_REFERENCE,
    slug=SLUG,
    title="DeepSWE-style replay (boxbench units)",
    # 2: ten units (four added), so the declared floor is the spec's 180; version 1 had six (108).
    version="2",
    section=Section.WORKLOAD,
    description=(
        "Sum of command runtimes of replayed coding-agent sessions, on the sandbox's clock, with "
        "the network blocked. These are boxbench's own units, sessions authored on pinned PyPI "
        "source archives, not the reference DeepSWE set (datacurve traces on pinned per-task "
        "images), which cannot be obtained here: results are not comparable with the reference."
    ),
    metric="tool_time",
    unit="ms",
    direction=Direction.LOWER,
    clock=Clock.GUEST,
    cpus=4,
    memory_mib=8192,
    trials_per_unit=TRIALS,
    # "ranked once it has at least 90% of the successes requested before any top-up", rounded up
    ranking_floor=labels.declared_floor(TRIALS * len(trace_folders())),
    required_capabilities=("exec", "file_transfer", "network_lockdown"),
    stage_names=classify.STAGES,
    steps_include_create_or_build=True,
    create_timeout_s=600.0,
    procedure_timeout_s=PREPARE_LIMIT_S + REPLAY_LIMIT_S + 120.0,
    destroy_timeout_s=300.0,
    lifetime_s=1500.0,
    parallel_trials=10,  # "Parallel Trials: 10" (capped by the job host's BOXBENCH_JOB_HOST_CAP)
)


def units() -> list[UnitDefinition]:
    return [
        UnitDefinition(
            slug=trace.slug,
            title=trace.title,
            definition={
                "stratum": trace.stratum,
                "commands": len(trace.commands),
                "recorded_ms": round(trace.recorded_ms, 3),
                "archive": trace.repository.archive,
                "archive_sha256": trace.repository.sha256,
                "source": trace.repository.source,
                "patch_sha256": trace.patch_sha256,
            },
            digest=trace.digest(),
        )
        for trace in load_all()
    ]


def run(ctx: TrialContext) -> None:
    trace = unit_trace(ctx)
    before = processes(ctx)
    prepare(ctx, trace)
    replay_and_record(ctx, trace, replay.replay_script(trace), "tool_time", before)


def replay_and_record(
    ctx: TrialContext,
    session: replay.Session,
    script: str,
    metric: str,
    before: str,
    stages: list[str] | None = None,
    result: str = "final git patch",
) -> None:
    """Run a prepared replay script, judge its records and record the metric and stage sums.

    Shared with the CI pipelines workload (runner/benchmarks/ci_pipelines.py), whose steps replay
    here as commands; `stages` and `result` are judge's (runner/traces/replay.py). `before`
    lists the sandbox's processes before the preparation (`processes`): any other is ended
    before the seal key goes in, so nothing the preparation started can wait for it."""
    _end_new_processes(ctx, before)
    # No whole-script clock gate: the script also holds untimed parts (proxy start, digest), and a
    # clock step there touches no measured span. replay.judge gates each command's own span.
    # The records are sealed with a key only this process and the script know: a command that
    # rewrites them (to publish invented times) breaks the seal, a benchmark error.
    key = replay.new_key()
    ctx.upload(f"{replay.WORKDIR}/{replay.KEY_FILE}", key.encode())
    ran = ctx.background(script, timeout=REPLAY_LIMIT_S, check_gate=False)
    text = ctx.exec(["/bin/cat", f"{replay.WORKDIR}/{replay.RECORDS}"], timeout=60)
    if text.exit_code != 0:
        raise ProviderFailure("the replay records file cannot be read back from /app")
    try:
        records = replay.parse_records(text.stdout.decode(errors="replace"), key)
    except ValueError as exc:
        raise BenchmarkError(str(exc)) from None
    verdict = replay.judge(session, records, stages, result)
    ctx.evidence(
        EvidenceKind.REPLAY,
        {
            "script_exit_code": ran.exit_code,
            "proxy_port": records.proxy_port,
            "digest": records.digest,
            "commands": [
                [c.index, c.exit_code, round(c.wall_ms, 3), round(c.uptime_ms, 3)]
                for c in records.commands
            ],
            "timeout": records.timeout.evidence() if records.timeout else None,
        },
    )
    if verdict.outcome != Outcome.SUCCESS:
        _output_tail(ctx)
    if verdict.timed_out:
        _after_timeout(ctx, verdict.cause)
    if verdict.outcome == Outcome.EXCLUDED:
        raise Excluded(verdict.cause)
    if verdict.outcome == Outcome.PROVIDER_FAILURE:
        raise ProviderFailure(f"{verdict.cause} (script exit code {ran.exit_code})")
    if verdict.outcome == Outcome.BENCHMARK_ERROR:
        raise BenchmarkError(verdict.cause)
    if ran.exit_code != 0:
        raise BenchmarkError(f"the replay script exited {ran.exit_code} after a clean replay")
    ctx.record(metric, verdict.tool_time_ms, clock=Clock.GUEST, gate=ClockGate.PASS)
    for stage, value in verdict.stage_ms.items():
        ctx.record(stage, value, kind=MeasurementKind.STAGE, clock=Clock.GUEST, gate=ClockGate.PASS)


def processes(ctx: TrialContext) -> str:
    """The sandbox's processes now, as guard.PROCESSES lists them (untimed)."""
    listed = ctx.exec(["/bin/bash", "-c", guard.PROCESSES], timeout=60)
    if listed.exit_code != 0:
        raise ProviderFailure("cannot list the sandbox's processes before the preparation")
    return listed.stdout.decode(errors="replace")


def _end_new_processes(ctx: TrialContext, before: str) -> None:
    """End every process the preparation left (guard.END_NEW_PROCESSES): the unit's doing when
    one survives, so a benchmark error."""
    ended = ctx.exec(["/bin/bash", "-c", guard.END_NEW_PROCESSES, "end", before], timeout=120)
    if ended.exit_code != 0:
        error = ended.stderr.decode(errors="replace").strip()[-300:]
        raise BenchmarkError(f"the preparation left processes that cannot be ended: {error}")


def _after_timeout(ctx: TrialContext, cause: str) -> None:
    """The spec's post-timeout check: excluded only while the sandbox still answers."""
    try:
        answer = ctx.exec(["/bin/true"], timeout=POST_TIMEOUT_CHECK_S)
    except ProviderFailure as exc:
        raise ProviderFailure(f"{cause}; then the sandbox stopped answering: {exc}") from None
    if answer.exit_code != 0:
        raise ProviderFailure(
            f"{cause}; then the sandbox's post-timeout check `true` exited {answer.exit_code}"
        )


def unit_trace(ctx: TrialContext):
    """The trial's unit's trace, refused if it changed since the run was planned (a seam the
    replay tests replace with a tampered trace)."""
    try:
        trace = load_trace(TRACES_DIR / ctx.unit.slug / "trace.json")
    except TraceError as exc:
        raise BenchmarkError(str(exc)) from None
    if ctx.unit.digest and trace.digest() != ctx.unit.digest:
        raise BenchmarkError(
            f"trace {ctx.unit.slug} changed since the run was planned "
            f"(digest {trace.digest()[:12]}, planned {ctx.unit.digest[:12]})"
        )
    return trace


def prepare(ctx: TrialContext, trace) -> None:
    """Untimed: the repository as a fresh git checkout in /app, and the deny proxy beside it."""
    try:
        check_members(trace.archive_path, TraceError)
    except TraceError as exc:
        raise BenchmarkError(str(exc)) from None
    ctx.upload(SANDBOX_ARCHIVE, trace.archive_path.read_bytes())
    script = replay.prepare_script(trace, SANDBOX_ARCHIVE)
    prepared = ctx.exec(["/bin/bash", "-c", script], timeout=PREPARE_LIMIT_S)
    if prepared.exit_code != 0:
        error = prepared.stderr.decode(errors="replace").strip()[-500:]
        raise BenchmarkError(f"preparing {trace.slug} in /app failed: {error}")
    ctx.upload(f"{replay.WORKDIR}/{replay.PROXY_SCRIPT}", DENYPROXY.read_bytes())


def _output_tail(ctx: TrialContext) -> None:
    tail = ctx.exec(["/usr/bin/tail", "-c", "4000", f"{replay.WORKDIR}/{replay.OUTPUT_LOG}"], 60)
    ctx.evidence(EvidenceKind.REPLAY_OUTPUT_TAIL, {"text": tail.stdout.decode(errors="replace")})
