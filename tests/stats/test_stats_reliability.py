"""Failure rates per operation (stats/reliability.py): Wilson intervals against published
figures, and each failed trial placed on its operation and cause class."""

import pytest

from stats.reliability import (
    Attempt,
    cause_class,
    failed_operation,
    merge,
    operations_of,
    rate,
    request_attempts,
    tally,
    trial_attempts,
    wilson,
)


@pytest.mark.parametrize(
    ("failures", "attempts", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (Wilson score).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_intervals_match_the_published_figures(failures, attempts, low, high):
    found = wilson(failures, attempts)
    assert found == pytest.approx((low, high), abs=5e-5)


def test_a_count_that_is_not_a_proportion_is_refused():
    with pytest.raises(ValueError, match="3 failures of 2 attempts"):
        wilson(3, 2)


def test_operations_follow_the_benchmarks_capabilities():
    assert operations_of(["exec"]) == ("create", "readiness", "command", "destroy")
    assert operations_of(["exec", "snapshot", "file_transfer"]) == (
        "create",
        "readiness",
        "command",
        "snapshot",
        "restore",
        "transfer",
        "destroy",
    )


@pytest.mark.parametrize(
    ("cause", "operation", "cls"),
    [
        ("create: HTTP 429 Too Many Requests", "create", "rate_limited"),
        ("create_3: rate_limited: 5 creates per second", "create", "rate_limited"),
        (
            "readiness check reached its 10 s deadline after 40 not-ready answers",
            "readiness",
            "stuck",
        ),
        ("readiness check failed: ConnectError: connection refused", "readiness", "transport"),
        ("restore: HTTP 503 Service Unavailable", "restore", "server_error"),
        ("fork: the adapter raised KeyError: 'id'", "fork", "other"),
        ("snapshot: a step hit its time limit: 600 s", "snapshot", "timeout"),
        ("upload: 502 bad gateway", "transfer", "server_error"),
        ("cleanup not verified: sandbox sb-1 still exists 60 s after destroy", "destroy", "stuck"),
        ("cut short: the procedure overran its 600 s limit", "command", "timeout"),
        ("cut short: destroy overran its 300 s limit (sb-1)", "destroy", "timeout"),
        ("the guest clock trailer is missing (exit code 137)", "command", "other"),
    ],
)
def test_a_cause_names_its_operation_and_class(cause, operation, cls):
    assert failed_operation(cause) == operation
    assert cause_class(cause) == cls


def test_a_failed_trial_attempted_what_came_before_and_still_destroys():
    ops = operations_of(["exec", "snapshot"])
    found = trial_attempts(ops, "provider_failure", "provider", "restore: HTTP 500")
    assert found == [
        Attempt("create"),
        Attempt("readiness"),
        Attempt("command"),
        Attempt("snapshot"),
        Attempt("restore", "provider", "server_error"),
        Attempt("destroy"),
    ]
    # A create that failed left nothing to destroy.
    assert trial_attempts(ops, "provider_failure", "provider", "create: HTTP 429") == [
        Attempt("create", "provider", "rate_limited")
    ]
    assert trial_attempts(ops, "excluded", "trace", "diverged") == []
    assert len(trial_attempts(ops, "success", "", "")) == len(ops)


def test_a_burst_request_is_an_attempt_at_create_readiness_and_destroy():
    ok = {"outcome": "ok", "created_ms": 10.0, "ready_ms": 20.0, "cause": ""}
    limited = {"outcome": "rate_limited", "created_ms": None, "ready_ms": None, "cause": "429"}
    stuck = {"outcome": "stuck", "created_ms": 10.0, "ready_ms": None, "cause": "never"}
    undeleted = {
        "outcome": "stuck",
        "created_ms": 10.0,
        "ready_ms": 20.0,
        "cause": "could not be deleted: destroy: HTTP 500",
    }
    assert [a.operation for a in request_attempts(ok)] == ["create", "readiness", "destroy"]
    assert request_attempts(limited) == [Attempt("create", "provider", "rate_limited")]
    assert request_attempts(stuck)[1] == Attempt("readiness", "provider", "stuck")
    assert request_attempts(undeleted)[-1] == Attempt("destroy", "provider", "stuck")
    assert request_attempts(undeleted)[1] == Attempt("readiness")


def test_the_rate_is_the_providers_failures_over_every_attempt():
    attempts = [Attempt("create")] * 37 + [
        Attempt("create", "provider", "timeout"),
        Attempt("create", "unknown", "timeout"),
        Attempt("create", "benchmark", "other"),
    ]
    entry = merge([tally(attempts[:20]), tally(attempts[20:])])["create"]
    figures = rate(entry)
    assert figures["attempts"] == 40 and figures["failures"] == 2
    assert figures["rate"] == 0.05
    # By hand: centre 0.089430, half-width 0.075609 (z = 1.959964).
    assert figures["ci_low"] == pytest.approx(0.013821, abs=1e-6)
    assert figures["ci_high"] == pytest.approx(0.165039, abs=1e-6)
    assert figures["by_owner"] == {"provider": 1, "unknown": 1, "benchmark": 1, "environment": 0}
    assert figures["by_class"]["timeout"] == 2 and figures["by_class"]["other"] == 1
    assert figures["label"] == ""


def test_below_the_floor_the_rate_is_not_measured():
    figures = rate(
        tally([Attempt("fork", "provider", "other")] * 3 + [Attempt("fork")] * 16)["fork"]
    )
    assert figures["attempts"] == 19 and figures["failures"] == 3
    assert figures["rate"] is None and figures["ci_low"] is None
    assert figures["label"] == "Not Measured"


def test_trials_that_went_alike_are_counted_together():
    one = [Attempt("create"), Attempt("readiness", "provider", "stuck")]
    assert tally(one, 3) == merge([tally(one)] * 3)
    assert tally(one, 3)["readiness"] == {"attempts": 3, "failures": {"provider": {"stuck": 3}}}
