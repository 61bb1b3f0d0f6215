"""The Modal adapter, through the real `modal` client, against the loopback gRPC fake: every
sandbox-operation benchmark through the lifecycle, and every outcome class from Modal's
documented failures (async creation, NOT_FOUND, UNAVAILABLE and DEADLINE_EXCEEDED after the SDK's
retries, RESOURCE_EXHAUSTED at the plan limit, sandboxes ending at their timeout)."""

import asyncio
import contextlib
import threading
import time

import pytest

pytest.importorskip(
    "modal", reason="the modal SDK is optional: pip install -r requirements-modal.txt"
)

from grpclib import Status

from runner import lifecycle, waiting
from runner.benchmarks import all_benchmarks
from runner.benchmarks.base import BenchmarkError, Excluded, Missed
from runner.cleanup import wait_gone
from runner.limits import Limits, Timer
from runner.providers.base import ExecTimeout, NotReady, ProviderError, SandboxSpec
from runner.readiness import ReadinessPolicy
from tests.providers.cloud.helpers import run
from tests.providers.cloud.modal_helpers import running_modal

SANDBOX_OPERATIONS = sorted(
    slug
    for slug, module in all_benchmarks().items()
    if module.DEFINITION.section == "sandbox_operations"
    # Snapshot and Restore has its own tests (test_modal_snapshots.py); Fork and Output Stream
    # are refused (R401): Modal's SDK gathers a command's output.
    and not {"snapshot", "fork", "output_stream"} & set(module.DEFINITION.required_capabilities)
)
SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-pytest-cloud", lifetime_s=120)


@pytest.fixture
def cloud(tmp_path):
    with running_modal(tmp_path / "fake") as found:
        yield found


def calls(cloud, method: str) -> int:
    return sum(1 for name, _ in cloud.fake.calls if name == method)


@pytest.mark.parametrize("slug", SANDBOX_OPERATIONS)
def test_it_runs_each_sandbox_operation_benchmark_through_the_lifecycle(cloud, slug):
    result = run(cloud, None, benchmark=slug)
    assert result.outcome == "success", result.cause
    assert all_benchmarks()[slug].DEFINITION.metric in {m.name for m in result.measurements}
    assert result.cleanup_verified and cloud.provider.list_sandboxes("bb-pytest-cloud") == []
    assert result.cost_usd is not None and result.cost_usd > 0


def test_each_trial_records_the_region_its_modal_sandbox_reports(cloud):
    cloud.fake.region = "us-west-2"
    result = run(cloud, None, benchmark="create")
    assert result.outcome == "success", result.cause
    assert result.placement["provider_region"] == "us-west-2"
    declaration = cloud.provider.declaration
    assert declaration.region_marker == "placed by Modal"
    assert "provider_region" in declaration.region_note


def test_long_commands_run_in_the_background_and_keep_the_clock_gate(cloud):
    def procedure(ctx):
        guest = ctx.background("sleep 0.3; echo done", timeout=60, poll_interval_s=0.05)
        assert guest.exit_code == 0 and guest.stdout == b"done\n" and guest.gate_ok
        ctx.record("latency_ms", guest.total_ms - guest.runtime_ms, clock="job_host")

    result = run(cloud, procedure)
    assert result.outcome == "success", result.cause


def test_exec_returns_exit_codes_separate_output_stdin_and_files(cloud):
    provider = cloud.provider
    sandbox = provider.create(SPEC)
    try:
        lifecycle.readiness_check(provider, sandbox)
        result = provider.exec(sandbox, ["/bin/sh", "-c", "echo out; echo err >&2; exit 7"], 10)
        assert (result.exit_code, result.stdout, result.stderr) == (7, b"out\n", b"err\n")
        assert provider.exec(sandbox, ["/bin/cat"], 10, stdin=b"in put").stdout == b"in put"
        assert provider.exec(sandbox, ["/bin/cat"], 10).stdout == b""  # stdin closed, no wait
        assert provider.exec(sandbox, ["pwd"], 10, workdir="/tmp").stdout == b"/tmp\n"
        env = provider.exec(sandbox, ["/bin/sh", "-c", 'echo "$X"'], 10, env={"X": "a b'c"})
        assert env.stdout == b"a b'c\n"
        blob = bytes(range(256)) * 12_000  # 3 MiB: stdin travels in several writes
        provider.upload(sandbox, "/app/d/blob.bin", blob)
        assert provider.download(sandbox, "/app/d/blob.bin") == blob
        with pytest.raises(ProviderError) as missing:
            provider.download(sandbox, "/app/none")
        assert missing.value.code == "not_found"
        [listed] = provider.list_sandboxes(SPEC.label)
        assert (listed.id, listed.label) == (sandbox.id, SPEC.label)
        assert abs((listed.created_at - sandbox.created_at).total_seconds()) < 2
        assert provider.list_sandboxes("bb-other") == []
        assert [s.id for s in provider.list_sandboxes()] == [sandbox.id]
    finally:
        provider.destroy(sandbox)
    assert wait_gone(provider, sandbox.id, 5, Timer())
    assert provider.list_sandboxes() == []


