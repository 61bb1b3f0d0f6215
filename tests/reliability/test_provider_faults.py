"""C7: a provider that errors, times out and creates slowly leaks nothing past one cleanup pass."""

import io
import time

import pytest
from django.core.management import call_command

from boxbench import metrics
from boxbench.models import Outcome, RunStatus, TrialState
from runner import steps
from runner.plan import plan_run
from runner.providers.base import ProviderError
from tests.runner.faults import FaultyProvider

pytestmark = pytest.mark.django_db(transaction=True)


class LostCreates(FaultyProvider):
    """The first `lost` creates are slow, then time out for the caller although the backend
    made the sandbox: the instance is left behind with its batch label, which nobody tracks."""

    def __init__(self, inner, lost: int, delay_s: float, **faults):
        super().__init__(inner, **faults)
        self.lost, self.delay_s = lost, delay_s

    def create(self, spec):
        if self.lost:
            self.lost -= 1
            time.sleep(self.delay_s)
            self.inner.create(spec)
            raise ProviderError(f"create timed out after {self.delay_s:g} s", "create", "timeout")
        return super().create(spec)


def test_it_leaves_no_sandbox_after_one_cleanup_pass(chain_provider, local, monkeypatch):
    from boxbench.cli import cleanup

    chain_provider(
        LostCreates(
            local,
            lost=2,
            delay_s=0.3,
            create_errors=1,
            create_error_code="rate_limited",
            destroy_errors=1,
        )
    )
    run = plan_run(
        "faults", benchmarks=["create"], providers=["local"], trials=4, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()

    # Every trial failed: the run ends failed, saying so, never "completed" with no result.
    assert run.status == RunStatus.FAILED
    assert run.transitions.get(to_status=RunStatus.FAILED).note.startswith("no trial succeeded")
    assert not run.trials.filter(state__in=[TrialState.RUNNING, TrialState.QUEUED]).exists()
    failures = run.trials.filter(outcome=Outcome.PROVIDER_FAILURE)
    assert {t.cause for t in failures} >= {
        "create: create timed out after 0.3 s",
        "create: injected create error",
    }
    leaked = local.list_sandboxes()
    assert len(leaked) == 3  # two lost creates and the sandbox whose destroy failed
    scraped = metrics.render(metrics.collect())
    assert 'boxbench_live_sandboxes{provider="local",owner="run"}' in scraped

    monkeypatch.setattr(cleanup, "load_all", lambda: {"local": local.declaration})
    monkeypatch.setattr(cleanup, "get_provider", lambda slug, declaration: local)
    out = io.StringIO()
    call_command("bench", "cleanup", "--max-age", "0", stdout=out)

    assert "removed 3 leftover sandbox(es)" in out.getvalue()
    assert local.list_sandboxes() == []
    assert all(local.is_gone(s.id) for s in leaked)
