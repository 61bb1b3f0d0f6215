"""Terminal-Bench-style tasks replayed on the real local provider: every shipped oracle passes
its verifier; a verifier writing 0, a failing oracle and an overrun are excluded trials."""

import shutil

import pytest

from runner import lifecycle
from runner.benchmarks import terminal_bench
from runner.limits import Limits
from runner.readiness import ReadinessPolicy
from runner.tasks import imported
from runner.tasks.format import TASKS_DIR, load_task, task_folders

FAST = Limits(readiness=ReadinessPolicy(deadline_s=5), poll_interval_s=0.1, gone_timeout_s=5)
SHIPPED = [p.name for p in task_folders(TASKS_DIR)]


def _trial(provider, unit):
    return lifecycle.run_trial(
        provider,
        terminal_bench.DEFINITION,
        unit,
        terminal_bench.run,
        label="test",
        limits=FAST,
    )


def _unit(slug):
    return next(u for u in terminal_bench.units() if u.slug == slug)


@pytest.mark.parametrize("slug", SHIPPED)
def test_it_replays_each_shipped_task_with_its_oracle_passing(local, slug):
    result = _trial(local, _unit(slug))
    assert (result.outcome, result.cause) == ("success", "")
    values = {(m.kind, m.name): m.value for m in result.measurements}
    stages = {s: values[("stage", s)] for s in terminal_bench.STAGES}
    assert values[("metric", "task_time")] == pytest.approx(sum(stages.values()))
    assert stages["Solve"] > 0 and stages["Verify"] > 0
    assert (stages["Setup"] > 0) == ("solution/setup.sh" in load_task(TASKS_DIR / slug).files)
    replayed = next(e.data for e in result.evidence if e.kind == "replay")
    assert replayed["reward"] == 1


@pytest.fixture
def own_tasks(tmp_path, monkeypatch):
    """An imported-tasks folder of this test's own, holding a copy of a shipped task to alter."""
    monkeypatch.setenv("BOXBENCH_IMPORTED_TASKS_DIR", str(tmp_path / "imported"))
    source = tmp_path / "source"

    def task(slug, change):
        folder = source / slug
        shutil.copytree(TASKS_DIR / "csv-sales-summary", folder)
        change(folder)
        imported.import_tasks(source)
        return _unit(slug)

    return task


def test_a_verifier_writing_zero_excludes_the_trial(local, own_tasks):
    def zero(folder):
        (folder / "tests" / "test.sh").write_text(
            "#!/bin/bash\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n"
        )

    result = _trial(local, own_tasks("zero-reward", zero))
    assert (result.outcome, result.owner) == ("excluded", "trace")
    assert "reward 0" in result.cause and "does not replay here" in result.cause
    assert not [m for m in result.measurements if m.name == "task_time"]


def test_a_reward_json_of_one_counts_as_a_pass(local, own_tasks):
    def json_reward(folder):
        (folder / "tests" / "test.sh").write_text(
            "mkdir -p /logs/verifier\necho '{\"reward\": 1.0}' > /logs/verifier/reward.json\n"
        )

    result = _trial(local, own_tasks("json-reward", json_reward))
    assert (result.outcome, result.cause) == ("success", "")


def test_a_failing_oracle_and_an_overrun_are_excluded_not_provider_failures(local, own_tasks):
    def failing(folder):
        (folder / "solution" / "solve.sh").write_text("echo broken >&2\nexit 3\n")

    def slow(folder):
        (folder / "solution" / "solve.sh").write_text("sleep 30\n")
        toml = folder / "task.toml"
        toml.write_text(toml.read_text().replace("timeout_sec = 300.0", "timeout_sec = 1.0"))

    failed = _trial(local, own_tasks("failing-oracle", failing))
    assert (failed.outcome, failed.owner) == ("excluded", "trace")
    assert failed.cause == "Solve: solution/solve.sh exited 3: the task does not replay here"
    overran = _trial(local, own_tasks("slow-oracle", slow))
    assert (overran.outcome, overran.owner) == ("excluded", "trace")
    assert "reached its 1 s limit while the sandbox still answers" in overran.cause
