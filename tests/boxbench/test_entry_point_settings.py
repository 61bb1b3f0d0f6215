"""Every entry point refuses an unsafe secret: the queue worker the development SECRET_KEY (with
it, whoever reaches the broker could sign a task), any process a guessable metrics token, and a
site address that is not one."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def manage(tmp_path, *args, **env):
    base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "BOXBENCH_VAR_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "key, refusal",
    [(None, "SECRET_KEY is the development default"), ("k" * 49, "49 characters, fewer than 50")],
)
def test_the_queue_worker_refuses_an_unsafe_secret_key(tmp_path, key, refusal):
    env = {"DEBUG": "0"} if key is None else {"DEBUG": "0", "SECRET_KEY": key}
    result = manage(tmp_path, "qcluster", **env)
    assert result.returncode == 1
    assert "manage.py qcluster: SECRET_KEY" in result.stderr and refusal in result.stderr
    assert "Traceback" not in result.stderr
    assert "Q Cluster" not in result.stderr + result.stdout  # it never started


def test_a_short_metrics_token_stops_start_up_naming_it(tmp_path):
    result = manage(tmp_path, "check", DEBUG="1", BOXBENCH_METRICS_TOKEN="guessable-token")
    assert result.returncode != 0
    assert "BOXBENCH_METRICS_TOKEN has 15 characters, fewer than 32" in result.stderr
    good = manage(tmp_path, "check", DEBUG="1", BOXBENCH_METRICS_TOKEN="t" * 32)
    assert good.returncode == 0, good.stderr


@pytest.mark.parametrize("url", ["bench.example.org", "https://bench.example.org/x", "ftp://a"])
def test_a_site_address_that_is_not_one_stops_start_up(tmp_path, url):
    result = manage(tmp_path, "check", DEBUG="1", BOXBENCH_SITE_URL=url)
    assert result.returncode != 0
    assert "BOXBENCH_SITE_URL=" in result.stderr and "is not a site address" in result.stderr
