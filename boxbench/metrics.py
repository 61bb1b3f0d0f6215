"""boxbench's own health as Prometheus text (exposition format 0.0.4), served at /metrics.

Every value is read from the database with a fixed handful of queries (see `collect`), so every
web process reports the same figures; metrics_cache.py shares one collection between concurrent
scrapes for at most two seconds. No query scans trials: counts come from TrialTally (kept by
database triggers, migration 0004) and each provider's oldest running trial from the partial
index trial_running_idx, so a scrape stays cheap with a million trials stored and hundreds of
thousands in progress. docs/reliability.md says which SLO each metric serves.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Max, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from boxbench.models import Provider, Run, RunStatus, Trial, TrialState, TrialTally
from runner.manifest import LiveCheck, live_checks_from_json

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
IN_PROGRESS = (RunStatus.PLANNED, RunStatus.RUNNING, RunStatus.CANCELLING)
# Live-sandbox counts are read from the manifests of this many most recent runs.
RECENT_RUNS = 10


@dataclass
class Family:
    name: str
    kind: str  # gauge | counter
    help: str
    samples: list[tuple[dict, float]] = field(default_factory=list)

    def add(self, value: float, **labels) -> None:
        self.samples.append((labels, value))


# -- the text format (pure) ----------------------------------------------------------------------


def render(families: list[Family]) -> str:
    """The exposition text of `families`, each with its HELP and TYPE lines."""
    lines = []
    for family in families:
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for labels, value in family.samples:
            lines.append(f"{family.name}{_labels(labels)} {_number(value)}")
    return "\n".join(lines) + "\n"


def _labels(labels: dict) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{key}="{_escape_label(str(value))}"' for key, value in labels.items())
    return "{" + inner + "}"


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


# -- what is measured ----------------------------------------------------------------------------


def collect(now: datetime | None = None) -> list[Family]:
    """Every boxbench metric, from eight queries whatever the size of the database."""
    now = now or timezone.now()
    started = time.monotonic()
    # Each provider's oldest running trial: one step down the partial index trial_running_idx.
    oldest = Trial.objects.filter(
        provider=OuterRef("pk"), state=TrialState.RUNNING, started_at__isnull=False
    ).order_by("started_at")
    rows = Provider.objects.order_by("slug").annotate(
        oldest=Subquery(oldest.values("started_at")[:1])
    )
    oldest_started = dict(rows.values_list("slug", "oldest"))
    providers = list(oldest_started)
    families = [
        _runs(),
        _trials_in_progress(),
        _trials_finished(),
        *_queue(providers),
        *_running(oldest_started, now),
        *_live_sandboxes(),
        _last_publish(),
    ]
    duration = Family(
        "boxbench_metrics_collect_seconds", "gauge", "Time this scrape spent in its queries."
    )
    duration.add(time.monotonic() - started)
    return [*families, duration]


def _runs() -> Family:
    rows = Run.objects.values("status").annotate(
        n=Count("id"),
        unaudited=Count("id", filter=Q(status=RunStatus.COMPLETED, audited_at__isnull=True)),
    )
    counts = {row["status"]: row for row in rows}
    family = Family("boxbench_runs", "gauge", "Runs by status.")
    for status in RunStatus.values:
        family.add(counts.get(status, {}).get("n", 0), status=status)
    unaudited = counts.get(RunStatus.COMPLETED, {}).get("unaudited", 0)
    family.add(unaudited, status="completed_unaudited")
    return family


def _trials_in_progress() -> Family:
    family = Family(
        "boxbench_trials_in_progress_runs",
        "gauge",
        "Trials of planned, running and cancelling runs, by provider, state and outcome.",
    )
    rows = _tally(run__status__in=IN_PROGRESS).values("provider__slug", "state", "outcome")
    rows = rows.annotate(n=Sum("n")).filter(n__gt=0).order_by("provider__slug", "state", "outcome")
    for row in rows:
        family.add(
            row["n"], provider=row["provider__slug"], state=row["state"], outcome=row["outcome"]
        )
    return family


def _trials_finished() -> Family:
    family = Family(
        "boxbench_trials_finished_total",
        "counter",
        "Finished trials of every run stored, by provider and outcome (drops when a run is "
        "deleted).",
    )
    rows = _tally(state=TrialState.DONE).values("provider__slug", "outcome")
    rows = rows.annotate(n=Sum("n")).filter(n__gt=0).order_by("provider__slug", "outcome")
    for row in rows:
        family.add(row["n"], provider=row["provider__slug"], outcome=row["outcome"])
    return family


def _queue(providers: list[str]) -> list[Family]:
    counts = _count_by_provider(TrialState.QUEUED)
    family = Family("boxbench_queue_depth", "gauge", "Queued trials, by provider.")
    for slug in providers:
        family.add(counts.get(slug, 0), provider=slug)
    return [family]


def _tally(**filters):
    return TrialTally.objects.filter(**filters)


def _count_by_provider(state: str) -> dict[str, int]:
    """Trials in `state` by provider slug (from the tally)."""
    return dict(_tally(state=state).values_list("provider__slug").annotate(n=Sum("n")).order_by())


def _running(oldest_started: dict[str, datetime | None], now: datetime) -> list[Family]:
    counts = _count_by_provider(TrialState.RUNNING)
    running = Family("boxbench_trials_running", "gauge", "Trials running now, by provider.")
    oldest = Family(
        "boxbench_oldest_running_trial_age_seconds",
        "gauge",
        "Age of the oldest running trial, by provider (0 when none runs); an orphan shows here "
        "until `bench recover` ends it.",
    )
    for slug, started in oldest_started.items():
        running.add(counts.get(slug, 0), provider=slug)
        oldest.add(max(0.0, (now - started).total_seconds()) if started else 0, provider=slug)
    return [running, oldest]


def _live_sandboxes() -> list[Family]:
    """The newest live-sandbox count each provider's chain recorded in a run manifest."""
    latest: dict[str, LiveCheck] = {}
    recent = Run.objects.order_by("-created_at").values_list("id", "manifest__live_sandboxes")
    for run_id, records in recent[:RECENT_RUNS]:
        for provider, moments in live_checks_from_json(records, f"run {run_id}").items():
            for entry in moments.values():
                if entry.at is None:
                    continue  # the listing failed at that moment: its error is in the manifest
                if provider not in latest or entry.at > latest[provider].at:
                    latest[provider] = entry
    live = Family(
        "boxbench_live_sandboxes",
        "gauge",
        "Live sandboxes in each provider's account at its chain's latest check, split into the "
        "checking run's own and others.",
    )
    recorded = Family(
        "boxbench_live_sandboxes_recorded_timestamp_seconds",
        "gauge",
        "When each provider's live-sandbox count was last recorded (Unix time).",
    )
    for provider, entry in sorted(latest.items()):
        live.add(entry.own or 0, provider=provider, owner="run")
        live.add(entry.others or 0, provider=provider, owner="others")
        recorded.add(datetime.fromisoformat(entry.at).timestamp(), provider=provider)
    return [live, recorded]


def _last_publish() -> Family:
    family = Family(
        "boxbench_last_publish_timestamp_seconds",
        "gauge",
        "When a run was last published (Unix time; 0 when none ever was).",
    )
    last = Run.objects.published().aggregate(last=Max("published_at"))["last"]
    family.add(last.timestamp() if last else 0)
    return family
