"""The contract every provider adapter keeps, run against each one's real backend or loopback
fake: create, exec (exit codes, separate output, stdin, working directory, environment), files,
listing by batch label, destroy until gone, and errors with their owners (a failure of the
provider is the provider's; a credential the provider refuses is ours, a benchmark error), with
the credential never shown in an error, a trial's cause or evidence, or a log line.

A new adapter joins by adding one `@subject("slug")` function below: it yields a `Subject` with
the adapter against its server, and says how to make the next create fail on the provider's side
and how to build the adapter with a wrong credential (None when it has no credential).
"""

import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from runner import clock, lifecycle
from runner.benchmarks.base import BenchmarkError, ProviderFailure
from runner.providers import REGISTRY, get_provider
from runner.providers.base import CredentialsRejected, Provider, ProviderError, SandboxSpec
from tests.providers.cloud.helpers import running_fake
from tests.support.providers import create, provider_for
from tests.support.runner import DEFINITION, FAST, trial

MISSING_IMAGE = "localhost/boxbench-contract-missing:0"
# Cleanup confirms every sandbox gone: a container engine may take more than FAST's 0.5 s.
LIMITS = dataclasses.replace(FAST, gone_timeout_s=30.0)
WRONG_KEY = "wrong-KEY-" + "8" * 24


@dataclass
class Subject:
    slug: str
    provider: Provider
    label: str
    # The credentials the adapter holds: none may show in an error, a trial or a log.
    secrets: tuple[str, ...]
    # Make the provider refuse a create with an error of its own that carries `text` (where
    # the backend can be told to): the trial's first create, or the one of a spec with the
    # overrides returned.
    fail_next_create: Callable[[str], dict]
    # The adapter with `key` in place of its credential; None for an adapter without one.
    with_credential: Callable[[str], Provider] | None = None
    # Whether the provider's refusal can carry the text we plant (only the fakes can).
    echoes: bool = False
    # The adapter with more settings (the answer bounds: max_pages, max_download_mib...);
    # None for an adapter that reads no provider's answers.
    with_settings: Callable[[dict], Provider] | None = None
    # Make the backend answer as a hostile provider would (runner/providers/fakes/hostile.py);
    # None where nothing can be told to (a real engine).
    hostile: Callable[[str], None] | None = None


SUBJECTS: dict[str, tuple[Callable, tuple]] = {}  # adapter key -> (subject factory, marks)
# Registered adapters this suite leaves out, and why: a new adapter joins or is named here.
LEFT_OUT = {
    "remote-docker": "the docker adapter reached over SSH or TLS; its own tests start those "
    "servers (test_remote_docker_ssh.py, test_remote_docker_tls.py)",
    "null": "runs no command, so it keeps no exec contract: it measures the runner itself, "
    "and tests/runner/test_null_provider.py runs a whole run on it",
}


def subject(slug: str, *marks):
    def register(factory):
        SUBJECTS[slug] = (contextlib.contextmanager(factory), marks)
        return factory

    return register


@subject("local")
def local_subject(request, tmp_path):
    provider = request.getfixturevalue("local")
    yield Subject(
        "local",
        provider,
        f"bb-contract-{uuid.uuid4().hex[:8]}",
        secrets=(),
        fail_next_create=lambda text: {"image": MISSING_IMAGE},
        with_settings=lambda more: get_provider("local", settings={"root": provider.root, **more}),
    )


@subject("docker", pytest.mark.podman)
def docker_subject(request, tmp_path):
    socket = request.getfixturevalue("podman_socket")
    yield Subject(
        "docker",
        request.getfixturevalue("docker_provider"),
        request.getfixturevalue("batch_label"),
        secrets=(),
        fail_next_create=lambda text: {"image": MISSING_IMAGE},
        with_settings=lambda more: get_provider("docker", settings={"host": socket, **more}),
    )


@subject("opensandbox", pytest.mark.podman)
def opensandbox_subject(request, tmp_path):
    stack = request.getfixturevalue("opensandbox_stack")
    yield Subject(
        "opensandbox",
        request.getfixturevalue("opensandbox"),
        request.getfixturevalue("os_label"),
        secrets=(stack.api_key,),
        fail_next_create=lambda text: {"image": MISSING_IMAGE},
        with_credential=lambda key: provider_for(stack, api_key=key),
        with_settings=lambda more: provider_for(stack, **more),
    )


