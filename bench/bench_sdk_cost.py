"""The client time a provider's official SDK adds, beside a bare HTTP call to the same server.

    python bench/bench_sdk_cost.py [--calls 200] [--creates 50]
        [--provider opensandbox,e2b,daytona,vercel]

OpenSandbox: boxbench's execd (the daemon every OpenSandbox sandbox here runs) on loopback, and a
loopback stand-in for the lifecycle API that answers create (202 Running) and the endpoint
lookups at once, so what differs between the two columns is the client alone. Each operation is
timed through the adapter, which calls the SDK (`opensandbox`), and through one httpx client
sending what the adapter sent before it moved onto the SDK, on the same kind of transport (keep-
alive, TCP_NODELAY), alternately call by call so both see the same moments of machine load:

- create: SDK: POST /v1/sandboxes plus the endpoints of execd and of the egress sidecar (the SDK
  resolves both before it returns); bare: the POST plus execd's endpoint;
- exec: `true` through execd's POST /command, read to the stream's end;
- file round trip: a 64 KiB upload (multipart) and its download.

E2B: its loopback fake (runner/providers/fakes/e2b.py, commands run in local bubblewrap
sandboxes), the adapter on E2B's SDK beside one httpx client sending what the adapter sent before
the SDK: create is POST /v2/sandboxes; exec is envd's Connect stream `process.Process/Start` of
`/bin/bash -l -c true` (the command the SDK sends for `true`, so the sandbox does the same work);
the file round trip is envd's POST and GET /files.

Daytona: its loopback fake (runner/providers/fakes/daytona.py), the adapter on Daytona's SDK
beside one httpx client sending what the SDK sends: create is POST /sandbox and then GET
/sandbox/{id} at once and every 0.1 s until `started` (the SDK's polling schedule, so only the
client differs); exec is the session's POST .../exec of `(cd /app && true)`; the file round trip is
the toolbox's POST /files/bulk-upload (multipart) and POST /files/bulk-download (a multipart
answer).

Vercel: its loopback fake (runner/providers/fakes/vercel.py), the adapter on Vercel's SDK beside
one httpx client sending what the SDK sends, on one kept-alive connection: exec is the session's
POST .../cmd?wait=true&logs=true of `true`, its ndjson stream read to the end (the SDK sends it
with `Connection: close`, so each of its commands opens a connection: that is part of what it
adds); the file round trip is POST .../fs/write (a gzip tar) and POST .../fs/read. No create: the
fake boots a bubblewrap sandbox for each, which would drown the client's share.

Prints lower medians and nearest-rank p95 in ms for each, and the added time: the median of the
paired differences (SDK call minus the bare call next to it). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boxbench.settings")

import django

django.setup()

import httpx  # noqa: E402

from runner.providers import get_provider  # noqa: E402
from runner.providers.base import Sandbox, SandboxSpec  # noqa: E402
from runner.providers.fakes import connect  # noqa: E402
from runner.providers.fakes.daytona import DaytonaFake  # noqa: E402
from runner.providers.fakes.e2b import E2BFake  # noqa: E402
from runner.providers.fakes.server import FakeHTTPServer, Request, Response  # noqa: E402
from runner.providers.opensandbox import local  # noqa: E402
from runner.providers.opensandbox.adapter import NODELAY, sdk_version  # noqa: E402

SPEC = SandboxSpec(cpus=1, memory_mib=512, label="bb-bench-sdk", lifetime_s=300, image="any")
E2B_SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-bench-sdk", lifetime_s=300)
PAYLOAD = secrets.token_bytes(64 * 1024)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def start_execd(directory: Path) -> tuple[subprocess.Popen, int]:
    port = local.free_port()
    env = {"EXECD_PORT": str(port), "EXECD_HOST": "127.0.0.1", "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        [sys.executable, str(local.EXECD_DIR / "execd.py")], cwd=directory, env=env
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("execd did not start")


def lifecycle_stand_in(execd_port: int) -> FakeHTTPServer:
    """Answers as OpenSandbox's server does on the Docker runtime, without the engine."""
    endpoint = {"endpoint": f"127.0.0.1:{execd_port}/proxy/{execd_port}"}

    def app(request: Request) -> Response:
        if request.method == "POST" and request.path == "/v1/sandboxes":
            return Response.json(
                202,
                {
                    "id": secrets.token_hex(8),
                    "status": {"state": "Running"},
                    "entrypoint": ["sleep", "infinity"],
                    "createdAt": "2026-12-05T00:00:00Z",
                    "expiresAt": "2026-12-05T01:00:00Z",
                    "metadata": request.json().get("metadata") or {},
                },
            )
        if request.method == "GET" and "/endpoints/" in request.path:
            return Response.json(200, endpoint)
        return Response.json(404, {"code": "NOT_FOUND", "message": request.path})

    server = FakeHTTPServer(app, idle_timeout_s=300, name="opensandbox-lifecycle")
    server.start()
    return server


