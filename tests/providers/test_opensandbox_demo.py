"""Demo mode for OpenSandbox: no fake, its real server started on this machine for the run (on
the tests' Podman service, which carries the ulimit override), the run marked as a demo and
never published, and the server gone afterwards."""

import io

import httpx
import pytest
from django.core.management import CommandError, call_command

from boxbench import publishing
from boxbench.models import Run, Trial
from runner import chain
from runner.providers import demo
from runner.providers.opensandbox import local
from tests.providers.cloud.helpers import LIMITS

pytestmark = pytest.mark.podman


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_on_a_server_of_its_own_completes_and_is_never_published(
    opensandbox_stack, monkeypatch
):
    monkeypatch.setenv("BOXBENCH_OPENSANDBOX_DOCKER_HOST", opensandbox_stack.docker_host)
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    started = []
    original = demo.fake_class

    def recording(slug):
        cls = original(slug)

        class Recorded(cls):
            def start(self):
                started.append(super().start())
                return started[-1]

        return Recorded

    monkeypatch.setattr(demo, "fake_class", recording)
    out = io.StringIO()
    # The server lists every sandbox on its engine, and the tests' Podman service holds other
    # tests' live sandboxes (the restart tests' bystanders, say): the account is busy by design.
    with pytest.raises(CommandError, match="demo run"):
        call_command(
            "bench",
            "run",
            "--demo",
            "--provider",
            "opensandbox",
            "--benchmark",
            "create",
            "--trials",
            "2",
            "--publish",
            "--allow-busy-account",
            stdout=out,
        )
    run = Run.objects.get()
    assert run.status == "completed" and not run.published
    assert run.manifest["demo"]["providers"] == ["opensandbox"]
    assert Trial.objects.filter(run=run, outcome="success").count() == 2
    with pytest.raises(publishing.PublishRefused, match="demo run"):
        publishing.publish(run)
    (server,) = started
    assert server.stack.docker_host == opensandbox_stack.docker_host  # no Podman of its own
    with pytest.raises(httpx.TransportError):  # stopped with the run
        httpx.get(f"{server.stack.url}/health", timeout=2)


def test_a_stand_in_that_cannot_start_is_a_clear_refusal(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise local.LocalStackError("opensandbox-server is not installed")

    monkeypatch.setattr(local, "start_stack", refuse)
    refused = "opensandbox: its demo stand-in did not start: "
    with (
        pytest.raises(demo.DemoError, match=refused),
        demo.demo_session(["opensandbox"], root=str(tmp_path)),
    ):
        pass
    assert demo.settings_for("opensandbox") is None
