"""Demo mode: run the whole benchmark path against a provider's loopback fake, with no account.

`demo_session(["e2b"])` starts each provider's fake (runner/providers/fakes/) in this process and
points `get_provider(slug)` at it until the session ends. Each fake enforces its provider's
documented limits (`documented_limits()`: concurrent sandboxes, creation rate) and answers past
them as the real API does, so a demo run meets the limits' refusals and `rate_limited` answers.
A demo run is planned and executed in the same process (`bench run --demo` runs its chains
inline). The run's manifest carries
`demo: {...}` naming the faked providers: pages show it, and publishing refuses such a run.
"""

from __future__ import annotations

import contextlib
import importlib
import tempfile
import threading
from collections.abc import Iterator

from runner.manifest import DemoRun

FAKES = {
    "e2b": "runner.providers.fakes.e2b:E2BFake",
    "daytona": "runner.providers.fakes.daytona:DaytonaFake",
    "vercel": "runner.providers.fakes.vercel:VercelFake",
    "modal": "runner.providers.fakes.modal:ModalFake",
    "agentcore": "runner.providers.fakes.agentcore:AgentCoreFake",
    # Open source: its real server on this machine stands in for a fake.
    "opensandbox": "runner.providers.opensandbox.local:DemoServer",
}


class DemoError(Exception):
    """A provider's fake (or, for OpenSandbox, its local server) could not be started."""


_active: dict[str, dict] = {}
_lock = threading.Lock()


def settings_for(slug: str) -> dict | None:
    """The adapter settings pointing at the running fake of `slug`, or None outside demo mode."""
    with _lock:
        settings = _active.get(slug)
    return dict(settings) if settings is not None else None


def manifest_entry(slugs: list[str]) -> DemoRun:
    return DemoRun(
        providers=sorted(slugs),
        note="a demo run against loopback fakes of the providers' APIs, not the providers "
        "themselves: its figures describe this machine, never a provider; it is never published",
    )


def fake_class(slug: str):
    try:
        target = FAKES[slug]
    except KeyError:
        known = ", ".join(sorted(FAKES))
        message = f"provider {slug!r} has no demo fake (providers with one: {known})"
        raise ValueError(message) from None
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@contextlib.contextmanager
def demo_session(slugs: list[str], root: str | None = None) -> Iterator[dict]:
    """Start the fakes of `slugs`, route their adapters to them, stop everything on exit."""
    classes = {slug: fake_class(slug) for slug in slugs}
    fakes = {}
    with tempfile.TemporaryDirectory(prefix="boxbench-demo-", dir=root) as directory:
        try:
            for slug, cls in classes.items():
                limits: dict = getattr(cls, "documented_limits", dict)()
                try:
                    fakes[slug] = cls(f"{directory}/{slug}", **limits).start()
                except Exception as exc:
                    raise DemoError(f"{slug}: its demo stand-in did not start: {exc}") from exc
                with _lock:
                    _active[slug] = fakes[slug].adapter_settings()
            yield fakes
        finally:
            for slug, fake in fakes.items():
                with _lock:
                    _active.pop(slug, None)
                fake.stop()
