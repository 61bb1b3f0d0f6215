"""RL rollouts on real `local` sandboxes: episodes restored from one prepared task, what each
episode's time holds, the steps checked against their recorded session, and nothing left behind."""

import dataclasses
import io
import re
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from boxbench.models import Aggregate
from runner import rules
from runner.benchmarks import rl_rollouts
from runner.declarations import get_declaration
from runner.lifecycle import run_trial
from runner.outcomes import EvidenceKind
from runner.traces.format import TraceError
from tests.support.runner import FAST


def _run(provider, slug, limits=FAST):
    [unit] = [u for u in rl_rollouts.units() if u.slug == slug]
    definition = rl_rollouts.DEFINITION
    return run_trial(provider, definition, unit, rl_rollouts.run, label="bb-rl", limits=limits)


def _values(result):
    return {(m.kind, m.name): m.value for m in result.measurements}


def test_it_times_each_episode_from_restore_to_destroy_and_leaves_nothing(local):
    result = _run(local, "six-ensure-bytearray")
    assert (result.outcome, result.cause) == ("success", "")
    values = _values(result)
    stages = sum(values["stage", s] for s in rl_rollouts.STAGES)
    # The stages are the episode's parts; what is left is the job host's own bookkeeping.
    assert stages <= values["metric", "episode_ms"] < stages + 50
    assert values["metric", "episodes_per_minute"] > 0
    made = [e.data["name"] for e in result.evidence if e.kind == EvidenceKind.SANDBOX]
    episodes = [f"restore_{n}" for n in range(1, rl_rollouts.EPISODES + 1)]
    assert made[0] == "create" and sorted(made[1:]) == episodes
    # Each restored copy got no untimed readiness check: its only check is the timed first step.
    checked = [e.data["sandbox"] for e in result.evidence if e.kind == EvidenceKind.READINESS]
    assert len(checked) == 1 + rl_rollouts.EPISODES
    cleaned = [
        e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP and "snapshot" in e.data
    ]
    assert len(cleaned) == 1 and cleaned[0]["confirmed_gone"]
    assert local.list_snapshots() == [] and local.list_sandboxes() == []


@pytest.mark.parametrize("slug", ["toolz-dissoc-if", "lz4-c-library"])
def test_every_unit_replays_its_episode_here(local, monkeypatch, slug):
    monkeypatch.setattr(rl_rollouts, "EPISODES", 1)
    result = _run(local, slug)
    assert (result.outcome, result.cause) == ("success", "")
    assert local.list_snapshots() == [] and local.list_sandboxes() == []


def test_a_step_that_exits_otherwise_than_recorded_excludes_the_trial(local, monkeypatch):
    # Step 7 of the six session failed before the fix (exit 1); after the fix's edits it passes.
    unit = rl_rollouts.UNITS[0]
    reordered = dataclasses.replace(unit, episode=(13, 14, 15, 7))
    monkeypatch.setattr(rl_rollouts, "UNITS", (reordered,))
    monkeypatch.setattr(rl_rollouts, "EPISODES", 2)
    result = _run(local, unit.trace)
    assert result.outcome == "excluded"
    assert "step 7 exited 0, its session recorded 1" in result.cause
    assert local.list_snapshots() == [] and local.list_sandboxes() == []


def test_a_preparation_step_that_exits_otherwise_excludes_the_trial(local, monkeypatch):
    unit = dataclasses.replace(rl_rollouts.UNITS[0], prepare=(13, 14, 15, 7))
    monkeypatch.setattr(rl_rollouts, "UNITS", (unit,))
    result = _run(local, unit.trace)
    assert result.outcome == "excluded"
    assert "step 7 exited 0, its session recorded 1" in result.cause


def test_each_unit_is_pinned_by_its_session_and_its_steps():
    before = {u.slug: u.digest for u in rl_rollouts.units()}
    assert len(before) == len(rl_rollouts.UNITS) >= 3
    changed = dataclasses.replace(rl_rollouts.UNITS[0], episode=(13, 14))
    assert rl_rollouts.unit_definition(changed)["episode"] == [13, 14]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rl_rollouts, "UNITS", (changed, *rl_rollouts.UNITS[1:]))
        after = {u.slug: u.digest for u in rl_rollouts.units()}
    assert after[changed.trace] != before[changed.trace]
    assert {k: v for k, v in after.items() if k != changed.trace} == {
        k: v for k, v in before.items() if k != changed.trace
    }
    with pytest.raises(TraceError, match="step 999 is not a command"):
        rl_rollouts.unit_definition(dataclasses.replace(changed, episode=(999,)))


