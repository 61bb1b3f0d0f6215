"""The provider registry: adapter key -> "module:Class". One module per provider in this folder.

A provider's declaration (runner/provider_declarations/<slug>.yaml) names its adapter key, so two
declarations (two regions, say) can share one adapter. In demo mode (runner/providers/demo.py)
a provider's adapter is pointed at its loopback fake instead of the real service.
"""

from __future__ import annotations

import importlib

from runner.declarations import Declaration, DeclarationError, get_declaration

REGISTRY = {
    "local": "runner.providers.local:LocalProvider",
    "docker": "runner.providers.docker:DockerProvider",
    "remote-docker": "runner.providers.remote_docker:RemoteDockerProvider",
    "opensandbox": "runner.providers.opensandbox:OpenSandboxProvider",
    "e2b": "runner.providers.e2b:E2BProvider",
    "daytona": "runner.providers.daytona:DaytonaProvider",
    "vercel": "runner.providers.vercel:VercelProvider",
    "modal": "runner.providers.modal:ModalProvider",
    "agentcore": "runner.providers.agentcore:AgentCoreProvider",
    "apple-container": "runner.providers.apple_container:AppleContainerProvider",
    # Runs nothing: measures the runner itself, never offered (runner/declarations.py BENCH_ONLY).
    "null": "runner.providers.null:NullProvider",
}


def adapter_class(adapter: str):
    try:
        target = REGISTRY[adapter]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise DeclarationError(f"unknown adapter {adapter!r} (registered: {known})") from None
    module_name, _, class_name = target.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def get_provider(slug: str, declaration: Declaration | None = None, settings: dict | None = None):
    """A ready adapter instance for provider `slug`, configured by its declaration."""
    from runner.providers import demo

    declaration = declaration or get_declaration(slug)
    if settings is None:
        settings = demo.settings_for(slug)
    return adapter_class(declaration.adapter)(declaration, settings)


def unavailable(slugs: list[str]) -> list[str]:
    """One message per provider that cannot run here (unconfigured, SDK missing), naming it."""
    problems = []
    for slug in slugs:
        problem = get_provider(slug).configuration_problem()
        if problem:
            problems.append(f"{slug}: {problem}")
    return problems
