"""The results store: providers, benchmarks, units, runs, trials, measurements and evidence.

Durations are milliseconds (float) with their clock; costs are USD. Public identifiers are UUIDs.
Status changes of a run are rows (RunTransition), checked against RUN_TRANSITIONS.
"""

import uuid

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from boxbench.choices import (  # noqa: F401 - the store's vocabulary, imported from here too
    RUN_TRANSITIONS,
    Clock,
    ClockGate,
    Direction,
    MeasurementKind,
    Owner,
    ResolutionKind,
    RunStatus,
    Scope,
    Section,
    TrialState,
)
from boxbench.permissions import RUN_PERMISSIONS
from runner.manifest import Manifest
from runner.outcomes import Outcome


class Provider(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=100)
    adapter = models.CharField(max_length=50, help_text="Adapter module in runner/providers/.")
    region = models.CharField(max_length=50, blank=True)
    region_marker = models.CharField(
        max_length=20, blank=True, help_text="Shown beside results timed across an ocean."
    )
    region_note = models.TextField(blank=True)
    declaration = models.JSONField(default=dict)
    declaration_digest = models.CharField(max_length=64, blank=True)
    pricing = models.JSONField(default=dict)
    pricing_digest = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self):
        return self.name


class Benchmark(models.Model):
    slug = models.SlugField(max_length=80)
    version = models.CharField(max_length=20, default="1")
    title = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    section = models.CharField(max_length=30, choices=Section.choices)
    metric = models.CharField(max_length=80, help_text="Name of the main measurement.")
    unit = models.CharField(max_length=20, default="ms")
    direction = models.CharField(max_length=10, choices=Direction.choices, default=Direction.LOWER)
    statistic = models.CharField(max_length=30, default="median")
    clock = models.CharField(max_length=10, choices=Clock.choices)
    cpus = models.PositiveSmallIntegerField(default=2)
    memory_mib = models.PositiveIntegerField(default=4096)
    trials_per_unit = models.PositiveIntegerField(default=20)
    ranking_floor = models.PositiveIntegerField(default=20)
    required_capabilities = models.JSONField(default=list, blank=True)
    stage_names = models.JSONField(default=list, blank=True)
    charted = models.BooleanField(default=True, help_text="Destroy is recorded, not charted.")
    steps_include_create_or_build = models.BooleanField(default=False)

    class Meta:
        ordering = ["section", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["slug", "version"], name="benchmark_slug_version_uniq"),
            models.CheckConstraint(
                condition=models.Q(trials_per_unit__gte=1),
                name="benchmark_trials_per_unit_positive",
            ),
        ]

    def __str__(self):
        return f"{self.title} v{self.version}"


class Unit(models.Model):
    benchmark = models.ForeignKey(Benchmark, models.CASCADE, related_name="units")
    slug = models.SlugField(max_length=120)
    title = models.CharField(max_length=200, blank=True)
    definition = models.JSONField(default=dict, blank=True)
    digest = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["benchmark", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "slug"], name="unit_benchmark_slug_uniq"),
        ]

    def __str__(self):
        return self.slug


class InvalidTransition(Exception):
    pass


class RunQuerySet(models.QuerySet):
    def published(self):
        return self.filter(published=True)


