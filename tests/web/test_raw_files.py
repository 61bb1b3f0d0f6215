"""A published run's raw downloads are exported once per publication and then served from a
file, and its progress.json is read from its aggregate: asking again costs no export and no
count of its trials (boxbench/views/raw_files.py)."""

import fcntl
import json
import os

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.core.signals import request_finished
from django.db import close_old_connections, connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from boxbench import live, publishing
from boxbench.models import Run
from boxbench.rawdata import FULL, PUBLIC, export_csv, export_jsonl
from boxbench.views import downloads, raw_files
from runner import runs
from tests.support.web import explain_failures
from tests.web import factory

pytestmark = pytest.mark.django_db
RAW_JSONL = f"/runs/{factory.RUN_ID}/raw.jsonl"
RAW_CSV = f"/runs/{factory.RUN_ID}/raw.csv"
PROGRESS = f"/runs/{factory.RUN_ID}/progress.json"


@pytest.fixture
def exports(monkeypatch):
    """How often each exporter started reading the run."""
    counted = {"jsonl": 0, "csv": 0}

    def counting(name, exporter):
        def run(*args, **kwargs):
            counted[name] += 1
            yield from exporter(*args, **kwargs)

        return lambda *args, **kwargs: run(*args, **kwargs)

    monkeypatch.setattr(
        downloads, "iter_jsonl_bytes", counting("jsonl", downloads.iter_jsonl_bytes)
    )
    monkeypatch.setattr(downloads, "export_csv", counting("csv", downloads.export_csv))
    return counted


def visitor_download(path: str = RAW_JSONL):
    """A visitor's raw.jsonl response as the server gets it from the view, before it is read."""
    request = RequestFactory().get(path)
    request.user = AnonymousUser()
    return downloads.raw_jsonl(request, factory.RUN_ID)


def closed(response) -> None:
    """Close the response as a server does when its visitor has gone, without closing the
    test's database connection afterwards (as Django's test client)."""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


def trial_queries(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "boxbench_trial" in q["sql"]]


def test_asking_again_serves_the_file_without_exporting_again(client, published_run, exports):
    first = body(client.get(RAW_JSONL))
    with CaptureQueriesContext(connection) as captured:
        again = client.get(RAW_JSONL)
        assert body(again) == first
    assert exports["jsonl"] == 1 and trial_queries(captured) == []
    assert first == "".join(export_jsonl(published_run, PUBLIC))
    assert again["Content-Disposition"] == f'attachment; filename="run-{factory.RUN_ID}.jsonl"'
    assert int(again["Content-Length"]) == len(first.encode())
    csv_text = body(client.get(RAW_CSV))
    assert body(client.get(RAW_CSV)) == csv_text == "".join(export_csv(published_run, PUBLIC))
    assert exports["csv"] == 1


def test_each_form_has_its_own_file(staff_client, published_run, exports):
    full = body(staff_client.get(RAW_JSONL))
    public = body(Client().get(RAW_JSONL))
    assert full == "".join(export_jsonl(published_run, FULL)) != public
    assert body(staff_client.get(RAW_JSONL)) == full
    assert body(staff_client.get(RAW_JSONL + "?form=public")) == public
    assert exports["jsonl"] == 2


def test_a_run_published_again_with_other_data_serves_the_new_data(
    client, published_run, exports, tmp_path, settings
):
    old = body(client.get(RAW_JSONL))
    Run.objects.filter(id=published_run.id).delete()
    call_command("bench", "import", factory.write_run(tmp_path / "again.jsonl", 10))
    run = Run.objects.get(id=factory.RUN_ID)
    explain_failures(run)
    publishing.publish(run)
    new = body(client.get(RAW_JSONL))
    assert new != old and new == "".join(export_jsonl(run, PUBLIC))
    assert body(client.get(RAW_JSONL)) == new
    assert exports["jsonl"] == 2
    # Only the latest publication's file is kept.
    kept = sorted(p.name for p in (settings.RAW_EXPORT_DIR / factory.RUN_ID).glob("public-*"))
    assert len(kept) == 1 and kept[0] == raw_files.file_path(run, PUBLIC, "jsonl").name


def test_a_visitor_who_leaves_early_leaves_the_file_finished(client, published_run, exports):
    response = visitor_download()
    next(iter(response.streaming_content))  # the header line, then the visitor is gone
    closed(response)
    assert body(client.get(RAW_JSONL)) == "".join(export_jsonl(published_run, PUBLIC))
    assert exports["jsonl"] == 1


def test_a_response_never_read_releases_its_lock(client, published_run, exports):
    closed(visitor_download())
    assert body(client.get(RAW_JSONL)) == "".join(export_jsonl(published_run, PUBLIC))
    assert exports["jsonl"] == 1  # the first was never started


def test_a_request_while_the_file_is_being_written_is_asked_to_come_back(
    client, published_run, exports
):
    path = raw_files.file_path(published_run, PUBLIC, "jsonl")
    path.parent.mkdir(parents=True)
    holder = os.open(path.parent / ".public.jsonl.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        response = client.get(RAW_JSONL)
    finally:
        os.close(holder)
    assert response.status_code == 503 and response["Retry-After"] == "30"
    assert exports["jsonl"] == 0
    assert client.get(RAW_JSONL).status_code == 200


def test_head_starts_no_export(client, published_run, exports):
    response = client.head(RAW_JSONL)
    assert response.status_code == 200 and b"".join(response.streaming_content) == b""
    assert exports["jsonl"] == 0


def test_an_unpublished_run_is_exported_on_each_request(staff_client, imported_run, exports):
    assert body(staff_client.get(RAW_JSONL)) == body(staff_client.get(RAW_JSONL))
    assert exports["jsonl"] == 2


def test_a_published_runs_progress_counts_no_trials(client, published_run, page_queries):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(PROGRESS)
    assert response.status_code == 200 and trial_queries(captured) == []
    with page_queries() as queries:
        assert client.get(PROGRESS).content == response.content
    assert queries == []  # then served from the page cache
    snapshot = response.json()
    counted = live.snapshot(published_run, runs.progress(published_run), timezone.now())
    assert snapshot["cells"] == json.loads(json.dumps(counted["cells"]))
    assert snapshot["finished"] == counted["finished"] > 0
