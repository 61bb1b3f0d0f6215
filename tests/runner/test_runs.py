"""Runs end to end on the real local provider: planning, claim-once, top-ups, cancel, CLI, admin."""

import contextlib
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.urls import reverse

from boxbench.leaderboard.sources import run_floor, unit_scope
from boxbench.models import Benchmark, Outcome, Run, RunStatus, Trial, TrialState, Unit
from runner import chain, runs, steps, store
from runner.labels import batch_label
from runner.plan import PlanError, plan_run
from runner.providers.base import SandboxSpec
from tests.runner.faults import FaultyProvider

pytestmark = pytest.mark.django_db(transaction=True)


def start(run):
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()
    return run


def plan(benchmark="create", trials=4, **kwargs):
    kwargs.setdefault("concurrency", 1)
    return plan_run(
        "test", benchmarks=[benchmark], providers=["local"], trials=trials, seed=1, **kwargs
    )


def workers():
    """Two workers on PostgreSQL; the in-memory SQLite test database locks whole tables."""
    return 2 if connection.vendor == "postgresql" else 1


def test_it_plans_rounds_and_records_the_seed_and_refusals(chain_provider):
    with pytest.raises(
        PlanError,
        match=r"allows 8 concurrent sandboxes; create needs 9 \(9 parallel trials x 1 sandboxes",
    ):
        plan(trials=6, concurrency=9)  # R403: nothing else is eligible, so nothing is planned
    run = plan(trials=6, concurrency=2)
    assert run.manifest["seed"] == 1 and run.manifest["refusals"] == []
    assert sorted(run.trials.values_list("round", flat=True)) == [1, 1, 2, 2, 3, 4]
    with pytest.raises(PlanError, match="unknown benchmark"):
        plan(benchmark="nope")


def test_it_claims_a_trial_once_even_if_delivered_twice(chain_provider):
    run = plan(trials=1)
    trial = run.trials.get()
    assert store.claim_trial(trial.pk, "host-a") is True
    assert store.claim_trial(trial.pk, "host-b") is False
    assert Trial.objects.get(pk=trial.pk).job_host == "host-a"


def test_it_runs_a_chain_to_an_audited_completed_run(chain_provider, sync_queue):
    run = start(plan(trials=4, concurrency=workers()))
    assert run.status == RunStatus.COMPLETED and run.audit_report is not None
    trials = list(run.trials.order_by("seq"))
    assert [t.round for t in trials] == [1, 2, 3, 4]
    assert all(
        t.outcome == Outcome.SUCCESS and t.job_host and t.in_flight is not None for t in trials
    )
    assert all("create_ms" in t.metrics for t in trials)
    assert run.manifest["live_sandboxes"]["local"]["before_chain"]["others"] == 0
    assert run.manifest["topups"]["local"]["rounds"] == 0


def test_it_refills_provider_failures_linked_to_what_they_replace(chain_provider, local):
    chain_provider(FaultyProvider(local, create_errors=2))
    run = start(plan(trials=4))
    failed = run.trials.filter(outcome=Outcome.PROVIDER_FAILURE)
    assert failed.count() == 2
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 4
    for trial in failed:
        replacement = trial.replaced_by.get()
        assert replacement.round >= 5 and replacement.attempt == 2


def test_it_stops_refilling_after_two_rounds_without_a_success(chain_provider, local):
    chain_provider(FaultyProvider(local, create_errors=10_000))
    run = start(plan(trials=4))
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 0
    assert run.trials.count() <= 8  # never more than 2N attempts per unit
    assert run.manifest["topups"]["local"]["stopped"] in (
        "two refill rounds in a row added no successful trial",
        "every unit reached its target or its 2N attempts",
    )


def test_it_stops_a_unit_after_a_benchmark_error(chain_provider, local, monkeypatch):
    from runner.benchmarks import create

    monkeypatch.setattr(create, "run", lambda ctx: 1 / 0)
    run = start(plan(trials=4))
    assert run.trials.filter(outcome=Outcome.BENCHMARK_ERROR).count() == 1
    assert run.trials.filter(state=TrialState.CANCELLED).count() == 3
    assert run.manifest["stopped_units"] == [["local", "create", "default"]]


