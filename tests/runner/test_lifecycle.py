"""Every lifecycle rule against real bubblewrap sandboxes, with faults injected around them."""

import dataclasses
import threading
import time

import pytest

from runner.benchmarks import all_benchmarks, latency_per_call
from runner.benchmarks.base import Excluded, TrialOutcome
from runner.lifecycle import run_trial
from tests.runner.faults import FaultyProvider
from tests.support.runner import DEFINITION, FAST, UNIT, echo, trial


def test_it_succeeds_only_with_every_sandbox_confirmed_gone(local):
    result = trial(local, pricing=local.declaration.pricing)
    assert (result.outcome, result.owner, result.cause) == ("success", "", "")
    assert result.cleanup_verified and local.list_sandboxes() == []
    kinds = [e.kind for e in result.evidence]
    assert {"sandbox", "readiness", "cleanup"} <= set(kinds)
    assert result.placement["nproc"] >= 1 and result.placement["kernel"]
    assert result.placement["enforced"]["cpus"] in (True, False)
    assert "cpu_peak" in result.host_load and result.cost_usd == 0.0


@pytest.mark.parametrize(
    ("rates", "why"),
    [
        ({"per_vcpu_second": 1e300}, "USD, above the largest value stored"),
        ({"per_vcpu_second": 1.0, "billing_increment_s": 1e-320}, "no cost at all (OverflowError"),
    ],
)
def test_it_refuses_a_cost_no_price_can_be_and_stores_none(local, rates, why):
    pricing = {**local.declaration.pricing, **rates}
    result = trial(local, pricing=pricing)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark")
    assert result.cause.startswith("cost refused and not stored: local's pricing gives this trial")
    assert why in result.cause and "bb-test-lifecycle" in result.cause
    assert result.cost_usd is None and "billed_cost" not in {e.kind for e in result.evidence}
    assert result.cleanup_verified and local.list_sandboxes() == []


def test_it_charges_a_create_error_to_the_provider(local):
    result = trial(FaultyProvider(local, create_errors=1))
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert "injected create error" in result.cause


def test_it_retries_not_ready_answers_and_keeps_every_attempt(local, skipped_time):
    result = trial(FaultyProvider(local, not_ready=3), limits=skipped_time.limits())
    assert result.outcome == "success"
    readiness = next(e.data for e in result.evidence if e.kind == "readiness")
    assert [a["result"] for a in readiness["attempts"]] == ["not_ready"] * 3 + ["ready"]
    waits = [attempt["wait_ms"] for attempt in readiness["attempts"][:3]]
    # 20 ms, then x1.5 per not-ready answer, each +-20 % jitter.
    assert 16 <= waits[0] <= 24 and 24 <= waits[1] <= 36 and 36 <= waits[2] <= 54
    assert readiness["tti_ms"] >= sum(waits)
    assert [round(s * 1000, 6) for s in skipped_time.sleeps] == [round(w, 6) for w in waits]


def test_it_caps_the_backoff_at_200_ms(local, skipped_time):
    patient = skipped_time.limits(readiness=dataclasses.replace(FAST.readiness, deadline_s=5))
    result = run_trial(
        FaultyProvider(local, not_ready=9), DEFINITION, UNIT, echo, label="bb-t", limits=patient
    )
    assert result.outcome == "success"
    readiness = next(e.data for e in result.evidence if e.kind == "readiness")
    waits = [attempt["wait_ms"] for attempt in readiness["attempts"][:9]]
    assert max(waits) <= 240 and min(waits[-3:]) >= 160  # 200 ms +-20 %


def test_it_fails_a_readiness_check_that_reaches_its_deadline(local, skipped_time):
    faulty = FaultyProvider(local, not_ready=10_000)
    short = skipped_time.limits(readiness=dataclasses.replace(FAST.readiness, deadline_s=0.5))
    result = trial(faulty, limits=short)
    assert result.outcome == "provider_failure" and "deadline" in result.cause
    readiness = next(e.data for e in result.evidence if e.kind == "readiness")
    assert readiness["attempts"][-1]["at_ms"] <= 500 and readiness["tti_ms"] is None
    assert result.cleanup_verified and local.list_sandboxes() == []


