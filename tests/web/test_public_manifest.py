"""A visitor sees a run's manifest as its public projection (seed, plan, digests, schedule, code
commit): other accounts' sandbox ids and backends' error texts stay with view_private_evidence,
on the run page, in the API and in the public raw file alike."""

import pytest

from boxbench.models import Run
from runner.manifest import Manifest, public_manifest
from tests.web import factory

pytestmark = pytest.mark.django_db
FOREIGN = "someone-elses-sandbox-7f3a"
BACKEND_TEXT = "backend said: token abc expired for tenant 42"
RUN = f"/runs/{factory.RUN_ID}/"


@pytest.fixture
def hostile_manifest(published_run):
    manifest = dict(published_run.manifest)
    manifest["live_sandboxes"] = {
        "docker": {"before": {"others": 1, "other_ids": [FOREIGN], "own": 0}}
    }
    manifest["backend_waits"] = {
        "docker": [
            {
                "trial_seq": 3,
                "reason": "unreachable",
                "started_at": "2026-11-01T01:00:00+00:00",
                "waited_s": 1.5,
                "probes": 2,
                "back": True,
                "last_error": BACKEND_TEXT,
            }
        ]
    }
    manifest["code"] = {"commit": "0123abc", "error": BACKEND_TEXT}
    Run.objects.filter(id=published_run.id).update(manifest=manifest)
    Manifest.from_json(manifest)  # a manifest the runner could have written
    return manifest


def test_a_visitor_sees_no_foreign_sandbox_id_or_backend_text(client, hostile_manifest):
    for path in (RUN, f"/api/v1/runs/{factory.RUN_ID}/manifest", f"{RUN}raw.jsonl"):
        response = client.get(path)
        assert response.status_code == 200, path
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert FOREIGN.encode() not in body, path
        assert BACKEND_TEXT.encode() not in body, path
        assert b"0123abc" in body, path  # the code commit is public
    api = client.get(f"/api/v1/runs/{factory.RUN_ID}/manifest").json()["manifest"]
    assert api["seed"] == hostile_manifest["seed"]
    assert "live_sandboxes" not in api and "backend_waits" not in api


def test_private_evidence_shows_the_whole_manifest(staff_client, hostile_manifest):
    page = staff_client.get(RUN).content.decode()
    assert FOREIGN in page and "token abc expired" in page
    api = staff_client.get(f"/api/v1/runs/{factory.RUN_ID}/manifest").json()["manifest"]
    assert api["live_sandboxes"]["docker"]["before"]["other_ids"] == [FOREIGN]


def test_the_projection_is_a_manifest_and_projecting_it_again_changes_nothing(hostile_manifest):
    public = public_manifest(hostile_manifest)
    assert public_manifest(public) == public
    typed = Manifest.from_json(public)
    assert typed.seed == hostile_manifest["seed"] and typed.code.commit == "0123abc"
    assert typed.code.error is None and not typed.live_sandboxes and not typed.backend_waits
