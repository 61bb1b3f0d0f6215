"""CI Actions: pipeline time of replayed CI jobs, on boxbench's own units.

Each unit is a CI job of a real open-source project (runner/pipelines/<slug>/pipeline.json): a
checkout from a shipped git bundle, dependency installs from shipped wheels with the network
blocked, build, lint and test steps. The steps replay through the DeepSWE machinery (one
background script, each step between two guest clock readings under the per-command limit, the
loopback deny proxy, sealed records; runner/traces/replay.py), so the procedure, the clock gate
and the outcome classes are DeepSWE's. The verified result is the checked-out commit and the
SHA-256 of each build artifact (a wheel, a static library, a binary), hashed after the last step,
untimed; a failing test step fails its step. Pipeline time (sum of step runtimes) is the main
metric; the per-stage sums use the classifier's five stages, each step counted under the stage of
its declared kind (runner/pipelines/format.KINDS). docs/pipelines.md has the details.

Not a reference workload: these are boxbench's own units on pinned PyPI sources, and the slug,
title and description say so.
"""

from __future__ import annotations

from runner.benchmarks.base import BenchmarkDefinition, BenchmarkError, TrialContext, UnitDefinition
from runner.benchmarks.deepswe import REPLAY_LIMIT_S, processes, replay_and_record
from runner.outcomes import Clock, Direction, Section
from runner.pipelines.bundle import prepare_script, staged_files
from runner.pipelines.format import (
    PIPELINES_DIR,
    STAGING,
    Pipeline,
    PipelineError,
    load_all,
    load_pipeline,
    pipeline_folders,
    verify_snippet,
)
from runner.traces import classify, replay
from runner.traces.record import DENYPROXY
from stats import labels

SLUG = "ci-actions-boxbench"
TRIALS = 20
PREPARE_LIMIT_S = 120.0
NOT_THE_REFERENCE = (
    "boxbench's own CI pipeline units on pinned PyPI sources, replayed offline: "
    "not any project's hosted CI timings"
)

DEFINITION = BenchmarkDefinition(
    download_note=NOT_THE_REFERENCE,
    slug=SLUG,
    title="CI Actions (boxbench units)",
    section=Section.WORKLOAD,
    description=(
        "Sum of step runtimes of replayed CI jobs (checkout from a git bundle, dependency install "
        "from shipped wheels, build, lint, test), on the sandbox's clock, with the network "
        "blocked. These are boxbench's own units, jobs written for pinned PyPI source releases "
        "of Python packages and C libraries, not any project's hosted CI: results are not "
        "comparable with CI timings published elsewhere."
    ),
    metric="pipeline_time",
    unit="ms",
    direction=Direction.LOWER,
    clock=Clock.GUEST,
    # The methodology's default size: no page of it sets another for CI jobs. Version 1 asked
    # 4 vCPU / 8 GiB, which no cloud provider declares, so each read Not Offered.
    version="2",
    cpus=2,
    memory_mib=4096,
    trials_per_unit=TRIALS,
    # As DeepSWE: 90% of the successes requested before any top-up, across all units.
    ranking_floor=labels.declared_floor(TRIALS * len(pipeline_folders())),
    required_capabilities=("exec", "file_transfer", "network_lockdown"),
    stage_names=classify.STAGES,
    steps_include_create_or_build=True,
    create_timeout_s=600.0,
    procedure_timeout_s=PREPARE_LIMIT_S + REPLAY_LIMIT_S + 120.0,
    destroy_timeout_s=300.0,
    lifetime_s=1500.0,
    parallel_trials=10,
)


def units() -> list[UnitDefinition]:
    return [
        UnitDefinition(
            slug=pipeline.slug,
            title=pipeline.title,
            definition={
                "ecosystem": pipeline.ecosystem,
                "steps": [[s.name, s.kind, s.stage] for s in pipeline.steps],
                "recorded_ms": round(pipeline.recorded_ms, 3),
                "source": pipeline.source["url"],
                "source_sha256": pipeline.source["sha256"],
                "bundle_sha256": pipeline.bundle.sha256,
                "commit": pipeline.commit,
                "artifacts": {a.path: a.sha256 for a in pipeline.artifacts},
                "own_units": NOT_THE_REFERENCE,
            },
            digest=pipeline.digest(),
        )
        for pipeline in load_all()
    ]


def run(ctx: TrialContext) -> None:
    pipeline = _pipeline(ctx)
    before = processes(ctx)
    _prepare(ctx, pipeline)
    script = replay.replay_script(pipeline, verify=verify_snippet(pipeline))
    replay_and_record(
        ctx,
        pipeline,
        script,
        "pipeline_time",
        before,
        stages=pipeline.stages,
        result="result (commit and artifacts)",
    )


def _pipeline(ctx: TrialContext) -> Pipeline:
    try:
        pipeline = load_pipeline(PIPELINES_DIR / ctx.unit.slug / "pipeline.json")
    except PipelineError as exc:
        raise BenchmarkError(str(exc)) from None
    if ctx.unit.digest and pipeline.digest() != ctx.unit.digest:
        raise BenchmarkError(
            f"pipeline {ctx.unit.slug} changed since the run was planned "
            f"(digest {pipeline.digest()[:12]}, planned {ctx.unit.digest[:12]})"
        )
    return pipeline


def _prepare(ctx: TrialContext, pipeline: Pipeline) -> None:
    """Untimed: the empty repository in /app, the bundle and wheels staged, the deny proxy."""
    prepared = ctx.exec(["/bin/bash", "-c", prepare_script()], timeout=PREPARE_LIMIT_S)
    if prepared.exit_code != 0:
        error = prepared.stderr.decode(errors="replace").strip()[-500:]
        raise BenchmarkError(f"preparing {pipeline.slug} in /app failed: {error}")
    staging = ctx.exec(["/bin/mkdir", "-p", f"{STAGING}/wheels"], timeout=60)
    if staging.exit_code != 0:
        raise BenchmarkError(f"cannot create {STAGING} in the sandbox")
    for path, local in staged_files(pipeline):
        ctx.upload(path, local.read_bytes())
    ctx.upload(f"{replay.WORKDIR}/{replay.PROXY_SCRIPT}", DENYPROXY.read_bytes())