def test_it_stops_refilling_when_cleanup_cannot_be_verified(chain_provider, local):
    chain_provider(FaultyProvider(local, never_gone=True))
    run = start(plan(trials=4))
    assert "cleanup could not be verified" in run.manifest["topups"]["local"]["stopped"]
    assert run.trials.filter(state=TrialState.DONE).count() == 1  # the worker started no more
    assert run.manifest["batches_stopped_early"]


def test_it_cancels_a_run_and_cleans_up_its_sandboxes(chain_provider, local):
    run = plan(trials=4)
    run.transition(RunStatus.RUNNING)
    local.create(SandboxSpec(1, 1024, batch_label(run.id, "local", "create", 1), 60))
    assert runs.cancel_run(run) == 1
    assert run.status == RunStatus.CANCELLED and local.list_sandboxes() == []
    assert run.trials.filter(state=TrialState.CANCELLED).count() == 4


def test_it_enqueues_the_audit_by_name_when_the_last_chain_ends(chain_provider):
    from django_q.brokers import get_broker
    from django_q.signing import SignedPackage

    run = start(plan(trials=1))
    assert run.status == RunStatus.COMPLETED and run.audit_report is None  # no worker yet
    [(_, package)] = get_broker().dequeue()
    task = SignedPackage.loads(package)
    assert task["func"] == "boxbench.tasks.audit_run" and task["args"] == (str(run.pk),)


def test_a_failed_audit_leaves_the_run_completed_and_says_how_to_audit_it_again(
    chain_provider, sync_queue, monkeypatch, caplog
):
    from boxbench import tasks as web_tasks

    def broken(run):
        raise RuntimeError("no statistics today")

    monkeypatch.setattr(web_tasks, "run_audit", broken)
    run = start(plan(trials=1))
    assert run.status == RunStatus.COMPLETED and run.audit_report is None
    assert f"re-run it with `bench audit {run.pk}`" in caplog.text


def test_the_cli_runs_a_plan_through_the_sync_queue(chain_provider, sync_queue):
    out = io.StringIO()
    call_command(
        "bench",
        "run",
        "--benchmark",
        "destroy",
        "--trials",
        "2",
        "--concurrency",
        "1",
        "--wait",
        stdout=out,
    )
    run = Run.objects.get()
    assert run.status == RunStatus.COMPLETED
    assert "local        destroy              2/2 successes" in out.getvalue()


def test_the_cli_reports_plan_errors_clearly(chain_provider):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown provider"):
        call_command("bench", "run", "--provider", "nowhere", stdout=io.StringIO())


def test_cleanup_lists_then_removes_leftover_sandboxes(chain_provider, local, monkeypatch):
    from boxbench.cli import cleanup

    monkeypatch.setattr(cleanup, "load_all", lambda: {"local": local.declaration})
    monkeypatch.setattr(cleanup, "get_provider", lambda slug, declaration: local)
    sandbox = local.create(SandboxSpec(1, 1024, "bb-leftover", 60))
    local.snapshot(sandbox)
    out = io.StringIO()
    call_command("bench", "cleanup", "--max-age", "0", "--dry-run", stdout=out)
    assert "would remove local" in out.getvalue() and len(local.list_sandboxes()) == 1
    assert len(local.list_snapshots()) == 1
    call_command("bench", "cleanup", "--max-age", "0", stdout=out)
    assert local.list_sandboxes() == [] and local.list_snapshots() == []


def test_doctor_reports_the_provider_database_queue_and_disk(chain_provider):
    out = io.StringIO()
    with contextlib.suppress(CommandError):  # a full disk fails doctor, which is its job
        call_command("bench", "doctor", "--provider", "local", stdout=out)
    text = out.getvalue()
    assert "PASS provider  local:bwrap" in text and "database" in text and "queue" in text