def test_the_sandbox_gets_the_label_lifetime_size_and_network_it_asked_for(cloud):
    sandbox = cloud.provider.create(SPEC)
    box = cloud.fake.records[sandbox.id]
    assert box.extra["tags"]["boxbench.batch"] == SPEC.label
    assert box.extra["timeout"] == 120
    assert (box.extra["milli_cpu"], box.extra["memory_mb"]) == (1000, 4096)  # 1 core = 2 vCPU
    assert box.extra["network"] is False
    lifecycle.readiness_check(cloud.provider, sandbox)
    # The network is really cut: only the loopback interface is up inside.
    script = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
    links = cloud.provider.exec(sandbox, ["/bin/sh", "-c", script], 10).stdout
    assert links.split() == [b"lo"]
    cloud.provider.destroy(sandbox)


def test_create_returns_before_the_sandbox_is_scheduled_and_the_first_exec_waits(tmp_path):
    with running_modal(tmp_path, create_delay_s=2.0) as found:
        sandbox = found.provider.create(SPEC)
        assert found.fake.records[sandbox.id].extra["task_id"] == ""  # a handle, not yet running
        evidence = lifecycle.readiness_check(found.provider, sandbox)
        assert evidence["attempts"][0]["result"] == "ready" and evidence["tti_ms"] >= 1000
        assert calls(found, "SandboxGetTaskIdV2") >= 2  # the SDK polled until scheduled
        found.provider.destroy(sandbox)


def test_a_sandbox_that_is_never_scheduled_is_a_provider_failure(tmp_path):
    with running_modal(tmp_path, create_delay_s=600) as found:
        limits = Limits(
            readiness=ReadinessPolicy(attempt_timeout_s=1.0, deadline_s=2.0),
            poll_interval_s=0.05,
            gone_timeout_s=5.0,
        )
        result = run(found, None, benchmark="create", limits=limits)
        assert (result.outcome, result.owner) == ("provider_failure", "provider")
        assert "had not started" in result.cause and result.cleanup_verified


def test_a_sandbox_that_fails_to_start_is_a_provider_failure(tmp_path):
    with running_modal(tmp_path) as found:
        found.fake.fail_next_create = True
        result = run(found, None, benchmark="create")
        assert (result.outcome, result.owner) == ("provider_failure", "provider")
        assert "failed to start" in result.cause and result.cleanup_verified


@pytest.mark.parametrize(
    "status, times, expected",
    [
        (Status.UNAVAILABLE, 4, "ServiceError"),  # the SDK retries 3 times, then gives up
        (Status.DEADLINE_EXCEEDED, 4, "ServiceError"),
        (Status.INTERNAL, 4, "InternalError"),
        (Status.RESOURCE_EXHAUSTED, 1, "plan or rate limit"),
        (Status.NOT_FOUND, 1, "NotFoundError"),
    ],
    ids=["unavailable", "deadline", "internal", "exhausted", "not-found"],
)
def test_create_failures_are_provider_failures_naming_the_cause(cloud, status, times, expected):
    cloud.fake.faults.add("SandboxCreateV2", status, times=times, message="injected for the test")
    result = run(cloud, None, benchmark="create")
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert expected in result.cause and "injected for the test" in result.cause
    error = next(e.data for e in result.evidence if e.kind == "create_error")
    if status == Status.RESOURCE_EXHAUSTED:
        assert error["code"] == "rate_limited"


