"""The dashboard `./boxbench.sh run` serves: gunicorn with boxbench/gunicorn_conf.py, static files
through whitenoise from what collectstatic gathered; `run --dev` keeps Django's runserver."""

import os
import re
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support import static

ROOT = Path(__file__).resolve().parents[2]
CONFIG = "boxbench/gunicorn_conf.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise AssertionError(log.read_text()) from None
            time.sleep(0.1)


def dashboard_command() -> list[str]:
    """The command boxbench.sh starts the dashboard with when not given --dev."""
    script = (ROOT / "boxbench.sh").read_text()
    match = re.search(r'^\s*setsid "\$PY" (-m gunicorn [^&\n]*?)\s*&$', script, re.M)
    assert match, "boxbench.sh no longer starts gunicorn"
    return match.group(1).split()


def test_boxbench_sh_serves_with_gunicorn_and_keeps_runserver_for_dev():
    script = (ROOT / "boxbench.sh").read_text()
    assert dashboard_command() == ["-m", "gunicorn", "-c", CONFIG]
    assert 'if [ "$dev" = 1 ]; then\n    setsid "$PY" manage.py runserver' in script


def test_the_config_binds_the_documented_address_and_serves_boxbench():
    namespace: dict = {}
    exec((ROOT / CONFIG).read_text(), {"__file__": str(ROOT / CONFIG)}, namespace)
    assert namespace["bind"] == ["127.0.0.1:8000"]
    assert namespace["wsgi_app"] == "boxbench.wsgi:application"


def test_gunicorn_as_run_starts_it_serves_the_overview_and_a_static_file(tmp_path):
    env = {**os.environ, "BOXBENCH_VAR_DIR": str(tmp_path), "DEBUG": "0"}
    env["SECRET_KEY"] = secrets.token_urlsafe(48)
    env.pop("DATABASE_URL", None)
    env.pop("BOXBENCH_REDIS_URL", None)
    env.pop("STATIC_ROOT", None)  # under var/, as boxbench.sh has it
    # As boxbench.sh prepares it: migrated, static files collected under var/static (from the
    # tests' copy, which collectstatic finds fresh and so compresses nothing again).
    static.copy_to(tmp_path / "static")
    for step in (["migrate", "-v0"], ["collectstatic", "--noinput", "-v0"]):
        subprocess.run([sys.executable, "manage.py", *step], cwd=ROOT, env=env, check=True)
    port = free_port()
    log = tmp_path / "gunicorn.log"
    # boxbench.sh's own command; only the port differs, so that tests can run side by side.
    command = [sys.executable, *dashboard_command(), "-b", f"127.0.0.1:{port}"]
    with open(log, "wb") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, server, log)
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=30) as client:
            overview = client.get("/")
            assert overview.status_code == 200, log.read_text()
            assert "boxbench" in overview.text
            # The stylesheet by its content's hash: cached for good, sent compressed.
            css_url = re.search(r'href="(/static/boxbench/site\.[0-9a-f]{12}\.css)"', overview.text)
            assert css_url, overview.text
            css = client.get(css_url.group(1), headers={"Accept-Encoding": "gzip"})
            assert css.status_code == 200
            assert css.headers["content-encoding"] == "gzip"
            assert css.content == (ROOT / "static" / "boxbench" / "site.css").read_bytes()
            assert css.headers["content-type"].startswith("text/css")
            assert "immutable" in css.headers["cache-control"]
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "gunicorn" in log.read_text().lower()
    # The access log (written out by the time the server has stopped) goes under the var
    # directory, beside the other logs of a run.
    assert f'"GET {css_url.group(1)}' in (tmp_path / "dashboard-access.log").read_text()