def test_a_provider_without_snapshots_is_refused_not_supported():
    refused = rules.refusals(get_declaration("agentcore"), rl_rollouts.DEFINITION, 1)
    assert ("R401", "Not Supported") in [(r.code, r.label) for r in refused]
    for declaring in ("local", "docker", "e2b"):
        assert rules.refusals(get_declaration(declaring), rl_rollouts.DEFINITION, 1) == []
    # Daytona snapshots, but its account holds 2 sandboxes at once: a trial needs 3.
    refused = rules.refusals(get_declaration("daytona"), rl_rollouts.DEFINITION, 1)
    assert [(r.code, r.label) for r in refused] == [("R403", "Account Limit")]


@pytest.fixture
def priced_job_host(monkeypatch):
    """local priced by the job host's declared price, so it has a cost to score; set up before
    the `local` fixture reads its declaration."""
    monkeypatch.setenv("BOXBENCH_HOST_PRICE_PER_HOUR", "0.1664")
    monkeypatch.setenv("BOXBENCH_HOST_PRICE_SOURCE", "AWS on-demand, t3.xlarge, us-east-1")
    monkeypatch.setenv("BOXBENCH_HOST_PRICE_DATE", "2026-12-01")
    monkeypatch.setenv("BOXBENCH_JOB_HOST_CPUS", "4")


@pytest.mark.django_db(transaction=True)
def test_a_published_run_scores_it_for_time_and_cost_among_the_workloads(
    priced_job_host, chain_provider, sync_queue, monkeypatch
):
    monkeypatch.setattr(rl_rollouts, "EPISODES", 1)
    monkeypatch.setattr(rl_rollouts, "UNITS", rl_rollouts.UNITS[:1])
    # One trial ranks, so one trial of one unit gives the pair its place in the score tree.
    floor = dataclasses.replace(rl_rollouts.DEFINITION, ranking_floor=1)
    monkeypatch.setattr(rl_rollouts, "DEFINITION", floor)
    argv = ["--benchmark", rl_rollouts.SLUG, "--trials", "1", "--provider", "local", "--publish"]
    call_command("bench", "run", *argv, stdout=io.StringIO())
    tree = Aggregate.objects.get(scope="overview", key="").data["tree"]
    sections = {node["key"]: node for node in tree["children"]}
    for section in ("workload_time", "workload_cost"):
        [workload] = [c for c in sections[section]["children"] if c["key"] == rl_rollouts.SLUG]
        assert workload["scores"] == {"local": pytest.approx(100.0)}


def test_a_step_past_its_limit_on_a_sandbox_that_still_answers_excludes_the_trial(
    local, monkeypatch
):
    # Every step's limit cut to 1 ms: a step that runs longer (the test run, step 15) hits it
    # (exit 124), and the copy still answers `true` afterwards, so the session does not replay
    # here; not the provider's.
    monkeypatch.setattr(rl_rollouts, "EPISODES", 1)
    monkeypatch.setattr(rl_rollouts.replay, "command_limit_s", lambda duration_ms: 0.001)
    unit = rl_rollouts.UNITS[0]
    result = _run(local, unit.trace)
    assert result.outcome == "excluded", result.cause
    assert re.search(r"step \d+ hit its 0.001 s limit \(exit 124\)", result.cause)
    assert "while the sandbox still answers" in result.cause
    assert local.list_snapshots() == [] and local.list_sandboxes() == []


def test_the_preparation_runs_in_the_background_not_as_one_long_call():
    # lz4's build takes tens of seconds: a synchronous exec that long is what a provider's
    # gateway may cut, so the preparation is a polled background command.
    class Preparing:
        def __init__(self, slug):
            self.unit = SimpleNamespace(slug=slug, digest="")
            self.uploaded, self.background_scripts = [], []

        def upload(self, path, data):
            self.uploaded.append(path)

        def background(self, script, timeout, check_gate=True):
            self.background_scripts.append(script)
            return SimpleNamespace(exit_code=0, stdout=b"", stderr=b"")

        def exec(self, argv, timeout, stdin=None):
            raise AssertionError(f"a synchronous exec of {argv[:2]}")

    ctx = Preparing("lz4-c-library")
    unit, trace = rl_rollouts._unit(ctx)
    rl_rollouts._prepare(ctx, unit, trace)
    assert len(ctx.background_scripts) == 1 and ctx.uploaded