def test_a_transient_unavailable_is_retried_by_the_sdk_and_the_trial_succeeds(cloud):
    cloud.fake.faults.add("SandboxCreateV2", Status.UNAVAILABLE, times=2)
    cloud.fake.faults.add("TaskExecStart", Status.UNAVAILABLE, times=2)
    result = run(cloud, None, benchmark="sequential-tti")
    assert result.outcome == "success", result.cause
    assert calls(cloud, "SandboxCreateV2") == 3 and calls(cloud, "TaskExecStart") >= 3


def test_the_plan_limit_answers_resource_exhausted(tmp_path):
    with running_modal(tmp_path, max_concurrent=1) as found:
        first = found.provider.create(SPEC)
        with pytest.raises(ProviderError) as refused:
            found.provider.create(SPEC)
        assert refused.value.code == "rate_limited" and "concurrent sandbox limit" in str(
            refused.value
        )
        found.provider.destroy(first)


def test_a_wrong_token_is_unauthorized_and_never_echoed(cloud):
    wrong = "as-" + "9" * 32
    provider = cloud.adapter(token_secret=wrong)
    with pytest.raises(ProviderError) as refused:
        provider.create(SPEC)
    assert refused.value.code == "unauthorized" and wrong not in str(refused.value)
    assert cloud.fake.token_secret not in str(refused.value)


def test_a_gone_or_unknown_sandbox_is_not_found_and_counts_as_gone(cloud):
    provider = cloud.provider
    assert provider.is_gone("sb-doesnotexist00000000")
    sandbox = provider.create(SPEC)
    lifecycle.readiness_check(provider, sandbox)
    provider.destroy(sandbox)
    provider.destroy(sandbox)  # twice: gone is gone
    assert provider.is_gone(sandbox.id)
    with pytest.raises(ProviderError) as ended:
        provider.exec(sandbox, ["true"], 10)
    assert not isinstance(ended.value, NotReady)


def test_a_command_past_its_limit_is_killed_and_the_sandbox_still_answers(cloud):
    provider = cloud.provider
    sandbox = provider.create(SPEC)
    try:
        lifecycle.readiness_check(provider, sandbox)
        with pytest.raises(ExecTimeout):
            provider.exec(sandbox, ["/bin/sh", "-c", "echo $$ > /tmp/slow; exec sleep 30"], 0.5)
        alive = "kill -0 $(cat /tmp/slow) 2>/dev/null && echo alive || echo dead"
        deadline = time.monotonic() + 10
        while provider.exec(sandbox, ["/bin/sh", "-c", alive], 10).stdout != b"dead\n":
            assert time.monotonic() < deadline, "the timed-out command was never killed"
            time.sleep(0.05)
        assert provider.exec(sandbox, ["true"], 10).exit_code == 0
    finally:
        provider.destroy(sandbox)


def test_an_unreachable_worker_is_not_ready_once_the_sdk_stops_retrying(cloud):
    provider = cloud.provider
    sandbox = provider.create(SPEC)
    try:
        lifecycle.readiness_check(provider, sandbox)
        # The SDK retries a router call 10 times (0.01 s doubling, about 10 s in all).
        cloud.fake.faults.add("TaskExecStart", Status.UNAVAILABLE, times=11)
        with pytest.raises(NotReady):
            provider.exec(sandbox, ["true"], 60)
        assert provider.exec(sandbox, ["true"], 10).exit_code == 0
    finally:
        provider.destroy(sandbox)


def test_a_sandbox_past_its_lifetime_is_gone_and_fails_the_trial(cloud):
    def procedure(ctx):
        ctx.exec(["true"], 10)
        time.sleep(3)  # the fake ends the sandbox at its 2 s timeout
        ctx.exec(["true"], 10)

    result = run(cloud, procedure, lifetime_s=2)
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert result.cleanup_verified  # gone is gone: terminating an ended sandbox is not an error
    [box] = cloud.fake.records.values()
    assert cloud.fake.result(box).status == box.extra["result"].GENERIC_STATUS_TIMEOUT


def test_a_destroy_that_fails_leaves_cleanup_unverified(cloud):
    cloud.fake.faults.add("SandboxTerminateV2", Status.PERMISSION_DENIED, message="cannot kill")
    result = run(cloud, None, benchmark="sequential-tti")
    assert result.outcome == "provider_failure" and not result.cleanup_verified
    assert "destroy" in result.cause and "cannot kill" in result.cause
    for sandbox in cloud.provider.list_sandboxes("bb-pytest-cloud"):
        cloud.provider.destroy(sandbox)


