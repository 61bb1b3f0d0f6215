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
from boxbench.rawdata import FULL, export_jsonl
from runner import chain, plan
from runner.providers import demo, get_provider, unavailable
from runner.providers.base import ProviderError
from runner.providers.credentials import MissingCredential, credential, redact
from tests.support.reliability import wait_for


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


@pytest.mark.parametrize(
    "slug, variable",
    [("e2b", "E2B_API_KEY"), ("daytona", "DAYTONA_API_KEY"), ("vercel", "VERCEL_TOKEN")],
)
def test_an_unconfigured_adapter_refuses_every_call_before_sending_it(
    slug, variable, monkeypatch, tmp_path
):
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(f"{variable}_FILE", str(tmp_path / "absent"))
    # Nothing listens on port 9: a call that went out would fail as transport, not unconfigured.
    provider = get_provider(slug, settings={"api_url": "http://127.0.0.1:9"})
    with pytest.raises(ProviderError, match=f"{variable}_FILE names .*cannot be read") as refused:
        provider.is_gone("sb-1")
    assert (refused.value.operation, refused.value.code) == ("is_gone", "unconfigured")
    assert str(refused.value).startswith(f"{slug} is_gone: ")
    [check] = provider.doctor()
    assert check.name == "credentials" and "cannot be read" in check.detail


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_completes_is_marked_and_is_never_published_and_leaks_no_key(
    monkeypatch, caplog, client, django_user_model
):
    planted = "e2b_PLANTED" + "7" * 20
    planted_team = "team_PLANTED" + "5" * 12  # travels in Vercel's query string
    planted_id = "ak-PLANTED" + "3" * 14  # Modal's token id, in gRPC metadata
    original = demo.fake_class

    def planted_fake(slug):
        cls = original(slug)

        class Planted(cls):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.api_key = planted
                if hasattr(self, "team_id"):
                    self.team_id = planted_team
                if hasattr(self, "token_id"):  # Modal's token id travels beside its secret
                    self.token_id = planted_id
                # What is checked is where credentials go, not the creation rate: creates the
                # chain spaced to a fake's rate can reach it closer together on a loaded host and
                # be refused, one trial short (tests/workloads/test_burst.py covers the rate).
                backend = getattr(self, "backend", None)
                if backend is not None:
                    backend.create_window = None

        return Planted

    monkeypatch.setattr(demo, "fake_class", planted_fake)
    from tests.providers.cloud.helpers import LIMITS, unspaced_creates

    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    # Nor the spacing: Vercel's declared rate would hold its second create back 30 s.
    unspaced_creates(monkeypatch)
    caplog.set_level(logging.DEBUG)
    out = io.StringIO()
    with pytest.raises(CommandError, match="demo run against loopback fakes"):
        call_command(
            "bench",
            "run",
            "--demo",
            "--provider",
            "e2b,daytona,vercel,modal",
            "--benchmark",
            "create,file-upload",
            "--unit",
            "file-upload:8mib",
            "--trials",
            "1",
            "--publish",
            stdout=out,
        )
    run = Run.objects.get()
    assert run.status == "completed" and not run.published
    assert run.manifest["demo"]["providers"] == ["daytona", "e2b", "modal", "vercel"]
    assert Trial.objects.filter(run=run, outcome="success").count() == 8
    with pytest.raises(publishing.PublishRefused, match="demo run"):
        publishing.publish(run)

    staff = django_user_model.objects.create_superuser("staff", password="pw")  # sees every part
    client.force_login(staff)
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert "Demo run, not a measurement" in page
    exports = [
        _body(client.get(f"/runs/{run.id}/raw.jsonl")),
        _body(client.get(f"/runs/{run.id}/raw.csv")),
        page,
        "".join(export_jsonl(run, FULL)),  # the header and every trial
        repr(run.manifest),
        repr(list(Evidence.objects.values_list("data", flat=True))),
        repr(list(Trial.objects.values_list("cause", flat=True))),
        out.getvalue(),
        caplog.text,
    ]
    assert all(planted not in text for text in exports)
    assert all(planted_team not in text for text in exports)
    assert all(planted_id not in text for text in exports)
    assert "teamId=[redacted]" in caplog.text  # httpx logged the URLs, without the team id
    assert str(run.id) in exports[0] and '"type":"trial"' in exports[0]  # served


