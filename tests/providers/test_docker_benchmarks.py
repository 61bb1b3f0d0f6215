"""Every sandbox-operation benchmark runs on `docker` (Podman here) through the real lifecycle,
and the declarations of `docker` and `remote-docker` say only what the adapter really does."""

import pytest

from runner import lifecycle
from runner.benchmarks import all_benchmarks, latency_per_call
from runner.benchmarks.base import BenchmarkDefinition
from runner.declarations import get_declaration
from runner.limits import Limits
from runner.providers import adapter_class
from runner.providers.base import Provider
from runner.rules import refusals

SANDBOX_OPERATIONS = sorted(
    slug
    for slug, module in all_benchmarks().items()
    if module.DEFINITION.section == "sandbox_operations"
)
LIMITS = Limits(poll_interval_s=0.05)


@pytest.mark.podman
@pytest.mark.parametrize("slug", SANDBOX_OPERATIONS)
def test_it_runs_the_sandbox_operation_benchmark_on_docker(
    slug, docker_provider, batch_label, monkeypatch, settings
):
    # Latency per Call with 3 calls instead of 50, Output Stream with 8 MiB instead of 1 GiB:
    # the same procedures and records.
    monkeypatch.setattr(latency_per_call, "CALLS", 3)
    settings.OUTPUT_STREAM_MIB = 8
    module = all_benchmarks()[slug]
    result = lifecycle.run_trial(
        docker_provider,
        module.DEFINITION,
        module.units()[0],
        module.run,
        label=batch_label,
        pricing=docker_provider.declaration.pricing,
        limits=LIMITS,
    )
    assert result.outcome == "success", result.cause
    assert module.DEFINITION.metric in {m.name for m in result.measurements}
    assert result.cleanup_verified and docker_provider.list_sandboxes(batch_label) == []
    sandbox = next(e.data for e in result.evidence if e.kind == "sandbox")
    assert sandbox["facts"]["image_digest"].startswith("sha256:")


def test_it_covers_the_sandbox_operation_benchmarks_named_in_the_issue():
    named = {"create", "sequential-tti", "latency-per-call", "file-upload", "file-download"}
    assert named | {"destroy"} <= set(SANDBOX_OPERATIONS)


@pytest.mark.parametrize("slug", ["docker", "remote-docker"])
def test_it_declares_exactly_the_optional_operations_the_adapter_implements(slug):
    declaration = get_declaration(slug)
    adapter = adapter_class(declaration.adapter)
    implemented = {
        name
        for name in ("snapshot", "fork")
        if getattr(adapter, name) is not getattr(Provider, name)
    }
    declared = {name for name in ("snapshot", "fork") if name in declaration.capabilities}
    assert declared == implemented == {"snapshot", "fork"}
    assert {"exec", "file_transfer", "network_lockdown", "custom_images"} <= set(
        declaration.capabilities
    )


def test_it_refuses_a_machine_size_the_declaration_does_not_offer_with_r402():
    huge = BenchmarkDefinition(
        slug="huge",
        title="Huge",
        section="machine_performance",
        metric="x",
        unit="ms",
        direction="lower",
        clock="guest",
        cpus=64,
        memory_mib=262144,
    )
    [refusal] = refusals(get_declaration("docker"), huge, concurrency=1)
    assert refusal.code == "R402"
