"""Fixtures for the cloud adapters' tests: each adapter against its loopback fake.

`cloud` is parametrized by provider, so test ids carry the provider's name (`-k e2b`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from runner import chain, lifecycle
from runner.declarations import get_declaration
from runner.limits import Limits
from runner.providers import get_provider
from runner.providers.fakes.daytona import DaytonaFake
from runner.providers.fakes.e2b import E2BFake
from runner.providers.fakes.vercel import VercelFake
from runner.readiness import ReadinessPolicy

FAKES = {"e2b": E2BFake, "daytona": DaytonaFake, "vercel": VercelFake}
CLOUD = sorted(FAKES)
LIMITS = Limits(readiness=ReadinessPolicy(deadline_s=5.0), poll_interval_s=0.05, gone_timeout_s=5.0)


@dataclass
class Cloud:
    slug: str
    fake: object
    provider: object

    def adapter(self, **overrides):
        return get_provider(self.slug, settings={**self.fake.adapter_settings(), **overrides})

    @property
    def api(self):
        return self.fake.api

    @property
    def data_plane(self):
        """The server of commands and files (Vercel has one server for both planes)."""
        return getattr(
            self.fake, {"e2b": "proxy", "daytona": "toolbox", "vercel": "api"}[self.slug]
        )

    def credential_setting(self) -> str:
        return "token" if self.slug == "vercel" else "api_key"

    def data_path(self) -> str:
        """The paths of the data plane on its server."""
        if self.slug == "e2b":
            # envd's routes; the sandbox proxy's /health is left alone: E2B's SDK probes it once
            # after a command fails at the proxy, to word its error (docs/providers.md).
            return "^/(process[.]Process/|files)"
        return "/(cmd|fs/)" if self.slug == "vercel" else "."

    def create_path(self) -> str:
        return {
            "e2b": "^/v2/sandboxes$",
            "daytona": "^/api/sandbox$",
            "vercel": "^/api/v3/sandboxes$",
        }[self.slug]

    def delete_path(self) -> str:
        """Where a sandbox is ended (DELETE, for every provider)."""
        return {
            "e2b": "^/sandboxes/",
            "daytona": "^/api/sandbox/",
            "vercel": "^/api/v2/sandboxes/[^/]+$",
        }[self.slug]

    def delete_method(self) -> str:
        return "DELETE"

    def not_ready(self, times: int) -> None:
        """The data plane answers 502 `times` times (E2B's proxy, Daytona's toolbox proxy,
        Vercel's edge in front of the command and file routes)."""
        self.data_plane.faults.add(
            "*",
            self.data_path(),
            times=times,
            status=502,
            body={"code": 502, "message": "sandbox not ready"},
        )


def unspaced_creates(monkeypatch) -> None:
    """The chains of the next run send their creates as they come, not spaced to the declared
    rate: Vercel's 20 creates per 10 minutes space a demo run's creates 30 s apart, and a test
    whose claim is not the rate gains nothing from waiting. What the spacing itself does is held
    by tests/runner/test_create_spacing.py and by the E2B demo run, spaced at its 1 a second."""
    spaced = chain.CreateSpacer
    monkeypatch.setattr(chain, "CreateSpacer", lambda _rate_per_s: spaced(None))


def start_fake(slug: str, root, **options):
    return FAKES[slug](root, **options).start()


@contextlib.contextmanager
def running_fake(slug: str, root, **options):
    fake = start_fake(slug, root, **options)
    try:
        yield Cloud(slug, fake, get_provider(slug, settings=fake.adapter_settings()))
    finally:
        fake.stop()


@contextlib.contextmanager
def running_cloud(slug: str, root):
    """Any cloud adapter against its fake, Modal's included (skipped without its SDK)."""
    if slug == "modal":
        import pytest

        pytest.importorskip("modal", reason="the modal SDK is optional")
        from tests.providers.cloud.modal_helpers import running_modal

        with running_modal(root) as found:
            yield found
    else:
        with running_fake(slug, root) as found:
            yield found


def run(
    cloud: Cloud, procedure, benchmark="latency-per-call", limits=LIMITS, provider=None, **kwargs
):
    from runner.benchmarks import all_benchmarks

    module = all_benchmarks()[benchmark]
    provider = provider or cloud.provider
    return lifecycle.run_trial(
        provider,
        module.DEFINITION,
        module.units()[0],
        procedure or module.run,
        label="bb-pytest-cloud",
        pricing=get_declaration(cloud.slug).pricing,
        limits=limits,
        **kwargs,
    )