class Bare:
    """What the adapter sent before it called the SDK: one httpx client, the same transport."""

    def __init__(self, api: str, execd: str, directory: Path):
        limits = httpx.Limits(keepalive_expiry=300)
        self.client = httpx.Client(
            transport=httpx.HTTPTransport(limits=limits, socket_options=NODELAY),
            timeout=30,
            trust_env=False,
        )
        self.api, self.execd, self.directory = api, execd, directory

    def create(self) -> None:
        body = {
            "image": {"uri": "any"},
            "entrypoint": ["sleep", "infinity"],
            "timeout": 300,
            "resourceLimits": {"cpu": "1", "memory": "512Mi"},
            "metadata": {"boxbench.batch": SPEC.label},
        }
        created = self.client.post(f"{self.api}/v1/sandboxes", json=body).json()
        self.client.get(f"{self.api}/v1/sandboxes/{created['id']}/endpoints/44772").json()

    def exec(self) -> None:
        body = {"command": "true", "cwd": str(self.directory), "timeout": 35000}
        with self.client.stream("POST", f"{self.execd}/command", json=body) as response:
            events = [json.loads(line) for line in response.iter_lines() if line.strip()]
        assert events[-1]["type"] == "execution_complete", events

    def files(self) -> None:
        path = str(self.directory / "bare.bin")
        parts = [
            ("metadata", ("metadata", json.dumps({"path": path, "mode": 644}).encode())),
            ("file", ("bare.bin", PAYLOAD, "application/octet-stream")),
        ]
        self.client.post(f"{self.execd}/files/upload", files=parts).raise_for_status()
        got = self.client.get(f"{self.execd}/files/download", params={"path": path})
        assert got.content == PAYLOAD


class BareE2B:
    """What the e2b adapter sent before it called E2B's SDK."""

    def __init__(self, settings: dict):
        self.client = httpx.Client(timeout=30, trust_env=False)
        self.settings = settings
        self.token = ""
        self.sandbox_id = ""

    def create(self) -> None:
        body = {
            "templateID": self.settings["template"],
            "timeout": 300,
            "metadata": {"boxbench.batch": E2B_SPEC.label},
            "allow_internet_access": False,
            "autoPause": False,
        }
        headers = {"X-API-Key": self.settings["api_key"]}
        answer = self.client.post(
            f"{self.settings['api_url']}/v2/sandboxes", json=body, headers=headers
        )
        created = answer.json()
        if not self.sandbox_id:  # the first one serves exec and files
            self.sandbox_id, self.token = created["sandboxID"], created["envdAccessToken"]

    def _envd(self) -> dict:
        return {
            "E2b-Sandbox-Id": self.sandbox_id,
            "E2b-Sandbox-Port": "49983",
            "X-Access-Token": self.token,
        }

    def exec(self) -> None:
        request = {
            "process": {
                "cmd": "/bin/bash",
                "args": ["-l", "-c", "true"],
                "envs": {},
                "cwd": "/app",
            },
            "stdin": False,
        }
        headers = {
            **self._envd(),
            "Content-Type": connect.STREAM_CONTENT_TYPE,
            "Connect-Protocol-Version": "1",
            "Keepalive-Ping-Interval": "50",
        }
        url = f"{self.settings['sandbox_url']}/process.Process/Start"
        with self.client.stream(
            "POST", url, content=connect.envelope(request), headers=headers
        ) as response:
            events = list(connect.read_envelopes(response.iter_bytes()))
        assert any("end" in (m.get("event") or {}) for _, m in events), events

    def files(self) -> None:
        url = f"{self.settings['sandbox_url']}/files"
        params = {"path": "/app/bare.bin"}
        self.client.post(
            url, params=params, headers=self._envd(), files={"file": ("bare.bin", PAYLOAD)}
        ).raise_for_status()
        got = self.client.get(url, params=params, headers=self._envd())
        assert got.content == PAYLOAD