@pytest.mark.parametrize(
    "raised, outcome",
    [(BenchmarkError, "benchmark_error"), (Excluded, "excluded"), (Missed, "missed")],
)
def test_the_other_outcome_classes_pass_through_the_adapter(cloud, raised, outcome):
    def procedure(ctx):
        result = ctx.exec(["/bin/sh", "-c", "echo not-a-number"], 10)
        raise raised(f"after a successful command: {result.stdout!r}")

    result = run(cloud, procedure)
    assert result.outcome == outcome and "not-a-number" in result.cause
    assert result.cleanup_verified


def test_calls_share_one_connection_per_plane(cloud):
    provider = cloud.provider
    sandbox = provider.create(SPEC)
    lifecycle.readiness_check(provider, sandbox)
    ports = {port for _, port in cloud.fake.peers}
    assert len(ports) == 2  # the control plane's channel and the command router's
    for _ in range(5):
        provider.exec(sandbox, ["true"], 10)
    provider.list_sandboxes(SPEC.label)
    assert {port for _, port in cloud.fake.peers} == ports
    provider.destroy(sandbox)


def test_doctor_reports_the_api_the_app_and_the_image(cloud):
    checks = {check.name: check for check in cloud.provider.doctor()}
    assert all(check.ok for check in checks.values())
    assert "answered hello and app lookup" in checks["api"].detail
    assert "boxbench" in checks["api"].detail and "BOXBENCH_MODAL_IMAGE" in checks["image"].detail
    [wrong] = cloud.adapter(token_id="ak-wrong").doctor()
    assert (wrong.name, wrong.ok) == ("api", False) and "AuthError" in wrong.detail


def test_the_fake_refuses_what_it_does_not_serve_by_name(cloud):
    from grpclib.client import Channel
    from grpclib.exceptions import GRPCError
    from modal_proto import api_pb2
    from modal_proto.api_grpc import ModalClientStub

    async def snapshot():
        channel = Channel("127.0.0.1", cloud.fake.port)
        try:
            await ModalClientStub(channel).SandboxSnapshotFs(api_pb2.SandboxSnapshotFsRequest())
        finally:
            channel.close()

    with pytest.raises(GRPCError) as refused:
        asyncio.run(snapshot())
    assert refused.value.status == Status.UNIMPLEMENTED
    assert "does not serve SandboxSnapshotFs" in refused.value.message


def test_every_rpc_the_fake_serves_is_one_of_the_wheels_services():
    """The fake is built on the wheel's own service classes: an RPC renamed or dropped in a new
    SDK fails here, and every served RPC is handled by the fake, not refused."""
    from runner.providers.fakes.modal import CommandRouter, ControlPlane

    for servicer in (ControlPlane(None), CommandRouter(None)):
        mapping = {
            path.rsplit("/", 1)[1]: handler for path, handler in servicer.__mapping__().items()
        }
        assert servicer.served <= set(mapping)
        for name in servicer.served:
            assert mapping[name].func == getattr(servicer, name)
        refused = set(mapping) - servicer.served
        assert refused and all(mapping[name].func.__name__ == "refuse" for name in refused)


def test_stopping_the_fake_ends_every_handler_still_running(tmp_path):
    # A command still streaming when its test ends: its handler must end when the fake stops,
    # not when the loop is collected later, in another test ("Task was destroyed but it is
    # pending", an error once warnings are).
    def handlers(loop) -> int:
        try:
            tasks = list(asyncio.all_tasks(loop))
        except RuntimeError:  # the loop's task set changed while read from this thread
            return 0
        return sum(t.get_coro().__qualname__ == "request_handler" for t in tasks)

    def sleep_in(provider, sandbox):
        with contextlib.suppress(Exception):  # the fake stops under it
            provider.exec(sandbox, ["sleep", "30"], 60)

    with running_modal(tmp_path) as found:
        provider, fake = found.provider, found.fake
        sandbox = provider.create(SPEC)
        lifecycle.readiness_check(provider, sandbox)
        threading.Thread(target=sleep_in, args=(provider, sandbox), daemon=True).start()
        assert waiting.poll_until(lambda: handlers(fake._loop) > 0, 30, waiting.every(0.02))
    assert fake._loop.is_closed()  # closed only once every handler has ended
