"""boxbench's execd (runner/providers/opensandbox/execd/execd.py) run on loopback, driven through
the opensandbox adapter's exec and file calls, which are OpenSandbox's SDK's: the wire format of
OpenSandbox's execd API, exit codes, the guest clock wrapper, timeouts, background commands,
files and /proxy/{port}."""

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from opensandbox.models.sandboxes import SandboxEndpoint
from opensandbox.sync.adapters.factory import AdapterFactorySync
from opensandbox.sync.sandbox import SandboxSync

from runner import clock
from runner.providers import get_provider
from runner.providers.base import ExecTimeout, NotReady, Sandbox
from runner.providers.opensandbox import local
from runner.providers.opensandbox.errors import RequestRejected, SandboxGone

EXECD = local.EXECD_DIR / "execd.py"
TOKEN = "execd-test-token"
AUTH = {"X-EXECD-ACCESS-TOKEN": TOKEN}


def start_execd(directory, port, token=TOKEN):
    env = {"EXECD_PORT": str(port), "EXECD_HOST": "127.0.0.1", "PATH": "/usr/bin:/bin"}
    env["EXECD_ACCESS_TOKEN"] = token
    process = subprocess.Popen([sys.executable, str(EXECD)], cwd=directory, env=env)
    deadline = time.monotonic() + 60  # a loaded machine can take seconds to start Python
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    pytest.fail("execd did not answer /ping")


@pytest.fixture(scope="module")
def execd(tmp_path_factory):
    directory = tmp_path_factory.mktemp("execd")
    port = local.free_port()
    process = start_execd(directory, port)
    yield port, directory
    process.kill()
    process.wait(5)


@pytest.fixture
def provider():
    provider = get_provider("opensandbox", settings={"url": "127.0.0.1:9", "api_key": "unused"})
    yield provider
    provider.close()


def sandbox_at(provider, port, target=None):
    """A sandbox whose SDK handle reaches this execd as the server's endpoint says in bridge
    mode (through its own /proxy/44772), built from the SDK's own service factory."""
    endpoint = SandboxEndpoint(endpoint=f"127.0.0.1:{port}/proxy/{target or port}")
    config = provider.execd_config(TOKEN)
    factory = AdapterFactorySync(config)
    box = SandboxSync(
        sandbox_id="local",
        sandbox_service=factory.create_sandbox_service(),
        filesystem_service=factory.create_filesystem_service(endpoint),
        command_service=factory.create_command_service(endpoint),
        health_service=factory.create_health_service(endpoint),
        metrics_service=factory.create_metrics_service(endpoint),
        egress_service=factory.create_egress_service(endpoint),
        connection_config=config,
    )
    return Sandbox(id="local", label="t", handle=box)


def run(provider, port, argv, timeout, **kwargs):
    kwargs.setdefault("workdir", "/tmp")  # the adapter's default, /app, is the sandbox's
    return provider.exec(sandbox_at(provider, port), argv, timeout, **kwargs)


