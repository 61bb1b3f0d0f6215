"""The provider registry: adapter key -> "module:Class". One module per provider in this folder.

A provider's declaration (runner/declarations/<slug>.yaml) names its adapter key, so two
declarations (two regions, say) can share one adapter.
"""

from __future__ import annotations

import importlib

from runner.declarations import Declaration, DeclarationError, get_declaration

REGISTRY = {
    "local": "runner.providers.local:LocalProvider",
    "docker": "runner.providers.docker:DockerProvider",
    "remote-docker": "runner.providers.docker:RemoteDockerProvider",
    "opensandbox": "runner.providers.opensandbox:OpenSandboxProvider",
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
    declaration = declaration or get_declaration(slug)
    return adapter_class(declaration.adapter)(declaration, settings)
