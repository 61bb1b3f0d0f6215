"""Terminal-Bench-style tasks in the Harbor task format, replayed by their oracle and verifier.

Each unit is a task directory (runner/tasks/format.py): boxbench's own tasks in runner/tasks/,
and the tasks a user imports with `bench run --benchmark terminal-bench --tasks DIR`
(runner/tasks/imported.py). No agent runs: a trial replays the task's oracle, a deterministic
workload of the shape a Terminal-Bench run puts on a sandbox.

Per trial, untimed: the task's files go in as one archive; the environment (a Dockerfile on the
standard image) is applied as its image build would be (runner/tasks/dockerfile.py); solution/
and tests/ are copied to /solution and /tests. Timed on the sandbox's clock, each as a long
command in the background with polling: solution/setup.sh when the task declares one (Setup),
solution/solve.sh (Solve), tests/test.sh (Verify), each run with bash under the task's own time
limit. Then /logs/verifier/reward.txt (or reward.json) is read. A reward other than 1 after clean
execution, a script that exits non-zero, or a time limit reached while the sandbox still answers
is an excluded trial ("does not replay here"), not the provider's failure. Task time (the three
stages' sum) is the main metric.
"""

from __future__ import annotations

import io
import json
import math
import re
import tarfile

from runner.benchmarks.base import (
    BenchmarkDefinition,
    BenchmarkError,
    Excluded,
    ProviderFailure,
    TrialContext,
    UnitDefinition,
)
from runner.benchmarks.deepswe import POST_TIMEOUT_CHECK_S
from runner.outcomes import Clock, ClockGate, Direction, EvidenceKind, MeasurementKind, Section
from runner.tasks import dockerfile, images, imported
from runner.tasks.format import TASKS_DIR, Task, TaskError, load_task, task_folders
from stats import labels

SLUG = "terminal-bench-boxbench"
TRIALS = 20
STAGES = ("Setup", "Solve", "Verify")
STAGING = "/tmp/boxbench-task"
ARCHIVE = "/tmp/boxbench-task.tar"
# Harbor's paths: where the oracle and the verifier are copied, where the reward is written.
SOLUTION_DIR, TESTS_DIR, LOGS_DIR = "/solution", "/tests", "/logs"
REWARD_TXT = "/logs/verifier/reward.txt"
REWARD_JSON = "/logs/verifier/reward.json"
KILL_AFTER_S = 5
PREPARE_LIMIT_S = 300.0
NOT_THE_REFERENCE = (
    "tasks in the Terminal-Bench (Harbor) format, boxbench's own unless a unit says it was "
    "imported, replayed by their oracle: not Terminal-Bench 4.0's tasks, not comparable with "
    "its results"
)
_RC = re.compile(rb"__TASK_RC=(\d+)\s*$")

DEFINITION = BenchmarkDefinition(
    download_note=NOT_THE_REFERENCE,
    slug=SLUG,
    # 2: units name E2B among the adapters that build a task's image (`built_by`); 3: Modal too.
    version="3",
    title="Terminal-Bench-style tasks (boxbench units)",
    section=Section.WORKLOAD,
    description=(
        "Sum of the runtimes of each task's setup, oracle solution and verifier, on the "
        "sandbox's clock, with the network blocked, at the task's declared size. Tasks are in "
        "the Harbor format Terminal-Bench uses; these are boxbench's own tasks (a build from "
        "source, data pipelines, a log investigation, a git repair, a loopback server, archive "
        "and signature tools, a package fix), not Terminal-Bench 4.0's, whose task images "
        "cannot be obtained here: results are not comparable with Terminal-Bench's."
    ),
    metric="task_time",
    unit="ms",
    direction=Direction.LOWER,
    clock=Clock.GUEST,
    # The methodology's default size gates eligibility; each task's sandbox then asks the size
    # its task.toml declares (a provider without it reads Not Offered for that task).
    cpus=2,
    memory_mib=4096,
    trials_per_unit=TRIALS,
    ranking_floor=labels.declared_floor(TRIALS * len(task_folders(TASKS_DIR))),
    # Imported tasks make each machine's units differ: a run's floor counts its own units.
    floor_share=str(labels.DEFAULT_FLOOR_FRACTION),
    required_capabilities=("exec", "file_transfer", "network_lockdown"),
    stage_names=STAGES,
    steps_include_create_or_build=True,
    create_timeout_s=600.0,
    # Above the shipped tasks' own limits (300 s agent, 120 s verifier) and the preparation.
    procedure_timeout_s=PREPARE_LIMIT_S + 300.0 * 2 + 120.0 + 120.0,
    destroy_timeout_s=300.0,
    lifetime_s=1800.0,
    parallel_trials=10,
    before_create=lambda ctx: build_task_image(ctx),
)


def units() -> list[UnitDefinition]:
    return [_unit(task, "boxbench") for task in _shipped()] + [
        _unit(task, "imported") for task in imported.load()
    ]


