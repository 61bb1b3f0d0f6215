"""A provider or benchmark that only an unpublished run holds (an imported file's, before its
publication) is not shown to visitors: no page, no feed, no API answer, no line in an index.
Its names and texts are that run's, which only its reviewers see."""

import json
import uuid

import pytest
from django.core.management import call_command

from boxbench.leaderboard.materialize import materialize
from tests.web import factory

pytestmark = pytest.mark.django_db

HIDDEN_RUN = "7e57ab1e-0000-4000-8000-000000000001"
RENAMED = {
    '"boat"': '"stealth"',
    '"Boat"': '"Stealth Cloud"',
    '"cpu"': '"stealth-bench"',
    '"CPU"': '"Stealth Bench"',
}


def import_unpublished(tmp_path) -> None:
    """The fixture run again under another id, Boat as "Stealth Cloud" and CPU as "Stealth
    Bench": imported, never published."""
    lines = []
    for line in factory.run_lines():
        for old, new in RENAMED.items():
            line = line.replace(old, new)
        record = json.loads(line)
        if record["type"] == "run":
            record["run"].update(id=HIDDEN_RUN, name="unpublished")
        else:
            record["trial"] = str(uuid.uuid4())
        lines.append(json.dumps(record))
    path = tmp_path / "hidden.jsonl"
    path.write_text("\n".join(lines) + "\n")
    call_command("bench", "import", str(path))
    materialize()  # as the next publication of any run would


@pytest.fixture
def hidden(published_run, tmp_path):
    import_unpublished(tmp_path)


@pytest.mark.parametrize(
    "url",
    [
        "/providers/stealth/",
        "/providers/stealth/feed.xml",
        "/api/v1/providers/stealth",
        "/benchmarks/stealth-bench/",
    ],
)
def test_its_pages_are_404_for_a_visitor(client, hidden, url):
    assert client.get(url).status_code == 404


def test_the_indexes_and_the_overview_do_not_name_them(client, hidden):
    for url in ("/providers/", "/benchmarks/", "/", "/api/v1/overview"):
        text = client.get(url).content.decode()
        assert "Stealth" not in text and "stealth" not in text, url


def test_a_published_runs_providers_keep_their_pages(client, hidden):
    # Boat is measured by the published run, Tiny Cloud refused in it: neither is in the code.
    for slug in ("boat", "tiny", "local"):
        assert client.get(f"/providers/{slug}/").status_code == 200, slug
    listed = client.get("/providers/").content.decode()
    assert "Boat" in listed and "Tiny Cloud" in listed


def test_its_reviewers_still_see_the_benchmark_awaiting_publication(staff_client, hidden):
    page = staff_client.get("/benchmarks/stealth-bench/")
    assert page.status_code == 200 and "unpublished" in page.content.decode()
