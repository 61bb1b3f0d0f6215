"""How the runner gets a provider's adapter: one seam, read at call time by planning (image
identity), chains, cleanup and recovery, so a test replaces it once (the chain_provider
fixture, tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable

from runner.providers import get_provider

provider_factory: Callable = get_provider
