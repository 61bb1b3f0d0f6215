"""/healthz, and C9: a raw download cut off mid-stream leaves nothing open on the server."""

import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from boxbench.models import Run, TrialState
from runner.plan import plan_run

ROOT = Path(__file__).resolve().parents[2]


TOKEN = "healthz-test-token-of-thirty-two-characters"


@pytest.mark.django_db
def test_it_says_healthy_when_the_database_answers(client, settings):
    settings.METRICS_TOKEN = TOKEN
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}  # up or down, nothing about the database
    assert "no-cache" in response["Cache-Control"]
    detailed = client.get(reverse("healthz"), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    healthy = {"status": "ok", "database": {"ok": True, "vendor": connection.vendor}}
    assert detailed.json() == healthy


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    "database_url, expected",
    [
        ("postgres://boxbench@127.0.0.1:1/nowhere", "OperationalError: connection"),
        ("sqlite:////nonexistent-boxbench-dir/db.sqlite3", "OperationalError: unable to open"),
    ],
)
def test_it_answers_503_with_the_reason_when_the_database_is_unreachable(
    database_url, expected, tmp_path
):
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "BOXBENCH_VAR_DIR": str(tmp_path),
        "BOXBENCH_METRICS_TOKEN": TOKEN,
    }
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
                anonymous = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError((tmp_path / "gunicorn.log").read_text()) from None
                time.sleep(0.1)
        response = httpx.get(
            f"http://127.0.0.1:{port}/healthz", headers={"Authorization": f"Bearer {TOKEN}"}
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    # An anonymous visitor learns that it is down, not which host and port the database has.
    assert anonymous.status_code == 503
    assert anonymous.json() == {"status": "unavailable"}
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable" and body["database"]["ok"] is False
    assert body["database"]["error"].startswith(expected)
    assert "Traceback" not in response.text


def open_transactions() -> int:
    """Transactions other sessions (the live server's) hold open."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
        )
        return cursor.fetchone()[0]


def wait_until(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout_s:g} s")
        time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_an_interrupted_raw_download_leaves_no_transaction_open(live_server):
    if connection.vendor != "postgresql":
        pytest.skip("the server's transaction is visible from here only on PostgreSQL")
    run = plan_run(
        "big", benchmarks=["create"], providers=["local"], trials=3000, seed=1, concurrency=1
    )
    # 3,000 trials with 4 kB causes: about 13 MB, far more than the socket buffers hold.
    run.trials.update(state=TrialState.DONE, outcome="provider_failure", cause="x" * 4000)
    Run.objects.filter(pk=run.pk).update(published=True, published_at=timezone.now())
    address = urlsplit(live_server.url)
    path = reverse("run-raw-jsonl", args=[run.pk])

    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the server soon blocks
    client.connect((address.hostname, address.port))
    client.sendall(f"GET {path} HTTP/1.1\r\nHost: {address.hostname}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += client.recv(65536)
    assert head.startswith(b"HTTP/1.1 200") and b"application/x-ndjson" in head
    # The export reads the run in one transaction while it spools trial lines (the header,
    # which comes first, is known only at the end), so the transaction may still be open here
    # or already closed: either way, a client that dies must leave none behind.
    assert open_transactions() <= 1
    # Reset the connection mid-stream, as a client that dies does.
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()

    wait_until(lambda: open_transactions() == 0, 10, "the stream's transaction is still open")
