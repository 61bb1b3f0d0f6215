"""Credentials come only from the environment or *_FILE and never reach the database, the manifest,
the logs or the exports; an unconfigured provider is refused before the run and shown by doctor;
a demo run completes against the fakes, is marked as a demo, and is never published."""

import contextlib
import io
import logging

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from boxbench import publishing
from boxbench.models import Evidence, Run, Trial
from boxbench.rawdata import iter_trials, run_header
from runner import chain, plan
from runner.providers import demo, get_provider, unavailable
from runner.providers.credentials import MissingCredential, credential, redact
from runner.providers.ledger import Ledger


def test_a_credential_comes_from_the_environment_or_its_file(monkeypatch, tmp_path):
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    monkeypatch.delenv("E2B_API_KEY_FILE", raising=False)
    assert credential("E2B_API_KEY") is None
    key_file = tmp_path / "key"
    key_file.write_text("e2b_from_file\n")
    monkeypatch.setenv("E2B_API_KEY_FILE", str(key_file))
    assert credential("E2B_API_KEY") == "e2b_from_file"
    monkeypatch.setenv("E2B_API_KEY", "e2b_from_env")
    assert credential("E2B_API_KEY") == "e2b_from_env"
    monkeypatch.delenv("E2B_API_KEY")
    monkeypatch.setenv("E2B_API_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(MissingCredential, match="E2B_API_KEY_FILE names .*cannot be read"):
        credential("E2B_API_KEY")
    assert redact("key e2b_secret in text", "e2b_secret") == "key [redacted] in text"


@pytest.mark.parametrize("slug, variable", [("e2b", "E2B_API_KEY"), ("daytona", "DAYTONA_API_KEY")])
def test_an_unconfigured_provider_is_refused_before_the_run_and_shown_by_doctor(
    slug, variable, monkeypatch, db
):
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv(f"{variable}_FILE", raising=False)
    assert unavailable([slug]) == [f"{slug}: not configured: set {variable} or {variable}_FILE"]
    with pytest.raises(plan.PlanError, match=f"{slug}: not configured: set {variable}"):
        plan.plan_run("refused", benchmarks=["create"], providers=[slug])
    assert not Run.objects.exists()
    [check] = get_provider(slug).doctor()
    assert check.detail == f"not configured: set {variable} or {variable}_FILE"
    out = io.StringIO()
    # A check of this machine (queue, disk) may fail; only the provider's line matters here.
    with contextlib.suppress(CommandError):
        call_command("bench", "doctor", "--provider", slug, stdout=out)
    assert f"{slug}:credentials" in out.getvalue() and "not configured" in out.getvalue()


def test_the_ledger_lists_what_was_created_and_not_stopped(tmp_path):
    from datetime import UTC, datetime

    ledger = Ledger(tmp_path / "ledger.jsonl")
    now = datetime.now(UTC)
    ledger.created("sb-1", "bb-a", now, 60)
    ledger.created("sb-2", "bb-b", now, 60)
    ledger.stopped("sb-1")
    (tmp_path / "ledger.jsonl").open("a").write('{"event": "created", "id": "sb-3"')  # torn
    assert [(e.id, e.label) for e in ledger.open_entries()] == [("sb-2", "bb-b")]


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_completes_is_marked_and_is_never_published_and_leaks_no_key(
    monkeypatch, caplog, client, django_user_model
):
    planted = "e2b_PLANTED" + "7" * 20
    original = demo.fake_class

    def planted_fake(slug):
        cls = original(slug)

        class Planted(cls):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.api_key = planted

        return Planted

    monkeypatch.setattr(demo, "fake_class", planted_fake)
    from tests.providers.cloud.helpers import LIMITS

    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    caplog.set_level(logging.DEBUG)
    out = io.StringIO()
    with pytest.raises(CommandError, match="demo run against loopback fakes"):
        call_command(
            "bench", "run", "--demo", "--provider", "e2b,daytona", "--benchmark",
            "create,file-upload", "--trials", "1", "--publish", stdout=out,
        )  # fmt: skip
    run = Run.objects.get()
    assert run.status == "completed" and not run.published
    assert run.manifest["demo"]["providers"] == ["daytona", "e2b"]
    assert Trial.objects.filter(run=run, outcome="success").count() == 4
    with pytest.raises(publishing.PublishRefused, match="demo run"):
        publishing.publish(run)

    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert "Demo run, not a measurement" in page
    exports = [
        _body(client.get(f"/runs/{run.id}/raw.jsonl")),
        _body(client.get(f"/runs/{run.id}/raw.csv")),
        page,
        repr(run_header(run)),
        repr(list(iter_trials(run))),
        repr(run.manifest),
        repr(list(Evidence.objects.values_list("data", flat=True))),
        repr(list(Trial.objects.values_list("cause", flat=True))),
        out.getvalue(),
        caplog.text,
    ]
    assert all(planted not in text for text in exports)
    assert str(run.id) in exports[0] and '"type":"trial"' in exports[0]  # served


def _body(response) -> str:
    return b"".join(response.streaming_content).decode()