class Run(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PLANNED)
    manifest = models.JSONField(default=dict, blank=True)
    # Only boxbench's own audit of the stored trials (boxbench.publishing.run_audit) is written
    # here; a report carried by an imported file is kept apart, for comparison only.
    audit_report = models.JSONField(null=True, blank=True)
    imported_audit_report = models.JSONField(null=True, blank=True)
    audited_at = models.DateTimeField(null=True, blank=True)
    published = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        permissions = RUN_PERMISSIONS
        constraints = [
            models.CheckConstraint(
                condition=models.Q(published=False) | models.Q(published_at__isnull=False),
                name="run_published_has_time",
            ),
        ]
        indexes = [
            # The dashboard's "latest published runs" query.
            models.Index(
                fields=["-published_at"],
                name="run_published_idx",
                condition=models.Q(published=True),
            ),
        ]

    def __str__(self):
        return self.name

    @property
    def typed_manifest(self) -> Manifest:
        """The manifest as a type; runner.manifest.ManifestError when the stored JSON is bad."""
        return Manifest.from_json(self.manifest, where=f"the manifest of run {self.id}")

    def transition(self, to_status: str, note: str = "", actor=None):
        """Move to `to_status` if RUN_TRANSITIONS allows it, recording the change as a row.

        The UPDATE is conditional on the status we read, so two processes cannot both move the
        run out of the same state.
        """
        to_status = RunStatus(to_status)
        from_status = RunStatus(self.status)
        if to_status not in RUN_TRANSITIONS[from_status]:
            raise InvalidTransition(f"run {self.id}: {from_status} -> {to_status} is not allowed")
        now = timezone.now()
        fields = {"status": to_status}
        if to_status == RunStatus.RUNNING:
            fields["started_at"] = now
        if to_status in (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED):
            fields["ended_at"] = now
        with transaction.atomic():
            changed = Run.objects.filter(pk=self.pk, status=from_status).update(**fields)
            if changed != 1:
                raise InvalidTransition(f"run {self.id} is no longer {from_status}")
            RunTransition.objects.create(
                run=self, from_status=from_status, to_status=to_status, note=note, actor=actor
            )
        for key, value in fields.items():
            setattr(self, key, value)


