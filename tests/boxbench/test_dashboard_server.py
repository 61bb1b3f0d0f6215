"""The dashboard `./boxbench.sh run` serves: gunicorn with boxbench/gunicorn_conf.py, static files
through whitenoise from what collectstatic gathered; `run --dev` keeps Django's runserver."""

import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

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


def read_config(monkeypatch, web_user: str | None = None) -> dict:
    if web_user is not None:
        monkeypatch.setenv("BOXBENCH_WEB_USER", web_user)
    namespace: dict = {}
    exec((ROOT / CONFIG).read_text(), {"__file__": str(ROOT / CONFIG)}, namespace)
    return namespace


def test_the_config_binds_the_documented_address_and_serves_boxbench(monkeypatch):
    namespace = read_config(monkeypatch, "nobody")
    assert namespace["bind"] == ["127.0.0.1:8000"]
    assert namespace["wsgi_app"] == "boxbench.wsgi:application"


def test_started_as_root_it_names_an_unprivileged_user_or_refuses(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    nobody = pwd.getpwnam("nobody")
    assert (read_config(monkeypatch, "nobody")["user"], read_config(monkeypatch)["group"]) == (
        nobody.pw_uid,
        nobody.pw_gid,
    )
    with pytest.raises(SystemExit, match="'no-such-user-xyz', which does not exist"):
        read_config(monkeypatch, "no-such-user-xyz")
    with pytest.raises(SystemExit, match="is root"):
        read_config(monkeypatch, "root")


def var_directory(tmp_path) -> Path:
    """A var directory as `./boxbench.sh run` has it. As root, the web user must reach it: not
    under pytest's own directory, which only root may enter."""
    if os.geteuid() != 0 and tmp_path is not None:
        return tmp_path
    var = Path(tempfile.mkdtemp(prefix="boxbench-var-"))
    var.chmod(0o755)
    return var


def test_gunicorn_as_run_starts_it_serves_the_overview_and_a_static_file(tmp_path):
    var = var_directory(tmp_path)
    try:
        serve_as_run(var)
    finally:
        if var != tmp_path:
            shutil.rmtree(var)


def serve_as_run(tmp_path):
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
    # As root, boxbench.sh creates the workers' user and gives it the database and exports; the
    # workers stay root only where that user cannot run this Python (one under /root).
    prepared = web_user(env)
    as_root = "workers stay root" in prepared
    if as_root:
        env["BOXBENCH_WEB_AS_ROOT"] = "1"
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
            # The page goes into the SQLite database's cache table: a write, as the web user.
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
        if os.geteuid() == 0:
            # The master keeps root; every worker, which answers the requests, has dropped it
            # (asked after the requests: a worker just forked has not switched yet).
            expected = 0 if as_root else pwd.getpwnam("boxbench-web").pw_uid
            assert {uid(p) for p in children(server.pid)} == {expected}, log.read_text()
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "gunicorn" in log.read_text().lower()
    # The access log (written out by the time the server has stopped) goes under the var
    # directory, beside the other logs of a run.
    assert f'"GET {css_url.group(1)}' in (tmp_path / "dashboard-access.log").read_text()


def web_user(env: dict) -> str:
    """`./boxbench.sh web-user` (nothing as another user than root): what it said."""
    done = subprocess.run(
        ["bash", "boxbench.sh", "web-user"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


UID_APP = """
import os

def application(environ, start_response):
    body = f"{os.getuid()} {os.getgid()}".encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="gunicorn drops root only when started as root")
def test_started_as_root_its_workers_answer_as_the_web_user():
    """boxbench's own gunicorn settings serving an application that answers with the uid that
    runs it (one that imports nothing on a request, so any Python can run it as the web user)."""
    var = var_directory(None)
    try:
        (var / "uidapp.py").write_text(UID_APP)
        env = {**os.environ, "BOXBENCH_VAR_DIR": str(var), "PYTHONPATH": str(var)}
        env.pop("BOXBENCH_WEB_AS_ROOT", None)
        web_user(env)
        port = free_port()
        log = var / "gunicorn.log"
        command = [sys.executable, *dashboard_command(), "-b", f"127.0.0.1:{port}", "uidapp"]
        with open(log, "wb") as out:
            server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
        try:
            wait_for_port(port, server, log)
            answer = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        finally:
            server.terminate()
            server.wait(timeout=30)
        web = pwd.getpwnam("boxbench-web")
        assert answer.text == f"{web.pw_uid} {web.pw_gid}", log.read_text()
        assert web.pw_uid != 0 and web.pw_gid != 0
    finally:
        shutil.rmtree(var)


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def uid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))
