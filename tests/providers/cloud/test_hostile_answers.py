"""Hostile or broken provider answers against the loopback fakes: a secret a provider echoes back
never shows in our messages, not even in part, and a malformed answer is a named provider
failure, never a traceback or an endless loop."""

import itertools
import logging

import pytest

from runner import lifecycle
from runner.benchmarks.base import ProviderFailure
from runner.providers.base import ProviderError, Sandbox, SandboxSpec
from runner.providers.fakes import hostile
from runner.providers.fakes.server import FakeHTTPServer, Response

SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-pytest-cloud", lifetime_s=120)


def key_of(cloud) -> str:
    return cloud.fake.adapter_settings()[cloud.credential_setting()]


def shows_part_of(text: str, secret: str, at_least: int = 4) -> bool:
    """Whether `text` holds any `at_least`-character piece of `secret`."""
    return any(secret[i : i + at_least] in text for i in range(len(secret) - at_least + 1))


@pytest.mark.parametrize("before_the_cut", [None, 4, 10, -3])
def test_an_echoed_key_is_redacted_before_the_message_is_cut(cloud, before_the_cut):
    """The provider's message is cut at 300 characters: the key whole, or straddling the cut
    with 4, 10 or all but 3 of its characters before it."""
    key = key_of(cloud)
    shown = len(key) if before_the_cut is None else before_the_cut % len(key)
    message = "x" * (300 - shown) + f"{key} is not a key we know"
    cloud.api.faults.add("*", cloud.create_path(), status=500, body={"message": message})
    with pytest.raises(ProviderError) as failed:
        cloud.provider.create(SPEC)
    assert not shows_part_of(str(failed.value), key), str(failed.value)


def test_an_echoed_key_in_an_error_that_is_not_json_is_redacted_too(cloud):
    key = key_of(cloud)
    body = ("y" * (300 - len(key) + 3) + key).encode()
    cloud.api.faults.add("*", cloud.create_path(), status=400, body=body)
    with pytest.raises(ProviderError) as failed:
        cloud.provider.create(SPEC)
    assert not shows_part_of(str(failed.value), key) and "yyy" in str(failed.value)


def opensandbox_against(app, **settings):
    from runner.providers import get_provider

    server = FakeHTTPServer(app, idle_timeout_s=5, name="opensandbox-hostile")
    server.start()
    # Every 4-character piece mixes upper and lower case letters, so no port number, hex
    # address or word of a DEBUG log line holds one by chance (a port 34563 held "3456").
    key = "osb-" + "QkZxJvWqKzXjYwPq" * 2
    settings = {"url": server.url, "api_key": key, **settings}
    return server, get_provider("opensandbox", settings=settings), key


@pytest.mark.parametrize("padding", [0, 480, 490])
def test_opensandbox_redacts_its_key_before_cutting_the_servers_message(padding):
    holder = {}

    def app(request):
        message = "z" * padding + f" rejected {holder['key']}"
        return Response.json(500, {"code": "BOOM", "message": message})

    server, provider, holder["key"] = opensandbox_against(app)
    try:
        with pytest.raises(ProviderError) as failed:
            provider.list_sandboxes("bb-x")
    finally:
        server.stop()
    assert "BOOM" in str(failed.value)
    assert not shows_part_of(str(failed.value), holder["key"]), str(failed.value)


def test_the_pieces_helper_finds_a_cut_key():
    assert shows_part_of("abc 0123456789", "0123456789xyz")
    assert not shows_part_of("abc 012", "0123456789")


def test_daytona_sends_its_key_only_to_configured_origins(tmp_path):
    """The fake's toolbox plays a server the API answer names but the operator never configured:
    create is refused, naming it, and the key never reaches it."""
    from tests.providers.cloud.helpers import running_fake

    with running_fake("daytona", tmp_path / "fake") as cloud:
        provider = cloud.adapter(toolbox_url="http://127.0.0.1:9/toolbox")
        with pytest.raises(ProviderError, match="not the configured API or toolbox origin") as no:
            provider.create(SPEC)
        assert no.value.code == "foreign_origin" and cloud.fake.toolbox.url[7:] in str(no.value)
        assert cloud.fake.toolbox.requests == []
        assert provider.list_sandboxes(SPEC.label) == []  # the refused sandbox was deleted
        without = cloud.adapter(toolbox_url="")
        with pytest.raises(ProviderError, match="foreign_origin|not the configured"):
            without.create(SPEC)
        assert cloud.fake.toolbox.requests == []
        sandbox = cloud.provider.create(SPEC)  # the toolbox configured: it is used
        assert cloud.provider.exec(sandbox, ["true"], 10).exit_code == 0
        assert cloud.fake.toolbox.requests
        cloud.provider.destroy(sandbox)


