"""A public deployment: the secret key, the documented production settings, and what gunicorn
answers to HEAD, OPTIONS and TRACE."""

import os
import re
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from boxbench.checks import secret_key_problem
from boxbench.env import envheader, envorigins
from tests.web.http_probe import check_methods

ROOT = Path(__file__).resolve().parents[2]
BASE_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}


def production_env(tmp_path) -> dict:
    """The block of docs/deployment.md, with a real random key."""
    text = (ROOT / "docs" / "deployment.md").read_text()
    block = re.search(r"```env\n(.*?)```", text, re.S).group(1)
    env = dict(line.split("=", 1) for line in block.splitlines() if line.strip())
    env["SECRET_KEY"] = secrets.token_urlsafe(48)
    return {**BASE_ENV, "BOXBENCH_VAR_DIR": str(tmp_path), **env}


def manage(env, *args):
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_it_passes_check_deploy_with_the_documented_production_settings(tmp_path):
    result = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_it_fails_check_deploy_on_the_development_key(tmp_path):
    env = production_env(tmp_path)
    del env["SECRET_KEY"]
    result = manage(env, "check", "--deploy")
    assert result.returncode != 0
    assert "boxbench.E003" in result.stderr and "development default" in result.stderr


def serve(env) -> subprocess.CompletedProcess:
    """Load the WSGI application as runserver and gunicorn do."""
    return subprocess.run(
        [sys.executable, "-c", "import boxbench.wsgi"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    "key, refusal",
    [
        (None, "SECRET_KEY is the development default"),
        ("k" * 49, "SECRET_KEY has 49 characters, fewer than 50"),
    ],
)
def test_it_refuses_to_serve_with_debug_off_and_an_unsafe_key(tmp_path, key, refusal):
    env = {**BASE_ENV, "BOXBENCH_VAR_DIR": str(tmp_path), "DEBUG": "0"}
    if key is not None:
        env["SECRET_KEY"] = key
    result = serve(env)
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {refusal}" in result.stderr
    assert "SECRET_KEY_FILE" in result.stderr


def test_it_serves_with_a_long_key_or_in_debug(tmp_path):
    env = {**BASE_ENV, "BOXBENCH_VAR_DIR": str(tmp_path), "DEBUG": "0"}
    assert serve({**env, "SECRET_KEY": "k" * 50}).returncode == 0
    assert serve({**env, "DEBUG": "1"}).returncode == 0


def test_it_names_what_is_wrong_with_a_key():
    assert secret_key_problem("boxbench-development-only-secret-key-" + "x" * 50)
    assert secret_key_problem("short") == "SECRET_KEY has 5 characters, fewer than 50"
    assert secret_key_problem(secrets.token_urlsafe(48)) is None


def test_it_reads_the_proxy_header_as_a_header_line(monkeypatch):
    monkeypatch.setenv("PROXY", "X-Forwarded-Proto: https")
    assert envheader("PROXY") == ("HTTP_X_FORWARDED_PROTO", "https")
    monkeypatch.setenv("PROXY", "")
    assert envheader("PROXY") is None
    for bad in ("X-Forwarded-Proto", "X Forwarded: https", "X-Forwarded-Proto:"):
        monkeypatch.setenv("PROXY", bad)
        with pytest.raises(ImproperlyConfigured, match="PROXY=.* is not a header line"):
            envheader("PROXY")


def test_it_reads_trusted_origins_strictly(monkeypatch):
    monkeypatch.setenv("ORIGINS", "https://bench.example.org, https://*.example.org:8443")
    assert envorigins("ORIGINS") == ["https://bench.example.org", "https://*.example.org:8443"]
    monkeypatch.setenv("ORIGINS", "bench.example.org")
    with pytest.raises(ImproperlyConfigured, match="ORIGINS: 'bench.example.org' is not an"):
        envorigins("ORIGINS")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_gunicorn_answers_head_without_a_body_and_405_to_options_and_trace(tmp_path):
    port = free_port()
    env = {**os.environ, "BOXBENCH_VAR_DIR": str(tmp_path), "DEBUG": "0"}
    env["SECRET_KEY"] = secrets.token_urlsafe(48)
    env.pop("DATABASE_URL", None)
    # A deployment as it is served: migrated (the page cache is a table of the database).
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    with open(tmp_path / "gunicorn.log", "wb") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "boxbench.wsgi",
                "-b",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError((tmp_path / "gunicorn.log").read_text()) from None
                time.sleep(0.1)
        check_methods(port)
    finally:
        server.terminate()
        server.wait(timeout=30)
