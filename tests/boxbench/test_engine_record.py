"""`./boxbench.sh run` records the engine socket it starts, `bench` finds it from any shell, and
`./boxbench.sh stop` stops whatever a run left behind."""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from runner.declarations import get_declaration
from runner.providers.base import ProviderError
from runner.providers.docker import DockerProvider

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bare_env(monkeypatch, settings, tmp_path):
    """No DOCKER_HOST and no usual socket: only var/engine-socket can name the engine."""
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr("runner.providers.docker.LOCAL_SOCKETS", ())
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_bench_finds_the_socket_the_script_recorded(bare_env):
    path = bare_env / "podman.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    (bare_env / "engine-socket").write_text(f"unix://{path}\n")
    try:
        assert DockerProvider(get_declaration("docker")).base_url() == f"unix://{path}"
    finally:
        listener.close()


def test_bench_says_exactly_what_to_set_when_the_recorded_engine_stopped(bare_env):
    (bare_env / "engine-socket").write_text(f"unix://{bare_env}/podman.sock\n")
    provider = DockerProvider(get_declaration("docker"))
    with pytest.raises(ProviderError) as error:
        provider.base_url()
    message = str(error.value)
    assert "no engine socket found; set DOCKER_HOST" in message
    assert f"{bare_env}/engine-socket names unix://{bare_env}/podman.sock" in message
    assert "./boxbench.sh run" in message
    [check] = provider.doctor()
    assert not check.ok and "DOCKER_HOST=unix://" in check.detail


def leader(var: Path, name: str) -> subprocess.Popen:
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    (var / name).write_text(f"{process.pid}\n")
    return process


def test_stop_ends_the_worker_and_engine_a_killed_run_left_running(tmp_path):
    var = tmp_path / "var"
    var.mkdir()
    worker, engine = leader(var, "qcluster.pid"), leader(var, "podman-service.pid")
    dashboard = leader(var, "dashboard.pid")
    (var / "engine-socket").write_text(f"unix://{var}/podman.sock\n")
    stopped = subprocess.run(
        ["./boxbench.sh", "stop"],
        cwd=ROOT,
        env={**os.environ, "BOXBENCH_VAR_DIR": str(var)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stopped.returncode == 0, stopped.stderr
    assert worker.wait(timeout=10) == -signal.SIGTERM
    assert engine.wait(timeout=10) == -signal.SIGTERM
    assert dashboard.wait(timeout=10) == -signal.SIGTERM
    assert "Stopping the dashboard" in stopped.stdout
    assert "Stopping the queue worker" in stopped.stdout
    assert "Stopping the Podman service" in stopped.stdout
    assert sorted(p.name for p in var.iterdir()) == []


def test_stop_stops_a_run_in_progress_through_its_own_exit_handler(tmp_path):
    var = tmp_path / "var"
    var.mkdir()
    worker = leader(var, "qcluster.pid")
    # A stand-in for `run` that has started the worker and serves the dashboard, with the
    # script's own exit handler and signal traps, waiting on the dashboard as `run` does.
    functions = ("pid_alive", "stop_group", "stop_engine", "on_run_exit")
    extract = ";".join(f"/^{name}()/,/^}}/p" for name in functions) + ";/^say()/p"
    traps = "/^  trap /p"
    script = f"""
source <(sed -n '{extract}' ./boxbench.sh)
VAR={var}; STARTED_ENGINE=0
echo $$ > "$VAR/run.pid"
source <(sed -n "{traps}" ./boxbench.sh)
setsid sleep 300 & echo $! > "$VAR/dashboard.pid"; wait $!
"""
    run = subprocess.Popen(["bash", "-c", script], cwd=ROOT)
    deadline = time.monotonic() + 30
    while not (var / "dashboard.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # the pid is written just after the file is created
    dashboard = int((var / "dashboard.pid").read_text())
    stopped = subprocess.run(
        ["./boxbench.sh", "stop"],
        cwd=ROOT,
        env={**os.environ, "BOXBENCH_VAR_DIR": str(var)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stopped.returncode == 0, stopped.stderr
    assert run.wait(timeout=10) != 0
    assert worker.wait(timeout=10) == -signal.SIGTERM
    with pytest.raises(ProcessLookupError):  # stopped by the run's exit handler
        os.kill(dashboard, 0)
    assert not (var / "run.pid").exists() and not (var / "qcluster.pid").exists()
    assert not (var / "dashboard.pid").exists()
