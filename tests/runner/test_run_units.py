"""`bench run --unit`: some units of a benchmark, picked on the command line and checked at
planning, before any sandbox starts."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from boxbench.models import Run
from runner import steps

pytestmark = pytest.mark.django_db(transaction=True)

TRACES = ["six-ensure-bytearray", "toolz-dissoc-if", "lz4-c-library"]


@pytest.fixture
def started(chain_provider, monkeypatch):
    """Runs the CLI plans, kept instead of being queued: these tests are about planning."""
    runs = []
    monkeypatch.setattr(steps, "start_run", runs.append)
    return runs


def bench_run(*argv):
    call_command(
        "bench", "run", "--provider", "local", "--trials", "1", *argv, stdout=io.StringIO()
    )


def test_it_plans_only_the_units_given_repeated_or_comma_separated(started):
    bench_run(
        "--benchmark", "rl-rollouts", "--unit", f"{TRACES[0]},{TRACES[1]}", "--unit", TRACES[1]
    )
    [run] = started
    assert run.manifest["benchmarks"]["rl-rollouts"]["units"] == TRACES[:2]
    assert sorted(run.trials.values_list("unit__slug", flat=True).distinct()) == sorted(TRACES[:2])


def test_it_takes_benchmark_and_unit_together_when_several_benchmarks_are_run(started):
    bench_run("--benchmark", "rl-rollouts,create", "--unit", f"rl-rollouts:{TRACES[2]}")
    [run] = started
    assert run.manifest["benchmarks"]["rl-rollouts"]["units"] == [TRACES[2]]
    assert run.manifest["benchmarks"]["create"]["units"] == ["default"]


def test_an_unknown_unit_is_refused_at_planning_naming_the_unit_and_the_reason(started):
    with pytest.raises(CommandError) as refused:
        bench_run("--benchmark", "rl-rollouts", "--unit", f"{TRACES[0]},nope")
    assert "unit 'nope' of rl-rollouts: no such unit (known: " in str(refused.value)
    assert TRACES[0] not in str(refused.value).split("(known")[0]
    assert not Run.objects.exists() and not started


@pytest.mark.parametrize(
    "argv, why",
    [
        (["--benchmark", "rl-rollouts,create", "--unit", "default"], "name one --benchmark"),
        (["--benchmark", "create", "--unit", "fork:default"], "fork is not among the --benchmark"),
        (["--benchmark", "create", "--unit", "create:"], "no unit after create:"),
        (["--plan", "default", "--unit", "default"], "give either --plan or --unit"),
    ],
)
def test_a_unit_that_names_no_benchmark_of_the_run_is_refused(started, argv, why):
    with pytest.raises(CommandError, match=why):
        bench_run(*argv)
    assert not Run.objects.exists()
