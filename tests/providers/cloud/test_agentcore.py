"""The agentcore adapter (boto3's bedrock-agentcore client) against its loopback fake: every
sandbox operation through the real lifecycle, the fake's checks against botocore's service model,
errors with their owners, credentials the AWS way (never leaked), demo mode and the board."""

import html
import io
import logging
import re
import time

import botocore.config
import botocore.session
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from boxbench import publishing
from boxbench.models import Evidence, Run, Trial
from boxbench.rawdata import FULL, export_jsonl
from runner import chain, lifecycle, plan, steps
from runner.benchmarks import all_benchmarks
from runner.cleanup import wait_gone
from runner.limits import Timer
from runner.providers import agentcore, demo, get_provider, unavailable
from runner.providers.base import ExecTimeout, NotReady, ProviderError, SandboxSpec
from runner.providers.fakes.agentcore import INTERPRETER, AgentCoreFake
from tests.providers.cloud.helpers import LIMITS, Cloud, run
from tests.support.web import explain_failures

SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-pytest-cloud", lifetime_s=120)
SANDBOX_OPERATIONS = sorted(
    slug
    for slug, module in all_benchmarks().items()
    if module.DEFINITION.section == "sandbox_operations"
    # Snapshot, fork, Create's unique layer and Output Stream: not declared here, so refused
    # (R401) before a run starts.
    and not {"snapshot", "fork", "unique_layer", "output_stream"}
    & set(module.DEFINITION.required_capabilities)
)
AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SECRET_ACCESS_KEY_FILE",
    "AWS_SESSION_TOKEN",
    "AWS_SESSION_TOKEN_FILE",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE",
)


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch, tmp_path):
    """Nothing of this machine's AWS setup: no variables, no shared files, no instance role."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def cloud(tmp_path):
    fake = AgentCoreFake(tmp_path / "fake").start()
    try:
        yield Cloud("agentcore", fake, get_provider("agentcore", settings=fake.adapter_settings()))
    finally:
        fake.stop()


def raw_client(fake, **overrides):
    """boto3's client of the fake with botocore's own checks off: what reaches the service."""
    import boto3

    settings = {**fake.adapter_settings(), **overrides}
    return boto3.Session(
        aws_access_key_id=settings["access_key_id"],
        aws_secret_access_key=settings["secret_access_key"],
        region_name=settings["region"],
    ).client(
        "bedrock-agentcore",
        endpoint_url=settings["endpoint_url"],
        config=botocore.config.Config(
            parameter_validation=False, retries={"total_max_attempts": 1}
        ),
    )


@pytest.mark.parametrize("slug", SANDBOX_OPERATIONS)
def test_it_runs_each_sandbox_operation_benchmark_through_the_lifecycle(cloud, slug):
    result = run(cloud, None, benchmark=slug)
    assert result.outcome == "success", result.cause
    assert all_benchmarks()[slug].DEFINITION.metric in {m.name for m in result.measurements}
    assert result.cleanup_verified and cloud.provider.list_sandboxes("bb-pytest-cloud") == []
    assert result.cost_usd is not None and result.cost_usd > 0


def test_exec_returns_exit_codes_separate_output_stdin_and_files(cloud):
    provider = cloud.provider
    sandbox = provider.create(SPEC)
    try:
        lifecycle.readiness_check(provider, sandbox)
        result = provider.exec(sandbox, ["/bin/sh", "-c", "echo out; echo err >&2; exit 7"], 10)
        assert (result.exit_code, result.stdout, result.stderr) == (7, b"out\n", b"err\n")
        assert provider.exec(sandbox, ["/bin/cat"], 10, stdin=b"in put").stdout == b"in put"
        assert provider.exec(sandbox, ["ls", "/tmp"], 10).stdout == b""  # stdin file removed
        assert provider.exec(sandbox, ["pwd"], 10, workdir="/tmp").stdout == b"/tmp\n"
        env = provider.exec(sandbox, ["/bin/sh", "-c", 'echo "$X"'], 10, env={"X": "a b'c"})
        assert env.stdout == b"a b'c\n"
        quoted = provider.exec(sandbox, ["printf", "%s|", "a b", "$HOME", "'; exit 3"], 10)
        assert quoted.stdout == b"a b|$HOME|'; exit 3|"
        provider.upload(sandbox, "/app/d/blob.bin", bytes(range(256)) * 100)
        assert provider.download(sandbox, "/app/d/blob.bin") == bytes(range(256)) * 100
        with pytest.raises(ProviderError) as missing:
            provider.download(sandbox, "/app/none")
        assert missing.value.code == "not_found"
        assert [s.id for s in provider.list_sandboxes(SPEC.label)] == [sandbox.id]
        assert provider.list_sandboxes("bb-other") == []
        assert cloud.fake.sessions[sandbox.id]["timeout"] == 120  # the lifetime, enforced there
    finally:
        provider.destroy(sandbox)
    assert wait_gone(provider, sandbox.id, 5, Timer())


def test_a_command_past_its_limit_is_killed_and_the_sandbox_still_answers(cloud):
    provider = cloud.provider
    sandbox = provider.create(SPEC)
    try:
        with pytest.raises(ExecTimeout):
            provider.exec(sandbox, ["/bin/sh", "-c", "echo $$ > /tmp/slow; sleep 30 & wait"], 0.5)
        alive = "kill -0 $(cat /tmp/slow) 2>/dev/null && echo alive || echo dead"
        assert provider.exec(sandbox, ["/bin/sh", "-c", alive], 10).stdout == b"dead\n"
        orphans = provider.exec(sandbox, ["/bin/sh", "-c", "pgrep -x sleep || true"], 10)
        assert orphans.stdout == b""  # the whole process group went
        assert provider.exec(sandbox, ["true"], 10).exit_code == 0
    finally:
        provider.destroy(sandbox)


def test_the_listing_follows_next_tokens(cloud):
    provider = cloud.provider
    made = [provider.create(SPEC) for _ in range(3)]
    client = raw_client(cloud.fake)
    first = client.list_code_interpreter_sessions(
        codeInterpreterIdentifier=INTERPRETER, maxResults=2
    )
    assert len(first["items"]) == 2 and first["nextToken"]
    assert sorted(s.id for s in provider.list_sandboxes(SPEC.label)) == sorted(s.id for s in made)
    for sandbox in made:
        provider.destroy(sandbox)
    assert provider.list_sandboxes() == []


@pytest.mark.parametrize(
    "operation, params, field",
    [
        ("start_code_interpreter_session", {"name": "n" * 101}, "name"),
        (
            "start_code_interpreter_session",
            {"sessionTimeoutSeconds": 28801},
            "sessionTimeoutSeconds",
        ),
        ("start_code_interpreter_session", {"clientToken": "short"}, "clientToken"),
        (
            "invoke_code_interpreter",
            {"sessionId": "has-dash", "name": "executeCommand"},
            "sessionId",
        ),
        ("invoke_code_interpreter", {"sessionId": "abc", "name": "runShell"}, "name"),
        ("list_code_interpreter_sessions", {"maxResults": 101}, "maxResults"),
        ("list_code_interpreter_sessions", {"status": "RUNNING"}, "status"),
        ("stop_code_interpreter_session", {}, "sessionId"),
    ],
    ids=[
        "name-too-long",
        "timeout-over-8h",
        "client-token-short",
        "session-id-pattern",
        "tool-not-in-enum",
        "page-too-large",
        "status-not-in-enum",
        "session-id-missing",
    ],
)
def test_the_fake_rejects_what_the_service_model_forbids(cloud, operation, params, field):
    client = raw_client(cloud.fake)
    with pytest.raises(client.exceptions.ValidationException) as rejected:
        getattr(client, operation)(codeInterpreterIdentifier=INTERPRETER, **params)
    assert rejected.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert field in str(rejected.value)
    assert rejected.value.response["reason"] == "FieldValidationFailed"


def test_botocore_alone_lets_through_what_the_fake_rejects(cloud):
    # Why the fake checks the model itself: the client checks types and required members only.
    client = botocore.session.get_session().create_client(
        "bedrock-agentcore",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="a",
        aws_secret_access_key="b",
    )
    sent = []
    client.meta.events.register("before-send", lambda request, **_: sent.append(request) or _ok())
    client.start_code_interpreter_session(codeInterpreterIdentifier=INTERPRETER, name="n" * 101)
    assert b'"name": "nnn' in sent[0].body or b'"name":"nnn' in sent[0].body


def _ok():
    from botocore.awsrequest import AWSResponse

    class Raw:
        def stream(self, **_):
            yield b'{"codeInterpreterIdentifier": "x", "sessionId": "s", '
            yield b'"createdAt": "2026-01-01T00:00:00Z"}'

    return AWSResponse("http://127.0.0.1:9", 200, {}, Raw())


def test_an_unknown_interpreter_and_an_unknown_session_are_not_found(cloud):
    wrong = get_provider(
        "agentcore", settings={**cloud.fake.adapter_settings(), "interpreter": "mine-0123456789"}
    )
    with pytest.raises(ProviderError) as refused:
        wrong.create(SPEC)
    assert refused.value.code == "not_found" and "mine-0123456789" in str(refused.value)
    assert cloud.provider.is_gone("0123abc")
    cloud.provider.destroy(_sandbox("0123abc"))  # gone is gone


def _sandbox(session_id):
    from runner.providers.base import Sandbox

    return Sandbox(id=session_id, label=SPEC.label)


@pytest.mark.parametrize(
    "overrides, code",
    [
        ({"secret_access_key": "wrong" * 8}, "InvalidSignatureException"),
        ({"access_key_id": "AKIAWRONGWRONGWRONG"}, "UnrecognizedClientException"),
        ({"region": "us-west-2"}, "InvalidSignatureException"),
    ],
    ids=["secret", "key-id", "region"],
)
def test_a_wrong_credential_is_refused_and_never_repeated(cloud, overrides, code):
    provider = get_provider("agentcore", settings={**cloud.fake.adapter_settings(), **overrides})
    with pytest.raises(ProviderError) as refused:
        provider.create(SPEC)
    assert refused.value.code == "unauthorized" and code in str(refused.value)
    for secret in (cloud.fake.secret_access_key, overrides.get("secret_access_key")):
        assert secret is None or secret not in str(refused.value)
    assert cloud.fake.sessions == {}


@pytest.mark.parametrize(
    "status, code, expected, outcome",
    [
        (429, "ThrottlingException", "rate_limited", ("provider_failure", "provider")),
        (402, "ServiceQuotaExceededException", "rate_limited", ("provider_failure", "provider")),
        (500, "InternalServerException", "unavailable", ("provider_failure", "provider")),
        # A refused credential is ours (runner/providers/base.py, CredentialsRejected).
        (403, "AccessDeniedException", "unauthorized", ("benchmark_error", "benchmark")),
    ],
)
def test_create_failures_are_named_and_owned(cloud, status, code, expected, outcome):
    cloud.api.faults.add(
        "PUT",
        "/sessions/start$",
        status=status,
        body={"message": f"planted {code}"},
        headers={"x-amzn-ErrorType": code},
    )
    result = run(cloud, None, benchmark="sequential-tti")
    assert (result.outcome, result.owner) == outcome
    assert code in result.cause and f"planted {code}" in result.cause
    error = next(e.data for e in result.evidence if e.kind == "create_error")
    assert error["code"] == expected


def test_the_readiness_check_retries_a_command_plane_that_is_not_ready(cloud):
    cloud.api.faults.add("POST", "/tools/invoke$", times=3, status=503, body=b"")
    result = run(cloud, None, benchmark="sequential-tti")
    assert result.outcome == "success", result.cause
    readiness = next(e.data for e in result.evidence if e.kind == "readiness")
    assert [a["result"] for a in readiness["attempts"]][:4] == ["not_ready"] * 3 + ["ready"]


def test_a_session_past_its_timeout_is_gone_and_fails_the_trial(cloud):
    def procedure(ctx):
        ctx.exec(["true"], 10)
        box = cloud.fake.backend.get(ctx.sandbox.id)
        cloud.fake.backend.set_timeout(box, 0)
        time.sleep(0.5)
        ctx.exec(["true"], 10)

    result = run(cloud, procedure)
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert "ResourceNotFoundException" in result.cause
    assert result.cleanup_verified  # a stop of an ended session is not an error


def test_a_stop_that_fails_leaves_cleanup_unverified(cloud):
    cloud.api.faults.add(
        "PUT",
        "/sessions/stop$",
        status=500,
        body={"message": "cannot stop"},
        headers={"x-amzn-ErrorType": "InternalServerException"},
    )
    result = run(cloud, None, benchmark="sequential-tti")
    assert result.outcome == "provider_failure" and not result.cleanup_verified
    assert "destroy" in result.cause and "cannot stop" in result.cause
    for sandbox in cloud.provider.list_sandboxes("bb-pytest-cloud"):
        cloud.provider.destroy(sandbox)


def test_a_reset_on_the_command_plane_is_not_ready(cloud):
    provider = cloud.provider
    sandbox = provider.create(SPEC)
    try:
        cloud.api.faults.add("POST", "/tools/invoke$", reset=True)
        with pytest.raises(NotReady):
            provider.exec(sandbox, ["true"], 10)
        assert provider.exec(sandbox, ["true"], 10).exit_code == 0
    finally:
        provider.destroy(sandbox)


def test_a_lifetime_over_eight_hours_or_a_custom_image_is_refused_before_any_call(cloud):
    for spec in (
        SandboxSpec(cpus=2, memory_mib=4096, label="bb-x", lifetime_s=8 * 3600 + 1),
        SandboxSpec(cpus=2, memory_mib=4096, label="bb-x", lifetime_s=60, image="python:3.12"),
    ):
        with pytest.raises(ProviderError):
            cloud.provider.create(spec)
    assert cloud.api.requests == []


def test_credentials_come_the_aws_way_and_the_secret_from_its_file(monkeypatch, tmp_path, db):
    assert unavailable(["agentcore"]) == [f"agentcore: {agentcore.NO_CREDENTIALS}"]
    with pytest.raises(plan.PlanError, match="agentcore: not configured"):
        plan.plan_run("refused", benchmarks=["create"], providers=["agentcore"])
    out = io.StringIO()
    call_command("bench", "doctor", "--provider", "agentcore", stdout=out)
    assert "SKIP provider  agentcore:credentials" in out.getvalue()

    secret = tmp_path / "secret"
    secret.write_text("s3cr3t-from-a-file\n")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFILEFILEFILE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY_FILE", str(secret))
    assert unavailable(["agentcore"]) == [f"agentcore: {agentcore.NO_REGION}"]
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    assert unavailable(["agentcore"]) == []
    provider = get_provider("agentcore")
    found = provider._session.get_credentials().get_frozen_credentials()
    assert (found.access_key, found.secret_key) == ("AKIAFILEFILEFILE", "s3cr3t-from-a-file")
    assert provider.endpoints() == [("bedrock-agentcore.us-west-2.amazonaws.com", 443)]

    # A profile in the shared files, boto3's own way.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY_FILE", "AWS_REGION"):
        monkeypatch.delenv(name)
    (tmp_path / "aws-credentials").write_text(
        "[bench]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = from-profile\n"
    )
    (tmp_path / "aws-config").write_text("[profile bench]\nregion = us-east-2\n")
    monkeypatch.setenv("AWS_PROFILE", "bench")
    provider = get_provider("agentcore")
    assert provider.configuration_problem() is None
    assert provider._session.region_name == "us-east-2"


def test_boto3_missing_is_refused_with_how_to_install_it(monkeypatch, db):
    real_find_spec = agentcore.importlib.util.find_spec
    monkeypatch.setattr(
        agentcore.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "boto3" else real_find_spec(name, *a),
    )
    assert unavailable(["agentcore"]) == [f"agentcore: {agentcore.SDK_MISSING}"]
    out = io.StringIO()
    call_command("bench", "doctor", "--provider", "agentcore", stdout=out)
    assert "agentcore:sdk" in out.getvalue() and "requirements-agentcore.txt" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_completes_is_never_published_and_leaks_no_secret(
    monkeypatch, caplog, client, django_user_model
):
    planted_secret = "PLANTEDsecret" + "9" * 27
    planted_key = "AKIAPLANTED" + "4" * 9
    original = demo.fake_class

    def planted_fake(slug):
        class Planted(original(slug)):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.api_key, self.token_id = planted_secret, planted_key

        return Planted

    monkeypatch.setattr(demo, "fake_class", planted_fake)
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    caplog.set_level(logging.DEBUG)
    out = io.StringIO()
    call_command(
        "bench",
        "run",
        "--demo",
        "--provider",
        "agentcore",
        "--benchmark",
        "sequential-tti,latency-per-call",
        "--trials",
        "3",
        "--inline",
        stdout=out,
    )
    run_ = Run.objects.get()
    assert run_.status == "completed" and not run_.published
    assert run_.manifest["demo"]["providers"] == ["agentcore"]
    assert Trial.objects.filter(run=run_, outcome="success").count() == 6
    with pytest.raises(publishing.PublishRefused, match="demo run"):
        publishing.publish(run_)
    with pytest.raises(CommandError, match="demo run"):
        call_command("bench", "publish", str(run_.id), stdout=io.StringIO())

    client.force_login(django_user_model.objects.create_superuser("staff", password="pw"))
    texts = [
        client.get(f"/runs/{run_.id}/").content.decode(),
        "".join(export_jsonl(run_, FULL)),
        repr(run_.manifest),
        repr(list(Evidence.objects.values_list("data", flat=True))),
        repr(list(Trial.objects.values_list("cause", flat=True))),
        out.getvalue(),
        caplog.text,
    ]
    assert "Demo run, not a measurement" in texts[0]
    assert all(planted_secret not in text for text in texts)
    assert "botocore" in caplog.text  # the SDK did log at DEBUG, without the secret


@pytest.mark.django_db(transaction=True)
def test_a_published_run_shows_the_missing_capability_as_not_supported_on_the_board(
    monkeypatch, tmp_path, client
):
    # A real (not demo) run of local and agentcore on one DeepSWE unit: the planner refuses
    # agentcore (no network cut-off), local measures, and the board labels agentcore.
    from django.core.cache import cache

    from boxbench.models import RunStatus

    fake = AgentCoreFake(tmp_path / "fake").start()
    try:
        settings = fake.adapter_settings()
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", settings["access_key_id"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", settings["secret_access_key"])
        monkeypatch.setenv("AWS_REGION", settings["region"])
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", settings["endpoint_url"])
        run_ = plan.plan_run(
            "board",
            benchmarks=["deepswe-boxbench"],
            providers=["local", "agentcore"],
            trials=1,
            units={"deepswe-boxbench": ["inflection-camelize-empty"]},
        )
    finally:
        fake.stop()
    refused = {(r["provider"], r["code"], r["missing"]) for r in run_.manifest["refusals"]}
    assert ("agentcore", "R401", "network_lockdown") in refused
    assert {provider for provider, _, _ in refused} == {"agentcore"}
    assert list(run_.manifest["providers"]) == ["local"]  # nothing of agentcore's is queued
    run_.transition(RunStatus.RUNNING, note="started by the test")
    steps.execute_chain(run_.pk, "local", inline=True)
    run_.refresh_from_db()
    assert Trial.objects.filter(run=run_, outcome="success").count() == 1
    _resolve_failing_checks(run_)
    publishing.publish(run_)
    cache.clear()
    page = client.get("/benchmarks/deepswe-boxbench/").content.decode()
    # Each status label reads <span class="status" title="meaning"><b>provider</b>: label</span>.
    shown = re.findall(
        r'<span class="status" title="([^"]*)"><b>Amazon Bedrock AgentCore</b>: (.*?)</span>', page
    )
    assert shown, "the provider is not on the board"
    assert all(
        label == "Not Supported" and "capability" in html.unescape(meaning)
        for meaning, label in shown
    )


def _resolve_failing_checks(run_):
    """One trial of one unit fails the audit's sample-size checks: explained, as an admin would."""
    explain_failures(run_, note="A one-trial run made to read the board's label.")