def test_opensandbox_keeps_an_echoed_key_out_of_the_sdks_log_records(caplog):
    # OpenSandbox's SDK logs each failed call with the server's message (WARNING), and a failed
    # command or file call with its traceback (ERROR): a server that echoes the key must not
    # put it in a log line.
    caplog.set_level(logging.DEBUG)
    holder = {}

    def app(request):
        return Response.json(500, {"code": "BOOM", "message": f"rejected {holder['key']}"})

    server, provider, holder["key"] = opensandbox_against(app)
    try:
        with pytest.raises(ProviderError):
            provider.list_sandboxes("bb-x")
        with pytest.raises(ProviderError):
            provider.download(Sandbox(id="s1", label="bb-x"), "/app/x")
    finally:
        server.stop()
    assert "BOOM" in caplog.text and "opensandbox" in caplog.text
    assert not shows_part_of(caplog.text, holder["key"]), caplog.text


def test_e2b_shows_an_echoed_access_token_neither_in_an_error_nor_a_log(tmp_path, caplog):
    # The sandbox's access token is a credential too: redacted from the error, and registered with
    # the filter on the SDK's loggers in case a record carries what envd answered.
    from tests.providers.cloud.helpers import running_fake

    caplog.set_level(logging.DEBUG)
    with running_fake("e2b", tmp_path) as cloud:
        sandbox = cloud.provider.create(SPEC)
        token = sandbox.handle._envd_access_token
        body = {"code": 500, "message": f"token {token} refused"}
        cloud.data_plane.faults.add("GET", "^/files$", status=500, body=body)
        with pytest.raises(ProviderError) as failed:
            cloud.provider.download(sandbox, "/app/x")
        cloud.provider.destroy(sandbox)
    # Pieces of 8 characters: shorter ones of the random hex token turn up by chance in the
    # DEBUG lines' object addresses and port numbers.
    assert "refused" in str(failed.value) and token not in str(failed.value)
    assert not shows_part_of(caplog.text, token, 8), caplog.text


def test_vercel_shows_an_echoed_token_or_team_neither_in_an_error_nor_a_log(tmp_path, caplog):
    # The team id travels in every URL's query string, which httpx2 (under Vercel's SDK) logs at
    # INFO, and the token in a header: a Vercel that echoes both into an error must put them in
    # no message and no log line. Pieces of 8 characters: shorter ones of random hex turn up in
    # the sandboxes' own names by chance.
    from tests.providers.cloud.helpers import running_fake

    caplog.set_level(logging.DEBUG)
    with running_fake("vercel", tmp_path) as cloud:
        fake = cloud.fake
        sandbox = cloud.provider.create(SPEC)
        echoed = f"{fake.token} of {fake.team_id} refused"
        body = {"error": {"code": "internal_server_error", "message": echoed}}
        cloud.api.faults.add("POST", "/cmd$", status=500, body=body)
        with pytest.raises(ProviderError) as failed:
            cloud.provider.exec(sandbox, ["true"], 10)
        cloud.provider.destroy(sandbox)
        planted = (fake.token, fake.team_id.removeprefix("team_"))
    assert "refused" in str(failed.value) and "teamId=[redacted]" in caplog.text
    for secret in planted:
        assert not shows_part_of(str(failed.value), secret, 8), str(failed.value)
        assert not shows_part_of(caplog.text, secret, 8), caplog.text


def endless_pages():
    """An OpenSandbox listing whose every page says another follows (hostile.PAGES of them)."""
    served = itertools.count(1)

    def app(request):
        page = next(served)
        more = page < hostile.PAGES
        pagination = {
            "page": page,
            "pageSize": 100,
            "totalItems": 10**6,
            "totalPages": 10**4,
            "hasNextPage": more,
        }
        return Response.json(200, {"items": [], "pagination": pagination})

    return app


@pytest.mark.parametrize("listing", ["list_sandboxes", "list_snapshots"])
def test_opensandbox_stops_an_endless_listing(listing):
    server, provider, _ = opensandbox_against(endless_pages(), max_pages=5)
    try:
        with pytest.raises(ProviderError, match="did not end within 5 pages") as endless:
            getattr(provider, listing)("bb-x")
    finally:
        server.stop()
    assert endless.value.code == "endless_listing" and len(server.requests) == 5
    assert str(endless.value).startswith("opensandbox list")


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (Response.json(202, {"status": {"state": "Running"}, "entrypoint": ["sleep"]}), "'id'"),
        (hostile.html(202), "Expecting value"),
    ],
)
def test_opensandbox_create_answers_without_an_id_or_json_are_named_by_its_sdk(answer, said):
    """The SDK reads the create answer before the adapter: its refusal, named, is the trial's
    provider failure (recorded here so a change of SDK that let one through is seen)."""
    server, provider, _ = opensandbox_against(lambda request: answer, image="x")
    try:
        with pytest.raises(ProviderError, match=said) as refused:
            provider.create(SPEC)
    finally:
        server.stop()
    assert refused.value.operation == "create"
    assert isinstance(lifecycle.adapter_failure("create", refused.value), ProviderFailure)
