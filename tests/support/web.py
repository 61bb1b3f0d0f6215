"""What the web tests share: resolving the fixture run's audit, turning it into a running run,
reading a page's chart data and tables back, and visiting a page in Chromium."""

import csv
import html
import io
import json
import re
from datetime import timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.utils import timezone

from boxbench import publishing
from boxbench.models import (
    AuditResolution,
    Benchmark,
    MeasurementName,
    Provider,
    Run,
    RunStatus,
    Trial,
    TrialState,
)
from tests.web import factory

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
CSP_LISTENER = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
});
"""


def resolution_of(
    run,
    provider,
    check="trend",
    kind="explained",
    *,
    benchmark="create",
    note="for the test",
    rerun=None,
):
    """An unsaved resolution of `provider`'s failing `check` on `benchmark` in `run`."""
    return AuditResolution(
        run=run,
        provider=Provider.objects.get(slug=provider),
        benchmark=Benchmark.objects.get(slug=benchmark),
        check_name=check,
        kind=kind,
        note=note,
        rerun=rerun,
    )


def resolve(run, provider, check="trend", kind="explained", **fields):
    """Apply a resolution (see `resolution_of`); returns what apply_resolution returns."""
    return publishing.apply_resolution(resolution_of(run, provider, check, kind, **fields))


def explain_failures(run, note="Create slows down over the run by design.", *, held_back=None):
    """Audit `run` and resolve every failing check by explanation (the fixture's Create trials
    drift by design), except those of the `held_back` (provider, benchmark) pair; returns the
    failing checks found."""
    publishing.run_audit(run)
    failing = publishing.failing_checks(run.audit_report)
    for provider, benchmark, check in failing:
        if (provider, benchmark) != held_back:
            resolve(run, provider, check, benchmark=benchmark, note=note)
    return failing


def rerun_of_docker_create(name, minutes, manifest=None):
    """A completed run re-measuring docker on Create, its trials ending `minutes` from now."""
    run = Run.objects.create(name=name, status="completed", manifest=manifest or {})
    create, docker = Benchmark.objects.get(slug="create"), Provider.objects.get(slug="docker")
    values = np.random.default_rng(minutes).lognormal(np.log(50), 0.02, 20)
    at = timezone.now() + timedelta(minutes=minutes)
    for i, value in enumerate(values):
        Trial.objects.create(
            run=run,
            benchmark=create,
            unit=create.units.get(),
            provider=docker,
            round=1 + i % 4,
            seq=i + 1,
            state="done",
            outcome="success",
            started_at=at,
            ended_at=at,
            metrics={"total": float(value)},
        )
    MeasurementName.objects.create(
        run=run, benchmark=create, kind="metric", name="total", unit="ms", clock="job_host"
    )
    return run


def make_running(run, queued: int = 60, minutes: float = 10.0):
    """Turn the imported run into one still going: its last `queued` trials not yet run, the
    run started `minutes` ago, and the manifest's plan (20 trials per unit) for the targets."""
    last = Trial.objects.filter(run=run).order_by("-seq").values_list("id", flat=True)[:queued]
    Trial.objects.filter(id__in=list(last)).update(
        state=TrialState.QUEUED, outcome="", owner="", cause="", started_at=None, ended_at=None
    )
    manifest = dict(run.manifest)
    manifest["benchmarks"] = {
        b["slug"]: {"trials_per_unit": 20, "units": [u["slug"] for u in b["units"]]}
        for b in factory.BENCHMARKS
    }
    Run.objects.filter(id=run.id).update(
        status=RunStatus.RUNNING,
        started_at=timezone.now() - timedelta(minutes=minutes),
        ended_at=None,
        manifest=manifest,
    )
    run.refresh_from_db()
    return run


def figure(response, chart_id):
    """The plotly figure a page embeds for `chart_id`, or None when the page has no such chart."""
    found = re.search(
        rf'<script id="{chart_id}-data" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    return json.loads(found.group(1)) if found else None


def html_table(response, table_id):
    """A page's data table as rows of cell texts, the header first."""
    page = response.content.decode()
    table = re.search(rf'<table class="data" id="{table_id}">(.*?)</table>', page, re.S).group(1)
    header = re.findall(r"<th>(.*?)</th>", table)
    body = [
        re.findall(r"<td(?: [^>]*)?>(.*?)</td>", row, re.S)
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    ]
    return [header, *body]


def csp_violations(page) -> list[str]:
    return page.evaluate("window.cspViolations || []")


def visit(page, url, shot):
    """Open `url` in the browser tab, wait for its charts, keep a screenshot, and check that it
    answered 200 under the CSP with no console error and no CSP violation."""
    response = page.goto(url)
    assert response.status == 200, url
    assert "script-src 'self'" in response.headers["content-security-policy"], url
    page.wait_for_load_state("networkidle")
    for chart in page.locator("div.chart").all():
        chart.locator(".main-svg").first.wait_for()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)
    assert page.errors == [], f"console errors on {url}: {page.errors}"
    assert csp_violations(page) == [], f"Content-Security-Policy violations on {url}"


def rows_of_text(text: str):
    """A CSV download's rows."""
    return list(csv.reader(io.StringIO(text)))


def rows_of(response):
    return rows_of_text(response.content.decode())


def shown_labels(response) -> dict[str, list[tuple[str, str]]]:
    """{provider name: [(label, meaning), ...]} from the page's status labels, in page order
    (a multi-unit workload's All view first, then the chosen unit's)."""
    found = re.findall(
        r'<span class="status" title="(.*?)"><b>(.*?)</b>: (.*?)</span>', response.content.decode()
    )
    shown: dict[str, list[tuple[str, str]]] = {}
    for meaning, name, label in found:
        shown.setdefault(html.unescape(name), []).append((label, html.unescape(meaning)))
    return shown


def docker_cpu_like_local(run):
    """Docker's CPU trials take Local's values in reverse order: the same distribution, so no
    difference may be claimed."""
    local = Trial.objects.filter(run=run, provider__slug="local", benchmark__slug="cpu")
    values = [t.metrics["total"] for t in local.order_by("seq")][::-1]
    docker = Trial.objects.filter(run=run, provider__slug="docker", benchmark__slug="cpu")
    for trial, value in zip(docker.order_by("seq"), values, strict=True):
        trial.metrics = {**trial.metrics, "total": value}
        trial.save(update_fields=["metrics"])
