"""A trial's cleanup: every sandbox it made destroyed and confirmed gone, then every snapshot
and temporary image deleted and confirmed gone; a trial is a success only then (the common
methodology, "Trial Lifecycle").

Runs after the trial's context is closed, so no new create can start; a create still in flight
(past its limit, or started by a procedure that was cut short) is waited for, and its sandbox
destroyed too. Every step is kept as cleanup evidence on the trial's result.
"""

from __future__ import annotations

import time

from runner import waiting
from runner.ledger import SandboxEntry, SandboxLedger
from runner.limits import Limits, Timer
from runner.outcomes import EvidenceKind, Outcome, Owner
from runner.results import EvidenceRecord, TrialResult
from runner.trial_failures import CUT_SHORT
from runner.watchdog import Overran, call_with_limit

# Confirming a destroyed sandbox gone: asked at once, then after 5 ms doubling up to 0.5 s, so a
# fast provider is confirmed within milliseconds and a slow one is not asked more than twice a
# second.
GONE_BACKOFF = waiting.Backoff(first_s=0.005, factor=2, cap_s=0.5)
# A create still in flight when the trial ended is looked at every 10 ms, within its grace.
LATE_CREATE_POLL = waiting.every(0.01)


def clean_up(
    ledger: SandboxLedger, provider, destroy_limit_s: float, result: TrialResult, limits: Limits
) -> None:
    """Destroy every sandbox in `ledger` and confirm each one gone, then its snapshots."""
    cleaned = 0
    creating = 0

    def no_create_in_flight() -> bool:
        """Clean every sandbox not cleaned yet, again until none is new; True if no create is
        still running."""
        nonlocal cleaned, creating
        while True:
            todo, creating = ledger.since(cleaned)
            if not todo:
                return not creating
            for entry in todo:
                cleaned += 1
                _clean_entry(provider, entry, destroy_limit_s, result, limits)

    # The grace starts once every sandbox known so far is cleaned; a sandbox that a late create
    # returns within it is cleaned too.
    if not no_create_in_flight() and not waiting.poll_until(
        no_create_in_flight, limits.late_create_grace_s, LATE_CREATE_POLL, limits.timer
    ):
        result.cleanup_verified = False
        cause = (
            f"cleanup not verified: {creating} create call(s) still running "
            f"{limits.late_create_grace_s:g} s after the trial ended"
        )
        result.fail(Outcome.PROVIDER_FAILURE, Owner.PROVIDER, cause)
        result.evidence.append(
            EvidenceRecord(EvidenceKind.CLEANUP, {"creates_in_flight": creating})
        )
    result.held = ledger.held_spans(time.time())
    # After the sandboxes: an engine refuses to delete an image a container still runs from.
    for snapshot_id in ledger.snapshots():
        _clean_snapshot(provider, snapshot_id, result, limits)


def _clean_snapshot(provider, snapshot_id: str, result: TrialResult, limits: Limits) -> None:
    """Delete one snapshot or temporary image and confirm it gone, or the trial fails."""
    try:
        provider.delete_snapshot(snapshot_id)
    except Exception as exc:  # noqa: BLE001 - any delete error leaves cleanup unverified
        confirmed, error = False, f"{type(exc).__name__}: {exc}"
    else:

        def gone() -> bool:
            try:
                return provider.snapshot_gone(snapshot_id)
            except Exception:  # noqa: BLE001 - an error is not a confirmation; keep asking
                return False

        confirmed = waiting.poll_until(gone, limits.gone_timeout_s, GONE_BACKOFF, limits.timer)
        error = "" if confirmed else f"still exists {limits.gone_timeout_s:g} s after delete"
    result.evidence.append(
        EvidenceRecord(EvidenceKind.CLEANUP, {"snapshot": snapshot_id, "confirmed_gone": confirmed})
    )
    if not confirmed:
        result.cleanup_verified = False
        result.fail(
            Outcome.PROVIDER_FAILURE,
            Owner.PROVIDER,
            f"cleanup not verified: snapshot {snapshot_id}: {error}",
        )


def _clean_entry(
    provider, entry: SandboxEntry, destroy_limit_s: float, result: TrialResult, limits: Limits
) -> None:
    sandbox = entry.sandbox
    if entry.overran:
        # Its destroy is still hanging: calling it again would block the worker once more.
        result.cleanup_verified = False
        result.evidence.append(
            EvidenceRecord(
                EvidenceKind.CLEANUP, {"sandbox": sandbox.id, "error": "destroy overran"}
            )
        )
        return
    if not entry.destroyed:
        try:
            destroy_entry(provider, entry, destroy_limit_s)
        except Overran as exc:
            result.cut_short = True
            result.cleanup_verified = False
            result.fail(Outcome.PROVIDER_FAILURE, Owner.UNKNOWN, f"{CUT_SHORT}{exc} ({sandbox.id})")
            result.evidence.append(
                EvidenceRecord(EvidenceKind.CLEANUP, {"sandbox": sandbox.id, "error": str(exc)})
            )
            return
        except Exception as exc:  # noqa: BLE001 - any destroy error leaves cleanup unverified
            result.cleanup_verified = False
            result.fail(Outcome.PROVIDER_FAILURE, Owner.PROVIDER, f"destroy {sandbox.id}: {exc}")
            result.evidence.append(
                EvidenceRecord(EvidenceKind.CLEANUP, {"sandbox": sandbox.id, "error": str(exc)})
            )
            return
    confirmed = wait_gone(provider, sandbox.id, limits.gone_timeout_s, limits.timer)
    result.evidence.append(
        EvidenceRecord(
            EvidenceKind.CLEANUP,
            {"sandbox": sandbox.id, "destroy_ms": entry.destroy_ms, "confirmed_gone": confirmed},
        )
    )
    if not confirmed:
        result.cleanup_verified = False
        result.fail(
            Outcome.PROVIDER_FAILURE,
            Owner.PROVIDER,
            f"cleanup not verified: sandbox {sandbox.id} still exists "
            f"{limits.gone_timeout_s:g} s after destroy",
        )


def destroy_entry(provider, entry: SandboxEntry, limit_s: float) -> float:
    """Destroy one sandbox under the destroy limit; returns its time from adapter entry (ms).

    Raises Overran (and marks the entry, so nobody calls destroy on it again) or the adapter's
    error.
    """
    try:
        call = call_with_limit(lambda: provider.destroy(entry.sandbox), limit_s, "destroy")
    except Overran:
        entry.mark_overran(time.time())
        raise
    at = time.time()
    if call.error is not None:
        entry.held_to = at
        raise call.error
    destroy_ms = call.elapsed_s * 1000.0
    entry.mark_destroyed(at, destroy_ms)
    return destroy_ms


def wait_gone(provider, sandbox_id: str, timeout_s: float, timer: Timer) -> bool:
    """Whether the provider confirms `sandbox_id` gone within `timeout_s`."""

    def gone() -> bool:
        try:
            return provider.is_gone(sandbox_id)
        except Exception:  # noqa: BLE001 - an error is not a confirmation; keep asking
            return False

    return waiting.poll_until(gone, timeout_s, GONE_BACKOFF, timer)
