"""The opensandbox adapter's settings, declaration and error mapping, without a server."""

import pytest

from runner.benchmarks.base import BenchmarkError
from runner.declarations import get_declaration
from runner.lifecycle import adapter_failure
from runner.providers import get_provider
from runner.providers.base import NotReady, ProviderError
from runner.providers.opensandbox.errors import (
    CredentialsRejected,
    RequestRejected,
    SandboxGone,
    WrongState,
    error_body,
    error_for,
)


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("OPEN_SANDBOX_DOMAIN", "OPEN_SANDBOX_API_KEY", "OPEN_SANDBOX_API_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_key_comes_from_the_environment_or_a_file_and_never_shows(clean_env, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("from-file\n")
    clean_env.setenv("OPEN_SANDBOX_API_KEY_FILE", str(key_file))
    clean_env.setenv("OPEN_SANDBOX_DOMAIN", "sandboxes.example.test:9000")
    provider = get_provider("opensandbox")
    assert provider.config.get_api_key() == "from-file"  # the SDK's own setting
    assert provider.url == "http://sandboxes.example.test:9000"
    assert "from-file" not in repr(provider) and "from-file" not in repr(vars(provider).keys())
    clean_env.setenv("OPEN_SANDBOX_API_KEY", "from-env")
    assert get_provider("opensandbox").config.get_api_key() == "from-env"


def test_an_unreadable_key_file_or_bad_domain_is_named(clean_env, tmp_path):
    clean_env.setenv("OPEN_SANDBOX_API_KEY_FILE", str(tmp_path / "absent"))
    with pytest.raises(ProviderError, match="OPEN_SANDBOX_API_KEY_FILE=.*absent"):
        get_provider("opensandbox")
    clean_env.delenv("OPEN_SANDBOX_API_KEY_FILE")
    clean_env.setenv("OPEN_SANDBOX_DOMAIN", "ftp://x")
    with pytest.raises(ProviderError, match="OPEN_SANDBOX_DOMAIN"):
        get_provider("opensandbox")


def test_doctor_says_how_to_start_a_server_when_none_answers(clean_env):
    clean_env.setenv("OPEN_SANDBOX_DOMAIN", "127.0.0.1:9")
    [check] = get_provider("opensandbox").doctor()
    assert not check.ok and "python -m runner.providers.opensandbox serve" in check.detail


def test_doctor_skips_an_opensandbox_nobody_configured(clean_env, monkeypatch):
    # As for the cloud providers: nothing named, nothing to fail; the hint is still given.
    from runner.providers.opensandbox import adapter

    clean_env.delenv("OPEN_SANDBOX_DOMAIN", raising=False)
    monkeypatch.setattr(adapter, "DEFAULT_DOMAIN", "127.0.0.1:9")
    [check] = get_provider("opensandbox").doctor()
    assert check.verdict == "SKIP" and check.detail.startswith("not configured")
    assert "python -m runner.providers.opensandbox serve" in check.detail


def test_the_declaration_lists_what_the_adapter_implements():
    declaration = get_declaration("opensandbox")
    assert set(declaration.capabilities) == {
        "exec",
        "file_transfer",
        "custom_images",
        "snapshot",
        "pause",
        "unique_layer",
        "output_stream",
    }
    assert declaration.pricing["provider_sourced"] is False
    assert "no provider-sourced cost" in declaration.pricing["source"]


# Bodies as the real server answered them (tests/providers/test_opensandbox_server.py checks the
# server still answers so).
BODIES = {
    401: '{"code":"MISSING_API_KEY","message":"Authentication credentials are missing."}',
    404: '{"code":"DOCKER::SANDBOX_NOT_FOUND","message":"Sandbox nope not found."}',
    409: '{"code":"DOCKER::SANDBOX_NOT_RUNNING","message":"Sandbox is not in a running state."}',
    422: '{"detail":[{"type":"greater_than_equal","loc":["body","timeout"],'
    '"msg":"Input should be greater than or equal to 60","input":30}]}',
    500: '{"code":"DOCKER::SANDBOX_IMAGE_PULL_FAILED","message":"Failed to pull image x"}',
    503: '{"code":"DOCKER::SANDBOX_EXECD_START_FAILED","message":"Failed to start execd"}',
}


@pytest.mark.parametrize(
    ("status", "kind", "owner_at_create"),
    [
        (401, CredentialsRejected, "benchmark"),
        (404, SandboxGone, "provider"),
        (409, WrongState, "provider"),
        (422, RequestRejected, "benchmark"),
        (500, ProviderError, "provider"),
        (503, NotReady, "provider"),
    ],
)
def test_error_answers_map_to_adapter_errors(status, kind, owner_at_create):
    error = error_for("create", status, BODIES[status])
    assert type(error) is kind and isinstance(error, ProviderError)
    # As the lifecycle's create takes it: a TrialOutcome as itself, any other error as
    # adapter_failure decides.
    at_create = error if isinstance(error, BenchmarkError) else adapter_failure("create", error)
    assert at_create.owner == owner_at_create
    code, message = error_body(BODIES[status])
    assert f"HTTP {status} {code}: {message}" in str(error) and error.operation == "create"


def test_validation_errors_name_the_field():
    assert error_body(BODIES[422]) == (
        "VALIDATION_ERROR",
        "timeout: Input should be greater than or equal to 60",
    )
    assert error_body("<html>bad gateway</html>") == ("", "<html>bad gateway</html>")


def test_the_provider_is_refused_without_its_sdk(clean_env, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == "opensandbox" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    clean_env.setenv("OPEN_SANDBOX_DOMAIN", "127.0.0.1:9")  # named: a missing SDK is a fault
    provider = get_provider("opensandbox")
    assert "pip install -r requirements-opensandbox.txt" in provider.configuration_problem()
    [check] = provider.doctor()
    assert not check.ok and "requirements-opensandbox.txt" in check.detail
    with pytest.raises(ProviderError, match="requirements-opensandbox.txt"):
        provider.list_sandboxes()
