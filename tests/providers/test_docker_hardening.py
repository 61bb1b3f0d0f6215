"""The `docker` provider's defences against a hostile engine answer and a hostile command."""

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from runner.declarations import get_declaration
from runner.providers import docker_seccomp
from runner.providers.base import ProviderError, Sandbox
from runner.providers.docker import DockerProvider


class ArchiveEngine:
    """An engine whose archive of any path is `archive`."""

    def __init__(self, archive: bytes):
        self.archive = archive

    def get_archive(self, container_id, path):
        return iter([self.archive]), {}


def _tar(size: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("file")
        info.size = size
        tar.addfile(info, io.BytesIO(b"\0" * size))
    return buffer.getvalue()


def test_a_compressed_archive_from_the_engine_is_refused_before_any_decompression(monkeypatch):
    # 64 MiB of zeros in 64 KiB: transparent decompression would expand it before any member
    # size is checked against the 1 MiB cap.
    bomb = gzip.compress(_tar(64 * 2**20))
    assert len(bomb) < 2**20
    expanded = []
    real_gzopen = tarfile.TarFile.gzopen.__func__

    def counting_gzopen(cls, *args, **kwargs):
        expanded.append(args[0])
        return real_gzopen(cls, *args, **kwargs)

    monkeypatch.setattr(tarfile.TarFile, "gzopen", classmethod(counting_gzopen))
    provider = DockerProvider(get_declaration("docker"), {"max_download_mib": 1})
    monkeypatch.setattr(DockerProvider, "api", ArchiveEngine(bomb))
    with pytest.raises(ProviderError, match="is not a plain tar"):
        provider.download(Sandbox("c1", "label"), "/app/file")
    assert expanded == []


def test_a_plain_archive_from_the_engine_is_still_read():
    provider = DockerProvider(get_declaration("docker"), {})
    provider.__class__ = type("Stubbed", (DockerProvider,), {"api": ArchiveEngine(_tar(5))})
    assert provider.download(Sandbox("c1", "label"), "/app/file") == b"\0" * 5


def test_its_seccomp_profile_refuses_new_namespaces_keyrings_and_ptrace():
    profile = docker_seccomp.profile()
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    refused = profile["syscalls"][0]
    assert refused["action"] == "SCMP_ACT_ERRNO" and refused["errnoRet"] == 1
    wanted = {"unshare", "setns", "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv"}
    assert wanted <= set(refused["names"])
    clone_flags = {r["args"][0]["value"] for r in profile["syscalls"] if r["names"] == ["clone"]}
    assert 0x10000000 in clone_flags  # CLONE_NEWUSER


def test_docker_gets_the_profile_itself_and_podman_a_file_holding_it():
    docker_options = docker_seccomp.security_opt("Docker")
    assert docker_options[0] == "no-new-privileges"
    text = docker_options[1].removeprefix("seccomp=")
    assert json.loads(text) == docker_seccomp.profile()
    podman_options = docker_seccomp.security_opt("Podman")
    path = Path(podman_options[1].removeprefix("seccomp="))
    assert path.read_text() == text and path.stat().st_mode & 0o777 == 0o644