class ChainProgress(models.Model):
    """Where one provider's chain of a run stands, so that a chain whose worker was lost resumes
    from there (runner/steps.py): each step (the start, one batch, one top-up round's batch) is
    one queue task, claimed by a conditional UPDATE on (step, state)."""

    WAITING, QUEUED, RUNNING, DONE = "waiting", "queued", "running", "done"
    STATES = [(s, s) for s in (WAITING, QUEUED, RUNNING, DONE)]

    run = models.ForeignKey(Run, models.CASCADE, related_name="chain_progress", db_index=False)
    provider = models.CharField(max_length=100)
    job_host = models.CharField(max_length=100)
    # Providers whose sandboxes share one job host take turns step by step (never at once).
    lane = models.CharField(max_length=100, blank=True)
    state = models.CharField(max_length=10, choices=STATES, default=QUEUED)
    step = models.PositiveIntegerField(default=0, help_text="The next step to run.")
    # Top-up rounds and what the chain must remember between steps (JSON, runner/steps.py).
    memory = models.JSONField(default=dict, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    resumed = models.PositiveIntegerField(default=0, help_text="Times recovery resumed it.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "provider"], name="chainprogress_run_provider")
        ]
        indexes = [
            # Recovery: chains not done, by heartbeat (a lost step) or enqueue time.
            models.Index(
                fields=["state", "heartbeat_at"],
                name="chainprogress_live_idx",
                condition=~models.Q(state="done"),
            )
        ]

    def __str__(self):
        return f"{self.run_id} {self.provider} step {self.step} {self.state}"


class RunTransition(models.Model):
    run = models.ForeignKey(Run, models.CASCADE, related_name="transitions")
    from_status = models.CharField(max_length=20, choices=RunStatus.choices)
    to_status = models.CharField(max_length=20, choices=RunStatus.choices)
    at = models.DateTimeField(default=timezone.now)
    note = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["at", "id"]


class TrialQuerySet(models.QuerySet):
    def successful(self):
        return self.filter(outcome=Outcome.SUCCESS)

    def finished(self):
        return self.filter(state=TrialState.DONE)


class Trial(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: trial_cell_idx and trial_run_seq_uniq both start with run.
    run = models.ForeignKey(Run, models.CASCADE, related_name="trials", db_index=False)
    benchmark = models.ForeignKey(Benchmark, models.PROTECT, related_name="trials")
    unit = models.ForeignKey(Unit, models.PROTECT, related_name="trials")
    provider = models.ForeignKey(Provider, models.PROTECT, related_name="trials")
    round = models.PositiveSmallIntegerField(help_text="1-4; top-up rounds follow from 5.")
    seq = models.PositiveIntegerField(null=True, blank=True, help_text="Execution order.")
    attempt = models.PositiveSmallIntegerField(default=1)
    replaces = models.ForeignKey(
        "self", models.SET_NULL, null=True, blank=True, related_name="replaced_by"
    )
    batch = models.CharField(max_length=100, blank=True, help_text="Sandbox batch label.")
    state = models.CharField(max_length=20, choices=TrialState.choices, default=TrialState.QUEUED)
    outcome = models.CharField(max_length=20, choices=Outcome.choices(), blank=True)
    owner = models.CharField(max_length=20, choices=Owner.choices, blank=True)
    cause = models.TextField(blank=True)
    # A step overran its limit or the worker was lost: a provider failure whose outcome is really
    # unknown. It stops refilling and is never counted as an unreplaced provider failure.
    cut_short = models.BooleanField(default=False)
    job_host = models.CharField(max_length=100, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Written every few seconds while the trial runs (runner/heartbeat.py): a running trial whose
    # heartbeat is stale has lost its worker (runner/recovery.py).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    in_flight = models.FloatField(null=True, blank=True)
    placement = models.JSONField(default=dict, blank=True)
    host_load = models.JSONField(default=dict, blank=True)
    cost_usd = models.FloatField(null=True, blank=True)

    objects = TrialQuerySet.as_manager()

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(state="done") | ~models.Q(outcome=""),
                name="trial_done_has_outcome",
            ),
            models.CheckConstraint(
                condition=models.Q(outcome="") | models.Q(state="done"),
                name="trial_outcome_only_when_done",
            ),
            models.CheckConstraint(condition=models.Q(round__gte=1), name="trial_round_positive"),
            models.CheckConstraint(
                condition=~models.Q(state="done") | models.Q(seq__isnull=False),
                name="trial_done_has_seq",
            ),
            models.UniqueConstraint(
                fields=["run", "seq"],
                name="trial_run_seq_uniq",
                condition=models.Q(seq__isnull=False),
            ),
        ]
        indexes = [
            # Statistics: successful trials of one run, benchmark, unit and provider.
            models.Index(
                fields=["run", "benchmark", "unit", "provider", "outcome"], name="trial_cell_idx"
            ),
            # The queue: the next queued trial of a run.
            models.Index(
                fields=["run", "state"], name="trial_queued_idx", condition=models.Q(state="queued")
            ),
            # /metrics and `bench recover`: running trials per provider, the oldest start first.
            models.Index(
                fields=["provider", "started_at"],
                name="trial_running_idx",
                condition=models.Q(state="running"),
            ),
            # Orphan recovery and /metrics: running trials by heartbeat.
            models.Index(
                fields=["heartbeat_at"],
                name="trial_running_heartbeat_idx",
                condition=models.Q(state="running"),
            ),
        ]

    def __str__(self):
        return str(self.id)


class TrialTally(models.Model):
    """Trials per run, provider, state and outcome: /metrics' counts, kept by triggers (migration
    0009; on SQLite a later migration that rebuilds the trial table must create them again)."""

    run = models.ForeignKey(Run, models.CASCADE, related_name="+", db_index=False)
    provider = models.ForeignKey(Provider, models.CASCADE, related_name="+")
    state = models.CharField(max_length=20)
    outcome = models.CharField(max_length=20, blank=True)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "provider", "state", "outcome"], name="tally_uniq"
            )
        ]