def run(ctx: TrialContext) -> None:
    task = _task(ctx)
    if task.environment is None:
        raise BenchmarkError(f"task {task.slug}: {_why_not(task)}")
    _prepare(ctx, task)
    env = dockerfile.environment_variables(task.environment)
    workdir = task.environment.workdir
    times = {"Setup": 0.0}
    if "solution/setup.sh" in task.files:
        times["Setup"] = _step(
            ctx, "Setup", "solution/setup.sh", task.agent_timeout_s, env, workdir
        )
    times["Solve"] = _step(ctx, "Solve", "solution/solve.sh", task.agent_timeout_s, env, workdir)
    times["Verify"] = _step(ctx, "Verify", "tests/test.sh", task.verifier_timeout_s, env, workdir)
    reward = _reward(ctx)
    ctx.evidence(EvidenceKind.REPLAY, {"task": task.slug, "reward": reward, "stages_ms": times})
    if reward != 1:
        raise Excluded(
            f"the verifier wrote reward {reward:g} after a clean oracle run: "
            "the task does not replay here"
        )
    ctx.record(DEFINITION.metric, sum(times.values()), clock=Clock.GUEST, gate=ClockGate.PASS)
    for stage, value in times.items():
        ctx.record(stage, value, kind=MeasurementKind.STAGE, clock=Clock.GUEST, gate=ClockGate.PASS)


def _shipped() -> list[Task]:
    return [load_task(folder) for folder in task_folders(TASKS_DIR)]


def _unit(task: Task, origin: str) -> UnitDefinition:
    return UnitDefinition(
        slug=task.slug,
        title=task.slug,
        definition={
            "origin": origin,
            "category": str(task.metadata.get("category", "")),
            "cpus": task.cpus,
            "memory_mib": task.memory_mib,
            "agent_timeout_s": task.agent_timeout_s,
            "verifier_timeout_s": task.verifier_timeout_s,
            "base_image": task.environment.base if task.environment else task.docker_image,
            "setup": "solution/setup.sh" in task.files,
            # Why the task needs its own image ("" when it replays on the standard image), and
            # the adapters that build one; the others read Not Supported (runner/rules.py).
            "needs_image_build": "" if task.builds_on_standard else _why_not(task),
            "built_by": list(images.builders()) if task.environment else [],
            "own_units": NOT_THE_REFERENCE if origin == "boxbench" else "",
        },
        digest=task.digest(),
    )


def _why_not(task: Task) -> str:
    if task.environment is None:
        return "its environment is only a prebuilt image, which boxbench does not pull"
    return f"its environment needs an image build ({task.environment.why_not})"


def build_task_image(ctx) -> None:
    """Untimed, before create: a task the standard image cannot replay gets its own image,
    built from its Dockerfile by the provider's engine or its template mechanism
    (runner/tasks/images.py), once per provider and task digest."""
    task = _task(ctx)
    if task.builds_on_standard:
        return
    adapter = ctx.provider.declaration.adapter
    if task.environment is None or adapter not in images.builders():
        raise BenchmarkError(
            f"task {task.slug}: {_why_not(task)}, and {images.why_no_build(adapter)}"
        )
    try:
        if adapter in images.BUILD_ADAPTERS:
            built = images.BuiltImage(images.build_on_engine(ctx.provider, task), "")
        else:
            built = ctx.provider.build_task_image(task)
    except images.BuildError as exc:
        raise BenchmarkError(f"task {task.slug}: {exc}") from None
    ctx.evidence(
        EvidenceKind.TASK_IMAGE,
        {"task_image": built.identifier, "build": built.build, "task_digest": task.digest()},
    )
    # The provider's identifier of the built image: the sandbox's facts record it.
    ctx.use_image(built.identifier)


def _task(ctx: TrialContext) -> Task:
    origin = ctx.unit.definition.get("origin", "boxbench")
    folder = (imported.root() if origin == "imported" else TASKS_DIR) / ctx.unit.slug
    try:
        task = load_task(folder)
    except TaskError as exc:
        raise BenchmarkError(str(exc)) from None
    if ctx.unit.digest and task.digest() != ctx.unit.digest:
        raise BenchmarkError(
            f"task {ctx.unit.slug} changed since the run was planned "
            f"(digest {task.digest()[:12]}, planned {ctx.unit.digest[:12]})"
        )
    return task


def task_archive(task: Task) -> bytes:
    """The task's files as one tar archive, the same bytes for the same files."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in task.files:
            path = task.path / name
            data = path.read_bytes()
            info = tarfile.TarInfo(name)
            # The executable bit is kept: a solve.sh may start scripts of its own directly.
            mode = 0o755 if path.stat().st_mode & 0o100 else 0o644
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def prepare_script(task: Task) -> str:
    """Untimed: the environment as its image build would leave it, the oracle and the verifier
    where Harbor puts them. Harbor's paths may be links to writable places (the `local`
    adapter's read-only root), so each is created where it leads."""
    assert task.environment is not None
    # A task built into its own image has its environment already; others replay it here.
    replay = dockerfile.replay_script(task.environment, f"{STAGING}/environment")
    return "\n".join(
        [
            "set -eu",
            f"rm -rf {STAGING} && mkdir -p {STAGING}",
            f"tar -xf {ARCHIVE} -C {STAGING} && rm -f {ARCHIVE}",
            f"for d in {SOLUTION_DIR} {TESTS_DIR} {LOGS_DIR}; do",
            '    mkdir -p "$(readlink -m "$d")"',
            "done",
            f"mkdir -p {LOGS_DIR}/verifier {LOGS_DIR}/agent",
            f"cp -R {STAGING}/solution/. {SOLUTION_DIR}/",
            f"cp -R {STAGING}/tests/. {TESTS_DIR}/",
            *(["(", replay, ")"] if task.builds_on_standard else []),
        ]
    )