class BareDaytona:
    """The calls Daytona's SDK makes, sent by one httpx client."""

    def __init__(self, settings: dict):
        self.client = httpx.Client(timeout=30, trust_env=False)
        self.headers = {"Authorization": f"Bearer {settings['api_key']}"}
        self.settings = settings
        self.sandbox_id = ""
        self.session = f"bare-{secrets.token_hex(4)}"

    def create(self) -> None:
        api = self.settings["api_url"]
        body = {
            "snapshot": self.settings["snapshot"],
            "labels": {"boxbench.batch": E2B_SPEC.label},
            "target": "us",
            "networkBlockAll": True,
            "autoStopInterval": 5,
            "autoDeleteInterval": 0,
        }
        created = self.client.post(f"{api}/sandbox", json=body, headers=self.headers).json()
        while True:
            answer = self.client.get(f"{api}/sandbox/{created['id']}", headers=self.headers)
            if answer.json()["state"] == "started":
                break
            time.sleep(0.1)
        if not self.sandbox_id:  # the first one serves exec and files
            self.sandbox_id = created["id"]
            self.client.post(
                f"{self._toolbox()}/process/session",
                headers=self.headers,
                json={"sessionId": self.session},
            ).raise_for_status()

    def _toolbox(self) -> str:
        return f"{self.settings['toolbox_url']}/{self.sandbox_id}"

    def exec(self) -> None:
        body = {"command": "(cd /app && true)", "runAsync": False}
        url = f"{self._toolbox()}/process/session/{self.session}/exec"
        answer = self.client.post(url, json=body, headers=self.headers)
        assert answer.json()["exitCode"] == 0, answer.text

    def files(self) -> None:
        self.client.post(
            f"{self._toolbox()}/files/bulk-upload",
            headers=self.headers,
            data={"files[0].path": "/app/bare.bin"},
            files={"files[0].file": ("bare.bin", PAYLOAD)},
        ).raise_for_status()
        got = self.client.post(
            f"{self._toolbox()}/files/bulk-download",
            headers=self.headers,
            json={"paths": ["/app/bare.bin"]},
        )
        assert PAYLOAD in got.content