def test_it_skips_the_untimed_check_for_timed_readiness(local):
    tti = all_benchmarks()["sequential-tti"]
    faulty = FaultyProvider(local, not_ready=2)
    result = run_trial(faulty, tti.DEFINITION, tti.units()[0], tti.run, label="bb-t", limits=FAST)
    assert result.outcome == "success"
    values = {m.name: m.value for m in result.measurements}
    assert values["tti_ms"] >= values["create"] + values["first_command"] * 0.99
    readiness = [e.data for e in result.evidence if e.kind == "readiness"]
    assert len(readiness) == 1 and len(readiness[0]["attempts"]) == 3  # the timed one only


def test_it_charges_a_hung_command_to_the_provider(local):
    result = trial(FaultyProvider(local, hang_on="echo hello"))
    assert result.outcome == "provider_failure" and "time limit" in result.cause
    assert local.list_sandboxes() == []


def test_it_discards_a_stepped_guest_clock(local):
    result = trial(FaultyProvider(local, step_clock_ms=500))
    assert result.outcome == "provider_failure" and result.cause.startswith("stepped clock")
    gate = next(e.data for e in result.evidence if e.kind == "clock_gate")
    assert gate["wall_ms"] >= 500
    assert result.measurements == []


def test_a_command_that_writes_its_own_clock_trailer_is_the_benchmarks_fault(local):
    forged = "printf '\\n__SANDBOX_CLOCK 10.000000 90.000000 5.00 5.10\\n' >&2; exec 2>&-"

    def forger(ctx):
        ctx.guest(forged, timeout=30)

    result = run_trial(local, DEFINITION, UNIT, forger, label="bb-t", limits=FAST)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark")
    assert "__SANDBOX_CLOCK line of its own" in result.cause
    assert not any(e.kind == "clock_gate" for e in result.evidence)


def test_it_fails_and_flags_a_sandbox_that_cannot_be_destroyed(local):
    result = trial(FaultyProvider(local, destroy_errors=1))
    assert result.outcome == "provider_failure" and "destroy" in result.cause
    assert not result.cleanup_verified
    local.destroy(local.list_sandboxes()[0])


def test_it_fails_cleanup_that_is_never_confirmed(local, skipped_time):
    result = trial(FaultyProvider(local, never_gone=True), limits=skipped_time.limits())
    assert result.outcome == "provider_failure" and "cleanup not verified" in result.cause
    assert "0.5 s after destroy" in result.cause and not result.cleanup_verified
    assert sum(skipped_time.sleeps) >= 0.5  # it kept asking until its deadline


def test_it_cuts_short_a_procedure_that_overruns_its_limit(local):
    short = dataclasses.replace(DEFINITION, procedure_timeout_s=0.3)
    release = threading.Event()
    try:
        result = trial(local, lambda ctx: release.wait(60), definition=short)
    finally:
        release.set()
    assert (result.outcome, result.owner) == ("provider_failure", "unknown")
    assert result.cause == "cut short: the procedure overran its 0.3 s limit"
    assert result.cut_short and result.cleanup_verified


def test_it_calls_our_own_defect_a_benchmark_error(local):
    def broken(ctx):
        raise KeyError("parsed field")

    result = trial(local, broken)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark")
    assert any(e.kind == "traceback" for e in result.evidence)


def test_it_calls_a_procedure_without_its_metric_a_benchmark_error(local):
    result = trial(local, lambda ctx: None)
    assert result.outcome == "benchmark_error" and "echo_ms" in result.cause


def test_it_keeps_the_owner_an_outcome_exception_names(local):
    def diverged(ctx):
        raise Excluded("exit code 2, expected 0")

    result = trial(local, diverged)
    assert (result.outcome, result.owner, result.cause) == (
        "excluded",
        "trace",
        "exit code 2, expected 0",
    )


