"""The sandbox ledger (runner/ledger.py) directly: what cleanup finds, what the trial is billed."""

from runner.ledger import SandboxLedger
from runner.providers.base import Sandbox, SandboxSpec

SPEC = SandboxSpec(cpus=2, memory_mib=2048, label="bb-t", lifetime_s=60)
PRICING = {"per_vcpu_second": 0.5, "per_gib_second": 0.25, "per_sandbox": 1.0}


def test_a_closed_ledger_refuses_a_create_but_takes_one_already_running():
    ledger = SandboxLedger()
    assert ledger.begin_create()
    ledger.close()
    assert not ledger.begin_create()
    assert ledger.since(0) == ([], 1)
    ledger.end_create(Sandbox("late", "bb-t", made_snapshots=["img-1"]), SPEC, held_from=10.0)
    entries, creating = ledger.since(0)
    assert [e.sandbox.id for e in entries] == ["late"] and creating == 0
    assert ledger.snapshots() == ["img-1"]


def test_a_failed_create_holds_nothing_and_is_no_longer_in_flight():
    ledger = SandboxLedger()
    ledger.begin_create()
    ledger.end_create(None, SPEC, held_from=10.0)
    assert ledger.since(0) == ([], 0) and ledger.sandbox_count() == 0


def test_spans_and_cost_run_to_the_destroy_or_to_now():
    ledger = SandboxLedger()
    for name in ("a", "b"):
        ledger.begin_create()
        ledger.end_create(Sandbox(name, "bb-t"), SPEC, held_from=100.0)
    first = ledger.entry(Sandbox("a", "bb-t"))
    assert first is not None and ledger.entry(Sandbox("c", "bb-t")) is None
    first.mark_destroyed(at=102.0, destroy_ms=5.0)
    assert ledger.held_spans(now=104.0) == [(100.0, 102.0), (100.0, 104.0)]
    # 2 vCPU x 0.5 + 2 GiB x 0.25 = 1.5 USD per second, plus 1 USD per sandbox: 2 s and 4 s.
    assert ledger.cost_usd(PRICING, now=104.0) == (2 * 1.5 + 1) + (4 * 1.5 + 1)
    assert ledger.cost_usd({"currency": "USD"}, now=104.0) is None