def test_the_admin_starts_watches_and_cancels_runs(chain_provider, client, sync_queue):
    admin = User.objects.create_superuser("admin", "a@example.com", "pw")
    client.force_login(admin)
    form = client.get(reverse("admin:boxbench_run_start"))
    assert form.status_code == 200 and b"Start the run" in form.content
    response = client.post(
        reverse("admin:boxbench_run_start"),
        {
            "name": "from admin",
            "benchmarks": ["create"],
            "providers": ["local"],
            "trials": 2,
            "concurrency": 1,
            "allow_busy_account": "on",
        },
    )
    run = Run.objects.get(name="from admin")
    assert response.status_code == 302 and run.status == RunStatus.COMPLETED
    assert run.manifest["plan"]["allow_busy_account"] is True
    page = client.get(reverse("admin:boxbench_run_change", args=[run.pk]))
    assert b"2 / 2" in page.content
    queued = plan(trials=2)
    client.post(
        reverse("admin:boxbench_run_changelist"),
        {"action": "cancel_runs", "_selected_action": [str(queued.pk)]},
    )
    queued.refresh_from_db()
    assert queued.status == RunStatus.CANCELLED


def test_outsiders_cannot_start_runs(client, db):
    User.objects.create_user("outsider", password="pw")
    client.login(username="outsider", password="pw")
    response = client.get(reverse("admin:boxbench_run_start"))
    assert response.status_code == 302  # to the admin login


def test_it_stops_a_chain_before_it_starts_when_the_account_is_busy(chain_provider, local):
    stray = local.create(SandboxSpec(1, 1024, "someone-elses-sandbox", 60))
    run = start(plan(trials=2))
    # Not "completed with 0 results": a run without a success never reads as one.
    assert run.status == RunStatus.FAILED
    ended = run.transitions.get(to_status=RunStatus.FAILED).note
    assert ended.startswith("no trial succeeded: local: the account holds 1 other live")
    assert run.trials.filter(state=TrialState.CANCELLED).count() == 2
    before = run.manifest["live_sandboxes"]["local"]["before_chain"]
    assert before["others"] == 1 and before["other_ids"] == [stray.id]
    [note] = runs.chain_notes(run)
    assert f"local: the account holds 1 other live sandbox(es) ({stray.id})" in note
    assert "--allow-busy-account" in note

    allowed = start(plan(trials=1, allow_busy_account=True))
    assert allowed.trials.get().outcome == Outcome.SUCCESS
    assert allowed.manifest["live_sandboxes"]["local"]["before_chain"]["others"] == 1


def test_it_stops_refilling_once_a_trial_is_cut_short(chain_provider, monkeypatch):
    import dataclasses
    import time

    from runner.benchmarks import create

    short = dataclasses.replace(create.DEFINITION, procedure_timeout_s=2.0)
    monkeypatch.setattr(create, "DEFINITION", short)
    real = create.run
    calls = []

    def first_overruns(ctx):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(2.5)  # past the 2 s limit: cut short
        else:
            real(ctx)

    monkeypatch.setattr(create, "run", first_overruns)
    run = start(plan(trials=3))
    assert run.trials.count() == 3  # no replacement: the outcome of a cut-short trial is unknown
    trial = run.trials.get(outcome=Outcome.PROVIDER_FAILURE)
    assert trial.owner == "unknown" and trial.cause.startswith("cut short: ")
    assert trial.cut_short
    assert "cut short, so its outcome is unknown" in run.manifest["topups"]["local"]["stopped"]

    from boxbench import publishing
    from boxbench.models import Aggregate

    publishing.publish(run)
    [row] = Aggregate.objects.get(scope="unit", key="create/default").data["rows"]
    # A failure top-ups could not replace: it counts towards the Provider Failures label.
    assert row["unreplaced_failures"] == 1
    assert row["n"] == 2


