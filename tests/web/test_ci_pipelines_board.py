"""The CI Actions workload on the dashboard: its registry definition and units, imported as raw
data and published, sit in the score tree's Workload sections with time and cost scores, and its
page and CSV say the units are boxbench's own."""

import csv as csv_module
import io
import json
import re
from datetime import UTC, datetime

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command

from boxbench import publishing
from boxbench.models import Run
from runner.benchmarks import ci_pipelines
from tests.support.web import explain_failures
from tests.web.factory import _provider, trial_line

pytestmark = pytest.mark.django_db
RUN_ID = "5b0c1a2e-0000-4000-8000-0000000000c1"
SLUG = ci_pipelines.SLUG
PROVIDERS = [("local", "Local sandbox", 1.0), ("docker", "Docker", 1.5)]


def _benchmark() -> dict:
    definition = ci_pipelines.DEFINITION
    fields = ("slug", "version", "title", "description", "section", "metric", "unit")
    fields += ("direction", "statistic", "clock", "cpus", "memory_mib", "trials_per_unit")
    fields += ("ranking_floor", "charted", "steps_include_create_or_build")
    entry = {f: getattr(definition, f) for f in fields}
    entry["required_capabilities"] = list(definition.required_capabilities)
    entry["stage_names"] = list(definition.stage_names)
    entry["units"] = [
        {"slug": u.slug, "title": u.title, "definition": u.definition, "digest": u.digest}
        for u in ci_pipelines.units()
    ]
    entry["measurements"] = {
        "metrics": {definition.metric: {"unit": "ms", "clock": "guest"}},
        "stages": {s: {"unit": "ms", "clock": "guest"} for s in definition.stage_names},
    }
    return entry


def _lines() -> list[str]:
    """Every unit's full 20 trials on two providers, Docker 1.5 times slower: both rank."""
    rng = np.random.default_rng(25)
    benchmark = _benchmark()
    header = {
        "type": "run",
        "schema_version": 1,
        "run": {
            "id": RUN_ID,
            "name": "ci-board",
            "status": "completed",
            "created_at": "2026-12-01T00:00:00.000000Z",
            "started_at": "2026-12-01T00:00:00.000000Z",
            "ended_at": "2026-12-01T06:00:00.000000Z",
        },
        "manifest": {"seed": 25, "image_digests": {"standard": "sha256:" + "89" * 32}},
        "audit_report": None,
        "benchmarks": [benchmark],
        "providers": [_provider(slug, name, "", True) for slug, name, _ in PROVIDERS],
    }
    lines, seq, start = [json.dumps(header)], 0, datetime(2026, 12, 1, tzinfo=UTC)
    for unit in benchmark["units"]:
        steps = unit["definition"]["steps"]
        for slug, _, factor in PROVIDERS:
            for i in range(benchmark["trials_per_unit"]):
                seq += 1
                stages = dict.fromkeys(benchmark["stage_names"], 0.0)
                for _, _, stage in steps:
                    stages[stage] += 1000 * factor * float(rng.lognormal(0, 0.05))
                total = sum(stages.values())
                metrics = {"pipeline_time": round(total, 3)}
                rounded = {k: round(v, 3) for k, v in stages.items()}
                cost = round(total * 2e-8, 12)
                lines.append(
                    trial_line(
                        SLUG,
                        unit["slug"],
                        slug,
                        seq,
                        i,
                        start,
                        True,
                        metrics,
                        rounded,
                        cost,
                        version=benchmark["version"],
                    )
                )
    return lines


@pytest.fixture
def published_ci_run(tmp_path):
    path = tmp_path / "ci.jsonl"
    path.write_text("\n".join(_lines()) + "\n")
    call_command("bench", "import", str(path))
    run = Run.objects.get(id=RUN_ID)
    explain_failures(run)
    publishing.publish(run)
    cache.clear()
    return run


def test_it_holds_ci_actions_in_the_workload_sections_with_time_and_cost_scores(
    client, published_ci_run
):
    page = client.get("/?open=workload_time,workload_cost", follow=True).content.decode()
    for section in ("workload_time", "workload_cost"):
        row = page.split(f'data-path="{section}/{SLUG}"', 1)
        assert len(row) == 2, f"{SLUG} is not under {section}"
        # The faster provider scores 100 on the benchmark's row and ranks first, the slower less.
        cells = re.findall(
            r'<td>([0-9.]+) <span class="rank">#(\d+)</span>', row[1].split("</tr>")[0]
        )
        scores = sorted((int(rank), float(score)) for score, rank in cells)
        assert [rank for rank, _ in scores] == [1, 2]
        assert scores[0][1] == 100.0 and 0 < scores[1][1] < 100.0
    assert "CI Actions (boxbench units)" in page


def test_its_page_and_csv_say_the_units_are_boxbenchs_own(client, published_ci_run):
    page = client.get(f"/benchmarks/{SLUG}/").content.decode()
    assert "boxbench&#x27;s own units" in page or "boxbench's own units" in page
    text = client.get(f"/benchmarks/{SLUG}.csv").content.decode()
    header, *rows = list(csv_module.reader(io.StringIO(text)))
    assert header[-1] == "note" and len(rows) == 2
    assert all(r[-1] == ci_pipelines.NOT_THE_REFERENCE for r in rows)