def test_it_streams_output_as_blank_line_separated_json_events(execd):
    port, _ = execd
    with httpx.stream(
        "POST",
        f"http://127.0.0.1:{port}/command",
        json={"command": "echo a; echo b >&2; exit 4"},
        headers=AUTH,
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = response.read().decode()
    frames = [json.loads(frame) for frame in raw.split("\n\n") if frame.strip()]
    kinds = [frame["type"] for frame in frames]
    assert kinds[0] == "init" and kinds[-1] == "error" and {"stdout", "stderr"} <= set(kinds)
    assert frames[-1]["error"] == {"ename": "CommandExecError", "evalue": "4", "traceback": []}
    assert not raw.startswith("data:")


def test_exec_returns_stdout_stderr_and_exit_codes(execd, provider):
    port, _ = execd
    ok = run(provider, port, ["sh", "-c", "echo out; echo err >&2"], 10)
    assert (ok.exit_code, ok.stdout, ok.stderr) == (0, b"out\n", b"err\n")
    failed = run(provider, port, ["sh", "-c", "exit 42"], 10)
    assert failed.exit_code == 42
    killed = run(provider, port, ["sh", "-c", "kill -TERM $$"], 10)
    assert killed.exit_code == 128 + 15


def test_exec_keeps_bytes_exact_and_passes_stdin_workdir_and_env(execd, provider, tmp_path):
    port, _ = execd
    payload = bytes(range(256))
    result = run(provider, port, ["cat"], 10, stdin=payload)
    assert result.stdout == payload
    where = run(
        provider,
        port,
        ["sh", "-c", 'pwd; echo "$GREETING"'],
        10,
        workdir=str(tmp_path),
        env={"GREETING": "it's here"},
    )
    assert where.stdout == f"{tmp_path}\nit's here\n".encode()


def test_the_guest_clock_wrapper_works_through_exec(execd, provider):
    port, _ = execd
    key = clock.new_key()
    argv = ["/bin/bash", "-c", clock.wrap("sleep 0.05; exit 3")]
    result = run(provider, port, argv, 10, stdin=clock.key_input(key))
    stderr, timing = clock.parse_trailer(result.stderr, key)
    assert result.exit_code == 3 and stderr == b""
    assert timing is not None and timing.wall_ms >= 50


def running_with(text: str) -> bool:
    """A process on this machine has `text` in its command line."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if text.encode() in cmdline.read_bytes():
                return True
    return False


def test_a_command_past_its_timeout_is_interrupted(execd, provider):
    port, directory = execd
    marker = directory / "survived"
    with pytest.raises(ExecTimeout):
        run(provider, port, ["sh", "-c", f"sleep 2; touch {marker}"], 0.5)
    # Not interrupted, it would end after its sleep and leave the marker: wait for it to end.
    deadline = time.monotonic() + 60
    while running_with(f"touch {marker}"):
        assert time.monotonic() < deadline, "the command still runs 60 s after its timeout"
        time.sleep(0.05)
    assert not marker.exists()


def test_a_background_launch_returns_and_its_command_finishes(execd, provider, tmp_path):
    port, _ = execd
    tag = "t" + str(time.monotonic_ns())[-8:]
    script = clock.background_script("echo done", tag)
    launched = run(provider, port, ["/bin/bash", "-c", script], 10, stdin=clock.key_input("0" * 32))
    assert launched.exit_code == 0
    polled = run(provider, port, clock.poll_command(tag, 5), 10)
    assert polled.exit_code == 0
    out = run(provider, port, ["cat", clock.background_paths(tag)["out"]], 10)
    assert out.stdout == b"done\n"


def test_background_mode_status_and_logs(execd):
    port, _ = execd
    base = f"http://127.0.0.1:{port}"
    answer = httpx.post(
        f"{base}/command", json={"command": "echo one; echo two", "background": True}, headers=AUTH
    )
    command_id = json.loads(answer.text.split("\n\n")[0])["text"]
    for _ in range(100):
        status = httpx.get(f"{base}/command/status/{command_id}", headers=AUTH).json()
        if not status["running"]:
            break
        time.sleep(0.02)
    assert status["exit_code"] == 0 and status["finished_at"]
    logs = httpx.get(f"{base}/command/{command_id}/logs", params={"cursor": 4}, headers=AUTH)
    assert logs.text == "two\n" and logs.headers["EXECD-COMMANDS-TAIL-CURSOR"] == "8"
    assert httpx.get(f"{base}/command/status/nope", headers=AUTH).status_code == 404


def test_files_upload_and_download_exactly(execd, provider, tmp_path):
    port, _ = execd
    data = bytes(range(256)) * 100 + b"\r\n--tail"
    target = tmp_path / "deep" / "file.bin"
    provider.upload(sandbox_at(provider, port), str(target), data)
    assert target.read_bytes() == data
    assert provider.download(sandbox_at(provider, port), str(target)) == data
    ranged = httpx.get(
        f"http://127.0.0.1:{port}/files/download",
        params={"path": str(target)},
        headers={"Range": "bytes=2-5", **AUTH},
    )
    assert ranged.status_code == 206 and ranged.content == data[2:6]
    # A download is streamed (within max_download_mib), and the SDK's stream keeps only the
    # status of a refusal: the path and the 404, not execd's FILE_NOT_FOUND.
    with pytest.raises(SandboxGone, match=r"HTTP 404: .*/missing"):
        provider.download(sandbox_at(provider, port), str(tmp_path / "missing"))


def test_bad_requests_are_400_with_a_code_and_message(execd, provider):
    port, _ = execd
    answer = httpx.post(f"http://127.0.0.1:{port}/command", json={"cwd": "/"}, headers=AUTH)
    assert answer.status_code == 400 and answer.json()["code"] == "INVALID_REQUEST"
    with pytest.raises(RequestRejected, match="is not a directory"):
        run(provider, port, ["true"], 10, workdir="/no/such/dir")


def test_proxy_forwards_other_ports_without_the_token(execd, tmp_path):
    port, _ = execd
    other = local.free_port()
    second = start_execd(tmp_path, other)  # the same token: it would let the call in
    try:
        base = f"http://127.0.0.1:{port}/proxy/{other}"
        assert httpx.get(f"{base}/ping", headers=AUTH).status_code == 200
        # Forwarded, but the token stays with execd: the sandbox's own service never sees it.
        answer = httpx.get(f"{base}/command/status/none", headers=AUTH)
        assert answer.status_code == 401 and answer.json()["code"] == "UNAUTHORIZED"
        closed = httpx.get(f"http://127.0.0.1:{port}/proxy/{local.free_port()}/ping", headers=AUTH)
        assert closed.status_code == 502
    finally:
        second.kill()
        second.wait(5)


def test_a_closed_port_is_not_ready(provider):
    with pytest.raises(NotReady):
        run(provider, local.free_port(), ["true"], 5)


def test_a_token_guards_everything_but_ping(tmp_path):
    """Another sandbox on the bridge reaches this port: without the token it runs nothing, not
    even through a /proxy path to execd itself or to a service beside it."""
    port = local.free_port()
    process = start_execd(tmp_path, port, token="s3cret")
    marker = tmp_path / "ran"
    attack = {"command": f"touch {marker}"}
    try:
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/ping").status_code == 200
        for url, headers in [
            (f"{base}/command", {}),
            (f"{base}/command", {"X-EXECD-ACCESS-TOKEN": "s3cre"}),
            (f"{base}/proxy/{port}/command", {}),
        ]:
            assert httpx.post(url, json=attack, headers=headers).status_code == 401
        assert httpx.get(f"{base}/proxy/{port + 1}/ping").status_code == 401
        assert not marker.exists()
        allowed = httpx.post(
            f"{base}/command", json={"command": "true"}, headers={"X-EXECD-ACCESS-TOKEN": "s3cret"}
        )
        assert allowed.status_code == 200
    finally:
        process.kill()
        process.wait(5)


def test_execd_does_not_start_without_a_token(tmp_path):
    env = {"EXECD_PORT": str(local.free_port()), "EXECD_HOST": "127.0.0.1", "PATH": "/usr/bin"}
    ended = subprocess.run(
        [sys.executable, str(EXECD)], cwd=tmp_path, env=env, capture_output=True, timeout=60
    )
    assert ended.returncode != 0
    assert b"EXECD_ACCESS_TOKEN is not set" in ended.stderr


def test_the_commands_environment_holds_no_token(execd, provider):
    # Read from /proc, the sandbox's own token opens only the sandbox its reader already runs in.
    port, _ = execd
    seen = run(provider, port, ["env"], 10)
    assert seen.exit_code == 0 and b"PATH=" in seen.stdout and TOKEN.encode() not in seen.stdout