def test_it_refills_a_failure_whose_owner_alone_is_unknown(chain_provider, local):
    chain_provider(FaultyProvider(local, create_errors=1))
    run = start(plan(trials=1))
    failed = run.trials.get(outcome=Outcome.PROVIDER_FAILURE)
    Trial.objects.filter(pk=failed.pk).update(owner="unknown")  # owner not recorded
    assert not failed.cut_short
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 1


def test_it_runs_each_benchmark_with_its_declared_parallel_trials(chain_provider, settings):
    settings.RUNNER_CONCURRENCY, settings.RUNNER_JOB_HOST_CAP = 3, 16
    run = plan_run(
        "parallel", benchmarks=["create", "deepswe-boxbench"], providers=["local"], trials=1, seed=1
    )
    assert run.manifest["benchmarks"]["create"]["parallel_trials"] == 3  # declares none
    [refusal] = run.manifest["refusals"]  # DeepSWE declares 10; local allows 8 sandboxes
    assert (refusal["benchmark"], refusal["code"]) == ("deepswe-boxbench", "R403")
    assert refusal["missing"] == "10 parallel trials x 1 sandboxes = 10 > 8"

    settings.RUNNER_JOB_HOST_CAP = 4
    units = ["six-ensure-bytearray", "toolz-dissoc-if"]
    capped = plan_run(
        "capped",
        benchmarks=["deepswe-boxbench"],
        providers=["local"],
        trials=1,
        seed=1,
        units={"deepswe-boxbench": units},
    )
    assert capped.manifest["benchmarks"]["deepswe-boxbench"]["parallel_trials"] == 4
    assert sorted(capped.trials.values_list("unit__slug", flat=True)) == units
    with pytest.raises(PlanError, match="unit .nope. of deepswe-boxbench: no such unit"):
        plan_run("bad", benchmarks=["deepswe-boxbench"], units={"deepswe-boxbench": ["nope"]})


def test_the_default_plan_ranks_every_provider_it_plans(chain_provider):
    from runner.named_plans import get_plan

    default = get_plan("default")
    run = plan_run(
        "default",
        benchmarks=list(default.benchmarks),
        units=default.units,
        providers=["local"],
        trials=default.trials,
        concurrency=default.concurrency,
        seed=1,
    )
    benchmarks = run.manifest["benchmarks"]
    assert run.manifest["refusals"] == []
    assert {"create", "destroy", "cpu-single", "hard-links", "deepswe-boxbench"} <= set(benchmarks)
    assert benchmarks["deepswe-boxbench"]["units"] == ["six-ensure-bytearray", "toolz-dissoc-if"]
    assert benchmarks["burst"]["units"] == ["8"]  # its scored tier
    assert benchmarks.pop("burst")["parallel_trials"] == 1  # bursts never overlap
    assert all(b["parallel_trials"] == 2 for b in benchmarks.values())
    # Each benchmark's trials reach the floor it is ranked against: the declared one, or a
    # subset's share of it.
    for slug, planned in benchmarks.items():
        benchmark = Benchmark.objects.get(slug=slug)
        declared = Unit.objects.filter(benchmark=benchmark).count()
        floor = run_floor(benchmark, run, declared)
        assert planned["trials_per_unit"] * len(planned["units"]) >= floor, slug
    assert run.trials.filter(benchmark__slug="deepswe-boxbench").count() == 40
    # Planning stores every unit, so the two are published as a subset against its share of 180.
    deepswe = run.trials.filter(benchmark__slug="deepswe-boxbench").first().benchmark
    declared = Unit.objects.filter(benchmark=deepswe).count()
    assert (deepswe.version, deepswe.ranking_floor, declared) == ("2", 180, 10)
    assert run_floor(deepswe, run, declared) == 36
    assert unit_scope(2, declared)["text"] == "2 of 10 units"


