import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from boxbench import holdbacks, publishing
from boxbench.models import (
    Aggregate,
    AuditResolution,
    Outcome,
    Run,
    Scope,
    Trial,
)
from tests.support.web import explain_failures, rerun_of_docker_create, resolve
from tests.web import factory

pytestmark = pytest.mark.django_db


def test_it_prints_and_stores_the_audit_report(imported_run, capsys):
    call_command("bench", "audit", imported_run.name)
    out = capsys.readouterr().out
    imported_run.refresh_from_db()
    assert imported_run.audit_report["pairs"]
    assert "local / create: FAIL" in out
    assert "trend" in out and "UNRESOLVED" in out
    assert "detectable effect" in out


def test_it_publishes_passing_pairs_and_holds_back_the_failing_ones(imported_run, capsys):
    call_command("bench", "publish", str(imported_run.id))
    out = capsys.readouterr().out
    for provider in ("local", "docker", "boat"):
        assert f"held back {provider} / create: trend failed the audit" in out
    imported_run.refresh_from_db()
    assert imported_run.published
    # Every Create pair failed its trend check: Create has no published numbers at all, only
    # its held-back rows.
    create = Aggregate.objects.page(Scope.BENCHMARK, "create")
    assert create["rows"] == [] and len(create["held_back"]) == 3
    deepswe = Aggregate.objects.page(Scope.BENCHMARK, "deepswe")
    assert {r["provider"] for r in deepswe["rows"] if r["ranked"]} == {"local", "docker", "boat"}
    held = Aggregate.objects.page(Scope.RUN, imported_run.id)["held_back"]
    assert [(p["provider"], p["benchmark"]) for p in held] == [
        ("boat", "create"),
        ("docker", "create"),
        ("local", "create"),
    ]


def test_a_publication_asks_once_which_pairs_are_held_back(imported_run, monkeypatch):
    asked = []
    held_back = holdbacks.held_back
    monkeypatch.setattr(holdbacks, "held_back", lambda runs: asked.append(runs) or held_back(runs))
    publishing.publish(imported_run)
    assert [[run.id for run in runs] for runs in asked] == [[imported_run.id]]


def test_the_run_page_says_which_pairs_are_held_back_and_why(client, imported_run):
    publishing.publish(imported_run)
    page = client.get(f"/runs/{imported_run.id}/").content.decode()
    held = page[page.index('id="held-back"') :]
    assert "Held back from publication: 3 pairs" in held
    assert "<td>Local sandbox / Create</td><td>trend failed the audit and is not resolved" in held


def ranked_on_create() -> list[str]:
    create = Aggregate.objects.page(Scope.BENCHMARK, "create") or {"rows": []}
    return [r["provider"] for r in create["rows"] if r["ranked"]]


def test_a_pair_resolved_after_publication_waits_for_a_republication(imported_run):
    publishing.publish(imported_run)
    resolve(imported_run, "local")
    # Resolving alone changes nothing public, not even when another run's publication
    # rebuilds the board.
    assert ranked_on_create() == []
    publishing.publish(rerun_of_docker_create("another", 5))
    assert "local" not in ranked_on_create()
    held = holdbacks.held_back([imported_run])[imported_run.id]
    local = next(p for p in held if p["provider"] == "local")
    assert "resolved after the run was published" in local["checks"][0]["why"]
    publishing.publish(imported_run)  # by someone with publish_run: published again
    assert "local" in ranked_on_create()
    held = Aggregate.objects.page(Scope.RUN, imported_run.id)["held_back"]
    assert {p["provider"] for p in held} == {"docker", "boat"}
    assert Run.objects.get(id=imported_run.id).transitions.filter(note="republished").exists()
    with pytest.raises(publishing.PublishRefused, match="nothing was resolved since"):
        publishing.publish(imported_run)


def test_a_published_runs_report_is_final(published_run):
    before = (published_run.audit_report, published_run.audited_at)
    with pytest.raises(publishing.PublishRefused, match="published and final"):
        publishing.run_audit(published_run, current_settings=True)
    with pytest.raises(CommandError, match="published and final"):
        call_command("bench", "audit", str(published_run.id), "--again")
    published_run.refresh_from_db()
    assert (published_run.audit_report, published_run.audited_at) == before