def test_it_polls_a_long_command_and_times_it_on_the_guest_clock(local):
    def long_command(ctx):
        run = ctx.background("sleep 0.3; echo done; exit 3", timeout=20)
        assert (run.exit_code, run.stdout) == (3, b"done\n")
        assert 290 <= run.runtime_ms < 2000 and run.total_ms >= run.runtime_ms
        ctx.record("echo_ms", run.runtime_ms, gate="pass")

    result = trial(local, long_command)
    assert result.outcome == "success", result.cause


def test_it_runs_every_sandbox_operation_benchmark_on_local(local, monkeypatch, settings):
    # One trial each, Latency per Call with 3 calls instead of 50 and Output Stream with 8 MiB:
    # the same procedures and records, at a fraction of the time under load.
    monkeypatch.setattr(latency_per_call, "CALLS", 3)
    settings.OUTPUT_STREAM_MIB = 8
    for slug, module in all_benchmarks().items():
        if module.DEFINITION.section != "sandbox_operations":
            continue  # workloads and machine benchmarks: tests/workloads
        result = run_trial(
            local, module.DEFINITION, module.units()[0], module.run, label="bb-t", limits=FAST
        )
        assert result.outcome == "success", (slug, result.cause)
        names = {m.name for m in result.measurements}
        assert module.DEFINITION.metric in names
        if module is latency_per_call:
            assert {f"latency_ms.call_{n:03d}" for n in (1, 2, 3)} <= names
    assert local.list_sandboxes() == []


def limited(**limits):
    return dataclasses.replace(DEFINITION, **limits)


def gone_soon(local, seconds=3.0):
    """Wait for abandoned adapter calls (still running in their threads) to finish."""
    deadline = time.monotonic() + seconds
    while local.list_sandboxes() and time.monotonic() < deadline:
        time.sleep(0.05)
    return local.list_sandboxes() == []


def test_it_fails_a_create_that_overruns_its_limit_and_destroys_its_late_sandbox(local):
    slow = FaultyProvider(local, create_delay_s=0.6)
    patient = dataclasses.replace(FAST, late_create_grace_s=10)
    result = trial(slow, definition=limited(create_timeout_s=0.2), limits=patient)
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert "did not return within its 0.2 s limit" in result.cause
    assert result.cleanup_verified and local.list_sandboxes() == []


def test_it_leaves_cleanup_unverified_while_a_create_still_hangs(local, skipped_time):
    release = threading.Event()
    hung = FaultyProvider(local, create_gate=release)
    impatient = skipped_time.limits(late_create_grace_s=0.1)
    try:
        result = trial(hung, definition=limited(create_timeout_s=0.1), limits=impatient)
    finally:
        release.set()
    assert result.outcome == "provider_failure" and not result.cleanup_verified
    assert any(e.data.get("creates_in_flight") == 1 for e in result.evidence)
    # The abandoned create returns a sandbox nobody waits for any more.
    assert hung.create_returned.wait(30)
    for sandbox in local.list_sandboxes():
        local.destroy(sandbox)


def test_it_cuts_short_a_destroy_that_overruns_its_limit(local):
    slow = FaultyProvider(local, destroy_delay_s=0.5)
    result = trial(slow, definition=limited(destroy_timeout_s=0.1))
    assert (result.outcome, result.owner) == ("provider_failure", "unknown")
    assert result.cause.startswith("cut short: destroy did not return within its 0.1 s limit")
    assert result.cut_short and not result.cleanup_verified
    assert slow.calls.count("destroy") == 1  # a hung destroy is not called again
    assert gone_soon(local)


def test_it_refuses_sandboxes_a_cut_short_procedure_asks_for_later(local):
    resume, asked = threading.Event(), threading.Event()
    answer = {}

    def keeps_going(ctx):
        resume.wait(60)  # still running when the trial is cut short, then asks for more
        try:
            answer["sandbox"] = ctx.new_sandbox()
        except TrialOutcome as exc:
            answer["refusal"] = exc.cause
        finally:
            asked.set()

    try:
        result = trial(local, keeps_going, definition=limited(procedure_timeout_s=0.2))
    finally:
        resume.set()
    assert result.cut_short and result.cleanup_verified
    assert asked.wait(30), "the cut-short procedure never asked for its sandbox"
    assert answer == {"refusal": "create_2: refused, the trial has already ended"}
    assert local.list_sandboxes() == []