def test_the_full_plan_plans_every_benchmark_on_every_unit(chain_provider):
    from runner.benchmarks import all_benchmarks
    from runner.named_plans import get_plan

    full = get_plan("full")
    run = plan_run(
        "full",
        benchmarks=list(full.benchmarks),
        units=full.units,
        providers=["local"],
        trials=full.trials,
        concurrency=full.concurrency,
        seed=1,
    )
    benchmarks = run.manifest["benchmarks"]
    assert set(benchmarks) == set(all_benchmarks())
    assert len(benchmarks["deepswe-boxbench"]["units"]) == 10
    # Timed benchmarks run the spec's 20 trials per unit at least; the untimed probes, three.
    assert benchmarks.pop("isolation")["trials_per_unit"] == 3
    assert benchmarks.pop("density")["trials_per_unit"] == 3  # a capacity check, not a speed
    assert all(b["trials_per_unit"] >= 20 for b in benchmarks.values())
    assert len(benchmarks["ci-actions-boxbench"]["units"]) == 7
    assert len(benchmarks["terminal-bench-boxbench"]["units"]) >= 10
    # The default plan is the full one less the long machine runs, RL rollouts (each trial
    # prepares and restores a task: minutes more on docker), the isolation probes (20 trials of
    # their CPU burn would be minutes of probing), the CI pipelines (seconds to minutes per
    # trial), the Terminal-Bench-style tasks (a second to a few each, ten of them), Output Stream
    # (1 GiB a trial), eight DeepSWE units and the 100 MiB transfers.
    default = get_plan("default")
    left_out = set(full.benchmarks) - set(default.benchmarks)
    machine = {"cpu-all", "memory-bandwidth", "disk-rand-read-4k", "disk-rand-write-4k"}
    assert left_out == machine | {
        "rl-rollouts",
        "isolation",
        "ci-actions-boxbench",
        "terminal-bench-boxbench",
        "density",
        "output-stream",
    }
    assert default.units["file-upload"] == default.units["file-download"] == ["8mib"]
    assert benchmarks["file-upload"]["units"] == ["8mib", "100mib"]


def test_the_cli_splits_comma_separated_providers(chain_provider):
    with pytest.raises(CommandError, match=r"unknown provider\(s\) nowhere;"):
        call_command("bench", "run", "--provider", "local,nowhere", stdout=io.StringIO())


def test_the_cli_publishes_a_run_that_passes_its_audit(chain_provider, sync_queue):
    out = io.StringIO()
    call_command(
        "bench",
        "run",
        "--benchmark",
        "destroy",
        "--trials",
        "2",
        "--provider",
        "local",
        "--publish",
        stdout=out,
    )
    run = Run.objects.get()
    assert run.published and f"Published run {run.name}" in out.getvalue()


def test_the_cli_publishes_a_run_and_names_the_failing_pairs_it_holds_back(
    chain_provider, sync_queue, monkeypatch
):
    from boxbench import holdbacks

    # A real trend failure needs 15+ drifting trials; the audit's verdict is stubbed here.
    failed = [("local", "destroy", "trend")]
    monkeypatch.setattr(holdbacks, "failing_checks", lambda report: failed)
    out = io.StringIO()
    call_command("bench", "run", "--benchmark", "destroy", "--trials", "1", "--publish", stdout=out)
    assert "held back local / destroy: trend failed the audit and is not resolved" in out.getvalue()
    assert Run.objects.get().published


def test_no_adapter_exception_kills_a_chain(chain_provider, local):
    chain_provider(FaultyProvider(local, crash=("create", RuntimeError("socket closed"))))
    run = start(plan(trials=2))
    assert run.status == RunStatus.COMPLETED
    failed = run.trials.get(outcome=Outcome.PROVIDER_FAILURE)
    assert failed.cause == "create: the adapter raised RuntimeError: socket closed"
    assert failed.replaced_by.get().outcome == Outcome.SUCCESS

    chain_provider(FaultyProvider(local, crash=("list", RuntimeError("api down"))))
    unlisted = start(plan(trials=1))
    assert unlisted.status == RunStatus.FAILED  # nothing ran: no success to show
    assert runs.chain_notes(unlisted) == [
        "local: the account's live sandboxes could not be listed: RuntimeError: api down"
    ]


