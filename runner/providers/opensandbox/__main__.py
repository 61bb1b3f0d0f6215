"""`python -m runner.providers.opensandbox serve`: OpenSandbox's real server on this machine.

Starts Podman's Docker-compatible service with the ulimit override (or uses --docker-host),
prepares the standard image and the execd image, writes the server's configuration with a fresh
API key, starts `opensandbox-server` on 127.0.0.1, prints the variables the `opensandbox`
provider reads, and runs until interrupted (Ctrl-C), then stops what it started.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
import threading
from pathlib import Path

from runner.providers.opensandbox.local import LocalStackError, start_stack

REPO = Path(__file__).resolve().parents[3]


def main(argv: list[str] | None = None) -> int:
    var = Path(os.environ.get("BOXBENCH_VAR_DIR", REPO / "var"))
    parser = argparse.ArgumentParser(prog="python -m runner.providers.opensandbox")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run OpenSandbox's server on this machine")
    serve.add_argument("--port", type=int, default=8080, help="server port (default 8080)")
    serve.add_argument(
        "--dir",
        type=Path,
        default=var / "opensandbox",
        help="configuration, API key, logs and the SQLite store (default var/opensandbox)",
    )
    serve.add_argument(
        "--docker-host",
        default="",
        help="an engine to drive instead of starting Podman (unix:///path.sock); its containers "
        "need nofile and nproc default ulimits runc can set",
    )
    args = parser.parse_args(argv)

    directory = args.dir.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    key_file = directory / "api-key"
    api_key = secrets.token_urlsafe(24)
    key_file.write_text(api_key + "\n")
    key_file.chmod(0o600)
    try:
        stack = start_stack(
            directory,
            args.port,
            api_key,
            var / "images",
            docker_host=args.docker_host,
            log=lambda message: print(message, flush=True),
        )
    except LocalStackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        "\nThe opensandbox provider reads:\n"
        f"  export OPEN_SANDBOX_DOMAIN=127.0.0.1:{args.port}\n"
        f"  export OPEN_SANDBOX_API_KEY_FILE={key_file}\n"
        f"  export BOXBENCH_OPENSANDBOX_DOCKER_HOST={stack.docker_host}\n"
        "Running until Ctrl-C.",
        flush=True,
    )
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    while not stopped.wait(1.0):
        if stack.server.popen.poll() is not None:
            print(f"opensandbox-server exited; its log: {stack.server.log}", file=sys.stderr)
            break
    stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