def _http_subject(slug):
    def factory(request, tmp_path):
        with running_fake(slug, tmp_path / "fake") as cloud:

            def fail_next_create(text):
                cloud.api.faults.add(
                    "POST",
                    cloud.create_path(),
                    status=500,
                    body={"code": 500, "message": f"backend fault {text}"},
                )
                return {}

            setting = cloud.credential_setting()
            yield Subject(
                slug,
                cloud.provider,
                f"bb-contract-{uuid.uuid4().hex[:8]}",
                secrets=(cloud.fake.api_key,),
                fail_next_create=fail_next_create,
                with_credential=lambda key: cloud.adapter(**{setting: key}),
                echoes=True,
                with_settings=lambda more: cloud.adapter(**more),
                hostile=cloud.fake.hostile,
            )

    return factory


for _slug in ("e2b", "daytona", "vercel"):
    subject(_slug)(_http_subject(_slug))


@subject("modal")
def modal_subject(request, tmp_path):
    pytest.importorskip("modal", reason="the modal SDK is optional: requirements-modal.txt")
    from grpclib import Status

    from runner.providers.fakes.modal import ModalFake

    fake = ModalFake(tmp_path / "fake").start()
    settings = fake.adapter_settings()
    try:

        def fail_next_create(text):
            # INTERNAL four times: the SDK tries three times before it gives up.
            fake.faults.add(
                "SandboxCreateV2", Status.INTERNAL, times=4, message=f"backend fault {text}"
            )
            return {}

        yield Subject(
            "modal",
            get_provider("modal", settings=settings),
            f"bb-contract-{uuid.uuid4().hex[:8]}",
            secrets=(fake.token_id, fake.token_secret),
            fail_next_create=fail_next_create,
            with_credential=lambda key: get_provider(
                "modal", settings={**settings, "token_secret": key}
            ),
            echoes=True,
            with_settings=lambda more: get_provider("modal", settings={**settings, **more}),
            hostile=fake.hostile,
        )
    finally:
        fake.stop()


@subject("agentcore")
def agentcore_subject(request, tmp_path):
    pytest.importorskip("boto3", reason="boto3 is optional: requirements-agentcore.txt")
    from runner.providers.fakes.agentcore import AgentCoreFake

    monkeypatch = request.getfixturevalue("monkeypatch")
    # Nothing of this machine's AWS setup: the adapter gets its credentials from its settings.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    fake = AgentCoreFake(tmp_path / "fake").start()
    settings = fake.adapter_settings()
    try:

        def fail_next_create(text):
            fake.api.faults.add(
                "PUT",
                "/sessions/start$",
                status=500,
                body={"message": f"backend fault {text}"},
                headers={"x-amzn-ErrorType": "InternalServerException"},
            )
            return {}

        yield Subject(
            "agentcore",
            get_provider("agentcore", settings=settings),
            f"bb-contract-{uuid.uuid4().hex[:8]}",
            secrets=(fake.secret_access_key,),
            fail_next_create=fail_next_create,
            with_credential=lambda key: get_provider(
                "agentcore", settings={**settings, "secret_access_key": key}
            ),
            echoes=True,
            with_settings=lambda more: get_provider("agentcore", settings={**settings, **more}),
            hostile=fake.hostile,
        )
    finally:
        fake.stop()


@subject("apple-container")
def apple_container_subject(request, tmp_path):
    from runner.providers.fakes.apple_container_cli import install

    # The stand-in for Apple's tool, behind a wrapper that fails one `run` when told to, as
    # the tool does when its service cannot make the container.
    tool = install(tmp_path / "bin")
    fail_once = tmp_path / "fail-next-run"
    wrapper = tmp_path / "container"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1" = run ] && [ -e {fail_once} ]; then\n  rm -f {fail_once}\n'
        "  echo 'Error: internalError: \"backend fault\"' >&2\n  exit 1\n"
        f'fi\nexec {tool} "$@"\n'
    )
    wrapper.chmod(0o755)

    def fail_next_create(text):
        fail_once.touch()
        return {}

    settings = {"cli": str(wrapper), "platform": ("Darwin", "arm64"), "image": "boxbench:test"}
    yield Subject(
        "apple-container",
        get_provider("apple-container", settings=settings),
        f"bb-contract-{uuid.uuid4().hex[:8]}",
        secrets=(),
        fail_next_create=fail_next_create,
    )


