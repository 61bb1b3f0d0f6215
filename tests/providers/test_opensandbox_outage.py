"""C4 against OpenSandbox's real server (a private one, on the tests' own Podman service): the
server killed at a run's second create and started again only after a while. The refused create
is a provider failure, refilled; the chain waits for the server instead of spending the run's
refills while it is away, and the run completes with every trial."""

import threading

import pytest

from boxbench.models import Outcome, RunStatus
from runner import adapters, chain, steps
from runner.labels import run_prefix
from runner.plan import plan_run
from tests.support.providers import OPENSANDBOX_LIMITS as LIMITS
from tests.support.providers import create

pytestmark = pytest.mark.podman
AWAY_S = 10.0


class AwayAtTheSecondCreate:
    """The adapter, with the server killed at the second create and started again `AWAY_S`
    later by a timer: without a wait, the next creates would meet it down too."""

    def __init__(self, private):
        self.server = private
        self.adapter = private.provider()
        self.creates = 0
        self.comes_back: threading.Timer | None = None

    def __getattr__(self, name):
        return getattr(self.adapter, name)

    def create(self, spec):
        self.creates += 1
        if self.creates != 2:
            return create(self.adapter, spec)
        self.server.stop(kill=True)
        self.comes_back = threading.Timer(AWAY_S, self._start)
        self.comes_back.start()
        return self.adapter.create(spec)

    def _start(self):
        self.server.start()
        self.server.restarts += 1


@pytest.mark.django_db(transaction=True)
def test_a_run_waits_for_a_server_that_stays_away_and_completes(
    server,
    monkeypatch,
    settings,
):
    settings.RUNNER_JOB_HOST_CPUS = 256
    settings.RUNNER_BACKEND_WAIT_S = 90
    provider = AwayAtTheSecondCreate(server)
    monkeypatch.setattr(adapters, "provider_factory", lambda slug: provider)
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    # Other tests' sandboxes on the same engine are listed too: they are not this run's.
    run = plan_run(
        "c4",
        benchmarks=["sequential-tti"],  # one create a trial (Create adds a layer's)
        providers=["opensandbox"],
        trials=3,
        seed=1,
        concurrency=1,
        allow_busy_account=True,
    )
    run.transition(RunStatus.RUNNING)

    steps.execute_chain(run.pk, "opensandbox")

    provider.comes_back.join(120)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and server.restarts == 1
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 3
    refused = run.trials.get(outcome=Outcome.PROVIDER_FAILURE)
    assert "Connection refused" in refused.cause
    assert refused.evidence.get(kind="create_error").data["unreachable"] == "connection refused"
    assert refused.replaced_by.get().outcome == Outcome.SUCCESS
    assert run.trials.count() == 4 and provider.creates == 4  # one refused create, no other
    [wait] = run.manifest["backend_waits"]["opensandbox"]
    assert wait["back"] and wait["trial_seq"] == refused.seq and wait["probes"] >= 2
    assert wait["waited_s"] >= AWAY_S - 1
    prefix = run_prefix(run.pk)
    assert [s for s in provider.list_sandboxes() if s.label.startswith(prefix)] == []
    print(f"server down {server.downtimes[0]:.1f} s; the chain waited {wait['waited_s']} s")
