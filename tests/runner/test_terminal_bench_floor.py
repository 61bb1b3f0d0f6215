"""The Terminal-Bench workload's ranking floor counts the run's own units: a folder of two
imported tasks needs 90% of the successes its run requests (N x 2), not the 180 of the ten
shipped tasks, which such a run could never reach."""

import dataclasses
import io
import shutil

import pytest
from django.core.management import call_command

from boxbench.leaderboard.sources import run_floor
from boxbench.models import Aggregate, Benchmark, Run, Trial
from runner.benchmarks import terminal_bench
from runner.tasks.format import TASKS_DIR

TRIALS = 2


@pytest.fixture
def two_tasks(tmp_path, monkeypatch):
    """Two outside tasks (copies of shipped ones under other names), the workload declaring
    2 trials per unit so a run of both requests 4 successes: its floor is ceil(0.9 x 4) = 4."""
    monkeypatch.setenv("BOXBENCH_IMPORTED_TASKS_DIR", str(tmp_path / "imported"))
    few = dataclasses.replace(terminal_bench.DEFINITION, trials_per_unit=TRIALS)
    monkeypatch.setattr(terminal_bench, "DEFINITION", few)
    source = tmp_path / "two-tasks"
    shutil.copytree(TASKS_DIR / "reproducible-archive", source / "pack-site")
    shutil.copytree(TASKS_DIR / "hmac-release-check", source / "check-release")
    return source


def test_the_floor_is_derived_from_the_units_a_run_plans():
    assert terminal_bench.DEFINITION.ranking_floor == 180  # the ten shipped tasks x 20 x 90%
    run = Run(manifest={"benchmarks": {terminal_bench.SLUG: {"trials_per_unit": 20}}})
    benchmark = Benchmark(slug=terminal_bench.SLUG, trials_per_unit=20, ranking_floor=180)
    run.manifest["benchmarks"][terminal_bench.SLUG]["run_floor"] = 36
    assert run_floor(benchmark, run, 12) == 36
    # A run planned before the floor was recorded per run keeps the declared floor's share.
    del run.manifest["benchmarks"][terminal_bench.SLUG]["run_floor"]
    assert run_floor(benchmark, run, 10) == 180


@pytest.mark.django_db(transaction=True)
def test_a_run_of_two_imported_tasks_is_ranked_on_its_own_units(
    two_tasks, chain_provider, sync_queue
):
    argv = ["--benchmark", "terminal-bench", "--tasks", str(two_tasks), "--provider", "local"]
    call_command("bench", "run", *argv, "--concurrency", "1", "--publish", stdout=io.StringIO())
    run = Run.objects.get()
    planned = run.manifest["benchmarks"][terminal_bench.SLUG]
    assert sorted(planned["units"]) == ["check-release", "pack-site"]
    assert planned["run_floor"] == 4
    assert Trial.objects.filter(run=run, outcome="success").count() == 2 * TRIALS
    board = Aggregate.objects.get(scope="benchmark", key=terminal_bench.SLUG).data
    [row] = [r for r in board["rows"] if r["provider"] == "local"]
    assert (row["ranking_floor"], row["ranked"]) == (4, True)


@pytest.mark.django_db(transaction=True)
def test_a_run_asking_fewer_trials_than_declared_is_not_ranked_on_them(
    two_tasks, chain_provider, sync_queue
):
    shutil.rmtree(two_tasks / "check-release")
    argv = ["--benchmark", "terminal-bench", "--tasks", str(two_tasks), "--provider", "local"]
    argv += ["--trials", "1", "--concurrency", "1", "--publish"]
    call_command("bench", "run", *argv, stdout=io.StringIO())
    run = Run.objects.get()
    # One unit of the declared 2 trials: 90% of 2 successes is 2, whatever --trials asked.
    assert run.manifest["benchmarks"][terminal_bench.SLUG]["run_floor"] == 2
    board = Aggregate.objects.get(scope="benchmark", key=terminal_bench.SLUG).data
    [row] = [r for r in board["rows"] if r["provider"] == "local"]
    assert (row["n"], row["ranking_floor"], row["ranked"]) == (1, 2, False)
