"""What Vercel's SDK would do on its own, held to one call: it sends each call once, its polling
of a create that never runs ends at the adapter's limit without leaving the sandbox, and a
stopped session is never resumed behind the adapter's back (the SDK's lifecycle recovery); its
fake holds the documented creation rate and refuses past it as Vercel does."""

import pytest

from runner.providers.base import ProviderError, SandboxSpec
from runner.providers.fakes import hostile
from runner.providers.fakes.server import Response
from runner.providers.fakes.vercel import VercelFake
from tests.providers.cloud.helpers import run, running_fake

SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-pytest-vercel", lifetime_s=120)


def test_vercels_sdk_sends_each_call_once(tmp_path):
    with running_fake("vercel", tmp_path) as found:
        found.api.faults.add(
            "POST", found.create_path(), times=2, status=503, body={"message": "no capacity"}
        )
        with pytest.raises(ProviderError, match="HTTP 503") as refused:
            found.provider.create(SPEC)
        creates = [r for r in found.api.requests if r.method == "POST"]
        assert len(creates) == 1 and refused.value.code == "503"


def test_a_create_that_never_runs_ends_at_the_limit_and_leaves_no_sandbox(tmp_path):
    # The SDK polls every 0.5 s until the session runs, with no deadline of its own.
    with running_fake("vercel", tmp_path, create_delay_s=60.0) as found:
        provider = found.adapter(create_limit_s=1.5)
        with pytest.raises(ProviderError) as late:
            provider.create(SPEC)
        assert (late.value.operation, late.value.code) == ("create", "timeout")
        polls = [r for r in found.api.requests if r.method == "GET"]
        assert 1 <= len(polls) <= 4 and found.fake.records == {}


def test_a_stopped_session_is_not_resumed_behind_the_adapters_back(tmp_path):
    with running_fake("vercel", tmp_path) as found:
        provider, fake = found.provider, found.fake
        sandbox = provider.create(SPEC)
        fake.backend.kill(fake.records[sandbox.id].session.box, "stopped")
        for call in (
            lambda: provider.exec(sandbox, ["true"], 10),
            lambda: provider.upload(sandbox, "/app/x", b"x"),
            lambda: provider.download(sandbox, "/app/x"),
        ):
            with pytest.raises(ProviderError) as stopped:
                call()
            assert stopped.value.code == "sandbox_stopped"
        assert not [r for r in found.api.requests if r.arg("resume") == "true"]
        assert provider.is_gone(sandbox.id)
        provider.destroy(sandbox)


def test_an_upload_the_sdk_sends_from_its_own_thread_is_still_bounded(tmp_path):
    # The SDK streams an upload's body from a thread of its own, outside the adapter call's
    # context: the transport's guard still holds its answer to the answer cap.
    with running_fake("vercel", tmp_path) as found:
        provider = found.provider
        sandbox = provider.create(SPEC)
        oversized = Response(500, hostile.oversized_body(), {"Content-Type": "application/json"})
        found.api.faults.add("POST", "/fs/write$", answer=lambda request: oversized)
        with pytest.raises(ProviderError) as refused:
            provider.upload(sandbox, "/app/x", b"x")
        assert (refused.value.operation, refused.value.code) == ("upload", "too_large")
        provider.upload(sandbox, "/app/x", b"x")
        provider.destroy(sandbox)


def test_a_create_whose_session_fails_is_a_provider_failure_and_leaves_nothing(tmp_path):
    with running_fake("vercel", tmp_path) as found:
        found.fake.fail_next_create = True
        result = run(found, None, benchmark="create")
        assert (result.outcome, result.owner) == ("provider_failure", "provider")
        assert "failed" in result.cause and result.cleanup_verified
        assert found.fake.records == {}


def test_vercels_fake_admits_20_creates_in_10_minutes_and_refuses_the_next_with_429(tmp_path):
    # The Hobby plan's documented limit, which demo runs meet; the tests whose claim is not the
    # rate switch it off, so this one holds it. The window's clock is set, not waited for.
    with running_fake("vercel", tmp_path, **VercelFake.documented_limits()) as found:
        provider, backend = found.provider, found.fake.backend
        now = [1000.0]
        backend.clock = lambda: now[0]
        for _ in range(20):  # 20 creates 29 s apart: all 20 inside one 600 s window
            backend.admit()
            now[0] += 29.0
        with pytest.raises(ProviderError) as refused:
            provider.create(SPEC)
        assert (refused.value.operation, refused.value.code) == ("create", "rate_limited")
        said = "HTTP 429: Sandbox creation rate limit (20 per 600 s) exceeded"
        assert said in str(refused.value) and str(refused.value).endswith("(Retry-After 20)")
        now[0] = 1600.0  # the first create has left the window: one more is admitted
        sandbox = provider.create(SPEC)
        assert found.fake.records[sandbox.id].session.box.state == "running"
        provider.destroy(sandbox)