class UnsuccessfulCount(models.Model):
    """Unsuccessful attempts of one run on one benchmark, unit and provider known only as counts:
    what a public raw-data file carries instead of their trials (docs/raw-data.md). The labels
    and the run page add them to the counts of the stored trials."""

    run = models.ForeignKey(Run, models.CASCADE, related_name="unsuccessful_counts", db_index=False)
    benchmark = models.ForeignKey(Benchmark, models.PROTECT, related_name="+")
    unit = models.ForeignKey(Unit, models.PROTECT, related_name="+")
    provider = models.ForeignKey(Provider, models.PROTECT, related_name="+")
    outcomes = models.JSONField(default=dict, help_text="Outcome -> number of trials.")
    # Provider failures no top-up replaced and not cut short: what stats.labels counts.
    unreplaced_provider_failures = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "benchmark", "unit", "provider"], name="unsuccessful_cell_uniq"
            ),
        ]


class Measurement(models.Model):
    # No index of its own: measurement_trial_kind_name_uniq starts with trial.
    trial = models.ForeignKey(Trial, models.CASCADE, related_name="measurements", db_index=False)
    kind = models.CharField(max_length=10, choices=MeasurementKind.choices)
    name = models.CharField(max_length=80)
    value = models.FloatField(null=True, blank=True, help_text="Null when the clock gate failed.")
    unit = models.CharField(max_length=20, default="ms")
    clock = models.CharField(max_length=10, choices=Clock.choices)
    clock_gate = models.CharField(max_length=4, choices=ClockGate.choices, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["trial", "kind", "name"], name="measurement_trial_kind_name_uniq"
            ),
        ]


class Evidence(models.Model):
    """Private facts of a trial: readiness attempts, probes, billed cost of failures."""

    trial = models.ForeignKey(Trial, models.CASCADE, related_name="evidence")
    kind = models.CharField(max_length=40)
    at = models.DateTimeField(default=timezone.now)
    data = models.JSONField(default=dict)

    class Meta:
        verbose_name_plural = "evidence"
        indexes = [models.Index(fields=["trial", "kind"], name="evidence_trial_kind_idx")]


class AuditResolution(models.Model):
    """How a failing audit pair was resolved before publication."""

    run = models.ForeignKey(Run, models.CASCADE, related_name="resolutions")
    provider = models.ForeignKey(Provider, models.CASCADE, related_name="+")
    benchmark = models.ForeignKey(Benchmark, models.CASCADE, related_name="+")
    check_name = models.CharField(max_length=40)
    kind = models.CharField(max_length=30, choices=ResolutionKind.choices)
    note = models.TextField()
    rerun = models.ForeignKey(Run, models.SET_NULL, null=True, blank=True, related_name="+")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "provider", "benchmark", "check_name"],
                name="resolution_pair_check_uniq",
            ),
        ]


def aggregate_key(*parts) -> str:
    return "/".join(str(part) for part in parts)


class AggregateQuerySet(models.QuerySet):
    def page(self, scope: Scope, *parts) -> dict | None:
        """The materialized data of one page, or None when nothing is published for it."""
        found = self.filter(scope=scope, key=aggregate_key(*parts))
        return found.values_list("data", flat=True).first()

    def publication_version(self) -> int | None:
        """The overview row's id: materialize() replaces every row at once, so each
        publication brings a new one."""
        found = self.filter(scope=Scope.OVERVIEW, key=aggregate_key())
        return found.values_list("id", flat=True).first()


class Aggregate(models.Model):
    """A materialized view the dashboard reads: computed once when results are published."""

    scope = models.CharField(max_length=20)  # a Scope
    key = models.CharField(max_length=250)  # aggregate_key of the page's parts
    data = models.JSONField()
    computed_at = models.DateTimeField(default=timezone.now)

    objects = AggregateQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="aggregate_scope_key_uniq"),
        ]

    @classmethod
    def of(cls, scope: Scope, *parts, data: dict) -> "Aggregate":
        """The row of one page, keyed as AggregateQuerySet.page reads it."""
        return cls(scope=scope, key=aggregate_key(*parts), data=data)