def _body(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_vercel_is_refused_without_its_token_team_and_project(monkeypatch, db):
    for name in ("VERCEL_TOKEN", "VERCEL_TOKEN_FILE", "VERCEL_TEAM_ID", "VERCEL_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    expected = (
        "not configured: set VERCEL_TOKEN or VERCEL_TOKEN_FILE, VERCEL_TEAM_ID, VERCEL_PROJECT_ID"
    )
    assert unavailable(["vercel"]) == [f"vercel: {expected}"]
    with pytest.raises(plan.PlanError, match="vercel: not configured"):
        plan.plan_run("refused", benchmarks=["create"], providers=["vercel"])
    monkeypatch.setenv("VERCEL_TOKEN", "vcp_x" * 4)
    monkeypatch.setenv("VERCEL_TEAM_ID", "team_x")
    assert unavailable(["vercel"]) == ["vercel: not configured: set VERCEL_PROJECT_ID"]
    out = io.StringIO()
    monkeypatch.delenv("VERCEL_TOKEN")
    with contextlib.suppress(CommandError):
        call_command("bench", "doctor", "--provider", "vercel", stdout=out)
    assert "vercel:credentials" in out.getvalue() and "VERCEL_TOKEN" in out.getvalue()


def test_bench_cleanup_deletes_vercel_sandboxes_by_their_tags(db, tmp_path):
    from runner.providers.base import SandboxSpec

    spec = SandboxSpec(cpus=2, memory_mib=4096, label="bb-cleanup", lifetime_s=120)
    with demo.demo_session(["vercel"], root=str(tmp_path)) as fakes:
        provider = get_provider("vercel")
        kept = [provider.create(spec) for _ in range(2)]
        short = provider.create(
            SandboxSpec(cpus=2, memory_mib=4096, label="bb-short", lifetime_s=1)
        )
        foreign = provider.create(SandboxSpec(cpus=2, memory_mib=4096, label="x", lifetime_s=120))
        fake = fakes["vercel"]
        # The short one is stopped by its timeout: Vercel ends it, not cleanup.
        stopped = lambda: fake.status(fake.records[short.id].session) == "stopped"  # noqa: E731
        wait_for(stopped, 60, "timeout stop")

        def bench_cleanup(*args):
            out = io.StringIO()
            call_command("bench", "cleanup", "--provider", "vercel", *args, stdout=out)
            return out.getvalue()

        assert "found 0 leftover" in bench_cleanup("--max-age", "60", "--dry-run")
        listed = bench_cleanup("--max-age", "0", "--dry-run")
        assert all(f"would remove vercel {s.id} label=bb-cleanup" in listed for s in kept)
        assert "bb-short" not in listed and foreign.id not in listed
        assert "found 2 leftover" in listed
        assert "removed 2 leftover" in bench_cleanup("--max-age", "0")
        for sandbox in kept:  # deleted, not only stopped: Vercel forgets the name
            assert sandbox.id not in fake.records and provider.is_gone(sandbox.id)
        assert [s.id for s in provider.list_sandboxes()] == [foreign.id]
        assert "found 0 leftover" in bench_cleanup("--max-age", "0", "--dry-run")
        provider.destroy(foreign)


def test_modal_is_refused_without_its_tokens_or_its_sdk(monkeypatch, db):
    for name in ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(f"{name}_FILE", raising=False)
    expected = (
        "not configured: set MODAL_TOKEN_ID or MODAL_TOKEN_ID_FILE, "
        "MODAL_TOKEN_SECRET or MODAL_TOKEN_SECRET_FILE"
    )
    assert unavailable(["modal"]) == [f"modal: {expected}"]
    with pytest.raises(plan.PlanError, match="modal: not configured"):
        plan.plan_run("refused", benchmarks=["create"], providers=["modal"])
    assert not Run.objects.exists()
    monkeypatch.setenv("MODAL_TOKEN_ID", "ak-x" * 4)
    assert unavailable(["modal"]) == [
        "modal: not configured: set MODAL_TOKEN_SECRET or MODAL_TOKEN_SECRET_FILE"
    ]
    out = io.StringIO()
    with contextlib.suppress(CommandError):
        call_command("bench", "doctor", "--provider", "modal", stdout=out)
    assert "modal:credentials" in out.getvalue() and "MODAL_TOKEN_SECRET" in out.getvalue()

    # Configured, but the SDK is not installed: refused with how to install it.
    import importlib.util

    from runner.providers import modal as modal_adapter

    monkeypatch.setenv("MODAL_TOKEN_SECRET", "as-x" * 4)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        modal_adapter.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "modal" else real_find_spec(name, *a),
    )
    assert unavailable(["modal"]) == [f"modal: {modal_adapter.SDK_MISSING}"]
    with pytest.raises(plan.PlanError, match="modal package is not installed"):
        plan.plan_run("refused", benchmarks=["create"], providers=["modal"])
    out = io.StringIO()
    with contextlib.suppress(CommandError):
        call_command("bench", "doctor", "--provider", "modal", stdout=out)
    assert "modal:sdk" in out.getvalue() and "requirements-modal.txt" in out.getvalue()


