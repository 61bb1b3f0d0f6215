import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from boxbench import publishing
from boxbench.models import Aggregate, AuditResolution, Benchmark, Outcome, Provider, Trial
from tests.web.conftest import explain_failures

pytestmark = pytest.mark.django_db


def test_it_prints_and_stores_the_audit_report(imported_run, capsys):
    call_command("bench", "audit", imported_run.name)
    out = capsys.readouterr().out
    imported_run.refresh_from_db()
    assert imported_run.audit_report["pairs"]
    assert "local / create: FAIL" in out
    assert "trend" in out and "UNRESOLVED" in out
    assert "detectable effect" in out


def test_it_refuses_to_publish_and_names_the_failing_pairs(imported_run):
    with pytest.raises(CommandError) as refused:
        call_command("bench", "publish", str(imported_run.id))
    message = str(refused.value)
    for provider in ("local", "docker", "boat"):
        assert f"{provider} / create / trend" in message
    imported_run.refresh_from_db()
    assert not imported_run.published
    assert not Aggregate.objects.exists()


def test_it_publishes_once_every_failure_is_resolved(imported_run, capsys):
    explain_failures(imported_run)
    call_command("bench", "publish", imported_run.name)
    imported_run.refresh_from_db()
    assert imported_run.published and imported_run.published_at
    assert set(Aggregate.objects.values_list("scope", flat=True)) == {
        "overview", "benchmark", "unit", "provider", "run"
    }  # fmt: skip
    assert "Published run" in capsys.readouterr().out


def test_it_records_who_published_as_a_transition_of_the_run(imported_run, django_user_model):
    explain_failures(imported_run)
    publisher = django_user_model.objects.create_user("publisher", password="pw-pub-123")
    before = imported_run.transitions.count()
    publishing.publish(imported_run, actor=publisher)
    assert imported_run.transitions.count() == before + 1
    publication = imported_run.transitions.last()
    assert (publication.note, publication.actor) == ("published", publisher)
    assert publication.from_status == publication.to_status == "completed"


def test_a_publication_from_the_command_line_names_no_actor(imported_run):
    explain_failures(imported_run)
    call_command("bench", "publish", imported_run.name)
    assert imported_run.transitions.get(note="published").actor is None


def test_a_refused_publication_records_no_transition(imported_run):
    before = imported_run.transitions.count()
    with pytest.raises(publishing.PublishRefused):
        publishing.publish(imported_run)
    assert imported_run.transitions.count() == before


def test_the_publishing_workflow_loads_without_pandas_or_scipy():
    """The web process imports publishing (admin, run pages): the heavy libraries load only
    when a run is audited or published."""
    code = (
        "import sys, django; django.setup(); import boxbench.publishing; "
        "print(sorted(m for m in ('pandas', 'scipy') if m in sys.modules))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "boxbench.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_it_refuses_a_second_publication_and_an_unfinished_run(published_run, imported_run):
    with pytest.raises(publishing.PublishRefused, match="already published"):
        publishing.publish(published_run)
    published_run.published = False
    published_run.status = "running"
    with pytest.raises(publishing.PublishRefused, match="only a completed run"):
        publishing.publish(published_run)


def test_it_records_a_resolution_from_the_command_line(imported_run, capsys):
    publishing.run_audit(imported_run)
    call_command(
        "bench", "audit", imported_run.name, "--resolve", "docker/create/trend",
        "--kind", "explained", "--note", "Units run in order.",
    )  # fmt: skip
    resolution = AuditResolution.objects.get(run=imported_run, provider__slug="docker")
    assert resolution.check_name == "trend" and resolution.note == "Units run in order."


def test_it_refuses_to_resolve_a_check_that_did_not_fail(imported_run):
    publishing.run_audit(imported_run)
    with pytest.raises(CommandError, match="did not fail the audit"):
        call_command(
            "bench", "audit", imported_run.name, "--resolve", "docker/cpu/trend",
            "--kind", "explained", "--note", "nothing to explain",
        )  # fmt: skip
    assert not AuditResolution.objects.exists()


def test_it_excludes_the_audits_outlier_trials_when_resolving_outliers(imported_run):
    victim = Trial.objects.filter(
        run=imported_run, provider__slug="local", benchmark__slug="create", outcome="success"
    ).first()
    imported_run.audit_report = {
        "q_level": 0.05,
        "pairs": [
            {
                "provider": "local", "benchmark": "create", "n": 20, "verdict": "fail",
                "detectable_effect": {"unbounded": True},
                "excluded_trials": [
                    {"trial_id": str(victim.id), "value": 1.0, "reason": "isolated better side"}
                ],
                "checks": {"outliers": {"verdict": "fail", "effect": 1, "p": None, "q": None,
                                        "reason": "1 better-side value excluded"}},
            }
        ],
    }  # fmt: skip
    imported_run.save()
    resolution = AuditResolution(
        run=imported_run, provider=Provider.objects.get(slug="local"),
        benchmark=Benchmark.objects.get(slug="create"), check_name="outliers",
        kind="outliers_excluded", note="Excluded by the objective rule.",
    )  # fmt: skip
    assert publishing.apply_resolution(resolution) == 1
    victim.refresh_from_db()
    assert victim.outcome == Outcome.EXCLUDED
    assert "outlier rule" in victim.cause
    publishing.publish(imported_run)
    unit = Aggregate.objects.get(scope="unit", key="create/create").data
    local = next(r for r in unit["rows"] if r["provider"] == "local")
    assert local["n"] == 19


def test_it_feeds_each_leaderboard_from_the_latest_published_run(published_run):
    summary = Aggregate.objects.get(scope="benchmark", key="deepswe").data
    assert summary["run"] == str(published_run.id)
    assert summary["image_digest"] == "sha256:" + "ab" * 32
    create = Aggregate.objects.get(scope="benchmark", key="create").data
    assert create["image_digest"] == "sha256:" + "89" * 32