def daytona_pairs(directory: Path, args):
    from runner.providers.daytona import _installed

    fake = DaytonaFake(directory).start()
    settings = fake.adapter_settings()
    provider = get_provider("daytona", settings=settings)
    bare = BareDaytona(settings)
    created = []

    def clear():
        """Each create starts a sandbox in the fake (20 at most): end all but the first two."""
        for sandbox in created[1:]:
            provider.destroy(sandbox)
        del created[1:]
        for item in provider.list_sandboxes(E2B_SPEC.label):
            if item.id not in (created[0].id, bare.sandbox_id):
                provider.destroy(Sandbox(id=item.id, label=item.label))

    created.append(provider.create(E2B_SPEC))
    bare.create()
    sandbox = created[0]

    def sdk_files():
        provider.upload(sandbox, "/app/sdk.bin", PAYLOAD)
        assert provider.download(sandbox, "/app/sdk.bin") == PAYLOAD

    pairs = {
        "create": (
            lambda: created.append(provider.create(E2B_SPEC)),
            bare.create,
            max(2, args.creates // 5),
            clear,
        ),
        "exec true": (lambda: provider.exec(sandbox, ["true"], 30), bare.exec, args.calls, None),
        "file 64 KiB": (sdk_files, bare.files, args.calls, None),
    }
    return f"daytona SDK {_installed('daytona')}", pairs, fake.stop


def opensandbox_pairs(directory: Path, args):
    execd, port = start_execd(directory)
    api = lifecycle_stand_in(port)
    provider = get_provider("opensandbox", settings={"url": api.url, "api_key": "k"})
    bare = Bare(api.url, f"http://127.0.0.1:{port}/proxy/{port}", directory)
    sandbox = provider.create(SPEC)
    path = str(directory / "sdk.bin")

    def sdk_files():
        provider.upload(sandbox, path, PAYLOAD)
        assert provider.download(sandbox, path) == PAYLOAD

    def stop():
        api.stop()
        execd.kill()
        execd.wait(5)

    pairs = {
        "create": (lambda: provider.create(SPEC), bare.create, args.creates, None),
        "exec true": (
            lambda: provider.exec(sandbox, ["true"], 30, workdir=str(directory)),
            bare.exec,
            args.calls,
            None,
        ),
        "file 64 KiB": (sdk_files, bare.files, args.calls, None),
    }
    return f"opensandbox SDK {sdk_version()}", pairs, stop


def e2b_pairs(directory: Path, args):
    from runner.providers.e2b import _installed

    fake = E2BFake(directory).start()
    settings = fake.adapter_settings()
    provider = get_provider("e2b", settings=settings)
    bare = BareE2B(settings)
    created = []

    def sdk_create():
        created.append(provider.create(E2B_SPEC))

    def bare_create():
        bare.create()

    def clear():
        """Each create starts a sandbox in the fake (20 at most): end all but the first two."""
        for sandbox in created[1:]:
            provider.destroy(sandbox)
        del created[1:]
        for item in provider.list_sandboxes(E2B_SPEC.label):
            if item.id not in (created[0].id, bare.sandbox_id):
                provider.destroy(Sandbox(id=item.id, label=item.label))

    sdk_create(), bare.create()  # the sandboxes that serve exec and files
    sandbox = created[0]

    def sdk_files():
        provider.upload(sandbox, "/app/sdk.bin", PAYLOAD)
        assert provider.download(sandbox, "/app/sdk.bin") == PAYLOAD

    pairs = {
        # Each create starts a bubblewrap sandbox in the fake: fewer of them.
        "create": (sdk_create, bare_create, max(2, args.creates // 5), clear),
        "exec true": (lambda: provider.exec(sandbox, ["true"], 30), bare.exec, args.calls, None),
        "file 64 KiB": (sdk_files, bare.files, args.calls, None),
    }
    return f"e2b SDK {_installed('e2b')}", pairs, fake.stop


class BareVercel:
    """The calls Vercel's SDK makes for a command and a file round trip, sent by one httpx
    client over one kept-alive connection."""

    def __init__(self, settings: dict, session: str):
        self.http = httpx.Client(
            base_url=f"{settings['api_url']}/v2/sandboxes/sessions/{session}",
            headers={"Authorization": f"Bearer {settings['token']}"},
            params={"teamId": settings["team_id"]},
            timeout=30,
        )

    def exec(self) -> None:
        body = {"command": "true", "args": [], "cwd": "/app", "env": {}, "sudo": False}
        body.update(wait=True, logs=True, timeout=30_000)
        params = {"wait": "true", "logs": "true"}
        with self.http.stream("POST", "/cmd", params=params, json=body) as answer:
            last = answer.read().splitlines()[-1]  # the stream, to its end
        assert json.loads(last)["command"]["exitCode"] == 0

    def files(self) -> None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            member = tarfile.TarInfo("app/bare.bin")
            member.size = len(PAYLOAD)
            archive.addfile(member, io.BytesIO(PAYLOAD))
        headers = {"Content-Type": "application/gzip", "x-cwd": "/"}
        written = self.http.post(
            "/fs/write", content=gzip.compress(buffer.getvalue()), headers=headers
        )
        written.raise_for_status()
        read = self.http.post("/fs/read", json={"path": "/app/bare.bin"})
        assert read.content == PAYLOAD


def vercel_pairs(directory: Path, args):
    from runner.providers.fakes.vercel import VercelFake

    fake = VercelFake(directory).start()
    settings = fake.adapter_settings()
    provider = get_provider("vercel", settings=settings)
    sandbox = provider.create(E2B_SPEC)
    bare = BareVercel(settings, sandbox.facts["session"])

    def sdk_files():
        provider.upload(sandbox, "/app/sdk.bin", PAYLOAD)
        assert provider.download(sandbox, "/app/sdk.bin") == PAYLOAD

    pairs = {
        "exec true": (lambda: provider.exec(sandbox, ["true"], 30), bare.exec, args.calls, None),
        "file 64 KiB": (sdk_files, bare.files, args.calls, None),
    }
    return f"vercel SDK {metadata.version('vercel-sandbox')}", pairs, fake.stop


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200, help="execs and file round trips")
    parser.add_argument("--creates", type=int, default=50)
    parser.add_argument("--provider", default="opensandbox,e2b,daytona,vercel")
    args = parser.parse_args()
    builders = {
        "opensandbox": opensandbox_pairs,
        "e2b": e2b_pairs,
        "daytona": daytona_pairs,
        "vercel": vercel_pairs,
    }
    print(f"httpx {httpx.__version__}; ms")
    print(
        f"{'provider':<12} {'operation':<12} {'n':>4} {'SDK median':>11} {'SDK p95':>8} "
        f"{'bare median':>12} {'bare p95':>9} {'added median':>13}"
    )
    for slug in [s.strip() for s in args.provider.split(",") if s.strip()]:
        with tempfile.TemporaryDirectory() as scratch:
            title, pairs, stop = builders[slug](Path(scratch), args)
            try:
                print(title)
                for name, (through_sdk, direct, count, after) in pairs.items():
                    through_sdk(), direct()  # warm connections and imports, untimed
                    if after:
                        after()
                    sdk, plain, added = [], [], []
                    for i in range(count):
                        first, second = (through_sdk, direct) if i % 2 else (direct, through_sdk)
                        a, b = timed(first), timed(second)
                        s, p = (a, b) if first is through_sdk else (b, a)
                        sdk.append(s)
                        plain.append(p)
                        added.append(s - p)
                        if after:
                            after()
                    print(
                        f"{slug:<12} {name:<12} {count:>4} {statistics.median_low(sdk):>11.2f} "
                        f"{percentile(sdk, 95):>8.2f} {statistics.median_low(plain):>12.2f} "
                        f"{percentile(plain, 95):>9.2f} {statistics.median_low(added):>13.2f}"
                    )
            finally:
                stop()


if __name__ == "__main__":
    import logging

    logging.disable(logging.INFO)
    main()
