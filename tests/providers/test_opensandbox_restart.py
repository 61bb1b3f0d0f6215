"""C5, restart the backend with sandboxes running: OpenSandbox's real server (a private one, on
the tests' own Podman service) stopped or killed and started again while its sandboxes run.

What it does on the Docker runtime: the sandboxes live on in the engine and the restarted server
lists them again, with their expiry; execd is reached on each sandbox's own published port, so
commands and files work even while the server is down, and only lifecycle calls (create, list,
get, destroy) fail then, as connection refused. A run in progress: the trial whose sandbox ran
through the restart succeeds, a create that met the server down is a provider failure naming the
refused connection and is refilled, and nothing is left behind."""

import threading

import pytest

from boxbench.models import Outcome, RunStatus
from runner import adapters, chain, steps
from runner.labels import run_prefix
from runner.plan import plan_run
from runner.providers.base import NotReady, Sandbox, SandboxSpec
from runner.providers.opensandbox import adapter, local
from runner.readiness import readiness_check
from tests.support.providers import OPENSANDBOX_LIMITS, create, provider_for

pytestmark = pytest.mark.podman
LIMITS = OPENSANDBOX_LIMITS


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_sandboxes_are_still_listed_and_usable_after_the_server_restarts(server, kill):
    provider = server.provider()
    sandboxes = [create(provider, SandboxSpec(1, 512, server.label, 300)) for _ in range(2)]
    for sandbox in sandboxes:
        readiness_check(provider, sandbox, LIMITS.readiness)
        provider.upload(sandbox, "/app/kept.txt", sandbox.id.encode())
        started = provider.exec(sandbox, ["/bin/sh", "-c", "sleep 600 >/dev/null 2>&1 &"], 30)
        assert started.exit_code == 0
    expiry = {s.id: provider.get(s.id).expires_at for s in sandboxes}

    server.stop(kill)
    with pytest.raises(NotReady, match="list: .*Connection refused"):
        provider.list_sandboxes(server.label)
    # execd answers on the sandbox's own port: commands go on while the server is down.
    assert provider.exec(sandboxes[0], ["true"], 30).exit_code == 0
    server.start()

    assert sorted(s.id for s in provider.list_sandboxes(server.label)) == sorted(expiry)
    for sandbox in sandboxes:
        info = provider.get(sandbox.id)
        assert info.status.state == "Running" and info.expires_at == expiry[sandbox.id]
        assert provider.download(sandbox, "/app/kept.txt") == sandbox.id.encode()
        sleeping = provider.exec(sandbox, ["pgrep", "-x", "-f", "sleep 600"], 30)
        assert sleeping.exit_code == 0, "the sandbox's own process did not survive"
        provider.destroy(sandbox)
        assert provider.is_gone(sandbox.id)
    assert provider.list_sandboxes(server.label) == []
    print(f"server down {server.downtimes[0]:.1f} s; 2 sandboxes listed and usable after")


class RestartingProvider:
    """The adapter, with the server restarted at set points of a run: killed during the first
    trial's procedure (its 15th command), so that trial's sandbox runs on and its destroy meets
    the server down (started again a second later, while the adapter tries the destroy again);
    then killed at the second create, which meets it down, and started again before that
    create's failure reaches the lifecycle. The other creates are tried once more on Podman
    4.3's broken pipe (tests/support/providers.py)."""

    KILL_AT_EXEC, DOWN_AT_CREATE = 15, 2

    def __init__(self, server):
        self.server = server
        self.adapter = server.provider()
        self.execs = self.creates = 0
        self.destroys_while_down = 0

    def __getattr__(self, name):
        return getattr(self.adapter, name)

    def exec(self, *args, **kwargs):
        self.execs += 1
        if self.execs == self.KILL_AT_EXEC:
            self.server.stop(kill=True)
        return self.adapter.exec(*args, **kwargs)

    def destroy(self, sandbox):
        if self.server.down_since is not None:
            self.destroys_while_down += 1
            starting = threading.Timer(1.0, self.server.start)
            starting.start()
            try:
                return self.adapter.destroy(sandbox)
            finally:
                starting.join()
                self.server.restarts += 1
        return self.adapter.destroy(sandbox)

    def create(self, spec):
        self.creates += 1
        if self.creates != self.DOWN_AT_CREATE:
            return create(self.adapter, spec)
        self.server.stop(kill=True)
        try:
            return self.adapter.create(spec)
        finally:
            self.server.start()
            self.server.restarts += 1


@pytest.mark.django_db(transaction=True)
def test_a_run_through_restarts_ends_its_affected_trial_honestly_and_leaves_nothing(
    server, monkeypatch, settings
):
    settings.RUNNER_JOB_HOST_CPUS = 256
    provider = RestartingProvider(server)
    monkeypatch.setattr(adapters, "provider_factory", lambda slug: provider)
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    # Other tests' sandboxes on the same engine are listed too: they are not this run's.
    run = plan_run(
        "c5",
        benchmarks=["latency-per-call"],
        providers=["opensandbox"],
        trials=2,
        seed=1,
        concurrency=1,
        allow_busy_account=True,
    )
    run.transition(RunStatus.RUNNING)

    steps.execute_chain(run.pk, "opensandbox")

    run.refresh_from_db()
    assert server.restarts == 2 and provider.creates == 3 and provider.destroys_while_down == 1
    through, refused, refill = run.trials.order_by("seq")
    # Its sandbox ran through the restart, and its destroy waited for the server.
    assert through.outcome == Outcome.SUCCESS, through.cause
    assert sum(name.startswith("latency_ms.call_") for name in through.metrics) == 50
    assert (refused.outcome, refused.owner) == (Outcome.PROVIDER_FAILURE, "provider")
    assert "create" in refused.cause and "Connection refused" in refused.cause
    assert refill.replaces_id == refused.pk and refill.outcome == Outcome.SUCCESS
    assert run.status == RunStatus.COMPLETED
    for trial in (through, refused, refill):
        assert trial.evidence.get(kind="lifecycle").data["cleanup_verified"] is True
    prefix = run_prefix(run.pk)
    assert [s for s in provider.list_sandboxes() if s.label.startswith(prefix)] == []
    downtimes = ", ".join(f"{d:.1f} s" for d in server.downtimes)
    print(f"server down {downtimes}; the refused create: {refused.cause}")


def test_a_destroy_gives_up_once_the_server_stays_away(opensandbox_stack, monkeypatch):
    monkeypatch.setattr(adapter, "DESTROY_RETRY_S", 3.0)
    nobody = provider_for(opensandbox_stack, url=f"127.0.0.1:{local.free_port()}")
    calls, call = [], nobody._call

    def counted(operation, *args, **kwargs):
        calls.append(operation)
        return call(operation, *args, **kwargs)

    monkeypatch.setattr(nobody, "_call", counted)
    with pytest.raises(NotReady, match="destroy: .*Connection refused"):
        nobody.destroy(Sandbox(id="lost", label="pytest"))
    assert len(calls) >= 2 and set(calls) == {"destroy"}  # tried again, then gave up