class _PolledRun:
    """A run that is running for `polls` refreshes, then completed."""

    name = "run x"

    def __init__(self, polls: int):
        self.polls, self.status = polls, RunStatus.RUNNING

    def refresh_from_db(self):
        self.polls -= 1
        if self.polls < 0:
            self.status = RunStatus.COMPLETED


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_in_a_log_is_a_line_a_minute_not_a_redraw_per_poll(monkeypatch):
    from django.core.management.base import OutputWrapper

    from boxbench.cli import run as run_command

    cells = [{"target": 10, "done": 4, "failures": 1}]
    monkeypatch.setattr(run_command.runs, "progress", lambda run: cells)
    log = io.StringIO()
    run_command.follow(_PolledRun(polls=5), OutputWrapper(log), interval=0)
    assert log.getvalue().splitlines() == [
        "run x: 4/10 trials, 1 failures, running",
        "run x: 4/10 trials, 1 failures, completed",
    ]
    terminal = _Tty()
    run_command.follow(_PolledRun(polls=5), OutputWrapper(terminal), interval=0)
    # A bar on a terminal: one redraw per poll (six polls), each ending with the status.
    redraws = [part for part in terminal.getvalue().split("\r") if "trial" in part]
    assert len(redraws) >= 6 and "status=completed" in redraws[-1]


def test_it_checks_the_refill_time_limit_before_every_refill(chain_provider, local, monkeypatch):
    # Two creates fail; the top-up round opens in time and queues two refills. The first refill
    # takes the clock past the 10-minute limit: the second is not run, though its round opened
    # before the limit expired.
    clock = [1_000_000.0]
    monkeypatch.setattr(chain, "top_up_clock", lambda: clock[0])

    class SlowRefills(FaultyProvider):
        def create(self, spec):
            if self.calls.count("create") == 4:  # the fifth create is the first refill's
                clock[0] += 3600
            return super().create(spec)

    chain_provider(SlowRefills(local, create_errors=2))
    run = start(plan(trials=4))
    refills = run.trials.filter(round__gte=5)
    assert refills.filter(outcome=Outcome.SUCCESS).count() == 1
    cancelled = refills.get(state=TrialState.CANCELLED)
    assert "the refill time limit of 600 s expired" in cancelled.cause
    assert "refill time limit" in run.manifest["topups"]["local"]["stopped"]


def test_it_checks_the_run_budget_before_every_refill(chain_provider, local, monkeypatch):
    # As above, but the first refill spends the budget: the round opened within it, and the
    # second refill still does not run.
    spent = [0.0]
    monkeypatch.setattr(store, "spent_usd", lambda run: spent[0])

    class CostlyRefills(FaultyProvider):
        def create(self, spec):
            if self.calls.count("create") == 4:  # the fifth create is the first refill's
                spent[0] = 5.0
            return super().create(spec)

    chain_provider(CostlyRefills(local, create_errors=2))
    run = start(plan(trials=4, budget_usd=2.0))
    refills = run.trials.filter(round__gte=5)
    assert refills.filter(outcome=Outcome.SUCCESS).count() == 1
    cancelled = refills.get(state=TrialState.CANCELLED)
    assert "the run budget of 2 USD is spent" in cancelled.cause
    assert "run budget" in run.manifest["topups"]["local"]["stopped"]


def test_the_manifest_and_every_trial_record_the_job_hosts_type_and_region(
    chain_provider, settings
):
    settings.JOB_HOST_TYPE, settings.JOB_HOST_REGION = "c7i.xlarge", "us-east-1"
    run = start(plan(trials=2))
    entry = run.manifest["providers"]["local"]
    assert (entry["job_host_type"], entry["job_host_region"]) == ("c7i.xlarge", "us-east-1")
    for trial in run.trials.all():
        assert trial.host_load["job_host_type"] == "c7i.xlarge"
        assert trial.host_load["job_host_region"] == "us-east-1"
