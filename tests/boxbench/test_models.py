import uuid

import pytest
from django.db import IntegrityError, transaction

from boxbench.models import (
    Aggregate,
    Benchmark,
    InvalidTransition,
    Provider,
    Run,
    RunStatus,
    Scope,
    Trial,
    TrialState,
    Unit,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def cell():
    provider = Provider.objects.create(slug="local", name="Local", adapter="local")
    benchmark = Benchmark.objects.create(
        slug="create",
        title="Create",
        section="sandbox_operations",
        metric="create_ms",
        clock="job_host",
    )
    unit = Unit.objects.create(benchmark=benchmark, slug="default")
    run = Run.objects.create(name="r")
    return run, benchmark, unit, provider


def make_trial(cell, **fields):
    run, benchmark, unit, provider = cell
    values = {"run": run, "benchmark": benchmark, "unit": unit, "provider": provider, "round": 1}
    values.update(fields)
    return Trial.objects.create(**values)


def test_it_records_every_run_transition_as_a_row(cell):
    run = cell[0]
    run.transition(RunStatus.RUNNING, note="started")
    run.transition(RunStatus.COMPLETED)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert run.started_at is not None and run.ended_at is not None
    steps = list(run.transitions.values_list("from_status", "to_status"))
    assert steps == [("planned", "running"), ("running", "completed")]


def test_it_refuses_a_transition_the_map_does_not_allow(cell):
    run = cell[0]
    with pytest.raises(InvalidTransition, match="planned -> completed"):
        run.transition(RunStatus.COMPLETED)
    assert run.transitions.count() == 0


def test_it_refuses_a_transition_from_a_state_another_process_already_left(cell):
    run = cell[0]
    stale = Run.objects.get(pk=run.pk)
    run.transition(RunStatus.RUNNING)
    with pytest.raises(InvalidTransition, match="no longer planned"):
        stale.transition(RunStatus.CANCELLED)
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING


def test_it_refuses_a_done_trial_without_an_outcome(cell):
    with pytest.raises(IntegrityError), transaction.atomic():
        make_trial(cell, state=TrialState.DONE, seq=1)


def test_it_refuses_an_outcome_on_a_trial_that_is_not_done(cell):
    with pytest.raises(IntegrityError), transaction.atomic():
        make_trial(cell, state=TrialState.RUNNING, outcome="success")


def test_it_refuses_a_done_trial_without_an_execution_sequence(cell):
    with pytest.raises(IntegrityError), transaction.atomic():
        make_trial(cell, state=TrialState.DONE, outcome="success")


def test_it_refuses_two_trials_with_the_same_sequence_in_a_run(cell):
    make_trial(cell, seq=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        make_trial(cell, seq=1)


def test_it_refuses_round_zero(cell):
    with pytest.raises(IntegrityError), transaction.atomic():
        make_trial(cell, round=0)


def test_it_refuses_a_published_run_without_a_publication_time(cell):
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(name="x", published=True)


def test_it_refuses_two_benchmarks_with_the_same_slug_and_version():
    fields = {"title": "C", "section": "workload", "metric": "m", "clock": "guest"}
    Benchmark.objects.create(slug="b", version="1", **fields)
    Benchmark.objects.create(slug="b", version="2", **fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        Benchmark.objects.create(slug="b", version="1", **fields)


def test_a_page_is_read_back_by_the_scope_and_parts_it_was_written_with():
    run_id = uuid.uuid4()
    Aggregate.objects.bulk_create(
        [
            Aggregate.of(Scope.OVERVIEW, data={"page": "overview"}),
            Aggregate.of(Scope.UNIT, "create", "small", data={"page": "unit"}),
            Aggregate.of(Scope.RUN, run_id, data={"page": "run"}),
        ]
    )
    assert Aggregate.objects.page(Scope.UNIT, "create", "small") == {"page": "unit"}
    assert Aggregate.objects.get(scope="unit").key == "create/small"
    assert Aggregate.objects.page(Scope.RUN, run_id) == {"page": "run"}
    assert Aggregate.objects.page(Scope.BENCHMARK, "create") is None
    overview = Aggregate.objects.get(scope="overview", key="")
    assert Aggregate.objects.publication_version() == overview.id