def test_bench_cleanup_terminates_modal_sandboxes_by_their_tags(db, tmp_path):
    pytest.importorskip("modal", reason="the modal SDK is optional")
    from runner.providers.base import SandboxSpec

    spec = SandboxSpec(cpus=2, memory_mib=4096, label="bb-cleanup", lifetime_s=120)
    with demo.demo_session(["modal"], root=str(tmp_path)):
        provider = get_provider("modal")
        kept = [provider.create(spec) for _ in range(2)]
        foreign = provider.create(SandboxSpec(cpus=2, memory_mib=4096, label="x", lifetime_s=120))

        def bench_cleanup(*args):
            out = io.StringIO()
            call_command("bench", "cleanup", "--provider", "modal", *args, stdout=out)
            return out.getvalue()

        assert "found 0 leftover" in bench_cleanup("--max-age", "60", "--dry-run")
        listed = bench_cleanup("--max-age", "0", "--dry-run")
        assert all(f"would remove modal {s.id} label=bb-cleanup" in listed for s in kept)
        assert foreign.id not in listed and "found 2 leftover" in listed
        assert "removed 2 leftover" in bench_cleanup("--max-age", "0")
        assert all(provider.is_gone(s.id) for s in kept)
        assert [s.id for s in provider.list_sandboxes()] == [foreign.id]
        provider.destroy(foreign)


# Each SDK adapter and the module it imports its SDK as.
SDKS = [("e2b", "e2b"), ("daytona", "daytona"), ("vercel", "vercel.sandbox")]


@pytest.mark.parametrize("slug, module", SDKS)
def test_an_sdk_adapter_is_refused_without_its_sdk(monkeypatch, slug, module):
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == module else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    settings = {"api_key": f"{slug}_k", "token": "vcp_k", "team_id": "t", "project_id": "p"}
    provider = get_provider(slug, settings=settings)
    assert f"pip install -r requirements-{slug}.txt" in provider.configuration_problem()
    with pytest.raises(ProviderError, match=f"requirements-{slug}.txt"):
        provider.list_sandboxes()


@pytest.mark.parametrize("slug, module", SDKS)
def test_bench_cleanup_skips_a_provider_whose_sdk_is_missing(db, monkeypatch, slug, module):
    # As on a machine where `./boxbench.sh run` installed only requirements.txt: the SDK neither
    # is found nor imports. Cleanup says why it skips the provider; it never lists through it.
    import importlib.util
    import sys

    real = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == module else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError
    out = io.StringIO()
    call_command("bench", "cleanup", "--provider", slug, stdout=out)
    assert f"skipped {slug}:" in out.getvalue()
    assert f"requirements-{slug}.txt" in out.getvalue()
