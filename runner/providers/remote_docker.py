"""`remote-docker`: the Docker Engine API provider (docker.py) aimed at a Docker host you control,
over ssh:// or tcp:// with TLS; only where it connects and how it authenticates differ."""

from __future__ import annotations

import os
from urllib.parse import urlparse

import docker

from runner.providers.base import DoctorCheck, ProviderError
from runner.providers.docker import DockerProvider, tls_from_directory


class RemoteDockerProvider(DockerProvider):
    """`remote-docker`: a Docker host you control, over ssh:// or tcp:// with TLS."""

    slug = "remote-docker"
    host_variable = "BOXBENCH_REMOTE_DOCKER_HOST"
    cert_path_variable = "BOXBENCH_REMOTE_DOCKER_CERT_PATH"

    def base_url(self) -> str:
        url = self.settings.get("host") or os.environ.get(self.host_variable, "")
        if not url:
            raise ProviderError(
                f"{self.slug}: set {self.host_variable} to ssh://user@host or tcp://host:2376",
                operation="connect",
            )
        scheme = urlparse(url).scheme
        if scheme not in ("ssh", "tcp"):
            raise ProviderError(
                f"{self.host_variable}={url!r}: use ssh://user@host or tcp://host:port",
                operation="connect",
            )
        return url

    def doctor(self) -> list[DoctorCheck]:
        if not (self.settings.get("host") or os.environ.get(self.host_variable)):
            # Nothing to check: a remote engine is optional and this one is not configured.
            return [
                DoctorCheck.not_configured("engine", f"not configured (set {self.host_variable})")
            ]
        return super().doctor()

    def tls_config(self, url: str) -> docker.tls.TLSConfig | bool:
        if url.startswith("ssh://"):
            return False
        cert_path = self.settings.get("cert_path") or os.environ.get(self.cert_path_variable, "")
        if not cert_path:
            # An unauthenticated tcp:// engine gives root on that host to anyone who reaches it.
            raise ProviderError(
                f"{self.slug}: {url} needs TLS; set {self.cert_path_variable} to a directory "
                "holding ca.pem, cert.pem and key.pem",
                operation="connect",
            )
        return tls_from_directory(cert_path, self.cert_path_variable)