def test_a_published_runs_trials_are_never_rewritten_by_an_outlier_exclusion(imported_run):
    publishing.publish(imported_run)
    report = dict(imported_run.audit_report)
    victim = Trial.objects.filter(run=imported_run, outcome="success").first()
    pair = {
        "provider": "local",
        "benchmark": "create",
        "verdict": "fail",
        "excluded_trials": [{"trial_id": str(victim.id), "value": 1.0, "reason": "r"}],
        "checks": {"outliers": {"verdict": "fail"}},
    }
    Run.objects.filter(id=imported_run.id).update(
        audit_report={**report, "pairs": [*report["pairs"], pair]}
    )
    imported_run.refresh_from_db()
    with pytest.raises(publishing.PublishRefused, match="would rewrite its trials"):
        resolve(imported_run, "local", check="outliers", kind="outliers_excluded")
    victim.refresh_from_db()
    assert victim.outcome == Outcome.SUCCESS
    assert not AuditResolution.objects.filter(check_name="outliers").exists()


def test_a_pair_resolved_by_a_rerun_publishes_from_the_rerun_only(imported_run):
    rerun = rerun_of_docker_create("docker-create-rerun", 5)
    publishing.run_audit(imported_run)
    resolve(imported_run, "local")
    resolve(imported_run, "boat")
    resolve(imported_run, "docker", kind="rerun", rerun=rerun)
    publishing.publish(imported_run)
    create = Aggregate.objects.page(Scope.BENCHMARK, "create")
    assert "docker" not in {r["provider"] for r in create["rows"]}
    held = Aggregate.objects.page(Scope.RUN, imported_run.id)["held_back"]
    assert held[0]["provider"] == "docker" and "only the re-run publishes it" in str(held)
    publishing.publish(rerun)
    docker = next(
        r
        for r in Aggregate.objects.page(Scope.BENCHMARK, "create")["rows"]
        if r["provider"] == "docker"
    )
    assert docker["run"] == str(rerun.id) and docker["n"] == 20


def test_each_pair_shows_its_newest_measured_run_whatever_the_publication_order(imported_run):
    newer = rerun_of_docker_create("measured-later", 10)
    older = rerun_of_docker_create("measured-earlier", 5)
    publishing.publish(newer)
    publishing.publish(older)  # published last, measured first

    def docker_run():
        rows = Aggregate.objects.page(Scope.BENCHMARK, "create")["rows"]
        return next(r["run"] for r in rows if r["provider"] == "docker")

    assert docker_run() == str(newer.id)
    explain_failures(imported_run)
    publishing.publish(imported_run)  # measured on 2026-11-01, before both
    assert docker_run() == str(newer.id)


def test_it_publishes_once_every_failure_is_resolved(imported_run, capsys):
    explain_failures(imported_run)
    call_command("bench", "publish", imported_run.name)
    imported_run.refresh_from_db()
    assert imported_run.published and imported_run.published_at
    assert set(Aggregate.objects.values_list("scope", flat=True)) == {
        "overview",
        "benchmark",
        "unit",
        "provider",
        "run",
        "compare",
        "history",
        "reliability",
    }
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
    imported_run.status = "running"
    imported_run.save()
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
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
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
        "bench",
        "audit",
        imported_run.name,
        "--resolve",
        "docker/create/trend",
        "--kind",
        "explained",
        "--note",
        "Units run in order.",
    )
    resolution = AuditResolution.objects.get(run=imported_run, provider__slug="docker")
    assert resolution.check_name == "trend" and resolution.note == "Units run in order."


def test_it_refuses_to_resolve_a_check_that_did_not_fail(imported_run):
    publishing.run_audit(imported_run)
    with pytest.raises(CommandError, match="did not fail the audit"):
        call_command(
            "bench",
            "audit",
            imported_run.name,
            "--resolve",
            "docker/cpu/trend",
            "--kind",
            "explained",
            "--note",
            "nothing to explain",
        )
    assert not AuditResolution.objects.exists()


def test_it_excludes_the_audits_outlier_trials_when_resolving_outliers(imported_run):
    victim = Trial.objects.filter(
        run=imported_run, provider__slug="local", benchmark__slug="create", outcome="success"
    ).first()
    imported_run.audit_report = {
        "q_level": 0.05,
        "pairs": [
            {
                "provider": "local",
                "benchmark": "create",
                "n": 20,
                "verdict": "fail",
                "detectable_effect": {"unbounded": True},
                "excluded_trials": [
                    {"trial_id": str(victim.id), "value": 1.0, "reason": "isolated better side"}
                ],
                "checks": {
                    "outliers": {
                        "verdict": "fail",
                        "effect": 1,
                        "p": None,
                        "q": None,
                        "reason": "1 better-side value excluded",
                    }
                },
            }
        ],
    }
    imported_run.save()
    note = "Excluded by the objective rule."
    assert resolve(imported_run, "local", "outliers", "outliers_excluded", note=note) == 1
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


# boxbench computes the audit; audits keep their settings ----------------------------------------