def _prepare(ctx: TrialContext, task: Task) -> None:
    ctx.upload(ARCHIVE, task_archive(task))
    prepared = ctx.exec(["/bin/bash", "-c", prepare_script(task)], timeout=PREPARE_LIMIT_S)
    if prepared.exit_code != 0:
        error = prepared.stderr.decode(errors="replace").strip()[-500:]
        raise BenchmarkError(f"preparing task {task.slug}'s environment failed: {error}")


def step_script(script: str, limit_s: float, env: dict[str, str], workdir: str) -> str:
    """One task script under its time limit, run with bash (no exec bit or shebang needed); its
    exit code is printed, so the command itself ends 0 unless something outside ends it."""
    exports = "".join(f"export {k}={_quote(v)}; " for k, v in sorted(env.items()))
    limit = max(1, math.ceil(limit_s))
    return (
        f"cd {_quote(workdir)} || exit 125\n{exports}"
        f"timeout --kill-after={KILL_AFTER_S}s {limit}s bash /{script} "
        f">>{LOGS_DIR}/agent/{script.replace('/', '-')}.log 2>&1\n"
        'echo "__TASK_RC=$?"\n'
    )


def _step(ctx, stage: str, script: str, limit_s: float, env, workdir) -> float:
    """Run one timed stage; returns its runtime (ms) on the sandbox's clock."""
    # Harbor's places: solution/X is /solution/X, tests/X is /tests/X.
    ran = ctx.background(
        step_script(script, limit_s, env, workdir),
        timeout=limit_s + KILL_AFTER_S + 60,
    )
    match = _RC.search(ran.stdout)
    if ran.exit_code != 0 or not match:
        raise ProviderFailure(
            f"{stage}: {script} ended without its exit code (exit {ran.exit_code})"
        )
    code = int(match.group(1))
    if code in (124, 137):
        _output_tail(ctx, script)
        cause = f"{stage}: {script} reached its {limit_s:g} s limit"
        _after_timeout(ctx, cause)
        raise Excluded(f"{cause} while the sandbox still answers: the task does not replay here")
    if code != 0:
        _output_tail(ctx, script)
        raise Excluded(f"{stage}: {script} exited {code}: the task does not replay here")
    return float(ran.runtime_ms)


def _after_timeout(ctx: TrialContext, cause: str) -> None:
    """The methodology's post-timeout check: excluded only while the sandbox still answers."""
    try:
        answer = ctx.exec(["/bin/true"], timeout=POST_TIMEOUT_CHECK_S)
    except ProviderFailure as exc:
        raise ProviderFailure(f"{cause}; then the sandbox stopped answering: {exc}") from None
    if answer.exit_code != 0:
        raise ProviderFailure(
            f"{cause}; then the post-timeout check `true` exited {answer.exit_code}"
        )


def _reward(ctx: TrialContext) -> float:
    """The verifier's reward: reward.txt, else reward.json's "reward" (or its one value)."""
    text = ctx.exec(["/bin/cat", REWARD_TXT], timeout=60)
    if text.exit_code == 0:
        return parse_reward_text(text.stdout)
    data = ctx.exec(["/bin/cat", REWARD_JSON], timeout=60)
    if data.exit_code == 0:
        return parse_reward_json(data.stdout)
    raise Excluded("the verifier wrote no reward (neither reward.txt nor reward.json)")


def parse_reward_text(raw: bytes) -> float:
    try:
        value = float(raw.decode(errors="replace").strip())
    except ValueError:
        raise Excluded(f"reward.txt holds {raw[:40]!r}, not a number") from None
    if not math.isfinite(value):
        raise Excluded(f"reward.txt holds {value}, not a finite number")
    return value


def parse_reward_json(raw: bytes) -> float:
    try:
        data = json.loads(raw)
    except ValueError:
        raise Excluded("reward.json is not JSON") from None
    if isinstance(data, dict):
        values = [data["reward"]] if "reward" in data else list(data.values())
    else:
        values = [data]
    if len(values) != 1 or isinstance(values[0], bool) or not isinstance(values[0], int | float):
        raise Excluded(f"reward.json holds no single reward: {str(data)[:80]}")
    return float(values[0])


def _output_tail(ctx: TrialContext, script: str) -> None:
    log = f"{LOGS_DIR}/agent/{script.replace('/', '-')}.log"
    tail = ctx.exec(["/usr/bin/tail", "-c", "4000", log], 60)
    ctx.evidence(EvidenceKind.REPLAY_OUTPUT_TAIL, {"text": tail.stdout.decode(errors="replace")})


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