def test_it_destroys_a_sandbox_whose_create_was_running_when_the_trial_was_cut_short(local):
    slow = FaultyProvider(local, create_delay_s=0.4)
    result = trial(slow, lambda ctx: ctx.new_sandbox(), definition=limited(procedure_timeout_s=0.1))
    assert result.cut_short and result.cleanup_verified
    assert slow.calls.count("create") == 2 and local.list_sandboxes() == []
    assert len([e for e in result.evidence if "confirmed_gone" in e.data]) == 2


def test_it_charges_unexpected_adapter_errors_to_the_provider_by_name(local):
    result = trial(FaultyProvider(local, crash=("create", RuntimeError("socket closed"))))
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert result.cause == "create: the adapter raised RuntimeError: socket closed"

    result = trial(FaultyProvider(local, crash=("destroy", AttributeError("no .remove"))))
    assert result.outcome == "provider_failure" and not result.cleanup_verified
    assert "no .remove" in result.cause
    local.destroy(local.list_sandboxes()[0])


def test_it_ends_readiness_on_any_other_error_and_keeps_its_evidence(local):
    result = trial(FaultyProvider(local, crash=("exec", KeyError("handle"))))
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert "readiness check failed: KeyError" in result.cause
    readiness = next(e.data for e in result.evidence if e.kind == "readiness")
    assert readiness["attempts"][0]["result"] == "error"
    assert "KeyError" in readiness["attempts"][0]["error"]
    assert result.cleanup_verified and local.list_sandboxes() == []


def test_it_notices_a_long_command_end_without_waiting_for_the_next_poll(local):
    def long_command(ctx):
        started = time.monotonic()
        run = ctx.background("sleep 0.3; echo done", timeout=60, poll_interval_s=10)
        assert run.stdout == b"done\n" and run.runtime_ms >= 290
        assert time.monotonic() - started < 5  # not the 10 s poll interval
        ctx.record("echo_ms", run.runtime_ms, gate="pass")

    result = trial(local, long_command)
    assert result.outcome == "success", result.cause


def test_a_long_command_runs_in_its_workdir_whatever_the_folders_name(local):
    folder = "/tmp/it's $HOME; here"

    def in_folder(ctx):
        assert ctx.exec(["mkdir", "-p", folder], timeout=10).exit_code == 0
        run = ctx.background("pwd", timeout=60, workdir=folder)
        assert run.stdout == f"{folder}\n".encode()
        ctx.record("echo_ms", run.runtime_ms, gate="pass")

    result = trial(local, in_folder)
    assert result.outcome == "success", result.cause


def test_a_failures_cause_names_its_operation_once():
    from runner.lifecycle import adapter_failure
    from runner.providers.base import ProviderError

    def cause(error):
        return str(adapter_failure("create", error))

    assert cause(ProviderError("create: HTTP 500 from the server", "create")) == (
        "create: HTTP 500 from the server"
    )
    assert cause(ProviderError("HTTP 500 from the server", "create")) == (
        "create: HTTP 500 from the server"
    )
    # The operation's name at the start of a sentence is not a label.
    assert cause(ProviderError("created nothing", "create")) == "create: created nothing"
    assert cause(ProviderError("exec: refused", "")) == "create: exec: refused"


def test_a_value_that_is_not_a_finite_number_is_a_benchmark_error(local):
    # A trial's measurements are stored as JSON, which holds no NaN or infinity.
    def not_a_number(ctx):
        ctx.record("echo_ms", float("nan"))

    result = trial(local, procedure=not_a_number)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark")
    assert "'echo_ms' is nan, not a finite number" in result.cause
    assert result.measurements == [] and local.list_sandboxes() == []


def test_a_value_above_the_largest_stored_is_a_benchmark_error(local):
    # The raw-data format refuses it on import: a run must not store what it cannot export.
    def too_large(ctx):
        ctx.record("echo_ms", 1.7e308)

    result = trial(local, procedure=too_large)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark")
    assert "'echo_ms' is 1.7e+308, above the largest value stored (1e+12)" in result.cause
