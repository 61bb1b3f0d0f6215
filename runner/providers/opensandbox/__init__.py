"""OpenSandbox (alibaba/OpenSandbox) on its real server: the adapter (adapter.py, through
OpenSandbox's Python SDK), its error mapping (errors.py), boxbench's execd-compatible daemon
(execd/), and the local stack that runs the server on Podman (local.py; `python -m
runner.providers.opensandbox serve`)."""

from runner.providers.opensandbox.adapter import OpenSandboxProvider

__all__ = ["OpenSandboxProvider"]
