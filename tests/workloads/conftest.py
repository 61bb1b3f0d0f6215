"""The Podman service and `docker` provider fixtures of the provider tests, reused here.

Imported rather than copied so that both folders start Podman and prepare the standard image the
same way (tests/providers/conftest.py). Pytest scopes a conftest's fixtures to its folder, so a run
of both folders starts one service for each.
"""

from tests.providers.conftest import batch_label, docker_provider, podman_socket  # noqa: F401