@pytest.fixture(params=[pytest.param(slug, marks=marks) for slug, (_, marks) in SUBJECTS.items()])
def adapter(request, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    factory, _ = SUBJECTS[request.param]
    with factory(request, tmp_path) as found:
        yield found
        for sandbox in found.provider.list_sandboxes(found.label):
            found.provider.destroy(sandbox)


def spec(adapter: Subject, **overrides) -> SandboxSpec:
    values = {"cpus": 2, "memory_mib": 4096, "label": adapter.label, "lifetime_s": 300}
    return SandboxSpec(**{**values, **overrides})


def wait_gone(provider, sandbox_id, within_s=60.0) -> bool:
    deadline = time.monotonic() + within_s
    while not provider.is_gone(sandbox_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def shows_no_secret(adapter: Subject, *texts: str) -> bool:
    return not any(secret and secret in text for secret in adapter.secrets for text in texts)


def test_it_creates_runs_commands_moves_files_lists_and_destroys(adapter):
    provider = adapter.provider
    sandbox = create(provider, spec(adapter))  # tried once more past a known Podman fault
    try:
        lifecycle.readiness_check(provider, sandbox, FAST.readiness)
        ran = provider.exec(sandbox, ["/bin/sh", "-c", "echo out; echo err >&2; exit 7"], 30)
        assert (ran.exit_code, ran.stdout, ran.stderr) == (7, b"out\n", b"err\n")
        assert provider.exec(sandbox, ["/bin/cat"], 30, stdin=b"in put").stdout == b"in put"
        assert provider.exec(sandbox, ["pwd"], 30, workdir="/tmp").stdout == b"/tmp\n"
        env = provider.exec(sandbox, ["/bin/sh", "-c", 'echo "$X"'], 30, env={"X": "a b'c"})
        assert env.stdout == b"a b'c\n"
        blob = bytes(range(256)) * 100
        provider.upload(sandbox, "/app/contract.bin", blob)
        assert provider.download(sandbox, "/app/contract.bin") == blob
        with pytest.raises(ProviderError):
            provider.download(sandbox, "/app/contract-none")
        assert [s.id for s in provider.list_sandboxes(adapter.label)] == [sandbox.id]
        assert provider.list_sandboxes(f"bb-other-{uuid.uuid4().hex[:8]}") == []
    finally:
        provider.destroy(sandbox)
    assert wait_gone(provider, sandbox.id)
    assert provider.list_sandboxes(adapter.label) == []


# Whatever the command's programs can read: the files in /tmp (where adapters put stdin files),
# every process's command line and environment, and the regular files its ancestors hold open
# (where an exec's stdin is; every process's would be the host's whole set where a stand-in runs
# commands on the host).
LOOK_FOR_THE_KEY = (
    'ls -a /tmp; for f in /tmp/.boxbench-*; do [ -f "$f" ] && cat "$f"; done; '
    'for p in /proc/[0-9]*; do cat "$p/cmdline" "$p/environ"; done; p=$$; '
    'while [ "$p" -gt 1 ]; do for f in /proc/"$p"/fd/*; do [ -f "$f" ] && cat "$f"; done; '
    'read -r s < /proc/"$p"/stat || break; s=${s##*) }; set -- $s; p=$2; done 2> /dev/null; :'
)


def test_a_guest_command_finds_no_key_through_the_lifecycle(adapter, monkeypatch):
    """The lifecycle's way: stdin, or where stdin is a file, an untimed upload that the wrapper
    empties before the command starts (runner/clock.py)."""
    keys, runs, real_key = [], [], clock.new_key
    monkeypatch.setattr(clock, "new_key", lambda: keys.append(real_key()) or keys[-1])

    def look(ctx):
        runs.append(ctx.guest(LOOK_FOR_THE_KEY, timeout=60))
        ctx.record("echo_ms", runs[-1].runtime_ms, gate="pass")

    patient = dataclasses.replace(DEFINITION, procedure_timeout_s=300)
    result = trial(adapter.provider, look, patient, label=adapter.label, limits=LIMITS)
    assert result.outcome == "success", result.cause
    assert b"__bb_clock_end" in runs[0].stdout  # it read the wrapper's command line
    assert len(keys) == 1 and keys[0].encode() not in runs[0].stdout


def test_the_guest_clocks_key_reaches_the_wrapper_and_no_program(adapter):
    """The wrapper's key as exec's stdin: an adapter that carries stdin as a file removes it
    before the command starts, so no program of the command reads it (runner/clock.py)."""
    provider = adapter.provider
    sandbox = create(provider, spec(adapter))
    try:
        lifecycle.readiness_check(provider, sandbox, FAST.readiness)
        key = clock.new_key()
        argv = ["/bin/bash", "-c", clock.wrap(LOOK_FOR_THE_KEY)]
        ran = provider.exec(sandbox, argv, 60, stdin=clock.key_input(key))
        _, timing = clock.parse_trailer(ran.stderr, key)
        assert timing is not None and ran.exit_code == 0, ran.stderr[-300:]
        assert b"__bb_clock_end" in ran.stdout  # it read the wrapper's command line
        assert key.encode() not in ran.stdout
    finally:
        provider.destroy(sandbox)


def test_a_failure_of_the_provider_is_the_providers(adapter, caplog):
    planted = adapter.secrets[0] if adapter.secrets else ""
    overrides = adapter.fail_next_create(planted)

    def procedure(ctx):
        ctx.new_sandbox(overrides)

    result = trial(adapter.provider, procedure, label=adapter.label, limits=LIMITS)
    assert (result.outcome, result.owner) == ("provider_failure", "provider"), result.cause
    assert result.cause.startswith("create") and result.cleanup_verified
    if adapter.echoes:
        assert "backend fault" in result.cause and "[redacted]" in result.cause
    evidence = [str(e.data) for e in result.evidence]
    assert shows_no_secret(adapter, result.cause, *evidence, caplog.text)


def test_a_credential_the_provider_refuses_is_ours(adapter, caplog):
    if adapter.with_credential is None:
        pytest.skip(f"{adapter.slug} has no credential to refuse")
    refused = adapter.with_credential(WRONG_KEY)
    with pytest.raises(CredentialsRejected) as raised:
        refused.create(spec(adapter))
    assert isinstance(lifecycle.adapter_failure("create", raised.value), BenchmarkError)

    result = trial(refused, label=adapter.label, limits=LIMITS)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark"), result.cause
    assert result.cause.startswith("create: ") and result.cleanup_verified
    evidence = [str(e.data) for e in result.evidence]
    for text in (str(raised.value), result.cause, *evidence, caplog.text):
        assert WRONG_KEY not in text
    assert shows_no_secret(adapter, str(raised.value), result.cause, *evidence, caplog.text)


def test_every_registered_adapter_keeps_the_contract_or_is_named_as_left_out():
    assert sorted(REGISTRY) == sorted([*SUBJECTS, *LEFT_OUT])


# Answers each adapter reads as hostile input (runner/providers/answers.py): a command output or a
# file past its cap, and the fakes' hostile modes, are named provider failures.
MIB = 1024 * 1024
BOUNDS = {"max_pages": 5, "max_download_mib": 1, "max_output_mib": 1}
# local holds a hostile command's output to the same caps: it reads its own pipes, but what
# comes through them is the command's, and unbounded it would fill the job host's memory.
READS_NO_ANSWERS = {
    "apple-container": "its output comes from the local tool's pipes, not a provider's answers",
}
# Where an SDK reads the answer first: its own refusal, or what it made of the answer (still the
# provider's failure, named).
REFUSED_BY_THE_SDK = {
    ("modal", "missing_id"): ("rejected", "does not start with"),
    # botocore turns a body that is not JSON into {"message": <the body>}.
    ("agentcore", "not_json"): ("bad_answer", "has no `sessionId`"),
    ("agentcore", "missing_id"): ("bad_answer", "has no `sessionId`"),
}
HOSTILE_CODE = {
    "endless_listing": "endless_listing",
    "missing_id": "bad_answer",
    "not_json": "bad_answer",
    "oversized_download": "too_large",
}
# Modes that have nothing to act on in an adapter, and why.
NOT_APPLICABLE = {
    ("daytona", "endless_listing"): "the fake serves one page (Daytona's SDK walks the cursor "
    "pages itself; the adapter stops after max_pages pages' worth of sandboxes)",
    ("modal", "not_json"): "Modal answers in protobuf over gRPC, which the SDK decodes",
}


def bounded(adapter: Subject) -> Provider:
    if adapter.with_settings is None:
        assert adapter.slug in READS_NO_ANSWERS, f"{adapter.slug} says nothing of its bounds"
        pytest.skip(READS_NO_ANSWERS[adapter.slug])
    return adapter.with_settings(BOUNDS)


def assert_named(adapter: Subject, error: ProviderError, operation: str, code: str) -> None:
    assert error.code == code and error.operation == operation, (error.code, str(error))
    assert str(error).startswith(f"{adapter.slug} {operation}: "), str(error)
    failure = lifecycle.adapter_failure(operation, error)
    assert isinstance(failure, ProviderFailure) and shows_no_secret(adapter, failure.cause)


def test_command_output_past_the_cap_is_a_named_provider_failure(adapter):
    provider = bounded(adapter)
    sandbox = create(provider, spec(adapter))
    try:
        lifecycle.readiness_check(provider, sandbox, FAST.readiness)
        for stream in ("", " >&2"):
            with pytest.raises(ProviderError, match="max_output_mib") as raised:
                provider.exec(sandbox, ["/bin/sh", "-c", f"yes | head -c {2 * MIB}{stream}"], 60)
            assert_named(adapter, raised.value, "exec", "too_large")
        assert provider.exec(sandbox, ["/bin/sh", "-c", f"yes | head -c {MIB}"], 60).exit_code == 0
    finally:
        provider.destroy(sandbox)


def test_a_download_past_the_cap_is_a_named_provider_failure(adapter):
    provider = bounded(adapter)
    sandbox = create(provider, spec(adapter))
    try:
        lifecycle.readiness_check(provider, sandbox, FAST.readiness)
        script = (
            f"head -c {MIB + 1} /dev/urandom > /tmp/big.bin && "
            f"head -c {MIB} /tmp/big.bin > /tmp/fits.bin"
        )
        assert provider.exec(sandbox, ["/bin/sh", "-c", script], 60).exit_code == 0
        with pytest.raises(ProviderError, match="max_download_mib") as raised:
            provider.download(sandbox, "/tmp/big.bin")
        assert_named(adapter, raised.value, "download", "too_large")
        assert len(provider.download(sandbox, "/tmp/fits.bin")) == MIB
    finally:
        provider.destroy(sandbox)


@pytest.mark.parametrize("mode", HOSTILE_CODE)
def test_a_hostile_answer_is_a_named_provider_failure(adapter, mode):
    provider = bounded(adapter)
    if (adapter.slug, mode) in NOT_APPLICABLE:
        pytest.skip(NOT_APPLICABLE[adapter.slug, mode])
    if adapter.hostile is None:
        pytest.skip(f"{adapter.slug} runs against a real backend, which cannot be told to lie")
    sandbox = create(provider, spec(adapter)) if mode == "oversized_download" else None
    adapter.hostile(mode)
    operation = {"endless_listing": "list", "oversized_download": "download"}.get(mode, "create")
    try:
        with pytest.raises(ProviderError) as raised:
            if sandbox is not None:
                provider.download(sandbox, "/tmp/anything")
            elif operation == "list":
                provider.list_sandboxes(adapter.label)
            else:
                provider.create(spec(adapter))
    finally:
        adapter.hostile("calm")
        if sandbox is not None:
            provider.destroy(sandbox)
    code, said = REFUSED_BY_THE_SDK.get((adapter.slug, mode), (HOSTILE_CODE[mode], None))
    assert_named(adapter, raised.value, operation, code)
    said = (
        said
        or {
            "endless_listing": "within 5 pages",
            "missing_id": "missing required field",
            "not_json": "not JSON",
            "oversized_download": "max_download_mib",
        }[mode]
    )
    assert said in str(raised.value)
