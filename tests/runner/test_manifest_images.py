"""Every run manifest names the image each provider's numbers ran on, and results show it."""

import subprocess

import pytest

from boxbench.leaderboard.sources import image_digest
from runner import provenance
from runner.plan import plan_run
from runner.providers.base import ProviderError
from runner.providers.local.toolchain import host_toolchain_identity
from tests.runner.faults import FaultyProvider

STATUS = """Package: bash
Status: install ok installed
Architecture: amd64
Version: 5.2.15-2
Description: the shell
 continued line: not a field

Package: removed-tool
Status: deinstall ok config-files
Version: 1.0

Package: coreutils
Status: install ok installed
Architecture: amd64
Version: 9.1-1
"""


def toolchain(tmp_path, status=STATUS, release='PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'):
    (tmp_path / "os-release").write_text(release)
    if status is not None:
        (tmp_path / "status").write_text(status)
    return host_toolchain_identity(tmp_path / "os-release", tmp_path / "status")


def test_it_identifies_the_host_toolchain_by_os_release_and_installed_packages(tmp_path):
    description, digest = toolchain(tmp_path)
    assert description == "host toolchain: Debian GNU/Linux 12 (bookworm), 2 dpkg packages"
    assert digest.startswith("sha256:") and len(digest) == 71
    assert toolchain(tmp_path)[1] == digest  # an unchanged host keeps its digest
    upgraded = toolchain(tmp_path, STATUS.replace("9.1-1", "9.1-2"))[1]
    assert upgraded != digest


def test_it_says_when_the_host_has_no_package_list(tmp_path):
    description, digest = toolchain(tmp_path, status=None)
    assert "no " + str(tmp_path / "status") in description and digest.startswith("sha256:")


def test_it_refuses_a_host_without_os_release(tmp_path):
    with pytest.raises(ProviderError, match="missing for the host toolchain identity"):
        host_toolchain_identity(tmp_path / "missing", tmp_path / "status")


@pytest.mark.django_db
def test_it_records_each_providers_image_in_the_manifest_at_plan_time(chain_provider, local):
    run = plan_run("t", benchmarks=["create"], providers=["local"], trials=1, seed=1)
    reference, digest = local.standard_image()
    assert run.manifest["images"] == {"local": {"reference": reference, "digest": digest}}
    # The results pages read the same entry.
    assert image_digest(run.manifest, "create") == digest
    assert image_digest(run.manifest, "create", ["local"]) == digest


@pytest.mark.django_db
def test_it_records_why_an_image_is_unknown_without_refusing_the_plan(chain_provider, local):
    chain_provider(FaultyProvider(local))  # an adapter without standard_image()
    run = plan_run("t", benchmarks=["create"], providers=["local"], trials=1, seed=1)
    assert "names no standard image" in run.manifest["images"]["local"]["error"]
    assert image_digest(run.manifest, "create") == ""


def test_it_shows_one_digest_per_source_and_none_when_providers_differ():
    a, b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    manifest = {"images": {"local": {"digest": a}, "docker": {"digest": b}}}
    assert image_digest(manifest, "create", ["local"]) == a
    assert image_digest(manifest, "create", ["docker"]) == b
    assert image_digest(manifest, "create") == ""  # two images: named per provider
    per_benchmark = {**manifest, "image_digests": {"deepswe": b}}
    assert image_digest(per_benchmark, "deepswe", ["local"]) == b


@pytest.mark.django_db
def test_it_records_the_commit_and_each_providers_pinned_adapter_at_plan_time(
    chain_provider, local, monkeypatch
):
    run = plan_run("t", benchmarks=["create"], providers=["local"], trials=1, seed=1)
    head = subprocess.run(
        ["git", "-C", str(provenance.ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert run.manifest["code"]["commit"] == head and isinstance(
        run.manifest["code"]["dirty"], bool
    )
    adapter = run.manifest["adapters"]["local"]
    assert adapter["adapter"] == "local"
    assert "runner/providers/local/adapter.py" in adapter["files"]
    assert "runner/providers/http.py" in adapter["files"]  # shared by every adapter
    assert len(adapter["source_sha256"]) == 64 and adapter["clients"] == {}
    assert run.typed_manifest.adapters["local"].source_sha256 == adapter["source_sha256"]
    # A changed adapter source is a different pin.
    real = provenance.Path.read_bytes
    changed = lambda path: real(path) + (b"#" if path.name == "adapter.py" else b"")  # noqa: E731
    monkeypatch.setattr(provenance.Path, "read_bytes", changed)
    assert provenance.adapter_version("local")["source_sha256"] != adapter["source_sha256"]
    assert provenance.adapter_version("modal")["clients"]["modal"] != "not installed"
    # An adapter off its SDK's default mode says so in the pin; the others have no such key.
    assert provenance.adapter_version("daytona")["sdk_mode"] == "deprecated polling"
    assert not adapter.get("sdk_mode")
    # An adapter on its provider's SDK records the SDK's version beside the transport's.
    from importlib import metadata

    opensandbox = provenance.adapter_version("opensandbox")["clients"]
    assert opensandbox == {
        "opensandbox": metadata.version("opensandbox"),
        "httpx": metadata.version("httpx"),
    }
    assert provenance.adapter_version("e2b")["clients"]["e2b"] == metadata.version("e2b")
    assert provenance.adapter_version("daytona")["clients"]["daytona"] == "0.226.1"
    assert provenance.adapter_version("agentcore")["clients"] == {
        "boto3": metadata.version("boto3"),
        "botocore": metadata.version("botocore"),
    }


def test_an_adapter_over_a_command_line_tool_records_the_tools_version(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert provenance.adapter_version("apple-container")["clients"] == {
        "container": "not installed"
    }
    tool = tmp_path / "container"
    tool.write_text("#!/bin/sh\necho 'container CLI version 0.6.0 (build: release)'\n")
    tool.chmod(0o755)
    assert provenance.adapter_version("apple-container")["clients"] == {
        "container": "container CLI version 0.6.0 (build: release)"
    }


def test_it_says_why_the_commit_is_unknown_outside_a_checkout(tmp_path):
    assert "no git commit" in provenance.code_commit(tmp_path)["error"]


@pytest.mark.django_db
def test_a_planned_run_fixes_every_audit_threshold_in_its_manifest(chain_provider, local):
    from stats import audit

    run = plan_run("t", benchmarks=["create"], providers=["local"], trials=1, seed=1)
    assert run.manifest["audit_settings"] == audit.DEFAULT_SETTINGS.to_dict()
    assert run.typed_manifest.audit_settings == audit.DEFAULT_SETTINGS.to_dict()
