"""Trials with their measurements, the unit and clock of each measurement name, private evidence,
and the counts kept beside them (the tally /metrics reads, the unsuccessful attempts a public
raw-data file carries as counts)."""

import bisect
import uuid

from django.db import connection, models
from django.utils import timezone

from boxbench.choices import Clock, MeasurementKind, TrialState
from boxbench.models.catalog import Benchmark, Provider, Unit
from boxbench.models.runs import Run
from runner.outcomes import Outcome, Owner


class TrialQuerySet(models.QuerySet):
    def successful(self):
        return self.filter(outcome=Outcome.SUCCESS)

    def finished(self):
        return self.filter(state=TrialState.DONE)

    def positions(self, run_id, seqs) -> dict[int, int]:
        """Each seq's position in its run as a reader counts (1..N in execution order), for one
        page of seqs: one pass over the run's seqs up to the page's last, where a count per
        row would read the run once for each."""
        wanted = sorted(set(seqs))
        if not wanted:
            return {}
        numbered = self.model.objects.filter(run_id=run_id, seq__isnull=False, seq__lte=wanted[-1])
        if connection.vendor == "postgresql":
            # Bucket b holds the seqs above exactly b of the page's: position(s_j) adds up the
            # buckets below j.
            sql, params = numbered.values("seq").order_by().query.sql_with_params()
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT width_bucket(q.seq, %s::integer[]) AS b, count(*)"
                    f" FROM ({sql}) AS q GROUP BY b",
                    [[s + 1 for s in wanted], *params],
                )
                counts = dict(cursor.fetchall())
            found, total = {}, 0
            for j, s in enumerate(wanted):
                total += counts.get(j, 0)
                found[s] = total
            return found
        # Elsewhere (SQLite, a local store) the seqs themselves, in one query.
        every = list(numbered.order_by("seq").values_list("seq", flat=True))
        return {s: bisect.bisect_right(every, s) for s in wanted}


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
    owner = models.CharField(max_length=20, choices=Owner.choices(), blank=True)
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
    # A trial's measurements live in its own row, as the raw-data format writes them: a table of
    # their own made four rows and a random-key index entry per trial, which bound bulk import and
    # export to a quarter of this table's speed. Name → value (null when the clock gate failed);
    # units and clocks are the run's, in MeasurementName.
    metrics = models.JSONField(default=dict, blank=True)
    stages = models.JSONField(default=dict, blank=True)
    # {"metrics": {name: "pass" | "fail"}, "stages": {...}} for guest-timed measurements; a group
    # without gates is left out, and a trial without any has null.
    clock_gates = models.JSONField(null=True, blank=True)
    # A burst's requests in submission order (runner/benchmarks/burst.py), each with its planned,
    # sent, created and ready offsets, outcome and cause; empty for every other benchmark.
    requests = models.JSONField(default=list, blank=True)

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
    # Provider failures no top-up replaced (cut short ones too): what stats.labels counts.
    unreplaced_provider_failures = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "benchmark", "unit", "provider"], name="unsuccessful_cell_uniq"
            ),
        ]


class MeasurementName(models.Model):
    """The unit and clock of one measurement name of a benchmark in a run: what the raw-data
    header declares, and what a trial's metrics and stages mean."""

    run = models.ForeignKey(Run, models.CASCADE, related_name="measurement_names", db_index=False)
    benchmark = models.ForeignKey(Benchmark, models.PROTECT, related_name="+")
    kind = models.CharField(max_length=10, choices=MeasurementKind.choices())
    name = models.CharField(max_length=80)
    unit = models.CharField(max_length=20, default="ms")
    clock = models.CharField(max_length=10, choices=Clock.choices())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "benchmark", "kind", "name"], name="measurement_name_uniq"
            ),
        ]

    def __str__(self):
        return f"{self.kind} {self.name} ({self.unit}, {self.clock} clock)"


class Evidence(models.Model):
    """Private facts of a trial: readiness attempts, probes, billed cost of failures."""

    trial = models.ForeignKey(Trial, models.CASCADE, related_name="evidence")
    kind = models.CharField(max_length=40)
    at = models.DateTimeField(default=timezone.now)
    data = models.JSONField(default=dict)

    class Meta:
        verbose_name_plural = "evidence"
        indexes = [models.Index(fields=["trial", "kind"], name="evidence_trial_kind_idx")]