def test_an_imported_report_is_kept_apart_and_publishing_recomputes_the_audit(tmp_path):
    empty_report = {"schema_version": 1, "q_level": 0.05, "families": {}, "pairs": []}
    path = tmp_path / "claims-clean.jsonl"
    path.write_text("\n".join(factory.run_lines(audit_report=empty_report)) + "\n")
    call_command("bench", "import", str(path))
    run = Run.objects.get(id=factory.RUN_ID)
    assert run.audit_report is None and run.imported_audit_report == empty_report
    publishing.publish(run)
    run.refresh_from_db()
    assert ("local", "create", "trend") in holdbacks.failing_checks(run.audit_report)
    assert run.imported_audit_report == empty_report  # kept, for comparison
    assert Aggregate.objects.page(Scope.BENCHMARK, "create")["rows"] == []  # held back


def test_the_report_records_every_threshold_and_minimum_it_used(imported_run):
    from stats import audit

    report = publishing.run_audit(imported_run)
    settings = report["settings"]
    assert settings == audit.DEFAULT_SETTINGS.to_dict()
    assert settings["min_effect"]["trend"] == 8.0 and settings["min_group"] == 5
    assert settings["q_level"] == 0.05 and settings["min_successes"] == 15
    assert report["settings_source"] == "current defaults" and report["settings_changed"] == {}


def test_a_re_audit_applies_the_settings_the_run_was_audited_with(imported_run, capsys):
    report = publishing.run_audit(imported_run)
    assert ("local", "create", "trend") in holdbacks.failing_checks(report)
    # An audit made when a drift needed 500 % to fail:
    report["settings"]["min_effect"]["trend"] = 500.0
    imported_run.audit_report = report
    imported_run.save()
    call_command("bench", "audit", imported_run.name, "--again")
    imported_run.refresh_from_db()
    again = imported_run.audit_report
    assert ("local", "create", "trend") not in holdbacks.failing_checks(again)
    assert again["settings"]["min_effect"]["trend"] == 500.0
    assert again["settings_changed"]["min_effect"]["current"]["trend"] == 8.0
    assert again["settings_source"].startswith("the previous audit of ")
    out = capsys.readouterr().out
    assert "settings: the previous audit of" in out and "min_effect" in out
    current = publishing.run_audit(imported_run, current_settings=True)
    assert ("local", "create", "trend") in holdbacks.failing_checks(current)


def test_a_re_audit_of_a_report_without_settings_says_which_it_could_not_restore(imported_run):
    imported_run.audit_report = {
        "schema_version": 1,
        "q_level": 0.01,
        "min_successes": 15,
        "families": {},
        "pairs": [],
    }
    imported_run.save()
    report = publishing.run_audit(imported_run)
    assert report["settings"]["q_level"] == 0.01
    assert report["settings_changed"] == {"q_level": {"used": 0.01, "current": 0.05}}
    assert (
        "min_effect" in report["settings_missing"] and "q_level" not in report["settings_missing"]
    )


def test_a_re_audit_refuses_settings_it_cannot_read(imported_run):
    imported_run.audit_report = {"settings": {"q_level": "often"}, "pairs": []}
    imported_run.save()
    with pytest.raises(CommandError, match="settings are unusable: audit setting q_level"):
        call_command("bench", "audit", imported_run.name, "--again")


def test_the_audit_reads_the_thresholds_the_manifest_fixed_when_the_run_was_planned(imported_run):
    from stats import audit

    # Planned when a drift needed 500 % to fail: the audit applies that, not today's 8 %.
    planned = audit.DEFAULT_SETTINGS.to_dict()
    planned["min_effect"]["trend"] = 500.0
    imported_run.manifest = {**imported_run.manifest, "audit_settings": planned}
    imported_run.save()
    report = publishing.run_audit(imported_run)
    assert ("local", "create", "trend") not in holdbacks.failing_checks(report)
    assert report["settings"]["min_effect"]["trend"] == 500.0
    assert report["settings_source"] == "the run's manifest (fixed when it was planned)"
    assert report["settings_depart_from_plan"] == {}
    # Auditing with other settings is a new audit that records how it departs from the plan.
    current = publishing.run_audit(imported_run, current_settings=True)
    assert ("local", "create", "trend") in holdbacks.failing_checks(current)
    departs = current["settings_depart_from_plan"]["min_effect"]
    assert departs["used"]["trend"] == 8.0 and departs["planned"]["trend"] == 500.0
    # The run page shows the report the audit stored.
    imported_run.refresh_from_db()
    assert (
        imported_run.audit_report["settings_depart_from_plan"]
        == current["settings_depart_from_plan"]
    )