def test_bench_cleanup_stops_agentcore_sessions_by_their_name(db, tmp_path):
    with demo.demo_session(["agentcore"], root=str(tmp_path)):
        provider = get_provider("agentcore")
        kept = [
            provider.create(
                SandboxSpec(cpus=2, memory_mib=4096, label="bb-cleanup", lifetime_s=120)
            )
            for _ in range(2)
        ]
        foreign = provider.create(SandboxSpec(cpus=2, memory_mib=4096, label="x", lifetime_s=120))

        def bench_cleanup(*args):
            out = io.StringIO()
            call_command("bench", "cleanup", "--provider", "agentcore", *args, stdout=out)
            return out.getvalue()

        assert "found 0 leftover" in bench_cleanup("--max-age", "60", "--dry-run")
        listed = bench_cleanup("--max-age", "0", "--dry-run")
        assert all(f"would remove agentcore {s.id} label=bb-cleanup" in listed for s in kept)
        assert foreign.id not in listed and "found 2 leftover" in listed
        assert "removed 2 leftover" in bench_cleanup("--max-age", "0")
        assert [s.id for s in provider.list_sandboxes()] == [foreign.id]
        assert all(provider.is_gone(s.id) for s in kept)
        provider.destroy(foreign)


def test_a_provider_answer_echoing_the_secret_is_redacted(cloud):
    secret = cloud.fake.secret_access_key
    cloud.api.faults.add(
        "PUT",
        "/sessions/start$",
        status=400,
        body={"message": f"bad request signed with {secret}", "reason": "CannotParse"},
        headers={"x-amzn-ErrorType": "ValidationException"},
    )
    result = run(cloud, None, benchmark="sequential-tti")
    assert result.outcome == "provider_failure" and "[redacted]" in result.cause
    assert secret not in result.cause
    assert all(secret not in repr(evidence.data) for evidence in result.evidence)


@pytest.mark.parametrize("region", ["eu-west-1", "ap-south-1", "us-gov-west-1"])
def test_a_region_outside_the_us_is_refused_before_a_run(cloud, region):
    provider = get_provider(
        "agentcore", settings={**cloud.fake.adapter_settings(), "region": region}
    )
    assert f"region {region} is outside the US" in provider.configuration_problem()
    with pytest.raises(ProviderError) as refused:
        provider.create(SPEC)
    assert refused.value.code == "unconfigured" and cloud.fake.sessions == {}


def test_each_sandbox_records_the_region_it_runs_in(cloud):
    sandbox = cloud.provider.create(SPEC)
    try:
        assert sandbox.facts["provider_region"] == "us-east-1"
    finally:
        cloud.provider.destroy(sandbox)
